"""The typical call's picture, one set of numbers for every output that draws it.

The terminal waterfall, the SVG figure and the Mermaid chart all draw the typical call
(``Report.typical_call``). Their legends give the same figures as the text: each host
category's time in that call (``CallRow.categories``, what the per-call table and the
waterfall legend print) and the device's busy time inside it, never a figure measured
off the drawing (a pixel column shows only the category that owns most of it, so pixel
totals differ from the call's). A chart that cannot draw every piece says how many it
left out or merged, and how long they were ("+N more segments").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from traceview.units import fmt_ns, plural

if TYPE_CHECKING:
    from traceview.report.model import Report, TypicalCall

# Colours per category, and the device's, all distinct (a test checks): the SVG's hex
# colours and the terminal's named ones.
HEX = {
    "launch": "#b0359e", "sync": "#d62728", "specialize": "#e0b000", "cache_key": "#f2d64b",
    "launch_metadata": "#17becf", "compile": "#8c1c13", "import": "#ff7f50",
    "dispatch": "#1f77b4", "library": "#6baed6", "user": "#2ca02c", "profiler": "#7f7f7f",
    "other": "#c7c7c7", "untraced": "#e6e6e6",
}
DEVICE_HEX = "#4a2377"  # device busy: a dark violet no host category uses
TERMINAL = {
    "launch": "bold magenta", "sync": "red", "specialize": "yellow", "cache_key": "bright_yellow",
    "launch_metadata": "cyan", "compile": "bold red", "import": "bright_red",
    "dispatch": "blue", "library": "bright_blue", "user": "green", "profiler": "grey50",
    "other": "white", "untraced": "grey35",
}
DEVICE_TERMINAL = "bold purple"  # device busy in the waterfall (user is green)


@dataclass(frozen=True)
class Bar:
    """One bar of a chart: [start, end) and what it stands for."""

    start_ns: int
    end_ns: int
    label: str
    ns: int  # the time it stands for (a merged device bar: the busy time inside it)
    pieces: int = 1


@dataclass(frozen=True)
class Bars:
    bars: tuple[Bar, ...]
    total: int  # pieces in the call
    left_out: int = 0  # pieces not drawn
    left_out_ns: int = 0
    merged: int = 0  # pieces drawn inside a bar with others

    def note(self, lane: str) -> str:
        """What the lane leaves out or merges, in words ('' when it draws every piece)."""
        if self.left_out:
            return (f"{lane}: the {len(self.bars)} longest of {self.total} segments drawn "
                    f"(+{self.left_out} more segments, {fmt_ns(self.left_out_ns)})")
        if self.merged:
            return (f"{lane}: {plural(self.total, 'busy interval')} drawn as "
                    f"{len(self.bars)} bars (neighbours merged across the shortest gaps)")
        return ""


def legend(r: Report) -> list[tuple[str, int]]:
    """The typical call's host categories and their time in it, the largest first: the
    same figures as the text's waterfall legend and per-call rows."""
    call = r.typical
    if call is None:
        return sorted(((c, ns) for c, ns in r.host.categories.items() if ns),
                      key=lambda kv: (-kv[1], kv[0]))
    return sorted(((c, ns) for c, ns in call.categories.items() if ns),
                  key=lambda kv: (-kv[1], kv[0]))


def busy_in_call(t: TypicalCall) -> int:
    """The device's busy time inside the call's range (the text's "device work" may go on
    after it; that part is said apart)."""
    return sum(max(0, min(e, t.end_ns) - max(s, t.start_ns)) for s, e in t.device_busy)


def busy_after_call(t: TypicalCall) -> int:
    """The device's busy time the picture draws after the call returned (its work runs on
    past the range: an unsynchronized call)."""
    return sum(max(0, min(e, t.axis_end_ns) - max(s, t.end_ns)) for s, e in t.device_busy)


def busy_words(t: TypicalCall) -> str:
    """The device row's legend: every busy ns it draws, inside the call and after it."""
    after = busy_after_call(t)
    inside = f"device busy {fmt_ns(busy_in_call(t))}"
    return f"{inside} in the call, {fmt_ns(after)} after it" if after else inside


def host_bars(t: TypicalCall, limit: int, segments: tuple | None = None) -> Bars:
    """The host row's segments (or another thread's, ``segments``); past ``limit``, the
    longest ``limit`` in time order and a count of the rest."""
    segs = list(t.host if segments is None else segments)
    if len(segs) <= limit:
        return Bars(tuple(Bar(s.start_ns, s.end_ns, s.category, s.end_ns - s.start_ns)
                          for s in segs), len(segs))
    keep = sorted(sorted(segs, key=lambda s: (s.start_ns - s.end_ns, s.start_ns))[:limit],
                  key=lambda s: s.start_ns)
    kept = {id(s) for s in keep}
    rest = [s for s in segs if id(s) not in kept]
    return Bars(tuple(Bar(s.start_ns, s.end_ns, s.category, s.end_ns - s.start_ns) for s in keep),
                len(segs), left_out=len(rest),
                left_out_ns=sum(s.end_ns - s.start_ns for s in rest))


def device_bars(t: TypicalCall, limit: int) -> Bars:
    """The device's busy intervals; past ``limit``, neighbours merged across the shortest
    gaps until ``limit`` bars remain, each labelled with the busy time it holds: the lane
    still spans all of the call's device work."""
    spans = [[s, e, e - s, 1] for s, e in t.device_busy]
    n = len(spans)
    while len(spans) > max(limit, 1):
        i = min(range(len(spans) - 1), key=lambda k: (spans[k + 1][0] - spans[k][1], k))
        a, b = spans[i], spans.pop(i + 1)
        spans[i] = [a[0], b[1], a[2] + b[2], a[3] + b[3]]
    return Bars(tuple(Bar(s, e, "busy", ns, k) for s, e, ns, k in spans), n,
                merged=sum(k for *_, k in spans if k > 1))
