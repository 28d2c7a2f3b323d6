"""A host blocked in a synchronizing call while no device work runs is waiting for what
the trace does not show (a stream held by an event wait, work of another process), not
working: the verdict says so ("sync-stalled", never "host-bound" with the wait named as
where host time goes), and the what-if models that take the host away keep the wait.
Every figure is counted here from the raw events of a Kineto JSON written here."""

from __future__ import annotations

import gzip
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
