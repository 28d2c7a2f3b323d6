"""``nesting.Levels.at`` (one sort for every enclosing frame) equals its definition,
``at_level_reference`` (a sort per frame), on random intervals: nested trees, frames that
outlive their parent, zero-length frames, shared starts and ends, unsorted starts."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from traceview.analyses.nesting import Levels, at_level_reference

# (start, duration) in small units so that starts and ends often coincide
intervals = st.lists(st.tuples(st.integers(0, 30), st.integers(0, 25)), min_size=0, max_size=60)


def _sorted(plan):
    """By start, longest first (the sweep order), ties otherwise in plan order."""
    plan = sorted(plan, key=lambda x: (x[0], -x[1]))
    st_ = np.asarray([s for s, _ in plan], np.int64)
    en = st_ + np.asarray([d for _, d in plan], np.int64)
    return st_, en


def _check(starts, ends, levels=(0, 1, 2, 3)):
    lv = Levels(starts, ends)
    for p in [None, *range(starts.size)]:
        for level in levels:
            got = lv.at(p, level)
            want = at_level_reference(starts, ends, p, level)
            assert got.tolist() == want.tolist(), (p, level)


@settings(max_examples=300, deadline=None)
@given(intervals)
def test_levels_equal_reference_on_any_intervals(plan):
    _check(*_sorted(plan))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=80),
       st.lists(st.tuples(st.integers(0, 79), st.integers(1, 40)), max_size=6))
def test_levels_equal_reference_on_trees_with_overhangs(steps, overhang):
    """A nested tree walked forward in time; some frames outlive their parent."""
    t, stack, made = 0, [], []
    for gap, opening in steps + [(1, False)] * len(steps):
        t += gap
        if opening:
            stack.append(t)
        elif stack:
            made.append([stack.pop(), t])
    for k, extra in overhang:
        if k < len(made):
            made[k][1] += extra
    _check(*_sorted([(s, e - s) for s, e in made]))


@settings(max_examples=100, deadline=None)
@given(intervals)
def test_levels_take_the_reference_path_on_unsorted_starts(plan):
    starts = np.asarray([s for s, _ in plan], np.int64)
    ends = starts + np.asarray([d for _, d in plan], np.int64)
    _check(starts, ends)


def test_levels_on_a_deep_chain_and_siblings():
    # a chain of 5 frames, then 3 siblings under the innermost, one outliving it
    starts = np.array([0, 1, 2, 3, 4, 5, 7, 9], np.int64)
    ends = np.array([100, 90, 80, 70, 60, 6, 8, 65], np.int64)
    lv = Levels(starts, ends)
    assert lv.sorted
    assert lv.at(4, 0).tolist() == [5, 6]  # frame 7 ends after frame 4: not inside it
    assert lv.at(3, 1).tolist() == [5, 6, 7]  # inside frame 3, one level below frame 4
    assert lv.at(None, 5).tolist() == [5, 6, 7]
    _check(starts, ends, levels=range(8))


@settings(max_examples=100, deadline=None)
@given(intervals)
def test_levels_depth_is_nesting_depth(plan):
    from traceview.analyses.nesting import nesting_depth

    starts, ends = _sorted(plan)
    assert Levels(starts, ends).depth.tolist() == nesting_depth(starts, ends).tolist()


def test_levels_depth_over_several_blocks():
    rng = np.random.default_rng(7)
    starts = np.sort(rng.integers(0, 10**6, 600_000))
    ends = starts + rng.integers(0, 5_000, starts.size)
    from traceview.analyses.nesting import nesting_depth

    assert np.array_equal(Levels(starts, ends).depth, nesting_depth(starts, ends))
