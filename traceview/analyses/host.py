"""Host attribution: every nanosecond of the window on one thread gets one category.

The deepest event owns each instant. One sweep over the thread's slices, sorted by
start (longest first on ties), keeps a stack of open slices; the owner of an instant is
the open slice that started last, so properly nested slices give the deepest one and
slices that overlap without nesting (a known profiler corruption) still give exactly
one owner. Instants no slice covers are ``untraced``. Labels (user ranges, profiler
spans) own nothing; profiler ``overhead`` slices (CUPTI buffer requests), which Kineto
puts on a lane of their own, are laid over the thread they interrupted.

The same sweep resolves each slice's category through the rule table (see
``traceview.rules``): a ``subtree`` rule on an ancestor wins (the nearest one; a
``yields`` rule only where no ancestor's rule sticks), then the slice's own rule, and
``inherit`` takes the parent's category.

Two implementations of that one sweep give the same answer (``tests/test_sweep.py``):
the plain Python loop (``general=True``, the reference, and the path taken when the
helpers are not built) and the same loop compiled (``host_sweep_native.py``). Which rows
a thread owns is ``host_rows`` below; functions by self time, ``hot_functions.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traceview import intervals
from traceview.analyses.host_sweep_native import compiled_sweep
from traceview.analyses.window import Window
from traceview.model import DEVICE_CATS, Lane, Trace
from traceview.rules import (
    INHERIT,
    OTHER,
    STICKS,
    STICKS_UNLESS_ENCLOSED,
    UNTRACED,
    RuleSet,
)

# -- the slices a host thread owns in the window: its own slices less labels (user ranges,
# profiler spans, device work), plus the profiler's ``overhead`` slices, which Kineto puts
# on a lane of their own and which are laid over every thread they interrupted

LABEL_CATS = frozenset({"user_annotation", "Trace"}) | DEVICE_CATS
OVERLAY_CATS = frozenset({"overhead"})


def host_rows_by_lane(trace: Trace, window: Window) -> dict[int, np.ndarray]:
    """Every host lane's rows (see ``host_rows``), in one pass over the slices. As int32
    where the trace's rows fit (``attribute_host`` sweeps them so): a cold compile's main
    thread has tens of millions, and an int64 column of them was alive through the sort
    before the sweep, its peak memory."""
    s = trace.slices
    ncat = len(trace.cat_names)
    is_label = np.zeros(ncat + 1, bool)
    is_label[[i for i, c in enumerate(trace.cat_names) if c in LABEL_CATS]] = True
    is_overlay = np.zeros(ncat + 1, bool)
    is_overlay[[i for i, c in enumerate(trace.cat_names) if c in OVERLAY_CATS]] = True
    live = (s.end > window.start_ns) & (s.start < window.end_ns) & (s.end > s.start)
    overlay = np.flatnonzero(live & is_overlay[s.cat])
    live &= ~(is_label | is_overlay)[s.cat]
    own = intervals.nonzero_rows(live)
    del live
    lane_of = s.lane[own]
    counts = np.bincount(lane_of, minlength=len(trace.lanes)) if lane_of.size else \
        np.zeros(len(trace.lanes), np.int64)
    if np.count_nonzero(counts) > 1:  # one thread's rows are in order already
        own = own[intervals.grouped_order(lane_of, len(trace.lanes))]  # int32, no int64 order
    del lane_of
    bounds = np.append(0, np.cumsum(counts))
    out = {}
    for lane in trace.host_lanes:
        rows = own[bounds[lane.index]:bounds[lane.index + 1]]
        if overlay.size:  # both sorted and disjoint: one merged copy
            rows = np.insert(rows, np.searchsorted(rows, overlay), overlay.astype(rows.dtype))
        out[lane.index] = rows
    return out


def host_rows(trace: Trace, lane: Lane, window: Window) -> np.ndarray:
    """Rows of the thread's own slices plus overlaid profiler overhead, in the window."""
    return host_rows_by_lane(trace, window)[lane.index]


# segments taken at a time by the passes over a timeline (a few MB per temporary)
BLOCK = 1 << 18


@dataclass(frozen=True)
class HostTimeline:
    """The window on one thread cut into owned segments."""

    lane: Lane | None
    categories: list[str]  # category ids; codes below index into this list
    # the segment bounds: int64 ns, or packed exactly (intervals.PackedTimes, 4 bytes each)
    seg_start: np.ndarray | intervals.PackedTimes
    seg_end: np.ndarray | intervals.PackedTimes
    seg_pos: np.ndarray  # position in ``rows`` of the slice owning the segment, -1: untraced
    rows: np.ndarray  # slice rows swept (clipped to the window; int32 where rows fit)
    row_cat: np.ndarray  # resolved category code per swept row (aligned with rows; int8 too)
    non_nested: int  # slices that overlapped their parent without nesting

    @property
    def seg_cat(self) -> SegmentCodes:
        """Each segment's category code (int8 while the categories fit): its owner's
        resolved category, ``untraced`` where no slice owns it, read from ``row_cat``
        when indexed. The sweep gives a segment its owner's category, so a column of
        them repeated what the rows hold: a byte per segment, tens of millions on a cold
        compile."""
        return SegmentCodes(self.seg_pos, self.row_cat, self.categories.index(UNTRACED))

    @property
    def self_ns(self) -> np.ndarray:
        """Owned ns per swept row (aligned with ``rows``), summed from the segments on
        each access. Not held: on a cold compile's millions of frames a row-sized int64
        column of it, made by the sweep beside the segments, was explain's peak memory;
        explain sums the segments per function instead (``hot_functions``)."""
        return _self_ns(self.rows.size, self.seg_start, self.seg_end, self.seg_pos)

    @property
    def seg_owner(self) -> np.ndarray:
        """Slice row owning each segment, -1 for untraced."""
        if self.rows.size == 0:
            return np.full(self.seg_pos.size, -1, np.int64)
        return np.where(self.seg_pos >= 0, self.rows[np.maximum(self.seg_pos, 0)], -1)

    def totals(self) -> dict[str, int]:
        ns = np.zeros(len(self.categories), np.int64)
        for lo in range(0, self.seg_cat.size, BLOCK):  # no window-sized temporaries
            hi = lo + BLOCK
            ns += intervals.sum_by(self.seg_cat[lo:hi], self.seg_end[lo:hi] - self.seg_start[lo:hi],
                                   len(self.categories))
        return dict(zip(self.categories, ns.tolist(), strict=True))

    def overlap_by_category(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """For each query interval, its overlap with each category's segments: an array
        (category, query), the same as ``intervals.overlap(self.category_set(c), ...)``
        for every category, without the per-category copies of the segments."""
        ends = np.asarray(ends, np.int64)
        before = self._covered_before(np.concatenate([ends, np.asarray(starts, np.int64)]))
        return before[:, :ends.size] - before[:, ends.size:]  # one pass for both ends

    def _covered_before(self, t: np.ndarray) -> np.ndarray:
        """(category, time): how much of each category lies before each time. The
        segments are contiguous and sorted, so that is the sum over the whole segments
        before the one holding ``t``, by category (running sums a block of segments at
        a time), plus the part of that one before ``t``."""
        t = np.asarray(t, np.int64)
        ncat, nseg = len(self.categories), self.seg_start.size
        out = np.zeros((ncat, t.size), np.int64)
        if nseg == 0 or t.size == 0:
            return out
        j = np.searchsorted(self.seg_start, t, side="right") - 1  # the segment holding t
        has = np.flatnonzero(j >= 0)
        jj = j[has]
        partial = np.clip(np.minimum(t[has], self.seg_end[jj]) - self.seg_start[jj], 0, None)
        out[self.seg_cat[jj].astype(np.int64), has] += partial
        order = has[np.argsort(jj, kind="stable")]  # queries by their segment
        js = j[order]
        carry = np.zeros(ncat, np.int64)  # each category's length before the block
        for lo in range(0, nseg, BLOCK):
            hi = min(lo + BLOCK, nseg)
            a, b = np.searchsorted(js, [lo, hi]).tolist()
            q = js[a:b] - lo  # whole segments of the block before each query's
            if b > a:
                out[:, order[a:b]] += carry[:, None]
            cats = self.seg_cat[lo:hi]
            lens = self.seg_end[lo:hi] - self.seg_start[lo:hi]
            for k in np.flatnonzero(np.bincount(cats, minlength=ncat)).tolist():
                run = np.where(cats == k, lens, 0)
                np.cumsum(run, out=run)
                if b > a:
                    out[k, order[a:b]] += np.where(q > 0, run[np.maximum(q - 1, 0)], 0)
                carry[k] += run[-1]
        return out

    def category_set(self, category: str) -> intervals.Set:
        code = self.categories.index(category)
        m = self.seg_cat == code
        return self.seg_start[m], self.seg_end[m]


class SegmentCodes:
    """The segments' category codes (``HostTimeline.seg_cat``), each its owner's
    ``row_cat`` (``untraced`` at position -1), made for what is indexed: an index, a
    slice, an index array (arrays back, of ``row_cat``'s dtype); ``np.asarray`` for all."""

    __slots__ = ("pos", "row_cat", "untraced")

    def __init__(self, pos: np.ndarray, row_cat: np.ndarray, untraced: int) -> None:
        self.pos = pos
        self.row_cat = row_cat
        self.untraced = untraced

    @property
    def size(self) -> int:
        return int(self.pos.size)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.pos.shape

    @property
    def dtype(self) -> np.dtype:
        return self.row_cat.dtype

    def __len__(self) -> int:
        return int(self.pos.size)

    def __getitem__(self, key):
        pos = self.pos[key]
        if np.ndim(pos) == 0:
            p = int(pos)
            return self.row_cat.dtype.type(self.row_cat[p] if p >= 0 else self.untraced)
        out = np.full(pos.shape, self.untraced, self.row_cat.dtype)
        owned = pos >= 0
        out[owned] = self.row_cat[pos[owned]]
        return out

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = np.empty(self.pos.size, self.row_cat.dtype)
        for lo in range(0, self.pos.size, BLOCK):
            out[lo:lo + BLOCK] = self[lo:lo + BLOCK]
        return out if dtype is None else out.astype(dtype)

    def __eq__(self, other) -> np.ndarray:  # type: ignore[override]
        return np.asarray(self) == other

    def __ne__(self, other) -> np.ndarray:  # type: ignore[override]
        return np.asarray(self) != other

    __hash__ = None  # type: ignore[assignment]

    def tolist(self) -> list[int]:
        return np.asarray(self).tolist()


def category_ids(rules: RuleSet) -> list[str]:
    ids = [c for c in rules.categories if c not in (UNTRACED, OTHER)]
    return ids + [OTHER, UNTRACED]


def sweep_order(trace: Trace, rows: np.ndarray, starts: np.ndarray, w1: int) -> np.ndarray:
    """Positions of ``rows`` by start (``starts``: theirs, clipped to the window), then
    longest first (ends clipped to ``w1``), then category and name (so identical spans are
    ordered by content, not by file order)."""
    s = trace.slices
    return intervals.start_order(starts, lambda sub: (
        trace.name_rank[s.name[rows[sub]]], trace.cat_rank[s.cat[rows[sub]]],
        -np.minimum(s.end[rows[sub]], w1)))


def _classify_rows(trace: Trace, rows: np.ndarray, rules: RuleSet, code: dict[str, int],
                   other: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's own rule result: (category code or -1 for inherit, how it sticks to its
    subtree: ``rules.OWN``, ``STICKS`` or ``STICKS_UNLESS_ENCLOSED``).

    Classified once per distinct (category, name) pair, then spread over the rows.
    """
    s = trace.slices
    if rows.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.uint8)
    width = len(trace.names) + 1
    pair = s.cat[rows].astype(np.int64)
    pair *= width
    pair += s.name[rows]
    size = (len(trace.cat_names) + 1) * width
    if size <= max(1 << 22, 4 * rows.size):  # a dense table: no sort
        seen = np.zeros(size, bool)
        seen[pair] = True
        uniq = np.flatnonzero(seen)
        del seen
        lut = np.empty(size, np.int32)
        lut[uniq] = np.arange(uniq.size, dtype=np.int32)
        inverse = lut[pair]
    else:
        uniq, inverse = np.unique(pair, return_inverse=True)
    codes = np.empty(uniq.size, np.int8 if len(code) < 127 else np.int32)
    subtree = np.empty(uniq.size, np.uint8)
    for k, p in enumerate(uniq.tolist()):
        cat, name = divmod(p, width)
        category, sub = rules.sticks(trace.cat_names[cat], trace.names[name])
        codes[k] = code.get(category, other) if category != INHERIT else -1
        subtree[k] = sub
    inverse = inverse.ravel()
    return codes[inverse], subtree[inverse]


def attribute_host(trace: Trace, lane: Lane | None, window: Window, rules: RuleSet, *,
                   general: bool = False, rows: np.ndarray | None = None) -> HostTimeline:
    """Cut the window on ``lane`` into owned segments (``general`` forces the loop sweep:
    the plain reference the compiled sweep is tested against, overlaps of any kind).
    ``rows``: the lane's rows from ``host_rows_by_lane``, when already computed."""
    cats = category_ids(rules)
    code = {c: i for i, c in enumerate(cats)}
    untraced, other = code[UNTRACED], code[OTHER]
    w0, w1 = window.start_ns, window.end_ns
    if lane is None or window.dur_ns <= 0:
        rows = np.zeros(0, np.int64)
    elif rows is None:
        rows = host_rows(trace, lane, window)
    rows = _in_sweep_order(trace, rows, w0, w1)
    own_code, own_subtree = _classify_rows(trace, rows, rules, code, other)
    s = trace.slices
    fast = None if general else compiled_sweep(rows, s.start, s.end, own_code, own_subtree,
                                               w0, w1, untraced, other, len(cats))
    if fast is None:
        fast = _loop_sweep(np.maximum(s.start[rows], w0), np.minimum(s.end[rows], w1),
                           own_code, own_subtree, w0, w1, untraced, other)
    del own_code, own_subtree
    seg_start, seg_end, _, seg_pos, row_cat, non_nested = fast  # seg_cat: from row_cat
    del fast
    return HostTimeline(
        lane=lane, categories=cats, seg_start=seg_start, seg_end=seg_end,
        seg_pos=seg_pos.astype(np.int32, copy=False),
        rows=rows, row_cat=row_cat.astype(np.int8 if len(cats) <= 127 else np.int32, copy=False),
        non_nested=non_nested,
    )


def _in_sweep_order(trace: Trace, rows: np.ndarray, w0: int, w1: int) -> np.ndarray:
    """The rows in sweep order: by start clipped to the window (Python frames outliving
    their caller were clipped when the trace was built: ``model``), then longest first.
    Only the starts are gathered here (the sweep reads the spans from the trace's own
    columns): on a cold compile's millions of rows, the clipped copies of starts and
    ends, in file order and then in sweep order, were the analysis's peak memory. As
    int32 where the trace's rows fit."""
    if len(trace.slices) < 2**31:
        # the rows index the trace's columns: as int32 a cold compile's main thread holds
        # 4 bytes less per frame through the sweep (which reads them so) and every
        # analysis after it
        rows = rows.astype(np.int32, copy=False)
    starts = trace.slices.start[rows]
    np.maximum(starts, w0, out=starts)
    order = sweep_order(trace, rows, starts, w1)
    del starts
    return rows[order]


def _loop_sweep(starts: np.ndarray, ends: np.ndarray, own_code: np.ndarray,
                own_subtree: np.ndarray, w0: int, w1: int, untraced: int, other: int):
    """The sweep as a plain Python loop: the reference (``compiled_sweep`` is this loop
    in C). Segments (start, end, category code, owning position), each position's
    resolved category, and the count of slices overlapping their parent."""
    row_cat = np.empty(starts.size, dtype=np.int32)
    seg_s: list[int] = []
    seg_e: list[int] = []
    seg_c: list[int] = []
    seg_o: list[int] = []
    add_s, add_e, add_c, add_o = seg_s.append, seg_e.append, seg_c.append, seg_o.append
    # stack entries: (end, position in rows, resolved code, forced code or -1)
    stack: list[tuple[int, int, int, int]] = []
    push, pop = stack.append, stack.pop
    t = w0
    non_nested = 0
    resolved_list = [0] * starts.size
    for pos, st, en, oc, sub in zip(range(starts.size), starts.tolist(), ends.tolist(),
                                    own_code.tolist(), own_subtree.tolist(), strict=True):
        # the time up to this start belongs to the open slice that started last
        while t < st:
            while stack and stack[-1][0] <= t:
                pop()
            if not stack:
                add_s(t), add_e(st), add_c(untraced), add_o(-1)
                t = st
                break
            top = stack[-1]
            end = min(st, top[0])
            add_s(t), add_e(end), add_c(top[2]), add_o(top[1])
            t = end
        while stack and stack[-1][0] <= st:
            pop()
        if stack:
            parent = stack[-1]
            forced = parent[3]
            if en > parent[0]:
                non_nested += 1
        else:
            parent = None
            forced = -1
        if sub == STICKS or sub == STICKS_UNLESS_ENCLOSED and forced == -1:
            forced = resolved = oc
        elif forced != -1:
            resolved = forced
        elif oc == -1:
            resolved = parent[2] if parent is not None else other
        else:
            resolved = oc
        resolved_list[pos] = resolved
        push((en, pos, resolved, forced))
    while t < w1:  # the tail of the window
        while stack and stack[-1][0] <= t:
            pop()
        if not stack:
            add_s(t), add_e(w1), add_c(untraced), add_o(-1)
            break
        top = stack[-1]
        end = min(w1, top[0])
        add_s(t), add_e(end), add_c(top[2]), add_o(top[1])
        t = end
    row_cat[:] = resolved_list
    seg_start, seg_end = np.asarray(seg_s, np.int64), np.asarray(seg_e, np.int64)
    return (seg_start, seg_end, np.asarray(seg_c, np.int32), np.asarray(seg_o, np.int64),
            row_cat, non_nested)


def _self_ns(n: int, seg_start: np.ndarray | intervals.PackedTimes,
             seg_end: np.ndarray | intervals.PackedTimes, seg_pos: np.ndarray) -> np.ndarray:
    """Owned ns per swept row, a block of segments at a time."""
    self_ns = np.zeros(n, np.int64)
    for lo in range(0, seg_pos.size, BLOCK):
        pos = seg_pos[lo:lo + BLOCK]
        owned = pos >= 0
        np.add.at(self_ns, pos[owned], (seg_end[lo:lo + BLOCK] - seg_start[lo:lo + BLOCK])[owned])
    return self_ns
