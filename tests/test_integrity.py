"""Integrity verdicts (``analyses.integrity``): each check's count, the calls it touches and
the figures it marks unreliable, against counts written here from the raw events, on
built traces and on public ones; calls with dropped device records are not warm."""

from __future__ import annotations

import gzip
import json

import pytest

from tests import public_corpus
from tests.tracebuilder import TraceBuilder
from traceview.report import schema

US = 1000


def _calls_with_drops(tb: TraceBuilder, n: int, dropped: set[int]) -> None:
    """``n`` calls of three launches each; in the calls of ``dropped`` the second launch
    has no kernel record."""
    t = 0
    for i in range(n):
        tb.annotation("call", t, 100 * US)
        _three_launches(tb, t, i in dropped)
        t += 200 * US


def _three_launches(tb: TraceBuilder, t: int, drop_second: bool) -> None:
    """A call's three launches from ``t``; the second without its kernel record where
    ``drop_second``."""
    for j in range(3):
        ls = t + 5 * US + j * 20 * US
        if drop_second and j == 1:
            tb.launch(ls, 5 * US)
        else:
            tb.launched_kernel("vectorized_elementwise_kernel", ls, 5 * US, ls + 8 * US,
                               3 * US)


def test_launches_without_device_record_are_counted_and_their_calls_left_out(tb,
                                                                            analyze_builder):
    _calls_with_drops(tb, 10, {3, 7})
    r = analyze_builder(tb, calls="call")
    assert r.calls.count == 10
    # independent count: the calls whose every launch has a kernel
    assert r.calls.warm_count == 8
    assert {c.index for c in r.calls.per_call if not c.warm} == {3, 7}
    checks = {c.id: c for c in r.integrity.checks}
    c = checks["launch-without-device-work"]
    assert (c.count, c.calls) == (2, (3, 7))
    assert "device.idle_ns" in c.unreliable and r.integrity.incomplete_calls == (3, 7)
    assert not r.integrity.reliable
    # the warm calls' device busy: 3 kernels of 3 us each, never the dropped calls' 6 us
    assert r.calls.stats["device_busy_ns"].max == 9 * US


def test_an_incomplete_outlier_is_left_out_not_counted(tb, analyze_builder):
    """A call far slower than the others (an outlier, counted in the warm figures) whose
    launch lost its device record is incomplete and left out: the per-call title names it
    among the incomplete calls only, never among the outliers it says are counted (a real
    trace's title listed one call as both)."""
    t, walls = 0, [100 * US] * 10
    walls[3] = 400 * US
    for i, wall in enumerate(walls):
        tb.annotation("call", t, wall)
        for j in range(3):
            ls = t + 5 * US + j * 20 * US
            if i == 3 and j == 1:
                tb.launch(ls, 5 * US)
            else:
                tb.launched_kernel("vectorized_elementwise_kernel", ls, 5 * US, ls + 8 * US,
                                   3 * US)
        t += wall + 100 * US
    # independent count from the events: call 3 is 4x the others and lost a record
    events = tb.events
    kernels = {e["args"]["correlation"] for e in events if e["cat"] == "kernel"}
    calls = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e["cat"] == "user_annotation")
    lost = {k for k, (a, b) in enumerate(calls) for e in events if e["cat"] in ("cuda_runtime", "cuda_driver")
            and a <= e["ts"] < b and e["args"]["correlation"] not in kernels}
    assert lost == {3}
    r = analyze_builder(tb, calls="call")
    row = r.calls.per_call[3]
    assert row.outlier and row.launches_without_work == 1 and not row.warm
    assert r.calls.warm_count == 9
    title = next(c.text for c in r.claims if c.id == "calls-title")
    assert title == ("Per call: 9 warm of 10; incomplete (launches without device records): "
                     "#3 left out")


def _steps_with_drops(tb: TraceBuilder, n: int, dropped: set[int]) -> list[tuple[int, int]]:
    """``n`` profiler steps, each loading data then making three launches; in the steps
    of ``dropped`` the second launch has no kernel record. Returns the steps' (start,
    end)."""
    t, out = 0, []
    for i in range(n):
        tb.annotation(f"ProfilerStep#{i}", t, 100 * US)
        # a data-loading phase: a step view with a phase beside "other"
        tb.annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t + US,
                      3 * US)
        out.append((t, t + 100 * US))
        _three_launches(tb, t, i in dropped)
        t += 200 * US
    return out


def _incomplete_steps(events: list[dict], steps: list[tuple[int, int]]) -> set[int]:
    """The steps holding a launch whose correlation no kernel record carries, counted
    from the raw events."""
    kernels = {e["args"]["correlation"] for e in events if e["cat"] == "kernel"}
    return {k for k, (a, b) in enumerate(steps) for e in events
            if e["cat"] in ("cuda_runtime", "cuda_driver") and a <= e["ts"].ns < b
            and e["args"]["correlation"] not in kernels}


def test_steps_that_lost_device_records_are_no_warm_steps_in_the_step_sentence(tb,
                                                                              analyze_builder):
    """The step sentence's warm steps are the per-step table's: a step whose launch lost
    its device record is incomplete there, so it is no warm step in the sentence either
    (a real trace's sentence said "typical of 5 warm of 5 steps" above a table of none)."""
    steps = _steps_with_drops(tb, 4, {1})
    assert _incomplete_steps(tb.events, steps) == {1}
    r = analyze_builder(tb)
    assert r.steps is not None and r.steps.count == 4
    assert r.steps.warm_count == r.calls.warm_count == 3
    step = next(c.text for c in r.claims if c.id == "typical-step")
    assert "typical of 3 warm of 4 steps" in step


def test_with_every_step_incomplete_none_is_warm_and_every_one_is_counted(tb, analyze_builder):
    """No step warm: the figures are over every step (``calls.warm_calls``), so no sentence
    says the incomplete steps are left out, and the step sentence says none is warm."""
    steps = _steps_with_drops(tb, 3, {0, 1, 2})
    assert _incomplete_steps(tb.events, steps) == {0, 1, 2}
    r = analyze_builder(tb)
    assert r.steps is not None and r.steps.warm_count == r.calls.warm_count == 0
    # the figures are over all three steps: two kernels of 3 us in each
    assert r.calls.stats["kernel_ns"].n == 3 and r.calls.stats["device_busy_ns"].max == 6 * US
    texts = {c.id: c.text for c in r.claims}
    assert "typical of 3 steps, none warm" in texts["typical-step"]
    assert texts["calls-title"] == ("Per step: 0 warm of 3; incomplete (launches without device "
                                    "records): #0, #1, #2 counted: none is warm")
    integrity = [c.text for c in r.claims if c.id.startswith("integrity-")]
    assert integrity and not any("left out" in t for t in integrity)
    assert "3 incomplete call(s) counted in the figures, since no call is warm: #0, #1, #2" in integrity


def test_a_run_of_empty_launches_before_the_first_recorded_one_is_a_dropped_prefix(
        tb, analyze_builder):
    for j in range(4):
        tb.launch(j * 10 * US, 2 * US)
    for j in range(4, 8):
        tb.launched_kernel("k", j * 10 * US, 2 * US, j * 10 * US + 3 * US, 1 * US)
    r = analyze_builder(tb)
    checks = {c.id: c.count for c in r.integrity.checks}
    assert checks["dropped-prefix"] == 4 and checks["launch-without-device-work"] == 4


def test_device_records_overrunning_the_next_on_their_stream(tb, analyze_builder):
    tb.launched_kernel("a", 0, 2 * US, 5 * US, 10 * US)
    tb.launched_kernel("b", 3 * US, 2 * US, 12 * US, 10 * US)  # a ends at 15 us: 3 us over
    tb.launched_kernel("c", 6 * US, 2 * US, 30 * US, 10 * US, stream=8)  # another stream
    r = analyze_builder(tb)
    c = {c.id: c for c in r.integrity.checks}["duration-overrun"]
    assert (c.count, c.ns) == (1, 3 * US) and "device.busy_ns" in c.unreliable


def test_a_graph_capture_is_recognised_and_its_launches_are_not_dropped_records(
        tb, analyze_builder):
    tb.launch(0, 2 * US, api="cudaStreamBeginCapture")
    for j in range(5):  # captured: recorded into the graph, never run
        tb.launch(5 * US + j * 10 * US, 3 * US, api="cudaLaunchKernel")
    tb.launch(60 * US, 2 * US, api="cudaStreamEndCapture")
    tb.launch(70 * US, 50 * US, api="cudaGraphInstantiateWithFlags")
    tb.launched_kernel("k", 200 * US, 2 * US, 205 * US, 1 * US)
    r = analyze_builder(tb)
    checks = {c.id: c for c in r.integrity.checks}
    assert "launch-without-device-work" not in checks
    assert checks["graph-capture"].count == 1
    assert checks["graph-capture"].ns == 62 * US  # begin's start to end's end
    g = r.integrity.graphs
    assert (g.captures, g.instantiations) == (1, 1)


def test_a_replay_that_recorded_fewer_nodes_than_its_graph_does(tb, analyze_builder):
    t = 0
    for nodes in (5, 5, 3, 5):
        corr = tb.launch(t, 4 * US, api="cudaGraphLaunch")
        for k in range(nodes):
            tb.kernel(f"node{k}", t + 10 * US + k * 2 * US, 1 * US, corr=corr)
        t += 100 * US
    r = analyze_builder(tb)
    c = {c.id: c for c in r.integrity.checks}["dropped-device-records"]
    assert c.count == 2  # the third replay: 5 - 3
    g = r.integrity.graphs
    assert (g.replays, g.nodes.p50, g.nodes.min) == (4, 5, 3)


def test_integrity_is_in_the_json_and_reads_back(tb, analyze_builder):
    _calls_with_drops(tb, 4, {1})
    r = analyze_builder(tb, calls="call")
    d = json.loads(schema.to_json(r))
    assert d["schema_version"] == 3
    assert d["integrity"]["checks"][0]["id"] == "launch-without-device-work"
    assert d["integrity"]["incomplete_calls"] == [1]
    assert d["calls"]["per_call"][1]["launches_without_work"] == 1
    assert schema.from_json(schema.to_json(r)) == r


def test_a_version_2_report_reads_with_no_integrity_block(tb, analyze_builder):
    _calls_with_drops(tb, 3, set())
    d = json.loads(schema.to_json(analyze_builder(tb, calls="call")))
    d["schema_version"] = 2
    del d["integrity"], d["what_if"]
    for row in d["calls"]["per_call"]:
        del row["launches_without_work"]
    r = schema.from_dict(d)
    assert r.integrity is None and r.what_if == () and r.calls.warm_count == 3


# -- public traces ---------------------------------------------------------------------

LAUNCH_NAMES = ("LaunchKernel", "Memcpy", "Memset", "GraphLaunch")


def _raw(path) -> list[dict]:
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def _need(name: str):
    p = public_corpus.locate(name)
    if p is None:
        pytest.skip(f"{name} not in the public corpus here")
    return p


def test_tracelens_h100_bert_launches_without_device_records():
    import traceview

    p = _need("AMD-AGI__TraceLens/h100__gaunernst_bert-small-uncased__1016001.json.gz")
    ev = _raw(p)
    dev_corr = {e["args"]["correlation"] for e in ev
                if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
                and "correlation" in e.get("args", {})}
    launches = [e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")
                and e.get("ph") == "X" and any(k in e["name"] for k in LAUNCH_NAMES)]
    empty = sum(1 for e in launches if e["args"].get("correlation") not in dev_corr)
    r = traceview.analyze(p)
    c = {c.id: c for c in r.integrity.checks}["launch-without-device-work"]
    assert c.count == empty == 22
    # its one call holds them: not a warm call with an idle device
    assert r.calls.warm_count == 0 and r.integrity.incomplete_calls == (0,)


def test_vllm_full_graph_capture_trace_is_read_as_a_capture():
    import traceview

    p = _need("AMD-AGI__TraceLens/inference__vllm_decode_full__capture_traces__"
              "graph_capture_rank_0.1773709742341309550.pt.trace.json.gz")
    ev = _raw(p)
    begins = [e for e in ev if e.get("name") == "hipStreamBeginCapture"]
    ends = [e for e in ev if e.get("name") == "hipStreamEndCapture"]
    r = traceview.analyze(p)
    checks = {c.id: c for c in r.integrity.checks}
    assert checks["graph-capture"].count == len(begins) == 1
    # the launches between begin and end were captured, not dropped
    assert "launch-without-device-work" not in checks
    span = round(ends[-1]["ts"] * 1000 + ends[-1]["dur"] * 1000) - round(begins[0]["ts"] * 1000)
    assert abs(checks["graph-capture"].ns - span) <= 2
    assert "device.idle_ns" in r.integrity.unreliable


def test_reduce_overhead_graph_replays_are_counted_per_graph():
    """CUDA graph trees: two graphs (forward and backward) replayed in each step, with
    different node counts; no replay lost records, so no dropped-record verdict."""
    import traceview
    from tests.conftest import ROOT

    r = traceview.analyze(ROOT / "fixtures" / "train_llama_reduce_overhead.json.gz")
    ev = _raw(ROOT / "fixtures" / "train_llama_reduce_overhead.json.gz")
    replays = [e for e in ev if e.get("name") == "cudaGraphLaunch" and e.get("ph") == "X"]
    g = r.integrity.graphs
    assert g.replays == len(replays) == 6
    assert "dropped-device-records" not in {c.id for c in r.integrity.checks}


def test_newer_kineto_fields_and_lanes(tb, analyze_builder):
    """uint64 correlation ids (one for all kernels of a replay), ``graph id`` / ``graph
    node id`` and ``occupancy`` args, Stream Sync lanes at tid = stream + 1000000 and the
    ``cuda_event`` and ``overhead`` categories: replays link to their nodes, the sync
    lane is no device work."""
    big = 2**63 + 5
    for r in range(3):
        t = r * 100 * US
        tb.launch(t, 4 * US, api="cudaGraphLaunch", corr=big + r)
        for k in range(4):
            ev = tb.kernel(f"node{k}", t + 10 * US + k * 2 * US, 1 * US, corr=big + r)
            ev["args"].update({"graph id": 7, "graph node id": 100 + k,
                               "occupancy": {"blocks": 4, "ratio": 0.5}})
        tb.raw({"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0,
                "tid": 7 + 1000000, "ts": (t + 20 * US) / 1000, "dur": 5,
                "args": {"stream": 7, "device": 0}})
        tb.raw({"ph": "X", "cat": "cuda_event", "name": "Event Record", "pid": 0, "tid": 7,
                "ts": (t + 21 * US) / 1000, "dur": 0.1, "args": {}})
        tb.raw({"ph": "X", "cat": "overhead", "name": "Buffer flush", "pid": 100, "tid": 100,
                "ts": (t + 50 * US) / 1000, "dur": 3, "args": {}})
    r = analyze_builder(tb)
    assert (r.launches.count, r.launches.linked) == (3, 3)
    assert (r.device.kernel_count, r.device.busy_ns) == (12, 12 * US)
    g = r.integrity.graphs
    assert (g.replays, g.nodes.p50, g.graph_ids) == (3, 4, 1)
    assert r.integrity.reliable


def test_the_step_holding_launchless_device_work_is_named_as_a_step_not_a_count(
        tb, analyze_builder):
    """A DLRM rank's only step (step 0) held 64 kernels launched before the profiler's
    window (no runtime event carries their correlation ids); the sentence said "steps
    touched: 0", which reads as none. Steps and calls are named as elsewhere: "#0"."""
    steps = _steps_with_drops(tb, 1, set())
    # two kernels inside step 0 whose launch no runtime event records
    tb.kernel("vectorized_elementwise_kernel", 70 * US, 2 * US, corr=1)
    tb.kernel("vectorized_elementwise_kernel", 75 * US, 2 * US, corr=2)
    launched = {e["args"]["correlation"] for e in tb.events
                if e["cat"] in ("cuda_runtime", "cuda_driver")}
    orphans = [e for e in tb.events if e["cat"] == "kernel"
               and e["args"]["correlation"] not in launched]
    a, b = steps[0]
    assert len(orphans) == 2 and all(a <= e["ts"].ns < b for e in orphans)
    r = analyze_builder(tb)
    c = {c.id: c for c in r.integrity.checks}["device-work-without-launch"]
    assert (c.count, c.calls, c.steps) == (2, (0,), (0,))
    said = [x.text for x in r.claims if x.id == "integrity-check"]
    assert said == ["2 device records have no launch record (call #0): their launch latency "
                    "is unknown; steps touched: #0"]


def test_work_launched_to_start_early_is_no_overrun(tb, analyze_builder):
    """A kernel launched with attributes (cudaLaunchKernelExC: programmatic dependent
    launch lets it start before the one before it ends) or as a graph node may overlap
    its predecessor on the stream: no recording error. An eager launch's overlap still is."""
    tb.launched_kernel("a", 0, 2 * US, 5 * US, 10 * US)
    corr = tb.launch(3 * US, 2 * US, api="cudaLaunchKernelExC")
    tb.kernel("pdl", 14 * US, 10 * US, corr=corr)  # a ends at 15 us: starts 1 us early
    corr = tb.launch(6 * US, 2 * US, api="cudaGraphLaunch")
    tb.kernel("node0", 25 * US, 10 * US, corr=corr)
    tb.kernel("node1", 33 * US, 10 * US, corr=corr)  # a parallel branch: 2 us together
    tb.launched_kernel("eager", 40 * US, 2 * US, 42 * US, 10 * US)  # node1 ends at 43 us
    r = analyze_builder(tb)
    c = {c.id: c for c in r.integrity.checks}["duration-overrun"]
    assert (c.count, c.ns) == (1, 1 * US)
