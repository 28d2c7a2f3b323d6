"""traceview capture: a reproducible measurement harness around pointwise GPU ops.

The measurement protocol of docs/capture.md (three figures, five traps), automated:
correctness against float64
before speed, inputs outside timed regions, the cold path apart from the warm one, an
unprofiled baseline beside every trace, and all of it recorded in the trace itself.

This package is the only part of traceview that imports torch or triton, and it does
so lazily: importing ``traceview.opcapture`` (config, op table) costs nothing; torch is
imported when a capture runs. Entry point: :func:`run_capture`; the protocol over sizes
is :mod:`traceview.sweep`.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from traceview.workload.config import CaptureConfig, parse_shapes, parse_sweep

if TYPE_CHECKING:
    from traceview.opcapture.protocol import CaptureResult

__all__ = ["CaptureConfig", "parse_shapes", "parse_sweep", "run_capture"]


class _CallablePackage(types.ModuleType):
    """Lets ``traceview.capture(fn, *inputs, reference=...)`` call the Python API while
    ``traceview.opcapture`` stays the package (``traceview.opcapture.api.capture``)."""

    def __call__(self, fn: Any, *inputs: Any, reference: Any = None, **options: Any) -> Any:
        from traceview.opcapture.api import capture as _capture

        return _capture(fn, *inputs, reference=reference, **options)


sys.modules[__name__].__class__ = _CallablePackage


def run_capture(config: CaptureConfig) -> CaptureResult:
    """Run the protocol once; see :mod:`traceview.opcapture.protocol`."""
    from traceview.opcapture.protocol import run_capture as _run

    return _run(config)
