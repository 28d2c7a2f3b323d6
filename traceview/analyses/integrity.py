"""Trace integrity: what the profiler failed to record, and the figures that rest on it.

A figure read from a trace is only as good as the records under it. The profiler drops
device records (CUPTI's buffers overflow, a second profiling session takes over, a graph
replay's kernels are under-recorded), writes durations that overrun the next event on
the same stream, or records device work with no launch. Each of these is a check here:
its count, the calls (and steps) it touches, and the report figures it makes unreliable
(named by their JSON path, ``docs/json.md``). A graph capture (``cudaStreamBeginCapture``
... ``cudaGraphInstantiate`` in a host lane) is recognised too: the device runs no
captured work while the host captures, so its idle is no verdict on the program.

Calls whose launches have no device record are not warm calls with an idle device:
``analyses.calls`` leaves them out of the warm statistics (``Call.launches_without_work``)
and the check names them here. This module holds figures only; the sentences that say
them are in ``report/`` and ``render/``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traceview.analyses.calls import CallsSummary
from traceview.analyses.device import DeviceSummary
from traceview.analyses.launches import (
    CAPTURE_BEGIN,
    CAPTURE_END,
    LaunchSummary,
    no_record_due,
)
from traceview.analyses.window import Window
from traceview.model import Trace
from traceview.stats import Stats, median, summarize

# Host APIs that instantiate a captured graph (CUDA, driver and HIP spellings).
INSTANTIATE = frozenset({"cudaGraphInstantiate", "cudaGraphInstantiateWithFlags",
                         "cudaGraphInstantiateWithParams", "hipGraphInstantiate",
                         "hipGraphInstantiateWithFlags", "cuGraphInstantiate",
                         "cuGraphInstantiateWithFlags"})

# The figures each kind of damage makes unreliable (JSON paths of explain's report).
_IDLE = ("device.idle_ns", "calls.stats.device_busy_ns", "calls.stats.host_overhead_ns",
         "calls.stats.kernel_ns", "calls.stats.launch_latency_ns", "launches.latency_ns")
_STEP_IDLE = ("steps.steps[].device_busy_ns", "steps.steps[].device_idle_ns")
UNRELIABLE: dict[str, tuple[str, ...]] = {
    "launch-without-device-work": _IDLE,
    "dropped-device-records": _IDLE,
    "dropped-prefix": ("device.idle_ns", "window.dur_ns"),
    "duration-overrun": ("device.busy_ns", "device.idle_ns", "device.kernel_sum_ns",
                         "device.work_sum_ns"),
    "device-work-without-launch": ("launches.latency_ns", "calls.stats.launch_latency_ns"),
    "graph-capture": ("device.idle_ns", "device.busy_ns"),
}
CHECK_IDS = tuple(UNRELIABLE)


@dataclass(frozen=True)
class Check:
    """One kind of damage found: how many records, where, and what it spoils."""

    id: str
    count: int
    calls: tuple[int, ...]  # indices into the calls the damage falls in
    steps: tuple[int, ...]  # those of them that are training steps
    unreliable: tuple[str, ...]  # JSON paths of the figures it makes unreliable
    ns: int = 0  # time it concerns (an overrun's excess; 0 where no time is known)


@dataclass(frozen=True)
class Graphs:
    """CUDA graphs in the window: replays, their nodes, captures."""

    replays: int  # graph launch API calls
    nodes: Stats  # device records per replay
    graph_ids: int  # distinct ``graph id`` values on device work (newer Kineto)
    captures: int  # capture begins in a host lane
    instantiations: int
    capture_ns: int  # host time from the first capture begin to the last end


@dataclass(frozen=True)
class Integrity:
    checks: tuple[Check, ...]  # only the kinds found
    incomplete_calls: tuple[int, ...]  # calls left out of the warm figures
    graphs: Graphs

    @property
    def reliable(self) -> bool:
        return not self.checks

    @property
    def unreliable(self) -> tuple[str, ...]:
        return tuple(sorted({p for c in self.checks for p in c.unreliable}))


# The profiler's number on each CPU event it writes (Kineto's ``Ev Idx``), and the share of
# numbered events after which the numbering skips, from which the trace evidently lost
# events after the profiler wrote it. Every complete trace of the public corpus that has
# the numbers skips at most 5 times (a few in 20,000 events: 0.6% at most, on 884), and
# HTA's sampled traces skip after 62% of their events (``trace_filter/sampled_rank-1``: 1,465
# holes among 2,367 numbered events): a filter or sampler that keeps a few events of every
# stretch leaves a hole after most of them. Fewer than ``REMOVED_MIN_HOLES`` holes is no
# pattern at all (a handful of events, each a hole apart).
NUMBERING_KEY = "Ev Idx"
REMOVED_HOLE_SHARE = 0.1
REMOVED_MIN_HOLES = 20
NUMBERED_CATS = ("cpu_op", "user_annotation")


@dataclass(frozen=True)
class Numbering:
    """The profiler's numbering of the CPU events a trace holds (``NUMBERING_KEY``): how
    many are numbered, how many numbers between the first and the last are missing, and
    at how many places the numbering skips. The profiler numbers every event it writes, one
    after another: numbers missing in between are events removed from the trace after it
    was written (a filter, a sampler), and with them, possibly, the device work and the
    launches the device waited behind."""

    numbered: int
    missing: int
    holes: int

    @property
    def removed(self) -> bool:
        """Whether the trace evidently lost events after the profiler wrote it."""
        return self.holes >= max(REMOVED_MIN_HOLES, REMOVED_HOLE_SHARE * self.numbered)


def lost_events(numbering: Numbering | None) -> bool:
    """Whether a trace whose numbering is ``numbering`` (``event_numbering``: None where
    its events carry no numbers, no evidence either way) lost events after the profiler
    wrote it: launches' waits are then ``not in the trace``, never launch latency."""
    return numbering is not None and numbering.removed


def event_numbering(trace: Trace) -> Numbering | None:
    """The numbering of the trace's CPU ops and ranges (the events whose args the model
    keeps; Kineto numbers its Python frames too, apart), or None where they carry no
    numbers (older profilers, other tools: no evidence either way)."""
    s = trace.slices
    rows = np.flatnonzero(trace.has_cat(set(NUMBERED_CATS)))
    if rows.size == 0:
        return None
    nums = np.unique(s.args.whole_numbers(rows.tolist(), NUMBERING_KEY))
    if nums.size < 2:
        return None
    step = np.diff(nums)
    return Numbering(int(nums.size), int((step - 1).sum()), int((step > 1).sum()))


def _calls_of(starts: np.ndarray, calls: CallsSummary) -> tuple[int, ...]:
    """The calls whose span holds each of ``starts``."""
    if not calls.calls or starts.size == 0:
        return ()
    c_st = np.asarray([c.start_ns for c in calls.calls], np.int64)
    c_en = np.asarray([c.end_ns for c in calls.calls], np.int64)
    order = np.argsort(c_st, kind="stable")
    pos = np.searchsorted(c_st[order], starts, side="right") - 1
    ok = pos >= 0
    cand = order[np.maximum(pos, 0)]
    ok &= starts < c_en[cand]
    return tuple(sorted({int(calls.calls[int(i)].index) for i in cand[ok].tolist()}))


# The runtime's launch with attributes, which a program calls where it sets one, such as
# programmatic dependent launch (the kernel may start before the one before it on its
# stream ends: Hopper and later; vLLM's attention kernels on an H100 overlap their
# predecessors by 1.5 us so), and graph launches, whose nodes on parallel branches or with
# programmatic edges run together though the profiler files them under the stream the
# graph was launched into. Not the driver's cuLaunchKernelEx: Triton launches every kernel
# through it, so it says nothing of an attribute, and a Triton trace keeps the check.
MAY_START_EARLY = frozenset({"cudaLaunchKernelExC", "cudaLaunchKernelEx",
                             "cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch"})


def _may_start_early(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Per device work row: its launch is one of ``MAY_START_EARLY`` (an overlap with the
    work before it on its stream is then no evidence of a recording error)."""
    s = trace.slices
    wtl = trace.work_to_launch
    codes = {i for i, n in enumerate(trace.names) if n in MAY_START_EARLY}
    if not codes:
        return np.zeros(rows.size, bool)
    return np.fromiter((r in wtl and int(s.name[wtl[r]]) in codes for r in rows.tolist()),
                       bool, rows.size)


def _overlapping(trace: Trace, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the device work rows that end after the next work on their stream starts, where
    that next work was not launched to start early; each one's excess ns): one stream
    runs one thing at a time, so such an overlap is a recording error, unless the next
    work was launched to start early (``MAY_START_EARLY``)."""
    s = trace.slices
    if rows.size < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.lexsort((s.end[rows], s.start[rows], s.lane[rows]))
    r = rows[order]
    same = s.lane[r[1:]] == s.lane[r[:-1]]
    excess = s.end[r[:-1]] - s.start[r[1:]]
    bad = same & (excess > 0)
    if bad.any():
        bad[bad] = ~_may_start_early(trace, r[1:][bad])
    return r[:-1][bad], excess[bad]


def analyze_integrity(trace: Trace, window: Window, launches: LaunchSummary,
                      device: DeviceSummary, calls: CallsSummary,
                      step_calls: frozenset[int] = frozenset()) -> Integrity:
    s = trace.slices
    ltw = trace.launch_to_work
    rows = launches.rows
    names = [trace.names[c] for c in s.name[rows].tolist()]
    n_work = trace.launch_work(rows)[0]
    empty = (n_work == 0) & ~no_record_due(trace, rows)
    checks: list[Check] = []

    def add(cid: str, count: int, starts: np.ndarray, ns: int = 0) -> None:
        if count <= 0:
            return
        touched = _calls_of(starts, calls)
        checks.append(Check(cid, count, touched,
                            tuple(i for i in touched if i in step_calls),
                            UNRELIABLE[cid] + (_STEP_IDLE if step_calls and cid in (
                                "launch-without-device-work", "dropped-device-records")
                                else ()), ns))

    if empty.any():
        add("launch-without-device-work", int(empty.sum()), s.start[rows[empty]])
        # a run of empty launches before the first one with device work, with device
        # work after it: the records of an earlier profiling session, lost (a launch
        # whose records the file never holds says nothing either way)
        held = ~np.isin(np.asarray(names, dtype=object), list(launches.unexported))
        h_work, h_empty, h_rows = n_work[held], empty[held], rows[held]
        first_linked = int(np.argmax(h_work > 0)) if (h_work > 0).any() else -1
        if first_linked >= 2 and h_empty[:first_linked].all():
            add("dropped-prefix", first_linked, s.start[h_rows[:first_linked]])

    # graph replays with fewer device records than their graph's replays usually have
    is_graph = np.asarray(["GraphLaunch" in n for n in names], bool)
    g_rows, g_work = rows[is_graph], n_work[is_graph]
    gid_of = [_graph_id(trace, ltw.get(r, ())) for r in g_rows.tolist()]
    short = np.zeros(g_rows.size, np.int64)
    for gid in set(gid_of):
        m = np.asarray([g == gid for g in gid_of], bool)
        typical = int(median(g_work[m].tolist())) if m.any() else 0
        short[m] = np.where(g_work[m] > 0, np.maximum(typical - g_work[m], 0), 0)
        if short[m].any():
            short[m] = _other_graphs(trace, device.work_rows, g_rows[m], g_work[m],
                                     typical, short[m])
    if short.any():
        add("dropped-device-records", int(short.sum()), s.start[g_rows[short > 0]])

    bad, excess = _overlapping(trace, device.work_rows)
    if bad.size:
        add("duration-overrun", int(bad.size), s.start[bad], int(excess.sum()))
    if launches.unlinked_work:
        add("device-work-without-launch", launches.unlinked_work,
            s.start[launches.unlinked_rows])

    graphs = _graphs(trace, window, g_work,
                     {g for g in gid_of if g is not None and not isinstance(g, tuple)})
    if graphs.captures or graphs.instantiations:
        cap = _api_rows(trace, window, CAPTURE_BEGIN | INSTANTIATE)
        add("graph-capture", graphs.captures or graphs.instantiations, s.start[cap],
            graphs.capture_ns)

    incomplete = tuple(c.index for c in calls.calls if c.launches_without_work)
    return Integrity(tuple(checks), incomplete, graphs)


# A replay short of its graph's usual nodes is another graph where its stream ran other
# work before a replay of that graph could have ended: sooner than this share of the
# graph's usual device span after the replay's first record. A replay that lost records
# still ran them, so its stream is free only after about the usual span; and replays of
# one graph run within 2% of one span (157.5 to 160.5 us over 31 replays of vLLM's layer
# graph in nCompass' Nsight Systems capture, 5.20 to 5.22 ms over nine of its decode
# graph), while its prefill's last piece, 8 of the layer graph's 12 nodes by name, left
# its stream free for other work 142 us after its first record, 89% of the 160 us
OTHER_GRAPH_SPAN_SHARE = 0.95


def _other_graphs(trace: Trace, work_rows: np.ndarray, rows: np.ndarray, n_work: np.ndarray,
                  typical: int, short: np.ndarray) -> np.ndarray:
    """``short`` with 0 for the replays that ran another graph than the group's usual
    one, though their first node has its name (vLLM's piecewise graphs of a prefill and
    the whole-model graph of its decode steps both begin with the embedding's kernel):
    their stream ran other work too soon after them for the missing nodes to have run."""
    s = trace.slices
    spans = []
    for r, n in zip(rows.tolist(), n_work.tolist(), strict=True):
        w = np.asarray(trace.launch_to_work.get(r, ()), np.int64)
        if n == typical and w.size:
            spans.append(int(s.end[w].max() - s.start[w].min()))
    if not spans:
        return short
    usual = median(spans)
    out = short.copy()
    for i in np.flatnonzero(short).tolist():
        w = np.asarray(trace.launch_to_work.get(int(rows[i]), ()), np.int64)
        first, last = int(s.start[w].min()), int(s.end[w].max())
        lanes = np.unique(s.lane[w])
        others = work_rows[np.isin(s.lane[work_rows], lanes) & ~np.isin(work_rows, w)
                           & (s.start[work_rows] >= last)]
        if others.size and int(s.start[others].min()) - first < OTHER_GRAPH_SPAN_SHARE * usual:
            out[i] = 0
    return out


def _graph_id(trace: Trace, work: list[int] | tuple[int, ...]) -> object:
    """Which graph a replay ran: the ``graph id`` newer Kineto writes on its device work;
    without one, its first node's name (the replays of two graphs differ in their nodes,
    and a replay that lost records usually keeps its first)."""
    s = trace.slices
    first = None
    for w in work:
        g = s.args.get(w, {}).get("graph id")
        if g is not None:
            return g
        if first is None or s.start[w] < s.start[first]:
            first = w
    return None if first is None else ("first node", trace.names[int(s.name[first])])


def _api_rows(trace: Trace, window: Window, names: frozenset[str]) -> np.ndarray:
    s = trace.slices
    codes = [i for i, n in enumerate(trace.names) if n in names]
    if not codes:
        return np.zeros(0, np.int64)
    m = trace.has_name(codes) & (s.start >= window.start_ns) & (s.start < window.end_ns)
    host = np.asarray([ln.kind != "device" for ln in trace.lanes], bool)
    m &= host[s.lane] if host.size else False
    rows = np.flatnonzero(m)
    return rows[np.argsort(s.start[rows], kind="stable")]


def _graphs(trace: Trace, window: Window, g_work: np.ndarray, ids: set[object]) -> Graphs:
    s = trace.slices
    begins = _api_rows(trace, window, CAPTURE_BEGIN)
    ends = _api_rows(trace, window, CAPTURE_END)
    inst = _api_rows(trace, window, INSTANTIATE)
    capture_ns = 0
    if begins.size and ends.size:
        capture_ns = max(0, int(s.end[ends].max()) - int(s.start[begins].min()))
    return Graphs(int(g_work.size), summarize(g_work.tolist()), len(ids), int(begins.size),
                  int(inst.size), capture_ns)
