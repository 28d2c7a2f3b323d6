"""The critical path of a step, across host threads and device streams, exact in ns.

The walk starts at the step's end on the thread that ran the step and goes backwards in
time, always standing on one resource, a host thread or a piece of device work, and
charging every nanosecond it passes to exactly one owner:

* on a host thread, the instant's own category (``host.attribute_host``), except:
  - ``sync`` (a synchronize call): the thread waited for the device. The path charges
    the wake-up (the last device work's end to the sync's end) to the sync and moves to
    that device work: the **kernel -> synchronize** edge;
  - ``wait`` (``run_backward``, a queue, a lock: ``traceview/data/default_rules.json``):
    the thread waited for another thread. The path charges the wake-up to the wait and
    moves to the host thread whose work ended last before the wait ended (the autograd
    engine's thread during ``backward``), until it reaches the wait's start, where it
    returns: the **main thread's wait -> the other thread's work** edge. Only work that
    ended after the waiting thread's own last work can have released it: on a CPU-only
    step the engine runs its nodes on the calling thread, under ``run_backward``, and
    the wait between two of them is the engine's own, not a wait for a thread that
    worked earlier in the backward. A thread blocked in a wait frame (a poll, a lock,
    a join) is never work for these edges, nor for the held-range crossing below;
  - ``untraced`` on a thread that holds only a range (a ``record_function`` label such as
    ``## backward ##``, or the step's own range) while another thread of its process does
    the work inside that range's time (the autograd engine's thread running a backward
    whose ``run_backward`` the profiler did not record): the thread waited for that one.
    The path charges the wake-up (the other thread's last work to the instant) to the
    holding thread's untraced time and moves to the other thread until the held stretch's
    start, as for a wait: the **held range -> the other thread's work** edge. The other
    thread's work over the range must lie inside the range, start after the holder fell
    silent and end before it resumed, fill at least half of that held stretch from its
    first to its last instant, and outweigh the holder's own work in between (the
    engine's calling thread runs a few nodes itself); of several such threads, the one
    that worked most. A thread working beside the holder, or a short call of a helper
    thread inside a pause of the Python, fails these and the pause stays untraced. A
    Python frame's own time (a frame with nothing under it: ``_engine_run_backward``
    whose ``run_backward`` the profiler did not record, a ``join()``) is held the same
    way, the frame for the range, its own time no work of the holder's; the wake-up is
    then charged to the frame's category. Each crossing keeps the row of the range (or
    frame) held, the innermost of those that say the same (the verdict names it);
  - a thread other than the step's that has nothing recorded (untraced) or waits itself
    hands the path back to the thread that waited for it, or, reached through a launch,
    to the step's thread, at the same instant; inside a wait, the untraced time of the
    thread waited for (the autograd engine between two nodes) is that thread's;
* on device work, its own duration, charged to the kernel (or copy), then what it waited
  for: the previous work on its stream when that ended after the launch was issued
  (**queued** behind it), else its launch (**launch -> kernel** edge: the time from the
  launch call to the kernel's start is **launch latency**, and the path continues on the
  launching thread inside the launch call; in a trace that lost events after the profiler
  wrote it, that stretch is ``NOT_SHOWN``: the kernel may have waited behind removed
  work, as the device's idle by cause says too); when neither explains its start and work on
  another stream ended later, the path follows that stream (a **cross-stream wait**,
  inferred from the timing; Kineto records no event dependency). CUDA-graph kernels
  link to their ``cudaGraphLaunch`` the same way.

Because the walk only moves backwards and charges every step it takes, the items sum to
the step's wall time exactly (checked). An item's time on the path is what removing it
could at most save: the path may move to another chain once it is shorter.
"""

from __future__ import annotations

import functools
from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from traceview import intervals
from traceview.analyses.host import LABEL_CATS, HostTimeline
from traceview.errors import IdentityError
from traceview.model import DEVICE_CATS, Trace
from traceview.rules import UNTRACED

PathKind = Literal["host", "device", "launch_latency", "queued"]
# a kernel whose start its launch and its stream's previous work leave unexplained by more
# than this looks at other streams (event waits)
CROSS_STREAM_SLACK_NS = 2_000
# a thread's plain segments one after another are charged at once (``_Run``) from this
# many on: fewer cost less one by one
RUN_MIN = 16
# a thread waited for by a thread holding only a range fills at least this share of the
# held stretch, from its first to its last instant of work there (HELD_NUM / HELD_DEN)
HELD_NUM, HELD_DEN = 1, 2
LAUNCH_LATENCY = "launch latency"
# what a launch's wait for its kernel is in a trace that lost events after the profiler
# wrote it (``integrity.Numbering.removed``): the kernel may have started late behind
# work that was removed, which no launch path explains (``steps._idle_causes`` too)
NOT_SHOWN = "not in the trace"
# the host categories of ranges: labels that own no time (``host.LABEL_CATS``)
RANGE_CATS = LABEL_CATS - DEVICE_CATS

# host lane -> its ranges' starts, ends (int64) and slice rows
Ranges = dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]
_Columns = tuple[int, int, np.ndarray, np.ndarray, np.ndarray]  # ``_Walk.columns``


def host_ranges(trace: Trace) -> Ranges:
    """Each host thread's ranges (``record_function`` labels, profiler spans): their
    starts, ends and rows, sorted by start. Found once per trace (``analyze_steps``), not per
    step: a step's walk reads those overlapping it."""
    s = trace.slices
    rows = trace.rows_of_cats(RANGE_CATS)
    rows = rows[s.end[rows] > s.start[rows]]
    out: Ranges = {}
    if rows.size == 0:
        return out
    lanes = s.lane[rows]
    for lane in np.unique(lanes).tolist():
        r = rows[lanes == lane]
        st = np.asarray(s.start[r], np.int64)
        order = np.argsort(st, kind="stable")
        out[int(lane)] = (st[order], np.asarray(s.end[r], np.int64)[order],
                          np.asarray(r, np.int64)[order])
    return out


@dataclass(frozen=True)
class PathItem:
    kind: PathKind
    # host lane (host, launch_latency) or device lane (device, queued); None for a
    # launch's wait in a trace that lost events (``NOT_SHOWN``): no thread's
    lane: int | None
    what: str  # the host category, or the kernel/copy name
    ns: int


@dataclass(frozen=True)
class PathSegment:
    """One stretch of the walk in time: [start_ns, end_ns) charged to (kind, lane, what),
    and the slice row of the work it stood on or waited on (None when no one slice is)."""

    kind: PathKind
    lane: int | None
    what: str
    start_ns: int
    end_ns: int
    row: int | None = None


Stretch = tuple[PathKind, int | None, str, int, int, int | None]  # PathSegment's fields


@dataclass(frozen=True)
class CriticalPath:
    start_ns: int
    end_ns: int
    items: tuple[PathItem, ...]  # biggest first; sums to end - start
    edges: Counter  # edge kind -> times the path took it
    # the walk's stretches in its (backward) order: a stretch each, or a ``_Run`` of a
    # thread's plain segments one after another (``stretches`` reads them out)
    pieces: tuple[Stretch | _Run, ...] = field(default=(), compare=False, repr=False)
    # where the path crossed from a thread holding only a range to the thread working
    # inside it: (holder lane, that thread's lane, start, end, the range's slice row),
    # the stretch the other thread stands for on the path (the holder waited for it
    # then, whatever its own timeline calls that time), in the walk's order
    held: tuple[tuple[int, int, int, int, int], ...] = field(default=(), compare=False)

    @functools.cached_property
    def stretches(self) -> tuple[Stretch, ...]:
        """The walk's stretches as PathSegment's fields, in time order: made when asked
        (``--annotate`` asks); a tuple each for a step's path of 12,000 segments was a
        sixth of the walk."""
        out: list[Stretch] = []
        for p in reversed(self.pieces):
            if isinstance(p, _Run):
                out.extend(p.stretches())
            else:
                out.append(p)
        return tuple(out)

    @functools.cached_property
    def segments(self) -> tuple[PathSegment, ...]:
        """The same time as the items, in time order and tiling [start_ns, end_ns): made
        when asked (``--annotate`` asks), as a frozen object each cost a tenth of the
        analysis of a trace with 60,000 stretches on its steps' paths."""
        return tuple(PathSegment(*x) for x in self.stretches)

    @property
    def total_ns(self) -> int:
        return sum(i.ns for i in self.items)


class _Device:
    """Device work sorted for the walk's two questions."""

    def __init__(self, trace: Trace, rows: np.ndarray) -> None:
        s = trace.slices
        self.rows = rows[np.argsort(s.end[rows], kind="stable")]
        self.ends = s.end[self.rows]
        self.by_lane: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        lanes = s.lane[self.rows]
        for lane in np.unique(lanes).tolist():
            r = self.rows[lanes == lane]
            self.by_lane[lane] = (r, s.end[r])

    def last_ending(self, lo: int, hi: int, exclude: int = -1) -> int | None:
        """The work row ending last in (lo, hi], or None."""
        j = int(self.ends.searchsorted(hi, side="right")) - 1
        while j >= 0 and self.ends[j] > lo:
            if int(self.rows[j]) != exclude:
                return int(self.rows[j])
            j -= 1
        return None

    def previous_on_lane(self, lane: int, t: int, exclude: int) -> int | None:
        found = self.by_lane.get(lane)
        if found is None:
            return None
        r, e = found
        j = int(e.searchsorted(t, side="right")) - 1
        while j >= 0:
            if int(r[j]) != exclude:
                return int(r[j])
            j -= 1
        return None


def critical_path(trace: Trace, start_ns: int, end_ns: int, step_lane: int,
                  timelines: dict[int, HostTimeline], work_rows: np.ndarray,
                  from_work: int | None = None, ranges: Ranges | None = None, *,
                  removed: bool = False) -> CriticalPath:
    """The path of [start_ns, end_ns), walked back from its end on the step's thread, or
    on the device work row ``from_work`` when the step's extent ends with work it
    launched that outlasted its range (nothing on the host was waiting for it there).
    ``ranges``: ``host_ranges(trace)``, when the caller has it. ``removed``: the trace
    lost events after the profiler wrote it (a launch's wait is then ``NOT_SHOWN``)."""
    if ranges is None:
        ranges = host_ranges(trace)
    w = _Walk(trace, start_ns, end_ns, step_lane, timelines, _Device(trace, work_rows), ranges)
    w.latency = NOT_SHOWN if removed else LAUNCH_LATENCY
    if from_work is not None:
        w.on_device = from_work
    w.budget = 20 * (sum(tl.seg_start.size for tl in timelines.values()) + work_rows.size) + 100
    while w.t > start_ns and w.budget > 0:
        w.budget -= 1
        if w.from_device() if w.on_device is not None else w.on_host():
            break
    if w.t > start_ns:  # the budget ran out (a cycle would be a bug): charge honestly
        w.charge("host", step_lane, UNTRACED, start_ns, w.t)
    items = tuple(sorted((PathItem(k, ln, what, ns) for (k, ln, what), ns in w.got.items()),
                         key=lambda i: (-i.ns, i.kind, str(i.lane), i.what)))
    # a crossing the walk never came back from (it ended, or left through the device)
    # is taken from the held stretch's start: the holder waited no longer than that
    held = tuple((int(h), int(o), int(lo if x is None else x), int(q), int(r))  # type: ignore[arg-type]
                 for h, o, x, q, lo, r in w.held)
    path = CriticalPath(start_ns, end_ns, items, w.edges, tuple(w.segments), held)
    if path.total_ns != end_ns - start_ns:
        raise IdentityError(f"critical path {path.total_ns} != step {end_ns - start_ns}")
    return path


class _Walk:
    """The backward walk's state: where it stands (time ``t``, host ``lane`` or device
    row ``on_device``, the waiting threads to return to) and what it charged so far.
    Each step moves ``t`` back and says whether the walk has ended."""

    def __init__(self, trace: Trace, start_ns: int, end_ns: int, step_lane: int,
                 timelines: dict[int, HostTimeline], dev: _Device, ranges: Ranges) -> None:
        self.trace, self.s = trace, trace.slices
        self.start_ns, self.step_lane = start_ns, step_lane
        self.timelines, self.dev = timelines, dev
        cats = next(iter(timelines.values())).categories if timelines else []
        self.cats = cats
        self.sync_code = cats.index("sync") if "sync" in cats else -2
        self.wait_code = cats.index("wait") if "wait" in cats else -2
        untraced_code = cats.index(UNTRACED) if UNTRACED in cats else -2
        self.untraced_code = untraced_code
        self.idle_codes = {untraced_code, self.wait_code}
        # Python frames (``python_function``): a frame with no work under it while another
        # thread of its process works is held as a range is (``_held``)
        self.frame_cat = trace.cat_code("python_function")
        # the other threads of each thread's process: where a thread holding a range may
        # have waited (``_held``)
        lanes = trace.lanes
        self.peers = {ln: [o for o in timelines if o != ln and lanes[o].pid == lanes[ln].pid]
                      for ln in timelines}
        self.ranges = ranges
        self._work: dict[int, intervals.Set] = {}
        self._columns: dict[int, _Columns] = {}
        self._step_ranges: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.got: Counter = Counter()
        self.edges: Counter = Counter()
        self.t = end_ns
        self.lane: int = step_lane
        self.on_device: int | None = None  # device row the walk stands on
        self.returns: list[tuple[int, int]] = []  # (waiting lane, wait start)
        # held-range crossings: [holder, other, where the walk came back (None: not yet),
        # the other thread's last work before the hop, the held stretch's start, the
        # range's row]; an open one ends when ``returns`` is popped back to the depth it
        # was pushed at
        self.held: list[list[int | None]] = []
        self._held_open: list[tuple[int, int]] = []  # (depth in ``returns``, index in held)
        # PathSegment's fields, or a ``_Run`` of them, in the walk's (backward) order
        self.segments: list[Stretch | _Run] = []
        self.end_ns = end_ns
        self.budget = 0  # steps left (``critical_path`` sets it): a cycle would be a bug
        self.latency = LAUNCH_LATENCY  # what a launch's wait for its kernel is called
        self._windows: dict[int, _Window] = {}

    def window(self, lane: int, tl: HostTimeline) -> _Window:
        """The thread's segments that can hold an instant of the step, as lists (made once
        per thread and step): the walk reads one or two of them per move, tens of
        thousands of moves a step, and a numpy element read costs ten list reads."""
        w = self._windows.get(lane)
        if w is None:
            j0, j1, start, end, cat = self.columns(lane, tl)
            pos = tl.seg_pos[j0:j1]
            owner = np.where(pos >= 0, tl.rows[np.maximum(pos, 0)] if tl.rows.size else -1, -1)
            held = self._may_cross(lane, start, end, cat, owner)
            run_from = self._run_from(lane, start, end, cat, held, inside=False)
            w = self._windows[lane] = _Window(
                start.tolist(), end.tolist(), cat.tolist(), owner.tolist(), run_from,
                start, cat, owner, held.tolist(),
                run_from if lane == self.step_lane else
                self._run_from(lane, start, end, cat, held, inside=True))
        return w

    def columns(self, lane: int, tl: HostTimeline) -> _Columns:
        """The thread's segments that can hold an instant of the step: their positions
        [j0, j1) in the timeline and their starts, ends (int64) and category codes. Made
        once per thread and step: its window and its work (``work``) both read them, and
        unpacking packed times is most of the cost of either."""
        got = self._columns.get(lane)
        if got is None:
            j0 = int(tl.seg_end.searchsorted(self.start_ns, side="left"))
            j1 = int(tl.seg_start.searchsorted(self.end_ns, side="left")) + 1
            got = self._columns[lane] = (
                j0, j1, np.asarray(tl.seg_start[j0:j1], np.int64),
                np.asarray(tl.seg_end[j0:j1], np.int64), np.asarray(tl.seg_cat[j0:j1]))
        return got

    def work(self, lane: int) -> intervals.Set:
        """The thread's work over the step (segments of a category that is not idle),
        as a disjoint set of intervals."""
        got = self._work.get(lane)
        if got is None:
            _, _, start, end, cat = self.columns(lane, self.timelines[lane])
            busy = ~np.isin(cat, [c for c in self.idle_codes if c >= 0])
            got = self._work[lane] = intervals.union(start[busy], end[busy])
        return got

    def step_ranges(self, lane: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The thread's ranges overlapping the step, clipped to it, sorted by start
        (nested, so not a disjoint set), and their rows."""
        got = self._step_ranges.get(lane)
        if got is None:
            found = self.ranges.get(lane)
            if found is None:
                empty = np.zeros(0, np.int64)
                found = (empty, empty, empty)
            st, en, rows = found
            keep = (st < self.end_ns) & (en > self.start_ns)
            got = self._step_ranges[lane] = (np.maximum(st[keep], self.start_ns),
                                             np.minimum(en[keep], self.end_ns), rows[keep])
        return got

    def _may_cross(self, lane: int, start: np.ndarray, end: np.ndarray,
                   cat: np.ndarray, owner: np.ndarray) -> np.ndarray:
        """For each segment of a window: whether it is untraced time of a thread holding
        a range, or a Python frame's own time (no sync or wait: those hand the path on
        themselves), while another thread of its process worked (what ``_held`` needs;
        it decides): only these are looked at when the walk stands on them."""
        out = np.zeros(start.size, bool)
        if not self.peers.get(lane):
            return out
        gap = self._frames(cat, owner)
        if self.step_ranges(lane)[0].size:
            gap |= cat == self.untraced_code
        for other in self.peers[lane]:
            ws, we = self.work(other)
            if ws.size:
                # the first work interval ending after the segment's start begins before
                # its end
                i = np.searchsorted(we, start, side="right")
                hit = i < ws.size
                hit[hit] = ws[i[hit]] < end[hit]
                out |= hit
        return out & gap

    def _frames(self, cat: np.ndarray, owner: np.ndarray) -> np.ndarray:
        """Which segments are a Python frame's own time, of a category the walk does not
        leave the thread at by itself (a sync, a wait)."""
        if self.frame_cat < 0 or owner.size == 0:
            return np.zeros(owner.size, bool)
        own = owner >= 0
        own[own] = self.s.cat[owner[own]] == self.frame_cat
        return own & ~np.isin(cat, [c for c in (self.sync_code, self.wait_code) if c >= 0])

    def _held(self, lane: int, g0: int, g1: int, t: int, lo: int,
              frame: int = -1) -> tuple[int, int, int, int] | None:
        """Standing at ``t`` in the thread's untraced stretch [g0, g1) (the walk goes no
        further back than ``lo``): the thread of its process it waited for while holding
        a range, as (that thread, the end of its last work before ``t``, where the wait
        began, the range's row), or None. ``frame``: the stretch is instead that Python
        frame's own time, and the frame is the range held, its own time no work of the
        holder's (a frame blocked in ``join()`` or ``backward()`` while another thread
        does the work). For each range held over some of (lo, t) and each other thread,
        that thread's work over the range must lie inside it and start and end while the
        holder is silent; the held stretch runs from the holder's last own work before it
        to its next after it, inside the range. That work must span at least half the held
        stretch and outweigh the holder's own work inside its span (the autograd engine's
        calling thread runs a few nodes itself, AccumulateGrad), and it must have ended
        after ``g0``: else the holder's own work after it came last. Of several, the one
        that worked most; of ranges that say the same, the innermost (the one named)."""
        # (work, held start, other, its end, -the range's length, its row)
        best: tuple[int, int, int, int, int, int] | None = None
        if frame >= 0:
            rs = np.asarray([max(int(self.s.start[frame]), self.start_ns)], np.int64)
            rend = np.asarray([min(int(self.s.end[frame]), self.end_ns)], np.int64)
            rrows = np.asarray([frame], np.int64)
        else:
            rs, rend, rrows = self.step_ranges(lane)
        near = (rs < t) & (rend > max(g0, lo))  # the ranges held over some of (lo, t)
        if not near.any():
            return None
        mine = self.work(lane) if frame < 0 else self._work_in_frame(lane, frame,
                                                                      int(rs[0]), int(rend[0]))
        xs, xe = mine
        nx = int(xs.size)
        for r0, r1, row in zip(rs[near].tolist(), rend[near].tolist(), rrows[near].tolist(),
                               strict=True):
            for other in self.peers[lane]:
                ws, we = self.work(other)
                # its work intervals overlapping the range, all inside it
                i0 = int(np.searchsorted(we, r0, side="right"))
                i1 = int(np.searchsorted(ws, r1, side="left"))
                if i1 <= i0:
                    continue
                first, last = int(ws[i0]), int(we[i1 - 1])
                if first < r0 or last > r1:
                    continue
                # the holder silent where that work starts and where it ends
                a = int(np.searchsorted(xe, first, side="right"))
                b = int(np.searchsorted(xe, last - 1, side="right"))
                if (a < nx and int(xs[a]) <= first) or (b < nx and int(xs[b]) <= last - 1):
                    continue
                h0 = max(int(xe[a - 1]) if a else self.start_ns, r0)
                h1 = min(int(xs[b]) if b < nx else self.end_ns, r1)
                if HELD_DEN * (last - first) < HELD_NUM * (h1 - h0):
                    continue
                done = int(intervals.length((ws[i0:i1], we[i0:i1])))
                own = int(intervals.overlap(mine, np.asarray([first]), np.asarray([last]))[0])
                if own >= done:
                    continue
                # the last of them starting before t
                k = min(int(np.searchsorted(ws, t, side="left")), i1) - 1
                if k < i0:
                    continue
                q = min(int(we[k]), t)
                if q <= max(g0, lo):
                    continue
                key = (done, h0, -other, q, r0 - r1, row)
                if best is None or key[:5] > best[:5]:
                    best = key
        if best is None:
            return None
        return -best[2], best[3], best[1], best[5]

    def _work_in_frame(self, lane: int, frame: int, r0: int, r1: int) -> intervals.Set:
        """The thread's work inside [r0, r1), the span of its Python frame ``frame``, less
        the frame's own time (the holding, not work): all ``_held`` reads of the
        holder's work for a frame (the work before the frame and after it reads as the
        frame's bounds), cut from the thread's work and segments by position, not by a
        pass over the step: a walk can stand on thousands of such frames."""
        xs, xe = self.work(lane)
        i = int(np.searchsorted(xe, r0, side="right"))
        k = int(np.searchsorted(xs, r1, side="left"))
        inside = intervals.clip((xs[i:k], xe[i:k]), r0, r1)
        _, _, start, end, _ = self.columns(lane, self.timelines[lane])
        j0 = max(int(np.searchsorted(start, r0, side="left")) - 1, 0)
        j1 = int(np.searchsorted(start, r1, side="left"))
        mask = self.window(lane, self.timelines[lane]).owner_a[j0:j1] == frame
        return intervals.subtract(inside, intervals.union(start[j0:j1][mask], end[j0:j1][mask]))

    def _run_from(self, lane: int, start: np.ndarray, end: np.ndarray,
                  cat: np.ndarray, held: np.ndarray, *, inside: bool) -> list[int]:
        """For each segment of a window, the first segment of the run of plain ones that
        ends with it (-1 for a segment that is not plain): the segments ``on_host`` would
        charge one after another as they are, each the one its predecessor's start finds
        (``bisect_left`` of the ends) and starting before it. Plain: a category the walk
        never leaves the thread at (no sync, no wait, no untraced time of a thread other
        than the step's unless the walk is ``inside`` a wait for it, where that time is
        the thread's, no untraced time of a thread holding a range that ``held``
        marks). No runs where the ends are out of order: each segment is then found one
        at a time, as always."""
        n = start.size
        if n == 0 or (n > 1 and bool((end[1:] < end[:-1]).any())):
            return [-1] * n
        bad = [self.sync_code, self.wait_code]
        if lane != self.step_lane and not inside:
            bad += [c for c in self.idle_codes if c >= 0]
        plain = ~np.isin(cat, [c for c in bad if c >= 0]) & ~held
        idx = np.arange(n)
        # segment i follows segment i + 1: the walk at i + 1's start finds i
        follows = np.zeros(n, bool)
        follows[:-1] = (np.searchsorted(end, start[1:], side="left") == idx[:-1]) \
            & (start[:-1] < start[1:])
        follows[:-1] &= plain[:-1] & plain[1:]
        # a run's first segment in time (the walk reaches it last): a plain one that the
        # segment before it does not follow
        first = plain.copy()
        first[1:] &= ~follows[:-1]
        lo = np.maximum.accumulate(np.where(first, idx, -1))
        return np.where(plain, lo, -1).tolist()

    def _own_last(self, lane: int, t: int) -> int:
        """The end of the thread's own last work (``work``) before ``t``, or the step's
        start where it has none."""
        _, xe = self.work(lane)
        k = int(np.searchsorted(xe, t, side="right")) - 1
        return min(int(xe[k]), t) if k >= 0 else self.start_ns

    def pop_return(self, at: int) -> int:
        """Back to the thread that waited, at ``at``: its lane. A held-range crossing
        waiting for this return ends there (the walk stood on the other thread from its
        hop back to ``at``)."""
        lane, _ = self.returns.pop()
        if self._held_open and self._held_open[-1][0] == len(self.returns):
            self.held[self._held_open.pop()[1]][2] = at
        return lane

    def charge(self, kind: PathKind, lane: int | None, what: str, a: int, b: int,
               row: int | None = None) -> None:
        if b > a:
            self.got[(kind, lane, what)] += b - a
            self.segments.append((kind, lane, what, a, b, row))

    def from_device(self) -> bool:
        """On a device row: charge it back to its start, then follow what released it
        (another stream's work, the previous work on its stream, or its launch)."""
        s, start_ns, dev, edges = self.s, self.start_ns, self.dev, self.edges
        k = self.on_device
        assert k is not None
        ks = max(int(s.start[k]), start_ns)
        self.charge("device", int(s.lane[k]), self.trace.names[int(s.name[k])], ks, self.t, k)
        t = self.t = ks
        self.on_device = None
        if t <= start_ns:
            return True
        launch = self.trace.work_to_launch.get(k)
        prev = dev.previous_on_lane(int(s.lane[k]), t, k)
        prev_end = int(s.end[prev]) if prev is not None else None
        edge_at = min(int(s.end[launch]), t) if launch is not None else None
        release = max(x for x in (prev_end, edge_at, start_ns) if x is not None)
        if t - release > CROSS_STREAM_SLACK_NS:
            other = dev.last_ending(release, t, exclude=k)
            if other is not None and int(s.lane[other]) != int(s.lane[k]):
                self.charge("queued", int(s.lane[k]), "cross-stream wait", int(s.end[other]), t,
                            other)
                self.t, self.on_device = int(s.end[other]), other
                edges["cross_stream"] += 1
                return False
        if prev_end is not None and (edge_at is None or prev_end >= edge_at) \
                and prev_end > start_ns:
            self.charge("queued", int(s.lane[k]), "queued behind previous work", prev_end, t,
                        prev)
            self.t, self.on_device = prev_end, prev
            edges["stream_order"] += 1
        elif edge_at is not None and launch is not None:
            host = int(s.lane[launch])
            # a launch made before the step (work queued by the previous one) is
            # charged from the step's start only: the walk ends there
            lo = max(edge_at, start_ns)
            # a wait the trace cannot explain is no thread's (``NOT_SHOWN``): the launch
            # stays the stretch's row, the walk goes on inside it all the same
            self.charge("launch_latency", host if self.latency == LAUNCH_LATENCY else None,
                        self.latency, lo, t, launch)
            self.t = lo
            if host in self.timelines:
                self.lane = host
            edges["launch_to_kernel"] += 1
        else:  # no launch record and nothing before it: back to the step's thread
            self.lane = self.step_lane
            edges["unlinked_work"] += 1
        return False

    def _leaves(self, lane: int, w: _Window, j: int, t: int, lower: int) -> bool:
        """Whether the walk leaves ``lane`` at its segment ``j`` (the one before ``t``): a
        held range to the thread working inside it, an idle helper thread back to the
        step's, a waited-for thread's own wait back to its waiter, a sync to the device
        work it waited for, a wait to the thread that worked meanwhile."""
        s, start_ns, returns, edges = self.s, self.start_ns, self.returns, self.edges
        step_lane, wait_code = self.step_lane, self.wait_code
        code, owner = w.cat[j], w.owner[j]
        if w.held[j]:
            frame = owner if code != self.untraced_code else -1
            hop = self._held(lane, w.start[j], w.end[j], t, lower, frame)
            if hop is not None:
                other, q, h0, row = hop
                # the wake-up (the other thread's last work to the instant) is the
                # holder's: its silence, or its frame's own time
                self.charge("host", lane, self.cats[code], q, t,
                            owner if frame >= 0 else None)
                self._held_open.append((len(returns), len(self.held)))
                self.held.append([lane, other, None, q, max(h0, lower), row])
                returns.append((lane, max(h0, lower)))
                self.lane, self.t = other, q
                edges["range_to_thread"] += 1
                return True
        if lane != step_lane and code in self.idle_codes and not returns:
            self.lane = step_lane  # an idle helper thread hands the path back
            edges["back_to_step_thread"] += 1
            return True
        if lane != step_lane and code == wait_code and returns:
            self.lane = self.pop_return(t)  # the thread waited for waits itself: back to its waiter
            return True
        if code == self.sync_code and owner >= 0:
            done = self.dev.last_ending(max(int(s.start[owner]), start_ns) - 1, t)
            if done is not None and int(s.end[done]) > start_ns:
                self.charge("host", lane, "sync", int(s.end[done]), t, done)
                self.t, self.on_device = int(s.end[done]), done
                edges["kernel_to_sync"] += 1
                return True
        if code == wait_code and owner >= 0:
            ws = max(int(s.start[owner]), start_ns)
            # only work that ended after the thread's own last work can have released it:
            # work of another thread before that ran beside it (the autograd engine runs
            # its nodes on the calling thread inside ``run_backward`` on a CPU-only step,
            # and another thread's call from before the last of them woke nothing)
            src = _last_worker(self.timelines, lane, max(ws, self._own_last(lane, t)), t,
                               self.idle_codes)
            if src is not None:
                q_lane, q = src
                self.charge("host", lane, "wait", q, t, owner)
                returns.append((lane, ws))
                self.lane, self.t = q_lane, q
                edges["wait_to_thread"] += 1
                return True
        return False

    def on_host(self) -> bool:
        """On a host thread: the segment owning the instant before ``t``; a sync jumps
        to the device work it waited for, a wait to the thread that worked meanwhile,
        an idle helper thread hands the path back; anything else is charged as is, and
        the walk goes on to the thread's previous segment here, without returning to
        ``critical_path``'s loop (each segment still takes one step of the budget): a
        step's path is mostly a thread's segments one after another."""
        start_ns, lane, t, returns = self.start_ns, self.lane, self.t, self.returns
        step_lane, got, segments, cats = self.step_lane, self.got, self.segments, self.cats
        tl = self.timelines.get(lane)
        if tl is None:
            self.charge("host", lane, UNTRACED, start_ns, t)
            self.t = start_ns
            return True
        w = self.window(lane, tl)
        w_start, w_end, w_cat, w_owner = w.start, w.end, w.cat, w.owner
        # inside a wait for this thread (not the step's), its untraced time is plain
        run_from = w.run_from_inside if returns and lane != step_lane else w.run_from
        while True:
            j = bisect_left(w_end, t)
            if j >= len(w_end) or w_start[j] >= t:
                # nothing of this thread's own before t (a step thread holding only
                # ranges): the rest of the step is untraced, and the walk stands at its start
                self.charge("host", lane, UNTRACED, start_ns, t)
                self.t = start_ns
                return True
            lower = start_ns
            if returns and returns[-1][0] != lane:
                lower = max(lower, returns[-1][1])
            k = run_from[j]  # -1: not plain
            if k >= 0 and j + 1 - k >= RUN_MIN:
                # the run's segments that start after ``lower``, each charged whole, as
                # many as the budget allows: one step of the loop below each, in bulk
                k = max(bisect_right(w_start, lower, k, j + 1), j + 1 - self.budget)
                if j + 1 - k >= RUN_MIN:
                    run = _Run(lane, w, k, j, t, cats)
                    for code, ns in run.charged():
                        got[("host", lane, cats[code])] += ns
                    segments.append(run)
                    self.t = t = w_start[k]
                    self.budget -= j + 1 - k
                    continue
            a = max(w_start[j], lower)
            code = w_cat[j]
            if self._leaves(lane, w, j, t, lower):
                return False
            owner = w_owner[j]
            if t > a:  # ``charge``, inlined: this is the walk's most frequent move
                what = cats[code]
                got[("host", lane, what)] += t - a
                segments.append(("host", lane, what, a, t, owner if owner >= 0 else None))
            self.t = t = a
            if returns and returns[-1][0] != lane and a <= returns[-1][1]:
                self.lane = self.pop_return(a)
                return False
            if t <= start_ns or self.budget <= 0:
                return False
            self.budget -= 1


@dataclass(frozen=True)
class _Window:
    """Segments of one thread as lists: start, end, category code, owning slice row (-1),
    the first segment of each one's run of plain segments (-1: not plain); the columns
    as arrays, which a run is charged from; and each segment's ``held`` mark and run
    start inside a wait for the thread."""

    start: list[int]
    end: list[int]
    cat: list[int]
    owner: list[int]
    run_from: list[int]
    start_a: np.ndarray
    cat_a: np.ndarray
    owner_a: np.ndarray
    held: list[bool]  # untraced time of a thread holding a range: ``_Walk._held`` decides
    run_from_inside: list[int]  # ``run_from`` while the walk is inside a wait for the thread


class _Run:
    """Plain segments ``k..j`` of one thread charged at once by ``on_host``: their starts,
    codes and owners (copied: the window goes with the walk), the end of the last one
    (the rest end where the next one starts), and the category names."""

    __slots__ = ("lane", "start", "end", "cat", "owner", "cats")

    def __init__(self, lane: int, w: _Window, k: int, j: int, end: int,
                 cats: list[str]) -> None:
        self.lane, self.end, self.cats = lane, end, cats
        self.start = w.start_a[k:j + 1].copy()
        self.cat = w.cat_a[k:j + 1].copy()
        self.owner = w.owner_a[k:j + 1].copy()

    def charged(self) -> list[tuple[int, int]]:
        """(category code, ns) summed per code, exact (int64)."""
        ns = np.diff(self.start, append=self.end)
        if self.cat.size and self.cat.min() == self.cat.max():
            return [(int(self.cat[0]), int(ns.sum()))]
        order = np.argsort(self.cat, kind="stable")
        c = self.cat[order]
        at = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
        return list(zip(c[at].tolist(), np.add.reduceat(ns[order], at).tolist(), strict=True))

    def stretches(self) -> list[Stretch]:
        """Its stretches in time order, as ``on_host`` charges one segment."""
        starts = self.start.tolist()
        ends = [*starts[1:], self.end]
        cats, lane = self.cats, self.lane
        return [("host", lane, cats[c], a, b, o if o >= 0 else None)
                for a, b, c, o in zip(starts, ends, self.cat.tolist(), self.owner.tolist(),
                                      strict=True)]


def _last_worker(timelines: dict[int, HostTimeline], waiter: int, lo: int, hi: int,
                 idle_codes: set[int]) -> tuple[int, int] | None:
    """The other thread whose work (a category that is not idle) ended last in (lo, hi]."""
    best: tuple[int, int] | None = None
    for lane, tl in timelines.items():
        if lane == waiter or tl.seg_end.size == 0:
            continue
        j = int(tl.seg_end.searchsorted(hi, side="left"))
        j = min(j, tl.seg_end.size - 1)
        while j >= 0 and int(tl.seg_start[j]) < hi:
            end = min(int(tl.seg_end[j]), hi)
            if end <= lo:
                break
            if int(tl.seg_cat[j]) not in idle_codes:
                if best is None or end > best[1]:
                    best = (lane, end)
                break
            j -= 1
    return best
