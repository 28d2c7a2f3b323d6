"""Per-call view: one row per call of the operator, and statistics over warm calls.

Calls are user ranges (``record_function``): the most repeated numbered name
(``call_0 .. call_N``, ``ProfilerStep#N``) or those matching ``--calls``. Without user
ranges, each outermost host slice that contains a launch is a call.

For each call, all on the launching thread and in integer ns:

* ``api_ns`` — the call's wall time (what a synchronized CPU timer around it sees);
* ``pre_launch_ns`` — from the call's start to its first launch API call;
* ``launch_api_ns`` — time inside launch API calls;
* ``launch_latency_ns`` — first linked device work start minus its launch start;
* ``kernel_ns`` — union of the device work its launches produced (may end after the
  call when the call does not synchronize);
* ``sync_ns`` — time in synchronization calls;
* ``device_busy_ns`` — time inside the call during which *any* device work ran;
* ``host_overhead_ns`` — ``api_ns - device_busy_ns``: the part of the call during which
  the device had nothing to do. This is the fixed host cost of the API.

The first call, and any call containing compile work, is cold: listed apart and left
out of the statistics (when warm calls remain).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from traceview import intervals
from traceview.analyses.host import HostTimeline
from traceview.analyses.launches import LaunchSummary
from traceview.analyses.window import Window
from traceview.errors import UsageError
from traceview.model import Trace
from traceview.stats import Stats, summarize

METRICS = ("api_ns", "pre_launch_ns", "launch_api_ns", "launch_latency_ns", "kernel_ns",
           "sync_ns", "device_busy_ns", "host_overhead_ns")
_DIGITS = re.compile(r"\d+")


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


@dataclass(frozen=True)
class CallsSummary:
    source: str  # "annotations" | "launches" | "none"
    pattern: str | None
    calls: list[Call]
    stats: dict[str, Stats]  # over warm calls
    category_stats: dict[str, Stats]  # per host category, over warm calls
    warm_count: int
    cold_indices: list[int] = field(default_factory=list)

    @property
    def warm(self) -> list[Call]:
        return [c for c in self.calls if not c.cold] or self.calls


def _annotation_calls(trace: Trace, window: Window, regex: str | None) -> tuple[list[int], str | None]:
    rows = trace.rows_of_cats({"user_annotation"})
    s = trace.slices
    rows = rows[(s.start[rows] >= window.start_ns) & (s.start[rows] < window.end_ns)]
    names = [trace.names[c] for c in s.name[rows].tolist()]
    if regex is not None:
        try:
            pat = re.compile(regex)
        except re.error as exc:
            raise UsageError(f"--calls {regex!r}: bad regular expression: {exc}") from None
        picked = [r for r, n in zip(rows.tolist(), names) if pat.search(n)]
        if not picked:
            raise UsageError(f"--calls {regex!r}: no user range matches")
        return picked, regex
    keys = [_DIGITS.sub("#", n) for n in names]
    counts = Counter(k for k, n in zip(keys, names) if k != n)  # numbered names only
    if not counts:
        return [], None
    durs = s.end[rows] - s.start[rows]

    def rank(item: tuple[str, int]) -> tuple[int, int, str]:
        # most repeated, then the innermost (shortest median); then by name, so that the
        # choice never depends on the order of events in the file
        key, n = item
        med = int(np.median([d for d, k in zip(durs.tolist(), keys) if k == key]))
        return (-n, med, key)

    best, _ = min(counts.items(), key=rank)
    return [r for r, k in zip(rows.tolist(), keys) if k == best], best


def _launch_calls(trace: Trace, timeline: HostTimeline, launches: LaunchSummary) -> list[tuple[int, int, str]]:
    """Outermost host slice around each launch, merged: (start, end, name)."""
    if timeline.rows.size == 0 or launches.count == 0:
        return []
    s = trace.slices
    rows = timeline.rows
    w0, w1 = int(timeline.seg_start[0]), int(timeline.seg_end[-1])
    st, en = np.maximum(s.start[rows], w0), np.minimum(s.end[rows], w1)
    # outermost: not contained in an earlier-starting slice (rows are sorted by start)
    run_end = np.maximum.accumulate(en)
    outer = np.ones(rows.size, dtype=bool)
    outer[1:] = st[1:] >= run_end[:-1]
    o_rows, o_st, o_en = rows[outer], st[outer], run_end[outer]
    l_st = s.start[launches.rows]
    idx = np.searchsorted(o_st, l_st, side="right") - 1
    out = []
    for i in sorted(set(idx[idx >= 0].tolist())):
        out.append((int(o_st[i]), int(o_en[i]), trace.names[int(s.name[o_rows[i]])]))
    return out


def analyze_calls(trace: Trace, window: Window, timeline: HostTimeline, launches: LaunchSummary,
                  busy: intervals.Set, regex: str | None) -> CallsSummary:
    s = trace.slices
    rows, pattern = _annotation_calls(trace, window, regex)
    if rows:
        spans = sorted((int(s.start[r]), int(s.end[r]), trace.names[int(s.name[r])]) for r in rows)
        source = "annotations"
    else:
        spans = _launch_calls(trace, timeline, launches)
        source = "launches" if spans else "none"
    if not spans:
        return CallsSummary(source, None, [], {m: summarize([]) for m in METRICS}, {}, 0)

    c_st = np.asarray([sp[0] for sp in spans], np.int64)
    c_en = np.asarray([sp[1] for sp in spans], np.int64)
    busy_in = intervals.overlap(busy, c_st, c_en)
    cat_ns = {c: intervals.overlap(timeline.category_set(c), c_st, c_en)
              for c in timeline.categories}
    l_rows = launches.rows
    l_st = s.start[l_rows]
    lo = np.searchsorted(l_st, c_st, side="left")
    hi = np.searchsorted(l_st, c_en, side="left")

    calls = []
    for i, (st, en, name) in enumerate(spans):
        mine = l_rows[lo[i]:hi[i]]
        work = [w for r in mine.tolist() for w in trace.launch_to_work.get(r, ())]
        pre = int(s.start[mine[0]] - st) if mine.size else None
        api_time = intervals.length(intervals.union(s.start[mine], s.end[mine])) if mine.size else None
        latency = kernel = k_end = None
        if work:
            w = np.asarray(work)
            kernel = intervals.length(intervals.union(s.start[w], s.end[w]))
            k_end = int(s.end[w].max())
            first_linked = next(r for r in mine.tolist() if trace.launch_to_work.get(r))
            latency = int(min(s.start[x] for x in trace.launch_to_work[first_linked])
                          - s.start[first_linked])
        cats = {c: int(v[i]) for c, v in cat_ns.items() if v[i]}
        metrics = {
            "api_ns": en - st,
            "pre_launch_ns": pre,
            "launch_api_ns": api_time,
            "launch_latency_ns": latency,
            "kernel_ns": kernel,
            "sync_ns": cats.get("sync", 0),
            "device_busy_ns": int(busy_in[i]),
            "host_overhead_ns": int(en - st - busy_in[i]),
        }
        cold = i == 0 or cats.get("compile", 0) > 0
        calls.append(Call(i, name, st, en, int(mine.size), len(work), cold, metrics, cats, k_end))
    warm = [c for c in calls if not c.cold] or calls
    stats = {m: summarize([c.metrics[m] for c in warm]) for m in METRICS}
    category_stats = {c: summarize([call.categories.get(c, 0) for call in warm])
                      for c in timeline.categories
                      if any(call.categories.get(c) for call in warm)}
    return CallsSummary(source, pattern, calls, stats, category_stats,
                        warm_count=sum(1 for c in calls if not c.cold),
                        cold_indices=[c.index for c in calls if c.cold])
