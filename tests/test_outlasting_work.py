"""A call or step whose device work runs on after it: the verdict says what bounds the
work it started, and agrees with the what-if beside it.

A call that returns before the device work it launched runs leaves the device idle over
its own range; calling it host-bound contradicts the what-if (removing the host's time
gains nothing: the device work is longer than the call). A step whose device work runs
on past its range is judged over its extent (the range and that work, the steps' table's
row), never over its range alone. Every expected figure is counted here from the raw
events of a small Kineto trace written by the test."""

from __future__ import annotations

import gzip
import json
import re
from decimal import Decimal

import public_corpus
import pytest

import traceview
from rawcount import length, union
from tracebuilder import TraceBuilder
from traceview.report.claims import check_all
from traceview.report.explanation import analyze_trace
from traceview.report.findings import detect
from traceview.report.pipeline import load
from traceview.units import fmt_ns, fmt_pct

US = 1_000
MS = 1_000_000
WORK = ("kernel", "gpu_memcpy", "gpu_memset")


def _events(path) -> list[dict]:
    return json.loads(path.read_text(), parse_float=Decimal)["traceEvents"]


def _ns(x) -> int:
    return int(Decimal(x) * 1000)


def _covered(spans) -> int:
    return length(union(spans))


def _span(e) -> tuple[int, int]:
    return _ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])


def _launched(ev, a: int, b: int) -> list[tuple[int, int]]:
    """The device work of the launches that start inside [a, b), by correlation."""
    corr = {e["args"]["correlation"] for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")
            and a <= _ns(e["ts"]) < b and "correlation" in e.get("args", {})}
    return [_span(e) for e in ev if e.get("cat") in WORK
            and e.get("args", {}).get("correlation") in corr]


def _verdict(r):
    return next(f for f in r.findings if f.id in ("host-bound", "device-bound"))


def test_a_call_whose_device_work_runs_after_it_is_device_bound(tmp_path):
    """Three calls of 100 us, each launching a 2 ms kernel that starts after the call
    returns (nothing synchronizes): the device is idle all of each call, yet the call's
    work takes 2 ms of device time against 0.1 ms of host. Device-bound, said as the call
    returning while its work runs on, and the what-if's no-host-overhead model agrees:
    no gain."""
    tb = TraceBuilder()
    for i in range(3):
        t = i * 10 * MS
        tb.annotation("call", t, 100 * US)
        tb.launched_kernel("conv_fwd", t + 10 * US, 20 * US, t + 300 * US, 2 * MS)
    path = tb.write(tmp_path / "returns_first.json")
    ev = _events(path)
    calls = sorted(_span(e) for e in ev if e.get("name") == "call")
    r = traceview.analyze(path, traceview.Options(calls="call"))
    assert check_all(r.claims, r.to_dict()) == []
    t = r.typical
    assert t is not None
    a, b = next(c for c in calls if c[0] == t.start_ns)
    mine = _launched(ev, a, b)
    work, work_end = _covered(mine), max(e for _, e in mine)
    busy_in_call = _covered([(max(s, a), min(e, b)) for s, e in
                                  (_span(x) for x in ev if x.get("cat") in WORK)
                                  if e > a and s < b])
    assert busy_in_call == 0 and work > b - a  # the shape: idle over the call, longer work
    v = _verdict(r)
    assert v.id == "device-bound", v.message
    assert v.message.startswith(
        f"device-bound: a typical call returns after {fmt_ns(b - a)} of host time while the "
        f"device work it launched (kernel {fmt_ns(work)}) runs on until "
        f"{fmt_ns(work_end - b)} after it: the device, not the host, bounds the work the "
        "call starts"), v.message
    no_host = next(w for w in r.what_if if w.scenario == "no-host-overhead")
    assert no_host.measured_ns == b - a and no_host.projected_ns >= work  # no gain
    claim = next(c for c in r.claims if c.id == "what-if" and "without host overhead" in c.text)
    assert "no gain" in claim.text


def _steps(tb: TraceBuilder, n: int, range_ns: int, period: int, launch_at: int,
           kernel_ns: int, lag: int) -> None:
    """``n`` ProfilerStep ranges ``period`` apart, each launching one kernel at
    ``launch_at`` into it that starts ``lag`` after its launch or when the previous
    kernel ends (one stream runs one thing at a time)."""
    prev_end = 0
    for i in range(n):
        t = i * period
        tb.annotation(f"ProfilerStep#{i + 3}", t, range_ns)
        tb.op("aten::conv2d", t + 5 * US, launch_at - 5 * US)
        k0 = max(t + launch_at + lag, prev_end)
        tb.launched_kernel("conv_fwd", t + launch_at, 10 * US, k0, kernel_ns)
        prev_end = k0 + kernel_ns


def _step_rows(ev) -> list[tuple[int, int, int, int]]:
    """Each step as (start, range end, extent end, device busy over the extent), from the
    raw events: the extent ends where the work launched in the range ends, never past the
    next step's start nor before the range's end."""
    ranges = sorted(_span(e) for e in ev if e.get("cat") == "user_annotation"
                    and re.fullmatch(r"ProfilerStep#\d+", e.get("name", "")))
    busy = [_span(e) for e in ev if e.get("cat") in WORK]
    out = []
    for k, (a, b) in enumerate(ranges):
        last = max((e for _, e in _launched(ev, a, b)), default=b)
        nxt = ranges[k + 1][0] if k + 1 < len(ranges) else last
        end = max(b, min(last, nxt))
        on = _covered([(max(s, a), min(e, end)) for s, e in busy if e > a and s < end])
        out.append((a, b, end, on))
    return out


def test_a_step_whose_device_work_runs_past_its_range_is_judged_over_its_extent(tmp_path):
    """Steps of 100 us, each launching a 400 us kernel that ends well before the next step:
    over its range the device is idle 90% of the step, over its extent (range and the
    kernel after it) busy 400 of 490 us. The verdict is the extent's, as the steps' table
    is, and says the range beside it."""
    tb = TraceBuilder()
    _steps(tb, 5, 100 * US, 2 * MS, 50 * US, 400 * US, 40 * US)
    path = tb.write(tmp_path / "step_tail.json")
    ev = _events(path)
    r = traceview.analyze(path)
    assert check_all(r.claims, r.to_dict()) == []
    t = r.typical
    assert t is not None and r.steps is not None
    a, b, end, on = next(x for x in _step_rows(ev) if x[0] == t.start_ns)
    kernel = _covered(_launched(ev, a, b))
    assert end > b and kernel <= end - a  # the shape: work past the range, inside the extent
    busy_in_range = _covered([(max(s, a), min(e, b)) for s, e in _launched(ev, a, b)
                                   if e > a and s < b])
    assert 2 * busy_in_range < b - a < 2 * on  # idle most of the range, busy most of the extent
    row = next(s for s in r.steps.steps if s.start_ns == a)
    assert (row.end_ns, row.device_busy_ns) == (end, on)
    v = _verdict(r)
    assert v.id == "device-bound", v.message
    assert v.message.startswith(
        f"device-bound: the device is busy {fmt_pct(on / (end - a))} of a typical step "
        f"({fmt_ns(end - a)}: its range {fmt_ns(b - a)} and the device work it launched "
        "running on after it)"), v.message


def test_a_step_whose_device_work_outlasts_its_extent_is_device_bound(tmp_path):
    """Ten back-to-back steps of 100 us, each launching a 2 ms kernel that the device
    starts only after the steps are over (an event replay's shape: the device runs tens
    of ms behind short steps). A step's extent ends at the next step's start with its own
    kernel not yet run, the device idle all of it; its work (2 ms) is longer than it, so
    the device, not the host, bounds it. The last step's extent holds the device's whole
    backlog."""
    tb = TraceBuilder()
    _steps(tb, 10, 100 * US, 110 * US, 50 * US, 2 * MS, 3 * MS)
    path = tb.write(tmp_path / "replay_lag.json")
    ev = _events(path)
    r = traceview.analyze(path)
    assert check_all(r.claims, r.to_dict()) == []
    t = r.typical
    assert t is not None and r.steps is not None
    rows = _step_rows(ev)
    a, b, end, _ = next(x for x in rows if x[0] == t.start_ns)
    mine = _launched(ev, a, b)
    kernel, work_end = _covered(mine), max(e for _, e in mine)
    assert kernel > end - a  # the shape: the step's work is longer than its extent
    assert all(x[3] == 0 for x in rows[:-1])  # the device idle over every step but the last
    assert [(x[2] - x[0], x[3]) for x in rows[-1:]] == [
        (r.steps.steps[-1].wall_ns, r.steps.steps[-1].device_busy_ns)]
    v = _verdict(r)
    assert v.id == "device-bound", v.message
    assert v.message.startswith(
        f"device-bound: a typical step returns after {fmt_ns(b - a)} of host time while the "
        f"device work it launched (kernel {fmt_ns(kernel)}) runs on until "
        f"{fmt_ns(work_end - b)} after it: the device, not the host, bounds the work the "
        "step starts"), v.message
    assert "idle" not in v.message


# --- real traces --------------------------------------------------------------------

REPLAY = "amd__HPCTrainingExamples/TraceLens__event_replay_wd__replay_trace.json.gz"


def test_a_real_replay_of_short_steps_is_device_bound_over_every_step():
    """AMD's TraceLens event replay on an MI300X: ten steps of ~0.1 ms whose device work
    runs tens of ms behind them. Whichever step stands as the typical one, the verdict is
    device-bound and every figure it cites holds: a step whose own work outlasts its
    extent returns while that work runs on; the last step, whose extent holds the
    device's backlog, is judged over that extent (busy most of it), never idle over its
    range. The typical step's figures are counted here from the raw events."""
    path = public_corpus.locate(REPLAY)
    if path is None:
        pytest.skip(f"{REPLAY} is not in this machine's corpus copy")
    ev = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)["traceEvents"]
    rows = _step_rows(ev)
    r = traceview.analyze(path)
    doc = r.to_dict()
    assert check_all(r.claims, doc) == []
    assert r.steps is not None and len(rows) == r.steps.count == 10
    t = r.typical
    assert t is not None
    a, b, end, _ = next(x for x in rows if x[0] == t.start_ns)
    mine = _launched(ev, a, b)
    kernel, work_end = _covered(mine), max(e for _, e in mine)
    assert kernel > end - a
    v = _verdict(r)
    assert v.id == "device-bound" and v.message.startswith(
        f"device-bound: a typical step returns after {fmt_ns(b - a)} of host time while the "
        f"device work it launched (kernel {fmt_ns(kernel)}) runs on until "
        f"{fmt_ns(work_end - b)} after it"), v.message
    # the last step: its range idle, its extent busy most of it
    a, b, end, on = rows[-1]
    busy_in_range = _covered([(max(s, a), min(e, b)) for s, e in
                                   (_span(x) for x in ev if x.get("cat") in WORK)
                                   if e > a and s < b])
    assert busy_in_range == 0 and 2 * on > end - a
    ex = analyze_trace(load(path))
    for k in range(len(rows)):
        claims = [c for c in detect(ex, None, k)[1] if c.id in ("host-bound", "device-bound")]
        assert [c.id for c in claims] == ["device-bound"]
        # the drawn call's figures (typical_call) are the report's typical call's only
        assert [p for p in check_all(claims, doc) if "/typical_call/" not in p] == [], k
    last = next(c for c in detect(ex, None, len(rows) - 1)[1] if c.id == "device-bound")
    assert last.text.startswith(
        f"device-bound: the device is busy {fmt_pct(on / (end - a))} of a typical step "
        f"({fmt_ns(end - a)}: its range {fmt_ns(b - a)} and the device work it launched "
        "running on after it)"), last.text
