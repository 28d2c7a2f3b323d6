"""A trace without device work (CPU-only, or profiled without the CUDA activity) has no
host overhead: the host's time is the work itself. The per-call table shows no sync-wait
or host-overhead row and the result sentence says why it gives none, figures counted here
from the events built, and from a public CPU-only trace's raw events."""

from __future__ import annotations

import gzip
import json
import statistics
from decimal import Decimal

import public_corpus
import pytest

import traceview
from tests.tracebuilder import TraceBuilder
from traceview.render.registry import RenderOptions, renderer

US = 1000


def render_text(r, width: int) -> str:
    return renderer("text").render(r, RenderOptions(width=width))


def render_md(r) -> str:
    return renderer("md").render(r, RenderOptions())


def _cpu_steps(tb: TraceBuilder) -> None:
    """Three 100 us steps of two CPU ops each (30 us and 50 us)."""
    for i in range(3):
        t = i * 200 * US
        tb.annotation("step", t, 100 * US)
        tb.op("aten::mm", t + 5 * US, 30 * US)
        tb.op("aten::add", t + 40 * US, 50 * US)


def test_a_cpu_only_trace_says_no_host_overhead(tb, analyze_builder):
    _cpu_steps(tb)
    r = analyze_builder(tb, calls="^step$")
    assert r.device.busy_ns == 0 and r.calls.count == 3
    said = {c.id: c.text for c in r.claims}
    assert said["api-result"] == ("profiled call p50 100 us (p90 100 us, n=3); no device "
                                  "work, so no host overhead")
    text = render_text(r, width=120)
    assert "host overhead" not in text.replace("no host overhead", "")
    assert "sync wait" not in text
    md = render_md(r)
    assert "host overhead" not in md.replace("no host overhead", "")


def test_a_gpu_trace_keeps_its_host_overhead(tb, analyze_builder):
    for i in range(3):
        t = i * 200 * US
        tb.annotation("step", t, 100 * US)
        tb.launched_kernel("void k<1>", t + 10 * US, 5 * US, t + 20 * US, 40 * US)
    r = analyze_builder(tb, calls="^step$")
    said = {c.id: c.text for c in r.claims}
    # the device runs 40 us of each 100 us call: 60 us of it idle
    assert said["api-result"].endswith("host overhead p50 60 us")
    assert "host overhead (device idle)" in render_text(r, width=120)


def test_hta_cpu_only_rank_has_steps_and_no_host_overhead():
    """HTA's CPU-only rank 34: five ProfilerSteps and no device record, counted from the
    raw events; the step p50 is the median of their durations."""
    name = ("facebookresearch__HolisticTraceAnalysis/cpu_only__rank-34.Jul_15_10_52_41.1074"
            ".pt.trace@b8cce2cd.json.gz")
    path = public_corpus.locate(name)
    if path is None:
        pytest.skip(f"{name} is not in this machine's corpus copy")
    with gzip.open(path) as f:
        events = json.load(f, parse_float=Decimal)["traceEvents"]
    assert not [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    steps = [int((e["dur"] * 1000).to_integral_value()) for e in events
             if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")]
    assert len(steps) == 5
    r = traceview.analyze(path)
    said = {c.id: c.text for c in r.claims}
    assert r.calls.stats["api_ns"].p50 == statistics.median(steps)
    assert said["api-result"].endswith("n=5); no device work, so no host overhead")
