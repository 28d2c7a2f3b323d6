"""The real H200 fixtures: identities, and counts checked against an independent count.

The independent count reads the gzipped JSON with the standard library and works the
numbers out with plain Python (its own ns parsing, its own interval merge), sharing no
code with traceview.
"""

from __future__ import annotations

import gzip
import json
from decimal import Decimal

import pytest

from conftest import FIXTURES

ALL = sorted(p.name for p in FIXTURES.glob("*.json.gz"))
LAUNCH_APIS = {"cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchKernel", "cudaLaunchKernelExC",
               "cudaGraphLaunch", "cudaMemcpyAsync", "cudaMemsetAsync"}


def _ns(x) -> int:
    return int(Decimal(str(x)) * 1000)


def independent(path):
    doc = json.loads(gzip.decompress(path.read_bytes()))
    evs = doc["traceEvents"] if isinstance(doc, dict) else doc
    work = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in evs
            if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    merged = []
    for s, e in sorted(work):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return {
        "kernels": sum(1 for e in evs if e.get("ph") == "X" and e.get("cat") == "kernel"),
        "launches": sum(1 for e in evs if e.get("ph") == "X" and e.get("name") in LAUNCH_APIS
                        and e.get("cat") in ("cuda_runtime", "cuda_driver")),
        "busy": sum(e - s for s, e in merged),
        "kernel_sum": sum(_ns(e["dur"]) for e in evs
                          if e.get("ph") == "X" and e.get("cat") == "kernel"),
    }


@pytest.fixture(scope="module")
def reports(fixture_reports):
    return {name: fixture_reports[name].to_dict() for name in ALL}


@pytest.mark.parametrize("name", ALL)
def test_identities_and_independent_counts(reports, name):
    d = reports[name]
    ref = independent(FIXTURES / name)
    w = d["window"]["dur_ns"]
    assert sum(d["host"]["categories"].values()) == w
    assert sum(c["ns"] for c in d["breakdown"]) == w
    assert sum(c["ns"] for c in d["breakdown"] if c["device"] == "busy") == d["device"]["busy_ns"]
    assert d["device"]["kernel_count"] == ref["kernels"]
    assert d["launches"]["count"] == ref["launches"]
    assert d["device"]["busy_ns"] == ref["busy"]
    assert d["device"]["kernel_sum_ns"] == ref["kernel_sum"]
    assert d["launches"]["linked"] == d["launches"]["count"]


def _by_name(reports, part):
    """Warm traces whose name contains ``part`` (cold twins hold one call)."""
    hits = [n for n in reports if part in n and ".cold." not in n]
    assert hits, f"no fixture matching {part!r}"
    return [reports[n] for n in hits]


def test_two_streams_overlap(reports):
    for d in _by_name(reports, "two_streams"):
        assert d["device"]["busy_ns"] < d["device"]["kernel_sum_ns"]


def test_with_stack_triton_shows_the_fine_categories(reports):
    for d in _by_name(reports, "triton_mul_1x4096_f32_stack"):
        cats = d["host"]["categories"]
        for c in ("specialize", "cache_key", "launch_metadata", "launch", "sync"):
            assert cats[c] > 0, c


def test_cold_trace_is_mostly_compile(reports):
    for d in _by_name(reports, "triton_mul_cold_stack"):
        assert d["host"]["categories"]["compile"] > 0.5 * d["window"]["dur_ns"]


def test_cold_twins_are_cold_and_warm_traces_are_not(reports):
    """capture keeps the first call apart: its cold twin holds the compile work."""
    for name, d in reports.items():
        ids = {f["id"] for f in d["findings"]}
        if name.startswith(("triton_", "flag_gems_")) and ".cold." in name:
            assert d["host"]["categories"].get("compile", 0) > 0, name
        if ".cold." not in name and name not in ("triton_mul_cold_stack.json.gz",
                                                 "shape_compile_cold.json.gz",
                                                 "shape_model_schedule_cold.json.gz",
                                                 # a plain loop: its first torch mul call is
                                                 # 7x the others, nobody kept it apart
                                                 "shape_loop_two_ops.json.gz"):
            assert "cold-path" not in ids, name


def test_graph_replay_kernels_link_to_graph_launches(reports):
    for d in _by_name(reports, "graph"):
        assert "cudaGraphLaunch" in d["launches"]["by_api"]
        per_launch = 10 if "graph10" in d["trace"]["path"] else 1  # ops captured per graph
        assert d["device"]["kernel_count"] == per_launch * d["launches"]["count"]
        assert any(f["id"] == "graph-replay" for f in d["findings"])
