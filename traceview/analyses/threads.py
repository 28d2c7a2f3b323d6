"""Host threads as lanes: which thread is which, which one the calls live on, and each
thread's own figures.

A training step runs on several host threads at once: the main thread (forward, the
optimizer, ``cudaDeviceSynchronize``), PyTorch's autograd engine thread
(``pt_autograd_0``: backward), the DataLoader's pin-memory thread (``pt_data_pin``) and
helper threads that only wait (tqdm's monitor, Inductor's compile-worker readers). Each is
analysed on its own (``host.attribute_host`` per lane); nothing here adds one thread's
time to another's.

The **main thread** is chosen by evidence (``main_thread``: the step ranges, then the most
launches, then the most events), never by its ids: Kineto records Python threads it has
no id for (tqdm's monitor) at TID 0, and a trace's pid and tid can both be 0.

The **autograd thread** is chosen by evidence too (``autograd_threads``): in each process,
the thread that runs most of its autograd engine work (the ``backward`` phase rules that
mark engine work on any thread: ``autograd::engine::evaluate_function: ...``, or on
PyTorch 1.8-1.9 traces without them the backward nodes themselves), unless it is the main
thread. The ``pt_autograd`` name is only a supporting hint: older profilers name that
thread ``thread 59977 (python3)``, and its work is what makes it the backward thread.

The **attributed thread** (the one the calls and the per-call table are on) is, in order:
``--thread`` (a TID, a thread name such as ``pt_autograd_0``, ``main``, or ``PID/TID``);
the thread holding the ``ProfilerStep#N`` ranges; the thread that launched the most
device work; the busiest thread.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Literal

import numpy as np

from traceview.analyses.host import OVERLAY_CATS, HostTimeline
from traceview.analyses.launches import launch_rows
from traceview.analyses.window import Window
from traceview.errors import UsageError
from traceview.model import DEVICE_CATS, NON_ACTIVITY_CATS, Lane, Trace, codes_in
from traceview.rules import UNTRACED, PhaseRule, RuleSet

ThreadRole = Literal["main", "autograd", "data", "helper", "other"]
STEP = re.compile(r"^ProfilerStep#\d+$")
# categories that are not the thread's work: a thread whose traced time is only these did
# nothing. profiler: the profiler's own overhead, laid over every thread it may have
# interrupted (host.host_rows_by_lane), so it would make every idle thread look busy
NOT_WORK = frozenset({UNTRACED, "wait", "profiler"})
# a thread that launches nothing, syncs nothing and works under this share of the window
# is a helper (tqdm's monitor, a queue feeder, Inductor's compile-worker readers)
HELPER_WORK_SHARE = 0.01


@dataclass(frozen=True)
class ThreadFigures:
    """One host thread over the window (each figure on this thread alone)."""

    lane: Lane
    role: ThreadRole
    launches: int
    syncs: int  # synchronize calls (runtime/driver API) that started in the window
    python_frames: int
    categories: dict[str, int]  # the thread's own attribution; sums to the window
    work_ns: int  # traced time that is work (not untraced, not waiting)


def _role(lane: Lane, main: Lane | None, autograd: frozenset[int] = frozenset()) -> ThreadRole:
    """A thread's role from evidence: ``main`` for the thread ``main_thread`` picks by
    what it did, ``autograd`` for a thread ``autograd_threads`` finds running its
    process's backward, and PyTorch's own thread names as a supporting hint (a
    ``pt_autograd`` thread that ran nothing in the window is still the engine's). Never
    from its ids: a helper thread (tqdm's monitor) recorded at ``0/0`` has pid == tid
    and is no main thread. ``autograd`` is empty where only the main thread matters
    (``describe`` words only that role)."""
    name = lane.thread_name
    if name.startswith("pt_autograd"):
        return "autograd"
    if name.startswith("pt_data") or "pin_memory" in name:
        return "data"
    if main is not None and lane.index == main.index:
        return "main"
    if lane.index in autograd:
        return "autograd"
    return "other"


def marked_by(trace: Trace, rule: PhaseRule) -> np.ndarray | None:
    """The slices a phase rule marks, as a mask over the trace's slices (its names and,
    where it names them, its categories), or None where no name matches."""
    codes = [i for i, n in enumerate(trace.names) if rule.pattern.search(n)]
    if not codes:
        return None
    hit = trace.has_name(codes)
    if rule.cats is not None:
        hit &= codes_in(trace.slices.cat, [trace.cat_code(c) for c in rule.cats],
                        len(trace.cat_names))
    return hit


def autograd_threads(trace: Trace, rules: RuleSet, window: Window,
                     main: Lane | None) -> frozenset[int]:
    """The lanes that are their process's autograd (backward) thread by what they ran:
    in each process, the thread holding more than half of the process's autograd engine
    events that start in the window, unless it is the main thread.

    The engine events are those of the rules file's ``backward`` phase rules that mark
    engine work on any thread (``any_thread``), the first such rule that matches
    anything: ``autograd::engine::evaluate_function: ...`` where the profiler wrote it,
    else (PyTorch 1.8-1.9) the backward nodes themselves (``MmBackward``,
    ``torch::autograd::AccumulateGrad``). A count of events, not their time: the engine
    thread runs each node once, whatever it costs. Per process, because ranks fused into
    one file each have their own engine thread. A majority, not the most: where a
    process's backward is spread over several engine threads (one per device) none of
    them is *the* backward thread by this evidence. The main thread is never autograd: on
    the CPU the engine runs the backward on the thread that called it, which stays main."""
    marks = [r for r in rules.phases
             if r.phase == "backward" and r.any_thread and r.before is None]
    s = trace.slices
    for rule in marks:
        hit = marked_by(trace, rule)
        if hit is None:
            continue
        rows = _in(trace, np.flatnonzero(hit), window)
        if rows.size:
            break
    else:
        return frozenset()
    per_lane = Counter(s.lane[rows].tolist())
    per_pid: Counter[object] = Counter()
    for idx, n in per_lane.items():
        per_pid[trace.lanes[idx].pid] += n
    return frozenset(idx for idx, n in per_lane.items()
                     if 2 * n > per_pid[trace.lanes[idx].pid]
                     and (main is None or idx != main.index))


def main_thread(trace: Trace, window: Window | None = None) -> Lane | None:
    """The main thread, by evidence, in order: the thread holding the most
    ``ProfilerStep#N`` ranges; the one that launched the most device work; the one with
    the most events of its own. Ties go to the lowest ``PID/TID`` text. Threads named as
    PyTorch's helpers (autograd engine, DataLoader pin memory) are never main."""
    if window is not None:
        found = step_thread(trace, window)
        if found is not None:
            return found
    else:
        found = _most_steps(trace)
        if found is not None:
            return found
    hosts = [ln for ln in host_threads(trace)
             if not ln.thread_name.startswith(("pt_autograd", "pt_data"))
             and "pin_memory" not in ln.thread_name]
    if not hosts:
        return None
    s = trace.slices
    rows = np.fromiter(trace.launch_to_work, np.int64, len(trace.launch_to_work))
    if window is not None and rows.size:
        st = s.start[rows]
        rows = rows[(st >= window.start_ns) & (st < window.end_ns)]
    launches = Counter(s.lane[rows].tolist())
    own = Counter(s.lane[_own_rows(trace)].tolist())
    return min(hosts, key=lambda ln: (-launches.get(ln.index, 0), -own.get(ln.index, 0),
                                      str(ln.pid), str(ln.tid)))


def _most_steps(trace: Trace) -> Lane | None:
    s = trace.slices
    ua = trace.cat_code("user_annotation")
    if ua < 0:
        return None
    codes = [i for i, n in enumerate(trace.names) if STEP.match(n)]
    rows = np.flatnonzero((s.cat == ua) & trace.has_name(codes))
    if rows.size == 0:
        return None
    counts = Counter(s.lane[rows].tolist())
    best = min(counts, key=lambda i: (-counts[i], str(trace.lanes[i].pid), str(trace.lanes[i].tid)))
    return trace.lanes[best]


def describe(lane: Lane, role: ThreadRole | None = None) -> str:
    """How the outputs name a thread: ``main thread [502/502]``, ``pt_autograd_0 [502/543]``."""
    base = f"{lane.pid}/{lane.tid}"
    name = lane.thread_name
    if role == "main" and (not name or name.startswith("python") or name == "thread"):
        return f"main thread [{base}]"
    if str(lane.tid) == "0" and not name:
        return f"Python threads without an id [{base}]"
    return f"{name} [{base}]" if name else f"thread {base}"


def host_threads(trace: Trace) -> list[Lane]:
    """The host lanes that are threads: those with activity of their own (a CPU op, a
    Python frame, a runtime call, a user range). Kineto also writes metadata-only lanes
    (a device stream's name row, ``PID/0`` process rows, the profiler's ``Spans``) that
    hold nothing a thread did; they are never offered or accepted as ``--thread``."""
    lanes = set(np.unique(trace.slices.lane[_own_rows(trace)]).tolist())
    return [ln for ln in trace.host_lanes if ln.index in lanes]


def _own_rows(trace: Trace) -> np.ndarray:
    """The rows that are some thread's own activity (no labels, overlays, device work)."""
    s = trace.slices
    not_own = {i for i, c in enumerate(trace.cat_names)
               if c in NON_ACTIVITY_CATS or c in OVERLAY_CATS or c in DEVICE_CATS}
    return np.flatnonzero(~trace.has_cat({trace.cat_names[i] for i in not_own})) if not_own \
        else np.arange(len(s))


def resolve_thread(trace: Trace, spec: str) -> Lane:
    """``--thread``: ``PID/TID``, a TID, a thread name (``pt_autograd_0``), ``main`` or
    ``main thread``; host threads only (``host_threads``)."""
    hosts = host_threads(trace)
    spec = spec.strip()
    main_words = ("main", "main thread")
    main = main_thread(trace)
    tests = [
        lambda ln: bool(spec) and f"{ln.pid}/{ln.tid}" == spec,
        lambda ln: bool(spec) and str(ln.tid) == spec,
        lambda ln: bool(spec) and (ln.thread_name == spec or ln.name == spec
                                   or describe(ln, _role(ln, main)) == spec),
        lambda ln: spec.lower() in main_words and main is not None and ln.index == main.index,
    ]
    for test in tests:
        hits = [ln for ln in hosts if test(ln)]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise UsageError(f"--thread {spec}: {len(hits)} threads match "
                             f"({', '.join(describe(ln, _role(ln, main)) for ln in hits)}); "
                             "use PID/TID")
    raise UsageError(f"--thread {spec!r}: no such host thread (host threads: "
                     f"{thread_choices(trace)})")


def thread_choices(trace: Trace) -> str:
    """The host threads ``--thread`` accepts, on one line."""
    main = main_thread(trace)
    return ", ".join(describe(ln, _role(ln, main)) for ln in host_threads(trace)) or "none"


def step_thread(trace: Trace, window: Window) -> Lane | None:
    """The host thread holding the most ``ProfilerStep#N`` ranges in the window."""
    s = trace.slices
    ua = trace.cat_code("user_annotation")
    if ua < 0:
        return None
    rows = np.flatnonzero((s.cat == ua) & (s.start >= window.start_ns) & (s.start < window.end_ns))
    counts: Counter[int] = Counter()
    for r in rows.tolist():
        if STEP.match(trace.names[int(s.name[r])]):
            counts[int(s.lane[r])] += 1
    if not counts:
        return None
    best = min(counts, key=lambda i: (-counts[i], str(trace.lanes[i].pid), str(trace.lanes[i].tid)))
    return trace.lanes[best]


# rows read at a time by thread_figures
FRAME_BLOCK = 1 << 20


def thread_figures(trace: Trace, rules: RuleSet, window: Window,
                   timelines: dict[int, HostTimeline]) -> list[ThreadFigures]:
    """Every host thread with rows in the window, main thread first, then by TID."""
    s = trace.slices
    launches = Counter(s.lane[_in(trace, launch_rows(trace, rules), window)].tolist())
    api = [i for i, c in enumerate(trace.cat_names) if c in ("cuda_runtime", "cuda_driver")]
    api_rows = np.flatnonzero(codes_in(s.cat, api, len(trace.cat_names)))
    sync_names = [int(n) for n in np.unique(s.name[api_rows]).tolist()
                  if rules.classify("cuda_runtime", trace.names[int(n)])[0] == "sync"]
    sync_rows = _in(trace, api_rows[np.isin(s.name[api_rows], sync_names)], window)
    syncs = Counter(s.lane[sync_rows].tolist())
    py = trace.cat_code("python_function")
    main = main_thread(trace, window)
    autograd = autograd_threads(trace, rules, window, main)
    out = []
    for idx, tl in timelines.items():
        lane = trace.lanes[idx]
        cats = tl.totals()
        # counted a block of rows at a time (a cold compile's main thread: tens of millions)
        frames = sum(int(np.count_nonzero(s.cat[tl.rows[lo:lo + FRAME_BLOCK]] == py))
                     for lo in range(0, tl.rows.size, FRAME_BLOCK)) if py >= 0 else 0
        out.append(ThreadFigures(
            lane=lane, role=_role(lane, main, autograd), launches=int(launches.get(idx, 0)),
            syncs=int(syncs.get(idx, 0)), python_frames=frames,
            categories={c: v for c, v in cats.items() if v},
            work_ns=sum(v for c, v in cats.items() if c not in NOT_WORK)))
    floor = HELPER_WORK_SHARE * max(window.dur_ns, 1)
    out = [t if t.role != "other" or t.work_ns > floor or t.launches or t.syncs else
           ThreadFigures(t.lane, "helper", t.launches, t.syncs, t.python_frames, t.categories,
                         t.work_ns) for t in out]
    order = {"main": 0, "autograd": 1, "data": 2, "other": 3, "helper": 4}
    return sorted(out, key=lambda t: (order[t.role], str(t.lane.pid), str(t.lane.tid)))


def _in(trace: Trace, rows: np.ndarray, window: Window) -> np.ndarray:
    st = trace.slices.start[rows]
    return rows[(st >= window.start_ns) & (st < window.end_ns)]
