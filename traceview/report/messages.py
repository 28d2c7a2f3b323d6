"""The one-line message of each finding, phrased from the figures its claim cites.

Detectors (``report/findings.py``) compute figures and say where the report holds each;
this module words them (``claim_of``: the claim and its text, made together). Numbers are formatted
with the project's one unit formatter (``traceview.units``), so a finding's message and
every renderer show a duration the same way.
"""

from __future__ import annotations

from collections.abc import Callable

from traceview.report.claims import Claim, Figure
from traceview.report.detected import EVIDENCE, HELD_WAIT, Detected
from traceview.units import fmt_ns, fmt_pct


def _scope(d: Detected) -> str:
    kind, ns = d.terms["scope"], fmt_ns(d.value("call"))
    if kind == "window":
        return f"the window ({ns})"
    if d.has("profiled"):
        return f"a typical {kind} ({ns}; profiled {fmt_ns(d.value('profiled'))})"
    if d.has("range") and fmt_ns(d.value("range")) != ns:
        return (f"a typical {kind} ({ns}: its range {fmt_ns(d.value('range'))} and the "
                "device work it launched running on after it)")
    return f"a typical {kind} ({ns})"


def _outlasting(d: Detected) -> str:
    """The call returns after its host work; the device work it launched, longer than
    that, runs on after it: the device bounds the work the call started. Said as what
    ran where, so that nobody reads the host's idle share of the call as the verdict."""
    kind = d.terms["scope"]
    ns = d.value("kernel")
    work = (f"kernel {fmt_ns(ns)}" if not d.has("copy") else
            f"{fmt_ns(ns)}: kernels {fmt_ns(d.value('kernel_only'))}, memcpy/memset "
            f"{fmt_ns(d.value('copy'))}")
    until = f" until {fmt_ns(d.value('tail'))} after it" if d.has("tail") else " after it"
    whose = ""
    if d.terms.get("threads"):
        own, others = d.terms["threads"]
        whose = f" ({own}; also working: {', '.join(others)})"
    top = d.cat_figures("host")
    goes = f"; the {kind}'s host time goes to {_cats(top, d)}{whose}" if top else whose
    return (f"device-bound: a typical {kind} returns after {fmt_ns(d.value('call'))} of host "
            f"time while the device work it launched ({work}) runs on{until}: the device, "
            f"not the host, bounds the work the {kind} starts{goes}")


def _device_work(d: Detected, ns: int | float | None) -> str:
    """``kernel 1 us``; where the calls launched copies, ``device work 3 us (kernels 1 us,
    memcpy/memset 2 us)``: the figure holds both. A call that launched nothing has no
    figure: said in words, never ``kernel -``."""
    if ns is None:
        return "no device work launched in it"
    if not d.has("copy"):
        return f"kernel {fmt_ns(ns)}"
    return (f"device work {fmt_ns(ns)} (kernels {fmt_ns(d.value('kernel_only'))}, "
            f"memcpy/memset {fmt_ns(d.value('copy'))})")


def _cats(pairs: list[tuple[str, int]], d: Detected | None = None) -> str:
    """``dispatch 3 us, untraced 1 us``; a thread's untraced time while the critical path
    stood on the thread it held a range for is that wait (``findings._held_categories``),
    said as such, with what it held (``_held``)."""
    return ", ".join(f"{c} {fmt_ns(ns)}" + (_held(d, c[len(HELD_WAIT):])
                                            if c.startswith(HELD_WAIT) else "")
                     for c, ns in pairs)


def _held(d: Detected | None, who: str) -> str:
    """`` (holding ## backward ## while that thread works)``: the biggest range (or
    ``in`` the Python frame) the thread held while it waited for ``who``, and how many
    more it held, from the figures the claim cites (``held:<who>:<name>``, biggest
    first; ``held_more:<who>``)."""
    named = [] if d is None else d.cat_figures(f"held:{who}")
    if not named:
        return " (holding a range while that thread works)"
    how = "in" if d is not None and d.terms.get("held_frames", {}).get(who) else "holding"
    more = f" and {d.value(f'held_more:{who}')} more" \
        if d is not None and d.has(f"held_more:{who}") else ""
    return f" ({how} {named[0][0]}{more} while that thread works)"


def _stalled(d: Detected, scope: str) -> str:
    """The host blocked in synchronizing calls while the device runs nothing: said as a
    wait for what the trace does not show, never as host time to remove; the host
    categories named beside it are the call's others (its syncs and waits are no work).
    Where the trace holds the stream-wait-event call that holds the stream waited on,
    that call is named instead of the possible causes (``_stream_wait``)."""
    share = d.value("idle_share")
    assert isinstance(share, float)
    inside = f" (in {d.terms['stalled_in']})" if d.terms.get("stalled_in") else ""
    rest = [(c, ns) for c, ns in d.cat_figures("host") if c != "sync"]
    others = f"; its other host time goes to {_cats(rest, d)}" if rest else ""
    why = ("it waits for what the trace does not show (a stream held by an event wait, or "
           "work outside the trace), not for host work")
    if d.terms.get("stream_wait"):
        why = ("it waits for what the trace does not show, not for host work: "
               + _stream_wait(d))
    return (f"sync-stalled: the device is idle {fmt_pct(share)} of {scope} while the host "
            f"waits {fmt_ns(d.value('stalled'))} of it in synchronizing calls{inside} with "
            f"no device work running: {why}; {_device_work(d, d.value('kernel'))}{others}")


def _stream_wait(d: Detected) -> str:
    """The stream-wait-event call that holds the stream the stalled call waits on: which
    call, on which thread, how long before the stalled call, the stream where the trace
    says it, and whether the event it waits for is in the trace. Matched by stream, the
    wait holds one the call waits on; matched by time, no device work starts anywhere
    from the wait until the stall ends, and the sentence says which stream the trace
    does not name."""
    w = d.terms["stream_wait"]
    between = "no device work starts anywhere in between"
    if w["matched"] == "stream":
        holds = f"holds stream {d.value('wait_stream')}, which that call waits on"
    elif d.has("wait_stream"):
        holds = (f"holds stream {d.value('wait_stream')} from then through the stall (the "
                 f"trace does not say which stream that call waits on; {between})")
    else:
        holds = ("can hold the stream that call waits on from then through the stall (the "
                 f"trace does not say which stream the wait holds; {between})")
    event = {"absent": "an event that is not in the trace",
             "unknown": "an event the trace does not name"}.get(
                 w["event"], f"the event {w['event_call']} records")
    return (f"{w['call']} on {w['thread']}, issued {fmt_ns(d.value('wait_lead'))} before "
            f"the {d.terms['stalled_in']}, {holds}, for {event}")


def _path_on_host(d: Detected, scope: str, basis: str) -> str:
    """A step the device is busy most of whose critical path is mostly host-thread
    time: host-bound, said from the path first, the device's busy share beside it, and
    how much of the path is untraced (the thread's work, or a wait nobody recorded)."""
    share = d.value("idle_share")
    assert isinstance(share, float)
    untraced = d.value("path_untraced") or 0
    why = (f", {fmt_ns(untraced)} of it untraced (nothing recorded says whether the "
           "thread worked or waited)") if untraced else ""
    return (f"host-bound: {fmt_pct(d.value('path_host_share') or 0)} of the step's "
            f"critical path ({fmt_ns(d.value('path_wall'))}) is host-thread time{why}, "
            f"though {basis}the device is busy {fmt_pct(1 - share)} of {scope}: the step "
            "waits for its host thread, and its host work is not hidden behind the device")


def verdict_words(d: Detected) -> str:
    """The verdict sentence, from the figures its claim cites and nothing else: the idle
    share of the typical call (over a step's extent where its device work runs on past
    its range), the device work, the host categories it names; where that device work is
    longer than the call, device-bound, said as the call returning while its work runs on; "hidden behind device
    execution" only where the device waits for the host under ``HIDDEN_IDLE_SHARE`` of
    the call. Where the split was measured (``unprofiled:`` figures) the call is the
    unprofiled one, said so, with the profiled call and its categories beside it."""
    unprofiled = d.has("profiled")
    scope = _scope(d)
    basis = "without the profiler " if unprofiled else ""
    share = d.value("idle_share")
    assert isinstance(share, float)
    if d.id == "sync-stalled":
        return _stalled(d, scope)
    if d.id == "host-bound" and d.terms.get("path_on_host"):
        return _path_on_host(d, scope, basis)
    if d.id == "host-bound":
        top = _cats(d.cat_figures("unprofiled") if unprofiled else d.cat_figures("host"), d)
        if unprofiled:
            top += " (profiled: " + _cats(d.cat_figures("host")) + ")"
        work = _device_work(d, d.value("kernel"))
        whose = ""
        if d.terms.get("threads"):
            own, others = d.terms["threads"]
            whose = f" ({own}; also working: {', '.join(others)})"
        return (f"host-bound: {basis}the device is idle {fmt_pct(share)} of {scope}; "
                f"{work}; host time goes to {top}{whose}")
    if d.terms.get("outlasts"):
        return _outlasting(d)
    head = f"device-bound: {basis}the device is busy {fmt_pct(1 - share)} of {scope}"
    if d.terms.get("no_host"):
        return (head + f"; it is idle {fmt_ns(d.value('idle'))} of it, and no host event "
                "was recorded to say what it waited for")
    if share <= (d.value("hidden") or 0):
        return head + "; host work is hidden behind device execution"
    return head + f"; it waits for the host {fmt_ns(d.value('idle'))} of it"


def _unsync(d: Detected) -> str:
    return (f"call ranges measure submission, not completion: in {d.value('late_calls')} of "
            f"{d.value('calls')} calls the device work ended up to {fmt_ns(d.value('max_tail'))} "
            "after the range")


def _below(share: float, threshold: float) -> str:
    """A share the sentence asserts is under ``threshold``, never printed as 0% when it is
    not zero nor rounded up to the threshold itself (49.6% of a 50% line is not '50%')."""
    text = fmt_pct(share)
    if share < threshold and text == fmt_pct(threshold):
        return f"{100 * share:.1f}%"
    return text


def _range_idle(d: Detected) -> str:
    share = _below(float(d.value("share") or 0), float(d.value("threshold") or 0))
    kernel = fmt_ns(d.value("kernel"))
    runs = (f"the kernel runs {kernel} ({share})" if not d.has("copy")
            else f"device work runs {kernel} ({share}: kernels "
                 f"{fmt_ns(d.value('kernel_only'))}, memcpy/memset {fmt_ns(d.value('copy'))})")
    kind = d.terms.get("kind")
    spans = (f"calls of {kind} span {fmt_ns(d.value('call'))} (p50)" if kind
             else f"each call spans {fmt_ns(d.value('call'))}")
    return (f"{spans}, of which {runs}; event-based timing "
            "of this API would report launch overhead, not kernel time")


def _graph(d: Detected) -> str:
    # the kernels are the trace's, eager ones included, not the replays' nodes (the
    # integrity block counts those): "1 graph launches, 425 kernels" read as one replay
    # of 425 kernels where it replayed 421
    n = d.value("graph_launches")
    api = d.terms.get("api", "CUDA")
    if d.has("eager_launches"):  # graph replays beside eager kernel launches (vLLM's)
        are = f"is a {api} graph replay" if n == 1 else f"are {api} graph replays"
        return (f"{n} of the {d.value('kernel_launches')} kernel launches {are} "
                f"({d.value('kernels')} kernels in the trace, eager ones included); "
                f"{'that call does' if n == 1 else 'those calls do'} not show eager launch "
                "cost")
    return (f"results are {api} graph replay "
            f"({n} graph launch{'es' if n != 1 else ''}; {d.value('kernels')} kernels in "
            f"the trace); they do not show eager launch cost")


def _cold(d: Detected) -> str:
    parts = []
    if d.has("cold"):
        parts.append(f"{fmt_ns(d.value('cold'))} of compile/import work in the window "
                     f"({fmt_pct(d.value('cold_share') or 0)})")
    if d.has("first"):
        where = _cats(d.cat_figures("first"))
        parts.append(f"first call {fmt_ns(d.value('first'))}"
                     + (f" ({d.value('ratio'):.0f}x the warm median; {where})"
                        if d.has("ratio") else ""))
    cause = ("; mostly profiler start-up (the first profiled launch): profile with a "
             "schedule that has warm-up steps") if d.terms["profiler_start"] else ""
    if cause and d.terms.get("recorder") == "rocprof":  # rocprof has no schedule
        cause = ("; mostly the start-up the trace's first launch paid (rocprof traces from "
                 "the program's start, runtime and profiler start-up included): compare warm "
                 "calls")
    if d.terms.get("cold_reasons"):
        reasons = d.terms["cold_reasons"]
        why = "; ".join(f"#{i} {r}" for i, r in reasons[:3])
        more = f" (+{len(reasons) - 3} more)" if len(reasons) > 3 else ""
        parts.append(f"cold call(s) {why}{more}")
    left_out = d.terms.get("left_out", 0)
    first_warm = d.terms.get("first_warm", False)
    which = (f"without the {left_out} cold ones" if left_out > 1
             else "without the cold one" if left_out and first_warm
             else "the first among them" if first_warm else "without it")
    warm = (f"; warm calls ({which}): p50 {fmt_ns(d.value('warm_p50'))} over "
            f"{d.value('warm_count')}" if d.has("warm_p50")
            else "; no warm call remains, so no call is typical" if d.terms.get("no_warm")
            else "")
    return "cold path in the window: " + ", ".join(parts) + cause + warm


def _reproducer(d: Detected) -> str:
    missing = d.terms["missing"]
    if d.terms.get("steps"):
        # a training script, not a capture: capture would not help with what only it
        # records; what the profiler records (shapes, the device header) keeps its advice
        capture = "add with traceview capture"
        parts = [f"{item} ({how})" for item, how in missing if how != capture]
        note = [item for item, how in missing if how == capture]
        if note:
            parts.append(", ".join(note) + " (the profiler does not record them: note them "
                         "beside the trace)")
        return "the trace lacks what a reproducer needs: " + "; ".join(parts)
    txt = "; ".join(f"{item} ({how})" for item, how in missing)
    return f"the trace lacks what a reproducer needs: {txt}"


def _perturbation(d: Detected) -> str:
    notes = []
    if d.terms["with_stack"]:
        notes.append("Python tracing (with_stack) is on and slows every Python frame")
    if d.has("profiler"):
        notes.append(f"profiler work inside a typical call {fmt_ns(d.value('profiler'))}")
    if d.has("events"):
        frames = d.value("frames")
        of = f", {frames} of them Python frames" if frames else ""
        notes.append(f"{d.value('events')} events recorded per warm call{of} (each costs the "
                     "profiler time that lands in its parent's self time)")
    if d.has("spike"):
        notes.append(f"profiler buffer work of {fmt_ns(d.value('spike'))} inside call "
                     f"#{d.value('spike_call')}")
    if d.has("ratio"):
        notes.append(f"profiled call p50 {fmt_ns(d.value('profiled'))} vs "
                     f"{d.terms['baseline_label']} {fmt_ns(d.value('unprofiled'))} "
                     f"({d.value('ratio'):.2f}x)")
    return ("the profiler perturbs what it measures: " + "; ".join(notes)
            + ". Compare speed with unprofiled runs; use traces to diagnose.")


def _no_py_rocprof(d: Detected) -> str:
    """``no-python-frames`` of a rocprof trace: rocprof traces no Python at all, and its
    HIP calls are no Triton launches; the untraced share said as ``_no_py`` says it."""
    said = fmt_pct(d.value("share") or 0)
    return (f"no Python frames (rocprof traced HIP calls, not Python): what the host did "
            f"between the recorded calls cannot be split by function; {said} of the window "
            "is untraced host time. A torch.profiler trace with with_stack=True splits it.")


def _no_py(d: Detected) -> str:
    if d.terms.get("recorder") == "rocprof":
        return _no_py_rocprof(d)
    said = fmt_pct(d.value("share") or 0)  # a sliver is "<1%", never "0%"
    # Triton's launch stages only where the trace evidently launches Triton kernels
    # (findings.triton_launches); an Nsight Systems capture traces no Python at all
    what = ("specialize, cache_key and launch_metadata cannot be told apart"
            if d.terms.get("triton") else
            "what the host did between the recorded events cannot be split by Python "
            "function")
    if d.terms.get("nsys"):
        return (f"no Python frames (Nsight Systems traced CUDA calls and NVTX ranges, not "
                f"Python): {what}; {said} of the window is untraced host time. A "
                "torch.profiler trace with with_stack=True splits it.")
    return (f"no Python frames (with_stack off): {what}; {said} of the window is "
            "untraced host time. Profile with with_stack=True to split it.")


def _no_record(d: Detected) -> str:
    head = f"{d.value('count')} of {d.value('launches')} launches have no device record"
    lost = "dropped CUPTI records, or work outside the window"
    if not d.has("unexported"):
        return f"{head} ({lost})"
    # an Nsight Systems conversion's copies and sets (analyses.launches.unexported_names)
    why = ("copy and set calls, whose device records this Nsight Systems conversion does "
           "not hold (its converter exports kernels only)")
    if d.value("unexported") == d.value("count"):
        return f"{head}: {why}"
    return f"{head}: {d.value('unexported')} of them {why}; the rest {lost}"


MESSAGES: dict[str, Callable[[Detected], str]] = {
    "host-bound": verdict_words,
    "sync-stalled": verdict_words,
    "device-bound": verdict_words,
    "unsynchronized-range": _unsync,
    "range-includes-idle": _range_idle,
    "graph-replay": _graph,
    "cold-path": _cold,
    "reproducer-incomplete": _reproducer,
    "profiler-perturbation": _perturbation,
    "no-python-frames": _no_py,
    "no-activity": lambda d: (
        "the trace holds no host or device activity with a duration (metadata or instants "
        "only): there is nothing to attribute"),
    "no-device-work": lambda d: (
        "no device work (kernels, copies, sets) in the window: a CPU-only trace, or the "
        "profiler ran without the CUDA activity; the host categories are then the work "
        "itself: dispatch holds the ops' own CPU computation, not overhead before a launch"),
    "no-host-events": lambda d: (
        "no host thread with events: all host time is untraced; launch latency and "
        "per-call host costs are unknown"),
    "overlapping-host-slices": lambda d: (
        f"{d.value('count')} host slices overlap their parent without nesting "
        "(profiler corruption); each ns still has one owner: the slice that started last"),
    "device-work-without-launch": lambda d: (
        f"{d.value('count')} device work items have no launch record; their time "
        "counts as device busy and in the per-call device work of the call each started "
        "in, launch latency unknown"),
    "device-work-cut": lambda d: (
        f"{d.value('count')} of {d.value('launches')} launches have no device record because the file "
        "was cut short: their device work is missing, so device busy time, kernel and "
        "launch-latency figures cover only the launches before the cut"),
    "several-processes": lambda d: (
        f"host threads of {d.value('processes')} processes launched device work into this "
        "one file (ranks fused into one, or a multi-process program): steps, calls and "
        f"their device figures are process {d.terms['process']}'s, its launches and "
        "the devices they ran on; the window's device busy and the host x device table "
        "cover every process's devices. One file per rank (explain DIR) gives a row per "
        "rank"),
    "launch-without-device-work": _no_record,
}


def phrase(d: Detected) -> str:
    return MESSAGES[d.id](d)


def claim_of(d: Detected, evidence_at: str) -> Claim:
    """The claim of what ``d`` found: its figures (evidence paths made the finding's own,
    ``evidence_at``), its relations, and the message worded from those figures."""
    figs = tuple(f if f.path is None or not f.path.startswith(EVIDENCE) else
                 Figure(f.name, f.value, evidence_at + "/" + f.path[len(EVIDENCE):])
                 for f in d.figures)
    return Claim(d.id, phrase(d), figs, d.relations)
