"""``--sweep``: the protocol over sizes, and the FlagGems #4812 table it adds up to.

For each size the full protocol runs (cold call, correctness, baseline, trace), so each
row is as trustworthy as a single capture. The table puts the device kernel time next
to the full API time; their difference is the host gap. For small ops the gap is fixed
(Python dispatch, launch) and dominates; as the op grows the kernel catches up. The
*crossover* is the first size at which the kernel takes at least as long as the host
gap, i.e. where the kernel starts to hide the host cost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from traceview.errors import CaptureError
from traceview.opcapture.protocol import run_capture
from traceview.opcapture.summary import analyze_trace
from traceview.stats import median
from traceview.workload import ops
from traceview.workload.config import CaptureConfig

DEFINITIONS = {
    "kernel_ns": "device work per call, median over profiled calls (explain's "
                 "calls.stats.kernel_ns.p50: the kernels and any memcpy/memset the call launched; "
                 "copy_ns says how much of it is copies); falls back to device_ns when "
                 "explain is unavailable",
    "copy_ns": "memcpy/memset work per call, median over profiled calls (explain's "
               "calls.stats.copy_ns.p50); null when kernel_ns is not from the trace",
    "device_ns": "device time per op from CUDA graph replay timed with events (unprofiled)",
    "full_api_ns": "one synchronised call, median (unprofiled)",
    "host_gap_ns": "full_api_ns - kernel_ns",
    "crossover": "first numel where kernel_ns >= host_gap_ns",
    "fixed_host_gap_ns": "median host_gap_ns of the sizes below the crossover (all sizes "
                         "when there is none)",
    "bytes": "bytes one call must move: each distinct input element read once, each output "
             "element written once (from the tensors' shapes, dtypes and strides)",
    "gb_per_s": "bytes / device_ns (10**9 bytes per second)",
    "share_of_copy_same_bytes": "gb_per_s / the rate of a device-to-device copy moving the "
                                "same bytes, timed like device_ns in the capturing process",
    "share_of_copy_peak": "gb_per_s / the rate of a 512 MB device-to-device copy (read + "
                          "written) in the same process, recorded into a CUDA graph: "
                          "this device's copy rate, not its limit (on the H200 FlagGems "
                          "add streams 1.6x faster)",
    "bandwidth_bound_numel": "first numel whose gb_per_s is at least half of the copy peak; "
                             "below it the kernel is latency-bound",
}


@dataclass(frozen=True)
class SweepRow:
    """One size: its figures, or the one-line ``error`` that kept it from running."""

    numel: int
    error: str | None = None
    kernel_ns: int | None = None
    kernel_source: str | None = None  # "trace" | "graph" | None
    copy_ns: int | None = None
    device_ns: int | None = None
    full_api_ns: int | None = None
    amortized_submit_ns: int | None = None
    host_gap_ns: int | None = None
    trace_api_ns: int | None = None
    trace: str | None = None  # the size's trace, relative to the sweep's folder
    cold_wall_ns: int | None = None
    explain: str | None = None  # why explain could not read the trace
    bytes: int | None = None  # moved per call (capture's bandwidth block)
    gb_per_s: float | None = None
    share_of_copy_same_bytes: float | None = None
    share_of_copy_peak: float | None = None
    copy_peak_gb_per_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The row of ``sweep.json``: ``{numel, error}`` for a size that failed."""
        if self.error is not None:
            return {"numel": self.numel, "error": self.error}
        d = asdict(self)
        del d["error"]
        return d


@dataclass(frozen=True)
class SweepResult:
    """What a sweep measured. :func:`run_sweep` writes only the sizes' traces (each
    capture's own); ``sweep.json`` and ``sweep.md`` are written from this by
    ``traceview.sweep.sweep_report.write_sweep``."""

    config: CaptureConfig
    folder: Path
    sizes: tuple[int, ...]
    rows: tuple[SweepRow, ...]
    crossover_numel: int | None
    fixed_host_gap_ns: int | None
    device_info: dict[str, Any]
    versions: dict[str, Any]
    protocol: dict[str, Any]

    @property
    def bandwidth_bound_numel(self) -> int | None:
        return bandwidth_bound(self.rows)

    def summary(self) -> dict[str, Any]:
        """The content of ``sweep.json``."""
        c = self.config
        return {
            "traceview_sweep": 1,
            "op": c.op, "impl": c.impl, "dtype": c.dtype, "mode": c.mode,
            "layout": c.layout, "scalar": c.scalar, "device": c.device,
            "command": c.command,
            "sizes": list(self.sizes),
            "rows": [r.to_dict() for r in self.rows],
            "crossover_numel": self.crossover_numel,
            "fixed_host_gap_ns": self.fixed_host_gap_ns,
            "bandwidth_bound_numel": self.bandwidth_bound_numel,
            "definitions": DEFINITIONS,
            "device_info": self.device_info,
            "versions": self.versions,
            "protocol": self.protocol,
        }


def default_folder(config: CaptureConfig) -> Path:
    return Path(f"traceview-sweep-{config.op}-{config.impl}-"
                f"{ops.DTYPE_SHORT[config.dtype]}-{config.mode}")


def _shapes_for(config: CaptureConfig, n: int) -> tuple[tuple[int, ...], ...]:
    """1-D inputs of ``n`` elements (two for a tensor-tensor op given two shapes)."""
    return ((n,), (n,)) if len(config.shapes) == 2 else ((n,),)


def preflight(config: CaptureConfig, sizes: list[int], folder: Path | None) -> Path:
    """Fail once, before any size runs, on a bad combination, a bad ``--out`` or no GPU
    (rather than once per size). Returns the output folder."""
    folder = folder or default_folder(config)
    if str(folder).endswith((".json", ".json.gz")):
        raise CaptureError(f"--out {folder}: with --sweep, --out names a folder")
    config.with_(shapes=_shapes_for(config, sizes[0]), out=None).validate()
    from traceview.workload.device import open_device

    open_device(config)
    return folder


def run_sweep(config: CaptureConfig, sizes: list[int], folder: Path | None = None,
              on_row: Callable[[SweepRow], None] | None = None) -> SweepResult:
    """Capture every size into ``folder`` (each size's trace and cold twin, as a capture
    writes them) and return what was measured; the summary files are the caller's.

    A size that cannot run (e.g. too large for memory) becomes a row with ``error`` and
    the sweep goes on; a correctness failure stops everything (exit 3).
    """
    folder = preflight(config, sizes, folder)
    with_stack = False if config.with_stack is None else config.with_stack
    rows = []
    first_meta: dict[str, Any] | None = None
    for n in sizes:
        cfg = config.with_(shapes=_shapes_for(config, n), with_stack=with_stack,
                           out=folder / f"numel_{n}.json.gz")
        try:
            captured = run_capture(cfg)
        except CaptureError as exc:
            if type(exc) is not CaptureError:  # CorrectnessError: stop
                raise
            row = SweepRow(n, error=str(exc))
        else:
            first_meta = first_meta or captured.metadata
            row = _row(n, captured.metadata, captured.path, folder)
        rows.append(row)
        if on_row is not None:
            on_row(row)

    if first_meta is None:  # not one size ran: the sweep failed as a whole
        raise CaptureError(f"--sweep: no size could be captured; first error: {rows[0].error}")
    crossover, fixed = _crossover(rows)
    return SweepResult(config, folder, tuple(sizes), tuple(rows), crossover, fixed,
                       first_meta["device"], first_meta["versions"], first_meta["protocol"])


def _row(n: int, meta: dict[str, Any], path: Path, folder: Path) -> SweepRow:
    base = meta["baseline"]
    analysis, why_not = analyze_trace(path)
    st = None if analysis is None else analysis.calls.stats
    trace_kernel = None if st is None else st["kernel_ns"].p50
    kernel = trace_kernel if trace_kernel is not None else base.get("device_ns")
    copy = st["copy_ns"].p50 if st is not None and trace_kernel is not None else None
    full = base["full_api_ns_p50"]
    bw = meta.get("bandwidth") or {}
    peak = (bw.get("copy") or {}).get("peak") or {}
    return SweepRow(
        numel=n,
        kernel_ns=None if kernel is None else int(kernel),
        kernel_source=("trace" if trace_kernel is not None
                       else "graph" if kernel is not None else None),
        copy_ns=copy,
        device_ns=base.get("device_ns"),
        full_api_ns=full,
        amortized_submit_ns=base["amortized_submit_ns"],
        host_gap_ns=None if kernel is None else int(full - kernel),
        trace_api_ns=None if st is None else st["api_ns"].p50,
        trace=str(path.relative_to(folder)) if path.is_relative_to(folder) else str(path),
        cold_wall_ns=meta["cold"]["wall_ns"],
        explain=None if analysis is not None else why_not,
        bytes=(bw.get("bytes") or {}).get("total"),
        gb_per_s=bw.get("gb_per_s"),
        share_of_copy_same_bytes=bw.get("share_of_copy_same_bytes"),
        share_of_copy_peak=bw.get("share_of_copy_peak"),
        copy_peak_gb_per_s=peak.get("gb_per_s"),
    )


def bandwidth_bound(rows: tuple[SweepRow, ...] | list[SweepRow]) -> int | None:
    """The first numel whose achieved GB/s is at least half of the measured copy peak."""
    for r in rows:
        if r.share_of_copy_peak is not None and r.share_of_copy_peak >= 0.5:
            return r.numel
    return None


def _crossover(rows: list[SweepRow]) -> tuple[int | None, int | None]:
    # (numel, kernel, host gap) of the sizes with both figures (the gap is None exactly
    # when the kernel is)
    ok = [(r.numel, r.kernel_ns, r.host_gap_ns) for r in rows
          if r.kernel_ns is not None and r.host_gap_ns is not None]
    crossover = next((numel for numel, kernel, gap in ok if kernel >= gap), None)
    below = [gap for numel, _, gap in ok if crossover is None or numel < crossover]
    fixed = int(median(below)) if below else None
    return crossover, fixed
