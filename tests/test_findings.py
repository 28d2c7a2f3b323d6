"""Findings on the real fixtures (must fire / must not fire) and at their thresholds."""

from __future__ import annotations

import gzip
import json

import pytest

import traceview
from conftest import FIXTURES
from traceview.report import findings as F

WARM = sorted(p for p in FIXTURES.glob("*.json.gz") if ".cold." not in p.name)


@pytest.fixture(scope="module")
def ids(fixture_reports):
    return {name: {f.id for f in r.findings} for name, r in fixture_reports.items()}


def test_graph_replay_exactly_on_graph_traces(ids):
    for name, found in ids.items():
        # torch.compile(mode="reduce-overhead") replays CUDA graphs (CUDA-graph trees)
        graphs = ("graph" in name or "reduce_overhead" in name) and ".cold." not in name
        assert ("graph-replay" in found) == graphs, name


def test_cold_path_on_cold_traces_only(ids):
    assert "cold-path" in ids["triton_mul_cold_stack.json.gz"]
    for name, found in ids.items():
        if name.startswith(("triton_", "flag_gems_", "inductor_")) and ".cold." in name:
            assert "cold-path" in found, name
        if name.startswith("shape_"):  # raw profiler traces (tools/gpu/shapes.py)
            # loop_two_ops: its first mul call is 7.4x the other mul calls, a cold first call
            assert ("cold-path" in found) == (name in (
                "shape_compile_cold.json.gz", "shape_model_schedule_cold.json.gz",
                "shape_loop_two_ops.json.gz")), name
        elif ".cold." not in name and "cold_stack" not in name:
            assert "cold-path" not in found, name


def test_profiler_perturbation_on_with_stack_traces(ids):
    for p in WARM:
        meta = json.loads(gzip.decompress(p.read_bytes())).get("traceview", {})
        if meta.get("protocol", {}).get("with_stack"):
            assert "profiler-perturbation" in ids[p.name], p.name


def test_verdicts(ids):
    for name in ("triton_mul_1x4096_f32.json.gz", "torch_mul_1x4096_f32.json.gz",
                 "triton_mul_1x4096_f32_stack.json.gz", "flag_gems_add_16x4096_bf16.json.gz"):
        assert "host-bound" in ids[name] and "device-bound" not in ids[name], name
    big = ids["torch_mul_8192x8192_f16_syncend.json.gz"]
    assert "device-bound" in big and "host-bound" not in big
    assert "unsynchronized-range" in big  # sync only at the end: ranges time submission
    for name, found in ids.items():
        if "syncend" not in name and "two_streams" not in name:
            assert "unsynchronized-range" not in found, name


def test_capture_traces_have_complete_reproducers(ids):
    for p in WARM:
        made_by_capture = "traceview" in json.loads(gzip.decompress(p.read_bytes()))
        if "cold_stack" not in p.name and made_by_capture:
            assert "reproducer-incomplete" not in ids[p.name], p.name


def test_reproducer_incomplete_names_what_is_missing(tmp_path):
    """A real fixture with its capture metadata and shapes stripped (record_shapes off)."""
    doc = json.loads(gzip.decompress((FIXTURES / "torch_mul_1x4096_f32.json.gz").read_bytes()))
    doc.pop("traceview")
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
