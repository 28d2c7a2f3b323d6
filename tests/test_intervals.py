from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from traceview import intervals as iv

pairs = st.lists(st.tuples(st.integers(0, 200), st.integers(0, 50)), max_size=30)


def _brute(points: list[tuple[int, int]]) -> set[int]:
    return {t for s, d in points for t in range(s, s + d)}


def _arr(points):
    s = np.asarray([p[0] for p in points], np.int64)
    e = np.asarray([p[0] + p[1] for p in points], np.int64)
    return s, e


def test_union_merges_overlapping_and_touching():
    s, e = iv.union(np.array([0, 5, 20, 3]), np.array([5, 9, 30, 4]))
    assert s.tolist() == [0, 20] and e.tolist() == [9, 30]


def test_overlap_exact_sub_microsecond():
    busy = iv.union(np.array([100, 1000]), np.array([963, 1001]))
    assert iv.overlap(busy, np.array([0, 500, 999]), np.array([2000, 1000, 1001])).tolist() == [864, 463, 1]


def test_subtract_and_intersect():
    a = (np.array([0, 50]), np.array([40, 100]))
    b = (np.array([10, 35, 60]), np.array([20, 55, 70]))
    assert [x.tolist() for x in iv.subtract(a, b)] == [[0, 20, 55, 70], [10, 35, 60, 100]]
    assert [x.tolist() for x in iv.intersect(a, b)] == [[10, 35, 50, 60], [20, 40, 55, 70]]


@given(pairs)
def test_union_length_is_covered_set(points):
    u = iv.union(*_arr(points))
    assert iv.length(u) == len(_brute(points))
    assert iv.length(u) <= sum(d for _, d in points)


@given(pairs, pairs)
def test_set_algebra_matches_brute_force(a_pts, b_pts):
    a, b = iv.union(*_arr(a_pts)), iv.union(*_arr(b_pts))
    A, B = _brute(a_pts), _brute(b_pts)
    assert iv.length(iv.intersect(a, b)) == len(A & B)
    # the pieces themselves: positive, in time order, apart, covering exactly A & B
    s, e = (x.tolist() for x in iv.intersect(a, b))
    assert all(x < y for x, y in zip(s, e, strict=True))
    assert all(y <= x for y, x in zip(e, s[1:], strict=False))
    assert set().union(*(range(x, y) for x, y in zip(s, e, strict=True))) == A & B
    assert iv.length(iv.subtract(a, b)) == len(A - B)
    qs, qe = _arr(b_pts)
    got = iv.overlap(a, qs, qe).tolist()
    assert got == [len(A & set(range(s, e))) for s, e in zip(qs.tolist(), qe.tolist(), strict=True)]


@given(pairs, st.lists(st.integers(1, 40), max_size=30), st.integers(0, 30))
def test_overlap_pairs_on_a_partition_matches_brute_force(a_pts, widths, t0):
    a = iv.union(*_arr(a_pts))
    A = _brute(a_pts)
    edges = np.cumsum([t0] + widths)  # a partition of [t0, t0 + sum(widths))
    qs, qe = edges[:-1], edges[1:]
    q, ns = iv.overlap_pairs(a, qs, qe)
    assert (ns > 0).all()
    got = np.zeros(qs.size, np.int64)
    np.add.at(got, q, ns)
    assert got.tolist() == [len(A & set(range(s, e))) for s, e in zip(qs.tolist(), qe.tolist(), strict=True)]
    assert q.size <= qs.size + a[0].size


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 5), st.integers(0, 3)), max_size=60))
def test_start_order_is_lexsort(rows):
    a = np.asarray(rows, np.int64).reshape(-1, 3)
    got = iv.start_order(a[:, 0], lambda sub: (a[sub, 2], -a[sub, 1]))
    assert got.tolist() == np.lexsort((a[:, 2], -a[:, 1], a[:, 0])).tolist()


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-5, 200), st.integers(-5, 50)),
                max_size=40))
def test_union_length_by_group_is_each_groups_covered_set(items):
    g = np.asarray([x[0] for x in items], np.int64)
    s = np.asarray([x[1] for x in items], np.int64)
    e = s + np.asarray([x[2] for x in items], np.int64)
    got = iv.union_length_by_group(g, s, e, 4)
    for k in range(4):
        covered = {t for gk, a, b in zip(g.tolist(), s.tolist(), e.tolist(), strict=True)
                   if gk == k for t in range(a, b)}
        assert got[k] == len(covered)


def test_union_length_by_group_far_apart_absolute_times():
    """Epoch-like ns times far apart: offsets add spans, so nothing overflows or merges."""
    t = 1_700_000_000_000_000_000
    got = iv.union_length_by_group(np.array([1, 0, 1, 0]), np.array([t, 5, t + 10, 0]),
                                   np.array([t + 20, 9, t + 30, 5]), 3)
    assert got.tolist() == [9, 30, 0]


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(-3, 6)), max_size=20))
def test_expand_ranges_lists_every_position(spans):
    lo = np.asarray([a for a, _ in spans], np.int64)
    hi = lo + np.asarray([d for _, d in spans], np.int64)
    k, i = iv.expand_ranges(lo, hi)
    want = [(q, p) for q, (a, b) in enumerate(zip(lo.tolist(), hi.tolist(), strict=True))
            for p in range(a, b)]
    assert list(zip(k.tolist(), i.tolist(), strict=True)) == want


@given(st.lists(st.booleans(), max_size=40), st.sampled_from([1, 2, 3, 7, 1 << 20]))
def test_nonzero_rows_is_flatnonzero_as_int32(bits, block):
    """The block-wise nonzero is numpy's flatnonzero, whatever the blocks, as int32."""
    mask = np.asarray(bits, bool)
    got = iv.nonzero_rows(mask, block)
    assert got.dtype == np.int32 and got.tolist() == [i for i, b in enumerate(bits) if b]


@given(st.lists(st.integers(-3, 3), max_size=30), st.sampled_from([1, 2, 3, 1 << 20]))
def test_increasing_means_each_value_above_the_one_before(values, block):
    want = all(b > a for a, b in zip(values, values[1:], strict=False))
    assert iv.increasing(np.asarray(values, np.int64), block) is want


@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 3)), max_size=40),
       st.sampled_from([1, 2, 3, 1 << 18]))
def test_start_order_is_the_lexsort_of_start_then_ties(rows, block):
    """By start, ties by the secondary key: numpy's lexsort over all rows (stable), with
    the tied starts found a block of ``TIE_BLOCK`` positions at a time."""
    starts = np.asarray([r[0] for r in rows], np.int64)
    key = np.asarray([r[1] for r in rows], np.int64)
    saved = iv.TIE_BLOCK
    iv.TIE_BLOCK = block
    try:
        got = iv.start_order(starts, lambda sub: (key[sub],))
    finally:
        iv.TIE_BLOCK = saved
    assert got.tolist() == np.lexsort((key, starts)).tolist()


@given(st.lists(st.integers(0, 6), max_size=40), st.sampled_from([1, 2, 3, 5, 1 << 18]))
def test_grouped_order_is_the_stable_argsort(codes, block):
    """The block-wise counting sort is numpy's stable argsort, whatever the blocks."""
    arr = np.asarray(codes, np.int8)
    got = iv.grouped_order(arr, 7, block)
    assert got.dtype == np.int32
    assert got.tolist() == np.argsort(arr, kind="stable").tolist()
