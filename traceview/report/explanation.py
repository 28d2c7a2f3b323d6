"""Run every analysis over a loaded trace and hold the frozen results with the trace.

``Analysis`` is what the detectors (``findings.detect``) and export read, since they need
the trace itself; ``report.build.build_report`` turns it into the ``Report`` that every
renderer and consumer reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from traceview import intervals
from traceview.analyses.breakdown import Cell, breakdown
from traceview.analyses.callfind import option_lanes
from traceview.analyses.calls import CallsSummary, analyze_calls
from traceview.analyses.calltree import PerCall, analyze_per_call
from traceview.analyses.device import DeviceSummary, analyze_device, with_unlinked
from traceview.analyses.host import OVERLAY_CATS, HostTimeline, attribute_host, host_rows_by_lane
from traceview.analyses.hot_functions import (
    FunctionStat,
    hot_functions,
    thread_functions,
    zero_length_rows,
)
from traceview.analyses.integrity import (
    NUMBERING_KEY,
    Integrity,
    Numbering,
    analyze_integrity,
    event_numbering,
    lost_events,
)
from traceview.analyses.launches import LaunchSummary, analyze_launches, of_process, pick_thread
from traceview.analyses.steps import NOT_SHOWN, StepFigures, analyze_steps, own_devices
from traceview.analyses.threads import ThreadFigures, resolve_thread, step_thread, thread_figures
from traceview.analyses.window import Window, activity_window, find_window
from traceview.diagnostics import Diagnostic
from traceview.errors import IdentityError
from traceview.io.limits import MAX_HOST_THREADS
from traceview.metadata import ProtocolMeta
from traceview.model import Lane, Trace
from traceview.options import Options
from traceview.rules import RuleSet, load_rules


@dataclass(frozen=True)
class ThreadSummary:
    label: str
    pid: int | str
    tid: int | str
    launches: int
    categories: dict[str, int]
    functions: tuple[tuple[str, int, int], ...] = ()  # (name, self ns, count): thread_functions


@dataclass(frozen=True)
class Analysis:
    trace: Trace
    options: Options
    rules: RuleSet
    window: Window
    device: DeviceSummary
    launches: LaunchSummary
    timeline: HostTimeline
    host_categories: dict[str, int]
    functions: list[FunctionStat]
    cells: list[Cell]
    calls: CallsSummary
    other_threads: list[ThreadSummary]
    has_python_frames: bool
    per_call: PerCall | None = None  # per warm call: functions, families, tree
    threads: tuple[ThreadFigures, ...] = ()  # every host thread with events in the window
    steps: tuple[StepFigures, ...] = ()  # calls that are training steps: phases, path
    # host lane -> its attributed timeline (every working thread; what the steps used)
    timelines: dict[int, HostTimeline] = field(default_factory=dict, compare=False)
    step_lane: int | None = None  # the thread that ran the steps (their phases' thread)
    # what the analyses found worth saying about the trace (after the trace's own
    # diagnostics in the report): the trace itself is never written
    diagnostics: tuple[Diagnostic, ...] = ()
    integrity: Integrity | None = None  # what the profiler failed to record, and where
    # the trace's CPU event numbering where steps were analysed (None: not read, or no
    # numbers): whether events were removed after the profiler wrote the trace
    numbering: Numbering | None = None

    @property
    def events_removed(self) -> bool:
        """Whether the trace evidently lost events after the profiler wrote it
        (``integrity.lost_events`` of ``numbering``): every output then calls a
        launch's wait for its work ``not in the trace``, as the steps do."""
        return lost_events(self.numbering)


# Where calls may be analysed as training steps (phases, critical path): profiler steps
# always; user ranges and --calls when they hold backward work (``_are_steps``).
STEP_SOURCES = ("profiler_steps", "option", "annotations")


def check_options(options: Options) -> None:
    """Refuse, before the trace is read, every option that is wrong whatever the trace
    holds: a ``--window`` that is neither a range nor a regex, a bad ``--calls`` regex,
    a rules file that cannot be read or parsed. What depends on the trace (a window
    that matches nothing, an unknown thread) is said after the decode."""
    from traceview.analyses.callfind import calls_pattern
    from traceview.analyses.window import parse_window

    if options.window:
        parse_window(options.window)
    if options.calls is not None:
        calls_pattern(options.calls)
    load_rules(options.rules)


def analyze_trace(trace: Trace, options: Options | None = None) -> Analysis:
    options = options or Options()
    rules = load_rules(options.rules)
    window = find_window(trace, options.window)
    device = analyze_device(trace, window)
    thread = _attributed_thread(trace, rules, window, options)
    launches = analyze_launches(trace, rules, window, thread, device.work_rows)
    device = with_unlinked(trace, device, launches.unlinked_rows)
    by_lane = host_rows_by_lane(trace, window)
    # each lane's rows are handed over (popped): the timeline keeps them in sweep order,
    # and a cold compile's main thread has millions
    found: list[Diagnostic] = []
    timelines = {idx: attribute_host(trace, trace.lanes[idx], window, rules,
                                     rows=by_lane.pop(idx))
                 for idx in _working_lanes(trace, by_lane, found, thread)}
    timeline = timelines.get(thread.index) if thread is not None else None
    if timeline is None:
        timeline = attribute_host(trace, thread, window, rules,
                                  rows=None if thread is None else by_lane[thread.index])
    del by_lane
    host_categories = timeline.totals()
    cells = breakdown(timeline, device.busy)
    # several processes launching device work (ranks fused into one file): a call's
    # device figures are its process's, its launches and its devices (as a step's are)
    calls_busy, calls_launches = device.busy, launches
    if thread is not None:
        calls_busy, own_work = own_devices(trace, thread.index, device.busy, device.work_rows)
        if own_work is not device.work_rows:
            calls_launches = of_process(trace, launches, thread.pid, own_work)
    calls = analyze_calls(trace, window, timeline, calls_launches, calls_busy, options.calls,
                          rules, options.calls_depth)
    threads = thread_figures(trace, rules, window, timelines)
    others = []
    # the zero-length function slices of every thread: one scan for every thread's list
    zero_rows = zero_length_rows(trace)
    for t in sorted(threads, key=lambda t: (str(t.lane.pid), str(t.lane.tid))):
        if thread is not None and t.lane.index == thread.index:
            continue
        traced = {c: v for c, v in t.categories.items() if v and c != "untraced"}
        if traced:
            tl = timelines.get(t.lane.index)
            others.append(ThreadSummary(t.lane.label, t.lane.pid, t.lane.tid,
                                        launches.threads.get(t.lane.index, 0), traced,
                                        () if tl is None else
                                        tuple(thread_functions(trace, tl, zero_rows))))
    steps: list[StepFigures] = []
    numbering: Numbering | None = None
    step_lane = _step_lane(trace, calls, thread)
    if step_lane is not None and calls.calls and _are_steps(trace, calls, step_lane):
        # read only for steps: their idle by cause is what a trace that lost events
        # words otherwise (``steps._idle_causes``)
        numbering = event_numbering(trace)
        removed = lost_events(numbering)
        if removed:
            assert numbering is not None
            found.append(_removed_diagnostic(numbering))
        steps = _step_facts(trace, rules, calls, step_lane, window, timelines, device, found,
                            removed=removed)
    has_py = "python_function" in trace.cat_names
    ex = Analysis(
        trace=trace, options=options, rules=rules, window=window, device=device,
        launches=launches, timeline=timeline, host_categories=host_categories,
        functions=hot_functions(trace, timeline, zero_rows), cells=cells, calls=calls,
        other_threads=others, has_python_frames=has_py,
        per_call=analyze_per_call(trace, timeline, calls.calls, unprofiled_baseline(trace),
                                  zero_rows),
        threads=tuple(threads), steps=tuple(steps), timelines=timelines,
        step_lane=step_lane if steps else None, diagnostics=tuple(found), numbering=numbering,
        integrity=analyze_integrity(trace, window, launches, device, calls,
                                    frozenset(st.index for st in steps)),
    )
    _check_identities(ex)
    return ex


def _attributed_thread(trace: Trace, rules: RuleSet, window: Window, options: Options):
    """``--thread``; else the thread holding the most of what ``--calls`` names (the
    calls are that thread's alone: ``callfind._by_option``); else the thread
    running the profiler steps (a training loop's main thread, not the autograd thread
    that launches more kernels); else the thread that launched the most device work."""
    if options.thread:
        return resolve_thread(trace, options.thread)
    if options.calls:
        lanes = option_lanes(trace, window, options.calls)
        # of the threads holding the most calls (ranks' steps fused into one file, one
        # thread each), the default one where it is one of them
        most = [ln for ln, n in lanes if n == lanes[0][1]] if lanes else []
        if len(most) == 1:
            return trace.lanes[most[0]]
        default = step_thread(trace, window) or pick_thread(trace, rules, window, None)
        if most and (default is None or default.index not in most):
            return trace.lanes[most[0]]
        return default
    return step_thread(trace, window) or pick_thread(trace, rules, window, None)


def _step_lane(trace: Trace, calls: CallsSummary, thread) -> int | None:
    """The thread that ran the steps: the one holding the step ranges themselves (found
    over the whole trace), whatever ``--thread`` shows; else the attributed thread."""
    if calls.calls:
        s = trace.slices
        c = calls.calls[0]
        rows = np.flatnonzero((s.start == c.start_ns) & (s.end == c.end_ns))
        hosts = [int(s.lane[r]) for r in rows.tolist()
                 if trace.lanes[int(s.lane[r])].kind == "host"]
        if hosts:
            return hosts[0]
    return None if thread is None else thread.index


def _removed_diagnostic(n: Numbering) -> Diagnostic:
    """What a trace that lost events (``integrity.Numbering.removed``) cannot show."""
    return Diagnostic(
        "events-removed", "warning", n.missing,
        f"numbers missing from the profiler's numbering of the CPU events "
        f"('{NUMBERING_KEY}'), at {n.holes:,} places among {n.numbered:,} numbered events: "
        f"events were removed after the profiler wrote the trace (a filter or sampler); "
        f"device idle after a launch is charged to '{NOT_SHOWN}', not to launch latency: "
        f"the trace does not show what the device waited for")


def _step_facts(trace: Trace, rules: RuleSet, calls: CallsSummary, step_lane: int,
                window: Window, timelines: dict[int, HostTimeline],
                device: DeviceSummary, found: list[Diagnostic],
                *, removed: bool = False) -> list[StepFigures]:
    """A step's phases, critical path and idle causes, from the whole trace: ``--window``
    and ``--thread`` choose what is shown, never what a step is. A narrower window would
    clip the threads' attribution (a frame recorded ending after its caller is trimmed
    only where the caller is seen) and cut steps in two."""
    full = activity_window(trace)
    if (full.start_ns, full.end_ns) != (window.start_ns, window.end_ns):
        by_lane = host_rows_by_lane(trace, full)
        timelines = {idx: attribute_host(trace, trace.lanes[idx], full, rules,
                                         rows=by_lane[idx])
                     for idx in _working_lanes(trace, by_lane, found)}
        device = analyze_device(trace, full)
    return analyze_steps(trace, rules, calls.calls, step_lane, timelines, device.busy,
                         device.work_rows, removed=removed)


def _working_lanes(trace: Trace, by_lane: dict, found: list[Diagnostic],
                   thread: Lane | None = None) -> list[int]:
    """Host lanes with events of their own in the window (profiler overhead, laid over
    every lane, does not make a lane a thread); past ``io.limits.MAX_HOST_THREADS`` of
    them, the busiest (most rows; ``thread`` always), the rest counted in a diagnostic
    (``threads-over-limit``) added to ``found``, once per analysis."""
    is_overlay = np.zeros(len(trace.cat_names) + 1, bool)
    is_overlay[[i for i, c in enumerate(trace.cat_names) if c in OVERLAY_CATS]] = True
    cat = trace.slices.cat
    lanes = [idx for idx, rows in by_lane.items()
             if rows.size and not is_overlay[cat[rows]].all()]
    if len(lanes) <= MAX_HOST_THREADS:
        return lanes
    keep = sorted(lanes, key=lambda i: (-by_lane[i].size, i))[:MAX_HOST_THREADS]
    if thread is not None and thread.index in lanes and thread.index not in keep:
        keep[-1] = thread.index
    left = len(lanes) - len(keep)
    if not any(d.code == "threads-over-limit" for d in found):
        found.append(Diagnostic(
            "threads-over-limit", "warning", left,
            f"{len(lanes):,} host threads with events: the {MAX_HOST_THREADS:,} with the "
            f"most are attributed one by one, {left:,} others are left out of the "
            "per-thread figures"))
    chosen = set(keep)
    return [idx for idx in lanes if idx in chosen]


def _are_steps(trace: Trace, calls: CallsSummary, thread_lane: int) -> bool:
    """Profiler steps are steps; user ranges (or ``--calls``) are when most of them hold
    backward work on another thread than their own (a training step's backward runs on
    the autograd engine's thread)."""
    if calls.source == "profiler_steps":
        return True
    if calls.source not in STEP_SOURCES:
        return False
    codes = [i for i, n in enumerate(trace.names)
             if n.startswith("autograd::engine::evaluate_function")]
    s = trace.slices
    rows = np.flatnonzero(trace.has_name(codes) & (s.lane != thread_lane))
    if rows.size == 0:
        return False
    st = np.sort(s.start[rows])
    holding = sum(1 for c in calls.calls
                  if np.searchsorted(st, c.end_ns) > np.searchsorted(st, c.start_ns))
    return 2 * holding >= len(calls.calls)


def unprofiled_baseline(trace: Trace) -> int | None:
    """The capture's unprofiled figure comparable to a profiled warm call: the
    synchronized full API (``--sync end``: the amortized submit; graph mode: one
    synchronized graph replay); none for cold twins."""
    label = baseline_label(trace)
    if label is None:
        return None
    assert trace.capture is not None and trace.capture.baseline is not None
    value = getattr(trace.capture.baseline, label[0])
    return value if isinstance(value, int) and value > 0 else None


def baseline_label(trace: Trace) -> tuple[str, str] | None:
    """(the baseline field comparable to the calls, its words), or None: a cold twin's
    call is not a warm one, and a graph replay not synchronized each call has none."""
    cap = trace.capture
    if cap is None or cap.baseline is None or cap.kind == "cold":
        return None
    proto = cap.protocol or ProtocolMeta()
    if (proto.mode or "eager") == "graph":
        if proto.sync == "end":
            return None
        return "replay_ns_p50", "unprofiled graph replay"
    if proto.sync == "end":
        return "amortized_submit_ns", "unprofiled amortized submit"
    return "full_api_ns_p50", "unprofiled"


def _check_identities(ex: Analysis) -> None:
    """The contract every output rests on; a failure here is a traceview bug."""
    w = ex.window.dur_ns
    cells_total = sum(c.ns for c in ex.cells)
    busy_col = sum(c.ns for c in ex.cells if c.device == "busy")
    if ex.timeline.lane is not None and w > 0:
        if cells_total != w or sum(ex.host_categories.values()) != w:
            raise IdentityError(f"cells {cells_total} != window {w}")
        if busy_col != ex.device.busy_ns:
            raise IdentityError(f"busy column {busy_col} != device busy {ex.device.busy_ns}")
    if ex.device.busy_ns != intervals.length(ex.device.busy) or ex.device.busy_ns > max(w, 0):
        raise IdentityError("device busy exceeds the window")
