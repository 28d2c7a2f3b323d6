"""traceview capture: a reproducible measurement harness around pointwise GPU ops.

The seed's three measurements and five traps, automated: correctness against float64
before speed, inputs outside timed regions, the cold path apart from the warm one, an
unprofiled baseline beside every trace, and all of it recorded in the trace itself.

This package is the only part of traceview that imports torch or triton, and it does
so lazily: importing ``traceview.capture`` (config, op table) costs nothing; torch is
imported when a capture runs. Entry points: :func:`run_capture`, :func:`run_sweep` (returns
a ``SweepResult``) and :func:`write_sweep` (its ``sweep.json`` and ``sweep.md``).
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from traceview.capture.config import CaptureConfig, parse_shapes, parse_sweep

if TYPE_CHECKING:
    from pathlib import Path

    from traceview.capture.protocol import CaptureResult
    from traceview.capture.sweep import SweepResult

__all__ = ["CaptureConfig", "parse_shapes", "parse_sweep", "run_capture", "run_sweep",
           "write_sweep"]


class _CallablePackage(types.ModuleType):
    """Lets ``traceview.capture(fn, *inputs, reference=...)`` call the Python API while
    ``traceview.capture`` stays the package (``traceview.capture.api.capture``)."""

    def __call__(self, fn: Any, *inputs: Any, reference: Any = None, **options: Any) -> Any:
        from traceview.capture.api import capture as _capture

        return _capture(fn, *inputs, reference=reference, **options)


sys.modules[__name__].__class__ = _CallablePackage


def run_capture(config: CaptureConfig) -> CaptureResult:
    """Run the protocol once; see :mod:`traceview.capture.protocol`."""
    from traceview.capture.protocol import run_capture as _run

    return _run(config)


def run_sweep(config: CaptureConfig, sizes: list[int], **kwargs: Any) -> SweepResult:
    """Run the protocol over sizes; see :mod:`traceview.capture.sweep`."""
    from traceview.capture.sweep import run_sweep as _run

    return _run(config, sizes, **kwargs)


def write_sweep(result: SweepResult) -> list[Path]:
    """Write a sweep's ``sweep.json`` and ``sweep.md``; see :mod:`traceview.capture.sweep_report`."""
    from traceview.capture.sweep_report import write_sweep as _write

    return _write(result)
