"""``--sweep``: the protocol over sizes, and the FlagGems #4812 table it adds up to.

For each size the full protocol runs (cold call, correctness, baseline, trace), so each
row is as trustworthy as a single capture. The table puts the device kernel time next
to the full API time; their difference is the host gap. For small ops the gap is fixed
(Python dispatch, launch) and dominates; as the op grows the kernel catches up. The
*crossover* is the first size at which the kernel takes at least as long as the host
gap, i.e. where the kernel starts to hide the host cost.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from traceview.capture import ops
from traceview.capture.config import CaptureConfig
from traceview.capture.protocol import run_capture
from traceview.capture.summary import analyze_trace, markdown
from traceview.capture.tracefile import Publisher
from traceview.errors import CaptureError
from traceview.stats import median

DEFINITIONS = {
    "kernel_ns": "device kernel time per call, median over profiled calls (explain's "
                 "calls.kernel_ns.p50); falls back to device_ns when explain is unavailable",
    "device_ns": "device time per op from CUDA graph replay timed with events (unprofiled)",
    "full_api_ns": "one synchronised call, median (unprofiled)",
    "host_gap_ns": "full_api_ns - kernel_ns",
    "crossover": "first numel where kernel_ns >= host_gap_ns",
    "fixed_host_gap_ns": "median host_gap_ns of the sizes below the crossover (all sizes "
                         "when there is none)",
}


@dataclass
class SweepResult:
    folder: Path
    rows: list[dict[str, Any]]
    crossover_numel: int | None
    fixed_host_gap_ns: int | None
    files: list[Path] = field(default_factory=list)


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
    from traceview.capture.device import open_device

    open_device(config)
    return folder


def run_sweep(config: CaptureConfig, sizes: list[int], folder: Path | None = None,
              on_row: Callable[[dict[str, Any]], None] | None = None) -> SweepResult:
    """Capture every size into ``folder``, then write ``sweep.json`` and ``sweep.md``.

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
            row = {"numel": n, "error": str(exc)}
        else:
            first_meta = first_meta or captured.metadata
            row = _row(n, captured.metadata, captured.path, folder)
        rows.append(row)
        if on_row is not None:
            on_row(row)

    if first_meta is None:  # not one size ran: the sweep failed as a whole
        raise CaptureError(f"--sweep: no size could be captured; first error: {rows[0]['error']}")
    crossover, fixed = _crossover(rows)
    result = SweepResult(folder, rows, crossover, fixed)
    summary = {
        "traceview_sweep": 1,
        "op": config.op, "impl": config.impl, "dtype": config.dtype, "mode": config.mode,
        "layout": config.layout, "scalar": config.scalar, "device": config.device,
        "command": config.command,
        "sizes": sizes,
        "rows": rows,
        "crossover_numel": crossover,
        "fixed_host_gap_ns": fixed,
        "definitions": DEFINITIONS,
    }
    if first_meta is not None:
        summary["device_info"] = first_meta["device"]
        summary["versions"] = first_meta["versions"]
        summary["protocol"] = first_meta["protocol"]
    with Publisher() as pub:
        pub.stage(folder / "sweep.json", json.dumps(summary, indent=2).encode())
        pub.stage(folder / "sweep.md", markdown(summary).encode())
        pub.commit()
    result.files = [folder / "sweep.json", folder / "sweep.md"]
    return result


def _row(n: int, meta: dict[str, Any], path: Path, folder: Path) -> dict[str, Any]:
    base = meta["baseline"]
    analysis, why_not = analyze_trace(path)
    trace_kernel = None if analysis is None else analysis.calls.stats["kernel_ns"].p50
    kernel = trace_kernel if trace_kernel is not None else base.get("device_ns")
    full = base["full_api_ns_p50"]
    return {
        "numel": n,
        "kernel_ns": None if kernel is None else int(kernel),
        "kernel_source": ("trace" if trace_kernel is not None
                          else "graph" if kernel is not None else None),
        "device_ns": base.get("device_ns"),
        "full_api_ns": full,
        "amortized_submit_ns": base["amortized_submit_ns"],
        "host_gap_ns": None if kernel is None else int(full - kernel),
        "trace_api_ns": None if analysis is None else analysis.calls.stats["api_ns"].p50,
        "trace": str(path.relative_to(folder)) if path.is_relative_to(folder) else str(path),
        "cold_wall_ns": meta["cold"]["wall_ns"],
        "explain": None if analysis is not None else why_not,
    }


def _crossover(rows: list[dict[str, Any]]) -> tuple[int | None, int | None]:
    ok = [r for r in rows if r.get("kernel_ns") is not None]
    crossover = next((r["numel"] for r in ok if r["kernel_ns"] >= r["host_gap_ns"]), None)
    below = [r["host_gap_ns"] for r in ok if crossover is None or r["numel"] < crossover]
    fixed = int(median(below)) if below else None
    return crossover, fixed
