"""Findings on the real fixtures (must fire / must not fire) and at their thresholds."""

from __future__ import annotations

import gzip
import json

import pytest

import traceview
from conftest import FIXTURES
from traceview.report import findings as F

WARM = sorted(p for p in FIXTURES.glob("*.json.gz") if ".cold." not in p.name)
ALL = sorted(FIXTURES.glob("*.json.gz"))


def _raw(path):
    """(events, capture metadata or {}) of a fixture, read with plain json."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    if isinstance(doc, list):
        return doc, {}
    return doc.get("traceEvents", []), doc.get("traceview") or {}


@pytest.fixture(scope="module")
def ids(fixture_reports):
    return {name: {f.id for f in r.findings} for name, r in fixture_reports.items()}


@pytest.fixture(scope="module")
def raw():
    return {p.name: _raw(p) for p in ALL}


def test_graph_replay_exactly_where_the_raw_events_launch_graphs(ids, raw):
    """Counted from the raw events: a runtime call that launches a CUDA graph."""
    for name, (events, _) in raw.items():
        graphs = any("GraphLaunch" in str(e.get("name", "")) for e in events)
        assert ("graph-replay" in ids[name]) == graphs, name
    assert sum("graph-replay" in found for found in ids.values()) >= 3


def _cold_range(events) -> bool:
    return any(str(e.get("name", "")).startswith("cold_call_") for e in events)


def test_cold_path_on_compiled_cold_calls_and_never_on_warm_captures(ids, raw):
    """capture's cold twins hold the first call in a ``cold_call_0`` range; where the
    implementation compiles a kernel (Triton, FlagGems, Inductor) that call is cold. A
    warm capture (its metadata says so; no cold range) has no cold path."""
    fired = 0
    for name, (events, meta) in raw.items():
        if not meta:
            continue
        if _cold_range(events) and meta.get("impl") in ("triton", "flag_gems", "inductor"):
            assert "cold-path" in ids[name], name
            fired += 1
        elif not _cold_range(events):
            assert "cold-path" not in ids[name], name
    assert fired >= 5


def test_profiler_perturbation_on_with_stack_traces(ids, raw):
    for name, (_, meta) in raw.items():
        if ".cold." not in name and meta.get("protocol", {}).get("with_stack"):
            assert "profiler-perturbation" in ids[name], name


def test_verdicts_follow_the_unprofiled_baseline(ids, raw):
    """Host- or device-bound from the capture's own unprofiled figures (no profiler):
    device time per op under a fifth of the full call is host-bound, over four fifths is
    device-bound."""
    seen = set()
    for name, (events, meta) in raw.items():
        base = meta.get("baseline") or {}
        if _cold_range(events) or not base.get("device_ns") or not base.get("full_api_ns_p50"):
            continue
        share = base["device_ns"] / base["full_api_ns_p50"]
        if share < 0.2:
            assert "host-bound" in ids[name] and "device-bound" not in ids[name], name
            seen.add("host")
        elif share > 0.8:
            assert "device-bound" in ids[name] and "host-bound" not in ids[name], name
            seen.add("device")
    assert seen == {"host", "device"}


def test_unsynchronized_range_follows_the_recorded_sync(ids, raw):
    """A capture that synchronizes only at the end (its metadata: ``sync: end``) times
    submission, so its ranges end before their kernels; one stream synchronized after each
    call never does."""
    for name, (events, meta) in raw.items():
        proto = meta.get("protocol") or {}
        if _cold_range(events) or not proto:
            continue
        if proto.get("sync") == "end":
            assert "unsynchronized-range" in ids[name], name
        elif proto.get("sync") == "each" and proto.get("streams", 1) == 1:
            assert "unsynchronized-range" not in ids[name], name


def test_capture_traces_have_complete_reproducers(ids, raw):
    for name, (events, meta) in raw.items():
        if meta and not _cold_range(events):
            assert "reproducer-incomplete" not in ids[name], name


def test_reproducer_incomplete_names_what_is_missing(tmp_path):
    """A real fixture with its capture metadata and shapes stripped (record_shapes off)."""
    doc = json.loads(gzip.decompress((FIXTURES / "torch_mul_1x4096_f32.json.gz").read_bytes()))
    doc.pop("traceview")
    doc.pop("record_shapes")  # the header's flag goes with the shapes it recorded
    for ev in doc["traceEvents"]:
        for key in ("Input Dims", "Input type", "Input Strides", "Concrete Inputs"):
            ev.get("args", {}).pop(key, None)
    p = tmp_path / "noshapes.json"
    p.write_text(json.dumps(doc))
    f = next(f for f in traceview.analyze(p).findings if f.id == "reproducer-incomplete")
    assert set(f.evidence["missing"]) >= {"shapes", "dtypes", "strides", "scalar arguments",
                                          "framework and compiler versions",
                                          "synchronization protocol"}
    assert "record_shapes=True" in f.message and "device" not in f.evidence["missing"]


def _calls(tb, n, *, api, kernel, tail=0, first_api=None, gap=100_000):
    """n calls: range [s, s+api), kernel launched at +100, running `kernel` ns, ending
    `tail` ns after the range when tail > 0."""
    for i in range(n):
        s = i * gap
        a = first_api if (i == 0 and first_api) else api
        tb.annotation(f"call_{i}", s, a)
        k_end = s + a + tail if tail else s + 200 + kernel
        tb.launched_kernel("k", s + 100, 50, k_end - kernel, kernel)


def _found(analyze_builder, tb):
    return {f.id for f in analyze_builder(tb).findings}


@pytest.mark.parametrize("tail, fires", [(F.UNSYNC_TAIL_NS, False), (F.UNSYNC_TAIL_NS + 1, True)])
def test_unsynchronized_threshold(tb, analyze_builder, tail, fires):
    _calls(tb, 5, api=10_000, kernel=2_000, tail=tail)
    assert ("unsynchronized-range" in _found(analyze_builder, tb)) is fires


@pytest.mark.parametrize("kernel, fires", [(5_000, False), (4_999, True)])
def test_range_idle_threshold(tb, analyze_builder, kernel, fires):
    _calls(tb, 5, api=10_000, kernel=kernel)  # RANGE_IDLE_BUSY_SHARE = 0.5 of 10 us
    assert ("range-includes-idle" in _found(analyze_builder, tb)) is fires


@pytest.mark.parametrize("kernel, verdict", [(5_001, "device-bound"), (5_000, "host-bound")])
def test_host_bound_threshold(tb, analyze_builder, kernel, verdict):
    _calls(tb, 5, api=10_000, kernel=kernel)
    assert verdict in _found(analyze_builder, tb)


@pytest.mark.parametrize("first, fires", [(50_000, False), (50_001, True)])
def test_cold_first_call_threshold(tb, analyze_builder, first, fires):
    _calls(tb, 6, api=10_000, kernel=1_000, first_api=first)  # 5x the 10 us median
    assert ("cold-path" in _found(analyze_builder, tb)) is fires


def _record_shapes_trace(tmp_path, *, header: bool, ops: list[dict]):
    """A trace of ``ops`` (cpu_op args), with the header's record_shapes flag or not."""
    from tracebuilder import TraceBuilder

    tb = TraceBuilder()
    if header:
        tb.metadata["record_shapes"] = 1
    for i, args in enumerate(ops):
        tb.raw({"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 1,
                "ts": 10 + 20 * i, "dur": 10, "args": args})
    if not ops:  # an event with a duration, so the trace is not empty of activity
        tb.raw({"ph": "X", "cat": "user_annotation", "name": "step", "pid": 1, "tid": 1,
                "ts": 10, "dur": 10, "args": {}})
    return tb.write(tmp_path / "t.json")


def _said_for(message: str, item: str) -> str:
    """The parenthesis the reproducer finding gives ``item``."""
    start = message.index(f"{item} (") + len(item) + 2
    return message[start:message.index(")", start)]


def test_reproducer_does_not_advise_a_flag_the_trace_had_on(tmp_path):
    """An older PyTorch with record_shapes on records shapes and dtypes but no strides or
    scalar arguments: the finding names them missing, and says the flag was on rather
    than advising it (a real trace's header said record_shapes: 1 beside the advice)."""
    args = {"Input Dims": [[4096], [4096]], "Input type": ["float", "float"]}
    p = _record_shapes_trace(tmp_path, header=True, ops=[args, args])
    events = json.loads(p.read_text())["traceEvents"]
    keys = {k for e in events if e.get("cat") == "cpu_op" for k in e["args"]}
    assert keys == {"Input Dims", "Input type"}  # no strides, no concrete inputs
    f = next(f for f in traceview.analyze(p).findings if f.id == "reproducer-incomplete")
    assert {"strides", "scalar arguments"} <= set(f.evidence["missing"])
    assert not {"shapes", "dtypes"} & set(f.evidence["missing"])
    assert "record_shapes=True" not in f.message
    for item in ("strides", "scalar arguments"):
        assert _said_for(f.message, item) == ("record_shapes was on: the profiler that wrote "
                                              "this trace does not record them")


def test_reproducer_with_the_flag_on_and_no_operator(tmp_path):
    """The header says record_shapes was on, and no operator was recorded (a profile of
    nothing): the shape items are missing because nothing ran, not for want of the flag."""
    p = _record_shapes_trace(tmp_path, header=True, ops=[])
    assert not [e for e in json.loads(p.read_text())["traceEvents"] if e["cat"] == "cpu_op"]
    f = next(f for f in traceview.analyze(p).findings if f.id == "reproducer-incomplete")
    for item in ("shapes", "dtypes", "strides", "scalar arguments"):
        assert item in f.evidence["missing"]
        assert _said_for(f.message, item) == ("record_shapes was on, but the trace records "
                                              "no operator")


def test_reproducer_advises_the_flag_where_it_was_off(tmp_path):
    """The converse: no header flag and no shapes on the ops: the advice stands."""
    p = _record_shapes_trace(tmp_path, header=False, ops=[{}, {}])
    f = next(f for f in traceview.analyze(p).findings if f.id == "reproducer-incomplete")
    for item in ("shapes", "dtypes", "strides", "scalar arguments"):
        assert _said_for(f.message, item) == "add with record_shapes=True"


def test_a_training_trace_keeps_the_advice_the_profiler_can_follow(tmp_path):
    """In a trace of profiler steps (a training script, where traceview capture would not
    help) the items only capture records are to be noted beside the trace; shapes, which
    the profiler records with record_shapes=True, keep that advice: "the profiler does not
    record them" said of shapes was untrue."""
    from tracebuilder import TraceBuilder

    tb = TraceBuilder()
    for i in range(3):
        tb.annotation(f"ProfilerStep#{i}", 1_000 + 100_000 * i, 90_000)
        tb.op("aten::mul", 2_000 + 100_000 * i, 10_000)
    p = tb.write(tmp_path / "steps.json")
    events = json.loads(p.read_text())["traceEvents"]
    assert not any(e.get("args", {}).get("Input Dims") for e in events)
    r = traceview.analyze(p)
    assert r.steps is not None and len(r.steps.steps) == 3
    f = next(f for f in r.findings if f.id == "reproducer-incomplete")
    for item in ("shapes", "dtypes", "strides", "scalar arguments"):
        assert _said_for(f.message, item) == "add with record_shapes=True"
    assert f.message.endswith("framework and compiler versions, synchronization protocol, "
                              "correctness reference (the profiler does not record them: note "
                              "them beside the trace)")


def test_graph_replay_counts_the_trace_s_kernels_as_the_trace_s(tmp_path):
    """One graph launch replaying three nodes beside one eager kernel: the finding counts
    the trace's four kernels as the trace's, and one launch as one launch (it read "1
    graph launches, 425 kernels" of a vLLM replay of 421 nodes beside 4 eager kernels),
    and the replays as some of the kernel launches (it read "results are CUDA graph
    replay" of a trace launching eagerly too)."""
    from tracebuilder import TraceBuilder

    tb = TraceBuilder()
    corr = tb.launch(1_000, 5_000, api="cudaGraphLaunch")
    for k in range(3):
        tb.kernel(f"node{k}", 10_000 + 3_000 * k, 2_000, corr=corr)
    tb.launched_kernel("eager", 30_000, 4_000, 36_000, 2_000)
    p = tb.write(tmp_path / "graph.json")
    events = json.loads(p.read_text())["traceEvents"]
    kernels = sum(1 for e in events if e["cat"] == "kernel")
    graphs = sum(1 for e in events if e.get("name") == "cudaGraphLaunch")
    assert (kernels, graphs) == (4, 1)
    eager = sum(1 for e in events if e.get("name") == "cuLaunchKernelEx")
    f = next(f for f in traceview.analyze(p).findings if f.id == "graph-replay")
    assert f.message == (f"{graphs} of the {graphs + eager} kernel launches is a CUDA graph "
                         f"replay ({kernels} kernels in the trace, eager ones included); "
                         "that call does not show eager launch cost")


def test_a_sliver_of_untraced_host_time_is_said_under_one_percent_not_none(tb, analyze_builder):
    """HTA's AlexNet trace: 145 ms untraced of a 41.6 s window, 0.3% in the window table,
    was "0% of the window is untraced host time" in the no-python-frames finding."""
    us = 1_000
    tb.op("aten::conv2d", 0, 1_000 * us)
    tb.launched_kernel("conv", 10 * us, 5 * us, 20 * us, 100 * us)
    tb.op("aten::relu_", 1_003 * us, 997 * us)  # 3 us of the 2 ms window covered by nothing
    tb.launched_kernel("relu", 1_010 * us, 5 * us, 1_020 * us, 10 * us)
    r = analyze_builder(tb)
    # independent count: the window is 0..2000 us, the host thread's ops leave 3 us uncovered
    assert (r.window.start_ns, r.window.end_ns) == (0, 2_000 * us)
    said = next(f.message for f in r.findings if f.id == "no-python-frames")
    assert "; <1% of the window is untraced host time" in said


def test_a_window_without_device_work_keeps_the_files_device_work_in_mind(tmp_path):
    """A trace with a kernel and no deviceProperties header, read through a window holding
    only host work: the device activity was on (the file has its work), so the advice is
    the header, never "add with a CUDA profiler activity"."""
    from tracebuilder import TraceBuilder

    tb = TraceBuilder()
    tb.op("aten::mul", 0, 10_000)
    tb.launched_kernel("mul", 1_000, 1_000, 3_000, 2_000)
    tb.op("aten::add", 100_000, 10_000)
    tb.metadata.pop("deviceProperties", None)
    p = tb.write(tmp_path / "t.json")
    events = json.loads(p.read_text())
    assert "deviceProperties" not in events
    assert [e for e in events["traceEvents"] if e.get("cat") == "kernel"]
    r = traceview.analyze(p, traceview.Options(window="90us:120us"))
    assert r.device.busy_ns == 0
    f = next(f for f in r.findings if f.id == "reproducer-incomplete")
    assert _said_for(f.message, "device") == ("add with the profiler's deviceProperties "
                                              "header: this file has device work but not "
                                              "the header")
