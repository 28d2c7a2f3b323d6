"""Host attribution: every nanosecond of the window on one thread gets one category.

The deepest event owns each instant. One sweep over the thread's slices, sorted by
start (longest first on ties), keeps a stack of open slices; the owner of an instant is
the open slice that started last, so properly nested slices give the deepest one and
slices that overlap without nesting (a known profiler corruption) still give exactly
one owner. Instants no slice covers are ``untraced``. Labels (user ranges, profiler
spans) own nothing; profiler ``overhead`` slices (CUPTI buffer requests), which Kineto
puts on a lane of their own, are laid over the thread they interrupted.

The same sweep resolves each slice's category through the rule table (see
``traceview.rules``): a ``subtree`` rule on an ancestor wins, then the slice's own
rule, and ``inherit`` takes the parent's category.

Three implementations of that one sweep give the same answer (``tests/test_sweep.py``):
the plain Python loop (``general=True``, the reference), the same loop compiled
(``_host_sweep.c``, used when it is built: ``traceview/native.py``), and array
operations (``_sweep_arrays``, used otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traceview import intervals, native
from traceview.analyses.artifacts import clip_frames
from traceview.analyses.window import Window
from traceview.model import DEVICE_CATS, Lane, Trace
from traceview.rules import INHERIT, OTHER, UNTRACED, RuleSet

# hot_functions offsets each function's times past the previous one's: only while that
# stays within int64 (functions x window length); otherwise it unions one by one
UNION_OFFSET_LIMIT = 2**62
# categories resolve one depth level at a time up to this depth (nested traces), and
# from nearest ancestors beyond it or when slices overlap without nesting
LEVEL_LOOP_MAX_DEPTH = 512
LABEL_CATS = frozenset({"user_annotation", "Trace"}) | DEVICE_CATS
OVERLAY_CATS = frozenset({"overhead"})


@dataclass(frozen=True)
class HostTimeline:
    """The window on one thread cut into owned segments."""

    lane: Lane | None
    categories: list[str]  # category ids; codes below index into this list
    seg_start: np.ndarray
    seg_end: np.ndarray
    seg_cat: np.ndarray  # int code per segment
    seg_pos: np.ndarray  # position in ``rows`` of the slice owning the segment, -1: untraced
    rows: np.ndarray  # slice rows swept (clipped to the window)
    row_cat: np.ndarray  # resolved category code per swept row (aligned with rows)
    self_ns: np.ndarray  # owned ns per swept row (aligned with rows)
    non_nested: int  # slices that overlapped their parent without nesting

    @property
    def seg_owner(self) -> np.ndarray:
        """Slice row owning each segment, -1 for untraced."""
        if self.rows.size == 0:
            return np.full(self.seg_pos.size, -1, np.int64)
        return np.where(self.seg_pos >= 0, self.rows[np.maximum(self.seg_pos, 0)], -1)

    def totals(self) -> dict[str, int]:
        ns = np.zeros(len(self.categories), np.int64)
        block = 1 << 20  # a block of segments at a time: no window-sized temporaries
        for lo in range(0, self.seg_cat.size, block):
            hi = lo + block
            ns += intervals.sum_by(self.seg_cat[lo:hi], self.seg_end[lo:hi] - self.seg_start[lo:hi],
                                   len(self.categories))
        return dict(zip(self.categories, ns.tolist(), strict=True))

    def category_set(self, category: str) -> intervals.Set:
        code = self.categories.index(category)
        m = self.seg_cat == code
        return self.seg_start[m], self.seg_end[m]


def category_ids(rules: RuleSet) -> list[str]:
    ids = [c for c in rules.categories if c not in (UNTRACED, OTHER)]
    return ids + [OTHER, UNTRACED]


def host_rows_by_lane(trace: Trace, window: Window) -> dict[int, np.ndarray]:
    """Every host lane's rows (see ``host_rows``), in one pass over the slices."""
    s = trace.slices
    ncat = len(trace.cat_names)
    is_label = np.zeros(ncat + 1, bool)
    is_label[[i for i, c in enumerate(trace.cat_names) if c in LABEL_CATS]] = True
    is_overlay = np.zeros(ncat + 1, bool)
    is_overlay[[i for i, c in enumerate(trace.cat_names) if c in OVERLAY_CATS]] = True
    live = (s.end > window.start_ns) & (s.start < window.end_ns) & (s.end > s.start)
    overlay = np.flatnonzero(live & is_overlay[s.cat])
    own = np.flatnonzero(live & ~(is_label | is_overlay)[s.cat])
    lane_of = s.lane[own]
    if len(trace.lanes) < 2**15:
        lane_of = lane_of.astype(np.int16)  # a radix sort
    order = np.argsort(lane_of, kind="stable")
    by_lane = own[order]
    bounds = np.searchsorted(lane_of[order], np.arange(len(trace.lanes) + 1))
    out = {}
    for lane in trace.host_lanes:
        rows = by_lane[bounds[lane.index]:bounds[lane.index + 1]]
        if overlay.size:
            rows = np.sort(np.concatenate([rows, overlay]))
        out[lane.index] = rows
    return out


def host_rows(trace: Trace, lane: Lane, window: Window) -> np.ndarray:
    """Rows of the thread's own slices plus overlaid profiler overhead, in the window."""
    return host_rows_by_lane(trace, window)[lane.index]


def sweep_order(trace: Trace, rows: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Positions of ``rows`` by start, then longest first, then category and name (so
    identical spans are ordered by content, not by file order)."""
    s = trace.slices
    return intervals.start_order(starts, lambda sub: (
        trace.name_rank[s.name[rows[sub]]], trace.cat_rank[s.cat[rows[sub]]], -ends[sub]))


def _classify_rows(trace: Trace, rows: np.ndarray, rules: RuleSet, code: dict[str, int],
                   other: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's own rule result: (category code or -1 for inherit, sticks to subtree).

    Classified once per distinct (category, name) pair, then spread over the rows.
    """
    s = trace.slices
    if rows.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, bool)
    width = len(trace.names) + 1
    pair = s.cat[rows].astype(np.int64) * width + s.name[rows]
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
    subtree = np.empty(uniq.size, bool)
    for k, p in enumerate(uniq.tolist()):
        cat, name = divmod(p, width)
        category, sub = rules.classify(trace.cat_names[cat], trace.names[name])
        codes[k] = code.get(category, other) if category != INHERIT else -1
        subtree[k] = sub
    inverse = inverse.ravel()
    return codes[inverse], subtree[inverse]


def attribute_host(trace: Trace, lane: Lane | None, window: Window, rules: RuleSet, *,
                   general: bool = False, rows: np.ndarray | None = None) -> HostTimeline:
    """Cut the window on ``lane`` into owned segments (``general`` forces the loop sweep:
    the plain reference the array sweep is tested against, overlaps of any kind).
    ``rows``: the lane's rows from ``host_rows_by_lane``, when already computed."""
    cats = category_ids(rules)
    code = {c: i for i, c in enumerate(cats)}
    untraced, other = code[UNTRACED], code[OTHER]
    w0, w1 = window.start_ns, window.end_ns
    if lane is None or window.dur_ns <= 0:
        rows = np.zeros(0, np.int64)
    elif rows is None:
        rows = host_rows(trace, lane, window)
    s = trace.slices
    starts = np.maximum(s.start[rows], w0)
    ends = np.minimum(s.end[rows], w1)
    # start, then longest first; identical spans ordered by content, not file order
    order = sweep_order(trace, rows, starts, ends)
    del starts, ends  # taken again in sweep order: one copy of each at a time
    rows = rows[order]
    del order
    starts = np.maximum(s.start[rows], w0)
    ends = np.minimum(s.end[rows], w1)
    if clip_frames(trace, rows, starts, ends):  # Python frames outliving their caller
        rows = np.sort(rows)  # clipped: sort again from row order, as a rerun would
        starts = np.maximum(s.start[rows], w0)
        ends = np.minimum(s.end[rows], w1)
        order = sweep_order(trace, rows, starts, ends)
        rows, starts, ends = rows[order], starts[order], ends[order]

    own_code, own_subtree = _classify_rows(trace, rows, rules, code, other)
    fast = None if general else _sweep(starts, ends, own_code, own_subtree, w0, w1,
                                       untraced, other)
    if fast is not None:
        seg_start, seg_end, seg_cat, seg_pos, row_cat, non_nested = fast
        return _timeline(lane, cats, rows, seg_start, seg_end, seg_cat, seg_pos, row_cat,
                         non_nested)
    row_cat = np.empty(rows.size, dtype=np.int32)
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
    resolved_list = [0] * rows.size
    for pos, st, en, oc, sub in zip(range(rows.size), starts.tolist(), ends.tolist(),
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
        if sub:
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
    return _timeline(lane, cats, rows, np.asarray(seg_s, np.int64), np.asarray(seg_e, np.int64),
                     np.asarray(seg_c, np.int32), np.asarray(seg_o, np.int64), row_cat, non_nested)


def _timeline(lane, cats, rows, seg_start, seg_end, seg_cat, seg_pos, row_cat,
              non_nested) -> HostTimeline:
    self_ns = np.zeros(rows.size, np.int64)  # owned ns per row, a block of segments at a time
    block = 1 << 20
    for lo in range(0, seg_pos.size, block):
        pos = seg_pos[lo:lo + block]
        owned = pos >= 0
        np.add.at(self_ns, pos[owned], (seg_end[lo:lo + block] - seg_start[lo:lo + block])[owned])
    return HostTimeline(
        lane=lane, categories=cats, seg_start=seg_start, seg_end=seg_end,
        seg_cat=seg_cat.astype(np.int32, copy=False), seg_pos=seg_pos.astype(np.int32, copy=False),
        rows=rows, row_cat=row_cat.astype(np.int32, copy=False), self_ns=self_ns,
        non_nested=non_nested,
    )


_NATIVE_SWEEP = native.load("sweep")


def _sweep(starts: np.ndarray, ends: np.ndarray, own: np.ndarray, subtree: np.ndarray,
           w0: int, w1: int, untraced: int, other: int):
    """The loop sweep compiled (``_host_sweep.c``) when it is built, else the array sweep;
    both give the loop's answer (``tests/test_sweep.py``)."""
    if _NATIVE_SWEEP is not None and starts.size < 2**31 - 1:
        return _sweep_native(starts, ends, own, subtree, w0, w1, untraced, other)
    return _sweep_arrays(starts, ends, own, subtree, w0, w1, untraced, other)


def _sweep_native(starts, ends, own, subtree, w0, w1, untraced, other):
    """The loop of ``attribute_host(general=True)`` in C: one pass, a stack, no
    temporaries beyond the outputs (segments are contiguous: starts and ends are two
    views of one array of bounds, as in the array sweep)."""
    n = starts.size
    starts = np.ascontiguousarray(starts, np.int64)
    ends = np.ascontiguousarray(ends, np.int64)
    own = np.ascontiguousarray(own, np.int32)
    subtree = np.ascontiguousarray(subtree, np.uint8)
    cap = 2 * n + 1
    bounds = np.empty(cap + 1, np.int64)
    seg_cat = np.empty(cap, np.int32)
    seg_pos = np.empty(cap, np.int32)
    resolved = np.empty(n, np.int32)
    non_nested = np.zeros(1, np.int64)
    st_end = np.empty(max(n, 1), np.int64)
    st_i32 = [np.empty(max(n, 1), np.int32) for _ in range(3)]
    segs = _NATIVE_SWEEP(n, starts.ctypes.data, ends.ctypes.data, own.ctypes.data,
                         subtree.ctypes.data, w0, w1, untraced, other, bounds.ctypes.data,
                         seg_cat.ctypes.data, seg_pos.ctypes.data, cap, resolved.ctypes.data,
                         non_nested.ctypes.data, st_end.ctypes.data, st_i32[0].ctypes.data,
                         st_i32[1].ctypes.data, st_i32[2].ctypes.data)
    del st_end, st_i32
    if segs < 0:
        raise RuntimeError("host sweep: more segments than 2n + 1")  # cannot happen
    # views: the untouched tail of each buffer was never paged in
    bounds = bounds[:segs + 1] if segs else np.zeros(1, np.int64)
    return (bounds[:-1], bounds[1:], seg_cat[:segs], seg_pos[:segs], resolved,
            int(non_nested[0]))


def _sweep_arrays(starts: np.ndarray, ends: np.ndarray, own: np.ndarray, subtree: np.ndarray,
                  w0: int, w1: int, untraced: int, other: int):
    """The loop sweep's result computed with array operations, for any overlaps.

    Slices are sorted by start, longest first. The loop's parent of a slice is the last
    earlier slice still open at its start, and the owner of an instant is the open slice
    that started last. When slices nest properly, the depth of slice i is how many
    earlier slices are still open at its start and its parent is the last earlier slice
    one level up (``_levels``; checked: every slice ends within that parent).

    When some slice outlives its parent (a known profiler corruption, thousands of times
    in real ``with_stack`` traces), ``_tree`` finds the loop's parents exactly instead,
    and raises each slice's end to the latest end in its subtree. In the loop's tree a
    slice's descendants are the slices right after it in sweep order, as long as each
    starts while the subtree is still open; so the raised spans nest properly, with the
    same parent for every slice and the same owner for every instant (a raised slice
    covers no instant that one of its later descendants does not). Overhanging slices
    are counted (``non_nested``) against their own ends, as the loop counts them.

    Categories resolve level by level. The owner (the deepest open slice) only changes
    at a boundary. At a time where slices start, it is the last of them. At a time where
    slices only end, it is the parent of the outermost of them (the first in sweep
    order): nesting means every other open slice there is one of its ancestors. So the
    owner of each piece comes from the boundaries' own entries, one merge of three
    sorted lists, no search. Same answers as the loop: tests compare both on nested
    trees, on trees with overhanging slices and on random overlapping sets.
    """
    n = starts.size
    if n == 0:
        return None
    idx = np.int32 if n < 2**31 - 1 else np.int64
    by_end, sorted_ends, by_depth, level_bounds, parent = _levels(starts, ends, idx)
    non_nested = 0
    deep = by_depth[level_bounds[1]:]
    nested = not (ends[deep] > ends[parent[deep]]).any()
    del deep
    resolved = None
    if nested and level_bounds.size - 2 <= LEVEL_LOOP_MAX_DEPTH:
        resolved = _resolve_by_level(parent, own, subtree, by_depth, level_bounds, other)
    if not nested:  # the loop's tree, and ends raised so that it nests
        del by_end, sorted_ends
        parent, ends, non_nested = _tree(starts, ends, parent, by_depth, level_bounds, idx)
        by_end = np.argsort(ends, kind="stable").astype(idx, copy=False)
        sorted_ends = ends[by_end]
    del by_depth, level_bounds
    if resolved is None:
        resolved = _resolve_by_ancestor(parent, own, subtree, other)
    del ends  # (the raised copy, when slices overlap)
    # each boundary's owner (n: untraced), then one merge of the three sorted lists
    last_start = np.flatnonzero(np.append(starts[1:] != starts[:-1], True)).astype(idx)
    first_end = np.flatnonzero(np.append(True, sorted_ends[1:] != sorted_ends[:-1]))
    end_owner = parent[by_end[first_end]]
    end_owner[end_owner < 0] = n
    end_t = np.concatenate(([w0], sorted_ends[first_end]))
    end_o = np.concatenate((np.asarray([n], idx), end_owner))
    start_t = starts[last_start]
    del by_end, sorted_ends, first_end, end_owner, parent
    # merge the two sorted lists (each without repeats); where an end and a start share
    # a time the start's owner holds from there, so that end is dropped first
    at_end = np.searchsorted(start_t, end_t, side="left")  # starts before each end
    shadowed = at_end < start_t.size
    shadowed[shadowed] = start_t[at_end[shadowed]] == end_t[shadowed]
    if shadowed.any():
        live = ~shadowed
        end_t, end_o, at_end = end_t[live], end_o[live], at_end[live]
        del live
    del shadowed
    at_start = np.searchsorted(end_t, start_t, side="right")  # ends at or before each start
    _add_positions(at_end)
    _add_positions(at_start)
    times = np.empty(end_t.size + start_t.size, np.int64)
    times[at_end] = end_t
    times[at_start] = start_t
    del end_t, start_t
    owners = np.empty(times.size, idx)
    owners[at_end] = end_o
    owners[at_start] = last_start
    del at_end, at_start, end_o, last_start
    stop = int(np.searchsorted(times, w1, side="left"))  # an end at w1 starts nothing
    times, owners = times[:stop], owners[:stop]
    change = np.append(True, owners[1:] != owners[:-1])  # maximal runs of one owner
    # segments are contiguous: starts and ends are two views of one array of bounds
    bounds = np.empty(int(change.sum()) + 1, np.int64)
    bounds[:-1] = times[change]
    bounds[-1] = w1
    seg_start, seg_end = bounds[:-1], bounds[1:]
    owner = owners[change]
    del times, owners, change
    untraced_seg = owner == n
    owner[untraced_seg] = n - 1
    seg_cat = resolved[owner]
    seg_cat[untraced_seg] = untraced
    owner[untraced_seg] = -1
    seg_pos = owner
    return seg_start, seg_end, seg_cat, seg_pos, resolved, non_nested


def _add_positions(at: np.ndarray) -> None:
    """``at += arange(at.size)`` (an entry's place in a merge: the other list's entries
    before it plus its own list's), a block at a time: no row-sized temporary."""
    block = 1 << 18
    for lo in range(0, at.size, block):
        hi = min(at.size, lo + block)
        at[lo:hi] += np.arange(lo, hi)


def _resolve_by_level(parent, own, subtree, by_depth, level_bounds, other) -> np.ndarray:
    """Each slice's category, one depth level at a time (the loop's rule: a ``subtree``
    slice forces its own category on its subtree, a forced category wins, ``inherit``
    takes the parent's, the top level inherits ``other``)."""
    n = parent.size
    resolved = np.empty(n, np.int32)
    forced = np.full(n, -1, np.int32)
    for d in range(level_bounds.size - 1):
        lv = by_depth[level_bounds[d]:level_bounds[d + 1]]
        oc, sub = own[lv], subtree[lv]
        if d == 0:
            fp = np.full(lv.size, -1, np.int32)
            cp = np.full(lv.size, other, np.int32)
        else:
            p = parent[lv]
            fp, cp = forced[p], resolved[p]
        resolved[lv] = np.where(sub, oc, np.where(fp != -1, fp, np.where(oc == -1, cp, oc)))
        forced[lv] = np.where(sub, oc, fp)
    return resolved


def _resolve_by_ancestor(parent, own, subtree, other) -> np.ndarray:
    """The same categories without a pass per depth level (overhanging slices can make
    the loop's tree thousands of levels deep), from two nearest ancestors.

    Unrolling the level rule: a ``subtree`` slice takes its own category; otherwise the
    nearest ``subtree`` ancestor's category, when it names one; otherwise the category
    of the nearest ancestor-or-self that names one or is a ``subtree`` slice (which may
    be ``inherit`` itself, as in the level rule); with none, ``other``. Both nearest
    ancestors are found by pointer jumping up ``parent`` (the loop's tree) over the
    slices that do not qualify; those chains are short (builtins, helpers), and a chain
    of length L takes log2(L) rounds.
    """
    n = parent.size
    marked = subtree | (own != -1)
    near = _nearest(np.where(marked, np.arange(n, dtype=parent.dtype), parent), marked)
    named = np.where(near >= 0, own[np.maximum(near, 0)], other)
    del near, marked
    if subtree.any():  # the nearest subtree ancestor (for the slices that are not one)
        head = _nearest(np.where(subtree, -1, parent).astype(parent.dtype, copy=False), subtree)
        forced = np.where(head >= 0, own[np.maximum(head, 0)], -1)
        named = np.where(forced != -1, forced, named)
    return np.where(subtree, own, named).astype(np.int32, copy=False)


def _nearest(start: np.ndarray, marked: np.ndarray) -> np.ndarray:
    """From each slice's ``start`` (its parent, or itself; -1: none), the first
    ``marked`` slice up the tree (-1: none). Pointer jumping: a slice's candidate has
    only unmarked slices between, so an unmarked candidate is replaced by its own
    candidate until it is marked or past the root."""
    near = start.copy()
    todo = np.flatnonzero(near >= 0)
    while todo.size:
        c = near[todo]
        todo = todo[~marked[c]]
        near[todo] = near[near[todo]]
        todo = todo[near[todo] >= 0]
    return near


def _levels(starts: np.ndarray, ends: np.ndarray, idx):
    """Depth levels and parents, as if the slices nested properly.

    The depth of slice i is how many earlier slices are still open at its start (all
    later ones start after it); the parent is the last earlier slice one level up. The
    depths step up by at most one from a slice to the next, so that parent always
    exists. Returns the slices by end (and those ends), the slices by depth (stably:
    by position within a level) with each level's bounds, and the parents (-1: none).
    """
    n = starts.size
    by_end = np.argsort(ends, kind="stable").astype(idx, copy=False)
    sorted_ends = ends[by_end]
    depth = np.arange(n, dtype=np.int64)
    depth -= np.searchsorted(sorted_ends, starts, side="right")
    max_depth = int(depth.max())
    narrow = depth.astype(np.int16) if max_depth < 2**15 else depth
    by_depth = np.argsort(narrow, kind="stable").astype(idx, copy=False)  # radix sort
    level_bounds = np.searchsorted(narrow[by_depth], np.arange(max_depth + 2))
    del narrow
    parent = np.full(n, -1, idx)
    if level_bounds.size > 2:
        key = depth[by_depth]
        del depth
        key *= n + 1
        key += by_depth  # sorted: by depth, then position
        query = key[level_bounds[1]:] - (n + 1)  # one level up, same position
        pos = np.searchsorted(key, query)
        del key, query
        pos -= 1
        parent[by_depth[level_bounds[1]:]] = by_depth[pos]
    return by_end, sorted_ends, by_depth, level_bounds, parent


def _tree(starts: np.ndarray, ends: np.ndarray, guess: np.ndarray, by_depth: np.ndarray,
          level_bounds: np.ndarray, idx) -> tuple[np.ndarray, np.ndarray, int]:
    """The loop sweep's parents (the last earlier slice open at each start), the ends
    raised to the latest end in each subtree, and how many slices outlive their parent.

    ``guess`` is ``_levels``' tree. A guessed parent is the loop's when it is open at the
    slice's start and every slice between them has ended by then; those between are the
    subtrees of the slice's earlier siblings (in the guessed tree), so it is enough that
    each earlier sibling's subtree ended before the next sibling started. Slices that
    pass start the search at their guess, the others at the slice just before them
    (``_open_parents``); away from overhanging slices nearly every guess passes.
    """
    n = starts.size
    latest = ends.copy()  # the latest end in each guessed subtree
    for d in range(level_bounds.size - 2, 0, -1):
        lv = by_depth[level_bounds[d]:level_bounds[d + 1]]
        np.maximum.at(latest, guess[lv], latest[lv])
    # walk each level in position order: the previous entry is the previous sibling
    # when it comes after the parent
    pos = by_depth
    prev = np.empty(n, idx)
    prev[1:] = pos[:-1]
    prev[level_bounds[:-1]] = -1  # the first of each level has no earlier one
    sibling = (prev >= 0) & (prev > guess[pos])
    ended = ~sibling | (latest[np.maximum(prev, 0)] <= starts[pos])
    del latest, prev
    # a sibling's check counts only while every earlier sibling passed too
    fails = np.cumsum(~ended, dtype=idx)
    first = np.flatnonzero(~sibling).astype(idx)  # each run of siblings: a first child
    run_start = np.repeat(first, np.diff(np.append(first, n)))
    trusted = fails == fails[run_start]  # a first child passes: no failure since
    del fails, first, run_start, ended, sibling
    start_at = np.arange(-1, n - 1, dtype=idx)
    good = pos[trusted]
    start_at[good] = guess[good]
    del good, trusted
    parent = _open_parents(starts, ends, idx, start_at)
    overhang = np.flatnonzero((parent >= 0) & (ends > ends[np.maximum(parent, 0)]))
    raised = _subtree_ends(ends, parent, overhang) if overhang.size else ends
    return parent, raised, int(overhang.size)


def _open_parents(starts: np.ndarray, ends: np.ndarray, idx,
                  start_at: np.ndarray | None = None) -> np.ndarray:
    """For each slice (in sweep order), the last earlier slice still open at its start;
    -1 where none is. The loop sweep's parent, for any overlaps, nested or not.

    Pointer jumping: each slice ``j`` holds a candidate ``cur[j]`` such that every slice
    strictly between it and ``j`` is known to have ended by ``starts[j]`` (``start_at``,
    which becomes the working array; by default the slice just before). If the candidate is open there, it is the
    parent. If not, ``j`` moves to the candidate's own candidate (its parent, once
    known): everything between those ended by the candidate's start, so by ``j``'s too.
    """
    n = starts.size
    parent = np.full(n, -1, idx)
    cur = np.arange(-1, n - 1, dtype=idx) if start_at is None else start_at
    active = np.arange(1, n, dtype=idx)
    if start_at is not None:
        active = active[cur[1:] != -1]  # a trusted -1: no earlier slice is open
    while active.size:
        c = cur[active]
        found = c >= 0
        found[found] = ends[c[found]] > starts[active[found]]
        done = found | (c < 0)
        parent[active[found]] = c[found]
        settled = active[done]
        cur[settled] = parent[settled]
        keep = ~done
        active = active[keep]
        cur[active] = cur[c[keep]]
    return parent


def _subtree_ends(ends: np.ndarray, parent: np.ndarray, overhang: np.ndarray) -> np.ndarray:
    """Each slice's end raised to the latest end in its subtree (the loop's tree).

    A slice that outlives its parent (``overhang``) pushes its end up the chain of
    ancestors, as far as it is later than theirs; only the few rows that change move.
    """
    out = ends.copy()
    frontier = overhang
    while frontier.size:
        up = parent[frontier]
        np.maximum.at(out, up, out[frontier])
        up = np.unique(up)
        grand = parent[up]
        frontier = up[(grand >= 0) & (out[up] > out[np.maximum(grand, 0)])]
    return out


@dataclass(frozen=True)
class FunctionStat:
    name: str
    category: str
    self_ns: int
    total_ns: int  # union of the function's intervals (recursion counted once)
    count: int


def hot_functions(trace: Trace, timeline: HostTimeline) -> list[FunctionStat]:
    """Host functions (Python frames, ops, API calls) by self time, biggest first.

    Grouped by name with array operations: the swept rows are in start order, so after
    a stable sort by name each group is too, and the union of a group's intervals is a
    running maximum of ends that restarts at each group (made to restart by offsetting
    each group's times past the previous group's; the per-group loop is kept for
    windows too long for that offset). Groups are runs of rows, so their sums are
    ``np.add.reduceat``; the arrays of one row each are made in place, few at a time
    (this was the run's peak memory on big traces).
    """
    rows = timeline.rows
    n = rows.size
    if n == 0:
        return []
    s = trace.slices
    names = s.name[rows]
    narrow = names.astype(np.uint16) if len(trace.names) <= 1 << 16 else names
    order = np.argsort(narrow, kind="stable")  # a radix sort for up to 65536 names
    del narrow
    if n < 2**31:
        order = order.astype(np.int32)
    names = names[order]
    first = np.flatnonzero(np.append(True, names[1:] != names[:-1]))
    codes = names[first]
    del names
    count = np.diff(np.append(first, n))
    group = np.repeat(np.arange(first.size, dtype=np.int32 if first.size < 2**31 else np.int64),
                      count)
    own_ns = timeline.self_ns[order]
    self_ns = np.add.reduceat(own_ns, first)
    # the category holding most of the function's self time (+1 each: a tie-break that
    # still names a category for functions with no self time)
    ncat = len(timeline.categories)
    own_ns += 1
    key = np.multiply(group, ncat, dtype=np.int64)
    key += timeline.row_cat[order]
    by_cat = intervals.sum_by(key, own_ns, first.size * ncat)
    del key, own_ns
    category = np.argmax(by_cat.reshape(first.size, ncat), axis=1)
    # union of each function's intervals, times relative to the window's start
    w0, w1 = int(timeline.seg_start[0]), int(timeline.seg_end[-1])
    by_name = rows[order]
    del order
    starts = s.start[by_name]
    np.maximum(starts, w0, out=starts)
    starts -= w0
    ends = s.end[by_name]
    np.minimum(ends, w1, out=ends)
    ends -= w0
    del by_name
    span = w1 - w0 + 1
    if first.size * span < UNION_OFFSET_LIMIT:
        # run = the running maximum of ends offset by group * span; before each row,
        # its group's latest end so far (< 0 at a group's first row)
        run = np.multiply(group, span, dtype=np.int64)
        run += ends
        np.maximum.accumulate(run, out=run)
        prev = np.multiply(group[1:], span, dtype=np.int64)
        np.subtract(run[:-1], prev, out=prev)
        del run
        np.maximum(starts[1:], prev, out=starts[1:])  # row 0 starts at >= 0 > -1
        del prev
        np.subtract(ends, starts, out=starts)  # the part of each row not yet covered
        np.maximum(starts, 0, out=starts)
        total = np.add.reduceat(starts, first)
    else:
        total = np.asarray([intervals.length(intervals.union(starts[a:b], ends[a:b]))
                            for a, b in zip(first.tolist(), (first + count).tolist(),
                                            strict=True)], np.int64)
    out = [FunctionStat(trace.names[c], timeline.categories[k], sn, tn, cnt)
           for c, k, sn, tn, cnt in zip(codes.tolist(), category.tolist(), self_ns.tolist(),
                                        total.tolist(), count.tolist(), strict=True)]
    out.sort(key=lambda f: (-f.self_ns, -f.total_ns, f.name))
    return out
