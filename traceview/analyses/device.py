"""Device busy and idle: the union of device work across streams, per device and overall.

Device work is ``kernel``, ``gpu_memcpy`` and ``gpu_memset`` slices only; device
annotations are labels. Busy is the length of the union (concurrent streams count
once); idle is the window minus busy. The plain sum of kernel durations is reported
too, labelled as a sum, because that is what ``key_averages`` shows.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

from traceview import intervals
from traceview.analyses.window import Window
from traceview.model import DEVICE_WORK_CATS, Trace
from traceview.stats import Stats, summarize


@dataclass(frozen=True)
class KernelStat:
    name: str
    count: int
    sum_ns: int
    stats: Stats
    # of ``count``, the kernels no launch record (runtime/driver event) links to: launched
    # before the profiler's window, or their correlation dropped. A count of kernels
    # *launched* leaves them out (``diff``'s "kernels launched"); ``count`` is what ran.
    unlinked: int = 0


@dataclass(frozen=True)
class DeviceSummary:
    busy: intervals.Set  # the union, clipped to the window
    busy_ns: int
    idle_ns: int
    kernel_count: int
    memcpy_count: int
    memset_count: int
    work_sum_ns: int  # sum of clipped durations of all device work
    kernel_sum_ns: int  # sum of clipped kernel durations
    copy_sum_ns: int  # sum of clipped memcpy + memset durations
    per_device: list[dict]
    per_stream: list[dict]
    kernels: list[KernelStat]  # by name, biggest sum first
    work_rows: np.ndarray  # device work rows overlapping the window


def analyze_device(trace: Trace, window: Window) -> DeviceSummary:
    s = trace.slices
    rows = trace.rows_of_cats(DEVICE_WORK_CATS)
    rows = rows[(s.end[rows] > window.start_ns) & (s.start[rows] < window.end_ns)
                | ((s.start[rows] == s.end[rows]) & (s.start[rows] >= window.start_ns)
                   & (s.start[rows] < window.end_ns))]
    cs = np.maximum(s.start[rows], window.start_ns)
    ce = np.minimum(s.end[rows], window.end_ns)
    busy = intervals.union(cs, ce)
    busy_ns = intervals.length(busy)
    cat_of = np.asarray([trace.cat_names[c] for c in s.cat[rows].tolist()], dtype=object)
    is_kernel = cat_of == "kernel"
    lane_of = s.lane[rows]

    per_device = []
    devices = sorted({trace.lanes[int(lane)].device for lane in np.unique(lane_of).tolist()},
                     key=lambda d: (d is None, d))
    for dev in devices:
        m = np.asarray([trace.lanes[int(lane)].device == dev for lane in lane_of.tolist()],
                       dtype=bool)
        u = intervals.union(cs[m], ce[m])
        mk, mc = m & is_kernel, m & ~is_kernel
        per_device.append({
            "device": dev,
            "busy_ns": intervals.length(u),
            "kernel_count": int(mk.sum()),
            "kernel_sum_ns": int((ce - cs)[mk].sum()),
            "kernel_busy_ns": intervals.length(intervals.union(cs[mk], ce[mk])),
            "copy_count": int(mc.sum()),
            "copy_sum_ns": int((ce - cs)[mc].sum()),
        })
    per_stream = []
    for lane in np.unique(lane_of).tolist():
        m = lane_of == lane
        ln = trace.lanes[int(lane)]
        per_stream.append({
            "device": ln.device, "stream": ln.stream,
            "busy_ns": intervals.length(intervals.union(cs[m], ce[m])),
            "work_count": int(m.sum()),
        })

    per_stream.sort(key=lambda r: (str(r["device"]), str(r["stream"])))
    kernels: list[KernelStat] = []
    if is_kernel.any():
        knames = s.name[rows][is_kernel]
        kdur = (ce - cs)[is_kernel]
        for code in np.unique(knames).tolist():
            d = kdur[knames == code]
            kernels.append(KernelStat(trace.names[code], int(d.size), int(d.sum()),
                                      summarize(d.tolist())))
        kernels.sort(key=lambda k: (-k.sum_ns, k.name))
    return DeviceSummary(
        busy=busy,
        busy_ns=busy_ns,
        idle_ns=window.dur_ns - busy_ns,
        kernel_count=int(is_kernel.sum()),
        memcpy_count=int((cat_of == "gpu_memcpy").sum()),
        memset_count=int((cat_of == "gpu_memset").sum()),
        work_sum_ns=int((ce - cs).sum()),
        kernel_sum_ns=int((ce - cs)[is_kernel].sum()),
        copy_sum_ns=int((ce - cs)[~is_kernel].sum()),
        per_device=per_device,
        per_stream=per_stream,
        kernels=kernels,
        work_rows=rows,
    )


def with_unlinked(trace: Trace, device: DeviceSummary, unlinked_rows: np.ndarray) -> DeviceSummary:
    """``device`` with each kernel's ``unlinked``: how many of ``unlinked_rows`` (the
    window's device work with no launch record, ``LaunchSummary.unlinked_rows``) are
    kernels of its name. Only those rows are read, so a trace whose device work is all
    linked (the usual case) costs nothing here."""
    if not unlinked_rows.size or not device.kernels:
        return device
    s = trace.slices
    kernel = trace.cat_code("kernel")
    rows = unlinked_rows[s.cat[unlinked_rows] == kernel]
    by_name = Counter(trace.names[c] for c in s.name[rows].tolist())
    if not by_name:
        return device
    return replace(device, kernels=[replace(k, unlinked=by_name.get(k.name, 0))
                                    for k in device.kernels])
