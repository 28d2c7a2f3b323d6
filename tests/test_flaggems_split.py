"""The host-time split of a FlagGems ``add`` that FlagGems #4812 discusses (pointwise_dynamic + libentry, with_stack), per warm
call, without a rules file: computed here by hand from the raw Python frames (plain json,
integers) and compared with traceview's per-call functions and module families, and shown
in every output."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal

import pytest
from typer.testing import CliRunner

import traceview
from conftest import FIXTURES
from traceview.cli.app import app
from traceview.stats import percentile


def _analysis(path):
    """The frozen analysis (the analyses' typed results) of a trace, not the Report."""
    from traceview.report.explanation import analyze_trace

    return analyze_trace(traceview.load(path))


TRACE = FIXTURES / "flag_gems_add_16x4096_bf16.json.gz"
# what a FlagGems developer reads off the call: frame names in this trace
SPLIT = {
    "libentry.run": "flag_gems/utils/libentry.py(659): run",
    "libentry key": "flag_gems/utils/libentry.py(637): key",
    "type_promotion": "flag_gems/utils/type_utils.py(5): type_promotion",
    "tile heuristics": "flag_gems/utils/shape_utils.py(185): heuristics_for_tile_size",
    "warp heuristics": "flag_gems/utils/shape_utils.py(197): heuristics_for_num_warps",
    "StridedBuffer": "flag_gems/utils/tensor_wrapper.py(50): __init__",
    "Triton runner": "triton/compiler/compiler.py(493): runner",
}


def p50(values):
    return percentile(sorted(values), 50)


@pytest.fixture(scope="module")
def frames():
    doc = json.loads(gzip.decompress(TRACE.read_bytes()), parse_float=Decimal)
    evs = []
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and "dur" in e:
            s = int(Decimal(e["ts"]) * 1000)
            evs.append({"cat": e.get("cat"), "name": e["name"], "tid": e.get("tid"), "s": s,
                        "e": s + int(Decimal(e["dur"]) * 1000)})
    calls = sorted((e for e in evs if e["cat"] == "user_annotation"
                    and e["name"].startswith("call_")), key=lambda e: e["s"])
    py = [e for e in evs if e["cat"] == "python_function" and e["tid"] == calls[0]["tid"]]
    return calls, py


def union(spans):
    total, end = 0, None
    for a, b in sorted(spans):
        if end is None or a >= end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def per_call_inclusive(calls, py, name):
    """p50 over the calls holding the frame of the union of its intervals in the call."""
    vals = []
    for c in calls:
        spans = [(f["s"], min(f["e"], c["e"])) for f in py
                 if f["name"] == name and c["s"] <= f["s"] < c["e"]]
        if spans:
            vals.append(union(spans))
    return p50(vals), len(vals)


def test_split_per_warm_call_matches_the_frames(frames):
    calls, py = frames
    ex = _analysis(TRACE)
    assert ex.calls.warm_count == len(calls) == 30  # no compile, no profiler outlier
    wrapper = next(f["name"] for f in py if "/code_cache/" in f["name"]
                   and f["name"].endswith(": add_func_wrapper_rank_1"))
    for label, name in {**SPLIT, "generated wrapper": wrapper}.items():
        want, n = per_call_inclusive(calls, py, name)
        got = ex.per_call.functions[name]
        assert (got.inclusive_ns, got.calls_with) == (want, n), label
        assert not got.few_calls


def module(name):
    path = name.split(".py(", 1)[0]
    return path.removesuffix("/__init__").replace("/", ".") if not name.startswith("<") else None


def family_ns(calls, py, mod):
    """Per call: time owned by mod's frames, i.e. each frame's duration less its nearest
    descendant frames that belong to a Python file (builtins stay with their caller)."""
    out = []
    for c in calls:
        inside = sorted((f for f in py if c["s"] <= f["s"] < c["e"]),
                        key=lambda f: (f["s"], -f["e"]))
        stack, total = [], 0  # stack of (end, module or None, is_file_frame)
        for f in inside:
            while stack and stack[-1][0] <= f["s"]:
                stack.pop()
            m = module(f["name"])
            if m is not None:
                owner = next((s for s in reversed(stack) if s[1] is not None), None)
                if owner is not None and owner[1] == mod:
                    total -= f["e"] - f["s"]
                if m == mod:
                    total += f["e"] - f["s"]
            stack.append((f["e"], m))
        out.append(total)
    return p50(out)


@pytest.mark.parametrize("mod", ["flag_gems.utils.tensor_wrapper", "flag_gems.utils.libentry",
                                 "flag_gems.utils.type_utils", "torch._prims_common"])
def test_families_match_the_frames(frames, mod):
    calls, py = frames
    fam = {f.name: f.ns_per_call for f in _analysis(TRACE).per_call.families}
    assert fam[mod] == family_ns(calls, py, mod)


@pytest.mark.parametrize("fmt", ["text", "md", "json"])
def test_every_output_shows_the_families_and_the_tree(fmt):
    r = CliRunner().invoke(app, ["explain", str(TRACE), "--format", fmt, "--width", "160"])
    assert r.exit_code == 0, r.output
    out = r.stdout
    for mod in ("flag_gems.utils.libentry", "torch._prims_common",
                "flag_gems.utils.tensor_wrapper", "triton.runtime.jit"):
        assert mod in out, (fmt, mod)
    for label in ("libentry.run", "libentry key", "type_promotion", "tile heuristics",
                  "Triton runner"):
        assert SPLIT[label] in out, (fmt, label)
    if fmt == "json":
        d = json.loads(out)
        assert d["calls"]["tree"] and d["host"]["families"]
        f = next(f for f in d["host"]["functions"] if f["name"] == SPLIT["libentry.run"])
        assert f["inclusive_ns_per_call"] > f["self_ns_per_call"] > 0
