"""Host functions by self time: the swept rows grouped by name, each group's self time,
main category and the union of its intervals (recursion counted once)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traceview import intervals
from traceview.analyses.host import HostTimeline
from traceview.model import Trace

# hot_functions offsets each function's times past the previous one's: only while that
# stays within int64 (functions x window length); otherwise it unions one by one
UNION_OFFSET_LIMIT = 2**62


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
