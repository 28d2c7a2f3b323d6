"""The sentences the outputs print that are not findings, made as claims (``claims``).

A training trace's headline line ("training step ProfilerStep#3: 28.9 ms (typical of 4
warm of 5 steps); forward 9 ms, ...; device busy 10.6%; critical path: ...") shows the
typical step's own figures. Its claim cites each one where the report holds it and
asserts what the line implies: the phases tile the step, the device busy share is busy
over wall, each thread's share of the critical path is its rows' sum over the wall, and
the path adds up to the wall. The renderers print the claim's text
(``render.training.headline``).

The bytes a call moves ("moves 393 kB per call (aten::add's recorded shapes): 372 GB/s
at the device work p50") is a claim too: its rate is the bytes over the device work's
p50, rounded as ``analyses.kernel_bytes.gb_per_s`` rounds it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from traceview.analyses.calls import (
    COLD_CATEGORIES,
    STARTUP_LAUNCH_RATIO,
    STARTUP_SHARE,
    CallsSummary,
)
from traceview.analyses.slow_calls import (
    Cause,
    ColdWork,
    Concurrent,
    FirstUse,
    Holder,
    ProfilerBurst,
    ProfilerStartup,
    SlowCall,
)
from traceview.analyses.threads import ThreadFigures, describe
from traceview.analyses.window import Window
from traceview.metadata import CaptureMeta, ProtocolMeta
from traceview.report.claims import Claim, Figure, Relation, pointer, rel
from traceview.report.model import (
    BytesMoved,
    CallsInfo,
    DeviceInfo,
    LaunchesInfo,
    PathRow,
    PerturbationInfo,
    Report,
    StepRow,
    StepsInfo,
    TypicalCall,
)
from traceview.report.unprofiled import MEASURED, UnprofiledInfo
from traceview.report.unprofiled_words import MODEL, measuring_claim, model_claim
from traceview.stats import Stats
from traceview.units import fmt_bytes, fmt_ns, fmt_pct, fmt_rate, fmt_share, plural, printable

DEVICE_WORK = "device work (kernels, copies)"
# The threads (and device streams) the headline names as holding the critical path.
PATH_NAMED = 3


def typical_step(steps: StepsInfo | None, typical: TypicalCall | None
                 ) -> tuple[StepsInfo, int] | None:
    """The report's steps and the index (in ``steps.steps``) of the step the outputs
    show: the typical call's; None when there is nothing a step view adds (no phase but
    ``other`` and one thread on the path: an inference loop under a schedule)."""
    if steps is None or not steps.steps:
        return None
    if not any(p.phase != "other" for s in steps.steps for p in s.phases) and all(
            len({p.resource for p in s.critical_path if p.kind == "host"}) < 2
            for s in steps.steps):
        return None
    want = typical.index if typical is not None else None
    return steps, next((j for j, s in enumerate(steps.steps) if s.index == want), 0)


def path_key(p: PathRow) -> tuple[str, str]:
    """How the path is grouped for reading: host items by (thread, category), device
    work as one row per stream, launch latency and queueing as they are."""
    if p.kind == "device":
        return p.resource, DEVICE_WORK
    return p.resource, p.what


def path_rows(step: StepRow) -> list[tuple[str, str, int]]:
    """The path grouped (``path_key``), biggest first."""
    got: Counter[tuple[str, str]] = Counter()
    for p in step.critical_path:
        got[path_key(p)] += p.ns
    return sorted(((res, what, ns) for (res, what), ns in got.items()),
                  key=lambda x: (-x[2], x[0], x[1]))


def step_word(steps: StepsInfo | None) -> str:
    """"training step" when a step has a backward phase, else "step" (an inference loop
    under a profiler schedule)."""
    trains = steps is not None and any(p.phase == "backward" for s in steps.steps
                                       for p in s.phases)
    return "training step" if trains else "step"


def _warm_of(steps: StepsInfo) -> str:
    """``3 warm of 4 steps``; ``5 steps, none warm`` where no step is warm (every one
    cold or incomplete): the figures are then over every step (``calls.warm_calls``)."""
    if steps.warm_count == 0:
        return f"{plural(steps.count, 'step')}, none warm"
    return f"{steps.warm_count} warm of {plural(steps.count, 'step')}"


def step_claim(steps: StepsInfo | None, typical: TypicalCall | None) -> Claim | None:
    """The headline of a training trace: the typical step and who holds its path."""
    found = typical_step(steps, typical)
    if found is None:
        return None
    steps, j = found
    step = steps.steps[j]
    at = ("steps", "steps", j)
    figs = [Figure("wall", step.wall_ns, pointer(*at, "wall_ns")),
            Figure("warm_count", steps.warm_count, pointer("steps", "warm_count")),
            Figure("count", steps.count, pointer("steps", "count")),
            Figure("busy", step.device_busy_ns, pointer(*at, "device_busy_ns"))]
    rels: list[Relation] = [rel("le", "warm_count", "count"), rel("le", "busy", "wall")]
    phases = [f"phase:{k}" for k in range(len(step.phases))]
    figs += [Figure(n, p.wall_ns, pointer(*at, "phases", k, "wall_ns"))
             for k, (n, p) in enumerate(zip(phases, step.phases, strict=True))]
    if phases:
        rels.append(rel("sum", *phases, "wall"))  # the phases tile the step
    rows = [f"path:{k}" for k in range(len(step.critical_path))]
    figs += [Figure(n, p.ns, pointer(*at, "critical_path", k, "ns"))
             for k, (n, p) in enumerate(zip(rows, step.critical_path, strict=True))]
    if rows:
        rels.append(rel("sum", *rows, "wall"))  # the path attributes each ns once
    by_res: Counter[str] = Counter()
    for p in step.critical_path:
        by_res[p.resource] += p.ns
    named = by_res.most_common(PATH_NAMED)
    for i, (res, ns) in enumerate(named):
        figs.append(Figure(f"holder:{i}", ns))
        mine = [r for r, p in zip(rows, step.critical_path, strict=True) if p.resource == res]
        rels.append(rel("sum", *mine, f"holder:{i}"))
    rels += [rel("ge", f"holder:{i}", f"holder:{i + 1}") for i in range(len(named) - 1)]
    who = ", ".join(f"{res} {fmt_share(ns, step.wall_ns)}" for res, ns in named)
    words = ", ".join(f"{p.phase} {fmt_ns(p.wall_ns)}" for p in step.phases)
    rng = step.range_end_ns
    tail = ""
    if rng is not None and rng < step.end_ns:
        # the step's device work outlasts its range: the step runs to its last device work
        figs += [Figure("range", rng - step.start_ns), Figure("tail", step.end_ns - rng)]
        rels.append(rel("sum", "range", "tail", "wall"))
        nxt = next((k for k, o in enumerate(steps.steps) if o.start_ns == step.end_ns), None)
        if nxt is None:
            tail = (f"its range {fmt_ns(rng - step.start_ns)}, then device work it launched "
                    f"running {fmt_ns(step.end_ns - rng)} past it; ")
        else:
            # the extent stops at the next step's start, its work unfinished: running
            # then, or still queued behind earlier work (none of it ran in the tail)
            figs += [Figure("end", step.end_ns, pointer(*at, "end_ns")),
                     Figure("next_start", steps.steps[nxt].start_ns,
                            pointer("steps", "steps", nxt, "start_ns"))]
            rels.append(rel("eq", "end", "next_start"))
            tail = (f"its range {fmt_ns(rng - step.start_ns)}, then {fmt_ns(step.end_ns - rng)} "
                    "until the next step starts, device work it launched still unfinished; ")
    text = (f"{step_word(steps)} {step.name}: {fmt_ns(step.wall_ns)} ({tail}typical of "
            f"{_warm_of(steps)}); {words}; "
            f"device busy {fmt_share(step.device_busy_ns, step.wall_ns)}; critical path: {who}")
    return Claim("typical-step", text, tuple(figs), tuple(rels))


def step_detail_claims(steps: StepsInfo | None, typical: TypicalCall | None) -> list[Claim]:
    """The typical step's other sentences, beside its sections: its phases in time order
    when a phase runs more than once (``step-segments``), its communication and how much
    of it is exposed (``step-communication``), the other steps' walls (``step-others``)."""
    found = typical_step(steps, typical)
    if found is None:
        return []
    steps, j = found
    step = steps.steps[j]
    at = ("steps", "steps", j)
    out = []
    segs = step.segments
    if len({g.phase for g in segs}) != len(segs):
        figs: list[Figure] = []
        rels: list[Relation] = []
        for k, g in enumerate(segs):
            figs += [Figure(f"start:{k}", g.start_ns, pointer(*at, "segments", k, "start_ns")),
                     Figure(f"end:{k}", g.end_ns, pointer(*at, "segments", k, "end_ns")),
                     Figure(f"dur:{k}", g.end_ns - g.start_ns)]
            rels.append(rel("sum", f"start:{k}", f"dur:{k}", f"end:{k}"))
            if k:  # in time order: each stretch starts where or after the one before ends
                rels.append(rel("le", f"end:{k - 1}", f"start:{k}"))
        text = "in time order: " + ", ".join(f"{g.phase} {fmt_ns(g.end_ns - g.start_ns)}"
                                             for g in segs)
        # the stretches leave out pieces of other under 1% of the step: say how much, so
        # that the list adds up to the step (a DLRM step listed "other 213 us" beside a
        # table's "other 307 us")
        rest = step.wall_ns - sum(g.end_ns - g.start_ns for g in segs)
        if rest > 0:
            figs += [Figure("wall", step.wall_ns, pointer(*at, "wall_ns")),
                     Figure("rest", rest)]
            rels.append(rel("sum", *(f"dur:{k}" for k in range(len(segs))), "rest", "wall"))
            text += f"; and other pieces under 1% of the step, {fmt_ns(rest)} in all"
        out.append(Claim("step-segments", text, tuple(figs), tuple(rels)))
    if step.communication_ns:
        out.append(Claim("step-communication", (
            f"communication in {step.name}: {fmt_ns(step.communication_ns)} on the device, "
            f"{fmt_ns(step.exposed_communication_ns)} exposed (no other device work running)"),
            (Figure("communication", step.communication_ns,
                    pointer(*at, "communication_ns")),
             Figure("exposed", step.exposed_communication_ns,
                    pointer(*at, "exposed_communication_ns"))),
            (rel("le", "exposed", "communication"),)))
    others = [(k, s) for k, s in enumerate(steps.steps) if s.index != step.index]
    if others:
        out.append(Claim("step-others", "other steps: " + "; ".join(
            f"{s.name} {fmt_ns(s.wall_ns)}{' (cold)' if s.cold else ''}" for _, s in others),
            tuple(Figure(f"wall:{k}", s.wall_ns, pointer("steps", "steps", k, "wall_ns"))
                  for k, s in others)))
    return out


# ``analyses.kernel_bytes.gb_per_s`` rounds a rate to this many decimals (GB/s).
RATE_DECIMALS = 3


def copy_shares(bw: dict[str, Any]) -> str:
    """A capture's ``bandwidth`` shares in words: ``41% of a device-to-device copy of
    the same bytes (7.5 GB/s); 2% of this device's copy peak (3900 GB/s)``."""
    copy = bw.get("copy") or {}
    parts = []
    for key, what in (("same_bytes", "a device-to-device copy of the same bytes"),
                      ("peak", "this device's copy peak")):
        got, ref = bw.get(f"share_of_copy_{key}"), copy.get(key)
        if got is not None and ref:
            parts.append(f"{fmt_pct(got)} of {what} ({fmt_rate(ref['gb_per_s'])})")
    return "; ".join(parts) or "no copy rate measured"


def bytes_claim(b: BytesMoved | None, kernel_p50: int | None,
                capture_bandwidth: dict[str, Any] | None) -> Claim | None:
    """``moves 393 kB per call (aten::add's recorded shapes): 372 GB/s at the device work
    p50`` (with capture's unprofiled rate and copy shares when the trace has them), or
    ``bytes moved unknown: why``; None without a bytes figure."""
    if b is None:
        return None
    if b.total is None:
        return Claim("bytes-moved", f"bytes moved {b.source}",
                     (Figure("total", None, pointer("bytes_moved", "total")),))
    figs = [Figure("total", b.total, pointer("bytes_moved", "total"))]
    rels: list[Relation] = []
    text = f"moves {fmt_bytes(b.total)} per call ({b.source})"
    if b.gb_per_s is not None:
        figs += [Figure("rate", b.gb_per_s, pointer("bytes_moved", "gb_per_s")),
                 Figure("kernel", kernel_p50, pointer("calls", "stats", "kernel_ns", "p50")),
                 Figure("decimals", RATE_DECIMALS)]
        rels.append(rel("ratio_rounded", "total", "kernel", "rate", "decimals"))
        text += f": {fmt_rate(b.gb_per_s)} at the device work p50"
    bw = capture_bandwidth or {}
    if bw.get("gb_per_s") is not None:
        figs.append(Figure("unprofiled_rate", bw["gb_per_s"],
                           pointer("trace", "capture", "bandwidth", "gb_per_s")))
        text += f"; unprofiled {fmt_rate(bw['gb_per_s'])}, {copy_shares(bw)}"
    return Claim("bytes-moved", text, tuple(figs), tuple(rels))


def _cold_work(w: ColdWork, at: tuple, figs: list[Figure]) -> str:
    why = []
    for c, ns in w.categories:
        figs.append(Figure(f"cold:{c}", ns, pointer(*at, "categories", c)))
        why.append(f"{COLD_CATEGORIES[c]} {fmt_ns(ns)}")
    if w.compile_ranges:
        figs.append(Figure("compile_ranges", w.compile_ranges))
        why.append(f"{w.compile_ranges} Dynamo/Inductor compile range(s)")
    if w.recorded:
        why.append("recorded cold by traceview capture")
    return "; ".join(why)


@dataclass(frozen=True)
class ThreadRef:
    """A host thread as the report lists it: its row in ``threads``, how the outputs name
    it, its ids (cited where they are numbers), and whether the calls are on it."""

    row: int
    label: str
    pid: int | str
    tid: int | str
    attributed: bool  # the thread the calls are on


def thread_refs(threads: Sequence[ThreadFigures], call_lane: int | None
                ) -> dict[int, ThreadRef]:
    """Host lane -> where the report's ``threads`` lists it (in the analysis' order, the
    report's); ``call_lane``: the thread the calls are on."""
    return {t.lane.index: ThreadRef(k, describe(t.lane, t.role), t.lane.pid, t.lane.tid,
                                    t.lane.index == call_lane)
            for k, t in enumerate(threads)}


def _same_thread(ref: ThreadRef, call: ThreadRef | None, name: str, figs: list[Figure],
                 rels: list[Relation], *, same: bool) -> None:
    """Cite ``ref``'s ids where the report lists it (``threads/N``) beside the call's
    thread's (``host/thread``), and assert they are (``same``) or are not the same thread:
    what the sentence says of the thread is read back. Ids that are not numbers (a
    trace's odd thread names) are not cited."""
    if call is None:
        return
    ids: dict[str, tuple[int, int]] = {}
    for k, mine, theirs in (("pid", ref.pid, call.pid), ("tid", ref.tid, call.tid)):
        if not (isinstance(mine, int) and isinstance(theirs, int)):
            return
        ids[k] = (mine, theirs)
    for k, (mine, theirs) in ids.items():
        figs += [Figure(f"{name}_{k}", mine, pointer("threads", ref.row, k)),
                 Figure(f"call_{k}", theirs, pointer("host", "thread", k))]
    if same:
        rels += [rel("eq", f"{name}_{k}", f"call_{k}") for k in ids]
    else:
        # another thread: its process differs, or its thread id within the process. The
        # claims compare with lt/gt, never "not equal": the id on one side of the call
        # thread's says it differs, and the documents' relation kinds stay as they are
        k = "pid" if ids["pid"][0] != ids["pid"][1] else "tid"
        mine, theirs = ids[k]
        rels.append(rel("lt" if mine < theirs else "gt", f"{name}_{k}", f"call_{k}"))


def _concurrent(c: Concurrent, refs: Mapping[int, ThreadRef], call: ThreadRef | None,
                figs: list[Figure], rels: list[Relation]) -> str | None:
    """Another thread's work beside the call, worded as that thread's and never as held
    by the call; None where the report lists no such thread to cite."""
    ref = refs.get(c.lane)
    if ref is None:
        return None
    figs.append(Figure("beside", c.ns))
    # its growth is its time in the call's span less its typical time: at most the span
    rels.append(rel("le", "beside", "api"))
    _same_thread(ref, call, "beside", figs, rels, same=False)
    return (f"meanwhile {ref.label} ran {c.what}, {fmt_ns(c.ns)} more than during nearby "
            f"calls (another thread's work, not this call's)")


def _holder(h: Holder, figs: list[Figure], rels: list[Relation],
            refs: Mapping[int, ThreadRef] | None = None, call: ThreadRef | None = None) -> str:
    figs.append(Figure("held", h.ns))
    if h.lane is not None and refs and h.lane in refs:
        # an op or frame holds the excess only on the call's own thread: cited so
        _same_thread(refs[h.lane], call, "held", figs, rels, same=True)
    if h.ns > h.excess_ns:
        # Its growth is measured against nearby calls, the excess against the median of
        # all: the rest of the call can be quicker than usual, and "holds 129 us of the
        # 114 us excess" would contradict itself.
        rels.append(rel("gt", "held", "excess"))
        return (f"{h.what} took {fmt_ns(h.ns)} more than in nearby calls, more than "
                f"the call's whole {fmt_ns(h.excess_ns)} excess (the rest of it was "
                f"quicker than usual)")
    rels.append(rel("le", "held", "excess"))
    return f"{h.what} holds {fmt_ns(h.ns)} of the {fmt_ns(h.excess_ns)} excess"


def cause_claim(cause: Cause, index: int, sid: str,
                refs: Mapping[int, ThreadRef] | None = None) -> Claim:
    """Why call ``index`` is cold or an outlier (``sid``: ``cold-reason`` or
    ``outlier-reason``), from the figures the analyses found: the words the call's
    ``cold_reason``/``outlier_reason`` hold. ``refs`` (``thread_refs``): where the report
    lists each host thread, to cite the thread of what holds the excess and of the work
    beside the call."""
    at = ("calls", "per_call", index)
    figs = [Figure("call", index, pointer(*at, "index"))]
    rels: list[Relation] = []
    # the thread the calls are on: the one the report's ``threads`` marks attributed
    call_thread = next((r for r in (refs or {}).values() if r.attributed), None)
    if isinstance(cause, ColdWork):
        text = _cold_work(cause, at, figs)
    elif isinstance(cause, ProfilerBurst):
        figs += [Figure("api", cause.api_ns, pointer(*at, "metrics", "api_ns")),
                 Figure("median", cause.median_ns),
                 Figure("profiler", cause.profiler_ns, pointer(*at, "categories", "profiler")),
                 Figure("typical_profiler", cause.typical_profiler_ns)]
        rels += [rel("gt", "api", "median"), rel("gt", "profiler", "typical_profiler")]
        text = (f"{fmt_ns(cause.api_ns)} against {fmt_ns(cause.median_ns)} for the others: "
                f"profiler work {fmt_ns(cause.profiler_ns)} inside (typically "
                f"{fmt_ns(cause.typical_profiler_ns)}), the profiler's buffer set-up")
    elif isinstance(cause, ProfilerStartup):
        figs += [Figure("api", cause.api_ns, pointer(*at, "metrics", "api_ns")),
                 Figure("launch", cause.launch_ns),
                 Figure("median", cause.median_launch_ns),
                 Figure("share", cause.launch_ns / cause.api_ns),
                 Figure("share_threshold", STARTUP_SHARE),
                 Figure("ratio_threshold", STARTUP_LAUNCH_RATIO),
                 Figure("median_limit", STARTUP_LAUNCH_RATIO * cause.median_launch_ns)]
        rels += [rel("le", "launch", "api"), rel("ratio", "launch", "api", "share"),
                 rel("gt", "share", "share_threshold"), rel("gt", "launch", "median_limit")]
        began = ("before its device work began" if cause.linked
                 else "with no device record")
        text = (f"profiler start-up: the trace's first launch took {fmt_ns(cause.launch_ns)} "
                f"of the call's {fmt_ns(cause.api_ns)} {began} (the "
                f"other launches' median {fmt_ns(cause.median_launch_ns)})")
    elif isinstance(cause, FirstUse):
        figs += [Figure("api", cause.api_ns, pointer(*at, "metrics", "api_ns")),
                 Figure("launches", cause.launches),
                 Figure("before", cause.before_ns), Figure("later", cause.later_ns),
                 Figure("excess", cause.excess_ns),
                 Figure("share", cause.excess_ns / cause.api_ns),
                 Figure("share_threshold", STARTUP_SHARE)]
        rels += [rel("le", "before", "api"), rel("sum", "later", "excess", "before"),
                 rel("ratio", "excess", "api", "share"), rel("gt", "share", "share_threshold")]
        n = cause.launches
        text = (f"first use: {n} launch{'es' if n != 1 else ''} of kernels the trace had not "
                f"launched before waited {fmt_ns(cause.before_ns)} of the call's "
                f"{fmt_ns(cause.api_ns)}, the device idle, before their device work began; the "
                f"same kernels' later launches wait {fmt_ns(cause.later_ns)} (their medians, "
                f"summed)")
    else:
        assert isinstance(cause, SlowCall)
        figs += [Figure("api", cause.api_ns, pointer(*at, "metrics", "api_ns")),
                 Figure("median", cause.median_ns), Figure("ratio", cause.api_ns / cause.median_ns)]
        rels.append(rel("ratio", "api", "median", "ratio"))
        text = (f"{fmt_ns(cause.api_ns)}, {cause.api_ns / cause.median_ns:.1f}x the median of "
                f"the others ({fmt_ns(cause.median_ns)})")
        if cause.holder is not None:
            figs.append(Figure("excess", cause.holder.excess_ns))
            rels.append(rel("sum", "median", "excess", "api"))
            text += "; " + _holder(cause.holder, figs, rels, refs, call_thread)
        if cause.concurrent is not None and refs:
            beside = _concurrent(cause.concurrent, refs, call_thread, figs, rels)
            if beside is not None:
                text += "; " + beside
        if cause.first:
            text = "first call of its kind, " + text
        if cause.cold_work is not None:
            text += "; " + _cold_work(cause.cold_work, at, figs)
    return Claim(sid, text, tuple(figs), tuple(rels))


def cause_claims(cold: dict[int, Cause], outlier: dict[int, Cause],
                 refs: Mapping[int, ThreadRef] | None = None) -> list[Claim]:
    """The reason of every cold call and every outlier, in call order."""
    out = [cause_claim(c, i, "cold-reason", refs) for i, c in cold.items()]
    out += [cause_claim(c, i, "outlier-reason", refs) for i, c in outlier.items()]
    return sorted(out, key=lambda c: (c.figures[0].value or 0, c.id))


# The call kinds (and other numbered series) the calls' description names one by one.
MAX_KINDS_NAMED = 3


def calls_claim(calls: CallsSummary) -> Claim:
    """``20 calls: shapes.py(30): triton_mul, found from Python frames (override:
    --calls)``: how many calls, of which kinds, found how, and the other numbered series
    an option would pick instead. The kinds' counts add up to the calls."""
    n = len(calls.calls)
    if not n:
        return Claim("calls-found", "no calls found (no ranges, frames or launches)",
                     (Figure("count", 0, pointer("calls", "count")),))
    figs = [Figure("count", n, pointer("calls", "count"))]
    kinds = [(k.name, k.count) for k in calls.kinds]
    figs += [Figure(f"kind:{j}", c, pointer("calls", "kinds", j, "count"))
             for j, (_, c) in enumerate(kinds)]
    rels = [rel("sum", *(f"kind:{j}" for j in range(len(kinds))), "count")]
    shown = kinds[:MAX_KINDS_NAMED]
    if len(kinds) > MAX_KINDS_NAMED:
        # the kinds named are those holding the most time, so that the ones left out are
        # the small ones (an eager model's 36 ops: never its first three by appearance)
        held: dict[str, int] = {}
        for c in calls.calls:
            held[c.kind] = held.get(c.kind, 0) + c.api_ns
        shown = sorted(kinds, key=lambda kc: -held.get(kc[0], 0))[:MAX_KINDS_NAMED]
    what = ", ".join(f"{printable(k)} ({c})" if len(kinds) > 1 else printable(k)
                     for k, c in shown)
    if len(kinds) > len(shown):
        more = len(kinds) - len(shown)
        what += f", {more} more kind{'s' if more != 1 else ''}"
    head = f"{n} call{'s' if n != 1 else ''}"
    if len(kinds) > 1:
        head += f" of {len(kinds)} kinds"
    tail = "" if calls.source == "option" else " (override: --calls)"
    also = "".join(f"; also {printable(k)} ({c} call{'s' if c != 1 else ''}: --calls '{rx}')"
                   for k, c, rx in calls.others[:MAX_KINDS_NAMED])
    if len(calls.others) > MAX_KINDS_NAMED:
        also += f" and {len(calls.others) - MAX_KINDS_NAMED} more numbered series"
    also += _elsewhere(calls.elsewhere, figs, rels)
    return Claim("calls-found", f"{head}: {what}, {calls.how}{tail}{also}", tuple(figs),
                 tuple(rels))


def _elsewhere(elsewhere: Sequence[tuple[str, str, int]], figs: list[Figure],
               rels: list[Relation]) -> str:
    """``--calls`` matches on other threads than the calls' (``callfind._by_option``):
    left out, because a call's host rows are one thread's; said so, with the ``--thread``
    that shows each (the threads holding the most named, the rest counted). Adds the
    figures and their sum to ``figs`` and ``rels``."""
    if not elsewhere:
        return ""
    names = []
    for j, (_, _, c) in enumerate(elsewhere):
        figs.append(Figure(f"elsewhere:{j}", c, pointer("calls", "elsewhere", j, "calls")))
        names.append(f"elsewhere:{j}")
    total = sum(c for _, _, c in elsewhere)
    if len(elsewhere) == 1:
        thread, spec, _ = elsewhere[0]
        return (f"; {total} more on {thread} left out (the calls and their host rows are one "
                f"thread's: --thread {spec} to see {'them' if total != 1 else 'it'})")
    figs.append(Figure("elsewhere", total))
    rels.append(rel("sum", *names, "elsewhere"))
    shown = ", ".join(f"{c} on {thread} (--thread {spec})"
                      for thread, spec, c in elsewhere[:MAX_KINDS_NAMED])
    if len(elsewhere) > MAX_KINDS_NAMED:
        shown += f", {len(elsewhere) - MAX_KINDS_NAMED} more threads"
    return (f"; {total} more on {len(elsewhere)} other threads left out (the calls and their "
            f"host rows are one thread's): {shown}")


def unprofiled_claims(u: UnprofiledInfo | None,
                      calibration: dict[str, Any] | None = None) -> list[Claim]:
    """The unprofiled split's headline ("Without the profiler a call takes 86.6 us [84 us,
    90 us] (profiled 486 us, 5.6x); measured: ...", with the model's ratio and spread
    cited where the method is the profiled-shares model), its categories line, which
    says they sum to the call, and what the measurement cost (``calibration``: capture's,
    for a measured split); none without a split."""
    if u is None:
        return []
    if u.method is None or u.call_ns is None:
        return [Claim("unprofiled-call", f"Without the profiler: {u.note}",
                      (Figure("call", u.call_ns, pointer("unprofiled", "call_ns")),))]
    figs = [Figure("call", u.call_ns, pointer("unprofiled", "call_ns")),
            Figure("profiled", u.profiled_call_ns, pointer("unprofiled", "profiled_call_ns"))]
    rels: list[Relation] = []
    ci = ""
    if u.low_ns is not None:
        figs += [Figure("low", u.low_ns, pointer("unprofiled", "low_ns")),
                 Figure("high", u.high_ns, pointer("unprofiled", "high_ns"))]
        rels.append(rel("le", "low", "high"))
        ci = f" [{fmt_ns(u.low_ns)}, {fmt_ns(u.high_ns)}]"
    prof = u.profiled_call_ns
    ratio = ""
    if prof and u.call_ns:
        figs.append(Figure("ratio", prof / u.call_ns))
        rels.append(rel("ratio", "profiled", "call", "ratio"))
        ratio = f", {prof / u.call_ns:.1f}x"
    if u.method.startswith(MODEL) and prof is not None and u.categories_raw_sum_ns is not None:
        # the method's words are the model's claim: its figures are this sentence's too
        model = model_claim(u.call_ns, prof, u.profiled_categories or {},
                            u.categories_raw_sum_ns)
        own = {f.name for f in model.figures} - {"call", "profiled"}
        figs += [Figure(f"model.{f.name}", f.value, f.path) for f in model.figures
                 if f.name in own]
        rels += [Relation(r.kind, tuple(f"model.{n}" if n in own else n for n in r.figures))
                 for r in model.relations]
    head = Claim("unprofiled-call", f"Without the profiler a call takes {fmt_ns(u.call_ns)}"
                 f"{ci} (profiled {fmt_ns(prof)}{ratio}); {u.method}", tuple(figs), tuple(rels))
    out = [head]
    if u.method.startswith(MEASURED) and calibration:
        out.append(measuring_claim(calibration))
    if not u.categories:
        return out
    pc = u.profiled_categories or {}
    cats = " · ".join(f"{k} {fmt_ns(v)} ({100 * v / u.call_ns:.0f}%; profiled {fmt_ns(pc.get(k))})"
                      for k, v in u.categories.items())
    names = [f"cat:{k}" for k in u.categories]
    figs_c = [Figure("call", u.call_ns, pointer("unprofiled", "call_ns"))]
    figs_c += [Figure(n, v, pointer("unprofiled", "categories", k))
               for n, (k, v) in zip(names, u.categories.items(), strict=True)]
    # "(sum = the call)": the categories add up to the call exactly
    return [*out, Claim("unprofiled-categories",
                        f"categories unprofiled (sum = the call): {cats}", tuple(figs_c),
                        (rel("sum", *names, "call"),))]


def window_claim(w: Window) -> Claim:
    """What the window is (the line beside its length): the activity's span, the
    ``--window`` time range or the user ranges a ``--window`` regex matched, counted
    (and the steps either was widened to hold)."""
    if w.source == "empty":
        return Claim("window", "no activity events",
                     (Figure("dur", w.dur_ns, pointer("window", "dur_ns")), Figure("none", 0)),
                     (rel("eq", "dur", "none"),))
    if w.source == "annotation":
        # find_window refuses a regex that matches no range
        text = f"span of {w.ranges} user range(s) matching {w.spec!r}"
        if w.cut_steps:
            text += f", widened to the whole steps it cut: {', '.join(w.cut_steps)}"
        return Claim("window", text,
                     (Figure("ranges", w.ranges, pointer("window", "ranges")),
                      Figure("one", 1)), (rel("ge", "ranges", "one"),))
    if w.source == "range":
        text = f"time range {w.spec} from the first activity event"
        if w.cut_steps:
            text += f", widened to the whole steps it cut: {', '.join(w.cut_steps)}"
        return Claim("window", text, ())
    return Claim("window", "first to last host or device activity event", ())


# ``analyses.calltree`` rounds the unprofiled share to this many decimals.
SHARE_DECIMALS = 4
# The corrected critical path items the unprofiled steps' line names.
PATH_NAMED_CORRECTED = 6


def perturbation_claims(p: PerturbationInfo | None, api_p50: int | None,
                        unit: str) -> list[Claim]:
    """What the profiler recorded per warm call (``perturbation-recorded``: events,
    Python frames among them, its own time) and the unprofiled call against the profiled
    one (``perturbation-unprofiled``: the share is the one over the other's p50)."""
    if p is None:
        return []
    at = ("calls", "perturbation")
    out = []
    if p.events_per_call is not None:
        figs = [Figure("events", p.events_per_call, pointer(*at, "events_per_call"))]
        rels: list[Relation] = []
        parts = [f"{p.events_per_call} events"]
        if p.python_frames_per_call:
            figs.append(Figure("frames", p.python_frames_per_call,
                               pointer(*at, "python_frames_per_call")))
            rels.append(rel("le", "frames", "events"))  # a frame is an event
            parts.append(f"{p.python_frames_per_call} Python frames")
        figs.append(Figure("profiler", p.profiler_ns_per_call,
                           pointer(*at, "profiler_ns_per_call")))
        parts.append(f"profiler's own time {fmt_ns(p.profiler_ns_per_call)}")
        out.append(Claim("perturbation-recorded",
                         f"recorded per warm {unit}: " + ", ".join(parts), tuple(figs),
                         tuple(rels)))
    if p.unprofiled_share is not None:
        out.append(Claim("perturbation-unprofiled", (
            f"unprofiled, the same call takes {fmt_ns(p.unprofiled_ns)}: "
            f"{100 * p.unprofiled_share:.0f}% of the profiled call; shares of the call stay "
            "meaningful, absolute figures are inflated"),
            (Figure("unprofiled", p.unprofiled_ns, pointer(*at, "unprofiled_ns")),
             Figure("profiled", api_p50, pointer("calls", "stats", "api_ns", "p50")),
             Figure("share", p.unprofiled_share, pointer(*at, "unprofiled_share")),
             Figure("decimals", SHARE_DECIMALS)),
            (rel("ratio_rounded", "unprofiled", "profiled", "share", "decimals"),)))
    return out


def unprofiled_steps_claims(u: UnprofiledInfo | None) -> list[Claim]:
    """The profiled steps beside their unprofiled time (``unprofiled-steps``) and the
    typical step's phases and critical path corrected (``unprofiled-steps-phases``,
    ``unprofiled-steps-path``): the correction only removes time (``report.unprofiled_steps``
    never scales up), so each corrected figure is at most its profiled one."""
    st = None if u is None else u.steps
    if st is None:
        return []
    at = ("unprofiled", "steps")
    head = Claim("unprofiled-steps", (
        f"profiled step {fmt_ns(st.profiled_step_ns)}, unprofiled "
        f"{fmt_ns(st.unprofiled_step_ns)} ({st.n} unprofiled steps; {st.timer})"),
        (Figure("profiled", st.profiled_step_ns, pointer(*at, "profiled_step_ns")),
         Figure("unprofiled", st.unprofiled_step_ns, pointer(*at, "unprofiled_step_ns")),
         Figure("n", st.n, pointer(*at, "n"))))
    figs: list[Figure] = []
    rels: list[Relation] = []
    for k, v in st.phases.items():
        figs += [Figure(f"profiled:{k}", st.profiled_phases.get(k),
                        pointer(*at, "profiled_phases", k)),
                 Figure(f"corrected:{k}", v, pointer(*at, "phases", k))]
        rels.append(rel("le", f"corrected:{k}", f"profiled:{k}"))
    phases = " · ".join(f"{k} {fmt_ns(st.profiled_phases.get(k))} -> {fmt_ns(v)}"
                        for k, v in st.phases.items())
    out = [head, Claim("unprofiled-steps-phases",
                       f"step #{st.step_index} corrected, phases: {phases}", tuple(figs),
                       tuple(rels))]
    figs, rels = [], []
    for j, i in enumerate(st.critical_path[:PATH_NAMED_CORRECTED]):
        figs += [Figure(f"profiled:{j}", i.profiled_ns,
                        pointer(*at, "critical_path", j, "profiled_ns")),
                 Figure(f"corrected:{j}", i.ns, pointer(*at, "critical_path", j, "ns"))]
        rels.append(rel("le", f"corrected:{j}", f"profiled:{j}"))
    path = " · ".join(f"{i.what} ({i.resource}) {fmt_ns(i.profiled_ns)} -> {fmt_ns(i.ns)}"
                      for i in st.critical_path[:PATH_NAMED_CORRECTED])
    out.append(Claim("unprofiled-steps-path", f"critical path corrected: {path}", tuple(figs),
                     tuple(rels)))
    return out


def bytes_words(r: Report) -> str | None:
    """The bytes a call moves, as its claim says it (made now for a report read back
    from a JSON saved without claims)."""
    from traceview.metadata import NO_CAPTURE

    claim = next((c for c in r.claims if c.id == "bytes-moved"), None) or bytes_claim(
        r.bytes_moved, r.calls.stats["kernel_ns"].p50 if "kernel_ns" in r.calls.stats else None,
        (r.capture_meta or NO_CAPTURE).bandwidth)
    return None if claim is None else claim.text


def device_claim(d: DeviceInfo, window_ns: int) -> Claim:
    """The device's line (``device busy 26.4 us (2.5%), idle 1.04 ms · 30 kernels · kernel
    time summed over streams 26.4 us``): busy and idle tile the window, the busy share is
    busy over the window, and where streams overlap, the overlap is the work summed over
    streams less the busy union."""
    at = ("device",)
    figs = [Figure("busy", d.busy_ns, pointer(*at, "busy_ns")),
            Figure("idle", d.idle_ns, pointer(*at, "idle_ns")),
            Figure("window", window_ns, pointer("window", "dur_ns")),
            Figure("kernels", d.kernel_count, pointer(*at, "kernel_count")),
            Figure("kernel_sum", d.kernel_sum_ns, pointer(*at, "kernel_sum_ns"))]
    rels: list[Relation] = [rel("sum", "busy", "idle", "window")]
    if window_ns > 0:
        figs.append(Figure("share", d.busy_ns / window_ns))
        rels.append(rel("ratio", "busy", "window", "share"))
    text = (f"device busy {fmt_ns(d.busy_ns)} ({fmt_share(d.busy_ns, window_ns)}), idle "
            f"{fmt_ns(d.idle_ns)} · {plural(d.kernel_count, 'kernel')}")
    others = []
    for n, key, word, many in ((d.memcpy_count, "memcpy_count", "copy", "copies"),
                               (d.memset_count, "memset_count", "set", None)):
        if n:
            figs.append(Figure(key, n, pointer(*at, key)))
            others.append(plural(n, word, many))
    if others:
        text += ", " + ", ".join(others)
        if d.copy_sum_ns is not None:
            figs.append(Figure("copy_sum", d.copy_sum_ns, pointer(*at, "copy_sum_ns")))
            text += f" ({fmt_ns(d.copy_sum_ns)} of copies/sets, apart from kernels)"
    text += f" · kernel time summed over streams {fmt_ns(d.kernel_sum_ns)}"
    if d.work_sum_ns > d.busy_ns:
        # the work summed over streams counts each overlapped ns once per stream
        figs += [Figure("work_sum", d.work_sum_ns, pointer(*at, "work_sum_ns")),
                 Figure("overlap", d.work_sum_ns - d.busy_ns)]
        rels.append(rel("sum", "busy", "overlap", "work_sum"))
        # on one stream, work launched to start early (programmatic dependent launch, a
        # graph's parallel nodes) overlaps: no two streams did
        who = "work overlapped on its one stream" if len(d.per_stream) == 1 \
            else "streams overlapped"
        text += f" ({who}: {fmt_ns(d.work_sum_ns - d.busy_ns)} counted once)"
    return Claim("device", text, tuple(figs), tuple(rels))


def claim_of(r: Report, sid: str, make: Callable[[], Claim | None]) -> Claim | None:
    """The report's claim ``sid``, or ``make()``'s for a report read back from a JSON
    saved without claims."""
    return next((c for c in r.claims if c.id == sid), None) or make()


def device_words(r: Report) -> str:
    """The device's line, as its claim says it."""
    claim = claim_of(r, "device", lambda: device_claim(r.device, r.window.dur_ns))
    assert claim is not None
    return claim.text


BASELINE = "unprofiled baseline"


def baseline_claim(cap: CaptureMeta | None, u: UnprofiledInfo | None) -> Claim | None:
    """Capture's unprofiled baseline, measured in the same run (``unprofiled baseline (same
    run): full API p50 12.7 us (synchronized each call) · amortized submit 6.69 us ·
    device 998 ns per op``); in graph mode the synchronized replay first, the figure the
    calls are compared with. Where the split measured the call, this line is a second
    measurement and says so. None without a baseline."""
    if cap is None or cap.baseline is None:
        return None
    base = cap.baseline
    at = ("trace", "capture", "baseline")
    figs = [Figure("full_api", base.full_api_ns_p50, pointer(*at, "full_api_ns_p50")),
            Figure("submit", base.amortized_submit_ns, pointer(*at, "amortized_submit_ns")),
            Figure("device", base.device_ns, pointer(*at, "device_ns"))]
    split = u is not None and (u.method or "").startswith(MEASURED)
    head = (f"{BASELINE} (same run; a second measurement: the call figure is the split's, "
            f"below): ") if split else f"{BASELINE} (same run): "
    graph = (cap.protocol or ProtocolMeta()).mode == "graph"
    if graph and base.replay_ns_p50:
        figs.append(Figure("replay", base.replay_ns_p50, pointer(*at, "replay_ns_p50")))
        body = (f"graph replay p50 {fmt_ns(base.replay_ns_p50)} (synchronized each replay)"
                f" · eager full API p50 {fmt_ns(base.full_api_ns_p50)}")
    else:
        body = f"full API p50 {fmt_ns(base.full_api_ns_p50)} (synchronized each call)"
    body += (f" · amortized submit {fmt_ns(base.amortized_submit_ns)}"
             f" · device {fmt_ns(base.device_ns)} per op")
    return Claim("unprofiled-baseline", head + body, tuple(figs))


def baseline_words(r: Report) -> str | None:
    """Capture's unprofiled baseline line, as its claim says it (None: no baseline)."""
    claim = claim_of(r, "unprofiled-baseline",
                     lambda: baseline_claim(r.capture_meta, r.unprofiled))
    return None if claim is None else claim.text


# The incomplete calls the per-call title names one by one.
INCOMPLETE_NAMED = 8


def calls_title_claim(calls: CallsInfo, unit: str) -> Claim | None:
    """The per-call table's title (``Per call: 29 warm of 30; cold: #0 left out``): the
    warm calls the figures are over, of how many, and which calls are cold (left out of
    the figures), outliers (counted) or incomplete (left out); None without calls."""
    if not calls.per_call:
        return None
    figs = [Figure("warm", calls.warm_count, pointer("calls", "warm_count")),
            Figure("count", calls.count, pointer("calls", "count"))]
    text = f"Per {unit}: {calls.warm_count} warm of {calls.count}"
    # with no warm call the figures are over every call (``calls.warm_calls``): the cold
    # and incomplete ones are then counted, not left out
    none_warm = calls.warm_count == 0
    left = "counted: none is warm" if none_warm else "left out"
    incomplete = [k for k, x in enumerate(calls.per_call) if x.launches_without_work and not x.cold]
    left_out = {calls.per_call[k].index for k in incomplete}
    # an outlier whose launches lost their device records is incomplete: left out, so
    # not among the outliers the figures count
    for key, word, ids in (("cold", left, calls.cold),
                           ("outliers", "counted", calls.outliers)):
        shown_ids = [(k, i) for k, i in enumerate(ids) if key == "cold" or i not in left_out]
        if shown_ids:
            figs += [Figure(f"{key}:{k}", i, pointer("calls", key, k)) for k, i in shown_ids]
            text += f"; {key}: #{', #'.join(str(i) for _, i in shown_ids)} {word}"
    if incomplete:
        shown = incomplete[:INCOMPLETE_NAMED]
        figs += [Figure(f"incomplete:{k}", calls.per_call[k].index,
                        pointer("calls", "per_call", k, "index")) for k in shown]
        more = " ..." if len(incomplete) > len(shown) else ""
        text += (f"; incomplete (launches without device records): "
                 f"#{', #'.join(str(calls.per_call[k].index) for k in shown)}{more} {left}")
    return Claim("calls-title", text, tuple(figs), (rel("le", "warm", "count"),))


def unprofiled_share_claim(p: PerturbationInfo | None) -> Claim | None:
    """Beside per-call figures, the unprofiled call as a share of the profiled one
    (``unprofiled, a call is 47% of the profiled one``); None where capture measured no
    unprofiled call."""
    if p is None or p.unprofiled_share is None:
        return None
    return Claim("unprofiled-share",
                 f"unprofiled, a call is {100 * p.unprofiled_share:.0f}% of the profiled one",
                 (Figure("share", p.unprofiled_share,
                         pointer("calls", "perturbation", "unprofiled_share")),))


def calls_title_words(r: Report) -> str | None:
    """The per-call table's title, as its claim says it."""
    claim = claim_of(r, "calls-title", lambda: calls_title_claim(
        r.calls, "step" if r.steps is not None else "call"))
    return None if claim is None else claim.text


def unprofiled_share_words(r: Report) -> str | None:
    """The unprofiled share beside per-call figures, as its claim says it."""
    claim = claim_of(r, "unprofiled-share", lambda: unprofiled_share_claim(r.calls.perturbation))
    return None if claim is None else claim.text


def window_length_claim(w: Window, what: Claim) -> Claim:
    """The window's header (``window 1.07 ms (first to last host or device activity
    event)``): its length, which is its end less its start, and what it is (``what``: the
    ``window`` claim)."""
    return Claim("window-length", f"window {fmt_ns(w.dur_ns)} ({what.text})",
                 (Figure("start", w.start_ns, pointer("window", "start_ns")),
                  Figure("dur", w.dur_ns, pointer("window", "dur_ns")),
                  Figure("end", w.end_ns, pointer("window", "end_ns"))),
                 (rel("sum", "start", "dur", "end"),))


def window_words(r: Report) -> str:
    """The window's header, as its claim says it."""
    claim = claim_of(r, "window-length", lambda: Claim(
        "window-length", f"window {fmt_ns(r.window.dur_ns)} ({r.window.description})", ()))
    assert claim is not None
    return claim.text


def result_claims(calls: CallsInfo, device: DeviceInfo, window_ns: int,
                  unit: str) -> list[Claim]:
    """The reproducer template's two results (``device-result``: the device work per call
    and the device busy over the window; ``api-result``: the profiled call and its host
    overhead), each p50 at most its p90 over the same warm calls; none without warm
    calls."""
    out = []
    k = calls.stats.get("kernel_ns")
    if k is not None and k.n:
        figs = _stat_figures("kernel_ns", "device_work", k)
        rels = [rel("le", "device_work:p50", "device_work:p90")]
        text = (f"device work per {unit} p50 {fmt_ns(k.p50)} (p90 {fmt_ns(k.p90)}, "
                f"n={k.n})")
        ko, cp = calls.stats.get("kernel_only_ns"), calls.stats.get("copy_ns")
        if calls.has_copies and ko is not None and cp is not None and ko.n:
            figs += [Figure("kernels:p50", ko.p50,
                            pointer("calls", "stats", "kernel_only_ns", "p50")),
                     Figure("copies:p50", cp.p50, pointer("calls", "stats", "copy_ns", "p50"))]
            text += (f", of which kernels p50 {fmt_ns(ko.p50)} and memcpy/memset p50 "
                     f"{fmt_ns(cp.p50)}")
        figs += [Figure("busy", device.busy_ns, pointer("device", "busy_ns")),
                 Figure("window", window_ns, pointer("window", "dur_ns"))]
        rels.append(rel("le", "busy", "window"))
        text += f"; device busy {fmt_ns(device.busy_ns)} of {fmt_ns(window_ns)} window"
        out.append(Claim("device-result", text, tuple(figs), tuple(rels)))
    a, ho = calls.stats.get("api_ns"), calls.stats.get("host_overhead_ns")
    if a is not None and a.n and ho is not None:
        figs = _stat_figures("api_ns", "call", a)
        text = f"profiled {unit} p50 {fmt_ns(a.p50)} (p90 {fmt_ns(a.p90)}, n={a.n})"
        # without device work in the window (a CPU-only trace) the host's time is the
        # work itself: no overhead next to a device that never ran
        if device.busy_ns > 0:
            figs.append(Figure("host_overhead:p50", ho.p50,
                               pointer("calls", "stats", "host_overhead_ns", "p50")))
            text += f"; host overhead p50 {fmt_ns(ho.p50)}"
        else:
            figs.append(Figure("busy", device.busy_ns, pointer("device", "busy_ns")))
            text += "; no device work, so no host overhead"
        out.append(Claim("api-result", text, tuple(figs),
                         (rel("le", "call:p50", "call:p90"),)))
    return out


def _stat_figures(metric: str, name: str, s: Stats) -> list[Figure]:
    at = ("calls", "stats", metric)
    return [Figure(f"{name}:p50", s.p50, pointer(*at, "p50")),
            Figure(f"{name}:p90", s.p90, pointer(*at, "p90")),
            Figure(f"{name}:n", s.n, pointer(*at, "n"))]


def result_words(r: Report) -> dict[str, str]:
    """The reproducer template's results by claim id, as their claims say them."""
    ids = ("device-result", "api-result")
    got = {c.id: c.text for c in r.claims if c.id in ids}
    if not got:  # a report read back from a JSON saved without claims
        got = {c.id: c.text for c in result_claims(
            r.calls, r.device, r.window.dur_ns, "step" if r.steps is not None else "call")}
    return got


def _busy_in_window(at: tuple[str | int, ...], busy_ns: int, window_ns: int,
                    all_busy_ns: int, counts: list[Figure]
                    ) -> tuple[list[Figure], list[Relation]]:
    """A device's or stream's busy time at ``at``, cited with the window, the busy union
    over every device and its ``counts``: at most that union, and its share its busy time
    over the window (no share of an empty window)."""
    figs = [Figure("busy", busy_ns, pointer(*at, "busy_ns")),
            Figure("window", window_ns, pointer("window", "dur_ns")),
            Figure("all_busy", all_busy_ns, pointer("device", "busy_ns")), *counts]
    rels: list[Relation] = [rel("le", "busy", "all_busy")]
    if window_ns > 0:
        figs.append(Figure("share", busy_ns / window_ns))
        rels.append(rel("ratio", "busy", "window", "share"))
    return figs, rels


def device_row_claims(d: DeviceInfo, window_ns: int) -> list[Claim]:
    """Under the device's line, one line per device where the trace has several (``device
    0: busy 1.2 ms (40.1%), 30 kernels 1.1 ms, 2 copies/sets 80 us``): each device's busy
    time is the union of its own work, so at most its work summed and at most the busy
    union over every device; its share is its busy time over the window."""
    if len(d.per_device) <= 1:
        return []
    out = []
    for k, dev in enumerate(d.per_device):
        at = ("device", "per_device", k)
        figs, rels = _busy_in_window(at, dev.busy_ns, window_ns, d.busy_ns, [
            Figure("kernels", dev.kernel_count, pointer(*at, "kernel_count")),
            Figure("kernel_sum", dev.kernel_sum_ns, pointer(*at, "kernel_sum_ns"))])
        text = (f"device {dev.device}: busy {fmt_ns(dev.busy_ns)} "
                f"({fmt_share(dev.busy_ns, window_ns)}), {plural(dev.kernel_count, 'kernel')} "
                f"{fmt_ns(dev.kernel_sum_ns)}")
        if dev.copy_count:
            figs += [Figure("copies", dev.copy_count, pointer(*at, "copy_count")),
                     Figure("copy_sum", dev.copy_sum_ns, pointer(*at, "copy_sum_ns")),
                     Figure("work_sum", dev.kernel_sum_ns + (dev.copy_sum_ns or 0))]
            rels += [rel("sum", "kernel_sum", "copy_sum", "work_sum"),
                     rel("le", "busy", "work_sum")]
            text += (f", {plural(dev.copy_count, 'copy/set', 'copies/sets')} "
                     f"{fmt_ns(dev.copy_sum_ns)}")
        else:
            rels.append(rel("le", "busy", "kernel_sum"))  # its kernels are all its work
        out.append(Claim("device-row", text, tuple(figs), tuple(rels)))
    return out


def stream_claims(d: DeviceInfo, window_ns: int) -> list[Claim]:
    """Under the device's line, one line per stream where streams overlap or there are
    several (``device 0 stream 7: busy 1.2 ms (40.1%), 30 work items``): each stream's
    busy time is at most its device's busy union and the union over every device; its
    share is its busy time over the window."""
    if not (d.streams_overlap or len(d.per_stream) > 1):
        return []
    out = []
    for k, s in enumerate(d.per_stream):
        at = ("device", "per_stream", k)
        figs, rels = _busy_in_window(at, s.busy_ns, window_ns, d.busy_ns, [
            Figure("items", s.work_count, pointer(*at, "work_count"))])
        mine = next((j for j, dev in enumerate(d.per_device) if dev.device == s.device), None)
        if mine is not None:
            figs.append(Figure("device_busy", d.per_device[mine].busy_ns,
                               pointer("device", "per_device", mine, "busy_ns")))
            rels.append(rel("le", "busy", "device_busy"))
        out.append(Claim("device-stream", (
            f"device {s.device} stream {s.stream}: busy {fmt_ns(s.busy_ns)} "
            f"({fmt_share(s.busy_ns, window_ns)}), {plural(s.work_count, 'work item')}"),
            tuple(figs), tuple(rels)))
    return out


def launches_claim(ln: LaunchesInfo) -> Claim:
    """The launches line (``launches 30 (cudaLaunchKernel 30), 30 linked to device
    work``): the launches by API add up to the launches, and the ones linked to device
    work are some of them; the device work with no launch record counted apart."""
    at = ("launches",)
    figs = [Figure("count", ln.count, pointer(*at, "count")),
            Figure("linked", ln.linked, pointer(*at, "linked"))]
    rels: list[Relation] = [rel("le", "linked", "count")]
    apis = [f"api:{j}" for j in range(len(ln.by_api))]
    figs += [Figure(n, v, pointer(*at, "by_api", k))
             for n, (k, v) in zip(apis, ln.by_api.items(), strict=True)]
    if apis:
        rels.append(rel("sum", *apis, "count"))
    by_api = ", ".join(f"{k} {v}" for k, v in ln.by_api.items()) or "none"
    text = f"launches {ln.count} ({by_api}), {ln.linked} linked to device work"
    if ln.unlinked_device_work:
        figs.append(Figure("unlinked", ln.unlinked_device_work,
                           pointer(*at, "unlinked_device_work")))
        text += f", {ln.unlinked_device_work} device work items with no launch record"
    return Claim("launches", text, tuple(figs), tuple(rels))


def _int(v: Any) -> int | None:
    """A capture metadata value as a figure: an integer (not a bool), else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def profiler_of(diagnostics: Iterable[Any]) -> str:
    """What recorded the trace, as the reproducer's timer field names it: an Nsight
    Systems capture or rocprof where the loader read one (``io/nsys.py``'s and
    ``io/rocprof.py``'s diagnostics), else the PyTorch profiler."""
    codes = {g.code for g in diagnostics}
    if "nsys-export" in codes:
        return "Nsight Systems capture (converted to Chrome JSON)"
    if "rocprof-json" in codes:
        return "rocprof trace (its own Chrome JSON)"
    return "torch.profiler trace"


def warm_mode_claim(calls: CallsInfo, cap: CaptureMeta | None, *, graph: bool,
                    unit: str, eager: bool = False) -> Claim:
    """The reproducer template's "Cold or warmed? Eager or graph replay?" field (``29 warm
    calls; cold call(s) #0 reported apart; cold first call measured apart: 7.05 ms;
    eager``): the warm calls are some of the calls, each cold call named is one the
    report marks cold, capture's cold call cited where it timed one; ``graph``: the
    graph-replay finding, the mode where capture recorded none; ``eager``: eager kernel
    launches beside the replays."""
    proto = cap.protocol if cap is not None else None
    mode = (proto.mode if proto is not None else None) or (
        ("graph replay and eager launches" if eager else "graph replay") if graph
        else "eager (no graph launches seen)")
    figs = [Figure("warm", calls.warm_count, pointer("calls", "warm_count")),
            Figure("count", calls.count, pointer("calls", "count"))]
    text = plural(calls.warm_count, f"warm {unit}")
    if calls.cold:
        figs += [Figure(f"cold:{k}", i, pointer("calls", "cold", k))
                 for k, i in enumerate(calls.cold)]
        text += f"; cold {unit}(s) #{', #'.join(map(str, calls.cold))} reported apart"
    if cap is not None and cap.cold is not None:
        figs.append(Figure("cold_wall", cap.cold.wall_ns,
                           pointer("trace", "capture", "cold", "wall_ns")))
        text += f"; cold first call measured apart: {fmt_ns(cap.cold.wall_ns)}"
    return Claim("warm-mode", f"{text}; {mode}", tuple(figs), (rel("le", "warm", "count"),))


def timer_claim(calls: CallsInfo, cap: CaptureMeta | None,
                profiler: str = "torch.profiler trace") -> Claim:
    """The reproducer template's "Timer, synchronization points and repetitions" field:
    capture's protocol (its timer, sync, warm-up and profiled calls: the calls the
    report finds are at most those, and a cold trace holds its cold call alone), or, for
    a trace from elsewhere, the profiler and the calls found."""
    proto = cap.protocol if cap is not None else None
    count = Figure("count", calls.count, pointer("calls", "count"))
    if proto is None:
        return Claim("timer", f"{profiler}; {plural(calls.count, 'call')} from "
                     f"{calls.source}; sync points not recorded", (count,))
    at = ("trace", "capture", "protocol")
    figs = [count]
    rels: list[Relation] = []
    warmup, iters = _int(proto.warmup), _int(proto.iters)
    if warmup is not None:
        figs.append(Figure("warmup", warmup, pointer(*at, "warmup")))
    cold = cap is not None and cap.kind == "cold"
    where = ""
    if cold:
        # capture profiles the cold call alone in its own trace; the warm calls the
        # protocol counts are in the warm trace beside it
        figs.append(Figure("one", 1))
        rels.append(rel("le", "count", "one"))
        where = " in the warm trace (this trace: the cold call alone)"
    elif iters is not None:
        figs.append(Figure("iters", iters, pointer(*at, "iters")))
        rels.append(rel("le", "count", "iters"))
    return Claim("timer", (
        f"{proto.timer or 'torch.profiler'}; sync {proto.sync}; warm-up {proto.warmup}, "
        f"{proto.iters} profiled calls{where}; with_stack {proto.with_stack}"),
        tuple(figs), tuple(rels))


def families_title_claim(calls: CallsInfo, unit: str) -> Claim:
    """The module table's title (``A warm call by Python module (p50 of 30 warm calls;
    share of a call's p50, 22.8 us)``): the warm calls its figures are over, at most the
    warm calls, and the call p50 its shares are of."""
    api = calls.stats.get("api_ns")
    p50 = (api.p50 if api is not None else None) or 0
    figs = [Figure("warm_calls", calls.tree_warm_calls, pointer("calls", "tree_warm_calls")),
            Figure("warm", calls.warm_count, pointer("calls", "warm_count"))]
    if api is not None and api.p50 is not None:
        figs.append(Figure("call", p50, pointer("calls", "stats", "api_ns", "p50")))
    return Claim("families-title", (
        f"A warm {unit} by Python module (p50 of {calls.tree_warm_calls} warm {unit}s; share "
        f"of a {unit}'s p50, {fmt_ns(p50)})"), tuple(figs),
        (rel("le", "warm_calls", "warm"),))


def _all_of(r: Report, sid: str, make: Callable[[], list[Claim]]) -> list[str]:
    """The texts of the report's claims ``sid``, in order, or ``make()``'s for a report
    read back from a JSON saved without claims."""
    said = [c.text for c in r.claims if c.id == sid]
    return said or [c.text for c in make()]


def device_rows_words(r: Report) -> list[str]:
    """The lines under the device's line, per device then per stream, as their claims
    say them."""
    w = r.window.dur_ns
    return [*_all_of(r, "device-row", lambda: device_row_claims(r.device, w)),
            *_all_of(r, "device-stream", lambda: stream_claims(r.device, w))]


def launches_words(r: Report) -> str:
    """The launches line, as its claim says it."""
    claim = claim_of(r, "launches", lambda: launches_claim(r.launches))
    assert claim is not None
    return claim.text


def _graph_replay(r: Report) -> bool:
    return any(f.id == "graph-replay" for f in r.findings)


def warm_mode_words(r: Report) -> str:
    """The reproducer's cold-or-warm field, as its claim says it."""
    claim = claim_of(r, "warm-mode", lambda: warm_mode_claim(
        r.calls, r.capture_meta, graph=_graph_replay(r),
        unit="step" if r.steps is not None else "call",
        eager=bool(r.launches.by_kind.get("kernel"))))
    assert claim is not None
    return claim.text


def timer_words(r: Report) -> str:
    """The reproducer's timer field, as its claim says it."""
    claim = claim_of(r, "timer", lambda: timer_claim(r.calls, r.capture_meta,
                                                      profiler_of(r.diagnostics)))
    assert claim is not None
    return claim.text


def families_title_words(r: Report) -> str:
    """The module table's title, as its claim says it."""
    claim = claim_of(r, "families-title", lambda: families_title_claim(
        r.calls, "step" if r.steps is not None else "call"))
    assert claim is not None
    return claim.text


def typical_call_claim(calls: CallsInfo, typical: TypicalCall | None, unit: str) -> Claim | None:
    """The title of the typical call's picture (``Typical call #3 (call_3): 22.8 us wall,
    device work 1.2 us``, with its kernels and copies apart where it held copies): the
    call drawn is the per-call row cited, its wall and device work that row's. Device work
    is the union of its kernels and copies: at least each, at most both summed. None
    without a typical call."""
    if typical is None:
        return None
    k = typical.index
    call = calls.per_call[k]
    at = ("calls", "per_call", k)
    m = call.metrics
    figs = [Figure("drawn", k, pointer("typical_call", "index")),
            Figure("call", call.index, pointer(*at, "index")),
            Figure("wall", m.get("api_ns"), pointer(*at, "metrics", "api_ns")),
            Figure("device", m.get("kernel_ns"), pointer(*at, "metrics", "kernel_ns"))]
    rels: list[Relation] = []
    text = f"device work {fmt_ns(m.get('kernel_ns'))}"
    if m.get("copy_ns"):
        kernels, copies = m.get("kernel_only_ns"), m.get("copy_ns")
        figs += [Figure("kernels", kernels, pointer(*at, "metrics", "kernel_only_ns")),
                 Figure("copies", copies, pointer(*at, "metrics", "copy_ns")),
                 Figure("both", (kernels or 0) + (copies or 0))]
        rels += [rel("le", "kernels", "device"), rel("le", "copies", "device"),
                 rel("sum", "kernels", "copies", "both"), rel("le", "device", "both")]
        text += f" (kernels {fmt_ns(kernels)}, memcpy/memset {fmt_ns(copies)})"
    return Claim("typical-call", f"Typical {unit} #{call.index} ({call.name}): "
                 f"{fmt_ns(m.get('api_ns'))} wall, {text}", tuple(figs), tuple(rels))


def typical_call_words(r: Report) -> str | None:
    """The typical call's picture's title, as its claim says it."""
    claim = claim_of(r, "typical-call", lambda: typical_call_claim(
        r.calls, r.typical_call, "step" if r.steps is not None else "call"))
    return None if claim is None else claim.text


def step_title_claims(steps: StepsInfo | None, typical: TypicalCall | None) -> list[Claim]:
    """The typical step's section titles: the terminal's phase table (``step-phases-title``:
    ``Typical step ProfilerStep#3 by phase (28.9 ms on main thread [1/1]; device: all
    streams)``) and the markdown's heading (``step-heading``: ``Training step ProfilerStep#3
    (28.9 ms, typical of 3 warm of 4 steps, on main thread [1/1])``): the step's wall, and
    the warm steps, some of the steps. None without a step view."""
    found = typical_step(steps, typical)
    if found is None:
        return []
    steps, j = found
    step = steps.steps[j]
    wall = Figure("wall", step.wall_ns, pointer("steps", "steps", j, "wall_ns"))
    word = step_word(steps)
    return [Claim("step-phases-title", f"Typical step {step.name} by phase "
                  f"({fmt_ns(step.wall_ns)} on {steps.thread}; device: all streams)", (wall,)),
            Claim("step-heading", (
                f"{word[0].upper()}{word[1:]} {step.name} ({fmt_ns(step.wall_ns)}, typical of "
                f"{_warm_of(steps)}, on {steps.thread})"),
                (wall, Figure("warm", steps.warm_count, pointer("steps", "warm_count")),
                 Figure("count", steps.count, pointer("steps", "count"))),
                (rel("le", "warm", "count"),))]


def step_title_words(r: Report, sid: str) -> str | None:
    """The typical step's section title ``sid``, as its claim says it."""
    claim = claim_of(r, sid, lambda: next(
        (c for c in step_title_claims(r.steps, r.typical_call) if c.id == sid), None))
    return None if claim is None else claim.text


def _number(v: Any) -> int | float | None:
    """A capture metadata value as a figure: a number (not a bool), else None."""
    return v if isinstance(v, int | float) and not isinstance(v, bool) else None


def correctness_claim(cap: CaptureMeta | None) -> Claim | None:
    """The reproducer template's correctness field (``float64 reference, rtol 1e-05, atol
    1e-06; max abs err 2.35e-07, passed: True``): capture's check of the cold output, each
    number cited where the trace's capture block holds it. None where capture recorded
    no check."""
    corr = cap.correctness if cap is not None else None
    if corr is None:
        return None
    tol = corr.tolerance
    at = ("trace", "capture", "correctness")
    figs = [Figure(name, _number(v), path) for name, v, path in (
        ("rtol", tol.get("rtol"), pointer(*at, "tolerance", "rtol")),
        ("atol", tol.get("atol"), pointer(*at, "tolerance", "atol")),
        ("max_abs_err", corr.max_abs_err, pointer(*at, "max_abs_err")))
        if _number(v) is not None]
    return Claim("correctness", (
        f"{corr.reference} reference, rtol {tol.get('rtol')}, atol {tol.get('atol')}; max abs "
        f"err {corr.max_abs_err}, passed: {corr.passed}"), tuple(figs))


def correctness_words(r: Report) -> str | None:
    """The reproducer's correctness field, as its claim says it (None: not recorded)."""
    claim = claim_of(r, "correctness", lambda: correctness_claim(r.capture_meta))
    return None if claim is None else claim.text


def operation_step_claim(steps: StepsInfo | None, calls_description: str) -> Claim | None:
    """The reproducer's operation field for a training trace (``a training step (3 steps
    from 3 calls: ProfilerStep#N, ...; phases forward, backward, optimizer)``): the steps
    counted and what the first one runs. None without steps."""
    if steps is None or not steps.steps:
        return None
    return Claim("operation-step", (
        f"a {step_word(steps)} ({plural(steps.count, 'step')} from {calls_description}; "
        f"phases {', '.join(p.phase for p in steps.steps[0].phases)})"),
        (Figure("count", steps.count, pointer("steps", "count")),))


def operation_step_words(r: Report) -> str | None:
    """The operation field of a training trace, as its claim says it."""
    claim = claim_of(r, "operation-step",
                     lambda: operation_step_claim(r.steps, r.calls.description))
    return None if claim is None else claim.text
