"""A slow call whose launches lost their device records is incomplete (left out of the
figures, as the per-call title says), so its slowness line must not call it an outlier,
which the title's words reserve for counted calls. Counted here from the events built,
and on a public trace's raw events."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal

import public_corpus
import pytest

import traceview
from tests.tracebuilder import TraceBuilder
from traceview.render.registry import RenderOptions, renderer

US = 1000


def _text(r) -> str:
    """The text report with its lines joined (a sentence may wrap)."""
    return " ".join(renderer("text").render(r, RenderOptions(width=120)).split())


def test_a_slow_incomplete_call_is_named_incomplete_not_outlier(tb: TraceBuilder,
                                                                analyze_builder):
    """Eight 20 us calls, each one launch of a 5 us kernel; call 4 runs 400 us (20x the
    others) and its second launch has no device record."""
    for i in range(8):
        t = i * 1000 * US
        dur = 400 * US if i == 4 else 20 * US
        tb.annotation("call", t, dur)
        tb.launched_kernel("void k<1>", t + 2 * US, 4 * US, t + 8 * US, 5 * US)
        if i == 4:
            tb.launch(t + 300 * US, 4 * US)  # its kernel record lost
    r = analyze_builder(tb, calls="^call$")
    slow = r.calls.per_call[4]
    assert slow.outlier and slow.launches_without_work == 1
    text = _text(r)
    assert "incomplete (launches without device records): #4 left out" in text
    assert "outlier #4" not in text
    assert "incomplete #4 (call), also slow: 400 us" in text


def test_particle_transformer_s_incomplete_call_is_not_called_an_outlier():
    """The Particle Transformer GPU trace: one cudaLaunchKernel (1.34 s, counted from the
    raw events) has no device record; the call holding it is incomplete, and slow. It is
    the first ``aten::conv1d`` (the calls are the outermost ops around launches, each op its
    own kind), so it is cold, said as cold, never as an outlier."""
    name = "harryjmoss__particle_transformer/gpu_working_chrome_trace.json.gz"
    path = public_corpus.locate(name)
    if path is None:
        pytest.skip(f"{name} is not in this machine's corpus copy")
    with gzip.open(path) as f:
        events = json.load(f, parse_float=Decimal)["traceEvents"]
    work = {e["args"].get("correlation") for e in events
            if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
    lost = [e for e in events if e.get("cat") == "cuda_runtime"
            and e["name"] in ("cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync")
            and e["args"].get("correlation") not in work]
    assert len(lost) == 1
    r = traceview.analyze(path)
    at = int((lost[0]["ts"] * 1000).to_integral_value())
    holder = [c for c in r.calls.per_call if c.start_ns <= at < c.end_ns]
    assert len(holder) == 1 and holder[0].launches_without_work == 1
    text = _text(r)
    call = holder[0]
    assert f"outlier #{call.index} " not in text
    # counted from the raw events: the outermost op around the lost launch, and whether an
    # op of that name launching work came before it on its thread
    outer = [e for e in events if e.get("cat") == "cpu_op" and e.get("tid") == lost[0]["tid"]
             and e["ts"] <= lost[0]["ts"] < e["ts"] + e["dur"]]
    name = min(outer, key=lambda e: e["ts"])["name"]
    earlier = [e for e in events if e.get("cat") == "cpu_op" and e["name"] == name
               and e.get("tid") == lost[0]["tid"] and e["ts"] < min(o["ts"] for o in outer)]
    assert call.name == name == "aten::conv1d" and not earlier and call.cold
    assert f"cold #{call.index} ({name}): first call of its kind, 1.34 s" in text
    assert f"incomplete call(s) left out of the warm figures: #{call.index}" in text


def test_call_kinds_with_no_warm_call_say_their_p50_is_over_every_call(tb: TraceBuilder,
                                                                       analyze_builder):
    """Two kinds of calls whose every launch lost its device record: none is warm, and the
    kinds table's p50 is over every call (a: 10 us x3, b: 30 us x3), as its title says."""
    for i in range(6):
        t = i * 100 * US
        name, dur = ("a", 10 * US) if i % 2 == 0 else ("b", 30 * US)
        tb.annotation(name, t, dur)
        tb.launch(t + 2 * US, 4 * US)
    r = analyze_builder(tb, calls="^(a|b)$")
    assert r.calls.warm_count == 0 and len(r.calls.kinds) == 2
    assert sorted(k.stats["api_ns"].p50 for k in r.calls.kinds) == [10 * US, 30 * US]
    text = _text(r)
    assert "Call kinds (p50 over every call: none is warm)" in text
    assert "p50 over warm calls" not in text


def test_zoology_s_kinds_table_says_none_is_warm():
    """Zoology's committed profile: launches but no device record at all (counted from the
    raw events), so every call is incomplete and none is warm."""
    name = "HazyResearch__zoology/trace.json.gz"
    path = public_corpus.locate(name)
    if path is None:
        pytest.skip(f"{name} is not in this machine's corpus copy")
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    assert not [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    assert [e for e in events if e.get("name") == "cudaLaunchKernel"]
    r = traceview.analyze(path)
    assert r.calls.warm_count == 0 and len(r.calls.kinds) > 1
    text = _text(r)
    assert "Call kinds (p50 over every call: none is warm)" in text
    assert " outlier #" not in text
