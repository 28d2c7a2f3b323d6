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

Every model keeps the time the host waits in synchronizing calls while no device work
runs anywhere, in stretches of at least ``STALLED_MIN_NS`` (``stalled_sync_ns``): such a
wait is for something the trace does not show (a stream held by an event wait, work of
another process), not host work a graph, a faster host or fewer launches remove. The two
models that take the host away (``cuda-graph``, ``no-host-overhead``) add it to their
device model; ``fewer-launches`` removes no launch spacing from it and scales the rest
of the call alone. ``stream_wait`` finds the stream-wait-event call that can hold the
stream such a wait waits on.

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
from typing import Literal

import numpy as np

from traceview.analyses.calls import Call
from traceview.analyses.host import HostTimeline
from traceview.analyses.launches import LaunchSummary
from traceview.coerce import NO_ID
from traceview.intervals import Set, clip, length, overlap, subtract, union
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
# The runtime and driver calls that make a stream wait for an event (the stream runs
# nothing queued after the call until the event is recorded), the calls that record
# one, and the synchronizations that wait for every stream of the device.
STREAM_WAIT = re.compile(r"^(cuda|hip|cu)StreamWaitEvent(_ptsz|_spt)?$")
EVENT_RECORD = re.compile(r"^(cuda|hip|cu)EventRecord(WithFlags)?(_ptsz|_spt)?$")
DEVICE_WIDE_SYNC = re.compile(r"^((cuda|hip)DeviceSynchronize|cuCtxSynchronize)(_ptsz|_spt)?$")
# CUPTI's record of a device-wide synchronization as the device saw it (cuda_sync)
CONTEXT_SYNC = "Context Sync"
# A cuda_sync record of a stream's own row sits on "stream N (sync)": tid N + this
SYNC_ROW_OFFSET = 1_000_000


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
class StreamWait:
    """A stream-wait-event call that can hold the stream a stalled synchronization waits
    on (``stream_wait``): the wait's row, host lane and start; the stream it makes wait
    where the trace says so (its CUPTI ``cuda_sync`` record), else None; how it was
    matched to the synchronization ("stream": the same stream, or the sync waits for the
    whole device; "time": no device work starts from the wait until the stall ends, on
    any stream); and the event it waits for: "absent" (the trace holds no record of it),
    "recorded" (``event_row`` records it) or "unknown" (the trace records events but does
    not say which one this waits for)."""

    row: int
    lane: int
    start_ns: int
    stream: int | None
    matched: Literal["stream", "time"]
    event: Literal["absent", "recorded", "unknown"]
    event_row: int | None = None


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


def call_stalls(trace: Trace, timeline: HostTimeline, call: Call) -> Set | None:
    """The stretches of ``call`` in which its thread waits in synchronizing calls with
    no device work running (``stalled_sync``); None where the thread has no
    synchronizing time (or there is no host thread). Made once per report: the verdict
    and the projections read the same stretches."""
    if timeline.lane is None or "sync" not in timeline.categories:
        return None
    return stalled_sync(trace, timeline.category_set("sync"), call.start_ns, call.end_ns)


def _name_rows(trace: Trace, pattern: re.Pattern[str]) -> np.ndarray:
    """The host-thread rows whose name matches ``pattern``, by row."""
    codes = [i for i, n in enumerate(trace.names) if pattern.match(n)]
    if not codes:
        return np.zeros(0, np.int64)
    rows = np.flatnonzero(trace.has_name(codes))
    host = np.fromiter((ln.kind == "host" for ln in trace.lanes), bool, len(trace.lanes))
    return rows[host[trace.slices.lane[rows]]]


def _sync_records(trace: Trace, rows: np.ndarray) -> dict[int, list[int]]:
    """The CUPTI ``cuda_sync`` records of the runtime calls ``rows``, by call row (the
    same correlation id): how the device saw the wait or synchronization each made."""
    s = trace.slices
    records = trace.rows_of_cats(frozenset({"cuda_sync"}))
    if records.size == 0 or rows.size == 0:
        return {}
    by_corr: dict[int, list[int]] = {}
    for r, c in zip(records.tolist(), np.asarray(s.corr[records]).tolist(), strict=True):
        if c != NO_ID:
            by_corr.setdefault(int(c), []).append(r)
    out = {}
    for row, c in zip(rows.tolist(), np.asarray(s.corr[rows]).tolist(), strict=True):
        if c != NO_ID and int(c) in by_corr:
            out[row] = by_corr[int(c)]
    return out


# a device stream: (device, stream)
StreamKey = tuple[int | None, int]


def _record_stream(trace: Trace, row: int) -> StreamKey | None:
    """The device stream of a ``cuda_sync`` record: its lane's device, and its
    ``stream`` argument, else its lane's stream (less the offset of a stream's own sync
    row)."""
    lane = trace.lanes[int(trace.slices.lane[row])]
    value = trace.slices.args.get(row, {}).get("stream")
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return lane.device, value
    if lane.stream is None:
        return None
    stream = lane.stream
    return lane.device, stream - SYNC_ROW_OFFSET if stream >= SYNC_ROW_OFFSET else stream


def _streams_waited(trace: Trace, row: int) -> frozenset[StreamKey] | None:
    """The streams the synchronizing call ``row`` waits on: those its own device work
    runs on (a blocking copy), else its ``cuda_sync`` record's; every stream (the empty
    set) for a device-wide synchronization; None where the trace does not say."""
    name = trace.names[int(trace.slices.name[row])]
    if DEVICE_WIDE_SYNC.match(name):
        return frozenset()
    lanes = [trace.lanes[int(trace.slices.lane[w])] for w in trace.launch_to_work.get(row, ())]
    streams = {(ln.device, ln.stream) for ln in lanes if ln.stream is not None}
    if streams:
        return frozenset(streams)
    records = _sync_records(trace, np.asarray([row], np.int64)).get(row, [])
    if any(trace.names[int(trace.slices.name[r])] == CONTEXT_SYNC for r in records):
        return frozenset()
    found = {x for x in (_record_stream(trace, r) for r in records) if x is not None}
    return frozenset(found) or None


def _waited_event(trace: Trace, records: list[int], before: int
                  ) -> tuple[Literal["absent", "recorded", "unknown"], int | None]:
    """Whether the trace holds the record of the event a wait waits for: its
    ``cuda_sync`` record names the record call by correlation id
    (``wait_on_cuda_event_record_corr_id``: "recorded" where a call of the trace has it,
    "absent" where none has); without that, "absent" where the trace has no event-record
    call before ``before`` at all, else "unknown" (it records events, not which one)."""
    s = trace.slices
    made = _name_rows(trace, EVENT_RECORD)
    for r in records:
        corr = s.args.get(r, {}).get("wait_on_cuda_event_record_corr_id")
        if isinstance(corr, int) and not isinstance(corr, bool):
            hit = made[np.asarray(s.corr[made]) == corr] if corr >= 0 else made[:0]
            return ("recorded", int(hit[0])) if hit.size else ("absent", None)
    if not (s.start[made] < before).any():
        return "absent", None
    return "unknown", None


def stream_wait(trace: Trace, sync_row: int, stall_start: int) -> StreamWait | None:
    """The stream-wait-event call (on any thread) that can hold the stream the
    synchronizing call ``sync_row`` waits on through its stalled stretch starting at
    ``stall_start`` (``stalled_sync``: no device work runs from there), the latest issued
    of those that qualify; None for none.

    A wait qualifies if it is issued, in the sync's process, before the synchronizing
    call, and the stream it holds runs nothing from the wait until the stall begins
    (work on it would mean the event had come). Where the trace says both streams (the
    wait's ``cuda_sync`` record, the sync's device work or record), the wait's must be
    one the sync waits on, and only that stream must stay idle; where it does not, the
    wait is matched by time: no device work starts on any stream from the wait until
    the stall begins (and none runs through the stall), so the wait's hold, whatever
    its stream, spans the stall."""
    s = trace.slices
    sync_start = int(s.start[sync_row])
    waits = _name_rows(trace, STREAM_WAIT)
    # a stream is its process's: a wait of another process (ranks merged into one
    # trace) holds none of this one's
    pid = trace.lanes[int(s.lane[sync_row])].pid
    ours = np.fromiter((ln.pid == pid for ln in trace.lanes), bool, len(trace.lanes))
    waits = waits[(s.start[waits] < sync_start) & ours[s.lane[waits]]]
    if waits.size == 0:
        return None
    waited = _streams_waited(trace, sync_row)
    # the last start of device work before the stall, on any stream and on each stream
    work = trace.rows_of_cats(DEVICE_WORK_CATS)
    work = work[s.start[work] < stall_start]
    last_any = int(s.start[work].max()) if work.size else None
    last_on: dict[StreamKey, int] = {}
    for lane, t in zip(s.lane[work].tolist(), s.start[work].tolist(), strict=True):
        ln = trace.lanes[lane]
        if ln.stream is not None and t > last_on.get((ln.device, ln.stream), t - 1):
            last_on[(ln.device, ln.stream)] = t
    records = _sync_records(trace, waits)
    for w in waits[np.argsort(-s.start[waits], kind="stable")].tolist():
        own = records.get(w, [])
        streams = {x for x in (_record_stream(trace, r) for r in own) if x is not None}
        stream = next(iter(streams)) if len(streams) == 1 else None
        w0 = int(s.start[w])
        matched: Literal["stream", "time"] = "time"
        last = last_any
        if stream is not None and waited is not None:
            if waited and stream not in waited:
                continue
            last, matched = last_on.get(stream), "stream"
        if last is not None and last >= w0:
            continue  # its stream (or, unmatched, the device) ran work after it
        event, event_row = _waited_event(trace, own, stall_start)
        return StreamWait(w, int(s.lane[w]), w0, None if stream is None else stream[1],
                          matched, event, event_row)
    return None


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
            sync: Set | None = None, stalled: Set | None = None) -> list[Projection]:
    """The projections of one call (the typical call): none without device work.
    ``stalled``: the call's stalled sync stretches (``stalled_sync``), which every model
    keeps, as the caller has them (the verdict reads the same ones); else made here from
    ``sync``, the host thread's synchronizing time (``HostTimeline.category_set``)."""
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
    if stalled is None and sync is not None:
        stalled = stalled_sync(trace, sync, call.start_ns, call.end_ns)
    foreign = _foreign_busy(trace, call, work)
    fused = fuse_chain(trace, mine, call, unprofiled_call_ns, foreign=foreign,
                       stalled=stalled)
    if costs is None:
        return [fused] if fused is not None and not is_graph else []
    common: dict[str, int | float | str] = {
        "nodes": int(work.size), "device_work_ns": int(durs.sum()), "streams": streams,
        "card": costs.card, "card_matched": int(card_matched)}
    if foreign:
        common["foreign_device_ns"] = foreign
    stall = 0 if stalled is None else length(stalled)
    if stall:
        common["stalled_sync_ns"] = stall
    kept = foreign + stall
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
               unprofiled_call_ns: int | None = None, *, foreign: int | None = None,
               stalled: Set | None = None) -> Projection | None:
    """The call with its longest pointwise chain fused into one kernel (None for a chain
    shorter than two). ``foreign``: the call's ``_foreign_busy`` where the caller has it.
    ``stalled``: the call's stalled sync stretches (``stalled_sync``), kept whole: a wait
    for what the trace does not show is no launch's spacing, and fewer launches do not
    shorten it (nor does the unprofiled scale, which is the profiler's cost)."""
    s = trace.slices
    at, n = pointwise_run(trace, launches)
    if n < 2:
        return None
    chain = launches[at:at + n]
    starts = s.start[chain]
    # launch i to launch i+1, for the n-1 removed launches, less any stalled wait in it
    spacing = np.diff(starts)
    stall = 0
    if stalled is not None and stalled[0].size:
        stall = length(stalled)
        spacing = spacing - overlap(stalled, starts[:-1], starts[1:])
    removed = int(spacing.sum())
    ltw = trace.launch_to_work
    chain_work = np.asarray([ltw[r][0] for r in chain.tolist()], np.int64)
    chain_d = s.end[chain_work] - s.start[chain_work]
    work = _work_of(trace, launches)
    all_d = int((s.end[work] - s.start[work]).sum())
    # the backlog the call's nodes queue behind stays under the floor as well
    if foreign is None:
        foreign = _foreign_busy(trace, call, work)
    device_floor = all_d - int(chain_d.sum()) + int(chain_d.max()) + foreign
    api = call.api_ns
    scale = unprofiled_call_ns / api if unprofiled_call_ns and api else 1.0
    k = n - 1

    def after(cut: int) -> int:
        # the call less the stall shrinks by the launches cut; the stall stays as it is
        return max(int(round((api - stall - cut) * scale)), device_floor) + stall

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
                          **({"foreign_device_ns": foreign} if foreign else {}),
                          **({"stalled_sync_ns": stall} if stall else {})})
