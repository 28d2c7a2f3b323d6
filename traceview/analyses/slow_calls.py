"""Slow calls: which calls are far slower than the others of their kind, what holds the
extra time, and whether that makes them cold or outliers.

A call is **slow** when its wall time is over ``SLOW_RATIO`` times the median of the
other warm-candidate calls of its kind (the prefill of a ``generate()`` is compared with
prefills, not with decode steps). A slow call's **excess** (its time less that median)
is explained by what holds it: the CPU op or Python frame **on the call's own thread**
whose time in this call exceeds its median over the other calls by the most while the
smallest of those holding at least ``HOLDER_SHARE`` of the excess (the innermost one: the
frames around it hold the same excess and more). Where no one op or frame does, the host
category of the call's thread whose time grew most says where it went.

Work on another thread is never what holds the call's excess: it ran beside the call, and
"aten::copy_ holds 142 ms of the 166 ms excess" of a backward node reads as the node's
own work when the main thread ran that copy while the autograd thread sat untraced. A
reader who asks why a call was slow wants the call's own time first; what else ran then
is still a lead (the thread it waited for, the GIL it lost), so where no frame of the
call's thread holds the excess, the frame on another thread that grew most over the
call, by the same rule, is named as **concurrent** (``Concurrent``: "meanwhile python
[23442/23442] ran aten::copy_, 142 ms more than during nearby calls (another thread's
work, not this call's)"), never as held. A call on no known thread looks for its holder
on every thread: it has no thread of its own to prefer.

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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from traceview import intervals
from traceview.model import codes_in
from traceview.stats import median

if TYPE_CHECKING:
    from traceview.model import Trace


class SlowCandidate(Protocol):
    """What the classifier reads of a call (``analyses.calls.Call``, which imports this
    module: named by its shape here, not imported)."""

    @property
    def index(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def start_ns(self) -> int: ...
    @property
    def end_ns(self) -> int: ...
    @property
    def cold(self) -> bool: ...
    @property
    def categories(self) -> dict[str, int]: ...
    @property
    def api_ns(self) -> int: ...


@dataclass(frozen=True)
class ColdWork:
    """Why a call is cold from what it holds: compile/import time by category (``(category,
    ns)``), Dynamo/Inductor compile ranges, capture's record. The words are the report's
    (``report.sentences``)."""

    categories: tuple[tuple[str, int], ...]
    compile_ranges: int
    recorded: bool


@dataclass(frozen=True)
class ProfilerBurst:
    """A call far above the median of the others whose excess the profiler's own work
    explains (``calls._outliers``): its wall and profiler time beside the others' medians."""

    api_ns: int
    median_ns: int
    profiler_ns: int
    typical_profiler_ns: int


@dataclass(frozen=True)
class SlowCall:
    """A call over ``SLOW_RATIO`` times the median of the others of its kind: its wall,
    that median, what holds the excess (None: nothing does), whether it is the first of
    its kind, the call's own cold work where it was already cold, and the work another
    thread ran beside the call where nothing of the call's own thread holds the excess."""

    api_ns: int
    median_ns: int
    holder: Holder | None
    first: bool
    cold_work: ColdWork | None = None
    concurrent: Concurrent | None = None


@dataclass(frozen=True)
class ProfilerStartup:
    """A call dominated by the profiler's start-up: it holds the trace's first launch,
    and that launch's time before its device work began is most of the call's wall time
    and far longer than the trace's other launches (``calls.startup_calls``). Its time is the CUDA context's
    creation and the first launch's set-up, which no later call of any kind pays."""

    launch_ns: int  # the first launch's time before its device work began
    api_ns: int  # the call's wall time
    median_launch_ns: int  # the median duration of the trace's other launches
    # the launch has a device record (without one, ``launch_ns`` is its whole duration)
    linked: bool = True


@dataclass(frozen=True)
class FirstUse:
    """A call dominated by first uses: the launches in it of kernels the trace had not
    launched before, each far slower to reach its device work than the same kernel's
    later launches (``calls.first_use_calls``), took most of the call's wall time. Their
    time is the kernels' first-use set-up (lazy module loading, library handles), which
    later calls launching the same kernels do not pay."""

    launches: int  # the first-use launches in the call
    before_ns: int  # their time before their device work began, summed
    later_ns: int  # the same kernels' later launches' (median) times, summed
    api_ns: int  # the call's wall time

    @property
    def excess_ns(self) -> int:
        return self.before_ns - self.later_ns


Cause = ColdWork | ProfilerBurst | SlowCall | ProfilerStartup | FirstUse


@dataclass(frozen=True)
class Slow:
    """A slow call's class and why: ``Call``'s ``cold`` and ``outlier``, and the causes
    the report words as its ``cold_reason``/``outlier_reason`` (None: unchanged)."""

    cold: bool
    outlier: bool
    cold_cause: Cause | None
    outlier_cause: Cause | None

SLOW_RATIO = 2.0
FIRST_CALL_RATIO = 5.0  # the cold-path finding's COLD_FIRST_CALL_RATIO
HOLDER_SHARE = 0.5
# the typical time of an op in a kind is its median over at most this many other calls
# (the nearest by index): a long loop needs no pass over every call to say what is usual
TYPICAL_CALLS = 16
HOLDER_CATS = ("cpu_op", "python_function")


@dataclass(frozen=True)
class Holder:
    """What holds a slow call's excess: an op or frame of the call's own thread (``lane``;
    None for a call on no known thread, whose ops are looked for on every thread), or a
    host category of the call's thread."""

    what: str  # the op or frame name, or "host: <category>"
    ns: int  # its time in the call less its typical time
    excess_ns: int  # the call's wall time less the median of the others
    lane: int | None = None


@dataclass(frozen=True)
class Concurrent:
    """An op or frame on another host thread that grew over a slow call's span by at least
    ``HOLDER_SHARE`` of its excess, where nothing of the call's own thread does: it ran
    beside the call, and the report names it so, never as the call's own work."""

    lane: int  # the other thread
    what: str
    ns: int  # its time in the call's span less its typical time over nearby calls' spans


class _Ops:
    """CPU ops and Python frames of one host thread (``lane``; None: every host thread),
    sorted by start."""

    def __init__(self, trace: Trace, lane: int | None = None) -> None:
        s = trace.slices
        codes = [trace.cat_code(c) for c in HOLDER_CATS]
        on = codes_in(s.cat, codes, len(trace.cat_names))
        if lane is not None:
            on &= s.lane == lane
        rows = np.flatnonzero(on)
        self.rows = rows[np.argsort(s.start[rows], kind="stable")]
        self.st = s.start[self.rows]
        self.trace = trace
        self._every: dict[tuple[int, int], dict[int, int]] = {}
        self._codes: dict[str, int] | None = None

    def code(self, name: str) -> int | None:
        """The name's code in the trace, or None."""
        if self._codes is None:
            self._codes = {n: i for i, n in enumerate(self.trace.names)}
        return self._codes.get(name)

    def inside(self, a: int, b: int, floor: int = 0,
               only: set[int] | None = None) -> dict[int, int]:
        """name code -> time of that name inside [a, b) (nested repeats counted once);
        the call's own frame (spanning all of it) left out. Names whose summed time is
        under ``floor`` (their union can only be less), or not in ``only``, are skipped:
        a cold compile's call holds a million frames of thousands of names. With
        ``only``, every name's time in [a, b) is kept for the next ask (a loop's slow
        calls share their nearby calls; each name's time is its own, whatever the
        others)."""
        if only is not None and floor == 0:
            every = self._every.get((a, b))
            if every is None:
                every = self._every[(a, b)] = self.inside(a, b)
            return {k: v for k, v in every.items() if k in only}
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
        order = np.argsort(names, kind="stable")  # each name's rows still by start
        names = names[order]
        st = s.start[r][order] - a  # times from the call's start: >= 0 (rows start in it)
        en = en[order] - a
        first = np.flatnonzero(np.append(True, names[1:] != names[:-1]))
        # the union of each name's intervals at once: a running maximum of the ends,
        # made to restart at each name by offsetting each name's times past the
        # previous name's; a row covers what it reaches past its name's ends so far
        span = b - a + 1
        if first.size * span >= 2**62:  # offsets past int64: one name at a time
            bounds = np.append(first, names.size).tolist()
            return {int(names[i]): intervals.length(intervals.union(st[i:j], en[i:j]))
                    for i, j in zip(bounds[:-1], bounds[1:], strict=True)}
        offset = np.repeat(np.arange(first.size, dtype=np.int64) * span,
                           np.diff(np.append(first, names.size)))
        reach = np.maximum.accumulate(en + offset)
        before = np.append(-1, reach[:-1]) - offset  # < 0 at each name's first row
        covered = np.maximum(en - np.maximum(st, before), 0)
        return dict(zip(names[first].tolist(), np.add.reduceat(covered, first).tolist(),
                        strict=True))


def _near(call: SlowCandidate, others: list[SlowCandidate]) -> list[SlowCandidate]:
    """The ``TYPICAL_CALLS`` calls of ``others`` (in index order) nearest ``call``."""
    at = bisect.bisect_left([c.index for c in others], call.index)
    window = others[max(0, at - TYPICAL_CALLS):at + TYPICAL_CALLS]
    return sorted(window, key=lambda c: (abs(c.index - call.index), c.index))[:TYPICAL_CALLS]


def _grown(trace: Trace, ops: _Ops, call: SlowCandidate, near: list[SlowCandidate],
           excess: int) -> tuple[int, str] | None:
    """(growth, name) of the op or frame of ``ops`` whose time in ``call`` exceeds its
    median over ``near`` by the least while by at least ``HOLDER_SHARE`` of ``excess``
    (the innermost such frame), or None."""
    mine = ops.inside(call.start_ns, call.end_ns, floor=int(HOLDER_SHARE * excess))
    # the call's own frame is the call, never what holds its excess: ``inside`` leaves it
    # out only where it spans the whole call, and a call that took in a compile event
    # before or after it (``callfind``: it joins the call) is longer than its frame
    own = ops.code(call.name)
    if own is not None:
        mine.pop(own, None)
    theirs = [ops.inside(c.start_ns, c.end_ns, only=set(mine)) for c in near] if mine else []
    best: tuple[int, str] | None = None
    for code, ns in mine.items():
        extra = ns - int(median([t.get(code, 0) for t in theirs]))
        if extra >= HOLDER_SHARE * excess:
            name = trace.names[code]
            if best is None or (extra, name) < best:
                best = (extra, name)
    return best


class _Threads:
    """Each host thread's ops (``_Ops``), built when first asked for: a slow call's own
    thread is asked for every call, another thread only where the call's holds nothing."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self._of: dict[int | None, _Ops] = {}

    def of(self, lane: int | None) -> _Ops:
        if lane not in self._of:
            self._of[lane] = _Ops(self.trace, lane)
        return self._of[lane]

    def beside(self, lane: int, a: int, b: int) -> list[int]:
        """The other host threads with an op or frame starting inside [a, b)."""
        every = self.of(None)
        lo = int(np.searchsorted(every.st, a, side="left"))
        hi = int(np.searchsorted(every.st, b, side="left"))
        lanes = np.unique(self.trace.slices.lane[every.rows[lo:hi]]).tolist()
        return [ln for ln in lanes if ln != lane]


def holder(trace: Trace, call: SlowCandidate, others: list[SlowCandidate],
           ops: _Ops | None = None,
           med: int | None = None, lane: int | None = None) -> Holder | None:
    """What holds ``call``'s excess over the median of ``others`` (in index order; None:
    no excess): an op or frame of ``ops`` (the call's thread ``lane``'s; every thread's
    where the call is on none), else the host category of the call that grew most."""
    if not others:
        return None
    med = int(median([c.api_ns for c in others])) if med is None else med
    excess = call.api_ns - med
    if excess <= 0:
        return None
    ops = ops or _Ops(trace, lane)
    near = _near(call, others)
    best = _grown(trace, ops, call, near, excess)
    if best is not None:
        return Holder(best[1], best[0], excess, lane)
    cats = {k for c in [call, *near] for k in c.categories}
    grew = {k: call.categories.get(k, 0) - int(median([c.categories.get(k, 0) for c in near]))
            for k in cats}
    if not grew:
        return None
    cat = max(sorted(grew), key=lambda k: grew[k])
    return Holder(f"host: {cat}", grew[cat], excess) if grew[cat] > 0 else None


def concurrent(trace: Trace, call: SlowCandidate, others: list[SlowCandidate], med: int,
               lane: int, threads: _Threads) -> Concurrent | None:
    """The op or frame on a thread other than ``lane`` that grew most over ``call``'s span
    (each thread's by ``_grown``'s rule), or None: what ran beside the call."""
    excess = call.api_ns - med
    if excess <= 0 or not others:
        return None
    near = _near(call, others)
    found: list[tuple[int, str, int]] = []
    for ln in threads.beside(lane, call.start_ns, call.end_ns):
        best = _grown(trace, threads.of(ln), call, near, excess)
        if best is not None:
            found.append((best[0], best[1], ln))
    if not found:
        return None
    ns, what, ln = max(found, key=lambda f: (f[0], f[1], -f[2]))
    return Concurrent(ln, what, ns)


def _medians_without(sorted_api: np.ndarray, values: list[int],
                     dropped: list[bool]) -> list[int | None]:
    """For each value, ``stats.median`` of the sorted values less one occurrence of it
    (where ``dropped``; else less nothing), all at once without building the lists: a
    loop of 10,000 calls asks this 10,000 times. None where fewer than two values remain."""
    size = sorted_api.size
    drop = np.asarray(dropped, bool)
    n = size - drop
    k = np.maximum(1, (n + 1) // 2) - 1  # the nearest-rank p50's index among the n
    p = np.searchsorted(sorted_api, np.asarray(values, np.int64), side="left")
    at = np.where(drop & (k >= p), k + 1, k)  # past the dropped one
    meds = sorted_api[np.clip(at, 0, max(size - 1, 0))] if size else np.zeros(n.size, np.int64)
    return [int(m) if ok else None for m, ok in zip(meds.tolist(), (n >= 2).tolist(), strict=True)]


def classify(trace: Trace, calls: Sequence[SlowCandidate],
             profiler_outliers: dict[int, ProfilerBurst],
             cold_work: dict[int, ColdWork], lane: int | None = None) -> dict[int, Slow]:
    """Call index -> its class and why, for the slow calls (and the profiler's
    outliers); the calls not named stay as they are. ``cold_work``: why each cold call
    is cold (a slow cold call's cause leads with its excess, then this). ``lane``: the
    host thread the calls are on (None: none known)."""
    by_kind: dict[str, list[SlowCandidate]] = {}
    for c in calls:
        by_kind.setdefault(c.kind, []).append(c)
    threads = _Threads(trace)
    out: dict[int, Slow] = {}
    for mine in by_kind.values():
        plain = [c for c in mine if not c.cold]
        plain_index = [c.index for c in plain]
        api = np.sort(np.asarray([c.api_ns for c in plain], np.int64))
        meds = _medians_without(api, [c.api_ns for c in mine], [not c.cold for c in mine])
        for k, c in enumerate(mine):
            if c.index in profiler_outliers:
                out[c.index] = Slow(c.cold, outlier=True, cold_cause=None,
                                    outlier_cause=profiler_outliers[c.index])
                continue
            med = meds[k]
            if med is None or med <= 0 or c.api_ns <= SLOW_RATIO * med:
                continue
            first = k == 0
            if not c.cold and first and c.api_ns <= FIRST_CALL_RATIO * med:
                continue
            # the others holder compares with are the TYPICAL_CALLS nearest by index:
            # hand it only those around the call (every other call, for each slow call of
            # a long loop, made this quadratic)
            at = bisect.bisect_left(plain_index, c.index)
            others = [o for o in plain[max(0, at - TYPICAL_CALLS):at + TYPICAL_CALLS + 1]
                      if o.index != c.index]
            h = holder(trace, c, others, threads.of(lane), med, lane)
            beside = None
            if lane is not None and (h is None or h.lane is None):
                beside = concurrent(trace, c, others, med, lane, threads)
            if c.cold:
                cause = SlowCall(c.api_ns, med, h, first=False, cold_work=cold_work.get(c.index),
                                 concurrent=beside)
                out[c.index] = Slow(cold=True, outlier=False, cold_cause=cause,
                                    outlier_cause=None)
            elif first:
                out[c.index] = Slow(cold=True, outlier=False,
                                    cold_cause=SlowCall(c.api_ns, med, h, first=True,
                                                        concurrent=beside),
                                    outlier_cause=None)
            else:
                out[c.index] = Slow(cold=False, outlier=True, cold_cause=None,
                                    outlier_cause=SlowCall(c.api_ns, med, h, first=False,
                                                           concurrent=beside))
    return out
