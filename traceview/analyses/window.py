"""The window: the span of time every other number is a share of.

Default: earliest start to latest end of activity slices (host ops, Python frames,
runtime/driver calls, device work, and slices of unknown categories). Profiler spans (``Trace``), ``overhead``, device
annotations and metadata never widen it. ``--window`` narrows it to the span of the
user ranges whose name matches a regex, or to a time range; a window of either kind that
cuts a profiler step (``ProfilerStep#N``) is widened to hold the whole step, and says so:
every figure of a step is of the whole step (docs/training.md), its extent included (the
device work it launched running on after its range). Ranges of one name inside
steps (a ``record_function`` in the model) spanned the middle of the first step to the
middle of the last: the last step was a call reaching past the window, the first none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np

from traceview.errors import UsageError
from traceview.model import NON_ACTIVITY_CATS, Trace

_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_TIME = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(ns|us|ms|s)?\s*$")


WindowSource = Literal["activity", "annotation", "range", "empty"]


@dataclass(frozen=True)
class Window:
    """The span, where it came from and the figures that say so (the report words them:
    ``report.sentences.window_claim``): the ``--window`` text, the user ranges it spans
    (an ``annotation`` window) and the profiler steps a time range cut and was widened
    to hold."""

    start_ns: int
    end_ns: int
    source: WindowSource
    spec: str = ""
    ranges: int = 0
    cut_steps: tuple[str, ...] = ()

    @property
    def dur_ns(self) -> int:
        return self.end_ns - self.start_ns


def parse_time(text: str) -> int:
    m = _TIME.match(text)
    if not m:
        raise UsageError(f"bad time {text!r}: use a number with ns, us, ms or s")
    value, unit = m.group(1), m.group(2) or "ns"
    return round(float(value) * _UNITS[unit])


# rows read at a time by activity_window
ACTIVITY_BLOCK = 1 << 20


def activity_window(trace: Trace) -> Window:
    """From the first activity slice's start to the last one's end, read a block of rows
    at a time: the rows, starts and ends of every activity slice gathered at once were
    a transient of hundreds of MB on a cold compile's tens of millions of frames."""
    s = trace.slices
    activity = trace.has_cat(set(trace.cat_names) - NON_ACTIVITY_CATS)
    start, end = None, None
    for lo in range(0, activity.size, ACTIVITY_BLOCK):
        m = activity[lo:lo + ACTIVITY_BLOCK]
        if not m.any():
            continue
        a = int(s.start[lo:lo + ACTIVITY_BLOCK][m].min())
        b = int(s.end[lo:lo + ACTIVITY_BLOCK][m].max())
        start = a if start is None else min(start, a)
        end = b if end is None else max(end, b)
    if start is None or end is None:
        return Window(0, 0, "empty")
    return Window(start, end, "activity")


def parse_window(spec: str) -> tuple[int | None, int | None] | re.Pattern[str]:
    """``--window``'s text: a time range ``(from, to)`` in ns after the first activity
    event (``None``: that side is open), or the regex over user ranges. Parsed before the
    trace is read, so that a bad option costs no decode; ``UsageError`` when it is
    neither."""
    if ":" in spec and all(not part.strip() or _TIME.match(part) for part in spec.split(":", 1)):
        lo_txt, hi_txt = spec.split(":", 1)
        return (parse_time(lo_txt) if lo_txt.strip() else None,
                parse_time(hi_txt) if hi_txt.strip() else None)
    try:
        return re.compile(spec)
    except re.error as exc:
        raise UsageError(f"--window {spec!r} is neither a time range nor a regex: {exc}") from None


_STEP = re.compile(r"^ProfilerStep#\d+$")


def _whole_steps(trace: Trace, lo: int, hi: int) -> tuple[int, int, tuple[str, ...]]:
    """[lo, hi) widened to the profiler steps it cuts, and which it cut (none: ()). A
    time window that cut a step gave figures of two definitions in one sentence: the
    step's wall whole beside its device work clipped. A step the window holds part of
    the range of is whole with its extent (``_extent_ends``): a window ending at a
    step's range, before the device work the step launched ran, cut that step as much
    as one ending inside the range. A window inside a step's device tail alone (after
    its range) holds none of its calls and is left as asked."""
    s = trace.slices
    rows = trace.rows_of_cats({"user_annotation"})
    if rows.size == 0:
        return lo, hi, ()
    rows = rows[[bool(_STEP.match(trace.names[int(n)])) for n in s.name[rows].tolist()]]
    if rows.size == 0:
        return lo, hi, ()
    ends = _extent_ends(trace, rows)
    inside = (s.start[rows] < hi) & (s.end[rows] > lo)
    rows, ends = rows[inside], ends[inside]
    cut = (s.start[rows] < lo) | (ends > hi)
    if not cut.any():
        return lo, hi, ()
    names = sorted({trace.names[int(n)] for n in s.name[rows[cut]].tolist()},
                   key=lambda n: int(n.rsplit("#", 1)[1]))
    return (min(lo, int(s.start[rows[cut]].min())), max(hi, int(ends[cut].max())),
            tuple(names))


def _extent_ends(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Each step range's extent end, as ``analyses.steps`` draws it: the range's end, or
    the end of the device work launched inside the range where that runs on after it,
    never past the next step's start on the same thread (steps do not overlap)."""
    s = trace.slices
    ends = s.end[rows].astype(np.int64)
    w2l = trace.work_to_launch
    if not w2l:
        return ends
    work = np.fromiter(w2l.keys(), np.int64, len(w2l))
    l_st = s.start[np.fromiter(w2l.values(), np.int64, len(w2l))]
    order = np.argsort(l_st, kind="stable")
    l_st, w_end = l_st[order], s.end[work[order]]
    starts = s.start[rows].astype(np.int64)
    # each step's next start on its thread (by thread, then start): -1 for the last
    by = np.lexsort((starts, s.lane[rows]))
    nxt = np.full(rows.size, -1, np.int64)
    same = s.lane[rows][by][1:] == s.lane[rows][by][:-1]
    nxt[by[:-1][same]] = starts[by[1:][same]]
    lo_i = l_st.searchsorted(starts, side="left")
    hi_i = l_st.searchsorted(ends, side="left")
    for i in np.flatnonzero(hi_i > lo_i).tolist():
        last = int(w_end[lo_i[i]:hi_i[i]].max())
        if nxt[i] >= 0:
            last = min(last, int(nxt[i]))
        ends[i] = max(int(ends[i]), last)
    return ends


def find_window(trace: Trace, spec: str | None) -> Window:
    base = activity_window(trace)
    if not spec:
        return base
    parsed = parse_window(spec)
    if isinstance(parsed, tuple):
        lo_ns, hi_ns = parsed
        lo = base.start_ns + (lo_ns or 0)
        hi = base.start_ns + hi_ns if hi_ns is not None else base.end_ns
        lo, hi = max(lo, base.start_ns), min(hi, base.end_ns)
        if hi <= lo:
            raise UsageError(f"window {spec!r} is empty within the trace "
                             f"(trace activity lasts {base.dur_ns} ns)")
        wlo, whi, cut = _whole_steps(trace, lo, hi)
        return Window(wlo, whi, "range", spec, cut_steps=cut)
    pattern = parsed
    rows = trace.rows_of_cats({"user_annotation"})
    names = trace.names
    hits = [r for r in rows.tolist() if pattern.search(names[trace.slices.name[r]])]
    if not hits:
        raise UsageError(f"--window {spec!r}: no user range (record_function) matches")
    idx = np.asarray(hits)
    # ranges inside steps span parts of the first and last: widened as a time range is
    wlo, whi, cut = _whole_steps(trace, int(trace.slices.start[idx].min()),
                                 int(trace.slices.end[idx].max()))
    return Window(wlo, whi, "annotation", spec, ranges=len(hits), cut_steps=cut)
