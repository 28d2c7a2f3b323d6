"""Host functions by self time: the swept rows grouped by name, each group's self time,
main category and the union of its intervals (recursion counted once)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traceview import intervals
from traceview.analyses.host import LABEL_CATS, HostTimeline
from traceview.model import Trace

# hot_functions offsets each function's times past the previous one's: only while that
# stays within int64 (functions x window length); otherwise it unions one by one
UNION_OFFSET_LIMIT = 2**62
# rows taken at a time (a few MB per temporary array)
BLOCK = 1 << 18
# rows grouped by function at a time for the unions (tens of MB)
UNION_BATCH = 1 << 22


@dataclass(frozen=True)
class FunctionStat:
    name: str
    category: str
    self_ns: int
    total_ns: int  # union of the function's intervals (recursion counted once)
    count: int


def hot_functions(trace: Trace, timeline: HostTimeline,
                  zero_rows: np.ndarray | None = None) -> list[FunctionStat]:
    """Host functions (Python frames, ops, API calls) by self time, biggest first.

    Grouped by name with array operations: taken in groups' order (each group's rows in
    start order), the union of a group's intervals is a running maximum of ends that
    restarts at each group (made to restart by offsetting each group's times past the
    previous group's; the per-group loop is kept for windows too long for that offset).
    The rows are grouped ``UNION_BATCH`` at a time (the groups of a batch picked from the
    timeline's rows a block at a time) and swept ``BLOCK`` at a time (the running maximum
    carried from one block and batch to the next), and the self times are summed over
    the timeline's segments a block at a time: no column of every row exists besides the
    timeline's own. On a cold compile's tens of millions of frames, each row-sized column
    made here (the names, their order) was explain's peak memory.
    """
    rows = timeline.rows
    n = rows.size
    if n == 0:
        return []
    zero = _zero_length(trace, timeline, zero_rows)
    s = trace.slices
    # the rows of each name, counted a block at a time (no column of every row's name)
    per_code = np.zeros(len(trace.names), np.int64)
    for lo in range(0, n, BLOCK):
        per_code += np.bincount(s.name[rows[lo:lo + BLOCK]], minlength=len(trace.names))
    codes = np.flatnonzero(per_code)
    count = per_code[codes]
    del per_code
    ngroups = codes.size
    ncat = len(timeline.categories)
    w0, w1 = int(timeline.seg_start[0]), int(timeline.seg_end[-1])
    span = w1 - w0 + 1
    offset = ngroups * span < UNION_OFFSET_LIMIT
    # name code -> its group (the groups are the present codes, in code order)
    group_of = np.full(len(trace.names), -1, np.int32)
    group_of[codes] = np.arange(ngroups, dtype=np.int32)
    self_ns, by_cat = _self_by_group(s, timeline, group_of, ngroups, ncat)
    total = np.zeros(ngroups, np.int64)
    carry = -1  # the running maximum of offset ends before the block (row 0: none)
    for g0, g1 in _batches(count) if offset else ():
        # the batch's rows, grouped (each group's rows stay in start order)
        picked = _batch_rows(s, rows, group_of, count, g0, g1)
        first = np.cumsum(count[g0:g1]) - count[g0:g1]  # where each group starts in it
        for lo in range(0, picked.size, BLOCK):
            block = picked[lo:lo + BLOCK]
            # each row's group (offset by group * span below: int64)
            gb = np.searchsorted(first, np.arange(lo, lo + block.size), side="right") - 1 + g0
            heads = np.flatnonzero(np.append(True, gb[1:] != gb[:-1]))
            covered, carry = _block_union(s, block, gb, heads, w0, w1, span, carry)
            total[gb[heads]] += covered
        del picked
    category = np.argmax(by_cat.reshape(ngroups, ncat), axis=1)
    if not offset:
        total = _union_per_function(s, rows, np.cumsum(count) - count, count, w0, w1)
    out = [FunctionStat(trace.names[c], timeline.categories[k], sn, tn,
                        cnt + zero.pop(c, (0, 0))[0])
           for c, k, sn, tn, cnt in zip(codes.tolist(), category.tolist(), self_ns.tolist(),
                                        total.tolist(), count.tolist(), strict=True)]
    # functions recorded only as zero-length slices (calls under the profiler's 1 us
    # resolution): they ran, so they are in the list, with no time
    out += [FunctionStat(trace.names[c], timeline.categories[k], 0, 0, cnt)
            for c, (cnt, k) in zero.items()]
    out.sort(key=lambda f: (-f.self_ns, -f.total_ns, f.name))
    return out


def zero_length_rows(trace: Trace) -> np.ndarray:
    """Every zero-length slice of a function category (not a label: ranges, device
    work), on any lane: found once for all the threads ``thread_functions`` reads."""
    s = trace.slices
    function_cats = np.ones(len(trace.cat_names) + 1, bool)
    function_cats[[i for i, c in enumerate(trace.cat_names) if c in LABEL_CATS]] = False
    found = []
    for lo in range(0, s.start.size, UNION_BATCH):  # no column of every row at once
        hit = np.flatnonzero(s.start[lo:lo + UNION_BATCH] == s.end[lo:lo + UNION_BATCH])
        found.append(hit[function_cats[s.cat[lo + hit]]] + lo)
    return np.concatenate(found) if found else np.zeros(0, np.int64)


def thread_functions(trace: Trace, timeline: HostTimeline, zero_rows: np.ndarray
                     ) -> list[tuple[str, int, int]]:
    """(name, self ns, count) of each function a thread other than the calls' ran in the
    window, by self time, biggest first: what ``diff`` needs to know a function is in the
    trace at all when it runs on another thread. No union per function (``hot_functions``'
    costliest part): the self times and counts are one pass over the thread's rows and
    segments; the zero-length calls among ``zero_rows`` (``zero_length_rows``) on this
    thread inside the window count as they do for the calls' thread."""
    rows = timeline.rows
    s = trace.slices
    per_code = np.zeros(len(trace.names), np.int64)
    for lo in range(0, rows.size, BLOCK):
        per_code += np.bincount(s.name[rows[lo:lo + BLOCK]], minlength=len(trace.names))
    codes = np.flatnonzero(per_code)
    group_of = np.full(len(trace.names), -1, np.int32)
    group_of[codes] = np.arange(codes.size, dtype=np.int32)
    self_ns = (_self_by_group(s, timeline, group_of, codes.size, len(timeline.categories))[0]
               if codes.size else np.zeros(0, np.int64))
    found = {c: (sn, cnt) for c, sn, cnt in zip(codes.tolist(), self_ns.tolist(),
                                                 per_code[codes].tolist(), strict=True)}
    zero = _on_thread(trace, timeline, zero_rows)
    for c, cnt in zip(*np.unique(s.name[zero], return_counts=True), strict=True):
        sn, had = found.get(int(c), (0, 0))
        found[int(c)] = (sn, had + int(cnt))
    out = [(trace.names[c], sn, cnt) for c, (sn, cnt) in found.items()]
    out.sort(key=lambda f: (-f[1], -f[2], f[0]))
    return out


def _on_thread(trace: Trace, timeline: HostTimeline, zero_rows: np.ndarray) -> np.ndarray:
    """The rows of ``zero_rows`` on the timeline's thread inside its window."""
    lane = timeline.lane
    if lane is None or timeline.seg_start.size == 0 or zero_rows.size == 0:
        return zero_rows[:0]
    s = trace.slices
    w0, w1 = int(timeline.seg_start[0]), int(timeline.seg_end[-1])
    st = s.start[zero_rows]
    return zero_rows[(s.lane[zero_rows] == lane.index) & (st >= w0) & (st < w1)]


def _zero_length(trace: Trace, timeline: HostTimeline, zero_rows: np.ndarray | None
                 ) -> dict[int, tuple[int, int]]:
    """name code -> (count, category code) of the thread's zero-length slices in the
    window (``zero_length_rows``, found here where not given), which the timeline does
    not sweep (they own no instant). Each takes the category of the instant it was
    recorded at: the slice around it (its parent) owns that instant, and a child without
    time of its own inherits its parent's category, as the sweep resolves ``inherit``
    rules."""
    if timeline.lane is None or timeline.seg_start.size == 0:
        return {}
    s = trace.slices
    rows = _on_thread(trace, timeline,
                      zero_length_rows(trace) if zero_rows is None else zero_rows)
    if rows.size == 0:
        return {}
    seg = np.searchsorted(np.asarray(timeline.seg_start), s.start[rows], side="right") - 1
    cats = np.asarray(timeline.seg_cat[np.maximum(seg, 0)], np.int64)
    out: dict[int, tuple[int, int]] = {}
    for code, cat in zip(s.name[rows].tolist(), cats.tolist(), strict=True):
        cnt, k = out.get(code, (0, cat))
        out[code] = (cnt + 1, k)
    return out


def _self_by_group(s, timeline: HostTimeline, group_of: np.ndarray, ngroups: int,
                   ncat: int) -> tuple[np.ndarray, np.ndarray]:
    """Each function's self time, and per (function, category) its rows' self time plus
    their count (the count: a tie-break that still names a category for a function
    with no self time). Summed over the segments, each owned by a row, a block at a
    time: no per-row column of self times is made (``HostTimeline.self_ns``)."""
    rows = timeline.rows
    counts = np.zeros(ngroups * ncat, np.int64)
    for lo in range(0, rows.size, BLOCK):  # the count of each (function, category)
        key = group_of[s.name[rows[lo:lo + BLOCK]]].astype(np.int64)
        key *= ncat
        key += timeline.row_cat[lo:lo + BLOCK]
        counts += np.bincount(key, minlength=ngroups * ncat)
    owned_ns = np.zeros(ngroups * ncat, np.int64)
    for lo in range(0, timeline.seg_pos.size, BLOCK):  # the self time of each
        pos = timeline.seg_pos[lo:lo + BLOCK]
        owned = np.flatnonzero(pos >= 0)
        pos = pos[owned]
        lens = (timeline.seg_end[lo:lo + BLOCK] - timeline.seg_start[lo:lo + BLOCK])[owned]
        key = group_of[s.name[rows[pos]]].astype(np.int64)
        key *= ncat
        key += timeline.row_cat[pos]
        owned_ns += intervals.sum_by(key, lens, ngroups * ncat)
    return owned_ns.reshape(ngroups, ncat).sum(axis=1), owned_ns + counts


def _block_union(s, block_rows: np.ndarray, g: np.ndarray, heads: np.ndarray, w0: int, w1: int,
                 span: int, carry: int) -> tuple[np.ndarray, int]:
    """One block's part of each function's union (rows in group order, times relative to
    the window's start), and the running maximum carried to the next block."""
    starts = s.start[block_rows]
    np.maximum(starts, w0, out=starts)
    starts -= w0
    ends = s.end[block_rows]
    np.minimum(ends, w1, out=ends)
    ends -= w0
    # run = the running maximum of ends offset by group * span; before each row,
    # its group's latest end so far (< 0 at a group's first row)
    run = g * span
    run += ends
    run[0] = max(int(run[0]), carry)
    np.maximum.accumulate(run, out=run)
    prev = g * span
    prev[0] = carry - int(prev[0])
    np.subtract(run[:-1], prev[1:], out=prev[1:])
    carry = int(run[-1])
    del run
    np.maximum(starts, prev, out=starts)
    del prev
    np.subtract(ends, starts, out=starts)  # the part of each row not yet covered
    np.maximum(starts, 0, out=starts)
    return np.add.reduceat(starts, heads), carry


def _union_per_function(s, rows: np.ndarray, first: np.ndarray, count: np.ndarray, w0: int,
                        w1: int) -> np.ndarray:
    """Each function's union, one function at a time (windows too long to offset)."""
    names = s.name[rows]
    narrow = names.astype(np.uint16) if names.size and int(names.max()) < 1 << 16 else names
    by_name = rows[np.argsort(narrow, kind="stable")]
    starts = np.maximum(s.start[by_name], w0) - w0
    ends = np.minimum(s.end[by_name], w1) - w0
    return np.asarray([intervals.length(intervals.union(starts[a:b], ends[a:b]))
                       for a, b in zip(first.tolist(), (first + count).tolist(), strict=True)],
                      np.int64)


def _batches(count: np.ndarray) -> list[tuple[int, int]]:
    """The groups cut into runs of consecutive groups holding up to ``UNION_BATCH`` rows
    together (a group holding more: a run of its own)."""
    out = []
    g0, held = 0, 0
    for g, c in enumerate(count.tolist()):
        if held and held + c > UNION_BATCH:
            out.append((g0, g))
            g0, held = g, 0
        held += c
    out.append((g0, count.size))
    return out


def _batch_rows(s, rows: np.ndarray, group_of: np.ndarray, count: np.ndarray, g0: int,
                g1: int) -> np.ndarray:
    """The slice rows of groups ``[g0, g1)`` in group order, each group's in the
    timeline's (start) order: a counting sort of the timeline's rows a block at a time
    (each group's rows go after its rows of earlier blocks), so the batch's own column
    is the only one its size."""
    out = np.empty(int(count[g0:g1].sum()), rows.dtype)
    next_at = np.cumsum(count[g0:g1]) - count[g0:g1]  # where each group's next row goes
    for lo in range(0, rows.size, BLOCK):
        block = rows[lo:lo + BLOCK]
        g = group_of[s.name[block]]
        m = np.flatnonzero((g >= g0) & (g < g1))
        if not m.size:
            continue
        g = g[m] - g0
        o = np.argsort(g, kind="stable")
        sorted_g = g[o]
        first = np.flatnonzero(np.append(True, sorted_g[1:] != sorted_g[:-1]))
        size = np.diff(np.append(first, o.size))
        rank = np.arange(o.size) - np.repeat(first, size)  # among the block's rows of its group
        out[next_at[sorted_g] + rank] = block[m[o]]
        next_at[sorted_g[first]] += size
    return out
