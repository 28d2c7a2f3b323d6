"""One unprofiled call figure per report, its method stated.

``flaggems_sigmoid_65536_f32_split`` carries two unprofiled measurements of the call:
the split child's (86.6 us, sys.monitoring on one code object per run) and capture's
baseline (full API p50 95.8 us, a fresh process). The report once said 5.6x in one place
and 5.07x in another with no word on which was which. The figures expected here are read
from the trace's own metadata (the capture block, decoded with json), never from
traceview's output.
"""

from __future__ import annotations

import gzip
import json
import re

from conftest import FIXTURES
from traceview.render.registry import RenderOptions, renderer
from traceview.units import fmt_ns


def capture_block(name: str) -> dict:
    with gzip.open(FIXTURES / name, "rt") as f:
        return json.load(f)["traceview"]


def flat(text: str) -> str:
    return " ".join(text.split())


def test_the_split_is_the_one_call_figure_and_the_baseline_is_labelled(fixture_reports):
    name = "flaggems_sigmoid_65536_f32_split.json.gz"
    base = capture_block(name)["baseline"]
    split_call, full_api = base["split"]["call_ns"], base["full_api_ns_p50"]
    assert split_call != full_api
    r = fixture_reports[name]
    assert r.unprofiled.call_ns == split_call
    text = flat(renderer("text").render(r, RenderOptions(width=120)))
    # the baseline's figure appears once, on its line, labelled a second measurement
    assert text.count(fmt_ns(full_api)) == 1
    assert ("unprofiled baseline (same run; a second measurement: the call figure is the "
            f"split's, below): full API p50 {fmt_ns(full_api)}") in text
    prof = r.unprofiled.profiled_call_ns
    # every share and ratio of the unprofiled call is the split's
    share = f"{100 * split_call / prof:.0f}%"
    assert f"unprofiled, a call is {share} of the profiled one" in text
    assert f"unprofiled, the same call takes {fmt_ns(split_call)}: {share}" in text
    pert = next(f for f in r.findings if f.id == "profiler-perturbation")
    assert pert.evidence["unprofiled_api_ns_p50"] == split_call
    assert f"vs unprofiled (measured split) {fmt_ns(split_call)}" in flat(pert.message)
    ratios = set(re.findall(r"\((\d+\.\d+)x\)", flat(pert.message)))
    assert ratios == {f"{r.calls.stats['api_ns'].p50 / split_call:.2f}"}


def test_a_graph_capture_compares_its_calls_with_the_synchronized_replay(fixture_reports):
    name = "torch_mul_graph.json.gz"
    base = capture_block(name)["baseline"]
    replay = base["replay_ns_p50"]
    r = fixture_reports[name]
    text = flat(renderer("text").render(r, RenderOptions(width=120)))
    assert "carries no capture baseline" not in text
    assert r.unprofiled.call_ns == replay
    assert f"Without the profiler a call takes {fmt_ns(replay)}" in text
    assert f"graph replay p50 {fmt_ns(replay)} (synchronized each replay)" in text


def test_the_models_categories_are_scaled_as_its_line_says(fixture_reports):
    """Each category's unprofiled figure is its profiled p50 times the two factors the
    model's line states (within the ns rounding of each figure)."""
    for name in ("torch_mul_1x4096_f32.json.gz", "torch_mul_1x4096_f32_stack.json.gz",
                 "torch_mul_graph.json.gz"):
        u = fixture_reports[name].unprofiled
        m = re.search(r"categories: their profiled p50s x (\d\.\d+), then x (\d\.\d+)",
                      u.method)
        assert m, u.method
        factor = float(m.group(1)) * float(m.group(2))
        assert sum(u.categories.values()) == u.call_ns
        for cat, ns in u.categories.items():
            prof = u.profiled_categories[cat]
            assert abs(ns - prof * factor) <= 0.002 * prof + 2, (name, cat, ns, prof, factor)
