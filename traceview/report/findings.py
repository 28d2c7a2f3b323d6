"""Findings: what a reader must know before trusting or comparing the numbers.

The measurement traps that make benchmark numbers lie (asynchronous launches, events
that are not kernel time, graph replay taken for eager, cold calls mixed with warm ones,
missing correctness or metadata; docs/findings.md), detected from the trace itself, plus profiler
perturbation and the headline verdict (host-bound or device-bound). Each finding has a
stable id from ``traceview.codes.FINDINGS`` (a contract: checks and diffs match on it),
a severity ("error" > "warning" > "info"), a one-line message with the numbers, and
evidence for the JSON output.

Detectors are small functions listed in ``DETECTORS``; each reads the frozen
``Analysis`` and returns zero or more ``Detected``: the id, the evidence, the figures the
message shows, each with the JSON Pointer of the report field that holds it, and the
relations the message asserts between them (``report.claims``). Detectors never format
numbers: ``report.messages`` makes each finding's claim and words it from those figures
only, in ``detect``; ``tests/test_claims.py`` reads every claim back against the report. Every threshold is
a named constant below, with its reasoning in ``docs/findings.md``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np

from traceview.analyses.launches import NSYS_EXPORT
from traceview.codes import FINDINGS, SEVERITY_ORDER
from traceview.io.rocprof import DIAGNOSTIC as ROCPROF
from traceview.metadata import NO_CAPTURE, runtime_of
from traceview.report.claims import Claim, Figure, Relation, RelationKind, pointer, rel
from traceview.report.detected import HELD_WAIT, Detected, evidence
from traceview.report.model import Finding
from traceview.report.unprofiled import MEASURED

if TYPE_CHECKING:
    from traceview.analyses.steps import StepFigures
    from traceview.intervals import Set
    from traceview.report.explanation import Analysis
    from traceview.report.unprofiled import UnprofiledInfo
    from traceview.stats import Stats

# A kernel ending this long after its call's range counts as outliving it. Host and device
# clocks are aligned by CUPTI to well under a microsecond; 1 us keeps skew out.
UNSYNC_TAIL_NS = 1_000
# A call whose device busy share is below this is "mostly idle": timing it with events
# measures the host, not the kernel.
RANGE_IDLE_BUSY_SHARE = 0.5
# The first call counts as a slow cold path when it is this many times the warm median.
COLD_FIRST_CALL_RATIO = 5.0
# Host-bound when the device is idle for at least this share of a typical call.
HOST_BOUND_IDLE_SHARE = 0.5
# Under this share of the call idle, the host's work overlaps the device's: "hidden".
HIDDEN_IDLE_SHARE = 0.1
# A step the device is busy most of whose critical path is more than this share
# host-thread time (not counting the host's syncs and waits, which hand the path to what
# was waited for) is host-bound, not device-bound: its length is its path, and the path
# waited for the host while the device's work (other streams, or work queued earlier)
# ran beside it.
PATH_HOST_SHARE = 0.5
# Profiler overhead inside one call above this share of the warm median is reported.
PERTURBATION_CALL_SHARE = 0.25
# Findings that conclude from something's absence ("no Python frames: with_stack was off",
# "no device work: a CPU-only trace"). From a file cut short the absent part may simply be
# the part that is missing, so they are not drawn from one: the damage is said instead.
FROM_ABSENCE = frozenset({"no-python-frames", "no-device-work", "no-host-events",
                          "reproducer-incomplete", "launch-without-device-work"})
# The loader's diagnostics that mean the file ends before its end.
CUT_SHORT = frozenset({"truncated", "compressed-stream-cut"})


def _verdict(ex: Analysis, unprofiled: UnprofiledInfo | None = None,
             typical: int | None = None, stalled: Set | None = None) -> list[Detected]:
    """host-bound / device-bound: the share of the typical call the device sits idle.

    Every figure is one call's (``typical``: the index of ``CallsSummary.typical``, the
    call the waterfall draws): its wall time, its idle time, its device work, its host
    categories. The p50 of each metric can come from a different call, of a different
    kind, and their ratio then describes no call that ran.

    Where the call's split was measured without the profiler, that is the call judged:
    its idle share is the unprofiled call less the device work, and the host categories
    named are the unprofiled ones (the profiled ranking can be the wrong way round: the
    profiler inflates a stage of many small frames most), the profiled ones beside them.
    A profiled call 5x the real one would otherwise call host-bound a call that is not.

    The claim cites each figure where the report holds it (the typical call's row), and
    where the calls are steps, the drawn step's device idle over all streams too, which
    must fall on the same side of the threshold. ``stalled``: the typical call's stalled
    sync stretches as the report has them (``analyses.what_if.call_stalls``)."""
    calls = ex.calls.warm
    if typical is None and ex.calls.typical is not None:
        typical = ex.calls.typical.index
    measured = bool(calls and typical is not None and unprofiled is not None
                    and unprofiled.call_ns and (unprofiled.method or "").startswith(MEASURED))
    if ex.window.dur_ns <= 0 or (ex.device.busy_ns == 0 and not ex.device.kernel_count):
        return []
    figs: list[Figure] = [Figure("threshold", HOST_BOUND_IDLE_SHARE)]
    rels: list[Relation] = []
    terms: dict[str, Any] = {"threads": _threads_named(ex)}
    call, idle, api, kernel, cats, cat_path = _verdict_figures(
        ex, unprofiled, figs, rels, terms, typical=typical if calls else None,
        measured=measured)
    share = idle / call if call else 0.0
    figs.append(Figure("idle_share", share))
    rels += [rel("ratio", "idle", "call", "idle_share"), rel("le", "idle", "call")]
    evidence: dict[str, Any] = {"device_idle_share": round(share, 4)}
    held = [] if measured or not calls or typical is None else _held_waits(ex, typical)
    if held:
        top = _held_categories(ex, held, cats, cat_path, figs, rels, evidence, terms)
    else:
        # waiting for another thread is not where host time goes: that thread's work is
        # (the steps' critical path says whose)
        top = [(c, ns) for c, ns in cats if ns > 0 and c != "wait"][:3]
        figs += [Figure(f"host:{c}", ns, pointer(*cat_path, c)) for c, ns in top]
        rels += _biggest_first("host", top)
    evidence["top_host_categories"] = dict(top)
    if calls and typical is not None and not measured and kernel is not None \
            and kernel > call and share >= HOST_BOUND_IDLE_SHARE:
        return [_outlasting(ex, typical, evidence, figs, rels, terms)]
    if measured:
        assert unprofiled is not None
        _unprofiled_categories(unprofiled, call, api, figs, rels, evidence)
    host_bound = share >= HOST_BOUND_IDLE_SHARE
    side: RelationKind = "ge" if host_bound else "lt"
    rels.append(rel(side, "idle_share", "threshold"))
    if calls and not measured and typical is not None:
        _drawn(ex, typical, side, figs, rels)
    if host_bound:
        if calls and typical is not None:
            figs += _copy_figures_of_call(ex, typical)
        kind = "sync-stalled" if calls and typical is not None and not measured \
            and _stalled(ex, typical, figs, rels, terms, evidence, stalled) else "host-bound"
        return [Detected(kind, evidence, tuple(figs), tuple(rels), terms)]
    if calls and typical is not None and not measured \
            and _path_on_host(ex, typical, figs, rels):
        # the device is busy most of the step, but the step's length is its critical
        # path, and that is mostly the host thread's: the host, not the device, bounds it
        terms["path_on_host"] = True
        return [Detected("host-bound", evidence, tuple(figs), tuple(rels), terms)]
    figs.append(Figure("hidden", HIDDEN_IDLE_SHARE))
    rels.append(rel("le" if share <= HIDDEN_IDLE_SHARE else "gt", "idle_share", "hidden"))
    # a trace of device records alone (a filtered or fused trace, collectives only) says
    # the device was idle, never that it waited for a host nobody recorded
    terms["no_host"] = ex.timeline.lane is None
    return [Detected("device-bound", evidence, tuple(figs), tuple(rels), terms)]


def _unprofiled_categories(unprofiled: UnprofiledInfo, call: int, api: int,
                           figs: list[Figure], rels: list[Relation],
                           evidence: dict[str, Any]) -> None:
    """The measured (unprofiled) call's three biggest host categories, waiting apart,
    as the verdict's figures, beside the profiled call's wall time."""
    top_u = sorted(((c, ns) for c, ns in unprofiled.categories.items()
                    if ns > 0 and c != "wait"), key=lambda kv: (-kv[1], kv[0]))[:3]
    figs += [Figure(f"unprofiled:{c}", ns, pointer("unprofiled", "categories", c))
             for c, ns in top_u]
    rels += _biggest_first("unprofiled", top_u)
    evidence.update(unprofiled_call_ns=call, profiled_call_ns=api,
                    top_host_categories_unprofiled=dict(top_u))


@dataclass(frozen=True)
class HeldWait:
    """The calls' thread's wait for another thread of its process while it held a range
    or sat in a Python frame with no work under it (``critical_path._Walk._held``):
    that thread's lane, the wait in ns, which of the holder's categories it takes its
    time from (its untraced time; a frame's own category), and what was held: the
    ranges' and frames' names with each one's part of the wait, biggest first (the
    parts add up to the wait), and whether the biggest is a Python frame."""

    lane: int
    ns: int
    cats: dict[str, int]
    held: tuple[tuple[str, int], ...]
    frame: bool


def _held_waits(ex: Analysis, typical: int) -> list[HeldWait]:
    """Where the typical step's critical path crossed from the calls' thread, holding
    only a range (or a Python frame with nothing under it), to another thread of its
    process working inside it (``critical_path._Walk._held``): the calls' thread's time
    inside the typical call while the path stood on that thread that was its silence
    (untraced) or that frame's own time, biggest first. That time is no untraced work
    of the thread: it waited for the other one (the main thread holding ``## backward
    ##`` while the autograd engine's thread runs it). Each crossing's stretch is
    counted once, less what an earlier crossing to the same thread counted, so the
    held ranges' parts add up to the wait."""
    from traceview import intervals

    j = _step_row(ex, typical)
    tl = ex.timeline
    if j is None or tl.lane is None or "untraced" not in tl.categories:
        return []
    trace, c = ex.trace, ex.calls.calls[typical]
    frame_cat = trace.cat_code("python_function")
    code = tl.categories.index("untraced")
    # per other thread: the stretches counted so far, ns per category, ns per name
    seen: dict[int, list[tuple[int, int]]] = {}
    cats: dict[int, dict[str, int]] = {}
    names: dict[int, dict[str, int]] = {}
    frames: dict[int, set[str]] = {}
    for holder, other, a, b, row in ex.steps[j].path.held:
        a, b = max(a, c.start_ns), min(b, c.end_ns)
        if holder != tl.lane.index or b <= a:
            continue
        done = seen.setdefault(other, [])
        if done:
            st, en = zip(*done, strict=True)
            ps, pe = intervals.subtract((np.asarray([a], np.int64), np.asarray([b], np.int64)),
                                        intervals.union(np.asarray(st, np.int64),
                                                        np.asarray(en, np.int64)))
        else:
            ps, pe = np.asarray([a], np.int64), np.asarray([b], np.int64)
        done.append((a, b))
        if not ps.size:
            continue
        frame = int(trace.slices.cat[row]) == frame_cat
        got: dict[str, int] = {}
        if frame:
            got = _owned_by(tl, row, ps, pe)
        else:
            ns = int(tl.overlap_by_category(ps, pe)[code].sum())
            if ns:
                got = {"untraced": ns}
        if not got:
            continue
        name = trace.names[int(trace.slices.name[row])]
        mine = cats.setdefault(other, {})
        for cat, ns in got.items():
            mine[cat] = mine.get(cat, 0) + ns
        named = names.setdefault(other, {})
        named[name] = named.get(name, 0) + sum(got.values())
        if frame:
            frames.setdefault(other, set()).add(name)
    out = []
    for other, mine in cats.items():
        held = tuple(sorted(names[other].items(), key=lambda kv: (-kv[1], kv[0])))
        out.append(HeldWait(other, sum(mine.values()), mine, held,
                            held[0][0] in frames.get(other, set())))
    return sorted(out, key=lambda h: (-h.ns, h.lane))


def _owned_by(tl: Any, row: int, ps: np.ndarray, pe: np.ndarray) -> dict[str, int]:
    """The thread's time owned by slice ``row`` (a frame's own time) inside the stretches
    [ps, pe), per category."""
    got: dict[str, int] = {}
    owner, cat = tl.seg_owner, tl.seg_cat
    for a, b in zip(ps.tolist(), pe.tolist(), strict=True):
        j = int(tl.seg_end.searchsorted(a, side="right"))
        j1 = int(tl.seg_start.searchsorted(b, side="left"))
        for k in range(j, j1):
            if int(owner[k]) != row:
                continue
            ns = min(int(tl.seg_end[k]), b) - max(int(tl.seg_start[k]), a)
            if ns > 0:
                what = tl.categories[int(cat[k])]
                got[what] = got.get(what, 0) + ns
    return got


def _held_categories(ex: Analysis, held: list[HeldWait],
                     cats: list[tuple[str, int]], cat_path: tuple[Any, ...],
                     figs: list[Figure], rels: list[Relation],
                     found: dict[str, Any], terms: dict[str, Any]) -> list[tuple[str, int]]:
    """The host categories to name where the calls' thread waited for another thread
    while holding a range (``_held_waits``): the time it takes, from its untraced time
    (or a frame's own category), split into that wait, one named category per thread
    waited for (``waiting for <thread>``, its figure in the finding's evidence), and the
    rest; the three biggest of the other categories beside them, every wait named,
    biggest first. The parts add up to the categories' time as the call's row holds it
    (a ``sum``), each ns once. Each wait names what was held, the biggest range or
    frame first (its name in the figure's name and its path; ``held_more`` counts the
    others), its part of the wait among parts that add up to it."""
    from traceview.analyses.threads import describe

    roles = {t.lane.index: t.role for t in ex.threads}
    whole = dict(cats)
    taken: dict[str, int] = {}
    for h in held:
        for c, ns in h.cats.items():
            taken[c] = taken.get(c, 0) + ns
    whose = [(describe(ex.trace.lanes[h.lane], roles.get(h.lane)), h) for h in held]
    waits = [(HELD_WAIT + who, h.ns) for who, h in whose]
    rest = [(c, ns - taken.get(c, 0)) for c, ns in cats]
    rest = sorted(((c, ns) for c, ns in rest if ns > 0 and c != "wait"),
                  key=lambda kv: (-kv[1], kv[0]))[:3]
    top = sorted(rest + waits, key=lambda kv: -kv[1])
    found["held_range_waits"] = {who: h.ns for who, h in whose}
    found["held_ranges"] = {who: dict(h.held) for who, h in whose}
    more = {who: [name for name, _ in h.held[1:]] for who, h in whose if len(h.held) > 1}
    if more:
        found["held_ranges_more"] = more
    found["untraced_not_waiting_ns"] = whole.get("untraced", 0) - taken.get("untraced", 0)
    others = {c: whole.get(c, 0) - ns for c, ns in taken.items() if c != "untraced"}
    if others:
        found["held_not_waiting_ns"] = others
    terms["held_frames"] = {who: h.frame for who, h in whose}

    def left_at(c: str) -> str:
        return evidence("untraced_not_waiting_ns") if c == "untraced" \
            else evidence("held_not_waiting_ns" + pointer(c))

    at = {HELD_WAIT + who: evidence("held_range_waits" + pointer(who)) for who, _ in whose}
    for c, ns in top:
        if c in at:
            figs.append(Figure(f"host:{c}", ns, at[c]))
        elif c in taken:
            figs.append(Figure(f"host:{c}", ns, left_at(c)))
        else:
            figs.append(Figure(f"host:{c}", ns, pointer(*cat_path, c)))
    named = {c for c, _ in top}
    parts = []
    for c in sorted(taken, key=lambda c: (c != "untraced", c)):
        left = f"host:{c}" if c in named else f"{c}_rest"
        if c not in named:
            figs.append(Figure(left, whole.get(c, 0) - taken[c], left_at(c)))
        figs.append(Figure(f"{c}_all", whole.get(c, 0), pointer(*cat_path, c)))
        parts.append((left, f"{c}_all"))
    wait_names = [f"host:{HELD_WAIT}{who}" for who, _ in whose]
    if len(parts) == 1:
        rels.append(rel("sum", parts[0][0], *wait_names, parts[0][1]))
    else:
        figs.append(Figure("held_all", sum(whole.get(c, 0) for c in taken)))
        rels += [rel("sum", *(a for _, a in parts), "held_all"),
                 rel("sum", *(left for left, _ in parts), *wait_names, "held_all")]
    for who, h in whose:
        names = [f"held:{who}:{name}" for name, _ in h.held]
        figs += [Figure(f"held:{who}:{name}", ns, evidence("held_ranges" + pointer(who, name)))
                 for name, ns in h.held]
        rels.append(rel("sum", *names, f"host:{HELD_WAIT}{who}"))
        rels += [rel("ge", names[0], x) for x in names[1:]]
        if who in more:
            figs.append(Figure(f"held_more:{who}", len(more[who]),
                               evidence("held_ranges_more" + pointer(who))))
    rels += _biggest_first("host", top)
    return top


def _stalled(ex: Analysis, typical: int, figs: list[Figure], rels: list[Relation],
             terms: dict[str, Any], evidence: dict[str, Any],
             stalled: Set | None = None) -> bool:
    """Does the host wait in synchronizing calls, with no device work running anywhere,
    for at least ``HOST_BOUND_IDLE_SHARE`` of the typical call? Then the device is idle
    because it has nothing to run (a stream held by an event wait, work outside the
    trace), not because the host is busy: the call is no host-bound one, and the sync
    wait is no host time to remove. Its figures and the longest stalled call's name
    (``terms["stalled_in"]``) are appended, and the stream-wait-event call that holds
    the stream that call waits on where the trace has one (``_stream_wait``).
    ``stalled``: the call's stretches as the report has them; made here without."""
    from traceview.analyses.what_if import call_stalls

    tl, call = ex.timeline, ex.calls.calls[typical]
    if stalled is None:
        stalled = call_stalls(ex.trace, tl, call)
    if stalled is None:
        return False
    st, en = stalled
    stalled_ns = int((en - st).sum())
    whole = next(f.value for f in figs if f.name == "call")
    if not isinstance(whole, int) or not whole or stalled_ns < HOST_BOUND_IDLE_SHARE * whole:
        return False
    # the synchronizing call that holds the longest stalled stretch: its owner's name
    k = int(np.argmax(en - st))
    seg = int(np.searchsorted(tl.seg_start, st[k], side="right")) - 1
    owner = int(tl.seg_owner[seg]) if seg >= 0 else -1
    if owner >= 0:
        terms["stalled_in"] = ex.trace.names[int(ex.trace.slices.name[owner])]
    figs += [Figure("stalled", stalled_ns), Figure("stalled_share", stalled_ns / whole)]
    rels += [rel("ratio", "stalled", "call", "stalled_share"),
             rel("ge", "stalled_share", "threshold")]
    evidence["stalled_sync_ns"] = stalled_ns
    if owner >= 0:
        _stream_wait(ex, owner, int(st[k]), figs, rels, terms, evidence)
    return True


def _stream_wait(ex: Analysis, owner: int, stall_start: int, figs: list[Figure],
                 rels: list[Relation], terms: dict[str, Any],
                 found: dict[str, Any]) -> None:
    """The stream-wait-event call that holds the stream the stalled synchronizing call
    ``owner`` waits on (``analyses.what_if.stream_wait``): which call, on which thread,
    how long before the synchronizing call it was issued, the stream where the trace
    says it, and whether the event it waits for is in the trace. Its evidence is the
    wait's start and the sync's, the lead between them a relation of the two."""
    from traceview.analyses.threads import describe
    from traceview.analyses.what_if import stream_wait

    trace = ex.trace
    w = stream_wait(trace, owner, stall_start)
    if w is None:
        return
    lane = trace.lanes[w.lane]
    role = next((t.role for t in ex.threads if t.lane.index == w.lane), None)
    sync_start = int(trace.slices.start[owner])
    found.update(stream_wait_call=trace.names[int(trace.slices.name[w.row])],
                 stream_wait_thread=describe(lane, role),
                 stream_wait_start_ns=w.start_ns, stream_wait_sync_start_ns=sync_start,
                 stream_wait_lead_ns=sync_start - w.start_ns,
                 stream_wait_matched=w.matched, stream_wait_event=w.event)
    figs += [Figure("wait_start", w.start_ns, evidence("stream_wait_start_ns")),
             Figure("sync_start", sync_start, evidence("stream_wait_sync_start_ns")),
             Figure("wait_lead", sync_start - w.start_ns, evidence("stream_wait_lead_ns"))]
    rels += [rel("sum", "wait_start", "wait_lead", "sync_start"),
             rel("lt", "wait_start", "sync_start")]
    if w.stream is not None:
        found["stream_wait_stream"] = w.stream
        figs.append(Figure("wait_stream", w.stream, evidence("stream_wait_stream")))
    terms["stream_wait"] = {
        "call": found["stream_wait_call"], "thread": found["stream_wait_thread"],
        "matched": w.matched, "event": w.event,
        "event_call": None if w.event_row is None
        else trace.names[int(trace.slices.name[w.event_row])]}


def _path_on_host(ex: Analysis, typical: int, figs: list[Figure],
                  rels: list[Relation]) -> bool:
    """Is the typical step's critical path more than ``PATH_HOST_SHARE`` host-thread time?
    Then the verdict is host-bound and says so, and how much of it is untraced (the profiler
    recorded nothing of what the thread did: its own work, or a wait it cannot see, such
    as polling memory the device writes), never that host work is hidden: its figures
    (each path item cited where the step's row holds it) are appended to ``figs``."""
    j = _step_row(ex, typical)
    if j is None:
        return False
    step = ex.steps[j]
    wall = step.end_ns - step.start_ns
    row = ("steps", "steps", j)
    host = [(i, item) for i, item in enumerate(step.path.items)
            if item.kind == "host" and item.what not in ("sync", "wait")]
    host_ns = sum(item.ns for _, item in host)
    if not wall or host_ns <= PATH_HOST_SHARE * wall:
        return False
    cited = [Figure(f"path:{i}", item.ns, pointer(*row, "critical_path", i, "ns"))
             for i, item in host]
    untraced = [f"path:{i}" for i, item in host if item.what == "untraced"]
    figs += [*cited, Figure("path_wall", wall, pointer(*row, "wall_ns")),
             Figure("path_host", host_ns), Figure("path_host_share", host_ns / wall),
             Figure("path_threshold", PATH_HOST_SHARE),
             Figure("path_untraced", sum(item.ns for _, item in host
                                         if item.what == "untraced"))]
    rels += [rel("sum", *(f.name for f in cited), "path_host"),
             rel("ratio", "path_host", "path_wall", "path_host_share"),
             rel("gt", "path_host_share", "path_threshold")]
    if untraced:
        rels.append(rel("sum", *untraced, "path_untraced"))
    return True


def _biggest_first(prefix: str, named: list[tuple[str, int]]) -> list[Relation]:
    """The categories a sentence names as where the time goes, each at least the next."""
    return [rel("ge", f"{prefix}:{a}", f"{prefix}:{b}") for (a, _), (b, _) in pairwise(named)]


def _drawn(ex: Analysis, typical: int, side: RelationKind, figs: list[Figure],
           rels: list[Relation]) -> None:
    """The typical call every output draws, cited beside the verdict's medians: it is
    idle on the same side of the threshold (``side``), and so is its step's device over
    all streams (over the step's extent: its range and the device work it launched after
    it) where the calls are steps. ``side`` "gt": the verdict is that the device work the
    call launched outlasts it, and the drawn call's and step's do so too."""
    drawn = ex.calls.calls[typical]
    at = ("calls", "per_call", typical, "metrics")
    d_call, d_idle = drawn.metrics["api_ns"], drawn.metrics["host_overhead_ns"]
    outlasts = side == "gt"
    figs += [Figure("drawn_call", d_call, pointer(*at, "api_ns"))]
    if outlasts:
        figs.append(Figure("drawn_kernel", drawn.metrics["kernel_ns"],
                           pointer(*at, "kernel_ns")))
        rels.append(rel("gt", "drawn_kernel", "drawn_call"))
    elif _extended_step(ex, typical)[1] is None:
        # (a step judged over its extent is judged by the steps' row below, not by its
        # range: the range alone is idle while its device work runs after it)
        figs += [Figure("drawn_idle", d_idle, pointer(*at, "host_overhead_ns")),
                 Figure("drawn_idle_share", (d_idle or 0) / d_call if d_call else None)]
        rels += [rel("ratio", "drawn_idle", "drawn_call", "drawn_idle_share"),
                 rel(side, "drawn_idle_share", "threshold")]
    j = _step_row(ex, typical)
    if j is not None and ex.timeline.lane is not None:
        # a step is drawn with its device over all streams (the steps' table): the
        # step the verdict names is idle on the same side of the threshold there too
        step = ex.steps[j]
        wall = step.end_ns - step.start_ns
        row = ("steps", "steps", j)
        figs.append(Figure("step_wall", wall, pointer(*row, "wall_ns")))
        if outlasts:  # its work outlasts the step's extent too (cut at the next step)
            rels.append(rel("gt", "drawn_kernel", "step_wall"))
            return
        figs += [Figure("step_idle", wall - step.device_busy_ns,
                        pointer(*row, "device_idle_ns")),
                 Figure("step_idle_share", (wall - step.device_busy_ns) / wall
                        if wall else None)]
        rels += [rel("ratio", "step_idle", "step_wall", "step_idle_share"),
                 rel(side, "step_idle_share", "threshold")]


def _outlasting(ex: Analysis, typical: int, evidence: dict[str, Any], figs: list[Figure],
                rels: list[Relation], terms: dict[str, Any]) -> Detected:
    """The device idles most of the call, but only because the call returns before the
    device work it launched runs: that work, longer than the call, not the host's,
    bounds what the call started (removing the host's part gains nothing: the what-if
    says so too). A call the device is busy most of is judged as any other."""
    terms["outlasts"] = True
    evidence["device_work_outlasts"] = True
    rels.append(rel("gt", "kernel", "call"))
    figs += _copy_figures_of_call(ex, typical)
    _tail(ex, typical, figs, rels)
    _drawn(ex, typical, "gt", figs, rels)
    return Detected("device-bound", evidence, tuple(figs), tuple(rels), terms)


def _tail(ex: Analysis, typical: int, figs: list[Figure], rels: list[Relation]) -> None:
    """How long the device work the typical call launched runs on after the call
    returns: the drawn call's end to its axis's end (the end of that work), both cited
    where the report's ``typical_call`` holds them (it draws the same call)."""
    c = ex.calls.calls[typical]
    end = ex.calls.kernel_end_ns[typical]
    if end is None or end <= c.end_ns:
        return
    figs += [Figure("end", c.end_ns, pointer("typical_call", "end_ns")),
             Figure("work_end", end, pointer("typical_call", "axis_end_ns")),
             Figure("tail", end - c.end_ns)]
    rels.append(rel("sum", "end", "tail", "work_end"))


def _step_row(ex: Analysis, typical: int) -> int | None:
    """The typical call's row in the steps' table, where the calls are steps."""
    return next((j for j, st_ in enumerate(ex.steps) if st_.index == typical), None)


def _extended_step(ex: Analysis, typical: int
                   ) -> tuple[int, StepFigures] | tuple[None, None]:
    """The typical call's row in the steps' table (its index there and the step) where
    the step's extent runs past its range (device work it launched still running after
    it), else (None, None)."""
    j = _step_row(ex, typical)
    if j is None or ex.timeline.lane is None:
        return None, None
    step = ex.steps[j]
    if step.range_end_ns is None or step.end_ns <= step.range_end_ns:
        return None, None
    return j, step


def _verdict_figures(ex: Analysis, unprofiled: UnprofiledInfo | None, figs: list[Figure],
                     rels: list[Relation], terms: dict[str, Any], *, typical: int | None,
                     measured: bool):
    """The verdict's call (the typical call ``typical``, or the window), its idle time and
    device work, cited where the report holds them (appended to ``figs``/``rels``), and
    the host categories to name: every figure the typical call's own."""
    api = kernel = None
    if typical is not None:
        c = ex.calls.calls[typical]
        row = ("calls", "per_call", typical)
        terms["scope"] = "step" if ex.steps else "call"
        api = c.api_ns
        kernel = c.metrics["kernel_ns"]
        figs.append(Figure("kernel", kernel, pointer(*row, "metrics", "kernel_ns")))
        if measured:
            assert unprofiled is not None and unprofiled.call_ns
            call = unprofiled.call_ns
            idle = max(0, call - (kernel or 0))
            figs += [Figure("call", call, pointer("unprofiled", "call_ns")),
                     Figure("profiled", api, pointer(*row, "metrics", "api_ns")),
                     Figure("idle", idle)]
            # the idle time is the call less the device work, none where the work outlasts it
            if kernel is None:
                rels.append(rel("eq", "idle", "call"))
            elif call >= kernel:
                rels.append(rel("sum", "idle", "kernel", "call"))
            else:
                figs.append(Figure("zero", 0))
                rels.append(rel("eq", "idle", "zero"))
        else:
            call = api
            idle = c.metrics["host_overhead_ns"] or 0
            j, step = _extended_step(ex, typical)
            wall = 0 if step is None else step.end_ns - step.start_ns
            if j is not None and step is not None and (kernel is None or kernel <= wall):
                # a step whose device work runs on past its range is judged over its
                # extent (the steps' table's row): its range alone reads idle what the
                # device spends on the work the step launched
                srow = ("steps", "steps", j)
                call, idle = wall, wall - step.device_busy_ns
                figs += [Figure("call", call, pointer(*srow, "wall_ns")),
                         Figure("idle", idle, pointer(*srow, "device_idle_ns")),
                         Figure("range", api, pointer(*row, "metrics", "api_ns"))]
                rels.append(rel("lt", "range", "call"))
            else:
                figs += [Figure("call", call, pointer(*row, "metrics", "api_ns")),
                         Figure("idle", idle, pointer(*row, "metrics", "host_overhead_ns"))]
        cats = sorted(c.categories.items(), key=lambda kv: (-kv[1], kv[0]))
        cat_path: tuple[Any, ...] = (*row, "categories")
    else:
        terms["scope"] = "window"
        call = ex.window.dur_ns
        idle = ex.device.idle_ns
        figs += [Figure("call", call, pointer("window", "dur_ns")),
                 Figure("idle", idle, pointer("device", "idle_ns")),
                 Figure("kernel", ex.device.busy_ns, pointer("device", "busy_ns"))]
        cats = sorted(((c, ns) for c, ns in ex.host_categories.items()), key=lambda kv: -kv[1])
        cat_path = ("host", "categories")
    return call, idle, api, kernel, cats, cat_path


def _threads_named(ex: Analysis) -> tuple[str, list[str]] | None:
    """Where more than one host thread works (a training step's autograd thread, a data
    loader), the thread the host categories are from and the others: a headline that
    names one thread's time says whose it is and that others work too."""
    from traceview.analyses.threads import describe

    lane = ex.timeline.lane
    working = [t for t in ex.threads if t.role != "helper" and t.work_ns > 0]
    if lane is None or len(working) < 2:
        return None
    mine = next((t for t in working if t.lane.index == lane.index), None)
    own = describe(lane, mine.role if mine else None)
    return own, [describe(t.lane, t.role) for t in working if t.lane.index != lane.index]


def _unsynchronized(ex: Analysis) -> list[Detected]:
    tails = [(c, k - c.end_ns) for c, k in zip(ex.calls.calls, ex.calls.kernel_end_ns, strict=True)
             if k is not None]
    calls = [c for c, _ in tails]
    late = [(c, t) for c, t in tails if t > UNSYNC_TAIL_NS]
    if not late:
        return []
    worst = max(t for _, t in late)
    return [Detected("unsynchronized-range",
                     {"late_calls": len(late), "calls": len(calls), "max_tail_ns": worst},
                     (Figure("late_calls", len(late), evidence("late_calls")),
                      Figure("calls", len(calls), evidence("calls")),
                      Figure("max_tail", worst, evidence("max_tail_ns")),
                      Figure("tail_floor", UNSYNC_TAIL_NS)),
                     (rel("le", "late_calls", "calls"), rel("gt", "max_tail", "tail_floor")))]


def _copy_figures(st: dict[str, Stats], at: tuple[Any, ...]) -> list[Figure]:
    """The kernels and copies apart (p50 of each, from the statistics ``st`` the message's
    other figures come from, held in the report at ``at``), where the copies' p50 is not
    0: then the device work the messages name is more than kernels, and they say so."""
    copy = st["copy_ns"].p50
    if not copy:
        return []
    return [Figure("kernel_only", st["kernel_only_ns"].p50,
                   pointer(*at, "kernel_only_ns", "p50")),
            Figure("copy", copy, pointer(*at, "copy_ns", "p50"))]


def _copy_figures_of_call(ex: Analysis, typical: int) -> list[Figure]:
    """The typical call's kernels and copies apart, where it copies: the device work the
    verdict names is then more than kernels, and it says so."""
    m = ex.calls.calls[typical].metrics
    if not m.get("copy_ns"):
        return []
    at = ("calls", "per_call", typical, "metrics")
    return [Figure("kernel_only", m["kernel_only_ns"], pointer(*at, "kernel_only_ns")),
            Figure("copy", m["copy_ns"], pointer(*at, "copy_ns"))]


def _range_idle(ex: Analysis) -> list[Detected]:
    if ex.steps:  # a training step is not an API to time with events: the step tables say
        return []  # where its device idle goes
    # the p50s of the typical call's kind: over calls of two kinds a kernel p50 of one
    # and a wall-time p50 of the other describe no call
    from traceview.analyses.calls import dominant_kind

    kind = dominant_kind(ex.calls.calls, ex.calls.startup)
    j = next((j for j, k in enumerate(ex.calls.kinds) if k.name == kind), None)
    st = ex.calls.kinds[j].stats if j is not None else ex.calls.stats
    at = ("calls", "kinds", j, "stats") if j is not None else ("calls", "stats")

    def stats_at(metric: str) -> str:
        return pointer(*at, metric, "p50")

    api, kernel = st["api_ns"].p50, st["kernel_ns"].p50
    if not api or kernel is None:
        return []
    share = kernel / api
    if share >= RANGE_IDLE_BUSY_SHARE:
        return []
    return [Detected("range-includes-idle",
                     {"api_ns_p50": api, "kernel_ns_p50": kernel, "kernel_share": round(share, 4)},
                     (Figure("call", api, stats_at("api_ns")),
                      Figure("kernel", kernel, stats_at("kernel_ns")),
                      Figure("share", share), Figure("threshold", RANGE_IDLE_BUSY_SHARE),
                      *_copy_figures(st, at)),
                     (rel("ratio", "kernel", "call", "share"), rel("lt", "share", "threshold")),
                     # calls of several kinds: the figures are one kind's p50s, and say so
                     terms={"kind": kind if j is not None and len(ex.calls.kinds) > 1
                            else None})]


def _graph_replay(ex: Analysis) -> list[Detected]:
    n = ex.launches.by_kind.get("graph", 0)
    if not n:
        return []
    figs: tuple[Figure, ...] = (
        Figure("graph_launches", n, pointer("launches", "by_kind", "graph")),
        Figure("kernels", ex.device.kernel_count, pointer("device", "kernel_count")))
    rels: tuple[Relation, ...] = ()
    eager = ex.launches.by_kind.get("kernel", 0)
    if eager:  # eager kernel launches beside the replays: the replays are some of them
        figs += (Figure("eager_launches", eager, pointer("launches", "by_kind", "kernel")),
                 Figure("kernel_launches", n + eager))
        rels = (rel("sum", "graph_launches", "eager_launches", "kernel_launches"),)
    return [Detected("graph-replay", {"graph_launches": n, "kernels": ex.device.kernel_count},
                     figs, rels,
                     terms={"api": runtime_of(ex.trace.metadata, ex.launches.by_api).api})]


def _cold_path(ex: Analysis) -> list[Detected]:
    """Compile/import work in the window, or a first call far above the warm median."""
    from traceview.analyses.calls import STARTUP_SHARE

    cold_ns = ex.host_categories.get("compile", 0) + ex.host_categories.get("import", 0)
    if not ex.rules.is_cold_work(cold_ns, ex.window.dur_ns):
        cold_ns = 0  # a helper's few us under a compile rule's name: no cold path
    calls = ex.calls
    first = calls.calls[0] if calls.calls else None
    warm_p50 = calls.stats["api_ns"].p50 if calls.warm_count else None
    # a first call whose excess the profiler's own work explains is an outlier, reported
    # by profiler-perturbation, not a cold path
    ratio = first.api_ns / warm_p50 if first is not None and warm_p50 \
        and not first.outlier else 0.0
    if not cold_ns and ratio <= COLD_FIRST_CALL_RATIO and not calls.cold_indices:
        return []
    cold_calls = [c for c in calls.calls if c.cold]
    from traceview.report.sentences import thread_refs

    refs = thread_refs(ex.threads, None if ex.timeline.lane is None else ex.timeline.lane.index)
    reasons = {c.index: _reason(calls.cold_causes.get(c.index), c.index, "cold-reason", refs)
               for c in cold_calls}
    figs: list[Figure] = []
    rels: list[Relation] = []
    # what the warm figures leave out: the cold calls, where there are; a first call that is
    # slow but not cold (nothing compiled or imported in it) stays among the warm calls
    warm_set = {c.index for c in calls.warm}
    # a start-up call and no warm call: no call is typical (``calls.typical``), and the
    # finding says so where the verdict would otherwise be read from one
    terms: dict[str, Any] = {"profiler_start": False,
                             "no_warm": not calls.warm_count and bool(calls.startup),
                             "cold_reasons": [(c.index, reasons[c.index]) for c in cold_calls],
                             "left_out": sum(1 for c in cold_calls if c.index not in warm_set),
                             "first_warm": first is not None and first.index in warm_set}
    if warm_p50:
        figs += [Figure("warm_p50", warm_p50, pointer("calls", "stats", "api_ns", "p50")),
                 Figure("warm_count", calls.warm_count, pointer("calls", "warm_count"))]
    if cold_ns:
        figs += [Figure("cold", cold_ns, evidence("compile_import_ns")),
                 Figure("window", ex.window.dur_ns, pointer("window", "dur_ns")),
                 Figure("cold_share", cold_ns / max(ex.window.dur_ns, 1))]
        rels += [rel("ratio", "cold", "window", "cold_share"), rel("le", "cold", "window")]
        # the compile/import time is the host's categories over the window, read there
        host = [c for c in ("compile", "import") if ex.host_categories.get(c)]
        figs += [Figure(f"host:{c}", ex.host_categories[c], pointer("host", "categories", c))
                 for c in host]
        rels.append(rel("sum", *(f"host:{c}" for c in host), "cold"))
    if first is not None and (first.cold or ratio > COLD_FIRST_CALL_RATIO):
        at = ("calls", "per_call", first.index)
        figs.append(Figure("first", first.metrics["api_ns"], pointer(*at, "metrics", "api_ns")))
        top = sorted(first.categories.items(), key=lambda kv: -kv[1])[:2]
        figs += [Figure(f"first:{c}", ns, pointer(*at, "categories", c)) for c, ns in top]
        rels += [rel("le", f"first:{c}", "first") for c, _ in top]
        if ratio:
            figs.append(Figure("ratio", ratio))
            rels.append(rel("ratio", "first", "warm_p50", "ratio"))
        terms["profiler_start"] = first.index in calls.startup or not cold_ns and (
            first.categories.get("profiler", 0) + first.categories.get("launch", 0)
            > STARTUP_SHARE * first.api_ns)
    return [Detected(
        "cold-path",
        {"compile_import_ns": cold_ns,
         "first_call_ns": first.metrics["api_ns"] if first else None,
         "first_call_ratio": round(ratio, 2), "warm_api_ns_p50": warm_p50,
         "cold_calls": calls.cold_indices,
         "cold_reasons": {str(c.index): reasons[c.index] for c in cold_calls},
         "outliers": {str(c.index): _reason(calls.outlier_causes.get(c.index), c.index,
                                            "outlier-reason", refs)
                      for c in calls.calls if c.outlier}},
        tuple(figs), tuple(rels), terms,
    )]


def _reason(cause, index: int, sid: str, refs) -> str | None:
    """A cold call's or an outlier's reason, worded as the report words it (``refs``:
    ``sentences.thread_refs``)."""
    from traceview.report.sentences import cause_claim

    return None if cause is None else cause_claim(cause, index, sid, refs).text


# What the reproducer template needs, and the flag that records it.
REPRODUCER_ITEMS = (
    ("shapes", "record_shapes=True"), ("dtypes", "record_shapes=True"),
    ("strides", "record_shapes=True"), ("scalar arguments", "record_shapes=True"),
    ("device", "a CUDA profiler activity"), ("driver and CUDA versions", "a CUDA profiler activity"),
    ("framework and compiler versions", "traceview capture"),
    ("synchronization protocol", "traceview capture"),
    ("correctness reference", "traceview capture"),
)


_OP_ARG_KEYS = ("Input Dims", "Input type", "Input Strides", "Concrete Inputs")


def _reproducer(ex: Analysis) -> list[Detected]:
    meta = ex.trace.metadata
    cap = ex.trace.capture or NO_CAPTURE
    ops = ex.trace.rows_of_cats({"cpu_op"}).tolist()

    found: set[str] | None = None

    def has(key: str) -> bool:  # the ops' args searched once, for every key asked below
        nonlocal found
        if found is None:
            found = ex.trace.slices.args.keys_present(ops, _OP_ARG_KEYS)
        return key in found

    # a ROCm trace records its driver in hip_driver_version and is worded as ROCm's
    rt = runtime_of(meta, ex.launches.by_api)
    present = {
        "shapes": bool(cap.shape) or has("Input Dims"),
        "dtypes": bool(cap.dtype) or has("Input type"),
        "strides": bool(cap.strides) or has("Input Strides"),
        "scalar arguments": cap.scalars is not None or has("Concrete Inputs"),
        "device": bool(meta.get("deviceProperties")) or bool(cap.device),
        "driver and CUDA versions": rt.driver_key in meta or bool(cap.device),
        "framework and compiler versions": bool(cap.versions),
        "synchronization protocol": cap.protocol is not None,
        "correctness reference": cap.correctness is not None,
    }
    missing = [(item, how) for item, how in REPRODUCER_ITEMS if not present[item]]
    if not missing:
        return []
    missing = [(item, f"add with {how}") for item, how in missing]
    if meta.get("record_shapes") or present["shapes"]:
        # the flag was on (the header says so, or the ops carry shapes): advising it
        # would contradict the trace; what is missing was not recorded with it on
        why = ("record_shapes was on: the profiler that wrote this trace does not record "
               "them" if ops else "record_shapes was on, but the trace records no operator")
        missing = [(item, why if how == "add with record_shapes=True" else how)
                   for item, how in missing]
    if ex.device.work_rows.size or any(lane.kind == "device" for lane in ex.trace.lanes):
        # the device activity was on (its work is in the file, if not in the window): the
        # header that names the device and driver is what is missing (a tool that
        # rewrote the file dropped it, or a profiler that did not write it)
        header = {"device": "add with the profiler's deviceProperties header: this file has "
                            "device work but not the header",
                  "driver and CUDA versions": f"add with the profiler's {rt.driver_key}: this "
                                              "file has device work but not the header"}
        missing = [(item, header.get(item, how)) for item, how in missing]
    if any(g.code == NSYS_EXPORT for g in ex.trace.diagnostics):
        # an Nsight Systems conversion: torch.profiler's flags and headers are no advice
        nsys = {"add with record_shapes=True": "an Nsight Systems capture records no op "
                                               "arguments: a torch.profiler trace with "
                                               "record_shapes=True does",
                "device": "the converter writes none of the nsys report's device information",
                "driver and CUDA versions": "the converter writes none of the nsys report's "
                                            "driver information"}
        missing = [(item, nsys.get(how, nsys.get(item, how))) if item in (
            "device", "driver and CUDA versions") or how in nsys else (item, how)
            for item, how in missing]
        said = [item for item, how in missing if how == nsys["add with record_shapes=True"]]
        if len(said) > 1:  # one reason said once for the op arguments it covers
            first = next(i for i, (item, _) in enumerate(missing) if item in said)
            joined = ", ".join(said[:-1]) + " and " + said[-1]
            rest = [(item, how) for item, how in missing if item not in said]
            missing = [*rest[:first], (joined, nsys["add with record_shapes=True"]),
                       *rest[first:]]
            return [Detected("reproducer-incomplete",
                             {"missing": [*said, *(m for m, _ in rest)]},
                             terms={"missing": missing, "steps": bool(ex.steps)})]
    if rt.toolkit != "CUDA":  # the flag keeps its name: ProfilerActivity.CUDA records HIP
        missing = [(f"driver and {rt.toolkit} versions" if item == "driver and CUDA versions"
                    else item, how) for item, how in missing]
    return [Detected("reproducer-incomplete", {"missing": [m for m, _ in missing]},
                     terms={"missing": missing, "steps": bool(ex.steps)})]


def _perturbation(ex: Analysis, unprofiled: UnprofiledInfo | None = None) -> list[Detected]:
    figs: list[Figure] = []
    rels: list[Relation] = []
    terms: dict[str, Any] = {"with_stack": ex.has_python_frames}
    evidence_: dict[str, Any] = {}
    if ex.has_python_frames:
        evidence_["with_stack"] = True
    prof = ex.calls.category_stats.get("profiler")
    if prof and prof.p50:
        figs.append(Figure("profiler", prof.p50, pointer("calls", "categories", "profiler", "p50")))
        evidence_["profiler_ns_per_call_p50"] = prof.p50
    pert = ex.per_call.perturbation if ex.per_call else None
    if pert is not None and pert.events_per_call and ex.has_python_frames:
        at = ("calls", "perturbation")
        figs += [Figure("events", pert.events_per_call, pointer(*at, "events_per_call")),
                 Figure("frames", pert.python_frames_per_call,
                        pointer(*at, "python_frames_per_call"))]
        if pert.python_frames_per_call is not None:
            rels.append(rel("le", "frames", "events"))
        evidence_["events_per_call_p50"] = pert.events_per_call
        evidence_["python_frames_per_call_p50"] = pert.python_frames_per_call
    warm_p50 = ex.calls.stats["api_ns"].p50
    spikes = [c for c in ex.calls.calls
              if warm_p50 and c.categories.get("profiler", 0) > PERTURBATION_CALL_SHARE * warm_p50]
    if spikes:
        worst = max(spikes, key=lambda c: c.categories.get("profiler", 0))
        row = ("calls", "per_call", worst.index)
        figs += [Figure("spike", worst.categories["profiler"],
                        pointer(*row, "categories", "profiler")),
                 Figure("spike_call", worst.index, pointer(*row, "index"))]
        evidence_["spike_calls"] = [c.index for c in spikes]
    from traceview.report.explanation import baseline_label, unprofiled_baseline

    # The report's one unprofiled call figure (``UnprofiledInfo.call_ns``: the measured
    # split's, --unprofiled-call, else capture's baseline compared like with like by
    # ``baseline_label``): a second figure here beside the split's made one report say
    # 5.6x and 5.07x of the same call.
    like = baseline_label(ex.trace) or ("full_api_ns_p50", "unprofiled")
    unprof = unprofiled_baseline(ex.trace)
    unprof_at = pointer("trace", "capture", "baseline", like[0])
    if unprofiled is not None and unprofiled.call_ns and unprofiled.method:
        if (unprofiled.method or "").startswith(MEASURED):
            like = ("split.call_ns", "unprofiled (measured split)")
        elif unprofiled.call_source == "--unprofiled-call":
            like = ("--unprofiled-call", "unprofiled (--unprofiled-call)")
        unprof = unprofiled.call_ns
        unprof_at = pointer("unprofiled", "call_ns")
    if unprof and warm_p50 and ex.calls.warm_count:
        ratio = warm_p50 / unprof
        figs += [Figure("profiled", warm_p50, pointer("calls", "stats", "api_ns", "p50")),
                 Figure("unprofiled", unprof, unprof_at),
                 Figure("ratio", ratio)]
        rels.append(rel("ratio", "profiled", "unprofiled", "ratio"))
        terms["baseline_label"] = like[1]
        evidence_.update({"profiled_api_ns_p50": warm_p50, "unprofiled_api_ns_p50": unprof,
                          "unprofiled_figure": like[0], "ratio": round(ratio, 3)})
    if not figs and not ex.has_python_frames:
        return []
    return [Detected("profiler-perturbation", evidence_, tuple(figs), tuple(rels), terms,
                     None if spikes or ex.has_python_frames else "info")]


# Triton's launchers call the driver API's module launch (PyTorch's own kernels go through
# cudaLaunchKernel), and name a kernel after its Python function: an identifier, unlike a
# CUTLASS template's "void cutlass::Kernel2<...>". cuBLAS's kernels named as identifiers
# (cuBLASLt's nvjet_*, the sm90_xmma_* families), launched the same way, are not Triton's;
# an Inductor kernel (triton_*) is Triton's however it is launched.
DRIVER_LAUNCHES = frozenset({"cuLaunchKernel", "cuLaunchKernelEx", "hipModuleLaunchKernel",
                             "hipExtModuleLaunchKernel"})
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LIBRARY_KERNEL = re.compile(r"^(nvjet_|sm\d+_|(ampere|hopper|volta|turing|maxwell)_|cutlass|cublas)")
_INDUCTOR_KERNEL = re.compile(r"^triton_")


def triton_launches(ex: Analysis) -> int:
    """The window's launches whose device work is evidently a Triton kernel launched
    eagerly (not a graph replay's node): what Triton's specialize, cache_key and
    launch_metadata stages run before."""
    t, rows = ex.trace, ex.launches.rows
    names = [t.names[c] for c in t.slices.name[rows].tolist()]
    n_work, work = t.launch_work(rows)
    first = np.cumsum(n_work) - n_work
    count = 0
    for i, name in enumerate(names):
        if not n_work[i] or ex.rules.launch_kind(name) != "kernel":
            continue
        kernel = t.names[int(t.slices.name[work[first[i]]])]
        if _INDUCTOR_KERNEL.search(kernel) or (
                name in DRIVER_LAUNCHES and _IDENTIFIER.match(kernel)
                and not _LIBRARY_KERNEL.search(kernel)):
            count += 1
    return count


def _no_python_frames(ex: Analysis) -> list[Detected]:
    if ex.has_python_frames or ex.timeline.lane is None:
        return []
    untraced = ex.host_categories.get("untraced", 0)
    w = max(ex.window.dur_ns, 1)
    nsys = any(g.code == NSYS_EXPORT for g in ex.trace.diagnostics)
    return [Detected("no-python-frames", {"untraced_ns": untraced},
                     (Figure("untraced", untraced, evidence("untraced_ns")),
                      Figure("window", w, pointer("window", "dur_ns")),
                      Figure("share", untraced / w)),
                     (rel("ratio", "untraced", "window", "share"), rel("le", "untraced", "window")),
                     terms={"triton": triton_launches(ex) > 0, "nsys": nsys})]


def _input_problems(ex: Analysis) -> list[Detected]:
    out = []
    cut = _cut_short(ex)
    if ex.window.dur_ns <= 0:
        out.append(Detected("no-activity", {"slices": len(ex.trace.slices)}))
    elif ex.device.work_rows.size == 0 and not (cut and ex.launches.count):
        out.append(Detected("no-device-work", {}))
    if ex.timeline.lane is None and ex.window.dur_ns > 0:
        out.append(Detected("no-host-events", {}))
    if ex.timeline.non_nested:
        out.append(Detected("overlapping-host-slices", {"count": ex.timeline.non_nested},
                            (Figure("count", ex.timeline.non_nested, evidence("count")),)))
    if ex.launches.unlinked_work:
        out.append(Detected("device-work-without-launch", {"count": ex.launches.unlinked_work},
                            (Figure("count", ex.launches.unlinked_work,
                                    pointer("launches", "unlinked_device_work")),)))
    launchers = {str(ex.trace.lanes[ln].pid) for ln, n in ex.launches.threads.items() if n}
    if len(launchers) > 1 and ex.timeline.lane is not None \
            and str(ex.timeline.lane.pid) in launchers:
        pid = ex.timeline.lane.pid
        out.append(Detected("several-processes", {"processes": len(launchers), "process": pid},
                            (Figure("processes", len(launchers), evidence("processes")),),
                            terms={"process": pid}))
    unlinked = ex.launches.count - ex.launches.linked
    if unlinked:
        # the launches without a device record are the launches less the linked ones
        figs: tuple[Figure, ...] = (
            Figure("count", unlinked, evidence("count")),
            Figure("linked", ex.launches.linked, pointer("launches", "linked")),
            Figure("launches", ex.launches.count, pointer("launches", "count")))
        rels: tuple[Relation, ...] = (rel("sum", "count", "linked", "launches"),)
        unexported = 0 if cut else _unexported_empty(ex)
        if unexported:  # some of them the file never holds: said apart, with their cause
            figs += (Figure("unexported", unexported, evidence("unexported")),)
            rels += (rel("le", "unexported", "count"),)
        out.append(Detected("device-work-cut" if cut else "launch-without-device-work",
                            {"count": unlinked, "launches": ex.launches.count} if cut
                            else {"count": unlinked, "unexported": unexported} if unexported
                            else {"count": unlinked}, figs, rels))
    return out


# The verdict comes first and also reads the unprofiled split (``detect``).
DETECTORS: list[Callable[[Analysis], list[Detected]]] = [
    _unsynchronized, _range_idle, _graph_replay, _cold_path, _perturbation,
    _reproducer, _no_python_frames, _input_problems,
]


def _unexported_empty(ex: Analysis) -> int:
    """The launches without a device record whose device records the file never holds
    (``analyses.launches.unexported_names``: an Nsight Systems conversion's copies and sets)."""
    if not ex.launches.unexported:
        return 0
    rows = ex.launches.rows
    names = np.asarray([ex.trace.names[c] for c in ex.trace.slices.name[rows].tolist()], dtype=object)
    empty = ex.trace.launch_work(rows)[0] == 0
    return int((empty & np.isin(names, list(ex.launches.unexported))).sum())


def _cut_short(ex: Analysis) -> bool:
    return any(g.code in CUT_SHORT for g in ex.trace.diagnostics)


def detect(ex: Analysis, unprofiled: UnprofiledInfo | None = None,
           typical: int | None = None, stalled: Set | None = None
           ) -> tuple[list[Finding], list[Claim]]:
    """Every detector's findings, phrased, the most severe first, with the claim each
    message is made from (``report.claims``); from a file cut short, none that rests on
    something being absent (``FROM_ABSENCE``). ``unprofiled``: the call's unprofiled
    split, which the verdict cites where it was measured; ``typical``: the index of the
    typical call the report draws, which the verdict cites too; ``stalled``: that
    call's stalled sync stretches, as the report has them for its what-if models too."""
    from traceview.report.messages import claim_of

    cut = _cut_short(ex)
    detected = _verdict(ex, unprofiled, typical, stalled) + [
        d for det in DETECTORS
        # the perturbation finding cites the report's one unprofiled call figure
        for d in (_perturbation(ex, unprofiled) if det is _perturbation else det(ex))]
    detected = recorded_by(ex, detected)  # advice in the terms of the profiler that wrote it
    kept = sorted((d for d in detected if not (cut and d.id in FROM_ABSENCE)),
                  key=lambda d: SEVERITY_ORDER.get(d.severity or FINDINGS[d.id].severity, 9))
    claims = [claim_of(d, pointer("findings", i, "evidence")) for i, d in enumerate(kept)]
    found = [Finding(d.id, d.severity or FINDINGS[d.id].severity, c.text, d.evidence)
             for d, c in zip(kept, claims, strict=True)]
    return found, claims


# ---------------------------------------------------------------- another profiler's trace
# The detectors advise in torch.profiler's terms (record_shapes=True, the deviceProperties
# header, with_stack=True, a schedule with warm-up steps). A rocprof trace (read by
# io/rocprof.py, which says so in its diagnostic) was recorded by a tool that has none of
# those: its findings say what rocprof records and what records the rest; the figures stay
# as they were detected.

# what torch.profiler's record_shapes adds to the ops, which a rocprof trace has none of
_OP_ARGUMENTS = ("shapes", "dtypes", "strides", "scalar arguments")
_NO_OP_ARGUMENTS = ("rocprof records no op arguments: a torch.profiler trace with "
                    "record_shapes=True does")
_ROCPROF_HOW = {
    "device": "rocprof writes rocminfo's agent list, not a device header traceview reads",
    "driver and ROCm versions": "rocprof writes none",
    "driver and CUDA versions": "rocprof writes none",
}


def recorded_by(ex: Analysis, detected: list[Detected]) -> list[Detected]:
    """``detected`` with the advice of a rocprof trace's findings in rocprof's terms
    (any other trace's as they are)."""
    if not any(g.code == ROCPROF for g in ex.trace.diagnostics):
        return detected
    return [_rocprof(d) for d in detected]


def _rocprof(d: Detected) -> Detected:
    if d.id in ("no-python-frames", "cold-path"):
        return replace(d, terms={**d.terms, "recorder": "rocprof"})
    if d.id != "reproducer-incomplete":
        return d
    missing = d.terms["missing"]
    args = [item for item, _ in missing if item in _OP_ARGUMENTS]
    rest = [(item, _ROCPROF_HOW.get(item, how)) for item, how in missing
            if item not in _OP_ARGUMENTS]
    if args:  # one reason, said once, for the op arguments it covers
        joined = ", ".join(args[:-1]) + " and " + args[-1] if len(args) > 1 else args[0]
        rest = [(joined, _NO_OP_ARGUMENTS), *rest]
    return replace(d, terms={**d.terms, "missing": rest})
