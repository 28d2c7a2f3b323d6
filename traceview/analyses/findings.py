"""Findings: what a reader must know before trusting or comparing the numbers.

The seed's five measurement traps, detected from the trace itself, plus profiler
perturbation and the headline verdict (host-bound or device-bound). Each finding has a
stable id (a contract: checks and diffs match on it), a severity ("error" > "warning"
> "info"), a one-line message with the numbers, and evidence for the JSON output.

Detectors are small functions listed in ``DETECTORS``; each reads the finished
explanation and returns zero or more findings. Every threshold is a named constant
below, with its reasoning in ``docs/findings.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from traceview.render._format import fmt_ns

if TYPE_CHECKING:
    from traceview.explanation import Explanation

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}

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


@dataclass(frozen=True)
class Finding:
    id: str
    severity: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "severity": self.severity, "message": self.message,
                "evidence": self.evidence}


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _verdict(ex: Explanation) -> list[Finding]:
    """host-bound / device-bound: the share of a typical call the device sits idle."""
    calls = ex.calls.warm
    if calls:
        api = ex.calls.stats["api_ns"].p50 or 0
        idle = ex.calls.stats["host_overhead_ns"].p50 or 0
        share = idle / api if api else 0.0
        scope = f"a typical call ({fmt_ns(api)})"
        cats = sorted(((c, s.p50 or 0) for c, s in ex.calls.category_stats.items()),
                      key=lambda kv: -kv[1])
    else:
        w = ex.window.dur_ns
        share = ex.device.idle_ns / w if w else 0.0
        scope = f"the window ({fmt_ns(w)})"
        cats = sorted(((c, ns) for c, ns in ex.host_categories.items()), key=lambda kv: -kv[1])
    if ex.window.dur_ns <= 0 or (ex.device.busy_ns == 0 and not ex.device.kernel_count):
        return []
    top = [(c, ns) for c, ns in cats if ns > 0][:3]
    top_txt = ", ".join(f"{c} {fmt_ns(ns)}" for c, ns in top)
    evidence = {"device_idle_share": round(share, 4), "top_host_categories": dict(top)}
    if share >= HOST_BOUND_IDLE_SHARE:
        kernel = ex.calls.stats["kernel_ns"].p50 if calls else ex.device.busy_ns
        return [Finding("host-bound", "info",
                        f"host-bound: the device is idle {_pct(share)} of {scope}; kernel "
                        f"{fmt_ns(kernel)}; host time goes to {top_txt}", evidence)]
    return [Finding("device-bound", "info",
                    f"device-bound: the device is busy {_pct(1 - share)} of {scope}; "
                    "host work is hidden behind device execution", evidence)]


def _unsynchronized(ex: Explanation) -> list[Finding]:
    calls = [c for c in ex.calls.calls if c.kernel_end_ns is not None]
    late = [(c, c.kernel_end_ns - c.end_ns) for c in calls if c.kernel_end_ns - c.end_ns > UNSYNC_TAIL_NS]
    if not late:
        return []
    worst = max(t for _, t in late)
    return [Finding(
        "unsynchronized-range", "warning",
        f"call ranges measure submission, not completion: in {len(late)} of {len(calls)} calls "
        f"the device work ended up to {fmt_ns(worst)} after the range",
        {"late_calls": len(late), "calls": len(calls), "max_tail_ns": worst},
    )]


def _range_idle(ex: Explanation) -> list[Finding]:
    st = ex.calls.stats
    api, kernel = st["api_ns"].p50, st["kernel_ns"].p50
    if not api or kernel is None:
        return []
    share = kernel / api
    if share >= RANGE_IDLE_BUSY_SHARE:
        return []
    return [Finding(
        "range-includes-idle", "warning",
        f"each call spans {fmt_ns(api)}, of which the kernel runs {fmt_ns(kernel)} "
        f"({_pct(share)}); event-based timing of this API would report launch overhead, "
        "not kernel time",
        {"api_ns_p50": api, "kernel_ns_p50": kernel, "kernel_share": round(share, 4)},
    )]


def _graph_replay(ex: Explanation) -> list[Finding]:
    n = ex.launches.by_kind.get("graph", 0)
    if not n:
        return []
    return [Finding(
        "graph-replay", "warning",
        f"results are CUDA graph replay ({n} graph launches, {ex.device.kernel_count} kernels); "
        "they do not show eager launch cost",
        {"graph_launches": n, "kernels": ex.device.kernel_count},
    )]


def _cold_path(ex: Explanation) -> list[Finding]:
    """Compile/import work in the window, or a first call far above the warm median."""
    cold_ns = ex.host_categories.get("compile", 0) + ex.host_categories.get("import", 0)
    calls = ex.calls
    first = calls.calls[0] if calls.calls else None
    warm_p50 = calls.stats["api_ns"].p50 if calls.warm_count else None
    # a first call whose excess the profiler's own work explains is an outlier, reported
    # by profiler-perturbation, not a cold path
    ratio = first.metrics["api_ns"] / warm_p50 if first is not None and warm_p50 \
        and not first.outlier else 0.0
    if not cold_ns and ratio <= COLD_FIRST_CALL_RATIO:
        return []
    parts = []
    if cold_ns:
        parts.append(f"{fmt_ns(cold_ns)} of compile/import work in the window "
                     f"({_pct(cold_ns / max(ex.window.dur_ns, 1))})")
    if first is not None:
        top = sorted(first.categories.items(), key=lambda kv: -kv[1])[:2]
        where = ", ".join(f"{c} {fmt_ns(ns)}" for c, ns in top)
        parts.append(f"first call {fmt_ns(first.metrics['api_ns'])}"
                     + (f" ({ratio:.0f}x the warm median; {where})" if ratio else ""))
    cause = ""
    if not cold_ns and first is not None and first.categories.get("profiler", 0) + first.categories.get(
            "launch", 0) > 0.5 * first.metrics["api_ns"]:
        cause = ("; mostly profiler start-up (the first profiled launch): profile with a "
                 "schedule that has warm-up steps")
    cold_calls = [c for c in calls.calls if c.cold]
    if cold_calls:
        why = "; ".join(f"#{c.index} {c.cold_reason}" for c in cold_calls[:3])
        more = f" (+{len(cold_calls) - 3} more)" if len(cold_calls) > 3 else ""
        parts.append(f"cold call(s) {why}{more}")
    warm = (f"; warm calls without it: p50 {fmt_ns(warm_p50)} over {calls.warm_count}"
            if warm_p50 else "")
    return [Finding(
        "cold-path", "warning",
        "cold path in the window: " + ", ".join(parts) + cause + warm,
        {"compile_import_ns": cold_ns,
         "first_call_ns": first.metrics["api_ns"] if first else None,
         "first_call_ratio": round(ratio, 2), "warm_api_ns_p50": warm_p50,
         "cold_calls": calls.cold_indices,
         "cold_reasons": {str(c.index): c.cold_reason for c in cold_calls},
         "outliers": {str(c.index): c.outlier_reason for c in calls.calls if c.outlier}},
    )]


def _reproducer(ex: Explanation) -> list[Finding]:
    meta = ex.trace.metadata
    cap = meta.get("traceview") if isinstance(meta.get("traceview"), dict) else {}
    args = [a for r, a in ex.trace.slices.args.items()
            if ex.trace.cat_names[ex.trace.slices.cat[r]] == "cpu_op"]
    has = lambda key: any(key in a for a in args)  # noqa: E731
    missing = []
    checks = [
        ("shapes", bool(cap.get("shape")) or has("Input Dims"), "record_shapes=True"),
        ("dtypes", bool(cap.get("dtype")) or has("Input type"), "record_shapes=True"),
        ("strides", bool(cap.get("strides")) or has("Input Strides"), "record_shapes=True"),
        ("scalar arguments", "scalars" in cap or has("Concrete Inputs"), "record_shapes=True"),
        ("device", bool(meta.get("deviceProperties")) or bool(cap.get("device")),
         "a CUDA profiler activity"),
        ("driver and CUDA versions", "cuda_driver_version" in meta or bool(cap.get("device")),
         "a CUDA profiler activity"),
        ("framework and compiler versions", bool(cap.get("versions")), "traceview capture"),
        ("synchronization protocol", bool(cap.get("protocol")), "traceview capture"),
        ("correctness reference", bool(cap.get("correctness")), "traceview capture"),
    ]
    for item, ok, how in checks:
        if not ok:
            missing.append((item, how))
    if not missing:
        return []
    txt = "; ".join(f"{item} (add with {how})" for item, how in missing)
    return [Finding("reproducer-incomplete", "warning",
                    f"the trace lacks what a reproducer needs: {txt}",
                    {"missing": [m for m, _ in missing]})]


def _perturbation(ex: Explanation) -> list[Finding]:
    out = []
    notes = []
    evidence: dict[str, Any] = {}
    if ex.has_python_frames:
        notes.append("Python tracing (with_stack) is on and slows every Python frame")
        evidence["with_stack"] = True
    prof = ex.calls.category_stats.get("profiler")
    if prof and prof.p50:
        notes.append(f"profiler work inside a typical call {fmt_ns(prof.p50)}")
        evidence["profiler_ns_per_call_p50"] = prof.p50
    pert = ex.per_call.perturbation if ex.per_call else None
    if pert is not None and pert.events_per_call and ex.has_python_frames:
        frames = (f", {pert.python_frames_per_call} of them Python frames"
                  if pert.python_frames_per_call else "")
        notes.append(f"{pert.events_per_call} events recorded per warm call{frames} (each "
                     "costs the profiler time that lands in its parent's self time)")
        evidence["events_per_call_p50"] = pert.events_per_call
        evidence["python_frames_per_call_p50"] = pert.python_frames_per_call
    warm_p50 = ex.calls.stats["api_ns"].p50
    spikes = [c for c in ex.calls.calls
              if warm_p50 and c.categories.get("profiler", 0) > PERTURBATION_CALL_SHARE * warm_p50]
    if spikes:
        worst = max(spikes, key=lambda c: c.categories.get("profiler", 0))
        notes.append(f"profiler buffer work of {fmt_ns(worst.categories['profiler'])} inside "
                     f"call #{worst.index}")
        evidence["spike_calls"] = [c.index for c in spikes]
    cap = ex.trace.metadata.get("traceview")
    cap = cap if isinstance(cap, dict) else {}
    base = cap.get("baseline") if isinstance(cap.get("baseline"), dict) else {}
    proto = cap.get("protocol") if isinstance(cap.get("protocol"), dict) else {}
    # Compare like with like: a call that synchronizes with the synchronized full-API
    # figure, a call that only submits (--sync end) with the amortized submit time; never
    # a cold call (cold twins) and never graph replays.
    like = ("amortized_submit_ns", "unprofiled amortized submit") if proto.get("sync") == "end" \
        else ("full_api_ns_p50", "unprofiled")
    unprof = base.get(like[0])
    if (unprof and warm_p50 and ex.calls.warm_count and proto.get("mode", "eager") == "eager"
            and cap.get("kind", "warm") != "cold"):
        ratio = warm_p50 / unprof
        notes.append(f"profiled call p50 {fmt_ns(warm_p50)} vs {like[1]} {fmt_ns(unprof)} "
                     f"({ratio:.2f}x)")
        evidence.update({"profiled_api_ns_p50": warm_p50, "unprofiled_api_ns_p50": unprof,
                         "unprofiled_figure": like[0], "ratio": round(ratio, 3)})
    if notes:
        out.append(Finding("profiler-perturbation", "warning" if spikes or ex.has_python_frames
                           else "info", "the profiler perturbs what it measures: " + "; ".join(notes)
                           + ". Compare speed with unprofiled runs; use traces to diagnose.",
                           evidence))
    return out


def _no_python_frames(ex: Explanation) -> list[Finding]:
    if ex.has_python_frames or ex.timeline.lane is None:
        return []
    untraced = ex.host_categories.get("untraced", 0)
    return [Finding(
        "no-python-frames", "info",
        "no Python frames (with_stack off): specialize, cache_key and launch_metadata "
        f"cannot be told apart; {_pct(untraced / max(ex.window.dur_ns, 1))} of the window is "
        "untraced host time. Profile with with_stack=True to split it.",
        {"untraced_ns": untraced},
    )]


def _input_problems(ex: Explanation) -> list[Finding]:
    out = []
    cut = any(g.code == "truncated" for g in ex.trace.diagnostics)
    if ex.window.dur_ns <= 0:
        out.append(Finding(
            "no-activity", "warning",
            "the trace holds no host or device activity with a duration (metadata or instants "
            "only): there is nothing to attribute", {"slices": len(ex.trace.slices)}))
    elif ex.device.work_rows.size == 0 and not (cut and ex.launches.count):
        out.append(Finding(
            "no-device-work", "info",
            "no device work (kernels, copies, sets) in the window: a CPU-only trace, or the "
            "profiler ran without the CUDA activity", {}))
    if ex.timeline.lane is None and ex.window.dur_ns > 0:
        out.append(Finding(
            "no-host-events", "warning",
            "no host thread with events: all host time is untraced; launch latency and "
            "per-call host costs are unknown", {}))
    if ex.timeline.non_nested:
        out.append(Finding(
            "overlapping-host-slices", "warning",
            f"{ex.timeline.non_nested} host slices overlap their parent without nesting "
            "(profiler corruption); each ns still has one owner: the slice that started last",
            {"count": ex.timeline.non_nested}))
    if ex.launches.unlinked_work:
        out.append(Finding(
            "device-work-without-launch", "warning",
            f"{ex.launches.unlinked_work} device work items have no launch record; their time "
            "counts as device busy, launch latency unknown",
            {"count": ex.launches.unlinked_work}))
    unlinked = ex.launches.count - ex.launches.linked
    if unlinked and cut:
        out.append(Finding(
            "device-work-cut", "warning",
            f"{unlinked} of {ex.launches.count} launches have no device record because the file "
            "was cut short: their device work is missing, so device busy time, kernel and "
            "launch-latency figures cover only the launches before the cut",
            {"count": unlinked, "launches": ex.launches.count}))
    elif unlinked:
        out.append(Finding(
            "launch-without-device-work", "info",
            f"{unlinked} of {ex.launches.count} launches have no device record (dropped CUPTI "
            "records, or work outside the window)", {"count": unlinked}))
    return out


DETECTORS: list[Callable[[Explanation], list[Finding]]] = [
    _verdict, _unsynchronized, _range_idle, _graph_replay, _cold_path, _perturbation,
    _reproducer, _no_python_frames, _input_problems,
]


def detect(ex: Explanation) -> list[Finding]:
    found = [f for d in DETECTORS for f in d(ex)]
    return sorted(found, key=lambda f: SEVERITY_ORDER.get(f.severity, 9))
