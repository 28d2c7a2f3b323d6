"""The slices a host thread owns in the window: its own slices less labels (user
ranges, profiler spans, device work), plus the profiler's ``overhead`` slices, which
Kineto puts on a lane of their own and which are laid over every thread they interrupted."""

from __future__ import annotations

import numpy as np

from traceview.analyses.window import Window
from traceview.model import DEVICE_CATS, Lane, Trace

LABEL_CATS = frozenset({"user_annotation", "Trace"}) | DEVICE_CATS
OVERLAY_CATS = frozenset({"overhead"})


def host_rows_by_lane(trace: Trace, window: Window) -> dict[int, np.ndarray]:
    """Every host lane's rows (see ``host_rows``), in one pass over the slices."""
    s = trace.slices
    ncat = len(trace.cat_names)
    is_label = np.zeros(ncat + 1, bool)
    is_label[[i for i, c in enumerate(trace.cat_names) if c in LABEL_CATS]] = True
    is_overlay = np.zeros(ncat + 1, bool)
    is_overlay[[i for i, c in enumerate(trace.cat_names) if c in OVERLAY_CATS]] = True
    live = (s.end > window.start_ns) & (s.start < window.end_ns) & (s.end > s.start)
    overlay = np.flatnonzero(live & is_overlay[s.cat])
    own = np.flatnonzero(live & ~(is_label | is_overlay)[s.cat])
    lane_of = s.lane[own]
    if len(trace.lanes) < 2**15:
        lane_of = lane_of.astype(np.int16)  # a radix sort
    order = np.argsort(lane_of, kind="stable")
    lane_of = lane_of[order]
    by_lane = own[order]
    del own, order
    bounds = np.searchsorted(lane_of, np.arange(len(trace.lanes) + 1))
    out = {}
    for lane in trace.host_lanes:
        rows = by_lane[bounds[lane.index]:bounds[lane.index + 1]]
        if overlay.size:  # both sorted and disjoint: one merged copy
            rows = np.insert(rows, np.searchsorted(rows, overlay), overlay)
        out[lane.index] = rows
    return out


def host_rows(trace: Trace, lane: Lane, window: Window) -> np.ndarray:
    """Rows of the thread's own slices plus overlaid profiler overhead, in the window."""
    return host_rows_by_lane(trace, window)[lane.index]
