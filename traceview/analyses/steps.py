"""Training steps: phases, device idle by cause, communication, and the critical path.

A step is a call found from ``ProfilerStep#N`` (or ``--calls``) on the thread that ran
it. Inside a step every instant of that thread's time axis belongs to one **phase**,
from the ordered phase rules of the rule table (``phases`` in
``traceview/data/default_rules.json``, overridable with ``--rules``): data loading
(``enumerate(DataLoader)#...``), forward (the top ``nn.Module:`` frames), backward (the
``backward`` frame on the step's thread, and the envelope of
``autograd::engine::evaluate_function`` work on any thread of its process), optimizer
(``Optimizer.step#...``, ``Optimizer.zero_grad#...``); the first rule that claims an
instant wins, and what no rule claims is ``other``. Without Python frames, forward is
the unclaimed time before backward. Per phase: wall, device busy and idle (the union of
device work across streams inside the phase), and each thread's host categories inside
it (each thread on its own: they overlap in time and are never added).

**Device idle by cause**: each idle gap of the device inside the step is charged to what
the device waited for: the thread that launched the work ending the gap, with that
thread's categories over the gap until the launch call began (the device waited for the
host), then ``launch latency`` (the call was made; the work had not started yet). A gap
with no later work in the step is charged to the step thread's categories. Like HTA's
idle-time breakdown (host wait / kernel wait), but per thread and category.

Where the trace evidently lost events after the profiler wrote it (its CPU events'
numbering skips after many of them: ``integrity.event_numbering``; HTA's trace filter and
sampler leave such traces), the part of a gap after the launch is charged to
``not in the trace`` instead of launch latency: the device may have been busy with, or
waiting behind, work that was removed (on HTA's sampled rank 1 a GEMM launched 98 ms
before a 13 ms gap, during which the trace shows nothing on the device, starts only at
its end), and a reader told "162 ms of launch latency" looks for it in the launch path,
where it is not.

**Communication**: device work whose name matches the rule table's
``communication_kernels`` (NCCL); exposed communication is the part of it during which
no other device work ran.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

from traceview import intervals
from traceview.analyses.critical_path import (
    LAUNCH_LATENCY,
    NOT_SHOWN,
    CriticalPath,
    critical_path,
    host_ranges,
)
from traceview.analyses.host import LABEL_CATS, HostTimeline
from traceview.model import Trace, codes_in
from traceview.rules import UNTRACED, PhaseRule, RuleSet

OTHER_PHASE = "other"
# the part of a step's extent after its range: device work the step launched still running
DEVICE_TAIL = "device_tail"
QUEUED = "queued"
# An ``other`` piece shorter than this share of the step (the instants between two
# ranges) is no segment of its own in ``StepFigures.segments``.
SEGMENT_MIN_SHARE = 0.01


@dataclass(frozen=True)
class PhaseFigures:
    phase: str
    wall_ns: int
    device_busy_ns: int
    device_idle_ns: int
    host: dict[int, dict[str, int]]  # host lane -> category -> ns inside the phase


@dataclass(frozen=True)
class IdleCause:
    lane: int | None  # host lane the device waited for (None: launch latency, not shown)
    what: str  # that thread's category, "launch latency" or "not in the trace"
    ns: int


@dataclass(frozen=True)
class StepFigures:
    index: int  # the call's index
    name: str
    start_ns: int
    end_ns: int  # the extent's end: the range's, or the device work it launched (below)
    cold: bool
    device_busy_ns: int
    phases: tuple[PhaseFigures, ...]  # in the order the step first runs them, then other
    idle_causes: tuple[IdleCause, ...]  # biggest first; sums to the step's device idle
    communication_ns: int
    exposed_communication_ns: int
    path: CriticalPath
    # (phase, start, end) in time order: forward, backward, forward, backward, optimizer
    # for two micro-batches; ``other`` pieces under SEGMENT_MIN_SHARE of the step left out
    segments: tuple[tuple[str, int, int], ...] = ()
    # the recorded range's end; before ``end_ns`` when device work launched inside the
    # range ran on after it (the extent then holds the ``device_tail`` phase)
    range_end_ns: int | None = None


def _join(a: intervals.Set, b: intervals.Set) -> intervals.Set:
    return intervals.union(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))


def _step_thread_work(trace: Trace, lane: int, start: int, end: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The step thread's events inside the step (its own range and other labels left
    out), as (starts, ends) sorted by start: what the thread itself did."""
    s = trace.slices
    labels = [i for i, c in enumerate(trace.cat_names) if c in LABEL_CATS]
    rows = np.flatnonzero((s.lane == lane) & (s.start >= start) & (s.end <= end)
                          & ~codes_in(s.cat, labels, len(trace.cat_names)))
    order = rows[np.argsort(s.start[rows], kind="stable")]
    return s.start[order], s.end[order]


def _envelopes(st: np.ndarray, en: np.ndarray, work: tuple[np.ndarray, np.ndarray]
               ) -> intervals.Set:
    """The envelope of matches on any thread of the step's process, one per run of them:
    a run ends where the step's thread does work of its own wholly between two matches
    (the second micro-batch's forward between two backward passes), so the envelope
    never swallows what the step thread did in between. While the engine's threads run
    backward the step's thread waits inside one call that spans the gaps."""
    u0, u1 = intervals.union(st, en)
    if u0.size <= 1:
        return u0, u1
    w_st, w_en = work
    broken = np.zeros(u0.size - 1, bool)
    lo = np.searchsorted(w_st, u1[:-1], side="left")
    hi = np.searchsorted(w_st, u0[1:], side="left")
    for k in np.flatnonzero(hi > lo).tolist():
        broken[k] = bool((w_en[lo[k]:hi[k]] <= u0[k + 1]).any())
    first = np.concatenate([[True], broken])
    last = np.concatenate([broken, [True]])
    return u0[first], u1[last]


def phase_intervals(trace: Trace, rules: RuleSet, lane: int, start: int, end: int
                    ) -> dict[str, intervals.Set]:
    """Each phase's part of [start, end): disjoint, and with ``other`` they tile it.
    A phase may hold several segments (two micro-batches: forward, backward, forward,
    backward); ``segments`` lists them in time order."""
    s = trace.slices
    in_step = np.flatnonzero((s.end > start) & (s.start < end))
    claimed: intervals.Set = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    out: dict[str, intervals.Set] = {}
    fallback: list[tuple[str, PhaseRule]] = []  # (the phase it comes before, rule)
    names = trace.names
    work: tuple[np.ndarray, np.ndarray] | None = None
    for rule in rules.phases:
        if rule.before is not None:
            fallback.append((rule.before, rule))
            continue
        cats = {i for i, c in enumerate(trace.cat_names) if rule.cats is None or c in rule.cats}
        rows = in_step[np.isin(s.cat[in_step], list(cats))]
        if not rule.any_thread:
            rows = rows[s.lane[rows] == lane]
        else:
            # any thread of the step thread's process: the autograd engine's threads are
            # its own; another process's (a rank fused into the same file) never are
            pid = trace.lanes[lane].pid
            rows = rows[np.isin(s.lane[rows], [ln.index for ln in trace.lanes if ln.pid == pid])]
        if rows.size:  # the pattern once per distinct name
            codes, of_row = np.unique(s.name[rows], return_inverse=True)
            hit = np.asarray([bool(rule.pattern.search(names[c])) for c in codes.tolist()],
                             bool)
            rows = rows[hit[of_row.reshape(-1)]].astype(np.int64, copy=False)
        if rows.size == 0:
            continue
        st = np.maximum(s.start[rows], start)
        en = np.minimum(s.end[rows], end)
        if rule.any_thread:
            if work is None:
                work = _step_thread_work(trace, lane, start, end)
            mine = _envelopes(st, en, work)
        else:
            mine = intervals.union(st, en)
        mine = intervals.subtract(mine, claimed)
        if intervals.length(mine):
            prev = out.get(rule.phase)
            out[rule.phase] = mine if prev is None else _join(prev, mine)
            claimed = _join(claimed, mine)
    for before, rule in fallback:
        anchor = out.get(before)
        if rule.phase in out or anchor is None or anchor[0].size == 0:
            continue
        # the unclaimed time before each segment of the anchor phase, back to the
        # previous one (or the step's start): every micro-batch's forward, not only
        # the first
        heads = (np.concatenate([[start], anchor[1][:-1]]), anchor[0])
        mine = intervals.subtract(heads, claimed)
        if intervals.length(mine):
            out[rule.phase] = mine
            claimed = _join(claimed, mine)
    rest = intervals.subtract((np.asarray([start]), np.asarray([end])), claimed)
    if intervals.length(rest):
        out[OTHER_PHASE] = rest
    # in the order the step runs them (each phase's first instant), other last
    named = sorted((p for p in out if p != OTHER_PHASE), key=lambda p: int(out[p][0][0]))
    return {p: out[p] for p in [*named, OTHER_PHASE] if p in out}


def segments(phases: dict[str, intervals.Set], min_ns: int = 0
             ) -> tuple[tuple[str, int, int], ...]:
    """The step's phases as time-ordered segments ``(phase, start, end)``, adjacent
    pieces of one phase joined; ``other`` pieces shorter than ``min_ns`` are left out
    (the instants between two ranges), so a step reads forward, backward, forward,
    backward, optimizer."""
    pieces = sorted((int(a), int(b), p) for p, iv in phases.items()
                    for a, b in zip(iv[0].tolist(), iv[1].tolist(), strict=True)
                    if p != OTHER_PHASE or b - a >= min_ns)
    out: list[tuple[str, int, int]] = []
    for a, b, p in pieces:
        if out and out[-1][0] == p and out[-1][2] >= a - min_ns:
            out[-1] = (p, out[-1][1], b)
        else:
            out.append((p, a, b))
    return tuple(out)


# segment pieces cut at a time: one gap of a compile can span millions of host segments
PIECE_BLOCK = 1 << 16


def _categories_over(tl: HostTimeline, iv: intervals.Set) -> dict[str, int]:
    """A thread's categories inside the intervals ``iv`` (exact ns), each category in the
    order it first appears (by interval, then by category), all intervals at once.

    The segments each interval covers are numbered one interval after another, and made
    a bounded block of numbers at a time: a trace of 20,000 steps' gaps took a Python loop
    per interval (seconds), a cold compile's gap covers millions of segments."""
    if tl.seg_start.size == 0 or len(iv[0]) == 0:
        return {}
    a, b = np.asarray(iv[0], np.int64), np.asarray(iv[1], np.int64)
    j0 = np.searchsorted(tl.seg_end, a, side="right")
    count = np.maximum(np.searchsorted(tl.seg_start, b, side="left") - j0, 0)
    ends = np.cumsum(count)
    firsts = ends - count
    total = int(ends[-1])
    ncat = len(tl.categories)
    sums = [0] * ncat
    first = np.full(ncat, np.iinfo(np.int64).max, np.int64)  # the first interval with it
    for e0 in range(0, total, PIECE_BLOCK):
        e = np.arange(e0, min(e0 + PIECE_BLOCK, total), dtype=np.int64)
        i = np.searchsorted(ends, e, side="right")
        k = j0[i] + (e - firsts[i])
        ln = np.minimum(tl.seg_end[k], b[i]) - np.maximum(tl.seg_start[k], a[i])
        cat = tl.seg_cat[k].astype(np.int64)
        ns = np.bincount(cat, weights=ln, minlength=ncat)
        for c in np.flatnonzero(ns).tolist():
            sums[c] += int(ns[c])
        on = ln > 0
        np.minimum.at(first, cat[on], i[on])
    order = sorted((c for c in range(ncat) if sums[c]), key=lambda c: (int(first[c]), c))
    return {tl.categories[c]: sums[c] for c in order}


def _idle_causes(trace: Trace, timelines: dict[int, HostTimeline], step_lane: int,
                 busy: intervals.Set, work_rows: np.ndarray, start: int, end: int,
                 *, removed: bool = False) -> list[IdleCause]:
    """Each gap in the step's device work goes, up to the launch of the work that ends
    it, to the launching thread's categories (the step's thread when no launch is
    known; ``untraced`` for a thread with no timeline), and after that launch to launch
    latency, or, where the trace lost events (``removed``), to ``NOT_SHOWN``."""
    s = trace.slices
    g0, g1 = intervals.subtract((np.asarray([start]), np.asarray([end])), busy)
    g0, g1 = np.asarray(g0, np.int64), np.asarray(g1, np.int64)
    w = work_rows[np.argsort(s.start[work_rows], kind="stable")]
    w_st = s.start[w]
    lane = np.full(g0.size, step_lane, np.int64)
    cut = g1.copy()
    j = np.searchsorted(w_st, g1, side="left")
    gi = np.flatnonzero(j < w.size)  # the gaps ended by work of the step
    gi = gi[w_st[j[gi]] < end]
    get = trace.work_to_launch.get  # the launch of the work that ends each gap, or -1
    launch = np.fromiter((get(r, -1) for r in w[j[gi]].tolist()), np.int64, gi.size)
    known = launch >= 0
    gi, launch = gi[known], launch[known]
    traced = np.isin(s.lane[launch], np.fromiter(timelines, np.int64, len(timelines)))
    gi, launch = gi[traced], launch[traced]
    lane[gi] = s.lane[launch]
    cut[gi] = np.minimum(np.maximum(s.start[launch], g0[gi]), g1[gi])
    got: Counter[tuple[int | None, str]] = Counter()
    for ln in np.unique(lane).tolist():
        on = lane == ln
        tl = timelines.get(ln)
        if tl is None:  # a thread with nothing of its own recorded (ranges only)
            got[(ln, UNTRACED)] += int((cut[on] - g0[on]).sum())
        else:
            for cat, ns in _categories_over(tl, (g0[on], cut[on])).items():
                got[(ln, cat)] += ns
    late = cut < g1
    got[(None, NOT_SHOWN if removed else LAUNCH_LATENCY)] += int((g1[late] - cut[late]).sum())
    return sorted((IdleCause(ln, what, ns) for (ln, what), ns in got.items() if ns),
                  key=lambda c: (-c.ns, str(c.lane), c.what))


def own_devices(trace: Trace, step_lane: int, busy: intervals.Set, work_rows: np.ndarray
                ) -> tuple[intervals.Set, np.ndarray]:
    """The device work a step can have: where host threads of more than one process
    launched device work (ranks' traces fused into one file, each rank a process with its
    own device), only the work on the devices the step thread's process launched to;
    another rank's device is not this step's device. Otherwise (one launching process,
    or none of the step's process's work linked) every device's, unchanged."""
    s = trace.slices
    w2l = trace.work_to_launch
    linked = np.fromiter(w2l, np.int64, len(w2l))
    if linked.size == 0:
        return busy, work_rows
    lane_pid = np.asarray([str(ln.pid) for ln in trace.lanes], dtype=object)
    by = lane_pid[s.lane[np.fromiter(w2l.values(), np.int64, len(w2l))]]
    if len(set(by.tolist())) <= 1:
        return busy, work_rows
    devices = set(lane_pid[s.lane[linked[by == str(trace.lanes[step_lane].pid)]]].tolist())
    if not devices:
        return busy, work_rows
    keep = work_rows[np.isin(lane_pid[s.lane[work_rows]], list(devices))]
    lo, hi = busy[0][:1], busy[1][-1:]  # the window the caller's busy was clipped to
    if lo.size == 0:
        return busy, keep
    # clipped as the caller's busy was: to the window, which no work row crosses
    # beyond the busy set's own ends
    return (intervals.union(np.maximum(s.start[keep], lo[0]), np.minimum(s.end[keep], hi[0])),
            keep)


def analyze_steps(trace: Trace, rules: RuleSet, calls, step_lane: int,
                  timelines: dict[int, HostTimeline], busy: intervals.Set,
                  work_rows: np.ndarray, *, removed: bool = False) -> list[StepFigures]:
    """Every call as a step (the caller decides that the calls are steps), with the
    device work of the step thread's process's devices (``own_devices``). ``removed``:
    the trace evidently lost events (``integrity.Numbering.removed``)."""
    busy, work_rows = own_devices(trace, step_lane, busy, work_rows)
    s = trace.slices
    comm = re.compile(rules.communication_kernels) if rules.communication_kernels else None
    is_comm = np.zeros(work_rows.size, bool)
    if comm is not None and work_rows.size:  # the pattern once per distinct name
        codes, of_row = np.unique(s.name[work_rows], return_inverse=True)
        is_comm = np.asarray([bool(comm.search(trace.names[int(c)])) for c in codes.tolist()],
                             bool)[of_row.reshape(-1)]
    out = []
    ranges = host_ranges(trace)
    ends = _extent_ends(trace, calls, work_rows)
    for c, (b, last_work) in zip(calls, ends, strict=True):
        a, b_range = c.start_ns, c.end_ns
        step_busy = intervals.clip(busy, a, b)
        phases = []
        by_phase = phase_intervals(trace, rules, step_lane, a, b_range)
        if b > b_range:
            by_phase[DEVICE_TAIL] = (np.asarray([b_range]), np.asarray([b]))
        for phase, iv in by_phase.items():
            wall = intervals.length(iv)
            on = intervals.length(intervals.intersect(step_busy, iv))
            host = {ln: cats for ln, tl in timelines.items()
                    if (cats := _categories_over(tl, iv))}
            phases.append(PhaseFigures(phase, wall, on, wall - on, host))
        mine = work_rows[(s.end[work_rows] > a) & (s.start[work_rows] < b)]
        cm = is_comm[np.isin(work_rows, mine)] if mine.size else np.zeros(0, bool)
        comm_rows, comp_rows = mine[cm], mine[~cm]
        comm_set = intervals.clip(intervals.union(s.start[comm_rows], s.end[comm_rows]), a, b)
        comp_set = intervals.clip(intervals.union(s.start[comp_rows], s.end[comp_rows]), a, b)
        out.append(StepFigures(
            index=c.index, name=c.name, start_ns=a, end_ns=b, cold=c.cold,
            device_busy_ns=intervals.length(step_busy), phases=tuple(phases),
            idle_causes=tuple(_idle_causes(trace, timelines, step_lane, step_busy, work_rows,
                                           a, b, removed=removed)),
            communication_ns=intervals.length(comm_set),
            exposed_communication_ns=intervals.length(intervals.subtract(comm_set, comp_set)),
            path=critical_path(trace, a, b, step_lane, timelines, work_rows, last_work,
                               ranges, removed=removed),
            segments=segments(by_phase, int((b - a) * SEGMENT_MIN_SHARE)),
            range_end_ns=b_range,
        ))
    return out


def _extent_ends(trace: Trace, calls, work_rows: np.ndarray) -> list[tuple[int, int | None]]:
    """Each step's extent end, and the device work row the extent ends on (None when it
    ends with the range): the end of the last device work launched inside the range when
    that runs on after the range (a step that does not wait for its own work: DeepSeek's
    profile records its synchronize after the step), never past the next step's start
    (steps do not overlap) and never before the range's end."""
    s = trace.slices
    w2l = trace.work_to_launch
    linked = [int(r) for r in work_rows.tolist() if int(r) in w2l]
    if not linked:
        return [(c.end_ns, None) for c in calls]
    w = np.asarray(linked, np.int64)
    l_st = s.start[np.asarray([w2l[r] for r in linked], np.int64)]
    order = np.argsort(l_st, kind="stable")
    l_st, w = l_st[order], w[order]
    w_end = s.end[w]
    starts = sorted(c.start_ns for c in calls)
    out: list[tuple[int, int | None]] = []
    for c in calls:
        lo = int(l_st.searchsorted(c.start_ns, side="left"))
        hi = int(l_st.searchsorted(c.end_ns, side="left"))
        j = int(np.searchsorted(starts, c.start_ns, side="right"))
        nxt = starts[j] if j < len(starts) else None
        if hi <= lo or int(w_end[lo:hi].max()) <= c.end_ns:
            out.append((c.end_ns, None))
            continue
        k = lo + int(np.argmax(w_end[lo:hi]))
        last = int(w_end[k])
        if nxt is not None and last > nxt:  # cut at the next step: the work running then
            mine = w[lo:hi]
            running = mine[(s.start[mine] < nxt) & (s.end[mine] >= nxt)]
            if nxt <= c.end_ns or running.size == 0:
                out.append((max(c.end_ns, nxt), None))
                continue
            out.append((nxt, int(running[np.argmax(s.end[running])])))
            continue
        out.append((last, int(w[k])))
    return out
