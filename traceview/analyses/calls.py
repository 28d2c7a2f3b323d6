"""Per-call view: one row per call of the operator, and statistics over warm calls.

Which spans are calls is ``traceview.analyses.callfind``'s job (ranges, Python frames,
launches; ``--calls``); the summary says what they are and how they were found.

For each call, in integer ns; host figures are the attributed thread's (the thread the
calls are on), device figures cover the work launched inside the call by any thread (a
training step's backward kernels come from the autograd thread):

* ``api_ns`` — the call's wall time (what a synchronized CPU timer around it sees);
* ``pre_launch_ns`` — from the call's start to its first launch API call;
* ``launch_api_ns`` — time inside launch API calls;
* ``launch_latency_ns`` — first linked device work start minus its launch start;
* ``kernel_ns`` — union of the device work its launches produced, kernels and the
  memcpy/memset they launched together (may end after the call when the call does not
  synchronize), and the device work with no launch record that started inside the call;
  the name is kept for that meaning, and the two parts stand beside it:
* ``kernel_only_ns`` — union of the kernels alone;
* ``copy_ns`` — union of the memcpy and memset work alone (0 when it launched none).
  Where copies run beside kernels on another stream the two parts overlap, so they can
  sum to more than ``kernel_ns``;
* ``sync_ns`` — time in synchronization calls;
* ``device_busy_ns`` — time inside the call during which *any* device work ran;
* ``host_overhead_ns`` — ``api_ns - device_busy_ns``: the part of the call during which
  the device had nothing to do. This is the fixed host cost of the API.
* ``api_sync_ns`` (beside the metrics) — call + the synchronize the same loop iteration
  calls right after it, when calls come from Python frames and one follows.

A call is **cold** when it contains compile, autotune or module-load work (host category
``compile``) or imports (``import``) of a size that is evidence (the rule table's
``cold``: a share of the call or an absolute floor, ``RuleSet.is_cold_work``; a few
microseconds of a runtime helper a compile rule also names is not), Dynamo/Inductor
compiler ranges, or when capture recorded it as cold; each cold call says why. Calls far slower than the others of their
kind are classed cold or outlier by ``analyses.slow_calls``, with what holds their excess
(the profiler's own work: ``_outliers``). The call holding the trace's first launch is
cold whatever its kind when that launch is profiler start-up (``startup_calls``: the
launch's time before its device work began over half the call's wall time and over
``STARTUP_LAUNCH_RATIO`` times the median of the trace's other launches): a kind of one call has no others to be slow
against, and its start-up would stand as the typical call. So is a call dominated by first
uses (``first_use_calls``: the first launches of kernels launched again later, each over
``STARTUP_LAUNCH_RATIO`` times those later launches before its device work began, took over
``STARTUP_SHARE`` of the call beyond what the later launches take: lazy module loading and
library handles). Cold calls are left out of the warm statistics
(when warm calls remain); an outlier is a warm call that is named, never dropped: a real
warm call at 2x the others is part of the p90 and the max. ``warm_calls`` is that one
rule, and ``typical`` the one typical call, for every reader (explain's statistics and
verdict, ``diff``'s samples); where no warm call remains the statistics fall back on every
call, but a start-up call is never the typical call (there is none then).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, fields, replace

import numpy as np

from traceview import intervals
from traceview.analyses.callfind import CallsSource, FoundCalls, find_calls
from traceview.analyses.host import HostTimeline
from traceview.analyses.launches import LaunchSummary, LaunchWork, launch_work, no_record_due
from traceview.analyses.slow_calls import (
    Cause,
    ColdWork,
    FirstUse,
    ProfilerBurst,
    ProfilerStartup,
    Slow,
)
from traceview.analyses.slow_calls import classify as classify_slow
from traceview.analyses.window import Window
from traceview.model import Trace
from traceview.rules import RuleSet
from traceview.stats import (
    Stats,
    median_of_array,
    medians_by_group,
    medians_of_others,
    summarize,
)

METRICS = ("api_ns", "pre_launch_ns", "launch_api_ns", "launch_latency_ns", "kernel_ns",
           "kernel_only_ns", "copy_ns", "sync_ns", "device_busy_ns", "host_overhead_ns")
# Per-call figures of waiting for the device or leaving it idle: a window with no device
# work (a CPU-only trace) has none, its calls' host time being the work itself, neither a
# wait nor overhead ("no device work, so no host overhead"). Explain's views leave them
# out there and diff compares none.
DEVICE_ONLY_METRICS = ("sync_ns", "host_overhead_ns")
# Host categories whose presence makes a call cold, with what they mean.
COLD_CATEGORIES = {"compile": "compile/autotune/module-load work", "import": "imports"}
# Dynamo/Inductor write these ranges around their compiler passes.
COMPILE_RANGE = re.compile(r"compile_id=\d+/\d+|\(dynamo_timed\)$")
# A call this many times the median of the other calls is an outlier when the
# profiler's own work explains at least OUTLIER_EXPLAINED of the excess.
OUTLIER_RATIO = 2.0
OUTLIER_EXPLAINED = 0.5
# The trace's first launch is profiler start-up (CUDA context creation, the first
# launch's set-up) when its time before its device work began is over STARTUP_SHARE of
# its call's wall time and over STARTUP_LAUNCH_RATIO times the median of the trace's
# other launches: a first launch
# a few times the others is common and says nothing; hundreds of times is the context.
STARTUP_SHARE = 0.5  # the cold-path finding's "mostly profiler start-up" share
STARTUP_LAUNCH_RATIO = 5.0  # slow_calls.FIRST_CALL_RATIO


# Slots, so that every field is an attribute, in field order, however the call was made:
# the JSON writes the calls as they are (``report.model.to_dict``), and orjson writes a
# dataclass with slots field by field but one without from its ``__dict__``, which
# ``msgspec.convert`` (a report read back) fills in its input's order and without the
# fields left at their defaults. (A comment, not the docstring: the docstring is the
# JSON Schema's description of a call, docs/schemas/explain.json.)
@dataclass(frozen=True, slots=True)
class Call:
    """One call: what the analysis finds and what the report holds (``Report.calls
    .per_call``, ``report.model.CallRow``): one type, so a figure added here is in the
    report and its JSON at once. Field order is the JSON's key order (docs/json.md)."""

    index: int
    name: str
    start_ns: int
    end_ns: int
    cold: bool
    launches: int
    kernels: int
    metrics: dict[str, int | None]  # metric -> the call's ns (the names of calls.stats)
    categories: dict[str, int]  # host category -> ns inside the call
    kind: str = ""
    # why the call is cold, and (``outlier``) why it is an outlier, in words: the
    # analyses find the causes (``CallsSummary.cold_causes``, ``outlier_causes``), the
    # report words them (``report.sentences``); None here until it does
    cold_reason: str | None = None
    outlier: bool = False
    outlier_reason: str | None = None
    api_sync_ns: int | None = None  # call + the synchronize right after it
    # launches in the call with no device record (dropped by the profiler, or cut off):
    # such a call is no warm call with an idle device; it is left out of the warm figures
    launches_without_work: int = 0

    @property
    def api_ns(self) -> int:
        """The call's wall time: ``metrics`` values are ``int | None`` because launch
        latency can be missing, but every call has ``api_ns`` (its own span)."""
        api = self.metrics["api_ns"]
        assert api is not None
        return api

    @property
    def warm(self) -> bool:
        """Not cold and every launch recorded on the device: outliers are warm calls
        (named in ``outlier_reason``, counted in the statistics); a call whose launches
        lost their device records is not (its idle would be the missing records')."""
        return not self.cold and not self.launches_without_work


@dataclass(frozen=True)
class CallKind:
    """Calls of one kind (frames of one name, or one range series)."""

    name: str
    count: int
    warm_count: int
    stats: dict[str, Stats]  # over the kind's warm calls
    api_sync: Stats


@dataclass(frozen=True)
class CallsSummary:
    source: CallsSource
    pattern: str | None
    calls: list[Call]
    stats: dict[str, Stats]  # over warm calls
    category_stats: dict[str, Stats]  # per host category, over warm calls
    warm_count: int
    cold_indices: list[int] = field(default_factory=list)
    outlier_indices: list[int] = field(default_factory=list)
    how: str = ""
    kinds: list[CallKind] = field(default_factory=list)
    # other numbered series beside the chosen one: (pattern, calls, --calls regex)
    others: tuple[tuple[str, int, str], ...] = ()
    # ``--calls`` matches on other threads than the calls', left out: (thread, its
    # ``--thread`` PID/TID, calls)
    elsewhere: tuple[tuple[str, str, int], ...] = ()
    api_sync: Stats = field(default_factory=lambda: summarize([]))
    # per call (by index): the end of the last device work it launched, None for none
    kernel_end_ns: list[int | None] = field(default_factory=list)
    # call index -> why it is cold / an outlier, as figures (the report words them)
    cold_causes: dict[int, Cause] = field(default_factory=dict)
    outlier_causes: dict[int, Cause] = field(default_factory=dict)
    # the calls dominated by the profiler's start-up (``startup_calls``): cold, and never
    # the typical call, even where no warm call remains
    startup: tuple[int, ...] = ()

    @property
    def warm(self) -> list[Call]:
        return warm_calls(self.calls)

    @property
    def typical(self) -> Call | None:
        return typical(self.calls, self.startup)


def warm_calls(calls: Sequence[Call]) -> list[Call]:
    """The calls the statistics are over: every call that is neither cold nor incomplete
    (outliers included), or every call where none is. The one rule explain and ``diff``
    share."""
    return [c for c in calls if c.warm] or list(calls)


def _candidates(calls: Sequence[Call], startup: Collection[int]) -> list[Call]:
    """The calls a typical call is chosen from: the warm calls (``warm_calls``, every call
    where none is warm) less the start-up calls, which stand for no later call."""
    return [c for c in warm_calls(calls) if c.index not in startup]


def dominant_kind(calls: Sequence[Call], startup: Collection[int] = ()) -> str | None:
    """The kind whose warm calls hold the most wall time (more warm calls, then first
    appearance, on a tie): what "a typical call" of a loop of two ops stands for. The
    start-up calls (``CallsSummary.startup``) count for no kind."""
    total: dict[str, list[int]] = {}
    for c in _candidates(calls, startup):
        t = total.setdefault(c.kind, [0, 0])
        t[0] += c.api_ns
        t[1] += 1
    if not total:
        return None
    order = list(total)
    return max(order, key=lambda k: (total[k][0], total[k][1], -order.index(k)))


def typical(calls: Sequence[Call], startup: Collection[int] = ()) -> Call | None:
    """The typical call: one real warm call of the dominant kind, the one whose wall time
    is nearest its kind's p50 (lowest index on a tie). Every figure said of "a typical
    call" is this call's own: a share of one call's figure over another's (a kernel p50
    over a wall-time p50 of calls of two kinds) describes no call that ran. A start-up
    call (``startup``) is never it: None where nothing else remains."""
    kind = dominant_kind(calls, startup)
    mine = [c for c in _candidates(calls, startup) if c.kind == kind]
    if not mine:
        return None
    p50 = summarize([c.api_ns for c in mine]).p50 or 0
    return min(mine, key=lambda c: (abs(c.api_ns - p50), c.index))


def startup_calls(trace: Trace, calls: Sequence[Call], l_rows: np.ndarray,
                  lo: np.ndarray, hi: np.ndarray) -> dict[int, ProfilerStartup]:
    """The call holding the trace's first launch (``l_rows`` sorted by start; call ``i``
    holds ``l_rows[lo[i]:hi[i]]``), where that launch is profiler start-up: its time
    before its device work began (its whole duration where none is linked) over
    ``STARTUP_SHARE`` of the call's wall time and over ``STARTUP_LAUNCH_RATIO`` times the
    median duration of the trace's other launches. Evidence in the trace, not a name: the
    first launch of a process creates the CUDA context and loads the module, hundreds of
    milliseconds a later call never pays. The time before its device work, not its
    duration: a blocking copy's launch lasts as long as the copy it waits for (a first
    call that copies 3.5 ms of input is busy, not starting up), and a first call long for
    its device work or host code has a short first launch."""
    if l_rows.size < 2:
        return {}
    s = trace.slices
    row = int(l_rows[0])
    st, en = int(s.start[row]), int(s.end[row])
    work = trace.launch_to_work.get(row, ())
    began = min((int(s.start[w]) for w in work), default=en)
    first = max(0, min(en, began) - st)
    dur = s.end[l_rows[1:]] - s.start[l_rows[1:]]
    others = median_of_array(dur)
    if first <= STARTUP_LAUNCH_RATIO * others:
        return {}
    for c in calls:
        if lo[c.index] == 0 < hi[c.index] and first > STARTUP_SHARE * c.api_ns:
            return {c.index: ProfilerStartup(first, c.api_ns, others, linked=bool(work))}
    return {}


def first_use_calls(trace: Trace, calls: Sequence[Call], l_rows: np.ndarray, lw: LaunchWork,
                    lo: np.ndarray, hi: np.ndarray, busy: intervals.Set, skip: Collection[int]
                    ) -> dict[int, FirstUse]:
    """The calls (other than ``skip``) dominated by first uses. A launch is a first use
    when its kernel (its first device record's name) was not launched before in the trace,
    is launched again later, and this launch's time before its device work began (as
    ``startup_calls`` reads it) while the device ran nothing (``busy``: a blocking copy
    queued behind 493 ms of kernels waits for them, which is no set-up of its own) is over
    ``STARTUP_LAUNCH_RATIO`` times the median of the later launches' and times the median
    duration of all the trace's launches (a few microseconds over later launches that
    never wait is no evidence). A call is cold when its first-use launches took more than
    ``STARTUP_SHARE`` of its wall time beyond what the same kernels' later launches take.
    Evidence in the trace, not a name: a kernel's first launch loads its module (lazy
    loading) or creates a library handle, milliseconds that its later launches, in later
    calls of any kind, never pay; a call of a kind of its own has no others of its kind
    to be slow against, and such a call stood as the typical call."""
    s = trace.slices
    pos = np.flatnonzero(lw.linked)  # launch positions with device work, in start order
    if pos.size < 2 or not calls:
        return {}
    row = l_rows[pos]
    st = s.start[row]
    before = np.maximum(0, np.minimum(s.end[row], lw.min_start[pos]) - st)
    before = before - intervals.overlap(busy, st, st + before)
    kernel = s.name[lw.rows[lw.first[pos]]].astype(np.int64)
    order = np.argsort(kernel, kind="stable")  # by kernel, then launch order
    k_sorted = kernel[order]
    heads = np.flatnonzero(np.append(True, k_sorted[1:] != k_sorted[:-1]))
    later = np.ones(pos.size, bool)
    later[order[heads]] = False
    if not later.any():
        return {}
    keys, med = medians_by_group(kernel[later], before[later])
    firsts = order[heads]  # each kernel's first launch (index into ``pos``)
    at = np.searchsorted(keys, kernel[firsts])
    again = at < keys.size
    again[again] = keys[at[again]] == kernel[firsts[again]]
    f, f_med = firsts[again], med[at[again]]
    typical_launch = median_of_array(s.end[l_rows] - s.start[l_rows])
    use = before[f] > STARTUP_LAUNCH_RATIO * np.maximum(f_med, typical_launch)
    f, f_med = f[use], f_med[use]
    if not f.size:
        return {}
    by_pos = np.argsort(pos[f], kind="stable")
    f_pos, f_before, f_med = pos[f][by_pos], before[f][by_pos], f_med[by_pos]
    c_before = np.append(0, np.cumsum(f_before))
    c_med = np.append(0, np.cumsum(f_med))
    # each call's first uses, all calls at once (a search per call was most of this rule
    # on a trace of 6,000 calls); the few calls holding one are then judged one by one
    idx = np.fromiter((c.index for c in calls), np.int64, len(calls))
    first_at = np.searchsorted(f_pos, lo[idx])
    end_at = np.searchsorted(f_pos, hi[idx])
    out = {}
    for k in np.flatnonzero(end_at > first_at).tolist():
        c = calls[k]
        if c.index in skip:
            continue
        a, b = int(first_at[k]), int(end_at[k])
        took, usual = int(c_before[b] - c_before[a]), int(c_med[b] - c_med[a])
        if took - usual > STARTUP_SHARE * c.api_ns:
            out[c.index] = FirstUse(b - a, took, usual, c.api_ns)
    return out


def _cold_work(cats: dict[str, int], compile_ranges: int, *, recorded: bool, api_ns: int,
               rules: RuleSet) -> ColdWork | None:
    """Why a call is cold, as figures, or None: compile/import work of a size the rules
    count as evidence (``RuleSet.is_cold_work``: a runtime helper's few microseconds under
    a compile rule's name are not), compile ranges, or capture's record."""
    held = tuple((c, cats[c]) for c in COLD_CATEGORIES if cats.get(c))
    if not rules.is_cold_work(sum(ns for _, ns in held), api_ns):
        held = ()
    if not held and not compile_ranges and not recorded:
        return None
    return ColdWork(held, compile_ranges, recorded)


def _outliers(calls: list[Call]) -> dict[int, ProfilerBurst]:
    """Calls far above the median of the others whose excess is the profiler's work."""
    cand = [c for c in calls if not c.cold]
    if len(cand) < 3:
        return {}
    api = np.asarray([c.metrics["api_ns"] for c in cand], np.int64)
    prof = np.asarray([c.categories.get("profiler", 0) for c in cand], np.int64)
    meds = medians_of_others(api)
    typicals = medians_of_others(prof)
    out = {}
    for j in np.flatnonzero((meds > 0) & (api > OUTLIER_RATIO * meds)).tolist():
        med, typical = int(meds[j]), int(typicals[j])
        excess = int(api[j]) - med
        extra = int(prof[j]) - typical
        if extra >= OUTLIER_EXPLAINED * excess:
            out[cand[j].index] = ProfilerBurst(int(api[j]), med, int(prof[j]), typical)
    return out


def _classed(calls: list[Call], slow: dict[int, Slow], works: dict[int, ColdWork]
             ) -> tuple[dict[int, Cause], dict[int, Cause]]:
    """The slow calls' classes set on ``calls`` (in place), and why each cold call and
    each outlier is so."""
    cold: dict[int, Cause] = dict(works)
    outlier: dict[int, Cause] = {}
    for i, sl in slow.items():
        calls[i] = replace(calls[i], cold=sl.cold, outlier=sl.outlier)
        if sl.cold_cause is not None:
            cold[i] = sl.cold_cause
        elif not sl.cold:
            cold.pop(i, None)
        if sl.outlier_cause is not None:
            outlier[i] = sl.outlier_cause
    return cold, outlier


def _cold_and_outliers(trace: Trace, calls: list[Call], l_rows: np.ndarray, lw: LaunchWork,
                       lo: np.ndarray, hi: np.ndarray, busy: intervals.Set,
                       works: dict[int, ColdWork], lane: int | None = None
                       ) -> tuple[dict[int, ProfilerStartup], dict[int, Cause], dict[int, Cause]]:
    """The calls' cold and outlier classes set on ``calls`` (in place): the start-up
    call's, the first-use calls', then the slow calls'; with the start-up calls and why
    each cold call and each outlier is so. ``lane``: the host thread the calls are on."""
    # the start-up call is cold before the slow calls are classed: it is no call the
    # others of its kind are compared with
    startup = startup_calls(trace, calls, l_rows, lo, hi)
    # so are the calls dominated by first uses (their compile work, where they have it,
    # stays their reason)
    first_use = first_use_calls(trace, calls, l_rows, lw, lo, hi, busy,
                                set(startup) | set(works))
    early: dict[int, Cause] = {**first_use, **startup}
    for i in early:
        calls[i] = replace(calls[i], cold=True)
    slow = classify_slow(trace, calls, _outliers(calls), works, lane)  # analyses/slow_calls.py
    cold_causes, outlier_causes = _classed(calls, slow, works)
    for i, cause in early.items():  # start-up or first use is why, whatever else it is slow for
        calls[i] = replace(calls[i], cold=True, outlier=False)
        cold_causes[i] = cause
        outlier_causes.pop(i, None)
    return startup, cold_causes, outlier_causes


def _kind_stats(calls: list[Call]) -> tuple[dict[str, Stats], Stats]:
    warm = warm_calls(calls)
    return ({m: summarize([c.metrics[m] for c in warm]) for m in METRICS},
            summarize([c.api_sync_ns for c in warm]))


@dataclass(frozen=True)
class _Metrics:
    """The launch and device-work figures of every call, as columns (``None`` where a
    call has none: ``has_*`` say which), computed for all calls at once."""

    launches: np.ndarray  # launches in the call, any thread
    work: np.ndarray  # device work rows they launched
    has_mine: np.ndarray  # the call has a launch on the attributed thread
    pre: np.ndarray
    api_time: np.ndarray
    has_latency: np.ndarray
    latency: np.ndarray
    kernel: np.ndarray
    kernel_only: np.ndarray
    copy: np.ndarray
    k_end: np.ndarray
    empty: np.ndarray  # launches with no device record (where one was due)


def _first_of_group(group: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Whether each of ``range(n)`` occurs in sorted ``group``, and where it first does."""
    first = np.searchsorted(group, np.arange(n), side="left")
    has = first < group.size
    has[has] = group[first[has]] == np.flatnonzero(has)
    return has, np.minimum(first, max(group.size - 1, 0))


def _unlinked_in_calls(trace: Trace, unlinked: np.ndarray, c_st: np.ndarray,
                      c_en: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(call, row) for each device work row with no launch record that starts inside a
    call: no launch says whose it is, and the call running when it started is the one
    place it can belong. Left out, a trace whose profiler dropped correlations (hundreds
    of rows on ROCm) had per-call device work 43% down where device busy moved 6%."""
    if unlinked.size == 0 or c_st.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    u_st = trace.slices.start[unlinked]
    order = np.argsort(c_st, kind="stable")
    pos = np.searchsorted(c_st[order], u_st, side="right") - 1
    ok = pos >= 0
    cand = order[np.maximum(pos, 0)]
    ok &= u_st < c_en[cand]
    return cand[ok], unlinked[ok]


def _all_metrics(trace: Trace, l_rows: np.ndarray, lw: LaunchWork, lo: np.ndarray,
                 hi: np.ndarray, c_st: np.ndarray, own_lane: int | None, kernel_cat: int,
                 unlinked: tuple[np.ndarray, np.ndarray] | None = None,
                 no_record: np.ndarray | None = None) -> _Metrics:
    """Each call's figures from the launches in it (``l_rows[lo:hi]``, on any thread: its
    device work) and the device work they launched, with the device work no launch
    record claims that started inside it (``unlinked``: (call, row)); host figures are
    the attributed thread's launches, like the categories beside them. Unions are taken
    per call in one pass over all of them (``intervals.union_length_by_group``)."""
    s = trace.slices
    n = c_st.size
    w_count, w_rows, w_first = lw.count, lw.rows, lw.first
    w_min_start, linked = lw.min_start, lw.linked

    call, pos = intervals.expand_ranges(lo, hi)  # (call, launch position) for every launch in a call
    n_launch = np.bincount(call, minlength=n)
    rows = l_rows[pos]
    mine = np.ones(call.size, bool) if own_lane is None else s.lane[rows] == own_lane
    m_call, m_rows, m_pos = call[mine], rows[mine], pos[mine]
    has_mine, m_first = _first_of_group(m_call, n)
    pre = np.where(has_mine, s.start[m_rows[m_first]] - c_st if m_rows.size else 0, 0)
    api_time = intervals.union_length_by_group(m_call, s.start[m_rows], s.end[m_rows], n)
    lk = linked[m_pos]
    has_latency, l_first = _first_of_group(m_call[lk], n)
    latency = np.zeros(n, np.int64)
    if lk.any():
        lat_pos = m_pos[lk][l_first]
        latency = w_min_start[lat_pos] - s.start[l_rows[lat_pos]]
        # device work before its launch is impossible (model.py says so): no latency
        has_latency &= latency >= 0

    wc_call, wc_k = intervals.expand_ranges(w_first[pos], w_first[pos] + w_count[pos])
    w_call, work = call[wc_call], w_rows[wc_k]
    if unlinked is not None and unlinked[0].size:
        w_call = np.concatenate([w_call, unlinked[0]])
        work = np.concatenate([work, unlinked[1]])
    n_work = np.bincount(w_call, minlength=n)
    w_st, w_en = s.start[work], s.end[work]
    is_k = s.cat[work] == kernel_cat
    kernel = intervals.union_length_by_group(w_call, w_st, w_en, n)
    kernel_only = intervals.union_length_by_group(w_call[is_k], w_st[is_k], w_en[is_k], n)
    copy = intervals.union_length_by_group(w_call[~is_k], w_st[~is_k], w_en[~is_k], n)
    k_end = np.full(n, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(k_end, w_call, w_en)
    due = w_count[pos] == 0
    if no_record is not None and no_record.size:
        due &= ~no_record[pos]
    empty = np.bincount(call[due], minlength=n)
    return _Metrics(n_launch, n_work, has_mine, pre, api_time, has_latency, latency,
                    kernel, kernel_only, copy, k_end, empty)


def _call_metrics(m: dict[str, list], i: int, st: int, en: int, busy_in: int,
                  cats: dict[str, int]) -> tuple[dict[str, int | None], int | None]:
    """Call ``i``'s metrics and the end of its last device work, from the columns
    (``_Metrics``'s fields as lists)."""
    mine, work = bool(m["has_mine"][i]), bool(m["work"][i])
    metrics = {
        "api_ns": en - st,
        "pre_launch_ns": m["pre"][i] if mine else None,
        "launch_api_ns": m["api_time"][i] if mine else None,
        "launch_latency_ns": m["latency"][i] if work and m["has_latency"][i] else None,
        "kernel_ns": m["kernel"][i] if work else None,
        "kernel_only_ns": m["kernel_only"][i] if work else None,
        "copy_ns": m["copy"][i] if work else None,
        "sync_ns": cats.get("sync", 0),
        "device_busy_ns": busy_in,
        "host_overhead_ns": int(en - st - busy_in),
    }
    return metrics, m["k_end"][i] if work else None


def _kinds(calls: list[Call]) -> list[CallKind]:
    """The calls of each kind, in order of first appearance, with their own statistics."""
    by_kind: dict[str, list[Call]] = {}
    for c in calls:
        by_kind.setdefault(c.kind, []).append(c)
    kinds = []
    for k, mine_k in by_kind.items():
        k_stats, k_sync = _kind_stats(mine_k)
        kinds.append(CallKind(k, len(mine_k), sum(1 for c in mine_k if c.warm), k_stats, k_sync))
    return kinds


def _compile_ranges_starting_in(trace: Trace, c_st: np.ndarray, c_en: np.ndarray) -> np.ndarray:
    """Per call, the compile ranges (user annotations named like one) starting inside it."""
    s = trace.slices
    ua = trace.rows_of_cats({"user_annotation"})
    ua = ua[[bool(COMPILE_RANGE.search(trace.names[int(c)])) for c in s.name[ua].tolist()]] \
        if ua.size else ua
    ua_st = np.sort(s.start[ua])
    return np.searchsorted(ua_st, c_en) - np.searchsorted(ua_st, c_st)


def _categories_per_call(cat_names: Sequence[str], cat_table: np.ndarray
                         ) -> list[dict[str, int]]:
    """The categories present in each call with their ns, from the (category, call) table:
    only the non-zero cells are read."""
    per_call: list[dict[str, int]] = [{} for _ in range(cat_table.shape[1])]
    nz_call, nz_cat = np.nonzero(cat_table.T)
    for k, i, v in zip(nz_call.tolist(), nz_cat.tolist(), cat_table[nz_cat, nz_call].tolist(),
                       strict=True):
        per_call[k][cat_names[i]] = v
    return per_call


def analyze_calls(trace: Trace, window: Window, timeline: HostTimeline, launches: LaunchSummary,
                  busy: intervals.Set, regex: str | None, rules: RuleSet | None = None,
                  depth: int = 1) -> CallsSummary:
    from traceview.rules import load_rules

    s = trace.slices
    rules = rules or load_rules()
    found: FoundCalls = find_calls(trace, window, timeline, launches, rules, regex, depth)
    spans = found.spans
    if not spans:
        return CallsSummary(found.source, None, [], {m: summarize([]) for m in METRICS}, {}, 0,
                            how=found.how)

    c_st = np.asarray([sp.start_ns for sp in spans], np.int64)
    c_en = np.asarray([sp.end_ns for sp in spans], np.int64)
    busy_in = intervals.overlap(busy, c_st, c_en)
    # every category at once, a block of segments at a time (a cold compile's timeline
    # has millions of segments: a copy of one category's was this stage's peak memory)
    cat_table = timeline.overlap_by_category(c_st, c_en)  # (category, call)
    l_rows = launches.rows
    l_st = s.start[l_rows]
    lo = np.searchsorted(l_st, c_st, side="left")
    hi = np.searchsorted(l_st, c_en, side="left")
    n_compile = _compile_ranges_starting_in(trace, c_st, c_en)

    kernel_cat = trace.cat_code("kernel")
    calls = []
    works: dict[int, ColdWork] = {}
    kernel_end: list[int | None] = []  # per call: the end of the last device work it launched
    own_lane = timeline.lane.index if timeline.lane is not None else None
    # the columns as lists of Python ints: read once per call below (a numpy scalar read
    # costs several times a list's)
    no_record = no_record_due(trace, l_rows)
    lw = launch_work(trace, l_rows)
    cols = _all_metrics(trace, l_rows, lw, lo, hi, c_st, own_lane, kernel_cat,
                        _unlinked_in_calls(trace, launches.unlinked_rows, c_st, c_en),
                        no_record)
    m = {f.name: getattr(cols, f.name).tolist() for f in fields(cols)}
    per_call = _categories_per_call(timeline.categories, cat_table)
    busy_l, compile_l = busy_in.tolist(), n_compile.tolist()
    for i, sp in enumerate(spans):
        st, en = sp.start_ns, sp.end_ns
        cats = per_call[i]
        metrics, k_end = _call_metrics(m, i, st, en, busy_l[i], cats)
        work = _cold_work(cats, compile_l[i], recorded=sp.recorded_cold, api_ns=en - st,
                          rules=rules)
        if work is not None:
            works[i] = work
        call_sync = sp.sync_end_ns - st if sp.sync_end_ns is not None else None
        calls.append(Call(i, sp.name, st, en, work is not None, m["launches"][i],
                          m["work"][i], metrics, cats, kind=sp.kind, api_sync_ns=call_sync,
                          launches_without_work=m["empty"][i]))
        kernel_end.append(k_end)
    startup, cold_causes, outlier_causes = _cold_and_outliers(trace, calls, l_rows, lw, lo, hi,
                                                              busy, works, own_lane)
    warm = warm_calls(calls)
    stats, api_sync = _kind_stats(calls)
    held = {c for call in warm for c, v in call.categories.items() if v}
    category_stats = {c: summarize([call.categories.get(c, 0) for call in warm])
                      for c in timeline.categories if c in held}
    kinds = _kinds(calls)
    return CallsSummary(found.source, found.pattern, calls, stats, category_stats,
                        warm_count=sum(1 for c in calls if c.warm),
                        cold_indices=[c.index for c in calls if c.cold],
                        outlier_indices=[c.index for c in calls if c.outlier],
                        how=found.how, kinds=kinds, others=found.others,
                        elsewhere=found.elsewhere,
                        api_sync=api_sync, kernel_end_ns=kernel_end,
                        cold_causes=cold_causes,
                        outlier_causes=outlier_causes, startup=tuple(sorted(startup)))
