"""traceview capture: a reproducible measurement harness around pointwise GPU ops.

The measurement protocol of docs/capture.md (three figures, five traps), automated:
correctness against float64
before speed, inputs outside timed regions, the cold path apart from the warm one, an
unprofiled baseline beside every trace, and all of it recorded in the trace itself.

Like the rest of the measuring half it imports torch and triton lazily: importing
``traceview.opcapture`` costs nothing; torch is imported when a capture runs. Entry
point: :func:`run_capture`; for a live callable, ``traceview.capture`` (the facade's
function, which calls :func:`traceview.opcapture.api.capture`); the protocol over
sizes is :mod:`traceview.sweep`. What it runs (config, ops, inputs, implementations,
device) is :mod:`traceview.workload`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traceview.workload.config import CaptureConfig, parse_shapes, parse_sweep

if TYPE_CHECKING:
    from traceview.opcapture.protocol import CaptureResult

__all__ = ["CaptureConfig", "parse_shapes", "parse_sweep", "run_capture"]


def run_capture(config: CaptureConfig) -> CaptureResult:
    """Run the protocol once; see :mod:`traceview.opcapture.protocol`."""
    from traceview.opcapture.protocol import run_capture as _run

    return _run(config)
