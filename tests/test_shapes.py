"""Real H200 traces of the shapes users have (fixtures/shape_*.json.gz, tools/gpu/shapes.py):
calls, call kinds, cold calls and the p50 full-API figure, each counted here from the raw
events with plain json and integers, then compared with traceview's answer.

The counts follow what a user means by "the call" in each script, written out per shape
(not traceview's general rule): the loop body's function frames, the user's call_N
ranges, the compiled region per call, the profiler steps. A call holding the profiler's
``Activity Buffer Request`` is that set-up's outlier, a call holding compile work cold.
"""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from functools import cache

import pytest

import traceview
from conftest import FIXTURES
from traceview.report.sentences import calls_claim, cause_claim
from traceview.stats import percentile


def _analysis(path):
    """The frozen analysis (the analyses' typed results) of a trace, not the Report."""
    from traceview.report.explanation import analyze_trace

    return analyze_trace(traceview.load(path))



def p50(values):
    return percentile(sorted(values), 50)


@cache
def raw(name: str) -> list[dict]:
    doc = json.loads(gzip.decompress((FIXTURES / f"shape_{name}.json.gz").read_bytes()),
                     parse_float=Decimal)
    out = []
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and "dur" in e:
            e = dict(e, s=int(Decimal(e["ts"]) * 1000))
            e["e"] = e["s"] + int(Decimal(e["dur"]) * 1000)
            out.append(e)
    return out


@cache
def analysed(name: str):
    return _analysis(FIXTURES / f"shape_{name}.json.gz")


LAUNCH = ("cuLaunchKernelEx", "cuLaunchKernel", "cudaLaunchKernel", "cudaLaunchKernelExC")


def launches(evs):
    return sorted(e["s"] for e in evs if e["cat"] in ("cuda_runtime", "cuda_driver")
                  and e["name"] in LAUNCH)


def holds(ev, times):
    return any(ev["s"] <= t < ev["e"] for t in times)


def slow(durs, cold=(), first_ratio=5.0, ratio=2.0):
    """Indices the slow-call rule (docs/findings.md) names cold or outlier: over 2x the
    lower median of the other non-cold calls of the kind (a first call: 5x)."""
    out = []
    for k, d in enumerate(durs):
        others = [x for j, x in enumerate(durs) if j != k and j not in cold]
        if len(others) < 2:
            continue
        if d > (first_ratio if k == 0 else ratio) * p50(others):
            out.append(k)
    return out


def first_cold(durs, events, bufs):
    """The calls the slow-call rule makes cold, the only ones the statistics leave out:
    a first call over 5x the others, unless the profiler's buffer set-up inside it makes
    it an outlier (named, and counted)."""
    return {k for k in slow(durs) if k == 0 and not holds(events[k], bufs)}


def buffer_requests(evs):
    return [e["s"] for e in evs if e["cat"] == "overhead" and e["name"] == "Activity Buffer Request"]


def frame_calls(name, func_suffixes):
    """Frames directly below <module> whose name ends with one of the suffixes and that
    hold a launch, with the synchronize frame that follows each (if any)."""
    evs = raw(name)
    ls = launches(evs)
    py = sorted((e for e in evs if e["cat"] == "python_function"), key=lambda e: e["s"])
    module = next(e for e in py if e["name"].endswith(": <module>"))
    # direct children of <module>: not inside another frame that is inside <module>
    kids, end = [], -1
    for e in py:
        if e is module or not (module["s"] <= e["s"] and e["e"] <= module["e"]):
            continue
        if e["s"] >= end:
            kids.append(e)
            end = e["e"]
    calls = []
    for j, e in enumerate(kids):
        if e["name"].endswith(func_suffixes) and holds(e, ls):
            nxt = kids[j + 1] if j + 1 < len(kids) else None
            sync = nxt["e"] if nxt is not None and nxt["name"].endswith(": synchronize") else None
            calls.append((e, sync))
    return calls


def test_loop_sync_20_frame_calls_with_their_sync():
    calls = frame_calls("loop_sync", (": triton_mul",))
    bufs = buffer_requests(raw("loop_sync"))
    warm = [(e, s) for e, s in calls if not holds(e, bufs)]
    c = analysed("loop_sync").calls
    assert (c.source, len(c.calls)) == ("python_frames", len(calls)) and len(calls) == 20
    assert [k.name for k in c.kinds] == ["shapes.py(28): triton_mul"]
    assert c.cold_indices == []
    assert [i for i, (e, _) in enumerate(calls) if holds(e, bufs)] == [0]
    # call 0: the profiler's buffer set-up; call 1: 3.6x the others (slow, explained)
    outliers = sorted({0} | set(slow([e["e"] - e["s"] for e, _ in calls])))
    assert c.outlier_indices == outliers == [0, 1]
    warm = calls  # outliers are named and stay in the statistics; no call is cold
    assert c.stats["api_ns"].p50 == p50([e["e"] - e["s"] for e, _ in warm])
    assert c.api_sync.p50 == p50([s - e["s"] for e, s in warm])
    assert calls_claim(c).text == ("20 calls: shapes.py(28): triton_mul, found from Python frames "
                                   "(override: --calls)")


def test_loop_two_ops_two_kinds():
    tri = frame_calls("loop_two_ops", (": triton_mul",))
    mul = [(e, s) for e, s in frame_calls("loop_two_ops", ("of type object at 0x7f2241f3e180>",))
           if e["name"].startswith("<built-in method mul ")]
    bufs = buffer_requests(raw("loop_two_ops"))
    c = analysed("loop_two_ops").calls
    assert len(tri) == len(mul) == 40 and len(c.calls) == 80
    kinds = {k.name: k for k in c.kinds}
    everything = []
    for calls, kname in ((tri, "shapes.py(28): triton_mul"), (mul, mul[0][0]["name"])):
        durs = [e["e"] - e["s"] for e, _ in calls]
        out = first_cold(durs, [e for e, _ in calls], bufs)
        warm = [d for i, d in enumerate(durs) if i not in out]
        assert (kinds[kname].count, kinds[kname].warm_count) == (40, len(warm))
        assert kinds[kname].stats["api_ns"].p50 == p50(warm)
        everything += warm
    assert c.stats["api_ns"].p50 == p50(everything)
    assert c.api_sync.n == 0  # one sync after the whole loop belongs to no call


@pytest.mark.parametrize("name", ["user_inductor", "user_inductor_stack"])
def test_user_ranges_over_compiled_regions(name):
    evs = raw(name)
    ranges = sorted((e for e in evs if e["cat"] == "user_annotation"
                     and e["name"].startswith("call_")), key=lambda e: e["s"])
    bufs = buffer_requests(evs)
    durs = [e["e"] - e["s"] for e in ranges]
    out = first_cold(durs, ranges, bufs)
    warm = [d for i, d in enumerate(durs) if i not in out]
    c = analysed(name).calls
    assert (c.pattern, len(c.calls), c.cold_indices) == ("call_#", 30, [])
    assert len(warm) == c.warm_count
    assert c.stats["api_ns"].p50 == p50(warm)
    assert analysed(name).host_categories.get("compile", 0) == 0


def test_compile_cold_five_compiled_calls_first_cold():
    evs = raw("compile_cold")
    regions = sorted((e for e in evs if e["cat"] == "cpu_op"
                      and e["name"].startswith("Torch-Compiled Region")), key=lambda e: e["s"])
    dynamo = next(e for e in evs if e["cat"] == "cpu_op" and e["name"] == "dynamo")
    ex = analysed("compile_cold")
    c = ex.calls
    assert len(c.calls) == len(regions) == 5
    assert c.cold_indices == [0] and "compile" in cause_claim(c.cold_causes[0], 0, "cold-reason").text
    # the first call is Dynamo's compile followed by the first run of the region
    assert (c.calls[0].start_ns, c.calls[0].end_ns) == (dynamo["s"], regions[0]["e"])
    assert c.stats["api_ns"].p50 == p50([e["e"] - e["s"] for e in regions[1:]])
    assert ex.host_categories["compile"] > 0


def test_model_schedule_steps_warm_no_compile(fixture_reports):
    evs = raw("model_schedule")
    steps = [e for e in evs if e["cat"] == "user_annotation" and e["name"].startswith("ProfilerStep#")]
    ex = analysed("model_schedule")
    c = ex.calls
    assert (c.source, len(c.calls), c.cold_indices) == ("profiler_steps", len(steps), [])
    assert len(steps) == 5
    assert c.stats["api_ns"].p50 == p50([e["e"] - e["s"] for e in steps])
    assert ex.host_categories.get("compile", 0) == 0
    assert not any(f.id == "cold-path" for f in fixture_reports["shape_model_schedule.json.gz"].findings)


def test_model_schedule_cold_first_step_compiles_the_rest_warm():
    """The compiled model profiled from its first step: step 0 holds Dynamo and
    Inductor's compile ranges, so it is cold; the later steps compile nothing (step 1,
    2.6x the others, is a slow outlier)."""
    evs = raw("model_schedule_cold")
    steps = sorted((e for e in evs if e["cat"] == "user_annotation"
                    and e["name"].startswith("ProfilerStep#")), key=lambda e: e["s"])
    compiles = [e["s"] for e in evs if "compile_id=" in e["name"]]
    cold = [i for i, st in enumerate(steps) if holds(st, compiles)]
    assert len(steps) == 4 and cold == [0]
    ex = analysed("model_schedule_cold")
    c = ex.calls
    assert (c.source, len(c.calls), c.cold_indices) == ("profiler_steps", 4, cold)
    assert "compile" in cause_claim(c.cold_causes[0], 0, "cold-reason").text
    durs = [e["e"] - e["s"] for e in steps]
    # step 1: 2.6x the other warm steps, an outlier: named, and counted
    assert c.outlier_indices == sorted(set(slow(durs, cold)) - set(cold)) == [1]
    assert c.stats["api_ns"].p50 == p50([d for i, d in enumerate(durs) if i not in cold])
    assert all(call.categories.get("compile", 0) == 0 for call in c.calls[1:])
    assert ex.host_categories["compile"] > 0
