"""Run every analysis over a loaded trace and hold the frozen results with the trace.

``Analysis`` is what the detectors (``findings.detect``) and export read, since they need
the trace itself; ``report.build.build_report`` turns it into the ``Report`` that every
renderer and consumer reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from traceview import intervals
from traceview.analyses.breakdown import Cell, breakdown
from traceview.analyses.calls import CallsSummary, analyze_calls
from traceview.analyses.calltree import PerCall, analyze_per_call
from traceview.analyses.causality import drop_implausible_device_work
from traceview.analyses.device import DeviceSummary, analyze_device
from traceview.analyses.host import (
    FunctionStat,
    HostTimeline,
    attribute_host,
    host_rows_by_lane,
    hot_functions,
)
from traceview.analyses.launches import LaunchSummary, analyze_launches, pick_thread
from traceview.analyses.window import Window, find_window
from traceview.errors import IdentityError
from traceview.metadata import clean_metadata
from traceview.model import Trace
from traceview.options import Options
from traceview.rules import RuleSet, load_rules


@dataclass(frozen=True)
class ThreadSummary:
    label: str
    pid: int | str
    tid: int | str
    launches: int
    categories: dict[str, int]


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


def analyze_trace(trace: Trace, options: Options | None = None) -> Analysis:
    options = options or Options()
    malformed = clean_metadata(trace.metadata)  # idempotent: a second explain adds nothing
    if malformed is not None:
        trace.diagnostics.append(malformed)
    rules = load_rules(options.rules)
    drop_implausible_device_work(trace)  # idempotent, like clean_metadata
    window = find_window(trace, options.window)
    device = analyze_device(trace, window)
    thread = pick_thread(trace, rules, window, options.thread)
    launches = analyze_launches(trace, rules, window, thread, device.work_rows)
    by_lane = host_rows_by_lane(trace, window)
    timeline = attribute_host(trace, thread, window, rules,
                              rows=None if thread is None else by_lane[thread.index])
    host_categories = timeline.totals()
    cells = breakdown(timeline, device.busy)
    calls = analyze_calls(trace, window, timeline, launches, device.busy, options.calls, rules,
                          options.calls_depth)
    others = []
    for lane in sorted(trace.host_lanes, key=lambda ln: (str(ln.pid), str(ln.tid))):
        if thread is not None and lane.index == thread.index or by_lane[lane.index].size == 0:
            continue
        tl = attribute_host(trace, lane, window, rules, rows=by_lane[lane.index])
        traced = {c: v for c, v in tl.totals().items() if v and c != "untraced"}
        if traced:
            others.append(ThreadSummary(lane.label, lane.pid, lane.tid,
                                        launches.threads.get(lane.index, 0), traced))
    has_py = "python_function" in trace.cat_names
    ex = Analysis(
        trace=trace, options=options, rules=rules, window=window, device=device,
        launches=launches, timeline=timeline, host_categories=host_categories,
        functions=hot_functions(trace, timeline), cells=cells, calls=calls,
        other_threads=others, has_python_frames=has_py,
        per_call=analyze_per_call(trace, timeline, calls.calls, unprofiled_baseline(trace)),
    )
    _check_identities(ex)
    return ex


def unprofiled_baseline(trace: Trace) -> int | None:
    """The capture's unprofiled figure comparable to a profiled warm call: the
    synchronized full API (``--sync end``: the amortized submit); none for cold twins and
    graph replays."""
    cap = trace.metadata.get("traceview")
    cap = cap if isinstance(cap, dict) else {}
    base = cap.get("baseline") if isinstance(cap.get("baseline"), dict) else {}
    proto = cap.get("protocol") if isinstance(cap.get("protocol"), dict) else {}
    if proto.get("mode", "eager") != "eager" or cap.get("kind", "warm") == "cold":
        return None
    value = base.get("amortized_submit_ns" if proto.get("sync") == "end" else "full_api_ns_p50")
    return value if isinstance(value, int) and value > 0 else None


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
