"""The breakdown matrix: host category x device state, cells summing to the window.

Each host segment (one owner, one category) is split by the device busy set into its
busy and idle parts with ``intervals.overlap``. So the cells sum exactly to the window,
the busy column sums exactly to device busy, and no overlapping intervals are added.
The idle column is the answer to "what was the host doing while the device waited".
"""

from __future__ import annotations

from dataclasses import dataclass

from traceview import intervals
from traceview.analyses.host import HostTimeline


@dataclass(frozen=True)
class Cell:
    host: str
    device: str  # "busy" | "idle"
    ns: int


def breakdown(timeline: HostTimeline, busy: intervals.Set) -> list[Cell]:
    b = intervals.overlap(busy, timeline.seg_start, timeline.seg_end)
    lengths = timeline.seg_end - timeline.seg_start
    n = len(timeline.categories)
    busy_by = intervals.sum_by(timeline.seg_cat, b, n)
    all_by = intervals.sum_by(timeline.seg_cat, lengths, n)
    cells = []
    for i, cat in enumerate(timeline.categories):
        busy_ns = int(busy_by[i])
        total = int(all_by[i])
        if total:
            cells.append(Cell(cat, "busy", busy_ns))
            cells.append(Cell(cat, "idle", total - busy_ns))
    return cells
