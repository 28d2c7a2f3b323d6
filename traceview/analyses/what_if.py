"""What-if projections: what a call would take as a CUDA graph, without host overhead, or
with a pointwise chain fused, computed from the call's own records.

Each projection is a model with an interval and its basis (the figures it used), never a
sentence (``report/`` and ``render/`` phrase them). The models, all on the call's device
work (kernels, copies and sets its launches produced, durations as recorded):

* ``cuda-graph`` — one graph launch replays the call's N device nodes. A replay costs the
  host's submit for a small graph and the nodes for a large one:
  ``max(floor, fixed + sum(max(d_k, per_node)))`` (a node costs at least a one-element
  kernel's node, a longer kernel its own duration); the interval runs from
  ``fixed + max(sum d, N * per_node)`` to ``fixed + sum d + N * per_node``, under the same
  floor. ``floor``, ``fixed`` and ``per_node`` are measured on the GPU
  (``data/graph_launch_costs.json``, per card).
* ``no-host-overhead`` — the device-bound limit: the same nodes queued back to back with
  no host in the way (replays queued ahead of the device), the same model with the
  queued costs: its floor is one replay's submit, which a call still costs when its
  device work is shorter.
* ``fewer-launches`` — the longest run of consecutive single-kernel pointwise launches
  fused into one: the removed launches' host spacing (launch start to the next launch's
  start) taken off the call, scaled to the unprofiled call where its figure is known; the
  device keeps the chain's longest kernel (and any backlog, below). Interval: the removed
  launches each costing the run's longest or shortest spacing.

The two models that take the host away (``cuda-graph``, ``no-host-overhead``) keep the
time the host waits in synchronizing calls while no device work runs anywhere, in
stretches of at least ``STALLED_MIN_NS`` (``stalled_sync_ns``): such a wait is for
something the trace does not show (a stream held by an event wait, work of another
process), not host work a graph or a faster host removes.

All three models also keep the device work the call did not launch that keeps the call's
streams busy inside it (``foreign_device_ns``: work queued by earlier calls, or recorded
with no launch): a stream runs one thing at a time, so the call's nodes queue behind it
whatever the host does, and a call that waits for that backlog (a blocking copy at its
end) cannot get faster than it by losing host overhead.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from traceview.analyses.calls import Call
from traceview.analyses.launches import LaunchSummary
from traceview.intervals import Set, clip, length, subtract, union
from traceview.model import DEVICE_WORK_CATS, Trace

SCENARIOS = ("cuda-graph", "no-host-overhead", "fewer-launches")
# Kernel names of elementwise work: PyTorch's elementwise kernels, Inductor's pointwise,
# and FlagGems' ``pointwise_dynamic`` kernels (generated as ``<function>_kernel_rank_<N>``:
# ``add_func_kernel_rank_1``, ``sigmoid_forward_kernel_rank_1``).
POINTWISE = re.compile(r"elementwise|pointwise|triton_poi_|_kernel_rank_\d+$", re.IGNORECASE)
COSTS_FILE = "graph_launch_costs.json"
# An idle stretch under a synchronize shorter than this is the synchronize's own return
# or a launch on its way to the device (tens of us on the validation traces'
# H100/H200 calls, tests/data/what_if); a device idle a whole millisecond while the host
# waits for it has nothing it was given to run.
STALLED_MIN_NS = 1_000_000


@dataclass(frozen=True)
class GraphCosts:
    """A card's measured CUDA graph costs (``data/graph_launch_costs.json``): a replay of
    N nodes takes ``max(floor, fixed + N * per_node)`` (a small graph's replay is the
    host's submit, a large one's the device's nodes), synchronized or queued."""

    card: str
    fixed_ns: int  # intercept of a synchronized replay's line through large graphs
    per_node_ns: int  # its slope: each node of a one-element kernel
    floor_ns: int  # a one-node graph's synchronized replay
    queued_fixed_ns: int  # the same three for replays queued back to back
    queued_per_node_ns: int
    queued_floor_ns: int
    date: str = ""
    source: str = ""


@dataclass(frozen=True)
class Projection:
    scenario: str
    call: int  # the call projected (index into the calls)
    measured_ns: int  # the call's own time the projection replaces
    projected_ns: int
    low_ns: int
    high_ns: int
    basis: dict[str, int | float | str] = field(default_factory=dict)


def load_costs() -> dict[str, GraphCosts]:
    """Every card of the costs table, by card name."""
    raw = json.loads(resources.files("traceview.data").joinpath(COSTS_FILE).read_text())
    return {name: GraphCosts(card=name, date=raw.get("date", ""),
                             source=raw.get("measured_by", ""), **v)
            for name, v in raw["cards"].items()}


def costs_for(trace: Trace, table: dict[str, GraphCosts]) -> tuple[GraphCosts | None, bool]:
    """The table's row for the trace's card (its ``deviceProperties`` name), and whether
    it matched; else the first card of the table (None for an empty table: no graph
    projection without a measured cost)."""
    if not table:
        return None, False
    props = trace.metadata.get("deviceProperties")
    # a device with no name matches no card ("" is in every card's name)
    names = [str(p["name"]) for p in props if isinstance(p, dict) and p.get("name")] \
        if isinstance(props, list) else []
    for n in names:
        for card, c in table.items():
            if card in n or n in card:
                return c, True
    return next(iter(table.values())), False


def _call_launches(trace: Trace, launches: LaunchSummary, call: Call) -> np.ndarray:
    """The call's launch rows, by start (``launches.rows`` is sorted so)."""
    ls = trace.slices.start[launches.rows]
    return launches.rows[(ls >= call.start_ns) & (ls < call.end_ns)]


def _work_of(trace: Trace, launch_rows: np.ndarray) -> np.ndarray:
    """The device work rows the launches produced, by start."""
    s = trace.slices
    work = trace.launch_work(launch_rows)[1]
    return work[np.argsort(s.start[work], kind="stable")]


def _foreign_busy(trace: Trace, call: Call, work: np.ndarray) -> int:
    """Busy time inside the call, on the streams its own device work runs on, of device
    work it did not launch: the backlog its nodes queue behind on those streams."""
    s = trace.slices
    rows = trace.rows_of_cats(DEVICE_WORK_CATS)
    rows = rows[np.isin(s.lane[rows], np.unique(s.lane[work]))]
    rows = rows[(s.start[rows] < call.end_ns) & (s.end[rows] > call.start_ns)]
    rows = rows[~np.isin(rows, work)]
    if rows.size == 0:
        return 0
    busy = clip(union(s.start[rows], s.end[rows]), call.start_ns, call.end_ns)
    return length(subtract(busy, union(s.start[work], s.end[work])))


def stalled_sync(trace: Trace, sync: Set, start: int, end: int) -> Set:
    """The stretches of ``sync`` (the host's synchronizing time) inside ``[start, end)``
    with no device work running on any stream, each at least ``STALLED_MIN_NS``: the
    host waits for the device, and the device has nothing to run, so it waits for what
    the trace does not show."""
    s = trace.slices
    rows = trace.rows_of_cats(DEVICE_WORK_CATS)
    rows = rows[(s.start[rows] < end) & (s.end[rows] > start)]
    mine = clip(union(*sync), start, end)
    st, en = subtract(mine, union(s.start[rows], s.end[rows]))
    keep = en - st >= STALLED_MIN_NS
    return st[keep], en[keep]


def _bracket(floor: int, fixed: int, durs: np.ndarray, node: int) -> tuple[int, int, int]:
    """(projection, low, high) of N nodes of durations ``durs`` at ``node`` per node."""
    n = int(durs.size)
    total = int(durs.sum())
    proj = fixed + int(np.maximum(durs, node).sum())
    lo, hi = fixed + max(total, n * node), fixed + total + n * node
    return max(floor, proj), max(floor, lo), max(floor, hi)


def project(trace: Trace, launches: LaunchSummary, call: Call | None,
            costs: GraphCosts | None = None, *, card_matched: bool = True,
            unprofiled_call_ns: int | None = None,
            sync: Set | None = None) -> list[Projection]:
    """The projections of one call (the typical call): none without device work.
    ``sync``: the host thread's synchronizing time (``HostTimeline.category_set``), whose
    part with the device idle the models that take the host away keep."""
    if call is None or call.launches_without_work:
        return []
    if costs is None:
        costs, card_matched = costs_for(trace, load_costs())
    s = trace.slices
    mine = _call_launches(trace, launches, call)
    work = _work_of(trace, mine)
    if work.size == 0:
        return []
    durs = (s.end[work] - s.start[work]).astype(np.int64)
    streams = int(np.unique(s.lane[work]).size)
    # the call's figure a projection replaces: unprofiled where known
    api = int(unprofiled_call_ns) if unprofiled_call_ns else call.api_ns
    names = [trace.names[c] for c in s.name[mine].tolist()]
    is_graph = any("GraphLaunch" in n for n in names)
    out: list[Projection] = []
    fused = fuse_chain(trace, mine, call, unprofiled_call_ns)
    if costs is None:
        return [fused] if fused is not None and not is_graph else []
    common: dict[str, int | float | str] = {
        "nodes": int(work.size), "device_work_ns": int(durs.sum()), "streams": streams,
        "card": costs.card, "card_matched": int(card_matched)}
    foreign = _foreign_busy(trace, call, work)
    if foreign:
        common["foreign_device_ns"] = foreign
    stalled = 0 if sync is None else length(stalled_sync(trace, sync, call.start_ns,
                                                          call.end_ns))
    if stalled:
        common["stalled_sync_ns"] = stalled
    kept = foreign + stalled
    if not is_graph:
        p, lo, hi = (v + kept for v in _bracket(costs.floor_ns, costs.fixed_ns, durs,
                                                   costs.per_node_ns))
        out.append(Projection("cuda-graph", call.index, api, p, lo, hi, {
            **common, "fixed_ns": costs.fixed_ns, "per_node_ns": costs.per_node_ns,
            "floor_ns": costs.floor_ns}))
    p, lo, hi = (v + kept for v in _bracket(costs.queued_floor_ns, costs.queued_fixed_ns,
                                               durs, costs.queued_per_node_ns))
    out.append(Projection("no-host-overhead", call.index, api, p, lo, hi, {
        **common, "fixed_ns": costs.queued_fixed_ns,
        "per_node_ns": costs.queued_per_node_ns, "floor_ns": costs.queued_floor_ns}))
    if fused is not None and not is_graph:
        out.append(fused)
    return out


def pointwise_run(trace: Trace, launches: np.ndarray) -> tuple[int, int]:
    """(first position, length) of the longest run of consecutive launches that each
    produced one pointwise kernel; length 0 for none."""
    s = trace.slices
    kcat = trace.cat_code("kernel")
    counts, work = trace.launch_work(launches)
    one = counts == 1
    only = work[(np.cumsum(counts) - counts)[one]]  # the one work row of each such launch
    codes = s.name[only].tolist()
    pointwise = {c: bool(POINTWISE.search(trace.names[c])) for c in set(codes)}
    ok = np.zeros(counts.size, bool)
    ok[one] = (s.cat[only] == kcat) & np.fromiter(map(pointwise.__getitem__, codes), bool,
                                                  len(codes))
    if not ok.any():
        return 0, 0
    edges = np.diff(np.r_[0, ok.astype(np.int8), 0])
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    k = int(np.argmax(ends - starts))  # the first of the longest runs
    return int(starts[k]), int(ends[k] - starts[k])


def fuse_chain(trace: Trace, launches: np.ndarray, call: Call,
               unprofiled_call_ns: int | None = None) -> Projection | None:
    """The call with its longest pointwise chain fused into one kernel (None for a chain
    shorter than two)."""
    s = trace.slices
    at, n = pointwise_run(trace, launches)
    if n < 2:
        return None
    chain = launches[at:at + n]
    starts = s.start[chain]
    spacing = np.diff(starts)  # launch i to launch i+1, for the n-1 removed launches
    removed = int(spacing.sum())
    ltw = trace.launch_to_work
    chain_work = np.asarray([ltw[r][0] for r in chain.tolist()], np.int64)
    chain_d = s.end[chain_work] - s.start[chain_work]
    work = _work_of(trace, launches)
    all_d = int((s.end[work] - s.start[work]).sum())
    # the backlog the call's nodes queue behind stays under the floor as well
    foreign = _foreign_busy(trace, call, work)
    device_floor = all_d - int(chain_d.sum()) + int(chain_d.max()) + foreign
    api = call.api_ns
    scale = unprofiled_call_ns / api if unprofiled_call_ns and api else 1.0
    k = n - 1

    def after(cut: int) -> int:
        return max(int(round((api - cut) * scale)), device_floor)

    proj = after(removed)
    lo, hi = after(k * int(spacing.max())), after(k * int(spacing.min()))
    measured = int(unprofiled_call_ns) if unprofiled_call_ns else api
    return Projection("fewer-launches", call.index, measured, proj, min(lo, proj),
                      max(hi, proj), {
                          "launches_removed": k, "chain_launches": n,
                          "removed_host_ns": removed, "device_floor_ns": device_floor,
                          "spacing_min_ns": int(spacing.min()),
                          "spacing_max_ns": int(spacing.max()),
                          "unprofiled_scale": round(scale, 4),
                          **({"foreign_device_ns": foreign} if foreign else {})})
