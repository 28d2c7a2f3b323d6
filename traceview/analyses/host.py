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


def attribute_host(trace: Trace, lane: Lane | None, window: Window, rules: RuleSet) -> HostTimeline:
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

    memo: dict[tuple[int, int], tuple[int, bool]] = {}
    cat_codes = s.cat[rows].tolist()
    name_codes = s.name[rows].tolist()
    row_cat = np.empty(rows.size, dtype=np.int32)
    seg_s: list[int] = []
    seg_e: list[int] = []
    seg_c: list[int] = []
    seg_o: list[int] = []
    # stack entries: [end, position in rows, resolved code, forced code or -1]
    stack: list[tuple[int, int, int, int]] = []
    t = w0
    non_nested = 0

    def advance(to: int) -> None:
        nonlocal t
        while t < to:
            while stack and stack[-1][0] <= t:
                stack.pop()
            if not stack:
                seg_s.append(t), seg_e.append(to), seg_c.append(untraced), seg_o.append(-1)
                t = to
                return
            top = stack[-1]
            end = top[0] if top[0] < to else to
            seg_s.append(t), seg_e.append(end), seg_c.append(top[2]), seg_o.append(top[1])
            t = end

    for pos, (st, en) in enumerate(zip(starts.tolist(), ends.tolist())):
        advance(st)
        while stack and stack[-1][0] <= st:
            stack.pop()
        key = (cat_codes[pos], name_codes[pos])
        own = memo.get(key)
        if own is None:
            category, subtree = rules.classify(trace.cat_names[key[0]], trace.names[key[1]])
            own = memo[key] = (code.get(category, other) if category != INHERIT else -1, subtree)
        parent = stack[-1] if stack else None
        forced = parent[3] if parent else -1
        if own[1]:
            forced = resolved = own[0]
        elif forced != -1:
            resolved = forced
        elif own[0] == -1:
            resolved = parent[2] if parent else other
        else:
            resolved = own[0]
        if parent is not None and en > parent[0]:
            non_nested += 1
        row_cat[pos] = resolved
        stack.append((en, pos, resolved, forced))
    advance(w1)

    seg_start = np.asarray(seg_s, np.int64)
    seg_end = np.asarray(seg_e, np.int64)
    seg_pos = np.asarray(seg_o, np.int64)
    owned = seg_pos >= 0
    self_ns = intervals.sum_by(seg_pos[owned], (seg_end - seg_start)[owned], rows.size)
    seg_owner = np.where(owned, rows[np.maximum(seg_pos, 0)] if rows.size else -1, -1)
    return HostTimeline(
        lane=lane, categories=cats, seg_start=seg_start, seg_end=seg_end,
        seg_cat=np.asarray(seg_c, np.int32), seg_owner=seg_owner.astype(np.int64),
        rows=rows, row_cat=row_cat, self_ns=self_ns, non_nested=non_nested,
    )


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
