"""A host blocked in a synchronizing call while no device work runs is waiting for what
the trace does not show (a stream held by an event wait, work of another process), not
working: the verdict says so ("sync-stalled", never "host-bound" with the wait named as
where host time goes), and the what-if models that take the host away keep the wait.
Every figure is counted here from the raw events of a Kineto JSON written here."""

from __future__ import annotations

import gzip
import itertools
import json

import public_corpus
import pytest

import traceview
from tests.tracebuilder import TraceBuilder
from traceview.analyses.what_if import GraphCosts, project
from traceview.units import fmt_ns

US = 1000
COSTS = GraphCosts("test card", fixed_ns=8 * US, per_node_ns=2500, floor_ns=10 * US,
                   queued_fixed_ns=1 * US, queued_per_node_ns=1500, queued_floor_ns=5 * US)
MS = 1000 * US
CALLS, PERIOD, CALL = 5, 20 * MS, 6 * MS
# an idle stretch under a synchronize counts from a millisecond (analyses.what_if)
STALLED_MIN = 1 * MS


def _stalled_calls(tb: TraceBuilder) -> None:
    """Each call: one launch at 5 us, a synchronize from 20 us to 5.012 ms, and the
    launched kernel running only from 5 ms to 5.01 ms (its stream held until then)."""
    for i in range(CALLS):
        t = i * PERIOD
        tb.annotation("call", t, CALL)
        tb.launched_kernel("gemm_kernel", t + 5 * US, 5 * US, t + 5 * MS, 10 * US)
        tb.sync(t + 20 * US, 5 * MS - 8 * US)


def _spans(events, cat):
    return sorted((round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000))
                  for e in events if e.get("cat") == cat)


def _stalled_in(events, a: int, b: int) -> int:
    """Sync time inside [a, b) with no kernel running: counted per ns range by hand."""
    syncs = [(max(s, a), min(e, b)) for s, e in _spans(events, "cuda_runtime")
             if s < b and e > a and any(ev.get("name") == "cudaDeviceSynchronize"
                                        and round(ev["ts"] * 1000) == s for ev in events)]
    kernels = _spans(events, "kernel")
    total = 0
    for s, e in syncs:
        t = s
        for ks, ke in [*kernels, (e, e)]:  # the idle stretches between kernels
            if ke <= t or ks >= e and (ks, ke) != (e, e):
                continue
            gap = min(ks, e) - t
            total += gap if gap >= STALLED_MIN else 0
            t = max(t, ke)
    return total


@pytest.fixture
def stalled(tmp_path, tb):
    _stalled_calls(tb)
    path = tb.write(tmp_path / "stalled.json")
    return path, json.loads(path.read_text())["traceEvents"]


def test_a_sync_wait_with_the_device_idle_is_no_host_bound_call(stalled):
    path, events = stalled
    r = traceview.analyze(path, traceview.Options(calls="call"))
    t = r.typical_call
    assert t is not None
    a, b = t.start_ns, t.end_ns
    stall = _stalled_in(events, a, b)
    # 20 us to 5 ms; the 2 us after the kernel is under the stretch a stall needs
    assert stall == 5 * MS - 20 * US
    v = r.verdict
    assert v is not None and v.id == "sync-stalled", v and v.message
    assert (f"the host waits {fmt_ns(stall)} of it in synchronizing calls "
            "(in cudaDeviceSynchronize) with no device work running") in v.message
    assert "host time goes to sync" not in v.message
    assert "host-bound" not in v.message


def test_no_host_overhead_keeps_a_stalled_sync_wait(stalled, analysis_builder, tb):
    path, events = stalled
    r = traceview.analyze(path, traceview.Options(calls="call"))
    t = r.typical_call
    assert t is not None
    stall = _stalled_in(events, t.start_ns, t.end_ns)
    rows = {w.scenario: w for w in r.what_if}
    for scenario in ("cuda-graph", "no-host-overhead"):
        w = rows[scenario]
        assert w.basis["stalled_sync_ns"] == stall
        assert w.projected_ns >= stall
        # no gain: the wait is most of the call
        assert w.projected_ns >= stall
    text = "\n".join(c.text for c in r.claims if c.id == "what-if")
    assert f"the {fmt_ns(stall)} the host waits in synchronizing calls" in text, text
    # the model itself: one 10 us node queued (1 us + max(10 us, 1.5 us)), plus the wait
    a = analysis_builder(tb, calls="call")
    call = a.calls.typical
    sync = a.timeline.category_set("sync")
    p = {q.scenario: q for q in project(a.trace, a.launches, call, COSTS, sync=sync)}
    assert p["no-host-overhead"].projected_ns == 1 * US + 10 * US + stall
    assert p["cuda-graph"].projected_ns == max(10 * US, 8 * US + 10 * US) + stall


SGLANG = "AMD-AGI__TraceLens/inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz"


def test_sglang_decode_waiting_on_a_stalled_stream_is_sync_stalled():
    """TraceLens' sglang Qwen3-8B decode on MI300X: hipStreamWaitEvent holds stream 3, and
    one hipMemcpyWithStream blocks the host ~463 ms with no device work running until
    the stream resumes. Not host-bound, and no what-if projects that wait away."""
    path = public_corpus.locate(SGLANG)
    if path is None:
        pytest.skip(f"public corpus trace {SGLANG} not present")
    events = [e for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
              if e.get("ph") == "X"]
    r = traceview.analyze(path)
    t = r.typical_call
    assert t is not None
    a, b = t.start_ns, t.end_ns
    copy = next(e for e in events if e["name"] == "hipMemcpyWithStream")
    cs, ce = round(copy["ts"] * 1000), round((copy["ts"] + copy["dur"]) * 1000)
    work = [(round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)) for e in events
            if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    first = min(s for s, e in work if e > cs)
    # the shape: nothing runs on the device from the copy's start until well into it
    assert a <= cs and ce <= b and first - cs > 400_000 * US
    v = r.verdict
    assert v is not None and v.id == "sync-stalled", v and v.message
    assert "(in hipMemcpyWithStream)" in v.message
    assert "host time goes to sync" not in v.message
    stall = int(v.evidence["stalled_sync_ns"])
    assert stall >= first - cs
    for w in r.what_if:
        if w.scenario in ("cuda-graph", "no-host-overhead"):
            assert w.basis["stalled_sync_ns"] == stall
            assert w.projected_ns >= stall
            assert w.projected_ns >= w.measured_ns // 2


# --- the stream-wait-event call that holds the stream a stalled sync waits on ----------

WAIT_NAMES = ("cudaStreamWaitEvent", "hipStreamWaitEvent", "cuStreamWaitEvent")


def _ns(e, key="ts"):
    """An event's time in ns (the builder writes whole ns as microseconds, 3 decimals)."""
    return round(e[key] * 1000)


def _raw(tb: TraceBuilder, cat, name, start, dur, *, tid=None, pid=None, **args):
    """An event the builder has no helper for (its own correlation id, if none given)."""
    if "correlation" not in args and cat in ("cuda_runtime", "cuda_sync"):
        tb._corr += 1
        args["correlation"] = tb._corr
    return tb._x(cat, name, start, dur, tb.pid if pid is None else pid,
                 tb.tid if tid is None else tid, args)


def _stall_of(events, a: int, b: int) -> tuple[dict, int]:
    """The synchronizing call in [a, b) and where its stall starts: the call's start, or
    the end of device work still running then (counted from the raw events)."""
    sync = next(e for e in events if e.get("cat") == "cuda_runtime"
                and "Synchronize" in e["name"] and a <= _ns(e) < b)
    s0 = _ns(sync)
    running = [ke for ks, ke in _spans(events, "kernel") if ks <= s0 < ke]
    return sync, max([s0, *running])


def _expected_wait(events, sync: dict, stall: int, waited: int | None) -> dict | None:
    """By hand: the latest stream-wait call of ``sync``'s process (a stream is its
    process's) before ``sync`` whose stream (its cuda_sync record's ``stream``, where it
    has one and the sync's stream ``waited`` is known; else every stream) starts no
    device work from the wait until the stall."""
    records = {e["args"]["correlation"]: e["args"]["stream"] for e in events
               if e.get("cat") == "cuda_sync"}
    work = [(round(e["ts"] * 1000), e["args"]["stream"]) for e in events
            if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    waits = sorted((e for e in events if e.get("name") in WAIT_NAMES
                    and e["pid"] == sync["pid"] and _ns(e) < _ns(sync)),
                   key=_ns, reverse=True)
    for w in waits:
        stream = records.get(w["args"]["correlation"])
        if stream is not None and waited is not None:
            if stream != waited:
                continue
            started = [t for t, s in work if s == stream and _ns(w) <= t < stall]
        else:
            started = [t for t, s in work if _ns(w) <= t < stall]
        if not started:
            return w
    return None


def test_a_stalled_sync_names_the_stream_wait_that_holds_its_stream(tmp_path, tb):
    """Each call: the stalled calls above, and a cudaStreamWaitEvent issued on another
    thread 10 us into the call, with no record of the stream it holds: matched by time
    (nothing starts on the device from the wait until the stall ends), and no event is
    recorded anywhere in the trace. Another process's wait, issued later, holds none of
    this process's streams."""
    _stalled_calls(tb)
    for i in range(CALLS):
        _raw(tb, "cuda_runtime", "cudaStreamWaitEvent", i * PERIOD + 10 * US, 3 * US, tid=200)
        _raw(tb, "cuda_runtime", "cudaStreamWaitEvent", i * PERIOD + 15 * US, 1 * US,
             pid=300, tid=300)
    path = tb.write(tmp_path / "waits.json")
    events = json.loads(path.read_text())["traceEvents"]
    r = traceview.analyze(path, traceview.Options(calls="call"))
    t = r.typical_call
    assert t is not None
    sync, stall = _stall_of(events, t.start_ns, t.end_ns)
    wait = _expected_wait(events, sync, stall, None)
    assert wait is not None and wait["tid"] == 200
    assert not [e for e in events if "EventRecord" in e["name"]]  # no event recorded
    v = r.verdict
    assert v is not None and v.id == "sync-stalled", v and v.message
    lead = _ns(sync) - _ns(wait)
    assert lead == 10 * US
    assert v.evidence["stream_wait_lead_ns"] == lead
    assert v.evidence["stream_wait_start_ns"] == _ns(wait)
    assert v.evidence["stream_wait_matched"] == "time"
    assert "stream_wait_stream" not in v.evidence
    assert (f"cudaStreamWaitEvent on thread 100/200, issued {fmt_ns(lead)} before the "
            "cudaDeviceSynchronize, can hold the stream that call waits on from then "
            "through the stall") in " ".join(v.message.split()), v.message
    assert "for an event that is not in the trace" in v.message
    # the possible causes are not listed where the trace names the cause
    assert "(a stream held by an event wait, or work outside the trace)" not in v.message


def _stream_calls(tb: TraceBuilder, other_kernel_stream: int | None,
                  sync_record: bool = True) -> None:
    """Each call (6 ms): cudaEventRecord at 6 us; a cudaStreamWaitEvent at 8 us that CUPTI
    records as holding stream 7 for that event; another at 12 us holding stream 9; a 2 us
    kernel launched at 13 us that runs at 14 us on ``other_kernel_stream`` (None: no such
    kernel); then cudaStreamSynchronize from 20 us to 5.012 ms, recorded (if
    ``sync_record``) as waiting on stream 7; stream 7's kernel runs only at 5 ms."""
    for i in range(CALLS):
        t = i * PERIOD
        tb.annotation("call", t, CALL)
        record = _raw(tb, "cuda_runtime", "cudaEventRecord", t + 6 * US, 1 * US)
        for at, stream, on in ((8, 7, record["args"]["correlation"]), (12, 9, -1)):
            w = _raw(tb, "cuda_runtime", "cudaStreamWaitEvent", t + at * US, 1 * US)
            _raw(tb, "cuda_sync", "Stream Wait Event", t + (at + 1) * US, 1 * US,
                 pid=0, tid=stream, stream=stream, device=0,
                 correlation=w["args"]["correlation"], wait_on_cuda_event_record_corr_id=on)
        tb.launched_kernel("gemm_kernel", t + 5 * US, 5 * US, t + 5 * MS, 10 * US)
        if other_kernel_stream is not None:
            tb.launched_kernel("small_kernel", t + 13 * US, 1 * US, t + 14 * US, 2 * US,
                               stream=other_kernel_stream)
        s = _raw(tb, "cuda_runtime", "cudaStreamSynchronize", t + 20 * US, 5 * MS - 8 * US)
        if sync_record:
            _raw(tb, "cuda_sync", "Stream Sync", t + 5 * MS + 10 * US, 1 * US, pid=0,
                 tid=7, stream=7, device=0, correlation=s["args"]["correlation"])


def test_a_stream_wait_matched_by_its_stream_is_named_with_the_stream_and_its_event(
        tmp_path, tb):
    """CUPTI's cuda_sync records say which stream each wait holds and which stream the
    sync waits on: the wait on stream 7 is named though a kernel starts on stream 9
    after it (another stream's work says nothing of stream 7's), the later wait on
    stream 9 is not, and the event it waits for is the cudaEventRecord the record names."""
    _stream_calls(tb, other_kernel_stream=9)
    path = tb.write(tmp_path / "streams.json")
    events = json.loads(path.read_text())["traceEvents"]
    r = traceview.analyze(path, traceview.Options(calls="call"))
    t = r.typical_call
    assert t is not None
    sync, stall = _stall_of(events, t.start_ns, t.end_ns)
    wait = _expected_wait(events, sync, stall, 7)
    assert wait is not None and _ns(wait) == t.start_ns + 8 * US
    # matched by time it could not be: a kernel starts between the wait and the stall
    assert _expected_wait(events, sync, stall, None) is None
    v = r.verdict
    assert v is not None and v.id == "sync-stalled", v and v.message
    lead = _ns(sync) - _ns(wait)
    assert (v.evidence["stream_wait_lead_ns"], v.evidence["stream_wait_stream"],
            v.evidence["stream_wait_matched"], v.evidence["stream_wait_event"]) == \
        (lead, 7, "stream", "recorded")
    assert (f"cudaStreamWaitEvent on main thread [100/100], issued {fmt_ns(lead)} before "
            "the cudaStreamSynchronize, holds stream 7, which that call waits on, for the "
            "event cudaEventRecord records") in " ".join(v.message.split()), v.message


def test_a_wait_whose_stream_is_known_but_not_the_syncs_is_matched_by_time(tmp_path, tb):
    """No record of the stream the sync waits on: the waits' own streams cannot be
    matched to it, so the latest wait after which no device work starts is named (the
    one holding stream 9), its stream said, and that the trace does not say the sync's."""
    _stream_calls(tb, other_kernel_stream=None, sync_record=False)
    path = tb.write(tmp_path / "unmatched.json")
    events = json.loads(path.read_text())["traceEvents"]
    r = traceview.analyze(path, traceview.Options(calls="call"))
    t = r.typical_call
    assert t is not None
    sync, stall = _stall_of(events, t.start_ns, t.end_ns)
    wait = _expected_wait(events, sync, stall, None)
    assert wait is not None and _ns(wait) == t.start_ns + 12 * US
    v = r.verdict
    assert v is not None and v.id == "sync-stalled", v and v.message
    lead = _ns(sync) - _ns(wait)
    assert (v.evidence["stream_wait_lead_ns"], v.evidence["stream_wait_stream"],
            v.evidence["stream_wait_matched"], v.evidence["stream_wait_event"]) == \
        (lead, 9, "time", "absent")  # its record names no event-record call (-1)
    assert (f"issued {fmt_ns(lead)} before the cudaStreamSynchronize, holds stream 9 from "
            "then through the stall (the trace does not say which stream that call waits "
            "on; no device work starts anywhere in between), for an event that is not in "
            "the trace") in " ".join(v.message.split()), v.message


def test_a_stream_wait_whose_stream_ran_work_after_it_is_not_named(tmp_path, tb):
    """The same calls with the small kernel on stream 7 after the wait: the event came
    (stream 7 ran), so that wait does not hold it through the stall, and the later wait
    holds stream 9, which the sync does not wait on: no wait is named."""
    _stream_calls(tb, other_kernel_stream=7)
    path = tb.write(tmp_path / "ran.json")
    events = json.loads(path.read_text())["traceEvents"]
    r = traceview.analyze(path, traceview.Options(calls="call"))
    t = r.typical_call
    assert t is not None
    sync, stall = _stall_of(events, t.start_ns, t.end_ns)
    assert _expected_wait(events, sync, stall, 7) is None
    v = r.verdict
    assert v is not None and v.id == "sync-stalled", v and v.message
    assert "stream_wait_call" not in v.evidence
    assert "StreamWaitEvent" not in v.message
    assert "(a stream held by an event wait, or work outside the trace)" in v.message


# --- fewer launches keep a stalled wait ------------------------------------------------

CHAIN_CALL = 3200 * US


def _chain_around_a_stall(tb: TraceBuilder) -> None:
    """Each call (3.2 ms): six elementwise launches, three at 5, 15, 25 us and three at
    3.0, 3.01, 3.02 ms, each kernel 2 us starting 6 us after its launch; between them a
    synchronize from 40 us to 2.99 ms with the device idle (a stalled wait inside the
    chain's launch spacing)."""
    for i in range(CALLS):
        t = i * PERIOD
        tb.annotation("call", t, CHAIN_CALL)
        for at in (5 * US, 15 * US, 25 * US, 3000 * US, 3010 * US, 3020 * US):
            tb.launched_kernel("void at::native::vectorized_elementwise_kernel<4>", t + at,
                               4 * US, t + at + 6 * US, 2 * US)
        tb.sync(t + 40 * US, 2950 * US)


def _stretches(events, a: int, b: int) -> list[tuple[int, int]]:
    """The stalled stretches in [a, b): synchronize time with no kernel running, each at
    least STALLED_MIN long, by hand from the raw events."""
    kernels = _spans(events, "kernel")
    out = []
    for e in events:
        if e.get("name") != "cudaDeviceSynchronize":
            continue
        s, f = max(_ns(e), a), min(_ns(e) + round(e["dur"] * 1000), b)
        cuts = sorted([(ks, ke) for ks, ke in kernels if ks < f and ke > s])
        t = s
        for ks, ke in [*cuts, (f, f)]:
            if min(ks, f) - t >= STALLED_MIN:
                out.append((t, min(ks, f)))
            t = max(t, ke)
    return out


def _in(stretches, lo: int, hi: int) -> int:
    return sum(max(0, min(e, hi) - max(s, lo)) for s, e in stretches)


def test_fewer_launches_keep_a_stalled_wait_inside_the_chain(tmp_path, tb, analysis_builder):
    _chain_around_a_stall(tb)
    path = tb.write(tmp_path / "chain.json")
    events = json.loads(path.read_text())["traceEvents"]
    r = traceview.analyze(path, traceview.Options(calls="call"))
    t = r.typical_call
    assert t is not None
    a, b = t.start_ns, t.end_ns
    stretches = _stretches(events, a, b)
    stall = sum(e - s for s, e in stretches)
    assert stall == 2950 * US  # 40 us to 2.99 ms, the last kernel before it ended at 33 us
    launches = sorted(_ns(e) for e in events if e.get("name") == "cuLaunchKernelEx"
                      and a <= _ns(e) < b)
    gaps = list(itertools.pairwise(launches))
    spacing = [hi - lo - _in(stretches, lo, hi) for lo, hi in gaps]
    assert spacing == [10 * US, 10 * US, 3000 * US - 25 * US - stall, 10 * US, 10 * US]
    removed = sum(spacing)
    floor = 2 * US  # the fused chain's longest kernel: all the call's work is the chain
    w = next(w for w in r.what_if if w.scenario == "fewer-launches")
    assert w.basis["stalled_sync_ns"] == stall
    assert w.basis["removed_host_ns"] == removed
    assert (w.basis["spacing_min_ns"], w.basis["spacing_max_ns"]) == (min(spacing), max(spacing))
    assert w.projected_ns == max(CHAIN_CALL - stall - removed, floor) + stall
    # the bracket: the five removed launches each the longest or shortest net spacing
    assert w.low_ns == max(CHAIN_CALL - stall - 5 * max(spacing), floor) + stall
    assert w.high_ns == max(CHAIN_CALL - stall - 5 * min(spacing), floor) + stall
    assert w.projected_ns >= stall
    text = " ".join(c.text for c in r.claims if c.id == "what-if" and "fewer" in c.text)
    assert f"kept whole: the {fmt_ns(stall)} the host waits in synchronizing calls" in text
    # scaled to an unprofiled call, the stall stays whole: only the rest shrinks
    an = analysis_builder(tb, calls="call")
    call = an.calls.typical
    sync = an.timeline.category_set("sync")
    half = CHAIN_CALL // 2
    p = {q.scenario: q for q in project(an.trace, an.launches, call, COSTS,
                                        unprofiled_call_ns=half, sync=sync)}
    assert p["fewer-launches"].projected_ns == \
        max(round((CHAIN_CALL - stall - removed) * half / CHAIN_CALL), floor) + stall


def test_sglang_decode_names_the_hip_stream_wait_event_holding_the_stream():
    """The same sglang trace: one hipStreamWaitEvent on the main thread, issued before the
    blocking hipMemcpyWithStream; the trace has no cuda_sync record of the stream it
    holds and no event-record call at all, and no device work starts from the wait until
    the stall ends. The verdict names it, its thread, how long before the copy it was
    issued (counted here from the raw events, exactly: microseconds read as decimals)
    and that the event it waits for is not in the trace."""
    from decimal import Decimal

    path = public_corpus.locate(SGLANG)
    if path is None:
        pytest.skip(f"public corpus trace {SGLANG} not present")
    raw = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)["traceEvents"]
    events = [e for e in raw if e.get("ph") == "X"]

    def ns(e, key="ts"):
        return int(Decimal(e[key]) * 1000)

    (wait,) = [e for e in events if e["name"] in WAIT_NAMES]
    copy = next(e for e in events if e["name"] == "hipMemcpyWithStream")
    assert not [e for e in events if "EventRecord" in e["name"]]
    assert not [e for e in events if e.get("cat") == "cuda_sync"]
    starts = [ns(e) for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    resumed = min(t for t in starts if t > ns(copy))
    assert not [t for t in starts if ns(wait) <= t < resumed]
    lead = ns(copy) - ns(wait)
    r = traceview.analyze(path)
    v = r.verdict
    assert v is not None and v.id == "sync-stalled", v and v.message
    assert (v.evidence["stream_wait_call"], v.evidence["stream_wait_lead_ns"],
            v.evidence["stream_wait_start_ns"], v.evidence["stream_wait_matched"],
            v.evidence["stream_wait_event"]) == \
        ("hipStreamWaitEvent", lead, ns(wait), "time", "absent")
    words = " ".join(v.message.split())
    assert (f"hipStreamWaitEvent on main thread [{wait['pid']}/{wait['tid']}], issued "
            f"{fmt_ns(lead)} before the hipMemcpyWithStream") in words, words
    assert "for an event that is not in the trace" in words


def test_the_stalled_stretches_and_the_backlog_are_made_once_per_report(tmp_path, tb,
                                                                       monkeypatch):
    """The verdict and the three projections read one typical call's stalled stretches,
    and the graph models and the fusion model one backlog figure: each made once."""
    from traceview.analyses import what_if

    _chain_around_a_stall(tb)
    path = tb.write(tmp_path / "once.json")
    made: dict[str, int] = {"stalled_sync": 0, "_foreign_busy": 0}
    for name in made:
        real = getattr(what_if, name)

        def counted(*args, _real=real, _name=name, **kw):
            made[_name] += 1
            return _real(*args, **kw)

        monkeypatch.setattr(what_if, name, counted)
    r = traceview.analyze(path, traceview.Options(calls="call"))
    assert r.verdict is not None and r.verdict.id == "sync-stalled"
    assert {w.scenario for w in r.what_if} == set(what_if.SCENARIOS)
    assert made == {"stalled_sync": 1, "_foreign_busy": 1}
