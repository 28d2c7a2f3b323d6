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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traceview import intervals
from traceview.analyses.window import Window
from traceview.model import DEVICE_CATS, Lane, Trace
from traceview.rules import INHERIT, OTHER, UNTRACED, RuleSet

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
    seg_owner: np.ndarray  # slice row owning the segment, -1 for untraced
    rows: np.ndarray  # slice rows swept (clipped to the window)
    row_cat: np.ndarray  # resolved category code per swept row (aligned with rows)
    self_ns: np.ndarray  # owned ns per swept row (aligned with rows)
    non_nested: int  # slices that overlapped their parent without nesting

    def totals(self) -> dict[str, int]:
        ns = intervals.sum_by(self.seg_cat, self.seg_end - self.seg_start, len(self.categories))
        return dict(zip(self.categories, ns.tolist()))

    def category_set(self, category: str) -> intervals.Set:
        code = self.categories.index(category)
        m = self.seg_cat == code
        return self.seg_start[m], self.seg_end[m]


def category_ids(rules: RuleSet) -> list[str]:
    ids = [c for c in rules.categories if c not in (UNTRACED, OTHER)]
    return ids + [OTHER, UNTRACED]


def host_rows(trace: Trace, lane: Lane, window: Window) -> np.ndarray:
    """Rows of the thread's own slices plus overlaid profiler overhead, in the window."""
    s = trace.slices
    label = [i for i, c in enumerate(trace.cat_names) if c in LABEL_CATS]
    overlay = [i for i, c in enumerate(trace.cat_names) if c in OVERLAY_CATS]
    own = (s.lane == lane.index) & ~np.isin(s.cat, label)
    m = own | np.isin(s.cat, overlay)
    m &= (s.end > window.start_ns) & (s.start < window.end_ns) & (s.end > s.start)
    return np.flatnonzero(m)


def _classify_rows(trace: Trace, rows: np.ndarray, rules: RuleSet, code: dict[str, int],
                   other: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's own rule result: (category code or -1 for inherit, sticks to subtree).

    Classified once per distinct (category, name) pair, then spread over the rows.
    """
    s = trace.slices
    if rows.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, bool)
    pair = s.cat[rows].astype(np.int64) * (len(trace.names) + 1) + s.name[rows]
    uniq, inverse = np.unique(pair, return_inverse=True)
    codes = np.empty(uniq.size, np.int64)
    subtree = np.empty(uniq.size, bool)
    for k, p in enumerate(uniq.tolist()):
        cat, name = divmod(p, len(trace.names) + 1)
        category, sub = rules.classify(trace.cat_names[cat], trace.names[name])
        codes[k] = code.get(category, other) if category != INHERIT else -1
        subtree[k] = sub
    inverse = inverse.ravel()
    return codes[inverse], subtree[inverse]


def attribute_host(trace: Trace, lane: Lane | None, window: Window, rules: RuleSet, *,
                   general: bool = False) -> HostTimeline:
    """Cut the window on ``lane`` into owned segments (``general`` forces the loop sweep,
    which also handles slices that overlap without nesting; tests compare the two)."""
    cats = category_ids(rules)
    code = {c: i for i, c in enumerate(cats)}
    untraced, other = code[UNTRACED], code[OTHER]
    w0, w1 = window.start_ns, window.end_ns
    if lane is None or window.dur_ns <= 0:
        rows = np.zeros(0, np.int64)
    else:
        rows = host_rows(trace, lane, window)
    s = trace.slices
    starts = np.maximum(s.start[rows], w0)
    ends = np.minimum(s.end[rows], w1)
    # start, then longest first; identical spans ordered by content, not file order
    order = np.lexsort((trace.name_rank[s.name[rows]], trace.cat_rank[s.cat[rows]], -ends, starts))
    rows, starts, ends = rows[order], starts[order], ends[order]

    own_code, own_subtree = _classify_rows(trace, rows, rules, code, other)
    fast = None if general else _sweep_nested(starts, ends, own_code, own_subtree, w0, w1,
                                              untraced, other)
    if fast is not None:
        seg_start, seg_end, seg_cat, seg_pos, row_cat = fast
        return _timeline(lane, cats, rows, seg_start, seg_end, seg_cat, seg_pos, row_cat, 0)
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
                                    own_code.tolist(), own_subtree.tolist()):
        # the time up to this start belongs to the open slice that started last
        while t < st:
            while stack and stack[-1][0] <= t:
                pop()
            if not stack:
                add_s(t), add_e(st), add_c(untraced), add_o(-1)
                t = st
                break
            top = stack[-1]
            end = top[0] if top[0] < st else st
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
        end = top[0] if top[0] < w1 else w1
        add_s(t), add_e(end), add_c(top[2]), add_o(top[1])
        t = end
    row_cat[:] = resolved_list
    return _timeline(lane, cats, rows, np.asarray(seg_s, np.int64), np.asarray(seg_e, np.int64),
                     np.asarray(seg_c, np.int32), np.asarray(seg_o, np.int64), row_cat, non_nested)


def _timeline(lane, cats, rows, seg_start, seg_end, seg_cat, seg_pos, row_cat,
              non_nested) -> HostTimeline:
    owned = seg_pos >= 0
    self_ns = intervals.sum_by(seg_pos[owned], (seg_end - seg_start)[owned], rows.size)
    seg_owner = np.where(owned, rows[np.maximum(seg_pos, 0)] if rows.size else -1, -1)
    return HostTimeline(
        lane=lane, categories=cats, seg_start=seg_start, seg_end=seg_end,
        seg_cat=seg_cat.astype(np.int32), seg_owner=seg_owner.astype(np.int64),
        rows=rows, row_cat=row_cat.astype(np.int32), self_ns=self_ns, non_nested=non_nested,
    )


def _sweep_nested(starts: np.ndarray, ends: np.ndarray, own: np.ndarray, subtree: np.ndarray,
                  w0: int, w1: int, untraced: int, other: int):
    """The sweep's result computed with array operations, when slices nest properly.

    Slices are sorted by start, longest first. Then the depth of slice i is how many
    earlier slices are still open at its start; its parent is the last earlier slice one
    level up; and the slices nest properly exactly when every slice ends within its
    parent (checked; otherwise ``None`` and the caller runs the general sweep). Categories
    resolve level by level. The owner of each piece between consecutive boundaries is the
    last slice started by then, climbed up its ancestors (binary lifting) until one is
    still open. Same answers as the loop: tests compare both.
    """
    n = starts.size
    if n == 0:
        return None
    depth = np.arange(n) - np.searchsorted(np.sort(ends), starts, side="right")
    key = depth * (n + 1) + np.arange(n)
    by_key = np.argsort(key, kind="stable")
    sorted_key = key[by_key]
    parent = np.full(n, -1, np.int64)
    deep = np.flatnonzero(depth > 0)
    if deep.size:
        pos = np.searchsorted(sorted_key, (depth[deep] - 1) * (n + 1) + deep) - 1
        cand = by_key[np.maximum(pos, 0)]
        if (pos < 0).any() or (depth[cand] != depth[deep] - 1).any():
            return None
        if (ends[deep] > ends[cand]).any():
            return None  # a slice outlives its parent: not nested
        parent[deep] = cand
    # categories, one depth level at a time
    resolved = np.empty(n, np.int64)
    forced = np.full(n, -1, np.int64)
    level_bounds = np.searchsorted(depth[by_key], np.arange(int(depth.max()) + 2))
    for d in range(int(depth.max()) + 1):
        idx = by_key[level_bounds[d]:level_bounds[d + 1]]
        oc, sub = own[idx], subtree[idx]
        if d == 0:
            fp = np.full(idx.size, -1, np.int64)
            cp = np.full(idx.size, other, np.int64)
        else:
            p = parent[idx]
            fp, cp = forced[p], resolved[p]
        resolved[idx] = np.where(sub, oc, np.where(fp != -1, fp, np.where(oc == -1, cp, oc)))
        forced[idx] = np.where(sub, oc, fp)
    # owners of the pieces between boundaries
    bounds = np.sort(np.concatenate([starts, ends, [w0, w1]]))
    bounds = bounds[np.append(True, bounds[1:] != bounds[:-1])]  # (np.unique hashes: slower)
    bounds = bounds[(bounds >= w0) & (bounds <= w1)]
    left = bounds[:-1]
    c = np.searchsorted(starts, left, side="right") - 1
    big = np.iinfo(np.int64).max
    ends_x = np.append(ends, big)  # index n: "no slice", never ends
    up = [np.append(np.where(parent < 0, n, parent), n)]
    for _ in range(int(depth.max()).bit_length()):
        up.append(up[-1][up[-1]])
    c = np.where(c < 0, n, c)
    climb = np.flatnonzero(ends_x[c] <= left)  # the last slice started is already over
    if climb.size:
        cc, at = c[climb], left[climb]
        for table in reversed(up):
            cand = table[cc]
            cc = np.where(ends_x[cand] <= at, cand, cc)
        c[climb] = up[0][cc]
    del up, climb, depth, key, by_key, sorted_key, forced
    # maximal runs of one owner
    change = np.ones(left.size, bool)
    change[1:] = c[1:] != c[:-1]
    run = np.flatnonzero(change)
    seg_start = left[run]
    seg_end = np.append(left[run[1:]], bounds[-1])
    owner = c[run]
    seg_pos = np.where(owner == n, -1, owner)
    seg_cat = np.where(owner == n, untraced, resolved[np.minimum(owner, n - 1)])
    return seg_start, seg_end, seg_cat, seg_pos, resolved


@dataclass(frozen=True)
class FunctionStat:
    name: str
    category: str
    self_ns: int
    total_ns: int  # union of the function's intervals (recursion counted once)
    count: int


def hot_functions(trace: Trace, timeline: HostTimeline) -> list[FunctionStat]:
    """Host functions (Python frames, ops, API calls) by self time, biggest first."""
    if timeline.rows.size == 0:
        return []
    s = trace.slices
    names = s.name[timeline.rows]
    w0, w1 = int(timeline.seg_start[0]), int(timeline.seg_end[-1])
    starts = np.maximum(s.start[timeline.rows], w0)
    ends = np.minimum(s.end[timeline.rows], w1)
    order = np.argsort(names, kind="stable")
    names_sorted = names[order]
    bounds = np.flatnonzero(np.diff(names_sorted)) + 1
    groups = np.split(order, bounds)
    out = []
    for g in groups:
        code = int(names[g[0]])
        self_ns = int(timeline.self_ns[g].sum())
        total = intervals.length(intervals.union(starts[g], ends[g]))
        cats = intervals.sum_by(timeline.row_cat[g], timeline.self_ns[g] + 1,
                                len(timeline.categories))
        category = timeline.categories[int(np.argmax(cats))]
        out.append(FunctionStat(trace.names[code], category, self_ns, total, int(g.size)))
    out.sort(key=lambda f: (-f.self_ns, -f.total_ns, f.name))
    return out
