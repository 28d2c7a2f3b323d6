"""``explain``: the analyses, then the one ``Report``, built in one step.

``build_report`` copies the frozen analysis results into the report's plain records,
picks the typical call once (every output that shows "a typical call" shows this one),
finds the op for the reproducer template, and adds the findings ``detect`` returns and
the input diagnostics. Nothing is filled in afterwards.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

import numpy as np

from traceview.analyses.steps import NOT_SHOWN
from traceview.analyses.threads import describe
from traceview.diagnostics import Diagnostic
from traceview.intervals import Set
from traceview.metadata import CaptureMeta, runtime_of
from traceview.model import Trace
from traceview.options import Options
from traceview.report import model as m
from traceview.report.claims import Claim
from traceview.report.explanation import Analysis, analyze_trace
from traceview.report.findings import detect
from traceview.report.integrity_claims import integrity_claims, what_if_claims
from traceview.report.schema import SCHEMA_VERSION
from traceview.report.sentences import (
    baseline_claim,
    bytes_claim,
    calls_claim,
    calls_title_claim,
    cause_claims,
    correctness_claim,
    device_claim,
    device_row_claims,
    families_title_claim,
    launches_claim,
    operation_step_claim,
    perturbation_claims,
    profiler_of,
    result_claims,
    step_claim,
    step_detail_claims,
    step_title_claims,
    stream_claims,
    thread_refs,
    timer_claim,
    typical_call_claim,
    unprofiled_claims,
    unprofiled_share_claim,
    unprofiled_steps_claims,
    warm_mode_claim,
    window_claim,
    window_length_claim,
)
from traceview.report.unprofiled import UnprofiledInfo, from_model, from_split, none_known

# What the device waited for where the trace lost the events that would say
# (``steps.NOT_SHOWN``): no thread, and not the device's own launch path either.
UNKNOWN = "unknown"

def explain(trace: Trace, options: Options | None = None) -> m.Report:
    """Every analysis, the findings and the diagnostics of one trace."""
    return build_report(analyze_trace(trace, options))


def build_report(a: Analysis) -> m.Report:
    lane = a.timeline.lane
    calls = a.calls
    # a training step runs many ops: no one op's name, shapes or bytes stands for it
    op = None if a.steps else op_info(a)
    steps = steps_info(a)
    unprofiled = unprofiled_info(a, steps)
    reasons = cause_claims(calls.cold_causes, calls.outlier_causes, thread_refs(a.threads, None if lane is None else lane.index))
    found = calls_claim(calls)
    calls_info = _calls_info(a, unprofiled, reasons, found.text)
    typical = pick_typical(calls_info, a.calls.startup)
    # the typical call's stalled sync stretches: the verdict and the what-if read these
    stalled = typical_stalls(a, typical)
    findings, claims = detect(a, unprofiled, None if typical is None else typical.index,
                              stalled)
    drawn = typical_call(a, calls_info)
    step = step_claim(steps, drawn)
    moved = None if a.steps else bytes_moved(op, a.trace.capture, calls_info)
    kernel = calls_info.stats.get("kernel_ns")
    integrity = integrity_info(a)
    projections = what_if(a, typical, unprofiled.call_ns if unprofiled is not None else None,
                          stalled)
    window = window_claim(a.window)
    device = _device_info(a)
    api = calls_info.stats.get("api_ns")
    unit = "step" if steps is not None else "call"
    launches = _launches_info(a)
    said = [c for c in (window, window_length_claim(a.window, window), device_claim(device, a.window.dur_ns),
                        *_line_claims(a, calls_info, device, launches, findings, drawn, steps),
                        baseline_claim(a.trace.capture, unprofiled),
                        calls_title_claim(calls_info, unit),
                        unprofiled_share_claim(calls_info.perturbation),
                        *result_claims(calls_info, device, a.window.dur_ns, unit), step,
                        *step_title_claims(steps, drawn), *step_detail_claims(steps, drawn),
                        *perturbation_claims(calls_info.perturbation,
                                             api.p50 if api else None, unit),
                        *unprofiled_steps_claims(unprofiled), bytes_claim(moved, kernel.p50 if kernel else None,
                                          None if a.trace.capture is None
                                          else a.trace.capture.bandwidth)) if c is not None]
    # the runtime whose graphs the sentences name (a ROCm trace's are HIP graphs)
    runtime_api = runtime_of(a.trace.metadata, a.launches.by_api).api
    return m.Report(
        schema_version=SCHEMA_VERSION,
        trace=m.TraceInfo(
            path=a.trace.path, slices=len(a.trace.slices),
            metadata={k: v for k, v in a.trace.metadata.items() if k != "traceview"},
            capture=a.trace.metadata.get("traceview"), python_frames=a.has_python_frames),
        window=m.WindowInfo(a.window.start_ns, a.window.end_ns, a.window.dur_ns,
                            a.window.source, window.text,
                            a.window.ranges if a.window.source == "annotation" else None),
        device=device,
        host=_host_info(a, lane),
        breakdown=tuple(a.cells),
        launches=launches,
        calls=calls_info,
        findings=tuple(findings),
        diagnostics=tuple(Diagnostic(g.code, g.severity, g.count, g.message)
                          for g in (*a.trace.diagnostics, *a.diagnostics)),
        typical_call=drawn,
        op=op,
        bytes_moved=moved,
        threads=tuple(_thread(a, t) for t in a.threads),
        steps=steps,
        unprofiled=unprofiled,
        claims=(*claims, found, *said, *unprofiled_claims(unprofiled, _calibration(a)),
                *reasons,
                *integrity_claims(integrity, a.launches.count, runtime_api, none_warm=(
                    bool(calls_info.count) and calls_info.warm_count == 0)),
                *what_if_claims(projections, unprofiled,
                                None if drawn is None else drawn.index, runtime_api)),
        integrity=integrity,
        what_if=projections,
    )


def _line_claims(a: Analysis, calls: m.CallsInfo, device: m.DeviceInfo,
                 launches: m.LaunchesInfo, findings: list[m.Finding],
                 drawn: m.TypicalCall | None, steps: m.StepsInfo | None) -> list[Claim]:
    """The lines beside the device's line and the reproducer's capture fields, in the
    order the outputs print them, and the titles of the module table and typical call."""
    unit = "step" if steps is not None else "call"
    w = a.window.dur_ns
    cap = a.trace.capture
    return [c for c in (
        *device_row_claims(device, w), *stream_claims(device, w), launches_claim(launches),
        warm_mode_claim(calls, cap, unit=unit,
                        graph=any(f.id == "graph-replay" for f in findings)),
        timer_claim(calls, cap, profiler_of(a.trace.diagnostics)), correctness_claim(cap),
        families_title_claim(calls, unit) if _families_shown(a, calls) else None,
        typical_call_claim(calls, drawn, unit),
        operation_step_claim(steps, calls.description)) if c is not None]


def _launches_info(a: Analysis) -> m.LaunchesInfo:
    ln = a.launches
    return m.LaunchesInfo(count=ln.count, linked=ln.linked, by_api=dict(ln.by_api),
                          by_kind=dict(ln.by_kind), unlinked_device_work=ln.unlinked_work,
                          latency_ns=ln.latency)


def _families_shown(a: Analysis, calls: m.CallsInfo) -> bool:
    """The module table is shown (and titled): calls, their module families, and Python
    frames to find the modules by."""
    return bool(calls.per_call and a.per_call and a.per_call.families and a.has_python_frames)


def _device_info(a: Analysis) -> m.DeviceInfo:
    d = a.device
    return m.DeviceInfo(
        busy_ns=d.busy_ns, idle_ns=d.idle_ns, kernel_count=d.kernel_count,
        kernel_sum_ns=d.kernel_sum_ns, memcpy_count=d.memcpy_count,
        memset_count=d.memset_count, work_sum_ns=d.work_sum_ns,
        per_device=tuple(m.DeviceRow(**r) for r in d.per_device),
        per_stream=tuple(m.StreamRow(**r) for r in d.per_stream),
        kernels=tuple(m.KernelRow(k.name, k.count, k.sum_ns, k.stats, k.unlinked)
                      for k in d.kernels),
        copy_sum_ns=d.copy_sum_ns)


def _calibration(a: Analysis) -> dict | None:
    """Capture's timer calibration of a measured split (its ``measuring`` line's figures)."""
    cap = a.trace.capture
    split = cap.baseline.split if cap is not None and cap.baseline is not None else None
    cal = split.get("calibration") if isinstance(split, dict) else None
    return cal if isinstance(cal, dict) else None


def _worded(calls: list[m.CallRow], reasons: list[Claim]) -> tuple[m.CallRow, ...]:
    """The calls with their cold and outlier reasons in words (the reasons' claims'
    texts); the others as they are (a loop's 100,000 calls are not copied one by one)."""
    out = list(calls)
    for c in reasons:
        i = c.value("call")
        assert isinstance(i, int)
        out[i] = replace(out[i], cold_reason=c.text) if c.id == "cold-reason" \
            else replace(out[i], outlier_reason=c.text)
    return tuple(out)


def integrity_info(a: Analysis) -> m.IntegrityInfo | None:
    g = a.integrity
    if g is None:
        return None
    gr = g.graphs
    return m.IntegrityInfo(
        reliable=g.reliable,
        checks=tuple(m.IntegrityCheck(c.id, c.count, c.calls, c.steps, c.unreliable, c.ns)
                     for c in g.checks),
        incomplete_calls=g.incomplete_calls, unreliable=g.unreliable,
        graphs=m.GraphsInfo(gr.replays, gr.nodes, gr.graph_ids, gr.captures,
                            gr.instantiations, gr.capture_ns))


def typical_stalls(a: Analysis, call: m.CallRow | None) -> Set | None:
    """The typical call's stalled sync stretches (``analyses.what_if.call_stalls``)."""
    from traceview.analyses.what_if import call_stalls

    return None if call is None else call_stalls(a.trace, a.timeline, call)


def what_if(a: Analysis, call: m.CallRow | None, unprofiled_ns: int | None,
            stalled: Set | None) -> tuple[m.WhatIfRow, ...]:
    """The typical call's projections (``analyses.what_if``), against its unprofiled
    figure where one is known, keeping its stalled sync stretches (``typical_stalls``)."""
    from traceview.analyses.what_if import project

    return tuple(m.WhatIfRow(p.scenario, p.call, p.measured_ns, p.projected_ns, p.low_ns,
                             p.high_ns, dict(p.basis))
                 for p in project(a.trace, a.launches, call, unprofiled_call_ns=unprofiled_ns,
                                  stalled=stalled))


def unprofiled_info(a: Analysis, steps: m.StepsInfo | None = None) -> UnprofiledInfo | None:
    """The call's estimated unprofiled split (``report/unprofiled.py``), with the steps
    corrected where the trace carries unprofiled step times (``capture_steps``)."""
    from dataclasses import replace

    from traceview.report.unprofiled_steps import correct

    info = _unprofiled_calls(a)
    corrected = correct(steps, a.trace.metadata)
    if info is None or corrected is None:
        return info
    return replace(info, steps=corrected)


def _unprofiled_calls(a: Analysis) -> UnprofiledInfo | None:
    """Measured where capture recorded ``baseline.split``, else the profiled-shares model where
    an unprofiled call figure is known (capture's baseline, ``capture_steps``' step times
    when the calls are its steps, ``--unprofiled-call``), else a note of what cannot be
    known. None with no warm call."""
    from traceview.report.explanation import unprofiled_baseline
    from traceview.report.unprofiled_steps import step_block
    from traceview.stats import median

    pc = a.per_call
    warm = [c for c in a.calls.calls if c.warm]
    if pc is None or not pc.tree or not warm:
        return None
    profiled = int(median([c.api_ns for c in warm]))
    cats = sorted({k for c in warm for k in c.categories})
    prof_cats = {k: int(median([c.categories.get(k, 0) for c in warm])) for k in cats}
    cap = a.trace.capture
    split = cap.baseline.split if cap is not None and cap.baseline is not None else None
    override = a.options.unprofiled_call
    if isinstance(split, dict) and split.get("functions") and isinstance(split.get("call_ns"), int):
        source = "--unprofiled-call" if override else "capture's split child (same process as the functions)"
        return from_split(pc.tree, split, profiled, prof_cats, source, override)
    stepped = step_block(a.trace.metadata) if a.steps else None
    call = override or unprofiled_baseline(a.trace) or (stepped or {}).get("step_ns_p50")
    if call:
        source = ("--unprofiled-call" if override else "capture's baseline"
                  if unprofiled_baseline(a.trace) else "capture_steps' unprofiled steps")
        return from_model(pc.tree, call, profiled, prof_cats, source)
    why = None
    if cap is not None and cap.baseline is not None:
        why = ("the capture's baseline is of warm calls, not of this cold call"
               if cap.kind == "cold" else
               "the capture's baseline has no figure comparable to these calls (a graph "
               "replay synchronized each call, or the amortized submit)")
    return none_known(profiled, why)


def _label(a: Analysis, lane: int | None) -> str:
    if lane is None:
        return "device"
    ln = a.trace.lanes[lane]
    if ln.kind == "device":
        return ln.label
    role = next((t.role for t in a.threads if t.lane.index == lane), None)
    return describe(ln, role)


def _thread(a: Analysis, t) -> m.ThreadRow:
    attributed = a.timeline.lane is not None and a.timeline.lane.index == t.lane.index
    return m.ThreadRow(t.lane.pid, t.lane.tid, t.lane.thread_name, describe(t.lane, t.role),
                       t.role, attributed, t.launches, t.syncs, t.python_frames, t.work_ns,
                       dict(t.categories))


def steps_info(a: Analysis) -> m.StepsInfo | None:
    if not a.steps or a.timeline.lane is None:
        return None
    rows = []
    for st in a.steps:
        # a launch's wait in a trace that lost events waited for what the trace does
        # not show: no thread, as the idle causes say
        path = tuple(m.PathRow(i.kind, UNKNOWN if i.what == NOT_SHOWN else _label(a, i.lane),
                               i.what, i.ns) for i in st.path.items)
        rows.append(m.StepRow(
            index=st.index, name=st.name, start_ns=st.start_ns, end_ns=st.end_ns,
            wall_ns=st.end_ns - st.start_ns, cold=st.cold, device_busy_ns=st.device_busy_ns,
            device_idle_ns=st.end_ns - st.start_ns - st.device_busy_ns,
            phases=tuple(m.PhaseRow(p.phase, p.wall_ns, p.device_busy_ns, p.device_idle_ns,
                                    {_label(a, ln): dict(c) for ln, c in p.host.items()})
                         for p in st.phases),
            critical_path=path,
            idle_causes=tuple(m.IdleCauseRow(UNKNOWN if c.what == NOT_SHOWN
                                             else _label(a, c.lane), c.what, c.ns)
                              for c in st.idle_causes),
            communication_ns=st.communication_ns,
            exposed_communication_ns=st.exposed_communication_ns,
            path_edges=dict(sorted(st.path.edges.items())),
            range_end_ns=st.range_end_ns,
            segments=tuple(m.PhaseSegment(ph, a, b) for ph, a, b in st.segments),
        ))
    # warm as the per-step table counts it (``Call.warm``: not cold, every launch's device
    # work recorded), so the step sentence and the table never say two warm counts
    warm = {c.index for c in a.calls.calls if c.warm}
    return m.StepsInfo(len(rows), sum(1 for r in rows if r.index in warm),
                       _label(a, a.step_lane if a.step_lane is not None
                              else a.timeline.lane.index), tuple(rows))


def bytes_moved(op: m.OpInfo | None, capture: CaptureMeta | None,
                calls: m.CallsInfo) -> m.BytesMoved | None:
    """Bytes per call and GB/s (``analyses.kernel_bytes``); None when nothing launched."""
    from traceview.analyses.kernel_bytes import for_report

    k = calls.stats.get("kernel_ns")
    if op is None and capture is None and (k is None or not k.n):
        return None
    got = for_report(op.name if op else None, op.args if op else None,
                     None if capture is None else capture.bandwidth, k.p50 if k else None)
    return m.BytesMoved(**got)


def _host_info(a: Analysis, lane) -> m.HostInfo:
    """The attributed thread's functions and families, and the other threads'."""
    pc = a.per_call
    return m.HostInfo(
        thread=None if lane is None else m.ThreadRef(lane.pid, lane.tid, _label(a, lane.index)),
        categories=dict(a.host_categories),
        category_descriptions=dict(a.rules.categories),
        functions=tuple(_function(a, f) for f in a.functions[: a.options.functions_limit]),
        functions_total=len(a.functions),
        other_threads=tuple(_other_thread(a, t) for t in a.other_threads),
        families=tuple(m.FamilyRow(f.name, f.ns_per_call, f.share, f.calls_with)
                       for f in (pc.families if pc else ())),
        identities=tuple(m.IdentityRow(f.name, f.inclusive_ns, f.self_ns, f.call_ns,
                                       f.calls_with)
                         for f in (pc.identities.values() if pc else ())))


def _other_thread(a: Analysis, t) -> m.OtherThread:
    """A thread other than the calls', with its functions cut as ``host.functions`` is."""
    return m.OtherThread(t.pid, t.tid, t.label, t.launches, dict(t.categories),
                         tuple(m.ThreadFunction(*f)
                               for f in t.functions[: a.options.functions_limit]),
                         len(t.functions))


def _function(a: Analysis, f) -> m.FunctionRow:
    per = a.per_call.functions.get(f.name) if a.per_call else None
    if per is None:
        return m.FunctionRow(f.name, f.category, f.self_ns, f.total_ns, f.count)
    return m.FunctionRow(f.name, f.category, f.self_ns, f.total_ns, f.count, per.inclusive_ns,
                         per.self_ns, per.calls_with, per.few_calls, per.call_ns)


#: Levels of the typical call's tree the report keeps. A node's children below it are
#: folded as the tree's floor folds small ones (``folded``, ``folded_ns``): each level is
#: two levels of JSON, and the JSON encoder stops at 255 (a 130-deep host stack failed).
MAX_TREE_DEPTH = 100


def _tree(n, depth: int = 1) -> m.TreeRow:
    if depth >= MAX_TREE_DEPTH and n.children:
        return m.TreeRow(n.name, n.category, n.inclusive_ns, n.self_ns, n.count, n.calls_with,
                         (), n.folded + len(n.children),
                         n.folded_ns + sum(c.inclusive_ns for c in n.children))
    return m.TreeRow(n.name, n.category, n.inclusive_ns, n.self_ns, n.count, n.calls_with,
                     tuple(_tree(c, depth + 1) for c in n.children), n.folded, n.folded_ns)


def _calls_info(a: Analysis, unprofiled: UnprofiledInfo | None, reasons: list[Claim],
                description: str) -> m.CallsInfo:
    """The calls' part of the report, with the per-call notes citing the report's one
    unprofiled call figure (the split's where measured): the same call and share as the
    verdict and the split."""
    calls = a.calls
    pc = a.per_call
    u_ns = unprofiled.call_ns if unprofiled is not None else None
    u_share = (round(u_ns / unprofiled.profiled_call_ns, 4)
               if u_ns and unprofiled is not None and unprofiled.profiled_call_ns else None)
    return m.CallsInfo(
        count=len(calls.calls), source=calls.source, pattern=calls.pattern,
        warm_count=calls.warm_count, cold=tuple(calls.cold_indices),
        stats=dict(calls.stats), categories=dict(calls.category_stats),
        per_call=_worded(calls.calls, reasons),
        description=description, how=calls.how, outliers=tuple(calls.outlier_indices),
        api_sync=calls.api_sync,
        kinds=tuple(m.KindRow(k.name, k.count, k.warm_count, dict(k.stats), k.api_sync)
                    for k in calls.kinds),
        tree=tuple(_tree(n) for n in pc.tree) if pc else (),
        perturbation=None if pc is None else m.PerturbationInfo(
            pc.perturbation.python_frames_per_call, pc.perturbation.events_per_call,
            pc.perturbation.profiler_ns_per_call, u_ns if u_share else None, u_share),
        tree_warm_calls=pc.warm_calls if pc else 0,
        elsewhere=tuple(m.ElsewhereRow(t, n) for t, _, n in calls.elsewhere),
    )


def pick_typical(calls: m.CallsInfo, startup: Collection[int] = ()) -> m.CallRow | None:
    """The typical call (``analyses.calls.typical``: a warm call of the dominant kind,
    nearest its kind's p50, never a start-up call, ``CallsSummary.startup``): the one the
    verdict's figures are read from."""
    from traceview.analyses.calls import typical

    return typical(calls.per_call, startup)


def typical_call(a: Analysis, calls: m.CallsInfo) -> m.TypicalCall | None:
    call = pick_typical(calls, a.calls.startup)
    if call is None:
        return None
    lo, hi = call.start_ns, call.end_ns
    axis_end = max(hi, a.calls.kernel_end_ns[call.index] or 0)
    host = _segments(a.timeline, lo, hi)
    bs, be = a.device.busy
    dm = (be > lo) & (bs < axis_end)
    busy = tuple((max(int(s), lo), min(int(e), axis_end))
                 for s, e in zip(bs[dm].tolist(), be[dm].tolist(), strict=True))
    lanes: tuple[m.ThreadLane, ...] = ()
    if a.steps and a.timeline.lane is not None:
        own = a.timeline.lane.index
        lanes = tuple(m.ThreadLane(describe(t.lane, t.role), tuple(_segments(tl, lo, hi)))
                      for t in a.threads
                      if t.lane.index != own and t.role != "helper" and t.work_ns > 0
                      and (tl := a.timelines.get(t.lane.index)) is not None)
    return m.TypicalCall(call.index, lo, hi, axis_end, tuple(host), busy, lanes)


def _segments(tl, lo: int, hi: int) -> list[m.Segment]:
    """A thread's timeline inside [lo, hi), neighbours of one category merged."""
    # the segments that meet the call: one run of them (segments are sorted and disjoint)
    j0 = int(np.searchsorted(tl.seg_end, lo, side="right"))
    j1 = max(j0, int(np.searchsorted(tl.seg_start, hi, side="left")))
    # neighbours of one category that touch are one segment (vectorised: a cold compile's
    # call has millions of timeline segments)
    st = np.maximum(tl.seg_start[j0:j1], lo)
    en = np.minimum(tl.seg_end[j0:j1], hi)
    cat = tl.seg_cat[j0:j1]
    host: list[m.Segment] = []
    if st.size:
        new = np.ones(st.size, dtype=bool)
        new[1:] = (cat[1:] != cat[:-1]) | (st[1:] != en[:-1])
        first = np.flatnonzero(new)
        last = np.append(first[1:], st.size) - 1
        host = [m.Segment(s, e, tl.categories[c]) for s, e, c in
                zip(st[first].tolist(), en[last].tolist(), cat[first].tolist(), strict=True)]
    return host


def op_info(a: Analysis) -> m.OpInfo | None:
    """Name and args of the aten op that launches the most device work, if any.

    The innermost ``cpu_op`` around each launch on the attributed thread; Triton
    kernels launched from Python have none (their shapes come from capture's metadata).
    """
    s = a.trace.slices
    lane = a.timeline.lane
    if lane is None or a.launches.count == 0:
        return None
    cpu = a.trace.cat_code("cpu_op")
    ops = np.flatnonzero((s.cat == cpu) & (s.lane == lane.index))
    if ops.size == 0:
        return None
    ops = ops[np.argsort(s.start[ops], kind="stable")]
    o_st, o_en = s.start[ops], s.end[ops]
    l_rows = a.launches.rows
    ls, le = s.start[l_rows], s.end[l_rows]
    k = np.searchsorted(o_st, ls, side="right") - 1
    found = np.full(l_rows.size, -1, np.int64)  # innermost: latest start that contains it
    todo = np.flatnonzero(k >= 0)
    for d in range(64):  # up to 64 ops back, all launches at once
        if todo.size == 0:
            break
        j = k[todo] - d
        ok = j >= 0
        hit = ok & (o_en[np.maximum(j, 0)] >= le[todo])
        found[todo[hit]] = ops[j[hit]]
        todo = todo[ok & ~hit]
    hits = found[found >= 0]
    if hits.size == 0:
        return None
    codes, first, n = np.unique(s.name[hits], return_index=True, return_counts=True)
    best = max(range(codes.size), key=lambda i: (int(n[i]), a.trace.names[int(codes[i])]))
    name, row = int(codes[best]), int(hits[first[best]])  # the first such op met
    count = int(n[best])
    return m.OpInfo(a.trace.names[name], count, dict(s.args.get(row, {})))
