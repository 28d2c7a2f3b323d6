"""Words that name a quantity or a runtime say the right one, on built traces whose
answers are counted here from the raw events.

* A ROCm trace (HIP runtime calls, an AMD device, ``hip_driver_version``) is worded as
  one: its graphs are HIP graphs, the versions a reproducer needs are ROCm's, and a
  ``hip_driver_version`` header counts as the driver recorded.
* The what-if's summed device time is said as a sum over nodes, not as "device work"
  (the words the step and verdict use for the busy union over streams).
* A projection above the call it replaces is said as no gain, never as "0.0x".
"""

from __future__ import annotations

import json
import re

import pytest

import traceview
from tracebuilder import TraceBuilder
from traceview.metadata import runtime_of
from traceview.render.registry import RenderOptions, renderer
from traceview.report.claims import check_all
from traceview.units import fmt_ns

US = 1000
MS = 1000 * US


def _ns(x) -> int:
    return round(float(x) * 1000)


def _chain(tb: TraceBuilder, api: str, calls: int = 4) -> None:
    """Calls of four pointwise launches each, synchronized at the end."""
    for i in range(calls):
        t = i * 200 * US
        tb.annotation("call", t, 100 * US)
        for j in range(4):
            ls = t + 5 * US + j * 10 * US
            corr = tb.launch(ls, 4 * US, api=api)
            tb.kernel("void at::native::vectorized_elementwise_kernel<4>", ls + 6 * US,
                      2 * US, corr=corr)
        tb.sync(t + 60 * US, 30 * US)


def _texts(r) -> dict[str, str]:
    opts = RenderOptions(width=120)
    return {f: renderer(f).render(r, opts) for f in ("text", "md")}


def _flat(s: str) -> str:
    return re.sub(r"\s+", " ", s)


def _amd(tb: TraceBuilder) -> None:
    tb.metadata["deviceProperties"] = [{"id": 0, "name": "AMD Instinct MI300X"}]


def test_a_rocm_trace_is_worded_as_rocm(tmp_path):
    tb = TraceBuilder()
    _amd(tb)
    _chain(tb, "hipLaunchKernel")
    path = tb.write(tmp_path / "rocm.json")
    events = json.loads(path.read_text())["traceEvents"]
    assert {e["name"] for e in events if e.get("cat") == "cuda_runtime"} >= {"hipLaunchKernel"}
    r = traceview.analyze(path, traceview.Options(calls="call"))
    assert check_all(r.claims, r.to_dict()) == []
    said = " ".join(c.text for c in r.claims)
    assert "as one HIP graph" in said and "CUDA graph" not in said
    rep = next(f for f in r.findings if f.id == "reproducer-incomplete")
    assert "driver and ROCm versions" in rep.message and "CUDA versions" not in rep.message
    assert "driver and ROCm versions" in rep.evidence["missing"]
    for out in _texts(r).values():
        flat = _flat(out)
        assert "HIP graph" in flat and "CUDA graph" not in flat
        assert "CUDA versions" not in flat and "cuda_driver_version" not in flat
    # the JSON's scenario ids are a schema: unchanged
    assert [w.scenario for w in r.what_if][:1] == ["cuda-graph"]


def test_a_rocm_header_records_the_driver(tmp_path):
    """Kineto on ROCm writes ``hip_driver_version``, not ``cuda_driver_version``: the
    driver is recorded, and no reproducer item asks for it."""
    tb = TraceBuilder()
    _amd(tb)
    tb.metadata["hip_driver_version"] = 60443483
    _chain(tb, "hipLaunchKernel")
    r = traceview.analyze(tb.write(tmp_path / "rocm.json"), traceview.Options(calls="call"))
    rep = next(f for f in r.findings if f.id == "reproducer-incomplete")
    assert not any("driver" in m for m in rep.evidence["missing"])


def test_a_device_only_rocm_file_asks_for_the_hip_header(tmp_path):
    """Device records with no header: the item names ROCm's header key."""
    tb = TraceBuilder()
    corr = tb.launch(0, 4 * US, api="hipLaunchKernel")
    tb.kernel("k", 10 * US, 5 * US, corr=corr)
    r = traceview.analyze(tb.write(tmp_path / "bare.json"))
    rep = next(f for f in r.findings if f.id == "reproducer-incomplete")
    assert "driver and ROCm versions (add with the profiler's hip_driver_version" in rep.message


def test_a_cuda_trace_keeps_its_words(tmp_path):
    tb = TraceBuilder()
    tb.metadata["deviceProperties"] = [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]
    _chain(tb, "cudaLaunchKernel")
    r = traceview.analyze(tb.write(tmp_path / "cuda.json"), traceview.Options(calls="call"))
    said = " ".join(c.text for c in r.claims)
    assert "as one CUDA graph" in said and "HIP" not in said
    rep = next(f for f in r.findings if f.id == "reproducer-incomplete")
    assert "driver and CUDA versions" in rep.message


@pytest.mark.parametrize(("meta", "apis", "want"), [
    ({}, ["hipExtModuleLaunchKernel"], "HIP"),
    ({}, ["cudaLaunchKernel"], "CUDA"),
    ({}, ["cuLaunchKernelEx"], "CUDA"),
    ({"roctracer_version": 4}, [], "HIP"),
    ({"cuda_driver_version": 12040}, [], "CUDA"),
    ({"deviceProperties": [{"name": "AMD Instinct MI250X / MI250"}]}, [], "HIP"),
    ({"deviceProperties": [{"name": "NVIDIA A100-SXM4-80GB"}]}, [], "CUDA"),
    ({}, [], "CUDA"),
])
def test_the_runtime_is_read_from_the_evidence(meta, apis, want):
    assert runtime_of(meta, apis).api == want


def test_summed_device_time_is_not_called_device_work(tmp_path):
    """Two streams overlapping: the step's device work is the union (busy), the model's
    figure the durations summed over the nodes; the words tell them apart."""
    tb = TraceBuilder()
    for i in range(3):
        t = i * MS
        tb.annotation("call", t, 500 * US)
        c1 = tb.launch(t + 5 * US, 4 * US)
        tb.kernel("gemm_a", t + 20 * US, 200 * US, corr=c1, stream=7)
        c2 = tb.launch(t + 10 * US, 4 * US)
        tb.kernel("gemm_b", t + 30 * US, 200 * US, corr=c2, stream=8)
        tb.sync(t + 15 * US, 300 * US)
    path = tb.write(tmp_path / "two_streams.json")
    events = json.loads(path.read_text())["traceEvents"]
    kernels = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in events
               if e.get("cat") == "kernel" and _ns(e["ts"]) < 1 * MS]
    summed = sum(b - a for a, b in kernels)
    busy = max(b for _, b in kernels) - min(a for a, _ in kernels)
    assert summed > busy  # the shape: overlap makes the two figures differ
    r = traceview.analyze(path, traceview.Options(calls="call"))
    assert check_all(r.claims, r.to_dict()) == []
    graph = next(c for c in r.claims if c.id == "what-if" and "graph:" in c.text)
    assert f"{fmt_ns(summed)} of device time summed over the nodes" in graph.text
    assert "of device work" not in graph.text
    assert r.calls.stats["kernel_ns"].p50 == busy


def test_a_projection_above_the_call_is_no_gain(tmp_path):
    """A call that returns before its device work ends (no synchronize): the graph
    models project the work's length, longer than the call measured."""
    tb = TraceBuilder()
    for i in range(3):
        t = i * 10 * MS
        tb.annotation("call", t, 100 * US)
        tb.launched_kernel("conv_fwd", t + 10 * US, 20 * US, t + 40 * US, 4 * MS)
    path = tb.write(tmp_path / "unsynced.json")
    r = traceview.analyze(path, traceview.Options(calls="call"))
    assert check_all(r.claims, r.to_dict()) == []
    rows = [w for w in r.what_if if w.scenario in ("cuda-graph", "no-host-overhead")]
    assert rows and all(w.projected_ns > w.measured_ns == 100 * US for w in rows)
    for w, c in zip(r.what_if, [c for c in r.claims if c.id == "what-if"], strict=True):
        if w in rows:
            assert (f"no gain: the model projects {fmt_ns(w.projected_ns)} per call" in c.text
                    and f"above the measured {fmt_ns(100 * US)}" in c.text)
    for out in _texts(r).values():
        assert not re.search(r"\b0\.\dx", out)


def _kinds_with_a_slow_first(tb: TraceBuilder) -> None:
    """Three calls of three kinds (one each), the first 30 ms in its launch and 40 ms more
    of host work, nothing compiled: the first call is slow but not cold (its launch is
    under half the call, so it is not profiler start-up either)."""
    t = 0
    for name, launch, host in (("embed", 30 * MS, 40 * MS), ("block", 50 * US, 0),
                               ("head", 40 * US, 0)):
        tb.annotation(name, t, launch + 20 * US + host)
        tb.launched_kernel("void at::native::vectorized_elementwise_kernel<4>", t + 5 * US,
                           launch, t + launch + 10 * US, 2 * US)
        t += launch + 100 * US + host


def test_a_slow_first_call_among_the_warm_is_not_said_left_out(tmp_path):
    tb = TraceBuilder()
    _kinds_with_a_slow_first(tb)
    path = tb.write(tmp_path / "kinds.json")
    events = json.loads(path.read_text())["traceEvents"]
    calls = [e for e in events if e.get("cat") == "user_annotation"]
    r = traceview.analyze(path, traceview.Options(calls="embed|block|head"))
    assert check_all(r.claims, r.to_dict()) == []
    assert r.calls.warm_count == len(calls) == 3 and not r.calls.cold
    cold = next(f for f in r.findings if f.id == "cold-path")
    walls = sorted(_ns(e["dur"]) for e in calls)
    assert f"warm calls (the first among them): p50 {fmt_ns(walls[1])} over 3" in cold.message
    assert "without it" not in cold.message


def test_the_range_idle_of_one_kind_among_several_names_it(tmp_path):
    """Calls of several kinds: the figures are the dominant kind's p50s, said as its."""
    tb = TraceBuilder()
    _kinds_with_a_slow_first(tb)
    path = tb.write(tmp_path / "kinds.json")
    r = traceview.analyze(path, traceview.Options(calls="embed|block|head"))
    idle = next(f for f in r.findings if f.id == "range-includes-idle")
    wall = next(_ns(e["dur"]) for e in json.loads(path.read_text())["traceEvents"]
                if e.get("name") == "embed")
    assert idle.message.startswith(f"calls of embed span {fmt_ns(wall)} (p50), of which")
    assert "each call" not in idle.message


@pytest.mark.parametrize(("kernel_ns", "want"), [(2 * US, "(<1%)"), (49_600, "(49.6%)")])
def test_a_share_under_half_is_never_printed_as_zero_or_half(tmp_path, kernel_ns, want):
    """range-includes-idle asserts the kernel's share is under half of the call: a share
    of 0.4% or 49.6% is printed so, never '0%' or '50%'."""
    tb = TraceBuilder()
    call = 100 * US if kernel_ns > 10 * US else 500 * US
    for i in range(3):
        t = i * MS
        tb.annotation("call", t, call)
        tb.launched_kernel("gemm", t + 1 * US, 2 * US, t + 5 * US, kernel_ns)
        tb.sync(t + 6 * US, kernel_ns)
    path = tb.write(tmp_path / "share.json")
    events = json.loads(path.read_text())["traceEvents"]
    k = next(_ns(e["dur"]) for e in events if e.get("cat") == "kernel")
    c = next(_ns(e["dur"]) for e in events if e.get("cat") == "user_annotation")
    assert 0 < k / c < 0.5
    r = traceview.analyze(path, traceview.Options(calls="call"))
    idle = next(f for f in r.findings if f.id == "range-includes-idle")
    assert f"the kernel runs {fmt_ns(k)} {want}" in idle.message


def test_the_markdown_device_line_names_the_rocm_versions(tmp_path):
    """The reproducer table's device line shows the HIP driver and runtime a ROCm header
    records (the finding counts them as recorded, so the table shows them)."""
    tb = TraceBuilder()
    _amd(tb)
    tb.metadata["hip_driver_version"] = 60443483
    tb.metadata["hip_runtime_version"] = 60443484
    _chain(tb, "hipLaunchKernel")
    path = tb.write(tmp_path / "rocm.json")
    header = json.loads(path.read_text())
    r = traceview.analyze(path, traceview.Options(calls="call"))
    md = renderer("md").render(r, RenderOptions())
    line = next(x for x in md.splitlines() if "AMD Instinct MI300X" in x)
    assert f"HIP driver {header['hip_driver_version']}" in line
    assert f"HIP runtime {header['hip_runtime_version']}" in line
