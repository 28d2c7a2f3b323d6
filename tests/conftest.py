from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from tracebuilder import TraceBuilder  # noqa: E402

FIXTURES = Path(__file__).parent.parent / "fixtures"


@pytest.fixture
def tb() -> TraceBuilder:
    return TraceBuilder()


@pytest.fixture
def analyze_builder(tmp_path):
    """Write a builder's trace to disk and run the full pipeline on it."""
    import traceview

    def run(builder: TraceBuilder, **opts):
        path = builder.write(tmp_path / "t.json")
        return traceview.analyze(path, traceview.Options(**opts))

    return run


@pytest.fixture
def analysis_builder(tmp_path):
    """Like analyze_builder, but the frozen analysis (the analyses' own typed results,
    with the trace) rather than the Report: for tests of the analyses themselves."""
    import traceview
    from traceview.report.explanation import analyze_trace

    def run(builder: TraceBuilder, **opts):
        path = builder.write(tmp_path / "t.json")
        return analyze_trace(traceview.load(path), traceview.Options(**opts))

    return run
