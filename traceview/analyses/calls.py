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
  synchronize); the name is kept for that meaning, and the two parts stand beside it:
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
``compile``), imports (``import``), Dynamo/Inductor compiler ranges, or when capture
recorded it as cold; each cold call says why. Calls far slower than the others of their
kind are classed cold or outlier by ``analyses.slow_calls``, with what holds their excess
(the profiler's own work: ``_outliers``). Both are left out of the warm statistics (when
warm calls remain).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from traceview import intervals
from traceview.analyses.callfind import CallsSource, FoundCalls, find_calls
from traceview.analyses.host import HostTimeline
from traceview.analyses.launches import LaunchSummary
from traceview.analyses.slow_calls import classify as classify_slow
from traceview.analyses.window import Window
from traceview.model import Trace
from traceview.rules import RuleSet
from traceview.stats import Stats, median, summarize
from traceview.units import fmt_ns

METRICS = ("api_ns", "pre_launch_ns", "launch_api_ns", "launch_latency_ns", "kernel_ns",
           "kernel_only_ns", "copy_ns", "sync_ns", "device_busy_ns", "host_overhead_ns")
# Host categories whose presence makes a call cold, with what they mean.
COLD_CATEGORIES = {"compile": "compile/autotune/module-load work", "import": "imports"}
# Dynamo/Inductor write these ranges around their compiler passes.
COMPILE_RANGE = re.compile(r"compile_id=\d+/\d+|\(dynamo_timed\)$")
# A call this many times the median of the other calls is an outlier when the
# profiler's own work explains at least OUTLIER_EXPLAINED of the excess.
OUTLIER_RATIO = 2.0
OUTLIER_EXPLAINED = 0.5


@dataclass(frozen=True)
class Call:
    index: int
    name: str
    start_ns: int
    end_ns: int
    launches: int
    kernels: int
    cold: bool
    metrics: dict[str, int | None]
    categories: dict[str, int]  # host category -> ns inside the call
    kernel_end_ns: int | None  # end of the last device work the call launched
    kind: str = ""
    cold_reason: str | None = None
    outlier_reason: str | None = None
    api_sync_ns: int | None = None  # call + the synchronize right after it

    @property
    def outlier(self) -> bool:
        return self.outlier_reason is not None

    @property
    def api_ns(self) -> int:
        """The call's wall time: ``metrics`` values are ``int | None`` because launch
        latency can be missing, but every call has ``api_ns`` (its own span)."""
        api = self.metrics["api_ns"]
        assert api is not None
        return api

    @property
    def warm(self) -> bool:
        return not self.cold and not self.outlier


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
    description: str = ""
    how: str = ""
    kinds: list[CallKind] = field(default_factory=list)
    api_sync: Stats = field(default_factory=lambda: summarize([]))

    @property
    def warm(self) -> list[Call]:
        return [c for c in self.calls if c.warm] or self.calls


def _cold_reason(cats: dict[str, int], compile_ranges: int, *, recorded: bool) -> str | None:
    why = [f"{what} {fmt_ns(cats[c])}" for c, what in COLD_CATEGORIES.items() if cats.get(c)]
    if compile_ranges:
        why.append(f"{compile_ranges} Dynamo/Inductor compile range(s)")
    if recorded:
        why.append("recorded cold by traceview capture")
    return "; ".join(why) or None


def _outliers(calls: list[Call]) -> dict[int, str]:
    """Calls far above the median of the others whose excess is the profiler's work."""
    cand = [c for c in calls if not c.cold]
    if len(cand) < 3:
        return {}
    api = np.asarray([c.metrics["api_ns"] for c in cand], np.int64)
    prof = np.asarray([c.categories.get("profiler", 0) for c in cand], np.int64)
    out = {}
    for j, c in enumerate(cand):
        others = np.delete(api, j)
        med = int(median(others.tolist()))
        excess = int(api[j]) - med
        if med <= 0 or api[j] <= OUTLIER_RATIO * med:
            continue
        typical = int(median(np.delete(prof, j).tolist()))
        extra = int(prof[j]) - typical
        if extra >= OUTLIER_EXPLAINED * excess:
            out[c.index] = (f"{fmt_ns(int(api[j]))} against {fmt_ns(med)} for the others: "
                            f"profiler work {fmt_ns(int(prof[j]))} inside (typically "
                            f"{fmt_ns(typical)}), the profiler's buffer set-up")
    return out


def _kind_stats(calls: list[Call]) -> tuple[dict[str, Stats], Stats]:
    warm = [c for c in calls if c.warm] or calls
    return ({m: summarize([c.metrics[m] for c in warm]) for m in METRICS},
            summarize([c.api_sync_ns for c in warm]))


def _call_metrics(trace: Trace, st: int, en: int, every: np.ndarray, own_lane: int | None,
                  busy_in: int, cats: dict[str, int],
                  kernel_cat: int) -> tuple[dict[str, int | None], list[int], int | None]:
    """One call's metrics from the launches in it (``every``, on any thread: its device
    work), its device work rows and the end of its last device work."""
    s = trace.slices
    work = [w for r in every.tolist() for w in trace.launch_to_work.get(r, ())]
    # host figures are the attributed thread's, like the categories beside them
    mine = every if own_lane is None else every[s.lane[every] == own_lane]
    pre = int(s.start[mine[0]] - st) if mine.size else None
    api_time = intervals.length(intervals.union(s.start[mine], s.end[mine])) if mine.size else None
    latency = kernel = kernel_only = copy = k_end = None
    if work:
        w = np.asarray(work)
        kernel = intervals.length(intervals.union(s.start[w], s.end[w]))
        wk, wc = w[s.cat[w] == kernel_cat], w[s.cat[w] != kernel_cat]
        kernel_only = intervals.length(intervals.union(s.start[wk], s.end[wk]))
        copy = intervals.length(intervals.union(s.start[wc], s.end[wc]))
        k_end = int(s.end[w].max())
        first_linked = next((r for r in mine.tolist() if trace.launch_to_work.get(r)), None)
        if first_linked is not None:
            latency = int(min(s.start[x] for x in trace.launch_to_work[first_linked])
                          - s.start[first_linked])
    metrics = {
        "api_ns": en - st,
        "pre_launch_ns": pre,
        "launch_api_ns": api_time,
        "launch_latency_ns": latency,
        "kernel_ns": kernel,
        "kernel_only_ns": kernel_only,
        "copy_ns": copy,
        "sync_ns": cats.get("sync", 0),
        "device_busy_ns": busy_in,
        "host_overhead_ns": int(en - st - busy_in),
    }
    return metrics, work, k_end


def _kinds(calls: list[Call]) -> list[CallKind]:
    """The calls of each kind, in order of first appearance, with their own statistics."""
    kinds = []
    for k in dict.fromkeys(c.kind for c in calls):
        mine_k = [c for c in calls if c.kind == k]
        k_stats, k_sync = _kind_stats(mine_k)
        kinds.append(CallKind(k, len(mine_k), sum(1 for c in mine_k if c.warm), k_stats, k_sync))
    return kinds


def analyze_calls(trace: Trace, window: Window, timeline: HostTimeline, launches: LaunchSummary,
                  busy: intervals.Set, regex: str | None, rules: RuleSet | None = None,
                  depth: int = 1) -> CallsSummary:
    from traceview.rules import load_rules

    s = trace.slices
    found: FoundCalls = find_calls(trace, window, timeline, launches,
                                   rules or load_rules(), regex, depth)
    spans = found.spans
    if not spans:
        return CallsSummary(found.source, None, [], {m: summarize([]) for m in METRICS}, {}, 0,
                            description=found.describe(), how=found.how)

    c_st = np.asarray([sp.start_ns for sp in spans], np.int64)
    c_en = np.asarray([sp.end_ns for sp in spans], np.int64)
    busy_in = intervals.overlap(busy, c_st, c_en)
    # a pass over the segments per category that has any (a cold compile's timeline has
    # millions of segments, and most of the categories none)
    present = np.bincount(timeline.seg_cat, minlength=len(timeline.categories)) > 0
    cat_ns = {c: intervals.overlap(timeline.category_set(c), c_st, c_en) if present[k]
              else np.zeros(c_st.size, np.int64) for k, c in enumerate(timeline.categories)}
    l_rows = launches.rows
    l_st = s.start[l_rows]
    lo = np.searchsorted(l_st, c_st, side="left")
    hi = np.searchsorted(l_st, c_en, side="left")
    ua = trace.rows_of_cats({"user_annotation"})
    ua = ua[[bool(COMPILE_RANGE.search(trace.names[int(c)])) for c in s.name[ua].tolist()]] \
        if ua.size else ua
    ua_st = np.sort(s.start[ua])
    n_compile = np.searchsorted(ua_st, c_en) - np.searchsorted(ua_st, c_st)

    kernel_cat = trace.cat_code("kernel")
    calls = []
    own_lane = timeline.lane.index if timeline.lane is not None else None
    for i, sp in enumerate(spans):
        st, en = sp.start_ns, sp.end_ns
        every = l_rows[lo[i]:hi[i]]  # launches in the call on any thread: its device work
        cats = {c: int(v[i]) for c, v in cat_ns.items() if v[i]}
        metrics, work, k_end = _call_metrics(trace, st, en, every, own_lane, int(busy_in[i]),
                                             cats, kernel_cat)
        reason = _cold_reason(cats, int(n_compile[i]), recorded=sp.recorded_cold)
        call_sync = sp.sync_end_ns - st if sp.sync_end_ns is not None else None
        calls.append(Call(i, sp.name, st, en, int(every.size), len(work), reason is not None,
                          metrics, cats, k_end, kind=sp.kind, cold_reason=reason,
                          api_sync_ns=call_sync))
    calls = classify_slow(trace, calls, _outliers(calls))  # analyses/slow_calls.py
    warm = [c for c in calls if c.warm] or calls
    stats, api_sync = _kind_stats(calls)
    category_stats = {c: summarize([call.categories.get(c, 0) for call in warm])
                      for c in timeline.categories
                      if any(call.categories.get(c) for call in warm)}
    kinds = _kinds(calls)
    return CallsSummary(found.source, found.pattern, calls, stats, category_stats,
                        warm_count=sum(1 for c in calls if c.warm),
                        cold_indices=[c.index for c in calls if c.cold],
                        outlier_indices=[c.index for c in calls if c.outlier],
                        description=found.describe(), how=found.how, kinds=kinds,
                        api_sync=api_sync)
