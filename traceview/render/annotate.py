"""``explain TRACE --annotate OUT.json.gz``: the original trace plus traceview's tracks.

The output holds every event of the input, unchanged (numbers keep their exact text),
and, in a process named ``traceview``, these tracks (Perfetto and chrome://tracing draw
them beside the trace's own threads and streams):

* ``traceview: calls``: one slice per call, named as the report names it, with its kind,
  cold and outlier state (and their reasons) and its metrics in the args;
* ``traceview: steps and phases``: one slice per training step, and inside it one slice
  per stretch of each phase (data loading, forward, backward, optimizer, other);
* ``traceview: critical path``: the step's critical path in time order, one slice per
  item of the walk (``analyses/critical_path.py``), which tile the step: their lengths
  add up to its wall time. A flow arrow leads from each slice that stood on or waited
  for other work (a kernel on the path, the work a kernel queued behind, the launch a
  kernel waited for, the device work a synchronize waited for) to that work;
* ``traceview: device idle``: the device's idle stretches inside each step (the window,
  without steps), each named by what the device waited for (a thread's category, or
  launch latency), as ``steps.py`` charges them;
* ``traceview: findings``: each finding as an instant event at the window's start.

Every added event has the category ``traceview`` (``io/annotations.py``); the loader
leaves them out, so the annotated trace explains to the same figures as the original.
Slices on each added track nest properly and never partially overlap (the JSON importer
rule of Perfetto and chrome://tracing: "events are only allowed to perfectly nest");
overlapping calls go to a second calls track. The file is written to a temporary name
beside the target and renamed over it.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from traceview import intervals
from traceview.analyses.steps import LAUNCH_LATENCY, phase_intervals
from traceview.atomic import replace_atomic
from traceview.errors import TraceLoadError
from traceview.io.annotations import ANNOTATION_CAT
from traceview.report.build import _label as lane_label  # the report's names for lanes
from traceview.report.explanation import Analysis
from traceview.report.model import Report

if TYPE_CHECKING:
    from traceview.io.sources import Source

PROCESS_NAME = "traceview"
CALLS, STEPS, PATH, IDLE, FINDINGS = "calls", "steps and phases", "critical path", \
    "device idle", "findings"
TRACK_ORDER = (CALLS, STEPS, PATH, IDLE, FINDINGS)
# flows go from a path slice to the work it waited on for these kinds of path items
FLOW_KINDS = frozenset({"device", "queued", "launch_latency"})

_ENCODE = msgspec.json.Encoder(decimal_format="number")


@dataclass(frozen=True)
class AddedSlice:
    track: str
    name: str
    start_ns: int
    end_ns: int
    args: dict[str, Any]
    step: int | None = None  # the step's call index, for the per-step tracks


@dataclass(frozen=True)
class AddedFlow:
    at_ns: int  # inside the path slice
    to_pid: int | str
    to_tid: int | str
    to_ns: int  # inside the target slice


@dataclass(frozen=True)
class Annotation:
    """What ``--annotate`` adds: slices per track (each track's slices in start order),
    flows and instants."""

    slices: dict[str, list[list[AddedSlice]]]  # track -> its sub-tracks -> slices
    flows: list[tuple[int, AddedFlow]]  # (path sub-track, flow)
    instants: list[tuple[str, int, dict[str, Any]]]  # (name, ts, args)


def us(ns: int) -> Decimal:
    """Integer ns as the exact microsecond number a trace holds (three decimals)."""
    return Decimal(int(ns)).scaleb(-3)


# ----------------------------------------------------------------------------- build


def build_annotation(a: Analysis, r: Report) -> Annotation:
    slices: dict[str, list[list[AddedSlice]]] = {}
    calls = [AddedSlice(CALLS, c.name or f"call {c.index}", c.start_ns, c.end_ns, {
        "index": c.index, "kind": c.kind, "cold": c.cold, "cold_reason": c.cold_reason,
        "outlier": c.outlier, "outlier_reason": c.outlier_reason, "launches": c.launches,
        "kernels": c.kernels, **{k: v for k, v in c.metrics.items()}})
        for c in r.calls.per_call if c.end_ns > c.start_ns]
    slices[CALLS] = pack(calls)
    flows: list[tuple[int, AddedFlow]] = []
    if a.steps:
        step_rows = {s.index: s for s in r.steps.steps} if r.steps else {}
        steps: list[AddedSlice] = []
        path: list[AddedSlice] = []
        idle: list[AddedSlice] = []
        lane = a.timeline.lane.index if a.timeline.lane is not None else None
        for st in a.steps:
            row = step_rows.get(st.index)
            steps.append(AddedSlice(STEPS, st.name, st.start_ns, st.end_ns, {
                "index": st.index, "cold": st.cold,
                "wall_ns": st.end_ns - st.start_ns,
                "device_busy_ns": st.device_busy_ns,
                "device_idle_ns": row.device_idle_ns if row else None}, st.index))
            if lane is not None:
                for phase, iv in phase_intervals(a.trace, a.rules, lane, st.start_ns,
                                                 st.end_ns).items():
                    for s0, s1 in zip(iv[0].tolist(), iv[1].tolist(), strict=True):
                        steps.append(AddedSlice(STEPS, phase, s0, s1, {"phase": phase},
                                                st.index))
            p, f = path_slices(a, st)
            path += p
            flows += [(0, x) for x in f]
            idle += idle_slices(a, lane, st.start_ns, st.end_ns, st.index)
        slices[STEPS] = pack(steps)
        slices[PATH] = [path]
        slices[IDLE] = [idle]
    else:
        lane = a.timeline.lane.index if a.timeline.lane is not None else None
        slices[IDLE] = [idle_slices(a, lane, a.window.start_ns, a.window.end_ns, None)]
    instants = [(f.id, r.window.start_ns, {"severity": f.severity, "message": f.message})
                for f in r.findings]
    return Annotation(slices, flows, instants)


def _nest_order(s: AddedSlice) -> tuple[int, int]:
    """Parents before their children: by start, the longer first."""
    return (s.start_ns, -(s.end_ns - s.start_ns))


def pack(items: list[AddedSlice]) -> list[list[AddedSlice]]:
    """Slices into as few sub-tracks as keep each one free of partial overlaps: a slice
    goes to the first sub-track whose open slices it nests in or follows."""
    tracks: list[list[AddedSlice]] = []
    opened: list[list[int]] = []  # per sub-track: the ends of its open slices (a stack)
    for s in sorted(items, key=_nest_order):
        for k, stack in enumerate(opened):
            while stack and stack[-1] <= s.start_ns:
                stack.pop()
            if not stack or s.end_ns <= stack[-1]:
                stack.append(s.end_ns)
                tracks[k].append(s)
                break
        else:
            tracks.append([s])
            opened.append([s.end_ns])
    return tracks


def path_slices(a: Analysis, st) -> tuple[list[AddedSlice], list[AddedFlow]]:
    """The step's critical path in time order: runs of one (kind, resource, what) merged
    into one slice; a flow from each slice that stood on or waited for other work."""
    trace = a.trace
    s = trace.slices
    out: list[AddedSlice] = []
    flows: list[AddedFlow] = []
    runs: list[list[Any]] = []  # [kind, lane, what, start, end, target row]
    for seg in st.path.segments:
        target = seg.row if (seg.kind in FLOW_KINDS or seg.what == "sync") else None
        if runs and runs[-1][0] == seg.kind and runs[-1][1] == seg.lane \
                and runs[-1][2] == seg.what and runs[-1][4] == seg.start_ns \
                and (target is None or runs[-1][5] in (None, target)):
            runs[-1][4] = seg.end_ns
            runs[-1][5] = runs[-1][5] if runs[-1][5] is not None else target
        else:
            runs.append([seg.kind, seg.lane, seg.what, seg.start_ns, seg.end_ns, target])
    for kind, lane, what, a0, a1, target in runs:
        resource = lane_label(a, lane)
        out.append(AddedSlice(PATH, what, a0, a1, {
            "kind": kind, "resource": resource, "ns": a1 - a0, "step": st.index}, st.index))
        if target is not None:
            tl = trace.lanes[int(s.lane[target])]
            t0, t1 = int(s.start[target]), int(s.end[target])
            flows.append(AddedFlow((a0 + a1) // 2, tl.pid, tl.tid, (t0 + t1) // 2))
    return out, flows


def idle_segments(a: Analysis, step_lane: int | None, start: int, end: int
                  ) -> list[tuple[int, int, int | None, str]]:
    """The device's idle stretches in [start, end), each charged as ``steps._idle_causes``
    charges them: (from, to, host lane or None, category or launch latency)."""
    trace, s = a.trace, a.trace.slices
    busy = intervals.clip(a.device.busy, start, end)
    gaps = intervals.subtract((np.asarray([start]), np.asarray([end])), busy)
    work = a.device.work_rows
    w = work[np.argsort(s.start[work], kind="stable")]
    w_st = s.start[w]
    timelines = a.timelines
    out: list[tuple[int, int, int | None, str]] = []
    for g0, g1 in zip(gaps[0].tolist(), gaps[1].tolist(), strict=True):
        j = int(np.searchsorted(w_st, g1, side="left"))
        nxt = int(w[j]) if j < w.size and int(w_st[j]) < end else None
        launch = trace.work_to_launch.get(nxt) if nxt is not None else None
        if launch is None or int(s.lane[launch]) not in timelines:
            lane, cut = step_lane, g1
        else:
            lane = int(s.lane[launch])
            cut = min(max(int(s.start[launch]), g0), g1)
        tl = timelines.get(lane) if lane is not None else None
        if tl is not None and tl.seg_start.size and cut > g0:
            j0 = int(np.searchsorted(tl.seg_end, g0, side="right"))
            j1 = int(np.searchsorted(tl.seg_start, cut, side="left"))
            for k in range(j0, j1):
                x0, x1 = max(int(tl.seg_start[k]), g0), min(int(tl.seg_end[k]), cut)
                if x1 > x0:
                    out.append((x0, x1, lane, tl.categories[int(tl.seg_cat[k])]))
        elif cut > g0:
            out.append((g0, cut, lane, "untraced"))
        if cut < g1:
            out.append((cut, g1, None, LAUNCH_LATENCY))
    return out


def idle_slices(a: Analysis, lane: int | None, start: int, end: int, step: int | None
                ) -> list[AddedSlice]:
    out: list[AddedSlice] = []
    merged: list[list[Any]] = []  # adjacent stretches with one cause become one slice
    for x0, x1, ln, what in idle_segments(a, lane, start, end):
        if merged and merged[-1][1] == x0 and merged[-1][2] == ln and merged[-1][3] == what:
            merged[-1][1] = x1
        else:
            merged.append([x0, x1, ln, what])
    for x0, x1, ln, what in merged:
        who = lane_label(a, ln)
        name = what if ln is None else f"{what} ({who})"
        out.append(AddedSlice(IDLE, name, x0, x1, {"waited_for": who, "what": what,
                                                    "ns": x1 - x0}, step))
    return out


# ----------------------------------------------------------------------------- write


def _pid(used: frozenset[int | str]) -> int:
    """A process id no event of the trace uses."""
    pid = 2**31 - 2
    while pid in used:
        pid -= 1
    return pid


def annotation_events(ann: Annotation, pid: int) -> list[dict[str, Any]]:
    cat = ANNOTATION_CAT
    ev: list[dict[str, Any]] = [{"ph": "M", "cat": cat, "name": "process_name", "pid": pid,
                                 "tid": 0, "args": {"name": PROCESS_NAME}}]
    tid_of: dict[tuple[str, int], int] = {}
    tid = 1
    for track in TRACK_ORDER:
        subs = ann.slices.get(track) or ([[]] if track == FINDINGS and ann.instants else [])
        for k, _ in enumerate(subs):
            tid_of[(track, k)] = tid
            label = f"traceview: {track}" + (f" ({k + 1})" if k else "")
            ev.append({"ph": "M", "cat": cat, "name": "thread_name", "pid": pid, "tid": tid,
                       "args": {"name": label}})
            ev.append({"ph": "M", "cat": cat, "name": "thread_sort_index", "pid": pid,
                       "tid": tid, "args": {"sort_index": tid}})
            tid += 1
    for track, subs in ann.slices.items():
        for k, sl in enumerate(subs):
            t = tid_of[(track, k)]
            for s in sl:
                ev.append({"ph": "X", "cat": cat, "name": s.name, "pid": pid, "tid": t,
                           "ts": us(s.start_ns), "dur": us(s.end_ns - s.start_ns),
                           "args": s.args})
    for i, (k, f) in enumerate(ann.flows):
        fid = i + 1
        ev.append({"ph": "s", "cat": cat, "name": "waited on", "id": fid, "pid": pid,
                   "tid": tid_of[(PATH, k)], "ts": us(f.at_ns)})
        ev.append({"ph": "f", "bp": "e", "cat": cat, "name": "waited on", "id": fid,
                   "pid": f.to_pid, "tid": f.to_tid, "ts": us(f.to_ns)})
    if ann.instants:
        t = tid_of[(FINDINGS, 0)]
        for name, ts, args in ann.instants:
            ev.append({"ph": "i", "s": "t", "cat": cat, "name": name, "pid": pid, "tid": t,
                       "ts": us(ts), "args": args})
    return ev


def write_annotated(source: Source, out: Path, a: Analysis, r: Report) -> int:
    """Write ``source``'s text with the annotation's events added at the end of its event
    array to ``out`` (gzipped when its name ends in .gz), atomically; the count of events
    added.

    The original text is streamed through piece by piece, never parsed again: the
    decoder noted where the event array closes (``Trace.events_end``), and the added
    events, encoded on their own, go in just before that ``]``. So every byte of the
    input is kept as written, and the copy costs a read and a compression, not a
    second decode into Python objects (which took 4x explain's time and 5x its memory).
    """
    from traceview.io.pieces import pieces

    end = a.trace.events_end
    if end is None:
        raise TraceLoadError(source.ref, "cannot annotate: the trace is cut short, so "
                                         "its event array has no end to add events at")
    added = annotation_events(build_annotation(a, r), _pid(a.trace.pids))
    text = b",".join(_ENCODE.encode(e) for e in added)

    def write(tmp: Path) -> None:
        with _open_out(tmp, gz=out.name.endswith(".gz")) as w:
            done = 0  # text bytes written
            last = b""  # the last non-blank byte before the array's end
            for piece in pieces(source, [0]):
                if done > end:
                    w.write(piece)
                    continue
                k = end - done  # where the array's ']' is in this piece, if it is
                if k >= len(piece):
                    w.write(piece)
                    last = piece.rstrip(_BLANK)[-1:] or last
                    done += len(piece)
                    continue
                w.write(piece[:k])
                last = piece[:k].rstrip(_BLANK)[-1:] or last
                if text:
                    w.write(text if last == b"[" else b"," + text)
                w.write(piece[k:])
                done = end + 1

    replace_atomic(out, write)
    return len(added)


_BLANK = b" \t\r\n"


def _open_out(path: Path, *, gz: bool) -> Any:
    """The output file: plain, or gzip (ISA-L's when installed: several times faster
    than zlib's level 6, for a file a few percent larger)."""
    if not gz:
        return open(path, "wb")  # noqa: SIM115 - the caller's with closes it
    try:
        from isal import igzip

        return igzip.open(path, "wb", compresslevel=2)
    except ImportError:
        return gzip.open(path, "wb", compresslevel=6)


def nests_properly(slices: list[tuple[int, int]]) -> bool:
    """Perfetto's rule for one track: after sorting by start (longer first), every slice
    ends no later than each open slice that contains its start."""
    stack: list[int] = []
    for a0, a1 in sorted(slices, key=lambda x: (x[0], -(x[1] - x[0]))):
        if a1 < a0:
            return False
        while stack and stack[-1] <= a0:
            stack.pop()
        if stack and a1 > stack[-1]:
            return False
        stack.append(a1)
    return True
