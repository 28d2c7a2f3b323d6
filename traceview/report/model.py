"""The report: the one typed, frozen object that leaves the analysis layer.

Every renderer (terminal, JSON, markdown, SVG, ranks, diff) and every consumer (ranks,
export, capture's sweep) reads these attributes; nobody reads figures by dict path. The
report holds only plain data (no trace, no arrays), so it is exactly what the JSON holds:
``schema.from_json(schema.to_json(r)) == r``. Figures that several outputs show (the
typical call, the host x device matrix, shares) are computed here once.

Field order is the JSON's key order (``docs/json.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from traceview.diagnostics import Diagnostic, Severity
from traceview.stats import Stats

DeviceState = Literal["busy", "idle"]
WindowSource = Literal["activity", "annotation", "range", "empty"]
CallsSource = Literal["annotations", "launches", "none"]


@dataclass(frozen=True)
class TraceInfo:
    path: str
    slices: int
    metadata: dict[str, Any]
    capture: Any  # capture's own metadata (a dict) or None; wrong-typed fields set aside
    python_frames: bool


@dataclass(frozen=True)
class WindowInfo:
    start_ns: int
    end_ns: int
    dur_ns: int
    source: WindowSource
    description: str


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


@dataclass(frozen=True)
class OtherThread:
    pid: int | str
    tid: int | str
    label: str
    launches: int
    categories: dict[str, int]


@dataclass(frozen=True)
class HostInfo:
    thread: ThreadRef | None
    categories: dict[str, int]
    category_descriptions: dict[str, str]
    functions: tuple[FunctionRow, ...]
    functions_total: int
    other_threads: tuple[OtherThread, ...]


@dataclass(frozen=True)
class Cell:
    host: str
    device: DeviceState
    ns: int


@dataclass(frozen=True)
class LaunchesInfo:
    count: int
    linked: int
    by_api: dict[str, int]
    by_kind: dict[str, int]
    unlinked_device_work: int
    latency_ns: Stats


@dataclass(frozen=True)
class CallRow:
    index: int
    name: str
    start_ns: int
    end_ns: int
    cold: bool
    launches: int
    kernels: int
    metrics: dict[str, int | None]  # flattened into the row in JSON
    categories: dict[str, int]


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

    @property
    def warm(self) -> tuple[CallRow, ...]:
        return tuple(c for c in self.per_call if not c.cold) or self.per_call


@dataclass(frozen=True)
class Segment:
    """A piece of the typical call's host row: neighbours of one category merged."""

    start_ns: int
    end_ns: int
    category: str


@dataclass(frozen=True)
class TypicalCall:
    """The warm call whose wall time is nearest the p50 (lowest index on a tie), with what
    the waterfall, the Mermaid chart and the SVG draw: host segments clipped to the call,
    device busy intervals up to ``axis_end_ns`` (the call's end or its last device work's)."""

    index: int
    start_ns: int
    end_ns: int
    axis_end_ns: int
    host: tuple[Segment, ...]
    device_busy: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class OpInfo:
    """The aten op that launches the most device work on the attributed thread, with its
    recorded args (shapes, types, strides, scalars), for the reproducer template."""

    name: str
    launches: int
    args: dict[str, Any]


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


VERDICT_IDS = ("host-bound", "device-bound")


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

    def matrix(self) -> list[MatrixRow]:
        """The breakdown pivoted to one row per host category, biggest total first."""
        by: dict[str, dict[str, int]] = {}
        for c in self.breakdown:
            by.setdefault(c.host, {})[c.device] = c.ns
        rows = [MatrixRow(h, v.get("busy", 0), v.get("idle", 0)) for h, v in by.items()]
        return sorted(rows, key=lambda r: -r.total_ns)

    @property
    def verdict(self) -> Finding | None:
        return next((f for f in self.findings if f.id in VERDICT_IDS), None)

    @property
    def capture(self) -> dict[str, Any]:
        """Capture's metadata as a dict ({} when the trace was not made by capture)."""
        return self.trace.capture if isinstance(self.trace.capture, dict) else {}

    @property
    def typical(self) -> CallRow | None:
        t = self.typical_call
        return None if t is None else self.calls.per_call[t.index]

    def to_dict(self) -> dict[str, Any]:
        from traceview.report.schema import to_dict

        return to_dict(self)
