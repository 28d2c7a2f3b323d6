"""The capture protocol over sizes: :func:`run_sweep` returns a ``SweepResult``,
:func:`write_sweep` writes its ``sweep.json`` and ``sweep.md``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from traceview.sweep.sweep import SweepResult
    from traceview.workload.config import CaptureConfig

__all__ = ["run_sweep", "write_sweep"]


def run_sweep(config: CaptureConfig, sizes: list[int], **kwargs: Any) -> SweepResult:
    """Run the protocol over sizes; see :mod:`traceview.sweep.sweep`."""
    from traceview.sweep.sweep import run_sweep as _run

    return _run(config, sizes, **kwargs)


def write_sweep(result: SweepResult) -> list[Path]:
    """Write a sweep's ``sweep.json`` and ``sweep.md``; see :mod:`traceview.sweep.sweep_report`."""
    from traceview.sweep.sweep_report import write_sweep as _write

    return _write(result)
