"""Findings: what a reader must know before trusting or comparing the numbers.

The measurement traps that make benchmark numbers lie (asynchronous launches, events
that are not kernel time, graph replay taken for eager, cold calls mixed with warm ones,
missing correctness or metadata; docs/findings.md), detected from the trace itself, plus profiler
perturbation and the headline verdict (host-bound or device-bound). Each finding has a
stable id from ``traceview.codes.FINDINGS`` (a contract: checks and diffs match on it),
a severity ("error" > "warning" > "info"), a one-line message with the numbers, and
evidence for the JSON output.

Detectors are small functions listed in ``DETECTORS``; each reads the frozen
``Analysis`` and returns zero or more ``Detected``: the id, the evidence and the raw
figures the message needs. Detectors never format numbers: ``report.messages`` phrases
each id from its figures (with the one unit formatter), in ``detect``. Every threshold is
a named constant below, with its reasoning in ``docs/findings.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from traceview.codes import FINDINGS, SEVERITY_ORDER
from traceview.metadata import NO_CAPTURE
from traceview.report.detected import Detected
from traceview.report.model import Finding
from traceview.report.unprofiled import MEASURED

if TYPE_CHECKING:
    from traceview.report.explanation import Analysis
    from traceview.report.unprofiled import UnprofiledInfo

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
# Profiler overhead inside one call above this share of the warm median is reported.
PERTURBATION_CALL_SHARE = 0.25
# Findings that conclude from something's absence ("no Python frames: with_stack was off",
# "no device work: a CPU-only trace"). From a file cut short the absent part may simply be
# the part that is missing, so they are not drawn from one: the damage is said instead.
FROM_ABSENCE = frozenset({"no-python-frames", "no-device-work", "no-host-events",
                          "reproducer-incomplete", "launch-without-device-work"})
# The loader's diagnostics that mean the file ends before its end.
CUT_SHORT = frozenset({"truncated", "compressed-stream-cut"})


def _verdict(ex: Analysis, unprofiled: UnprofiledInfo | None = None) -> list[Detected]:
    """host-bound / device-bound: the share of a typical call the device sits idle.

    Where the call's split was measured without the profiler, that is the call judged:
    its idle share is the unprofiled call less the device work, and the host categories
    named are the unprofiled ones (the profiled ranking can be the wrong way round: the
    profiler inflates a stage of many small frames most), the profiled ones beside them.
    A profiled call 5x the real one would otherwise call host-bound a call that is not."""
    calls = ex.calls.warm
    measured = bool(calls and unprofiled is not None and unprofiled.call_ns
                    and (unprofiled.method or "").startswith(MEASURED))
    if calls:
        api = ex.calls.stats["api_ns"].p50 or 0
        idle = ex.calls.stats["host_overhead_ns"].p50 or 0
        if measured:
            assert unprofiled is not None and unprofiled.call_ns
            api, prof_api = unprofiled.call_ns, api
            idle = max(0, api - (ex.calls.stats["kernel_ns"].p50 or 0))
        share = idle / api if api else 0.0
        scope = ("step" if ex.steps else "call", api)
        idle_ns = idle
        cats = sorted(((c, s.p50 or 0) for c, s in ex.calls.category_stats.items()),
                      key=lambda kv: -kv[1])
    else:
        w = ex.window.dur_ns
        share = ex.device.idle_ns / w if w else 0.0
        scope = ("window", w)
        idle_ns = ex.device.idle_ns
        cats = sorted(((c, ns) for c, ns in ex.host_categories.items()), key=lambda kv: -kv[1])
    if ex.window.dur_ns <= 0 or (ex.device.busy_ns == 0 and not ex.device.kernel_count):
        return []
    # waiting for another thread is not where host time goes: that thread's work is
    # (the steps' critical path says whose)
    top = [(c, ns) for c, ns in cats if ns > 0 and c != "wait"][:3]
    evidence: dict[str, Any] = {"device_idle_share": round(share, 4),
                                "top_host_categories": dict(top)}
    facts: dict[str, Any] = {"share": share, "scope": scope, "top": top, "idle_ns": idle_ns,
                             "threads": _threads_named(ex)}
    if measured:
        assert unprofiled is not None
        top_u = sorted(((c, ns) for c, ns in unprofiled.categories.items()
                        if ns > 0 and c != "wait"), key=lambda kv: (-kv[1], kv[0]))[:3]
        facts.update(top_unprofiled=top_u, profiled_ns=prof_api)
        evidence.update(unprofiled_call_ns=api, profiled_call_ns=prof_api,
                        top_host_categories_unprofiled=dict(top_u))
    if share >= HOST_BOUND_IDLE_SHARE:
        facts["kernel_ns"] = ex.calls.stats["kernel_ns"].p50 if calls else ex.device.busy_ns
        if calls:
            facts.update(_copy_split(ex))
        return [Detected("host-bound", evidence, facts)]
    return [Detected("device-bound", evidence, facts)]


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
                     {"late_calls": len(late), "calls": len(calls), "max_tail_ns": worst})]


def _copy_split(ex: Analysis) -> dict[str, int | None]:
    """The warm calls' kernels and copies apart (p50 of each), where the copies' p50 is not
    0: then the device work the messages name is more than kernels, and they say so."""
    st = ex.calls.stats
    copy = st["copy_ns"].p50
    return {"kernel_only_ns": st["kernel_only_ns"].p50, "copy_ns": copy} if copy else {}


def _range_idle(ex: Analysis) -> list[Detected]:
    if ex.steps:  # a training step is not an API to time with events: the step tables say
        return []  # where its device idle goes
    st = ex.calls.stats
    api, kernel = st["api_ns"].p50, st["kernel_ns"].p50
    if not api or kernel is None:
        return []
    share = kernel / api
    if share >= RANGE_IDLE_BUSY_SHARE:
        return []
    return [Detected("range-includes-idle",
                     {"api_ns_p50": api, "kernel_ns_p50": kernel, "kernel_share": round(share, 4)},
                     {"share": share, **_copy_split(ex)})]


def _graph_replay(ex: Analysis) -> list[Detected]:
    n = ex.launches.by_kind.get("graph", 0)
    if not n:
        return []
    return [Detected("graph-replay", {"graph_launches": n, "kernels": ex.device.kernel_count})]


def _cold_path(ex: Analysis) -> list[Detected]:
    """Compile/import work in the window, or a first call far above the warm median."""
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
    facts: dict[str, Any] = {"cold_ns": cold_ns, "window_ns": ex.window.dur_ns, "ratio": ratio,
                             "warm_p50": warm_p50, "warm_count": calls.warm_count,
                             "first_ns": None, "first_top": [], "profiler_start": False,
                             "cold_reasons": [(c.index, c.cold_reason) for c in cold_calls]}
    if first is not None and (first.cold or ratio > COLD_FIRST_CALL_RATIO):
        facts["first_ns"] = first.metrics["api_ns"]
        facts["first_top"] = sorted(first.categories.items(), key=lambda kv: -kv[1])[:2]
        facts["profiler_start"] = not cold_ns and first.categories.get(
            "profiler", 0) + first.categories.get("launch", 0) > 0.5 * first.api_ns
    return [Detected(
        "cold-path",
        {"compile_import_ns": cold_ns,
         "first_call_ns": first.metrics["api_ns"] if first else None,
         "first_call_ratio": round(ratio, 2), "warm_api_ns_p50": warm_p50,
         "cold_calls": calls.cold_indices,
         "cold_reasons": {str(c.index): c.cold_reason for c in cold_calls},
         "outliers": {str(c.index): c.outlier_reason for c in calls.calls if c.outlier}},
        facts,
    )]


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

    present = {
        "shapes": bool(cap.shape) or has("Input Dims"),
        "dtypes": bool(cap.dtype) or has("Input type"),
        "strides": bool(cap.strides) or has("Input Strides"),
        "scalar arguments": cap.scalars is not None or has("Concrete Inputs"),
        "device": bool(meta.get("deviceProperties")) or bool(cap.device),
        "driver and CUDA versions": "cuda_driver_version" in meta or bool(cap.device),
        "framework and compiler versions": bool(cap.versions),
        "synchronization protocol": cap.protocol is not None,
        "correctness reference": cap.correctness is not None,
    }
    missing = [(item, how) for item, how in REPRODUCER_ITEMS if not present[item]]
    if not missing:
        return []
    return [Detected("reproducer-incomplete", {"missing": [m for m, _ in missing]},
                     {"missing": missing, "steps": bool(ex.steps)})]


def _perturbation(ex: Analysis) -> list[Detected]:
    facts: dict[str, Any] = {"with_stack": ex.has_python_frames}
    evidence: dict[str, Any] = {}
    if ex.has_python_frames:
        evidence["with_stack"] = True
    prof = ex.calls.category_stats.get("profiler")
    if prof and prof.p50:
        facts["profiler_p50"] = prof.p50
        evidence["profiler_ns_per_call_p50"] = prof.p50
    pert = ex.per_call.perturbation if ex.per_call else None
    if pert is not None and pert.events_per_call and ex.has_python_frames:
        facts["events"] = (pert.events_per_call, pert.python_frames_per_call)
        evidence["events_per_call_p50"] = pert.events_per_call
        evidence["python_frames_per_call_p50"] = pert.python_frames_per_call
    warm_p50 = ex.calls.stats["api_ns"].p50
    spikes = [c for c in ex.calls.calls
              if warm_p50 and c.categories.get("profiler", 0) > PERTURBATION_CALL_SHARE * warm_p50]
    if spikes:
        worst = max(spikes, key=lambda c: c.categories.get("profiler", 0))
        facts["spike"] = (worst.categories["profiler"], worst.index)
        evidence["spike_calls"] = [c.index for c in spikes]
    from traceview.report.explanation import unprofiled_baseline

    cap = ex.trace.capture
    sync = cap.protocol.sync if cap is not None and cap.protocol is not None else None
    # Compare like with like (unprofiled_baseline): a call that synchronizes with the
    # synchronized full-API figure, a call that only submits (--sync end) with the
    # amortized submit time; never a cold call (cold twins) and never graph replays.
    like = ("amortized_submit_ns", "unprofiled amortized submit") if sync == "end" \
        else ("full_api_ns_p50", "unprofiled")
    unprof = unprofiled_baseline(ex.trace)
    if unprof and warm_p50 and ex.calls.warm_count:
        ratio = warm_p50 / unprof
        facts["baseline"] = (warm_p50, like[1], unprof, ratio)
        evidence.update({"profiled_api_ns_p50": warm_p50, "unprofiled_api_ns_p50": unprof,
                         "unprofiled_figure": like[0], "ratio": round(ratio, 3)})
    if len(facts) == 1 and not ex.has_python_frames:
        return []
    return [Detected("profiler-perturbation", evidence, facts,
                     None if spikes or ex.has_python_frames else "info")]


def _no_python_frames(ex: Analysis) -> list[Detected]:
    if ex.has_python_frames or ex.timeline.lane is None:
        return []
    untraced = ex.host_categories.get("untraced", 0)
    return [Detected("no-python-frames", {"untraced_ns": untraced},
                     {"share": untraced / max(ex.window.dur_ns, 1)})]


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
        out.append(Detected("overlapping-host-slices", {"count": ex.timeline.non_nested}))
    if ex.launches.unlinked_work:
        out.append(Detected("device-work-without-launch", {"count": ex.launches.unlinked_work}))
    unlinked = ex.launches.count - ex.launches.linked
    if unlinked and cut:
        out.append(Detected("device-work-cut", {"count": unlinked, "launches": ex.launches.count}))
    elif unlinked:
        out.append(Detected("launch-without-device-work", {"count": unlinked},
                            {"launches": ex.launches.count}))
    return out


# The verdict comes first and also reads the unprofiled split (``detect``).
DETECTORS: list[Callable[[Analysis], list[Detected]]] = [
    _unsynchronized, _range_idle, _graph_replay, _cold_path, _perturbation,
    _reproducer, _no_python_frames, _input_problems,
]


def _cut_short(ex: Analysis) -> bool:
    return any(g.code in CUT_SHORT for g in ex.trace.diagnostics)


def detect(ex: Analysis, unprofiled: UnprofiledInfo | None = None) -> list[Finding]:
    """Every detector's findings, phrased, the most severe first; from a file cut short,
    none that rests on something being absent (``FROM_ABSENCE``). ``unprofiled``: the
    call's unprofiled split, which the verdict cites where it was measured."""
    from traceview.report.messages import phrase

    cut = _cut_short(ex)
    detected = _verdict(ex, unprofiled) + [d for det in DETECTORS for d in det(ex)]
    found = [Finding(d.id, d.severity or FINDINGS[d.id].severity, phrase(d), d.evidence)
             for d in detected if not (cut and d.id in FROM_ABSENCE)]
    return sorted(found, key=lambda f: SEVERITY_ORDER.get(f.severity, 9))
