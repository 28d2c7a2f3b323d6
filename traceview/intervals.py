"""Interval arithmetic on sorted int64 arrays: the only place time is added up.

Every total traceview reports is the length of a set of half-open intervals
``[start, end)`` in integer ns, never a sum of overlapping durations (unless a result
is explicitly labelled a *sum*). Each algorithm is explained once, here.

A *set* is a pair ``(starts, ends)`` of int64 arrays, sorted, disjoint and non-empty
intervals (``ends[i] < starts[i+1]``); ``union`` produces one from anything.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np

Set = tuple[np.ndarray, np.ndarray]
EMPTY: Set = (np.zeros(0, np.int64), np.zeros(0, np.int64))


def union(starts: np.ndarray, ends: np.ndarray) -> Set:
    """Merge possibly overlapping intervals into a disjoint sorted set.

    Sort by start; an interval begins a new run when its start lies beyond the
    running maximum of all previous ends. Touching intervals ([0,5) and [5,9)) merge.
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if starts.size == 0:
        return EMPTY
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    first, run_ends = _runs(s, e)
    return s[first], run_ends


def _runs(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Of intervals sorted by start (at least one): the index of each merged run's first
    interval and each run's end (the running maximum of the ends at its last one)."""
    run_end = np.maximum.accumulate(e)
    new_run = np.empty(s.size, dtype=bool)
    new_run[0] = True
    new_run[1:] = s[1:] > run_end[:-1]
    first = np.flatnonzero(new_run)
    last = np.append(first[1:] - 1, s.size - 1)
    return first, run_end[last]


def expand_ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ``(k, i)`` with ``lo[k] <= i < hi[k]``: ``k`` ascending, ``i`` ascending
    within one ``k`` (the positions each query's run of a sorted array covers, for all
    queries at once, without a Python loop over them). Empty where ``hi <= lo``."""
    lo = np.asarray(lo, dtype=np.int64)
    counts = np.maximum(np.asarray(hi, dtype=np.int64) - lo, 0)
    k = np.repeat(np.arange(lo.size), counts)
    i = np.arange(k.size, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts - lo, counts)
    return k, i


def union_length_by_group(groups: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                          n: int) -> np.ndarray:
    """``length(union(...))`` of each group's intervals, for integer ``groups`` in
    ``range(n)``, in one pass over all of them (a union per group costs a numpy call
    sequence each: per call of a 100,000-call trace that dominated).

    Each group is shifted to a range of its own, ``[offset_g, offset_g + span_g]`` with
    ``offset_{g+1} = offset_g + span_g + 1``, where ``span_g`` is from the group's first
    start to its last end; the gap of one ns keeps runs of two groups from touching, so
    one ``union`` of the shifted intervals is every group's union side by side, and a run
    belongs to the group its first interval does. Offsets add up spans, not absolute
    times, so they stay far inside int64.
    """
    groups = np.asarray(groups, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    keep = ends > starts
    groups, starts, ends = groups[keep], starts[keep], ends[keep]
    out = np.zeros(n, np.int64)
    if groups.size == 0:
        return out
    lo = np.full(n, np.iinfo(np.int64).max, np.int64)
    hi = np.full(n, np.iinfo(np.int64).min, np.int64)
    np.minimum.at(lo, groups, starts)
    np.maximum.at(hi, groups, ends)
    span = np.where(hi > lo, hi - lo, 0)
    offset = np.concatenate(([0], np.cumsum(span + 1)[:-1]))
    shift = offset[groups] - lo[groups]
    s, e = starts + shift, ends + shift
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    first, run_ends = _runs(s, e)
    np.add.at(out, groups[order[first]], run_ends - s[first])
    return out


def start_order(starts: np.ndarray,
                ties: Callable[[np.ndarray], tuple[np.ndarray, ...]] | None = None) -> np.ndarray:
    """Indices that sort by start (stably), ties broken by ``np.lexsort(ties(idx))``.

    The same as ``np.lexsort(ties(all) + (starts,))``, for a fraction of the time on
    trace data: events arrive nearly sorted by start and rarely share one, so a stable
    sort (adaptive: it finds the sorted runs) does most of the work and only the rows
    that tie are lexsorted. ``ties`` gets the tied rows' indices and returns their
    secondary keys, least significant first (np.lexsort's convention).
    """
    order = np.argsort(starts, kind="stable")
    if ties is None:
        return order
    # the positions holding a start equal to a neighbour's, found a block at a time (the
    # starts in sorted order are never gathered whole: on a cold compile's millions of
    # frames that copy was the sort's peak)
    parts = []
    for lo in range(0, max(order.size - 1, 0), TIE_BLOCK):
        st = starts[order[lo:lo + TIE_BLOCK + 1]]
        tie = np.flatnonzero(st[1:] == st[:-1])
        if tie.size:
            parts.append(tie + lo)
    if parts:
        tie = np.concatenate(parts)
        pos = np.union1d(tie, tie + 1)
        sub = order[pos]
        order[pos] = sub[np.lexsort(ties(sub) + (starts[sub],))]
    return order


# positions compared at a time by start_order (a few MB per temporary)
TIE_BLOCK = 1 << 18


def length(iv: Set) -> int:
    """Total length of a disjoint set."""
    s, e = iv
    return int((e - s).sum())


def clip(iv: Set, lo: int, hi: int) -> Set:
    """The part of a disjoint set inside ``[lo, hi)``."""
    s, e = iv
    s2 = np.maximum(s, lo)
    e2 = np.minimum(e, hi)
    keep = e2 > s2
    return s2[keep], e2[keep]


def covered_before(iv: Set, t: np.ndarray | int) -> np.ndarray:
    """For each time ``t``, how much of the set lies before ``t`` (a step function).

    ``prefix[k]`` is the length of the first ``k`` intervals; the interval that may
    contain ``t`` is the last one starting at or before it, contributing
    ``min(t, end) - start``. Vectorised over ``t``; exact integers.
    """
    s, e = iv
    t = np.asarray(t, dtype=np.int64)
    if s.size == 0:
        return np.zeros(t.shape, dtype=np.int64)
    return _covered_before(s, e, _prefix(s, e), t)


def _prefix(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """``prefix[k]``: the length of the first ``k`` intervals (built in place: one array)."""
    prefix = np.empty(s.size + 1, np.int64)
    prefix[0] = 0
    np.subtract(e, s, out=prefix[1:])
    np.cumsum(prefix[1:], out=prefix[1:])
    return prefix


def _covered_before(s: np.ndarray, e: np.ndarray, prefix: np.ndarray, t: np.ndarray) -> np.ndarray:
    k = np.searchsorted(s, t, side="right")  # intervals starting at or before t
    idx = np.maximum(k - 1, 0)
    partial = np.clip(np.minimum(t, e[idx]) - s[idx], 0, None)
    return np.where(k > 0, prefix[idx] + partial, 0)


def overlap(iv: Set, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """For each query interval, the length of its intersection with the set."""
    s, e = iv
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if s.size == 0:
        return np.zeros(np.broadcast(starts, ends).shape, dtype=np.int64)
    prefix = _prefix(s, e)  # once for both ends
    return _covered_before(s, e, prefix, ends) - _covered_before(s, e, prefix, starts)


def overlap_pairs(iv: Set, starts: np.ndarray | PackedTimes,
                  ends: np.ndarray | PackedTimes) -> tuple[np.ndarray, np.ndarray]:
    """Every (query, length) pair where a query meets the set, for sorted disjoint
    queries (a partition of the window, say): ``overlap`` without touching the queries
    that meet nothing.

    The queries meeting set interval ``k`` form one run of indices, from the first query
    ending after it starts to the last one starting before it ends (two binary searches
    per set interval). With both sides sorted and disjoint there are at most
    ``len(queries) + len(set)`` pairs, each of positive length.
    """
    s, e = iv
    if not isinstance(starts, PackedTimes):  # read where needed, never unpacked whole
        starts = np.asarray(starts, dtype=np.int64)
    if not isinstance(ends, PackedTimes):
        ends = np.asarray(ends, dtype=np.int64)
    if s.size == 0 or starts.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    lo = np.searchsorted(ends, s, side="right")
    hi = np.searchsorted(starts, e, side="left")
    counts = np.maximum(hi - lo, 0)
    total = int(counts.sum())
    k = np.repeat(np.arange(s.size), counts)
    q = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts - lo, counts)
    length = np.minimum(ends[q], e[k]) - np.maximum(starts[q], s[k])
    return q, length


def intersect(a: Set, b: Set) -> Set:
    """Intersection of two disjoint sets (each piece of ``a`` clipped by ``b``), in time
    order. The pieces of ``b`` meeting piece ``i`` of ``a`` form one run, found by two
    binary searches (as in ``overlap_pairs``), so no Python loop runs per piece: a step's
    busy time met with each phase once was a tenth of a trace's analysis that way."""
    (as_, ae), (bs, be) = a, b
    if as_.size == 0 or bs.size == 0:
        return EMPTY
    lo = np.searchsorted(be, as_, side="right")
    hi = np.searchsorted(bs, ae, side="left")
    counts = np.maximum(hi - lo, 0)
    total = int(counts.sum())
    i = np.repeat(np.arange(as_.size), counts)
    j = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts - lo, counts)
    out_s = np.maximum(as_[i], bs[j]).astype(np.int64, copy=False)
    out_e = np.minimum(ae[i], be[j]).astype(np.int64, copy=False)
    keep = out_s < out_e  # a zero-length piece met inside another is no intersection
    return out_s[keep], out_e[keep]


def subtract(a: Set, b: Set) -> Set:
    """The part of ``a`` not covered by ``b`` (e.g. device idle = window - busy)."""
    (as_, ae), (bs, be) = a, b
    if as_.size == 0 or bs.size == 0:
        return a
    out_s, out_e = [], []
    bs_l, be_l = bs.tolist(), be.tolist()
    j = 0
    for s, e in zip(as_.tolist(), ae.tolist(), strict=True):
        cur = s
        while j < len(bs_l) and be_l[j] <= cur:
            j += 1
        k = j
        while k < len(bs_l) and bs_l[k] < e:
            if bs_l[k] > cur:
                out_s.append(cur)
                out_e.append(bs_l[k])
            cur = max(cur, be_l[k])
            k += 1
        if cur < e:
            out_s.append(cur)
            out_e.append(e)
    return np.asarray(out_s, np.int64), np.asarray(out_e, np.int64)


def increasing(values: np.ndarray, block: int = 1 << 20) -> bool:
    """Whether ``values`` strictly increase (then they are in ``start_order`` already:
    no ties to break), checked a block at a time (no row-sized temporaries)."""
    for lo in range(0, max(values.size - 1, 0), block):
        v = values[lo:lo + block + 1]
        if not (v[1:] > v[:-1]).all():
            return False
    return True


def grouped_order(codes: np.ndarray, n_codes: int, block: int = 1 << 18) -> np.ndarray:
    """``np.argsort(codes, kind="stable")`` (codes in ``range(n_codes)``), as int32 where
    the rows fit, made a block of rows at a time (a counting sort: each code's rows go
    after the code's rows of earlier blocks): no int64 array of every row is made on the
    way, nor a sort's buffer of them (on a cold compile's tens of millions of rows,
    hundreds of MB)."""
    n = codes.size
    order = np.empty(n, np.int32 if n < 2**31 else np.int64)
    counts = np.zeros(n_codes, np.int64)
    for lo in range(0, n, block):
        counts += np.bincount(codes[lo:lo + block], minlength=n_codes)
    next_at = np.cumsum(counts) - counts  # where each code's next row goes
    for lo in range(0, n, block):
        part = codes[lo:lo + block]
        o = np.argsort(part, kind="stable")
        sorted_codes = part[o]
        first = np.flatnonzero(np.append(True, sorted_codes[1:] != sorted_codes[:-1]))
        size = np.diff(np.append(first, o.size))
        rank = np.arange(o.size) - np.repeat(first, size)  # among the block's rows of its code
        order[next_at[sorted_codes] + rank] = o + lo
        next_at[sorted_codes[first]] += size
    return order


def nonzero_rows(mask: np.ndarray, block: int = 1 << 20) -> np.ndarray:
    """``np.flatnonzero(mask)``, as int32 where every index fits, made a block at a time:
    no int64 array of them all (a cold compile's tens of millions of Python frames)."""
    out = np.empty(int(np.count_nonzero(mask)), np.int32 if mask.size < 2**31 else np.int64)
    at = 0
    for lo in range(0, mask.size, block):
        found = np.flatnonzero(mask[lo:lo + block])
        found += lo
        out[at:at + found.size] = found
        at += found.size
    return out


def sum_by(codes: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Exact int64 sums of ``values`` grouped by integer ``codes`` in ``range(n)``."""
    out = np.zeros(n, dtype=np.int64)
    np.add.at(out, np.asarray(codes, dtype=np.int64), np.asarray(values, dtype=np.int64))
    return out


# ---------------------------------------------------------------- a sorted time column, packed
#
# A cold compile's main thread is cut into tens of millions of segments, and their int64
# bounds were a quarter of explain's peak memory. Sorted times close to each other need
# no 8 bytes each: ``PackedTimes`` holds them as an int64 base per block of
# ``PACK_BLOCK`` values and each value's uint32 offset from its block's base, exactly
# (every value is the base plus its offset, in integer ns). A block whose values span
# more than ``PACK_MAX`` ns cannot be packed: the column then stays a plain int64 array
# (``pack`` returns None, and the host sweep writes plain bounds).

PACK_SHIFT = 12
PACK_BLOCK = 1 << PACK_SHIFT
# the largest offset held: one below uint32's top, so that a query clipped to the top
# compares with every offset as the unclipped query would (``PackedTimes.searchsorted``)
PACK_MAX = 2**32 - 2
# ``PackedTimes.searchsorted`` searches block by block (numpy's search in each block its
# queries fall in) while the queries fall in at most this many blocks, or in at most one
# block per ``PACK_QUERIES_PER_BLOCK`` queries; past that, all queries at once, bisecting
# every block together
PACK_BLOCKS_SEARCHED = 64
PACK_QUERIES_PER_BLOCK = 8


# What the stand-in columns (PackedTimes here, io.columns.IdColumn) share with the
# one-dimensional int arrays they stand for. Not np.ndarray subclasses: a subclass holds
# the dense values, and not holding them is the point of both.
class OneDimensional:
    """A column of ``n`` values (``n`` a slot or attribute of the subclass)."""

    __slots__ = ()
    n: int

    @property
    def size(self) -> int:
        return self.n

    @property
    def shape(self) -> tuple[int]:
        return (self.n,)

    @property
    def ndim(self) -> int:
        return 1

    def __len__(self) -> int:
        return self.n


def positions(key, n: int) -> np.ndarray:
    """An index array or boolean mask over ``n`` values as int64 positions in ``[0, n)``,
    negative indices counted from the end, as numpy reads them (IndexError likewise)."""
    idx = np.asarray(key)
    if idx.dtype == bool:
        if idx.shape != (n,):
            raise IndexError("boolean index of the wrong length")
        idx = np.flatnonzero(idx)
    idx = idx.astype(np.int64)
    if idx.size and (int(idx.min()) < -n or int(idx.max()) >= n):
        raise IndexError(f"index out of bounds for size {n}")
    idx[idx < 0] += n
    return idx


class PackedTimes(OneDimensional):
    """A sorted (non-decreasing) int64 ns column, packed: values ``[lo, lo + n)`` of
    ``base[i >> PACK_SHIFT] + off[i]``. Reads as the int64 array it stands for where
    explain reads its segment bounds: an index, a slice, an index array or mask (int64
    arrays back), ``searchsorted`` (also through ``np.searchsorted``), ``size``, and
    ``np.asarray`` for the whole column. Two views of one packing (``view``) hold a
    timeline's segment starts and ends, as two views of one array of bounds did."""

    __slots__ = ("base", "off", "lo", "n")

    def __init__(self, base: np.ndarray, off: np.ndarray, lo: int = 0, n: int | None = None) -> None:
        self.base = base
        self.off = off
        self.lo = lo
        self.n = off.size - lo if n is None else n

    @staticmethod
    def pack(values: np.ndarray) -> PackedTimes | None:
        """``values`` (sorted int64) packed, or None where a block spans more than
        ``PACK_MAX`` ns."""
        values = np.asarray(values, np.int64)
        base = values[::PACK_BLOCK].copy()
        off = np.empty(values.size, np.uint32)
        for lo in range(0, values.size, 1 << 20):  # a multiple of PACK_BLOCK
            part = values[lo:lo + (1 << 20)]
            part = part - base[np.arange(lo, lo + part.size) >> PACK_SHIFT]
            if int(part.min()) < 0 or int(part.max()) > PACK_MAX:
                return None
            off[lo:lo + part.size] = part
        return PackedTimes(base, off)

    def view(self, lo: int, n: int) -> PackedTimes:
        """Values ``[lo, lo + n)`` of this column, sharing its packing."""
        return PackedTimes(self.base, self.off, self.lo + lo, n)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.int64)

    @property
    def nbytes(self) -> int:
        return self.n * self.off.itemsize + ((self.n >> PACK_SHIFT) + 1) * self.base.itemsize

    def _at(self, j: np.ndarray) -> np.ndarray:
        """Values at storage indices ``j`` (int64 array)."""
        out = self.base[j >> PACK_SHIFT]
        out += self.off[j]
        return out

    def _span(self, a: int, b: int) -> np.ndarray:
        """Values at storage indices ``[a, b)``, a block of the packing at a time."""
        out = self.off[a:b].astype(np.int64)
        for blk in range(a >> PACK_SHIFT, ((b - 1) >> PACK_SHIFT) + 1 if b > a else 0):
            lo, hi = max(a, blk << PACK_SHIFT), min(b, (blk + 1) << PACK_SHIFT)
            out[lo - a:hi - a] += self.base[blk]
        return out

    def __getitem__(self, key):
        if isinstance(key, slice):
            start, stop, step = key.indices(self.n)
            if step == 1:
                return self._span(self.lo + start, self.lo + max(start, stop))
            key = np.arange(start, stop, step)
        elif isinstance(key, (int, np.integer)):
            i = int(key)
            if i < 0:
                i += self.n
            if not 0 <= i < self.n:
                raise IndexError(f"index {int(key)} is out of bounds for size {self.n}")
            j = self.lo + i
            return np.int64(int(self.base[j >> PACK_SHIFT]) + int(self.off[j]))
        idx = positions(key, self.n)
        idx += self.lo
        return self._at(idx)

    def searchsorted(self, v, side: Literal["left", "right"] = "left", sorter=None):
        """``np.searchsorted`` of the int64 column: the block from the bases, then a
        binary search among the block's offsets (the query less the block's base, where
        no offset is greater than ``PACK_MAX``: clipped to ``PACK_MAX + 1`` it compares
        with each offset as the query itself would)."""
        if sorter is not None:
            raise TypeError("a packed column is sorted: no sorter")
        if side not in ("left", "right"):
            raise ValueError(f"side must be 'left' or 'right', not {side!r}")
        scalar = np.ndim(v) == 0
        q = np.atleast_1d(np.asarray(v, np.int64))
        b = np.searchsorted(self.base, q, side=side) - 1  # the block holding the answer
        has = b >= 0
        bb = np.where(has, b, 0)
        d = np.minimum(q - self.base[bb], PACK_MAX + 1)
        out = self._by_block(bb, has, d, side)
        if out is None:
            out = self._all_blocks(bb, has, d, side)
        out = np.clip(out - self.lo, 0, self.n)
        return out[0] if scalar else out

    def _by_block(self, bb: np.ndarray, has: np.ndarray, d: np.ndarray,
                  side: Literal["left", "right"]) -> np.ndarray | None:
        """The storage index of each query's answer, numpy's search run once per block
        the queries fall in (the queries of a block together); None where they fall in
        more blocks than ``PACK_BLOCKS_SEARCHED`` and one per ``PACK_QUERIES_PER_BLOCK``
        queries. A few queries (a step's bounds, the walk's instants) took the bisection
        of ``_all_blocks``, a dozen rounds of numpy calls, each."""
        out = np.zeros(bb.size, np.int64)  # 0: before the first block
        at = np.flatnonzero(has)
        if at.size == 0:
            return out
        if at.size > 1:
            at = at[np.argsort(bb[at], kind="stable")]
        blk = bb[at]
        cut = np.flatnonzero(blk[1:] != blk[:-1]) + 1
        if cut.size >= max(PACK_BLOCKS_SEARCHED, at.size // PACK_QUERIES_PER_BLOCK):
            return None
        dq = d.astype(np.uint32)  # exact: 0 <= d <= PACK_MAX + 1, uint32's top
        for a, z, k in zip([0, *cut.tolist()], [*cut.tolist(), at.size],
                           blk[np.r_[0, cut]].tolist(), strict=True):
            lo = k << PACK_SHIFT
            sel = at[a:z]
            out[sel] = lo + np.searchsorted(self.off[lo:min(lo + PACK_BLOCK, self.off.size)],
                                            dq[sel], side=side)
        return out

    def _all_blocks(self, bb: np.ndarray, has: np.ndarray, d: np.ndarray,
                    side: Literal["left", "right"]) -> np.ndarray:
        """``_by_block``'s answer for queries spread over many blocks: one bisection of all
        their blocks at once."""
        lo = bb << PACK_SHIFT
        hi = np.minimum(lo + PACK_BLOCK, self.off.size)
        lo = np.where(has, lo, 0)
        hi = np.where(has, hi, 0)
        while True:  # lo: the first offset not below (left) or above (right) d
            go = lo < hi
            if not go.any():
                break
            mid = (lo + hi) >> 1
            val = np.where(go, self.off[np.minimum(mid, self.off.size - 1)].astype(np.int64), 0)
            below = (val < d) if side == "left" else (val <= d)
            move = go & below
            lo = np.where(move, mid + 1, lo)
            hi = np.where(go & ~below, mid, hi)
        return lo

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self._span(self.lo, self.lo + self.n)
        return out if dtype is None else out.astype(dtype)

    def tolist(self) -> list[int]:
        return np.asarray(self).tolist()

    def __iter__(self):
        return iter(self.tolist())

    def __sub__(self, other) -> np.ndarray:
        return np.asarray(self) - np.asarray(other)

    def __rsub__(self, other) -> np.ndarray:
        return np.asarray(other) - np.asarray(self)
