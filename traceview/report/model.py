"""The report: the one typed, frozen object that leaves the analysis layer.

Every renderer (terminal, JSON, markdown, SVG, ranks, diff) and every consumer (ranks,
export, capture's sweep) reads these attributes; nobody reads figures by dict path. The
report holds only plain data (no trace, no arrays), so it is exactly what the JSON holds:
``schema.from_json(schema.to_json(r)) == r``. Figures that several outputs show (the
typical call, the host x device matrix, shares) are computed here once.

Field order is the JSON's key order (``docs/json.md``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import msgspec

from traceview.analyses.breakdown import Cell
from traceview.analyses.callfind import CallsSource
from traceview.analyses.calls import Call, warm_calls
from traceview.analyses.window import WindowSource
from traceview.diagnostics import Diagnostic, Severity
from traceview.errors import UsageError
from traceview.metadata import CaptureMeta, capture_meta
from traceview.report.claims import Claim
from traceview.report.unprofiled import UnprofiledInfo
from traceview.stats import Stats

# A call as the report holds it is the analysis's own frozen type (one class)
CallRow = Call


@dataclass(frozen=True)
class TraceInfo:
    path: str
    slices: int
    metadata: dict[str, Any]
    # capture's own metadata block as recorded, or None; wrong-typed fields set aside
    # (typed: ``Report.capture_meta``)
    capture: dict[str, Any] | None
    python_frames: bool


@dataclass(frozen=True)
class WindowInfo:
    start_ns: int
    end_ns: int
    dur_ns: int
    source: WindowSource
    description: str
    ranges: int | None = None  # the user ranges an annotation window spans


@dataclass(frozen=True)
class DeviceRow:
    """One device: busy is the union over its streams; copies counted apart from kernels."""

    device: int | None
    busy_ns: int
    kernel_count: int
    kernel_sum_ns: int
    kernel_busy_ns: int | None = None  # union of its kernels alone
    copy_count: int | None = None  # memcpy + memset
    copy_sum_ns: int | None = None


@dataclass(frozen=True)
class StreamRow:
    device: int | None
    stream: int | None
    busy_ns: int
    work_count: int


@dataclass(frozen=True)
class KernelRow:
    name: str
    count: int
    sum_ns: int
    stats: Stats  # flattened into the row in JSON (n, p50, p90, p99, min, max, mean)
    # of ``count``, those no launch record links to (run in the window, launched before
    # it or their correlation dropped); written in JSON only where nonzero
    unlinked: int = 0


@dataclass(frozen=True)
class DeviceInfo:
    busy_ns: int
    idle_ns: int
    kernel_count: int
    kernel_sum_ns: int
    memcpy_count: int
    memset_count: int
    work_sum_ns: int
    per_device: tuple[DeviceRow, ...]
    per_stream: tuple[StreamRow, ...]
    kernels: tuple[KernelRow, ...]
    copy_sum_ns: int | None = None  # memcpy + memset durations, clipped to the window

    @property
    def streams_overlap(self) -> bool:
        """Some device work ran on two streams at once (the per-stream sum exceeds busy)."""
        return sum(s.busy_ns for s in self.per_stream) > self.busy_ns


@dataclass(frozen=True)
class ThreadRef:
    pid: int | str
    tid: int | str
    label: str


@dataclass(frozen=True)
class FunctionRow:
    name: str
    category: str
    self_ns: int
    total_ns: int
    count: int
    # per warm call (p50 over the warm calls that contain it; docs/json.md)
    inclusive_ns_per_call: int | None = None
    self_ns_per_call: int | None = None
    calls_with: int = 0
    few_calls: bool = True
    # p50 over the same warm calls of their wall time: what ``inclusive_ns_per_call`` is
    # a share of (at most all of it); None in a report saved before it was kept
    call_ns_per_call: int | None = None


@dataclass(frozen=True)
class IdentityRow:
    """Per warm call, one function several names share (a module's ``forward`` at two
    lines: a model's and its blocks'), as ``diff`` matches functions: the union of
    their intervals in each call (the nested one counted once), p50 over the calls."""

    identity: str  # module and name, no line number (``calltree.function_identity``)
    inclusive_ns_per_call: int
    self_ns_per_call: int
    call_ns_per_call: int
    calls_with: int


@dataclass(frozen=True)
class FamilyRow:
    """A warm call's time by Python module (the innermost frame's module owns an instant)."""

    name: str
    ns_per_call: int
    share: float
    calls_with: int


@dataclass(frozen=True)
class ThreadFunction:
    """A function one of the other host threads ran in the window: ``diff`` matches a
    function on any thread, so one that runs on the calls' thread in one trace and on
    another thread in the other is the same function, never new or gone."""

    name: str
    self_ns: int
    count: int  # its events on this thread in the window (zero-length ones included)


@dataclass(frozen=True)
class OtherThread:
    pid: int | str
    tid: int | str
    label: str
    launches: int
    categories: dict[str, int]
    # the thread's functions by self time, cut as ``host.functions`` is
    # (``functions_limit``); ``functions_total`` before the cut
    functions: tuple[ThreadFunction, ...] = ()
    functions_total: int = 0


@dataclass(frozen=True)
class HostInfo:
    thread: ThreadRef | None
    categories: dict[str, int]
    category_descriptions: dict[str, str]
    functions: tuple[FunctionRow, ...]
    functions_total: int
    other_threads: tuple[OtherThread, ...]
    families: tuple[FamilyRow, ...] = ()
    # the functions several names share, per warm call (``IdentityRow``)
    identities: tuple[IdentityRow, ...] = ()


@dataclass(frozen=True)
class LaunchesInfo:
    count: int
    linked: int
    by_api: dict[str, int]
    by_kind: dict[str, int]
    unlinked_device_work: int
    latency_ns: Stats


@dataclass(frozen=True)
class ElsewhereRow:
    """``--calls`` matches on a thread other than the calls' own, left out of the calls:
    their host rows would be read from the calls' thread, where they did not run."""

    thread: str  # how the outputs name the thread (``pt_autograd_0 [502/543]``)
    calls: int  # the calls its matches make there (outermost matches)


@dataclass(frozen=True)
class KindRow:
    """Calls of one kind (frames of one name, or one range series)."""

    name: str
    count: int
    warm_count: int
    stats: dict[str, Stats]  # over the kind's warm calls; flattened in JSON
    api_sync: Stats


@dataclass(frozen=True)
class TreeRow:
    """A node of the warm calls' top-down tree (p50 over the calls holding it)."""

    name: str
    category: str
    inclusive_ns: int
    self_ns: int
    count: int
    calls_with: int
    children: tuple[TreeRow, ...] = ()
    folded: int = 0  # children under the tree's floor left out
    folded_ns: int = 0


@dataclass(frozen=True)
class PerturbationInfo:
    python_frames_per_call: int | None
    events_per_call: int | None
    profiler_ns_per_call: int | None
    unprofiled_ns: int | None
    unprofiled_share: float | None


@dataclass(frozen=True)
class CallsInfo:
    count: int
    source: CallsSource
    pattern: str | None
    warm_count: int
    cold: tuple[int, ...]
    stats: dict[str, Stats]  # metric -> stats over warm calls; flattened in JSON
    categories: dict[str, Stats]
    per_call: tuple[CallRow, ...]
    description: str = ""
    how: str = ""
    outliers: tuple[int, ...] = ()
    api_sync: Stats | None = None
    kinds: tuple[KindRow, ...] = ()
    tree: tuple[TreeRow, ...] = ()
    perturbation: PerturbationInfo | None = None
    tree_warm_calls: int = 0  # the warm calls the tree and families are over
    # ``--calls`` matches on other threads, left out (``callfind._by_option``), most first
    elsewhere: tuple[ElsewhereRow, ...] = ()

    @property
    def warm(self) -> tuple[CallRow, ...]:
        """The calls the statistics are over (``analyses.calls.warm_calls``: not cold,
        outliers included): explain and ``diff`` read the same calls."""
        return tuple(warm_calls(self.per_call))

    @property
    def has_copies(self) -> bool:
        """Some call launched memcpy/memset work: its device work (``kernel_ns``) is then
        more than kernels, and the outputs show ``kernel_only_ns`` and ``copy_ns`` apart."""
        return any((c.metrics.get("copy_ns") or 0) > 0 for c in self.per_call)


@dataclass(frozen=True)
class Segment:
    """A piece of the typical call's host row: neighbours of one category merged."""

    start_ns: int
    end_ns: int
    category: str


@dataclass(frozen=True)
class TypicalCall:
    """The typical call (``analyses.calls.typical``: a warm call of the dominant kind,
    nearest its kind's p50; lowest index on a tie), the verdict's call, with what
    the waterfall, the Mermaid chart and the SVG draw: host segments clipped to the call,
    device busy intervals up to ``axis_end_ns`` (the call's end or its last device work's)."""

    index: int
    start_ns: int
    end_ns: int
    axis_end_ns: int
    host: tuple[Segment, ...]
    device_busy: tuple[tuple[int, int], ...]
    # a training step's other working threads (the autograd engine's, a data loader's),
    # each clipped to the step like ``host``: the step runs on all of them
    threads: tuple[ThreadLane, ...] = ()


@dataclass(frozen=True)
class ThreadLane:
    """One more host thread's segments inside the typical call."""

    label: str
    host: tuple[Segment, ...]


@dataclass(frozen=True)
class OpInfo:
    """The aten op that launches the most device work on the attributed thread, with its
    recorded args (shapes, types, strides, scalars), for the reproducer template."""

    name: str
    launches: int
    args: dict[str, Any]


@dataclass(frozen=True)
class BytesMoved:
    """Bytes one call must move (``analyses.kernel_bytes``): capture's exact count, or the
    launching op's recorded shapes; ``total`` None when unknown (``source`` says why).
    ``gb_per_s``: total over the per-call device work p50."""

    total: int | None
    source: str
    read: int | None = None
    written: int | None = None
    assumed: str | None = None
    gb_per_s: float | None = None


@dataclass(frozen=True)
class Finding:
    id: str
    severity: Severity
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MatrixRow:
    host: str
    busy_ns: int
    idle_ns: int

    @property
    def total_ns(self) -> int:
        return self.busy_ns + self.idle_ns


@dataclass(frozen=True)
class ThreadRow:
    """One host thread over the window; every figure is this thread's alone."""

    pid: int | str
    tid: int | str
    name: str  # the thread's own name (``pt_autograd_0``), "" when unnamed
    label: str  # how the outputs name it (``main thread [502/502]``)
    role: str  # main | autograd | data | helper | other
    attributed: bool  # the thread the calls and the per-call table are on
    launches: int
    syncs: int
    python_frames: int
    work_ns: int  # traced time that is work: not untraced, not waiting
    categories: dict[str, int]  # this thread's attribution of the window (sums to it)


@dataclass(frozen=True)
class PhaseRow:
    """One phase of a step: wall on the step's thread, the device inside it, and each
    thread's host categories inside it (threads overlap in time: never added)."""

    phase: str
    wall_ns: int
    device_busy_ns: int
    device_idle_ns: int
    host: dict[str, dict[str, int]]  # thread label -> category -> ns


@dataclass(frozen=True)
class PhaseSegment:
    """One stretch of a step in time order: two micro-batches read forward, backward,
    forward, backward, optimizer (``analyses.steps.segments``)."""

    phase: str
    start_ns: int
    end_ns: int


@dataclass(frozen=True)
class PathRow:
    """An item of a step's critical path: what the step waited on, once per ns."""

    kind: str  # host | device | launch_latency | queued
    resource: str  # a thread's label, or a device stream's
    what: str  # the host category, or the kernel/copy name
    ns: int


@dataclass(frozen=True)
class IdleCauseRow:
    """Device idle inside a step charged to what the device waited for."""

    resource: str  # the thread the device waited for; "device" for launch latency,
    # "unknown" where the trace lost the events that would say (``steps.NOT_SHOWN``)
    what: str  # that thread's category, "launch latency" or "not in the trace"
    ns: int


@dataclass(frozen=True)
class StepRow:
    index: int  # the call's index in calls.per_call
    name: str
    start_ns: int
    end_ns: int
    wall_ns: int
    cold: bool
    device_busy_ns: int
    device_idle_ns: int
    phases: tuple[PhaseRow, ...]
    critical_path: tuple[PathRow, ...]  # biggest first; sums to wall_ns
    idle_causes: tuple[IdleCauseRow, ...]  # biggest first; sums to device_idle_ns
    communication_ns: int
    exposed_communication_ns: int
    path_edges: dict[str, int]  # edge kind -> times the path took it
    # the recorded range's end: before end_ns when the step's device work ran on after
    # its range (the extent then ends with that work; phase ``device_tail``)
    range_end_ns: int | None = None
    # the phases as time-ordered segments; short ``other`` pieces (under 1% of the step)
    # left out; reports saved before it existed read ()
    segments: tuple[PhaseSegment, ...] = ()


@dataclass(frozen=True)
class StepsInfo:
    """The calls as training steps (``docs/training.md``)."""

    count: int
    warm_count: int
    thread: str  # the label of the thread the steps ran on
    steps: tuple[StepRow, ...]


@dataclass(frozen=True)
class IntegrityCheck:
    """One kind of damage in the records (``analyses.integrity``): how many, the calls
    and steps it falls in, and the figures (JSON paths) it makes unreliable."""

    id: str
    count: int
    calls: tuple[int, ...]
    steps: tuple[int, ...]
    unreliable: tuple[str, ...]
    ns: int = 0


@dataclass(frozen=True)
class GraphsInfo:
    replays: int
    nodes: Stats  # device records per replay
    graph_ids: int
    captures: int
    instantiations: int
    capture_ns: int


@dataclass(frozen=True)
class IntegrityInfo:
    reliable: bool
    checks: tuple[IntegrityCheck, ...]
    incomplete_calls: tuple[int, ...]  # left out of the warm figures
    unreliable: tuple[str, ...]  # every figure some check makes unreliable
    graphs: GraphsInfo


@dataclass(frozen=True)
class WhatIfRow:
    """A projection of the typical call (``analyses.what_if``): its model's figure, the
    interval and the figures it rests on."""

    scenario: str
    call: int
    measured_ns: int
    projected_ns: int
    low_ns: int
    high_ns: int
    basis: dict[str, int | float | str]


VERDICT_IDS = ("host-bound", "sync-stalled", "device-bound")


@dataclass(frozen=True)
class Report:
    schema_version: int
    trace: TraceInfo
    window: WindowInfo
    device: DeviceInfo
    host: HostInfo
    breakdown: tuple[Cell, ...]
    launches: LaunchesInfo
    calls: CallsInfo
    findings: tuple[Finding, ...]
    diagnostics: tuple[Diagnostic, ...]
    typical_call: TypicalCall | None = None
    op: OpInfo | None = None
    bytes_moved: BytesMoved | None = None
    threads: tuple[ThreadRow, ...] = ()  # every host thread with events in the window
    steps: StepsInfo | None = None  # set when the calls are training steps
    unprofiled: UnprofiledInfo | None = None  # the call's split without the profiler
    # every sentence the outputs print, as the figures it cites (report.claims)
    claims: tuple[Claim, ...] = ()
    integrity: IntegrityInfo | None = None  # what the profiler failed to record
    what_if: tuple[WhatIfRow, ...] = ()  # the typical call's projections

    def matrix(self) -> list[MatrixRow]:
        """The breakdown pivoted to one row per host category, biggest total first."""
        by: dict[str, dict[str, int]] = {}
        for c in self.breakdown:
            by.setdefault(c.host, {})[c.device] = c.ns
        rows = [MatrixRow(h, v.get("busy", 0), v.get("idle", 0)) for h, v in by.items()]
        return sorted(rows, key=lambda r: -r.total_ns)

    @property
    def busy_share(self) -> float | None:
        """Device busy / window, unrounded (``None`` for an empty window)."""
        w = self.window.dur_ns
        return self.device.busy_ns / w if w > 0 else None

    @property
    def verdict(self) -> Finding | None:
        return next((f for f in self.findings if f.id in VERDICT_IDS), None)

    @property
    def capture(self) -> dict[str, Any]:
        """Capture's metadata as recorded, a dict ({} when the trace was not made by
        capture): what the JSON shows and what other tools' fields are read from."""
        return self.trace.capture if isinstance(self.trace.capture, dict) else {}

    @property
    def capture_meta(self) -> CaptureMeta | None:
        """Capture's metadata, typed (``metadata.CaptureMeta``); None when the trace was
        not made by capture."""
        return capture_meta(self.trace.capture)

    @property
    def typical(self) -> CallRow | None:
        t = self.typical_call
        return None if t is None else self.calls.per_call[t.index]

    def to_dict(self) -> dict[str, Any]:
        """The JSON report as builtins (``docs/json.md``)."""
        return to_dict(self)


# The dict form (schema 2). Every map of metric names sits under a key of its own
# (``calls.stats``, each call's ``metrics``, each kind's ``stats``), so each object's keys are
# fixed and read here by name. The JSON differs from the report's fields in two ways: a
# kernel's stats (the fixed keys of ``_STATS_KEYS``) sit in its row, and ``api_sync`` is
# written ``api_sync_ns``. Reports of schema 1 are read through ``schema.from_dict``.
_STATS_KEYS = ("n", "p50", "p90", "p99", "min", "max", "mean")


def _stats(s: Stats) -> dict[str, int | None]:
    return {k: getattr(s, k) for k in _STATS_KEYS}


_NESTED = frozenset({dict, list, tuple})


def _lists(x: Any) -> Any:
    """Tuples (the report's frozen sequences) as lists, as JSON reads them back.
    ``to_builtins`` gives exact builtin types; scalars are passed without a call (a report
    of 100,000 calls holds millions of them)."""
    if type(x) is dict:
        return {k: _lists(v) if type(v) in _NESTED else v for k, v in x.items()}
    if type(x) is list or type(x) is tuple:
        return [_lists(v) if type(v) in _NESTED else v for v in x]
    return x


_NO_CALLS = CallsInfo(0, "none", None, 0, (), {}, {}, ())


def to_dict(r: Report, *, for_orjson: bool = False) -> dict[str, Any]:
    """The report as JSON-ready builtins, in the documented key order. ``for_orjson``: the
    form orjson writes the same document from (``schema.to_json``), not builtins: the
    report's tuples stay tuples (orjson writes them as arrays, as it does lists: the walk
    that makes them lists took a tenth of a run with many steps), and ``per_call`` is the
    report's own ``CallRow`` dataclasses, which orjson writes field by field, in order, as
    ``to_builtins`` makes them (they have slots: orjson writes a dataclass without them
    from its ``__dict__``, whose keys need not be the fields). Their builtin copy was three dicts a call made and dropped
    at once: at 60,000 calls, 180,000 containers that set off the cyclic collector's
    walks of every live object and 50 MB of fresh pages, so the JSON's time per call
    doubled from 6,000 calls to 60,000; written directly, it stays flat
    (``benchmarks/scaling.py``, docs/performance.md)."""
    lists = (lambda x: x) if for_orjson else _lists
    # calls are written below, field by field: leave them out of the generic pass
    d = lists(msgspec.to_builtins(dataclasses.replace(r, calls=_NO_CALLS), order=None))
    tc = d.get("typical_call")
    if tc is not None and not tc.get("threads", True):
        del tc["threads"]  # only a training step's other threads: absent, not empty, elsewhere
    dev = d["device"]
    dev["kernels"] = [{"name": k.name, "count": k.count, "sum_ns": k.sum_ns, **_stats(k.stats),
                       **({"unlinked": k.unlinked} if k.unlinked else {})}
                      for k in r.device.kernels]
    c = r.calls
    d["calls"] = {
        "count": c.count,
        "source": c.source,
        "pattern": c.pattern,
        "warm_count": c.warm_count,
        "cold": list(c.cold),
        "stats": {m: _stats(s) for m, s in c.stats.items()},
        "categories": {k: _stats(s) for k, s in c.categories.items()},
        # CallRow's fields, in order; they hold no sequences, so only the outer tuple
        # needs to become a list (a walk over 100,000 rows costs seconds)
        "per_call": c.per_call if for_orjson else list(msgspec.to_builtins(c.per_call)),
        "description": c.description,
        "how": c.how,
        "outliers": list(c.outliers),
        "api_sync_ns": None if c.api_sync is None else _stats(c.api_sync),
        "kinds": [{"name": k.name, "count": k.count, "warm_count": k.warm_count,
                   "stats": {m: _stats(s) for m, s in k.stats.items()},
                   "api_sync_ns": _stats(k.api_sync)} for k in c.kinds],
        "tree": lists(msgspec.to_builtins(c.tree)),
        "tree_warm_calls": c.tree_warm_calls,
        "perturbation": None if c.perturbation is None else msgspec.to_builtins(c.perturbation),
        "elsewhere": [{"thread": e.thread, "calls": e.calls} for e in c.elsewhere],
    }
    return d


def from_dict(d: dict[str, Any]) -> Report:
    """The report a dict of the current schema's layout stands for (``to_dict``'s output);
    ``UsageError`` naming the first bad key. A saved file of any schema goes through
    ``schema.from_dict``, which brings older layouts to this one first."""
    try:
        d = dict(d)
        dev = dict(d["device"])
        dev["kernels"] = [msgspec.convert(
            {"name": k["name"], "count": k["count"], "sum_ns": k["sum_ns"],
             "stats": {s: k.get(s) for s in _STATS_KEYS}, "unlinked": k.get("unlinked", 0)},
            KernelRow)
            for k in dev["kernels"]]
        d["device"] = dev
        calls = d["calls"]
        sync = calls.get("api_sync_ns")
        d["calls"] = CallsInfo(
            count=calls["count"], source=calls["source"], pattern=calls["pattern"],
            warm_count=calls["warm_count"], cold=tuple(calls["cold"]),
            stats=msgspec.convert(calls["stats"], dict[str, Stats]),
            categories=msgspec.convert(calls["categories"], dict[str, Stats]),
            per_call=msgspec.convert(calls["per_call"], tuple[CallRow, ...]),
            description=calls.get("description", ""), how=calls.get("how", ""),
            outliers=tuple(calls.get("outliers", ())),
            api_sync=None if sync is None else msgspec.convert(sync, Stats),
            kinds=tuple(KindRow(k["name"], k["count"], k["warm_count"],
                                msgspec.convert(k["stats"], dict[str, Stats]),
                                msgspec.convert(k["api_sync_ns"], Stats))
                        for k in calls.get("kinds", ())),
            tree=msgspec.convert(calls.get("tree", []), tuple[TreeRow, ...]),
            perturbation=None if calls.get("perturbation") is None else msgspec.convert(
                calls["perturbation"], PerturbationInfo),
            tree_warm_calls=calls.get("tree_warm_calls", 0),
            elsewhere=tuple(ElsewhereRow(e["thread"], e["calls"])
                            for e in calls.get("elsewhere", ())),
        )
        return msgspec.convert(d, Report, from_attributes=True)
    except (msgspec.ValidationError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"not an explain report: {exc}") from None
