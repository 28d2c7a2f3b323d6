"""Slow calls on real H200 traces: explained by the op or frame that holds their excess
(counted here from the raw events), classed cold or outlier with that reason, and a
cold first call never counted warm."""

from __future__ import annotations

import gzip
import json
import statistics
from functools import cache

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURE_NAMES, FIXTURES

FIRST_CALL_RATIO = 5.0
SLOW_RATIO = 2.0


@cache
def raw_ops(name: str) -> list[tuple[str, int, int]]:
    """(name, start ns, end ns) of every CPU op and Python frame, from the JSON."""
    doc = json.loads(gzip.decompress((FIXTURES / name).read_bytes()))
    out = []
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "python_function"):
            st = round(float(e["ts"]) * 1000)
            out.append((e["name"], st, st + round(float(e.get("dur", 0)) * 1000)))
    return out


def time_of(name: str, op: str, a: int, b: int) -> int:
    """Union of ``op``'s time inside [a, b) (nested repeats once)."""
    spans = sorted((max(s, a), min(e, b)) for n, s, e in raw_ops(name)
                   if n == op and s >= a and s < b)
    total, reach = 0, a
    for s, e in spans:
        s = max(s, reach)
        if e > s:
            total += e - s
            reach = e
    return total


def kinds(report) -> dict[str, list]:
    out: dict[str, list] = {}
    for c in report.calls.per_call:
        out.setdefault(c.kind, []).append(c)
    return out


def test_first_call_of_its_kind_far_above_the_others_is_cold_with_its_holder(
        fixture_reports):
    """``shape_loop_two_ops``: the first ``mul`` call is 7.4x the others; aten::mul's
    time in it, counted from the raw events, holds most of the excess."""
    name = "shape_loop_two_ops.json.gz"
    r = fixture_reports[name]
    muls = next(v for k, v in kinds(r).items() if "built-in method mul" in k)
    first, rest = muls[0], muls[1:]
    med = statistics.median_low([c.metrics["api_ns"] for c in rest if not c.cold])
    assert first.metrics["api_ns"] > FIRST_CALL_RATIO * med
    assert first.cold and "first call of its kind" in first.cold_reason
    assert "aten::mul holds" in first.cold_reason
    extra = time_of(name, "aten::mul", first.start_ns, first.end_ns) - statistics.median(
        time_of(name, "aten::mul", c.start_ns, c.end_ns) for c in rest[:16])
    excess = first.metrics["api_ns"] - med
    assert extra >= 0.5 * excess - 2_000
    assert first.index not in [c.index for c in r.calls.warm]
    assert r.calls.warm_count == sum(1 for c in r.calls.per_call if not c.cold)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_no_warm_call_is_far_above_its_kind(fixture_reports, name):
    """Every fixture: a first call over 5x, or a later call over 2x, the median of the
    other non-cold calls of its kind is cold or an outlier, with a reason; an outlier is
    named but stays a warm call (in the statistics)."""
    r = fixture_reports[name]
    for calls in kinds(r).values():
        plain = [c for c in calls if not c.cold]
        for k, c in enumerate(calls):
            others = [o.metrics["api_ns"] for o in plain if o.index != c.index]
            if len(others) < 2:
                continue
            ratio = c.metrics["api_ns"] / statistics.median(others)
            if ratio > (FIRST_CALL_RATIO if k == 0 else SLOW_RATIO) + 0.05:
                assert c.cold or c.outlier, (name, c.index, ratio)
                assert (c.cold_reason or c.outlier_reason), (name, c.index)
        for c in calls:
            if c.outlier:
                assert not c.cold and c.index in [w.index for w in r.calls.warm]


def test_later_slow_call_is_an_outlier_naming_where_the_time_went(fixture_reports):
    """``shape_loop_two_ops`` call 2: 2.6x the others of its kind; the Triton launcher
    frame holds the excess (counted from the raw events)."""
    name = "shape_loop_two_ops.json.gz"
    r = fixture_reports[name]
    c = r.calls.per_call[2]
    assert c.outlier and not c.cold
    why = c.outlier_reason
    assert "x the median of the others" in why and " holds " in why
    held = why.split("; ", 1)[1].split(" holds ")[0]
    same = [o for o in kinds(r)[c.kind] if o.index != c.index and not o.cold]
    med = statistics.median_low([o.metrics["api_ns"] for o in same])
    extra = time_of(name, held, c.start_ns, c.end_ns) - statistics.median(
        time_of(name, held, o.start_ns, o.end_ns)
        for o in sorted(same, key=lambda o: abs(o.index - c.index))[:16])
    assert extra >= 0.5 * (c.metrics["api_ns"] - med) - 2_000


def test_a_slow_cold_call_leads_with_what_holds_its_time(fixture_reports):
    """``shape_compile_cold``: the compiled first call's reason names the compiler range
    holding most of its excess before the compile category's total."""
    name = "shape_compile_cold.json.gz"
    r = fixture_reports[name]
    c = r.calls.per_call[0]
    assert c.cold
    held = c.cold_reason.split("; ", 1)[1].split(" holds ")[0]
    assert c.cold_reason.index(" holds ") < c.cold_reason.index("compile/autotune")
    rest = [o for o in kinds(r)[c.kind] if not o.cold]
    med = statistics.median_low([o.metrics["api_ns"] for o in rest])
    assert time_of(name, held, c.start_ns, c.end_ns) >= 0.5 * (c.metrics["api_ns"] - med)


def test_calls_parquet_says_which_calls_are_outliers(tmp_path):
    pl = pytest.importorskip("polars")
    from typer.testing import CliRunner

    from traceview.cli.app import app

    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["export", str(FIXTURES / "shape_loop_two_ops.json.gz"),
                                   "--parquet", str(out)])
    assert res.exit_code == 0, res.output
    calls = pl.read_parquet(out / "calls.parquet")
    summary = pl.read_parquet(out / "summary.parquet")
    warm = calls.filter(~pl.col("cold")).height
    assert warm == summary["warm_calls"][0]
    assert calls.filter(pl.col("outlier")).height >= 2


@given(st.lists(st.integers(0, 50), min_size=1, max_size=12), st.data())
def test_the_median_of_the_others_is_the_median_less_one(values, data):
    """The classifier's shortcut (one sorted array per kind) against the median of the
    list with the call taken out."""
    from traceview.analyses.slow_calls import _medians_without
    from traceview.stats import median

    a = np.sort(np.asarray(values, np.int64))
    drops = data.draw(st.lists(st.sampled_from(values), min_size=1, max_size=5))
    dropped = data.draw(st.lists(st.booleans(), min_size=len(drops), max_size=len(drops)))
    want = []
    for v, d in zip(drops, dropped, strict=True):
        rest = list(values)
        if d:
            rest.remove(v)
        want.append(int(median(rest)) if len(rest) >= 2 else None)
    assert _medians_without(a, drops, dropped) == want


@given(st.integers(0, 10**9), st.integers(1, 10**9))
def test_holder_words_never_hold_more_than_the_excess(ns: int, excess: int) -> None:
    """A holder whose growth exceeds the call's excess is not said to hold "X of the Y
    excess" with X > Y: the words follow from the two figures they cite."""
    from traceview.analyses.slow_calls import Holder, SlowCall
    from traceview.report.claims import check
    from traceview.report.sentences import cause_claim
    from traceview.units import fmt_ns

    claim = cause_claim(SlowCall(1_000 + excess, 1_000, Holder("f", ns, excess), first=False),
                        0, "outlier-reason")
    words = claim.text.split("; ", 1)[1]
    assert check(claim, {"calls": {"per_call": [{"index": 0,
                                                 "metrics": {"api_ns": 1_000 + excess}}]}}) == []
    if ns > excess:
        assert "holds" not in words and "more than the call's whole" in words
    else:
        assert words == f"f holds {fmt_ns(ns)} of the {fmt_ns(excess)} excess"


US = 1000
RELU = "autograd::engine::evaluate_function: ReluBackward0"


def test_a_rarer_op_is_a_call_of_its_own_kind(tb, analyze_builder):
    """Calls found as the outermost event around each launch: a rarer event (two
    ``AccumulateGrad`` among eight ``ReluBackward0``) holding no compile work is a call of
    its own kind, never folded into the call after it (an eager AlexNet's first
    ``aten::linear``, 6.9 ms, became part of an ``aten::relu_`` call read as an 8 ms relu).
    Call 5's ReLU is slow in its own frame: the outlier is that frame, its excess over the
    other ReLUs' median."""
    acc = "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"
    t, expect = 0, []  # (name, wall) per call, in time order, counted here
    for i in range(8):
        if i in (2, 5):  # the rarer event, 2 us with a 1 us launch, then a 1 us gap
            tb.op(acc, t, 2 * US)
            tb.launched_kernel("acc", t + 500, 1 * US, t + 2 * US, 300)
            expect.append((acc, 2 * US))
            t += 3 * US
        relu = 40 * US if i == 5 else 10 * US
        tb.op(RELU, t, relu)
        tb.launched_kernel("relu", t + 2 * US, 1 * US, t + 4 * US, 500)
        expect.append((RELU, relu))
        t += relu + 20 * US
    r = analyze_builder(tb)
    assert r.calls.source == "launches" and r.calls.count == len(expect) == 10
    assert [(c.name, c.metrics["api_ns"]) for c in r.calls.per_call] == expect
    relus = [w for n, w in expect if n == RELU]
    slow = [c for c in r.calls.per_call if c.outlier]
    assert [(c.name, c.metrics["api_ns"]) for c in slow] == [(RELU, 40 * US)]
    assert statistics.median_low(sorted(relus)[:-1]) == 10 * US


def test_a_rarer_compile_event_joins_the_call_it_compiles(tb, analyze_builder):
    """A rarer outermost event holding compile work the rules count as evidence (a 2 ms
    ``(dynamo_timed)`` compile with an autotuning launch, before the first of four
    compiled calls) joins the call after it: that call starts at the compile and is cold;
    the three others are warm and start at their own event."""
    comp = "_compile.compile_inner (dynamo_timed)"
    region = "Torch-Compiled Region: 0/0"
    t, starts, ends = 0, [], []
    tb.op(comp, t, 2_000 * US)
    tb.launched_kernel("triton_bench", t + 100 * US, 1 * US, t + 200 * US, 300)
    starts.append(t)
    t += 2_010 * US
    for i in range(4):
        if i:
            starts.append(t)
        tb.op(region, t, 10 * US)
        tb.launched_kernel("triton_poi_fused", t + 2 * US, 1 * US, t + 4 * US, 500)
        ends.append(t + 10 * US)
        t += 30 * US
    r = analyze_builder(tb)
    assert r.calls.source == "launches" and r.calls.count == 4
    assert [c.metrics["api_ns"] for c in r.calls.per_call] == [
        e - s for s, e in zip(starts, ends, strict=True)]
    assert [c.cold for c in r.calls.per_call] == [True, False, False, False]


def _two_thread_loop(tb, own_extra: int, beside_extra: int):
    """Eight ``ReluBackward0`` calls (one launch each) on thread 100; call 5 is 40 us where
    the others are 10 us. Inside call 5, thread 100 runs ``aten::empty`` for ``own_extra``
    ns (1 us in every other call) while thread 200, a worker, runs ``aten::copy_`` for
    ``beside_extra`` ns over call 5's span (1 us during every other call)."""
    tb.raw({"ph": "M", "name": "thread_name", "pid": tb.pid, "tid": 200,
            "args": {"name": "worker"}})
    t, spans = 0, {}
    for i in range(8):
        relu = 40 * US if i == 5 else 10 * US
        tb.op(RELU, t, relu)
        tb.launched_kernel("relu", t + 2 * US, 1 * US, t + 4 * US, 500)
        tb.op("aten::empty", t + 4 * US, own_extra if i == 5 else 1 * US)
        tb.op("aten::copy_", t + 1 * US, beside_extra if i == 5 else 1 * US, tid=200)
        spans[i] = (t, t + relu)
        t += relu + 20 * US
    return spans


def _union_in(ops: list[tuple[str, int, int, int]], name: str, tid: int, a: int, b: int) -> int:
    """Time of ``name`` on thread ``tid`` inside [a, b), from the builder's raw events."""
    return sum(max(0, min(e, b) - max(s, a)) for n, t, s, e in ops if n == name and t == tid)


def _raw_ops(tb) -> list[tuple[str, int, int, int]]:
    return [(e["name"], e["tid"], e["ts"].ns, e["ts"].ns + e["dur"].ns) for e in tb.events
            if e.get("ph") == "X" and e.get("cat") == "cpu_op"]


def test_an_outlier_is_never_held_by_another_threads_frame(tb, analyze_builder):
    """Call 5's own thread holds nothing that grew (its ``aten::empty`` takes 1 us, as in
    every call); a worker thread's ``aten::copy_`` grows by 29 us over call 5's span. The
    excess is the call's own thread's host category, and the copy is named as the
    worker's, beside the call, never as held by it. Every figure is counted here from the
    builder's events; the claim holds against the report and cites both threads' ids."""
    from traceview.report.claims import check_all

    spans = _two_thread_loop(tb, own_extra=1 * US, beside_extra=30 * US)
    r = analyze_builder(tb)
    assert r.calls.count == 8
    ops = _raw_ops(tb)
    walls = {i: b - a for i, (a, b) in spans.items()}
    median = statistics.median_low([walls[i] for i in range(8) if i != 5])
    copy = {i: _union_in(ops, "aten::copy_", 200, *spans[i]) for i in range(8)}
    grew = copy[5] - statistics.median_low([copy[i] for i in range(8) if i != 5])
    call = r.calls.per_call[5]
    assert call.outlier and (median, walls[5], grew) == (10 * US, 40 * US, 29 * US)
    why = call.outlier_reason
    assert "aten::copy_ holds" not in why and "aten::copy_ took" not in why
    assert why.endswith(f"; meanwhile worker [{tb.pid}/200] ran aten::copy_, "
                        f"{grew // US} us more than during nearby calls (another thread's "
                        f"work, not this call's)")
    held = why.split("; ")[1]
    assert held.startswith("host: ") and f"of the {(walls[5] - median) // US} us excess" in held
    doc = r.to_dict()
    assert check_all(r.claims, doc) == []
    claim = next(c for c in r.claims if c.id == "outlier-reason" and c.figures[0].value == 5)
    assert claim.text == why
    assert claim.value("beside") == grew
    assert (claim.value("beside_tid"), claim.value("call_tid")) == (200, tb.tid)
    # 200 > 100: the worker's id on one side of the call thread's, so not the same thread
    assert any(x.kind == "gt" and x.figures == ("beside_tid", "call_tid")
               for x in claim.relations)


def test_an_outliers_own_thread_frame_holds_it_before_another_threads(tb, analyze_builder):
    """Call 5's own ``aten::empty`` grows by 27 us, the worker's ``aten::copy_`` by 19 us
    over its span: both over half the 30 us excess. The copy grew less (the rule names the
    innermost, least-grown holder over half), yet it is another thread's: the call's own
    frame holds the excess and the worker is not named."""
    from traceview.report.claims import check_all

    spans = _two_thread_loop(tb, own_extra=28 * US, beside_extra=20 * US)
    r = analyze_builder(tb)
    ops = _raw_ops(tb)
    walls = {i: b - a for i, (a, b) in spans.items()}
    excess = walls[5] - statistics.median_low([walls[i] for i in range(8) if i != 5])
    empty = {i: _union_in(ops, "aten::empty", tb.tid, *spans[i]) for i in range(8)}
    copy = {i: _union_in(ops, "aten::copy_", 200, *spans[i]) for i in range(8)}
    own = empty[5] - statistics.median_low([empty[i] for i in range(8) if i != 5])
    other = copy[5] - statistics.median_low([copy[i] for i in range(8) if i != 5])
    assert excess / 2 <= other < own <= excess
    why = r.calls.per_call[5].outlier_reason
    assert why.endswith(f"; aten::empty holds {own // US} us of the {excess // US} us excess")
    assert "copy_" not in why and "worker" not in why
    assert check_all(r.claims, r.to_dict()) == []
    claim = next(c for c in r.claims if c.id == "outlier-reason" and c.figures[0].value == 5)
    assert (claim.value("held_tid"), claim.value("call_tid")) == (tb.tid, tb.tid)
    assert any(x.kind == "eq" and x.figures == ("held_tid", "call_tid") for x in claim.relations)


AUTOGRAD_API = "pytorch__kineto/samples__resnet50_autograd_api_num_workers_0__worker0.pt.trace.json.gz"


def test_a_public_traces_outliers_name_only_their_own_threads_frames_as_holding():
    """Kineto's resnet50 sample driven through the autograd API, its calls the outermost
    ops around launches on the main thread while an autograd thread runs the backward:
    every holder named in a slow call's reason ran on the call's own thread inside the
    call, and any other thread's work named ran there for at least the time the words
    give (counted from the raw events). The synthetic tests above hold a call spanning
    another thread's growth; here the ops are calls of their own kinds, none spans the
    backward pass, so no reason needs the other thread's words."""
    import public_corpus
    from outlier_threads import thread_words

    import traceview
    from traceview.report.claims import check_all

    path = public_corpus.locate(AUTOGRAD_API)
    if path is None:
        pytest.skip(f"{AUTOGRAD_API} is not in this machine's corpus copy")
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    r = traceview.analyze(str(path))
    held, _, problems = thread_words(events, r)
    assert not problems and held > 10
    assert not any("backward holds" in (c.outlier_reason or c.cold_reason or "")
                   for c in r.calls.per_call)
    assert check_all(r.claims, r.to_dict()) == []
