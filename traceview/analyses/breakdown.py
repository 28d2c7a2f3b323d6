"""The breakdown matrix: host category x device state, cells summing to the window.

Each host segment (one owner, one category) is split by the device busy set into its
busy and idle parts with ``intervals.overlap_pairs`` (segments are sorted and
disjoint, so only the segments that meet device work are visited). So the cells sum
exactly to the window, the busy column sums exactly to device busy, and no
overlapping intervals are added.
The idle column is the answer to "what was the host doing while the device waited".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from traceview import intervals
from traceview.analyses.host import HostTimeline

DeviceState = Literal["busy", "idle"]


@dataclass(frozen=True)
class Cell:
    host: str
    device: DeviceState
    ns: int


def breakdown(timeline: HostTimeline, busy: intervals.Set) -> list[Cell]:
    seg, busy_ns = intervals.overlap_pairs(busy, timeline.seg_start, timeline.seg_end)
    n = len(timeline.categories)
    busy_by = intervals.sum_by(timeline.seg_cat[seg], busy_ns, n)
    all_by = list(timeline.totals().values())  # by blocks: no segment-sized temporaries
    cells = []
    for i, cat in enumerate(timeline.categories):
        busy_cat = int(busy_by[i])
        total = int(all_by[i])
        if total:
            cells.append(Cell(cat, "busy", busy_cat))
            cells.append(Cell(cat, "idle", total - busy_cat))
    return cells
