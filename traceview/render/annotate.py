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
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from traceview import intervals
from traceview.analyses.steps import LAUNCH_LATENCY, NOT_SHOWN, phase_intervals
from traceview.atomic import replace_atomic
from traceview.errors import TraceLoadError
from traceview.io.annotations import ANNOTATION_CAT
from traceview.report.build import UNKNOWN
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


@dataclass(frozen=True, slots=True)
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

    slices: dict[str, Sequence[list[AddedSlice] | IdleTrack]]  # track -> sub-tracks -> slices
    flows: list[tuple[int, AddedFlow]]  # (path sub-track, flow)
    instants: list[tuple[str, int, dict[str, Any]]]  # (name, ts, args)


def us(ns: int) -> Decimal:
    """Integer ns as the exact microsecond number a trace holds (three decimals)."""
    return Decimal(int(ns)).scaleb(-3)


# ----------------------------------------------------------------------------- build


def build_annotation(a: Analysis, r: Report) -> Annotation:
    slices: dict[str, Sequence[list[AddedSlice] | IdleTrack]] = {}
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
        idle: list[IdleTrack] = []
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
            idle.append(idle_track(a, lane, st.start_ns, st.end_ns, st.index))
        slices[STEPS] = pack(steps)
        slices[PATH] = [path]
        slices[IDLE] = [IdleTrack.join(idle)]
    else:
        lane = a.timeline.lane.index if a.timeline.lane is not None else None
        slices[IDLE] = [idle_track(a, lane, a.window.start_ns, a.window.end_ns, None)]
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
        # a launch's wait in a trace that lost events: no thread's, as the steps say
        resource = UNKNOWN if what == NOT_SHOWN else lane_label(a, lane)
        out.append(AddedSlice(PATH, what, a0, a1, {
            "kind": kind, "resource": resource, "ns": a1 - a0, "step": st.index}, st.index))
        if target is not None:
            tl = trace.lanes[int(s.lane[target])]
            t0, t1 = int(s.start[target]), int(s.end[target])
            flows.append(AddedFlow((a0 + a1) // 2, tl.pid, tl.tid, (t0 + t1) // 2))
    return out, flows


# gaps cut at a time: bounds the segments held at once (a gap can span thousands)
GAP_BLOCK = 2048


def idle_segments(a: Analysis, step_lane: int | None, start: int, end: int
                  ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The device's idle stretches in [start, end), each charged as ``steps._idle_causes``
    charges them, in time order, a block of gaps at a time: columns (from, to, host
    lane or -1, cause code into ``CAUSES``).

    Each gap goes, up to the launch of the work that ends it, to the launching thread's
    attributed segments (a thread without a timeline: ``untraced``), and after that
    launch to launch latency (``not in the trace`` where the trace lost events, as the
    steps say: ``Analysis.numbering``). Computed over many gaps at once, a bounded block of
    stretches at a time (``_block``): a trace of 12,000 calls has millions of such
    stretches, which a loop per stretch took seconds to cut."""
    trace, s = a.trace, a.trace.slices
    busy = intervals.clip(a.device.busy, start, end)
    g0, g1 = intervals.subtract((np.asarray([start]), np.asarray([end])), busy)
    g0, g1 = np.asarray(g0, np.int64), np.asarray(g1, np.int64)
    work = a.device.work_rows
    w = work[np.argsort(s.start[work], kind="stable")]
    w_st = s.start[w]
    timelines = a.timelines
    lane = np.full(g0.size, -1 if step_lane is None else step_lane, np.int64)
    cut = g1.copy()
    j = np.searchsorted(w_st, g1, side="left")
    for gi in np.flatnonzero(j < w.size).tolist():  # the work that ends each gap
        if int(w_st[j[gi]]) >= end:
            continue
        launch = trace.work_to_launch.get(int(w[j[gi]]))
        if launch is None or int(s.lane[launch]) not in timelines:
            continue
        lane[gi] = int(s.lane[launch])
        cut[gi] = min(max(int(s.start[launch]), int(g0[gi])), int(g1[gi]))
    for lo in range(0, g0.size, GAP_BLOCK):
        hi = min(lo + GAP_BLOCK, g0.size)
        yield from _block(timelines, g0[lo:hi], g1[lo:hi], cut[lo:hi], lane[lo:hi],
                          NOT_SHOWN if a.events_removed else LAUNCH_LATENCY)


# stretches made at a time: one gap of a compile can span millions of host segments,
# and six columns of each at once took 700 MB on a 450 MB trace
STRETCH_BLOCK = 1 << 16


class _Causes:
    """Cause name <-> code, shared by every block and step of one annotation."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._code: dict[str, int] = {}

    def code(self, what: str) -> int:
        if what not in self._code:
            self._code[what] = len(self.names)
            self.names.append(what)
        return self._code[what]


CAUSES = _Causes()  # codes are only compared and named, so one table serves every run


def _block(timelines: dict, g0: np.ndarray, g1: np.ndarray, cut: np.ndarray, lane: np.ndarray,
           after: str = LAUNCH_LATENCY
           ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The gaps' stretches in time order, merged, ``STRETCH_BLOCK`` at a time.

    Each gap is, in order: its launching thread's segments between the gap's start and
    the launch (one ``untraced`` stretch for a thread without a timeline), then the
    launch latency from the launch to the gap's end. Numbering the stretches of all the
    gaps one after another in that order, stretch ``e`` belongs to the gap whose range
    holds it, so any window of numbers is made on its own, already in order."""
    n = g0.size
    j0 = np.zeros(n, np.int64)  # the first host segment of each gap
    before = np.zeros(n, np.int64)  # stretches before the launch
    traced = np.zeros(n, bool)
    live = cut > g0
    for ln in np.unique(lane).tolist():
        on = np.flatnonzero((lane == ln) & live)
        if on.size == 0:
            continue
        tl = timelines.get(ln) if ln >= 0 else None
        if tl is None or not tl.seg_start.size:
            before[on] = 1
            continue
        a0 = np.searchsorted(tl.seg_end, g0[on], side="right")
        a1 = np.searchsorted(tl.seg_start, cut[on], side="left")
        j0[on], before[on], traced[on] = a0, np.maximum(a1 - a0, 0), True
    count = before + (cut < g1)
    ends = np.cumsum(count)
    firsts = ends - count
    total = int(ends[-1]) if n else 0
    untraced, latency = CAUSES.code("untraced"), CAUSES.code(after)
    codes = {ln: np.asarray([CAUSES.code(c) for c in tl.categories], np.int64)
             for ln, tl in timelines.items()}
    for e0 in range(0, total, STRETCH_BLOCK):
        e = np.arange(e0, min(e0 + STRETCH_BLOCK, total), dtype=np.int64)
        g = np.searchsorted(ends, e, side="right")
        o = e - firsts[g]
        late = o >= before[g]
        x0 = np.where(late, cut[g], g0[g])
        x1 = np.where(late, g1[g], cut[g])
        ln_ = np.where(late, -1, lane[g])
        what = np.where(late, latency, untraced)
        seg = ~late & traced[g]
        for ln in np.unique(ln_[seg]).tolist():
            m = np.flatnonzero(seg & (ln_ == ln))
            tl, gm = timelines[ln], g[m]
            k = j0[gm] + o[m]
            x0[m] = np.maximum(tl.seg_start[k], g0[gm])
            x1[m] = np.minimum(tl.seg_end[k], cut[gm])
            what[m] = codes[ln][tl.seg_cat[k].astype(np.int64)]
        keep = x1 > x0
        yield _merged(x0[keep], x1[keep], ln_[keep], what[keep])


def _merged(x0: np.ndarray, x1: np.ndarray, ln: np.ndarray, what: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Adjacent stretches with one cause on one lane become one."""
    if x0.size < 2:
        return x0, x1, ln, what
    new = np.ones(x0.size, bool)
    new[1:] = (x0[1:] != x1[:-1]) | (ln[1:] != ln[:-1]) | (what[1:] != what[:-1])
    heads = np.flatnonzero(new)
    tails = np.append(heads[1:], x0.size) - 1
    return x0[heads], x1[tails], ln[heads], what[heads]


@dataclass(frozen=True)
class IdleTrack:
    """The device idle track as columns: a trace of 12,000 calls has a quarter of a
    million idle slices, held as five arrays and written straight to JSON text
    (:meth:`events`), not as an object and a dict each. Iterating gives the slices as
    ``AddedSlice``s, like every other track."""

    start: np.ndarray
    end: np.ndarray
    lane: np.ndarray  # host lane, -1: the device (launch latency)
    cause: np.ndarray  # code into CAUSES.names
    step: np.ndarray  # the step's index, -1: none
    labels: dict[int, str]  # lane -> the report's name for it

    @staticmethod
    def join(tracks: list[IdleTrack]) -> IdleTrack:
        if not tracks:
            e = np.zeros(0, np.int64)
            return IdleTrack(e, e, e, e, e, {})
        cols = [np.concatenate([getattr(t, k) for t in tracks])
                for k in ("start", "end", "lane", "cause", "step")]
        labels = {k: v for t in tracks for k, v in t.labels.items()}
        return IdleTrack(cols[0], cols[1], cols[2], cols[3], cols[4], labels)

    def __len__(self) -> int:
        return int(self.start.size)

    def __iter__(self) -> Iterator[AddedSlice]:
        for a0, a1, ln, code, step in zip(self.start.tolist(), self.end.tolist(),
                                          self.lane.tolist(), self.cause.tolist(),
                                          self.step.tolist(), strict=True):
            who, cause = self.labels[ln], CAUSES.names[code]
            yield AddedSlice(IDLE, cause if ln < 0 else f"{cause} ({who})", a0, a1,
                             {"waited_for": who, "what": cause, "ns": a1 - a0},
                             None if step < 0 else step)

    def events(self, pid: int, tid: int) -> Iterator[msgspec.Raw]:
        """Each slice's ``X`` event as the JSON text ``annotation_events``' dict would
        encode to, byte for byte (``tests/test_one_source.py``)."""
        enc = _ENCODE.encode
        heads: dict[tuple[int, int], tuple[bytes, bytes]] = {}
        for a0, a1, ln, code in zip(self.start.tolist(), self.end.tolist(),
                                    self.lane.tolist(), self.cause.tolist(), strict=True):
            pair = heads.get((ln, code))
            if pair is None:
                who, cause = self.labels[ln], CAUSES.names[code]
                name = cause if ln < 0 else f"{cause} ({who})"
                pair = heads[(ln, code)] = (
                    b'{"ph":"X","cat":' + enc(ANNOTATION_CAT) + b',"name":' + enc(name)
                    + b',"pid":' + enc(pid) + b',"tid":' + enc(tid) + b',"ts":',
                    b',"args":{"waited_for":' + enc(who) + b',"what":' + enc(cause)
                    + b',"ns":')
            d = a1 - a0
            yield msgspec.Raw(b"".join((pair[0], _us_text(a0), b',"dur":', _us_text(d),
                                        pair[1], str(d).encode(), b"}}")))


def _us_text(ns: int) -> bytes:
    """``us(ns)`` as the encoder writes it (three decimals, exact)."""
    a = -ns if ns < 0 else ns
    return f"{'-' if ns < 0 else ''}{a // 1000}.{a % 1000:03d}".encode()


def idle_track(a: Analysis, lane: int | None, start: int, end: int, step: int | None
               ) -> IdleTrack:
    blocks = list(idle_segments(a, lane, start, end))
    if blocks:
        x0, x1, ln, what = _merged(*(np.concatenate(c) for c in zip(*blocks, strict=True)))
    else:
        x0 = x1 = ln = what = np.zeros(0, np.int64)
    # the stretches after a launch are the device's, or, where the trace lost events,
    # waited for what it does not show (as the steps' table says: ``build.UNKNOWN``)
    removed = a.events_removed
    labels = {int(k): (UNKNOWN if k < 0 and removed else lane_label(a, None if k < 0 else int(k)))
              for k in np.unique(ln).tolist()}
    return IdleTrack(x0, x1, ln, what, np.full(x0.size, -1 if step is None else step,
                                               np.int64), labels)


def idle_slices(a: Analysis, lane: int | None, start: int, end: int, step: int | None
                ) -> list[AddedSlice]:
    """The idle track's slices in [start, end) as ``AddedSlice``s."""
    return list(idle_track(a, lane, start, end, step))


# ----------------------------------------------------------------------------- write


def _pid(used: frozenset[int | str]) -> int:
    """A process id no event of the trace uses."""
    pid = 2**31 - 2
    while pid in used:
        pid -= 1
    return pid


def annotation_events(ann: Annotation, pid: int) -> list[dict[str, Any] | msgspec.Raw]:
    return list(iter_annotation_events(ann, pid))


def iter_annotation_events(ann: Annotation, pid: int) -> Iterator[dict[str, Any] | msgspec.Raw]:
    """The added events in file order, one at a time: a trace of 12,000 calls gets
    hundreds of thousands, which are encoded and written as they come, never all held
    as objects at once."""
    cat = ANNOTATION_CAT
    yield {"ph": "M", "cat": cat, "name": "process_name", "pid": pid, "tid": 0,
           "args": {"name": PROCESS_NAME}}
    tid_of: dict[tuple[str, int], int] = {}
    tid = 1
    for track in TRACK_ORDER:
        subs = ann.slices.get(track) or ([[]] if track == FINDINGS and ann.instants else [])
        for k, _ in enumerate(subs):
            tid_of[(track, k)] = tid
            label = f"traceview: {track}" + (f" ({k + 1})" if k else "")
            yield {"ph": "M", "cat": cat, "name": "thread_name", "pid": pid, "tid": tid,
                    "args": {"name": label}}
            yield {"ph": "M", "cat": cat, "name": "thread_sort_index", "pid": pid,
                    "tid": tid, "args": {"sort_index": tid}}
            tid += 1
    for track, subs in ann.slices.items():
        for k, sl in enumerate(subs):
            t = tid_of[(track, k)]
            if isinstance(sl, IdleTrack):
                yield from sl.events(pid, t)
                continue
            for s in sl:
                yield {"ph": "X", "cat": cat, "name": s.name, "pid": pid, "tid": t,
                        "ts": us(s.start_ns), "dur": us(s.end_ns - s.start_ns),
                        "args": s.args}
    for i, (k, f) in enumerate(ann.flows):
        fid = i + 1
        yield {"ph": "s", "cat": cat, "name": "waited on", "id": fid, "pid": pid,
                "tid": tid_of[(PATH, k)], "ts": us(f.at_ns)}
        yield {"ph": "f", "bp": "e", "cat": cat, "name": "waited on", "id": fid,
                "pid": f.to_pid, "tid": f.to_tid, "ts": us(f.to_ns)}
    if ann.instants:
        t = tid_of[(FINDINGS, 0)]
        for name, ts, args in ann.instants:
            yield {"ph": "i", "s": "t", "cat": cat, "name": name, "pid": pid, "tid": t,
                    "ts": us(ts), "args": args}


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
    added = iter_annotation_events(build_annotation(a, r), _pid(a.trace.pids))
    count = 0

    def encoded() -> Iterator[bytes]:
        """The added events as JSON text, a batch at a time, each batch ``,``-led."""
        nonlocal count
        while batch := list(itertools.islice(added, 4096)):
            count += len(batch)
            yield b"," + _ENCODE.encode(batch)[1:-1]

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
                for i, text in enumerate(encoded()):
                    w.write(text[1:] if i == 0 and last == b"[" else text)
                w.write(piece[k:])
                done = end + 1

    replace_atomic(out, write)
    return count


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
