"""explain's report of a capture's trace, for capture's summary
(:mod:`traceview.render.measured.capture`): optional, so a capture whose trace explain
cannot read still prints its baseline and keeps the trace for a later ``traceview
explain``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from traceview.report.model import Report


#: ``host.functions`` rows kept for the summary: all of them (see :func:`harness_python`).
ALL_FUNCTIONS = 10**9


def analyze_trace(path: Path) -> tuple[Report | None, str | None]:
    """(explain's report, None) or (None, why not)."""
    try:
        from traceview.report.pipeline import analyze  # may not be installed
    except Exception as exc:  # noqa: BLE001  (ImportError, or a missing optional dependency)
        return None, f"explain unavailable ({type(exc).__name__}: {exc})"
    from traceview.options import Options

    try:  # every host function, not explain's top 50: harness_python sums traceview's
        return analyze(path, Options(functions_limit=ALL_FUNCTIONS)), None
    except Exception as exc:  # noqa: BLE001  (explain's problem must not lose a capture)
        return None, f"explain failed on {path.name} ({type(exc).__name__}: {exc})"


@dataclass(frozen=True)
class CaptureSummary:
    """What ``traceview capture`` prints after one capture."""

    meta: dict[str, Any]
    trace: Path
    cold: Path
    analysis: Report | None
    why_not: str | None

    def to_dict(self) -> dict[str, Any]:
        """``capture --format json``: the paths and the metadata."""
        return {"trace": str(self.trace), "cold_trace": str(self.cold), "traceview": self.meta}
