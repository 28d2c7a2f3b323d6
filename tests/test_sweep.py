"""The compiled sweep and the loop sweep agree, and so do hot functions' two union paths.

``attribute_host`` computes owners with the compiled loop (``analyses/_host_sweep.c``)
where it is built, else with the plain stack loop, which ``general=True`` always runs:
the reference. Random nested trees (identical spans, shared starts and ends, touching
siblings, subtree and inherit rules), trees whose slices outlive their parents, random
sets that overlap without nesting, and real fixtures must give the same timeline either
way. Without the compiled sweep (``TRACEVIEW_NO_NATIVE=1``) the comparisons skip; CI runs
them with it required.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import traceview
from tracebuilder import TraceBuilder
from traceview import intervals
from traceview.analyses import host, host_sweep_native, hot_functions
from traceview.analyses.window import find_window
from traceview.options import Options
from traceview.rules import load_rules

# names that hit a subtree rule, an inherit rule, plain rules and no rule
NAMES = [
    ("python_function", "torch/cuda/__init__.py(1): synchronize"),  # sync, subtree
    ("python_function", "<built-in method foo>"),  # inherit
    ("python_function", "triton/runtime/jit.py(1): run"),  # dispatch
    ("python_function", "user.py(3): f"),  # user
    ("python_function", "triton/runtime/jit.py(2): compute_cache_key"),  # cache_key, subtree
    ("cpu_op", "aten::mul"),  # dispatch
    ("cuda_runtime", "cudaLaunchKernel"),  # launch, subtree
    ("weird", "mystery"),  # other
]
FIELDS = ("seg_start", "seg_end", "seg_cat", "seg_pos", "rows", "row_cat", "self_ns")

# walk time forward: each step waits `gap` ns then opens a slice, or closes the last
# open one (a gap of 0 gives shared starts and ends, identical spans, touching siblings)
steps = st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.integers(0, len(NAMES) - 1)),
                 min_size=1, max_size=60)

# any spans at all (overlapping without nesting too): (start, dur, name) in 100 ns units
spans = st.lists(st.tuples(st.integers(0, 40), st.integers(1, 30), st.integers(0, len(NAMES) - 1)),
                 min_size=1, max_size=25)


def _spans(plan) -> TraceBuilder:
    tb = TraceBuilder()
    for start, dur, nm in plan:
        cat, label = NAMES[nm]
        tb.op(label, start * 100, dur * 100, cat=cat)
    return tb


def _nested(tb: TraceBuilder, plan, overhang=()) -> None:
    """A properly nested tree from ``plan``; ``overhang`` (slice number, extra ns) makes
    those slices outlive their parent, as real traces' overhanging slices do."""
    t = 1_000
    stack: list[tuple[int, int]] = []
    extra = dict(overhang)
    made = 0
    for i, (gap, opening, name) in enumerate(plan + [(0, False, 0)] * len(plan)):
        t += gap
        if opening or i == 0:
            stack.append((t, name))
        elif stack:
            start, nm = stack.pop()
            t = max(t, start + 1)
            cat, label = NAMES[nm]
            tb.op(label, start, t - start + extra.get(made, 0), cat=cat)
            made += 1


COMPILED = host_sweep_native._NATIVE_SWEEP is not None
needs_compiled = pytest.mark.skipif(not COMPILED, reason="the compiled sweep is not built "
                                    "(TRACEVIEW_NO_NATIVE or no compiler); CI requires it")


def _timelines(path, ran=None):
    """(trace, the compiled sweep's timeline, the loop's timeline); ``ran`` records
    whether the compiled sweep ran (it declines nothing below 2**31 rows)."""
    trace = traceview.load(path)
    window = find_window(trace, Options().window)
    rules = load_rules(None)
    lane = max(trace.host_lanes, key=lambda ln: int((trace.slices.lane == ln.index).sum()))
    compiled = host_sweep_native._sweep_native

    def spy(*args):
        out = compiled(*args)
        if ran is not None:
            ran.append(out is not None)
        return out

    host_sweep_native._sweep_native = spy
    try:
        fast = host.attribute_host(trace, lane, window, rules)
    finally:
        host_sweep_native._sweep_native = compiled
    swept = []
    loop_sweep = host._loop_sweep

    def keep(*args):
        swept.append(loop_sweep(*args))
        return swept[-1]

    host._loop_sweep = keep
    try:
        loop = host.attribute_host(trace, lane, window, rules, general=True)
    finally:
        host._loop_sweep = loop_sweep
    # each segment's category, read from its owner's (HostTimeline.seg_cat), is the one
    # the loop sweep gave the segment as it made it
    assert np.asarray(loop.seg_cat).tolist() == swept[0][2].tolist()
    return trace, fast, loop


def _same(a, b) -> None:
    for f in FIELDS:
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert np.array_equal(a.seg_owner, b.seg_owner)
    assert a.non_nested == b.non_nested


@needs_compiled
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps)
def test_compiled_sweep_equals_loop_on_nested_slices(tmp_path, plan):
    tb = TraceBuilder()
    _nested(tb, plan)
    ran: list[bool] = []
    path = tb.write(tmp_path / "t.json")
    _, fast, loop = _timelines(path, ran)
    assert loop.non_nested == 0 and ran == [True]  # the compiled path ran, and agrees
    _same(fast, loop)
    assert int((fast.seg_end - fast.seg_start).sum()) == int(fast.seg_end[-1] - fast.seg_start[0])


@needs_compiled
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spans)
def test_compiled_sweep_equals_loop_on_any_slices(tmp_path, plan):
    """Overlapping without nesting: the compiled sweep runs and gives the loop's answer."""
    tb = _spans(plan)
    ran: list[bool] = []
    _, fast, loop = _timelines(tb.write(tmp_path / "t.json"), ran)
    assert ran == [True]
    _same(fast, loop)


@needs_compiled
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps, st.lists(st.tuples(st.integers(0, 59), st.integers(1, 40)), max_size=6))
def test_compiled_sweep_equals_loop_on_nested_slices_with_overhangs(tmp_path, plan, overhang):
    """A deep tree where some slices outlive their parent (by up to 40 ns: past their
    grandparents too, or into the next siblings): the shape of real with_stack traces."""
    tb = TraceBuilder()
    _nested(tb, plan, overhang)
    ran: list[bool] = []
    _, fast, loop = _timelines(tb.write(tmp_path / "t.json"), ran)
    assert ran == [True]
    _same(fast, loop)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spans)
def test_hot_functions_union_paths_agree(tmp_path, plan):
    tb = _spans(plan)
    trace, _, fast = _timelines(tb.write(tmp_path / "t.json"))  # the loop's timeline
    got = hot_functions.hot_functions(trace, fast)
    limit, block, batch = (hot_functions.UNION_OFFSET_LIMIT, hot_functions.BLOCK,
                           hot_functions.UNION_BATCH)
    hot_functions.UNION_OFFSET_LIMIT = 0  # force the per-function loop
    try:
        assert hot_functions.hot_functions(trace, fast) == got
        hot_functions.UNION_OFFSET_LIMIT = limit
        for hot_functions.BLOCK in (1, 2, 3, 7):  # groups and unions split across blocks
            for hot_functions.UNION_BATCH in (1, 2, 5, batch):  # and across batches
                assert hot_functions.hot_functions(trace, fast) == got
    finally:
        (hot_functions.UNION_OFFSET_LIMIT, hot_functions.BLOCK,
         hot_functions.UNION_BATCH) = limit, block, batch
    # and against the definition: a function's total is the union of its intervals
    s = trace.slices
    for f in got:
        rows = [r for r in fast.rows.tolist() if trace.names[int(s.name[r])] == f.name]
        covered = set()
        for r in rows:
            covered.update(range(int(s.start[r]), int(s.end[r])))
        assert f.total_ns == len(covered) and f.count == len(rows)
        assert f.self_ns == int(sum(fast.self_ns[fast.rows.tolist().index(r)] for r in rows))


queries = st.lists(st.tuples(st.integers(-10, 80), st.integers(0, 50)), min_size=1, max_size=12)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spans, queries)
def test_overlap_by_category_is_each_category_sets_overlap(tmp_path, plan, qs):
    """Every category's overlap with every query at once (running sums over blocks of
    segments) against the definition: the category's own segments, overlapped one
    category at a time; blocks of 1, 2 and 3 segments split the running sums."""
    trace, fast, _ = _timelines(_spans(plan).write(tmp_path / "t.json"))
    q_st = np.asarray([a * 100 for a, _ in qs], np.int64) + int(fast.seg_start[0])
    q_en = q_st + np.asarray([d * 100 for _, d in qs], np.int64)
    want = np.stack([intervals.overlap(fast.category_set(c), q_st, q_en)
                     for c in fast.categories])
    block = host.BLOCK
    try:
        for host.BLOCK in (block, 1, 2, 3):
            assert np.array_equal(fast.overlap_by_category(q_st, q_en), want)
    finally:
        host.BLOCK = block


# sorted int64 times: steps from 0 to past uint32 (a block that cannot be packed), from
# any start (negative too)
sorted_times = st.tuples(st.integers(-2**45, 2**45),
                         st.lists(st.sampled_from([0, 1, 7, 999, 2**31 + 1, 2**32 - 2, 2**32 + 3]),
                                  max_size=60),
                         st.sampled_from([1, 2, 3, 4, 12]))


@settings(max_examples=200, deadline=None)
@given(sorted_times, st.data())
def test_packed_times_read_as_the_int64_column(case, data):
    """A packed column (``intervals.PackedTimes``) reads exactly as the int64 column it
    packs: each value, a slice, an index array, a mask, both ``searchsorted`` sides (its
    search block by block and all blocks at once), for the whole column and its views,
    with blocks made small (``PACK_SHIFT``) so that a few values make many blocks. A column a block of which spans more than ``PACK_MAX``
    ns is not packed (None): the answer is then the plain int64 column."""
    start, steps, shift = case
    want = np.cumsum(np.asarray([start, *steps], np.int64))
    saved = intervals.PACK_SHIFT, intervals.PACK_BLOCK
    searched, per_block = intervals.PACK_BLOCKS_SEARCHED, intervals.PACK_QUERIES_PER_BLOCK
    intervals.PACK_SHIFT, intervals.PACK_BLOCK = shift, 1 << shift
    try:
        intervals.PACK_QUERIES_PER_BLOCK = 10**9  # the number of blocks alone decides
        packed = intervals.PackedTimes.pack(want)
        blocks = [want[b:b + (1 << shift)] for b in range(0, want.size, 1 << shift)]
        fits = all(int(b[-1] - b[0]) <= intervals.PACK_MAX for b in blocks)
        assert (packed is not None) == fits
        if packed is None:
            return
        lo = data.draw(st.integers(0, want.size - 1))
        n = data.draw(st.integers(0, want.size - lo))
        for col, ref in ((packed, want), (packed.view(lo, n), want[lo:lo + n])):
            assert col.size == len(col) == ref.size
            assert np.asarray(col).dtype == np.int64 and np.array_equal(np.asarray(col), ref)
            assert col.tolist() == ref.tolist()
            if ref.size:
                i = data.draw(st.integers(-ref.size, ref.size - 1))
                assert col[i] == ref[i]
                a = data.draw(st.integers(0, ref.size))
                b = data.draw(st.integers(a, ref.size))
                assert np.array_equal(col[a:b], ref[a:b])
                idx = np.asarray(data.draw(st.lists(st.integers(-ref.size, ref.size - 1))), np.int64)
                assert np.array_equal(col[idx], ref[idx])
                mask = np.asarray(data.draw(st.lists(st.booleans(), min_size=ref.size,
                                                     max_size=ref.size)), bool)
                assert np.array_equal(col[mask], ref[mask])
            near = [int(v) + d for v in want.tolist() for d in (-1, 0, 1)]
            q = np.asarray([int(want[0]) - 2**40, *near, int(want[-1]) + 2**40], np.int64)
            # block by block, all blocks at once, and as the defaults choose
            for blocks in (10**9, 0, searched):
                intervals.PACK_BLOCKS_SEARCHED = blocks
                for side in ("left", "right"):
                    assert np.array_equal(np.searchsorted(col, q, side=side),
                                          np.searchsorted(ref, q, side=side))
                    for v in q.tolist():
                        assert int(col.searchsorted(v, side=side)) == \
                            int(np.searchsorted(ref, v, side=side))
    finally:
        intervals.PACK_SHIFT, intervals.PACK_BLOCK = saved
        intervals.PACK_BLOCKS_SEARCHED, intervals.PACK_QUERIES_PER_BLOCK = searched, per_block


def _far_apart(tmp_path, pairs: int, gap: int):
    """A thread with ``pairs`` nested pairs of Python frames, ``gap`` ns apart."""
    tb = TraceBuilder()
    for k in range(pairs):
        t0 = 1_000 + k * gap
        tb.py("user.py(3): f", t0, 3_000)
        tb.py("<built-in method foo>", t0 + 1_000, 1_000)
    return _timelines(tb.write(tmp_path / "t.json"))


@needs_compiled
@pytest.mark.parametrize("pairs, gap, packed", [
    (3, 1_500_000_000, True),  # 3 s: past int32, one block
    (3_000, 2_000_000, True),  # 6 s: past uint32 too, in blocks of 2 s
    (3, 5_000_000_000, False),  # a segment of 5 s: cannot be packed
])
def test_the_compiled_sweep_packs_bounds_exactly_past_int32_or_keeps_them_int64(
        tmp_path, pairs, gap, packed):
    """Segment bounds over a window longer than int32 ns stay exact: packed (4 bytes
    each) while every bound lies within ``PACK_MAX`` ns of its block's first, else the
    plain int64 bounds. Against the loop sweep's int64 bounds, and against the events
    themselves: each pair gives segments [t0, t0+1000) f, [t0+1000, t0+2000) foo,
    [t0+2000, t0+3000) f, then untraced up to the next pair."""
    trace, fast, loop = _far_apart(tmp_path, pairs, gap)
    assert isinstance(fast.seg_start, intervals.PackedTimes) is packed
    assert isinstance(fast.seg_end, intervals.PackedTimes) is packed
    _same(fast, loop)
    want = []
    for k in range(pairs):
        t0 = 1_000 + k * gap
        want += [t0, t0 + 1_000, t0 + 2_000]
        if k < pairs - 1:
            want.append(t0 + 3_000)
    last = 1_000 + (pairs - 1) * gap + 3_000
    assert np.asarray(fast.seg_start).tolist() == want
    assert np.asarray(fast.seg_end).tolist() == want[1:] + [last]
    assert fast.seg_end[-1] - fast.seg_start[0] == last - 1_000 > 2**31
    assert fast.totals()["untraced"] == (pairs - 1) * (gap - 3_000)
    # the hot functions read the packed bounds: f owns 2,000 ns of each pair, foo 1,000
    got = {f.name: (f.self_ns, f.total_ns, f.count) for f in hot_functions.hot_functions(trace, fast)}
    assert got == {"user.py(3): f": (2_000 * pairs, 3_000 * pairs, pairs),
                   "<built-in method foo>": (1_000 * pairs, 1_000 * pairs, pairs)}


def test_the_compiled_sweep_is_built_where_ci_requires_it():
    import os

    if os.environ.get("TRACEVIEW_REQUIRE_NATIVE") == "1":
        assert COMPILED
    if os.environ.get("TRACEVIEW_NO_NATIVE") == "1":
        assert not COMPILED


@needs_compiled
@pytest.mark.parametrize("name", ["triton_mul_cold_stack.json.gz", "shape_compile_cold.json.gz",
                                  "flag_gems_add_16x4096_bf16.cold.json.gz",
                                  "two_streams_8192x8192_f16.json.gz"])
def test_real_fixtures_agree_on_both_paths(name):
    from conftest import FIXTURES

    ran: list[bool] = []
    _, fast, loop = _timelines(FIXTURES / name, ran)
    assert ran == [True]
    _same(fast, loop)


@needs_compiled
def test_nested_fixture_takes_the_compiled_path():
    """The real with_stack fixture (thousands of nested slices): the compiled sweep runs."""
    from conftest import FIXTURES

    ran: list[bool] = []
    _, fast, loop = _timelines(FIXTURES / "triton_mul_1x4096_f32_stack.json.gz", ran)
    assert ran == [True] and fast.rows.size > 1000
    _same(fast, loop)
