"""The one-line message of each finding, phrased from the figures its detector found.

Detectors (``report/findings.py``) compute; this module words. Numbers are formatted
with the project's one unit formatter (``traceview.units``), so a finding's message and
every renderer show a duration the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from traceview.units import fmt_ns, fmt_pct

if TYPE_CHECKING:
    from traceview.report.detected import Detected


def _scope(scope: tuple[str, int], profiled_ns: int | None = None) -> str:
    kind, ns = scope
    if kind == "window":
        return f"the window ({fmt_ns(ns)})"
    if profiled_ns is not None:
        return f"a typical {kind} ({fmt_ns(ns)}; profiled {fmt_ns(profiled_ns)})"
    return f"a typical {kind} ({fmt_ns(ns)})"


def _device_work(f: dict[str, Any], ns: int | None) -> str:
    """``kernel 1 us``; where the calls launched copies, ``device work 3 us (kernels 1 us,
    memcpy/memset 2 us)``: the figure holds both."""
    if not f.get("copy_ns"):
        return f"kernel {fmt_ns(ns)}"
    return (f"device work {fmt_ns(ns)} (kernels {fmt_ns(f['kernel_only_ns'])}, memcpy/memset "
            f"{fmt_ns(f['copy_ns'])})")


def verdict_words(f: dict[str, Any]) -> str:
    """The verdict sentence, from the figures it cites and nothing else (a test reads
    these figures back from the JSON): the idle share of the typical call, the device
    work (said to run past the call where its median outlasts the call's), the host
    categories it names; "hidden behind device execution" only where the device waits
    for the host under ``HIDDEN_IDLE_SHARE`` of the call. Where the split was measured
    (``top_unprofiled``) the call is the unprofiled one, said so, with the profiled call
    and its categories beside it."""
    unprofiled = "top_unprofiled" in f
    scope = _scope(f["scope"], f.get("profiled_ns"))
    basis = "without the profiler " if unprofiled else ""
    if f["host_bound"]:
        named = f["top_unprofiled"] if unprofiled else f["top"]
        top = ", ".join(f"{c} {fmt_ns(ns)}" for c, ns in named)
        if unprofiled:
            top += " (profiled: " + ", ".join(f"{c} {fmt_ns(ns)}" for c, ns in f["top"]) + ")"
        work = _device_work(f, f["kernel_ns"])
        kind, ns = f["scope"]
        if kind != "window" and (f["kernel_ns"] or 0) > ns:
            work += f", longer than the {kind}: it runs on after the {kind} returns"
        whose = ""
        if f.get("threads"):
            own, others = f["threads"]
            whose = f" ({own}; also working: {', '.join(others)})"
        return (f"host-bound: {basis}the device is idle {fmt_pct(f['share'])} of {scope}; "
                f"{work}; host time goes to {top}{whose}")
    head = f"device-bound: {basis}the device is busy {fmt_pct(1 - f['share'])} of {scope}"
    if f["share"] <= HIDDEN_IDLE_SHARE:
        return head + "; host work is hidden behind device execution"
    return head + f"; it waits for the host {fmt_ns(f['idle_ns'])} of it"


# Under this share of the call idle, the host's work overlaps the device's: "hidden".
HIDDEN_IDLE_SHARE = 0.1


def _host_bound(f: dict[str, Any], e: dict[str, Any]) -> str:
    return verdict_words({**f, "host_bound": True})


def _device_bound(f: dict[str, Any], e: dict[str, Any]) -> str:
    return verdict_words({**f, "host_bound": False})


def _unsync(f: dict[str, Any], e: dict[str, Any]) -> str:
    return (f"call ranges measure submission, not completion: in {e['late_calls']} of "
            f"{e['calls']} calls the device work ended up to {fmt_ns(e['max_tail_ns'])} after "
            "the range")


def _range_idle(f: dict[str, Any], e: dict[str, Any]) -> str:
    share = fmt_pct(f["share"])
    runs = (f"the kernel runs {fmt_ns(e['kernel_ns_p50'])} ({share})" if not f.get("copy_ns")
            else f"device work runs {fmt_ns(e['kernel_ns_p50'])} ({share}: kernels "
                 f"{fmt_ns(f['kernel_only_ns'])}, memcpy/memset {fmt_ns(f['copy_ns'])})")
    return (f"each call spans {fmt_ns(e['api_ns_p50'])}, of which {runs}; event-based timing "
            "of this API would report launch overhead, not kernel time")


def _graph(f: dict[str, Any], e: dict[str, Any]) -> str:
    return (f"results are CUDA graph replay ({e['graph_launches']} graph launches, "
            f"{e['kernels']} kernels); they do not show eager launch cost")


def _cold(f: dict[str, Any], e: dict[str, Any]) -> str:
    parts = []
    if f["cold_ns"]:
        parts.append(f"{fmt_ns(f['cold_ns'])} of compile/import work in the window "
                     f"({fmt_pct(f['cold_ns'] / max(f['window_ns'], 1))})")
    if f["first_ns"] is not None:
        where = ", ".join(f"{c} {fmt_ns(ns)}" for c, ns in f["first_top"])
        parts.append(f"first call {fmt_ns(f['first_ns'])}"
                     + (f" ({f['ratio']:.0f}x the warm median; {where})" if f["ratio"] else ""))
    cause = ("; mostly profiler start-up (the first profiled launch): profile with a "
             "schedule that has warm-up steps") if f["profiler_start"] else ""
    if f.get("cold_reasons"):
        reasons = f["cold_reasons"]
        why = "; ".join(f"#{i} {r}" for i, r in reasons[:3])
        more = f" (+{len(reasons) - 3} more)" if len(reasons) > 3 else ""
        parts.append(f"cold call(s) {why}{more}")
    warm = (f"; warm calls without it: p50 {fmt_ns(f['warm_p50'])} over {f['warm_count']}"
            if f["warm_p50"] else "")
    return "cold path in the window: " + ", ".join(parts) + cause + warm


def _reproducer(f: dict[str, Any], e: dict[str, Any]) -> str:
    if f.get("steps"):  # a training script, not a capture: capture would not help
        return ("the trace lacks what a reproducer needs: "
                + ", ".join(item for item, _ in f["missing"])
                + "; the profiler does not record them: note them beside the trace")
    txt = "; ".join(f"{item} (add with {how})" for item, how in f["missing"])
    return f"the trace lacks what a reproducer needs: {txt}"


def _perturbation(f: dict[str, Any], e: dict[str, Any]) -> str:
    notes = []
    if f["with_stack"]:
        notes.append("Python tracing (with_stack) is on and slows every Python frame")
    if "profiler_p50" in f:
        notes.append(f"profiler work inside a typical call {fmt_ns(f['profiler_p50'])}")
    if "events" in f:
        events, frames = f["events"]
        of = f", {frames} of them Python frames" if frames else ""
        notes.append(f"{events} events recorded per warm call{of} (each costs the profiler "
                     "time that lands in its parent's self time)")
    if "spike" in f:
        ns, index = f["spike"]
        notes.append(f"profiler buffer work of {fmt_ns(ns)} inside call #{index}")
    if "baseline" in f:
        profiled, label, unprof, ratio = f["baseline"]
        notes.append(f"profiled call p50 {fmt_ns(profiled)} vs {label} {fmt_ns(unprof)} "
                     f"({ratio:.2f}x)")
    return ("the profiler perturbs what it measures: " + "; ".join(notes)
            + ". Compare speed with unprofiled runs; use traces to diagnose.")


def _no_py(f: dict[str, Any], e: dict[str, Any]) -> str:
    return ("no Python frames (with_stack off): specialize, cache_key and launch_metadata "
            f"cannot be told apart; {fmt_pct(f['share'])} of the window is "
            "untraced host time. Profile with with_stack=True to split it.")


MESSAGES: dict[str, Callable[[dict[str, Any], dict[str, Any]], str]] = {
    "host-bound": _host_bound,
    "device-bound": _device_bound,
    "unsynchronized-range": _unsync,
    "range-includes-idle": _range_idle,
    "graph-replay": _graph,
    "cold-path": _cold,
    "reproducer-incomplete": _reproducer,
    "profiler-perturbation": _perturbation,
    "no-python-frames": _no_py,
    "no-activity": lambda f, e: (
        "the trace holds no host or device activity with a duration (metadata or instants "
        "only): there is nothing to attribute"),
    "no-device-work": lambda f, e: (
        "no device work (kernels, copies, sets) in the window: a CPU-only trace, or the "
        "profiler ran without the CUDA activity"),
    "no-host-events": lambda f, e: (
        "no host thread with events: all host time is untraced; launch latency and "
        "per-call host costs are unknown"),
    "overlapping-host-slices": lambda f, e: (
        f"{e['count']} host slices overlap their parent without nesting "
        "(profiler corruption); each ns still has one owner: the slice that started last"),
    "device-work-without-launch": lambda f, e: (
        f"{e['count']} device work items have no launch record; their time "
        "counts as device busy and in the per-call device work of the call each started "
        "in, launch latency unknown"),
    "device-work-cut": lambda f, e: (
        f"{e['count']} of {e['launches']} launches have no device record because the file "
        "was cut short: their device work is missing, so device busy time, kernel and "
        "launch-latency figures cover only the launches before the cut"),
    "launch-without-device-work": lambda f, e: (
        f"{e['count']} of {f['launches']} launches have no device record (dropped CUPTI "
        "records, or work outside the window)"),
}


def phrase(d: Detected) -> str:
    return MESSAGES[d.id](d.facts, d.evidence)
