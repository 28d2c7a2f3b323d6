"""Slow calls: which calls are far slower than the others of their kind, what holds the
extra time, and whether that makes them cold or outliers.

A call is **slow** when its wall time is over ``SLOW_RATIO`` times the median of the
other warm-candidate calls of its kind (the prefill of a ``generate()`` is compared with
prefills, not with decode steps). A slow call's **excess** (its time less that median)
is explained by what holds it: the CPU op or Python frame, on any host thread inside the
call, whose time in this call exceeds its median over the other calls by the most while
the smallest of those holding at least ``HOLDER_SHARE`` of the excess (the innermost
one: the frames around it hold the same excess and more). Where no one op or frame
does, the host category whose time grew most says where it went.

Classing, with that reason:

* a call already cold (compile, imports, Dynamo ranges, recorded cold) stays cold; when
  it is slow its reason leads with what holds the excess: a cuDNN plan built inside
  ``aten::_cudnn_attention_forward`` explains 70 ms, where the compile category holds
  44 us;
* the profiler's own work explaining the excess (``calls._outliers``) -> **outlier**;
* the first call of its kind over ``FIRST_CALL_RATIO`` times the median -> **cold**
  (first-use work: lazy initialisation, handles, allocator growth, caches); it is never
  counted warm. Between ``SLOW_RATIO`` and ``FIRST_CALL_RATIO`` a first call stays warm:
  the first call recorded after the profiler starts is often 2-4x the median with warm
  caches (docs/findings.md, "5x first call");
* any later slow call -> **outlier**.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from traceview import intervals
from traceview.stats import median
from traceview.units import fmt_ns

if TYPE_CHECKING:
    from traceview.model import Trace


class SlowCandidate(Protocol):
    """What the classifier reads of a call (``analyses.calls.Call``, which imports this
    module: named by its shape here, not imported)."""

    @property
    def index(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def start_ns(self) -> int: ...
    @property
    def end_ns(self) -> int: ...
    @property
    def cold(self) -> bool: ...
    @property
    def cold_reason(self) -> str | None: ...
    @property
    def categories(self) -> dict[str, int]: ...
    @property
    def api_ns(self) -> int: ...


@dataclass(frozen=True)
class Slow:
    """A slow call's class and reason: the fields of ``Call`` it replaces."""

    cold: bool
    cold_reason: str | None
    outlier_reason: str | None

SLOW_RATIO = 2.0
FIRST_CALL_RATIO = 5.0  # the cold-path finding's COLD_FIRST_CALL_RATIO
HOLDER_SHARE = 0.5
# the typical time of an op in a kind is its median over at most this many other calls
# (the nearest by index): a long loop needs no pass over every call to say what is usual
TYPICAL_CALLS = 16
HOLDER_CATS = ("cpu_op", "python_function")


@dataclass(frozen=True)
class Holder:
    """What holds a slow call's excess."""

    what: str  # the op or frame name, or "host: <category>"
    ns: int  # its time in the call less its typical time
    excess_ns: int  # the call's wall time less the median of the others

    def words(self) -> str:
        if self.ns > self.excess_ns:
            # Its growth is measured against nearby calls, the excess against the median
            # of all: the rest of the call can be quicker than usual, and "holds 129 us
            # of the 114 us excess" would contradict itself.
            return (f"{self.what} took {fmt_ns(self.ns)} more than in nearby calls, more than "
                    f"the call's whole {fmt_ns(self.excess_ns)} excess (the rest of it was "
                    f"quicker than usual)")
        return f"{self.what} holds {fmt_ns(self.ns)} of the {fmt_ns(self.excess_ns)} excess"


class _Ops:
    """CPU ops and Python frames on every host thread, sorted by start."""

    def __init__(self, trace: Trace) -> None:
        s = trace.slices
        codes = [trace.cat_code(c) for c in HOLDER_CATS]
        rows = np.flatnonzero(np.isin(s.cat, [c for c in codes if c >= 0]))
        self.rows = rows[np.argsort(s.start[rows], kind="stable")]
        self.st = s.start[self.rows]
        self.trace = trace

    def inside(self, a: int, b: int, floor: int = 0,
               only: set[int] | None = None) -> dict[int, int]:
        """name code -> time of that name inside [a, b) (nested repeats counted once);
        the call's own frame (spanning all of it) left out. Names whose summed time is
        under ``floor`` (their union can only be less), or not in ``only``, are skipped:
        a cold compile's call holds a million frames of thousands of names."""
        s = self.trace.slices
        lo = int(np.searchsorted(self.st, a, side="left"))
        hi = int(np.searchsorted(self.st, b, side="left"))
        r = self.rows[lo:hi]
        r = r[~((s.start[r] == a) & (s.end[r] >= b))]
        if only is not None:
            r = r[np.isin(s.name[r], list(only))]
        if r.size == 0:
            return {}
        en = np.minimum(s.end[r], b)
        if floor > 0:
            names = s.name[r]
            total = np.bincount(names, weights=en - s.start[r])
            r = r[total[names] >= floor]
            if r.size == 0:
                return {}
            en = np.minimum(s.end[r], b)
        names = s.name[r]
        st = s.start[r]
        out = {}
        order = np.argsort(names, kind="stable")
        names, st, en = names[order], st[order], en[order]
        cut = np.flatnonzero(np.diff(names)) + 1
        for a0, a1 in zip(np.r_[0, cut].tolist(), np.r_[cut, names.size].tolist(), strict=True):
            out[int(names[a0])] = intervals.length(intervals.union(st[a0:a1], en[a0:a1]))
        return out


def holder(trace: Trace, call: SlowCandidate, others: list[SlowCandidate],
           ops: _Ops | None = None,
           med: int | None = None) -> Holder | None:
    """What holds ``call``'s excess over the median of ``others`` (in index order; None:
    no excess)."""
    if not others:
        return None
    med = int(median([c.api_ns for c in others])) if med is None else med
    excess = call.api_ns - med
    if excess <= 0:
        return None
    ops = ops or _Ops(trace)
    at = bisect.bisect_left([c.index for c in others], call.index)
    window = others[max(0, at - TYPICAL_CALLS):at + TYPICAL_CALLS]
    near = sorted(window, key=lambda c: (abs(c.index - call.index), c.index))[:TYPICAL_CALLS]
    need = int(HOLDER_SHARE * excess)
    mine = ops.inside(call.start_ns, call.end_ns, floor=need)
    theirs = [ops.inside(c.start_ns, c.end_ns, only=set(mine)) for c in near] if mine else []
    best: tuple[int, str] | None = None
    for code, ns in mine.items():
        extra = ns - int(median([t.get(code, 0) for t in theirs]))
        if extra >= HOLDER_SHARE * excess:
            name = trace.names[code]
            if best is None or (extra, name) < best:
                best = (extra, name)
    if best is not None:
        return Holder(best[1], best[0], excess)
    cats = {k for c in [call, *near] for k in c.categories}
    grew = {k: call.categories.get(k, 0) - int(median([c.categories.get(k, 0) for c in near]))
            for k in cats}
    if not grew:
        return None
    cat = max(sorted(grew), key=lambda k: grew[k])
    return Holder(f"host: {cat}", grew[cat], excess) if grew[cat] > 0 else None


def _median_without(sorted_api: np.ndarray, drop: int | None) -> int | None:
    """``stats.median`` of the sorted values less one occurrence of ``drop`` (None: less
    nothing), without building the list: a loop of 10,000 calls asks this 10,000 times.
    None when fewer than two values remain."""
    n = sorted_api.size - (drop is not None)
    if n < 2:
        return None
    k = max(1, math.ceil(n / 2)) - 1  # the nearest-rank p50's index among the n
    if drop is None:
        return int(sorted_api[k])
    p = int(np.searchsorted(sorted_api, drop, side="left"))
    return int(sorted_api[k] if k < p else sorted_api[k + 1])


def classify(trace: Trace, calls: Sequence[SlowCandidate],
             profiler_outliers: dict[int, str]) -> dict[int, Slow]:
    """Call index -> its class and reason, for the slow calls (and the profiler's
    outliers); the calls not named stay as they are."""
    by_kind: dict[str, list[SlowCandidate]] = {}
    for c in calls:
        by_kind.setdefault(c.kind, []).append(c)
    ops: _Ops | None = None
    out: dict[int, Slow] = {}
    for mine in by_kind.values():
        plain = [c for c in mine if not c.cold]
        api = np.sort(np.asarray([c.api_ns for c in plain], np.int64))
        for k, c in enumerate(mine):
            if c.index in profiler_outliers:
                out[c.index] = Slow(c.cold, c.cold_reason, profiler_outliers[c.index])
                continue
            med = _median_without(api, None if c.cold else c.api_ns)
            if med is None or med <= 0 or c.api_ns <= SLOW_RATIO * med:
                continue
            first = k == 0
            if not c.cold and first and c.api_ns <= FIRST_CALL_RATIO * med:
                continue
            others = [o for o in plain if o.index != c.index]
            ops = ops or _Ops(trace)
            h = holder(trace, c, others, ops, med)
            held = f"; {h.words()}" if h else ""
            times = f"{fmt_ns(c.api_ns)}, {c.api_ns / med:.1f}x the median of the others " \
                    f"({fmt_ns(med)})"
            if c.cold:
                out[c.index] = Slow(cold=True, cold_reason=f"{times}{held}; {c.cold_reason}",
                                    outlier_reason=None)
            elif first:
                out[c.index] = Slow(cold=True, cold_reason=f"first call of its kind, {times}{held}",
                                    outlier_reason=None)
            else:
                out[c.index] = Slow(cold=False, cold_reason=None, outlier_reason=f"{times}{held}")
    return out
