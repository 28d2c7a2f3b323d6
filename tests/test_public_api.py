"""The documented Python API as user code writes it, type-checked by mypy in CI.

This file is in mypy's ``files`` (``pyproject.toml``), so it is checked as a user's
module would be: every call below must type-check against the package's annotations
(``traceview/py.typed`` marks the package as typed for installed users). The tests also
run it, so the names the annotations promise exist at run time.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import traceview
from traceview import Options

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "torch_mul_1x4096_f32.json.gz"


def p50_api_ns(report: traceview.Report) -> int | None:
    """A user's helper annotated with the exported types."""
    stats: traceview.Stats = report.calls.stats["api_ns"]
    return stats.p50


def busy_cells(report: traceview.Report) -> list[traceview.Cell]:
    return [c for c in report.breakdown if c.device == "busy"]


def test_load_explain_analyze_and_the_report_types() -> None:
    trace: traceview.Trace = traceview.load(FIXTURE)
    report: traceview.Report = traceview.explain(trace, Options(top=5))
    assert isinstance(report, traceview.Report)
    again: traceview.Report = traceview.analyze(FIXTURE)
    assert p50_api_ns(report) == p50_api_ns(again) is not None
    info: traceview.TraceInfo = report.trace
    window: traceview.WindowInfo = report.window
    calls: traceview.CallsInfo = report.calls
    first: traceview.CallRow = calls.per_call[0]
    findings: tuple[traceview.Finding, ...] = report.findings
    diagnostics: tuple[traceview.Diagnostic, ...] = report.diagnostics
    assert info.slices > 0 and window.dur_ns > 0 and first.end_ns > first.start_ns
    assert all(isinstance(f, traceview.Finding) for f in findings)
    assert all(isinstance(g, traceview.Diagnostic) for g in diagnostics)
    assert sum(c.ns for c in busy_cells(report)) == report.device.busy_ns
    doc: dict[str, Any] = report.to_dict()
    assert doc["calls"]["count"] == calls.count


def test_ranks_and_proton() -> None:
    ranks: traceview.RanksReport = traceview.analyze_ranks([FIXTURE], jobs=1)
    assert len(ranks.ranks) == 1
    proton = traceview.proton(ROOT / "fixtures" / "proton" / "proton_mul_20_calls.hatchet.gz")
    assert isinstance(proton, traceview.ProtonTreeReport)


def test_capture_is_a_typed_callable() -> None:
    """``traceview.capture(fn, *inputs, reference=...)`` type-checks as the function it
    calls (not run here: it needs torch, and ``tests/test_capture_fn.py`` runs it)."""
    run: Callable[..., dict[str, Any]] = traceview.capture
    assert callable(run)
    from traceview.opcapture.api import capture

    params = list(inspect.signature(capture).parameters)
    assert params[:3] == ["fn", "inputs", "reference"]
    from traceview.opcapture import CaptureConfig  # the package is still the package

    assert CaptureConfig.__name__ == "CaptureConfig"


def test_every_exported_name_exists_and_the_package_is_marked_typed() -> None:
    for name in traceview.__all__:
        assert getattr(traceview, name) is not None, name
    assert (ROOT / "traceview" / "py.typed").is_file()
    project = (ROOT / "pyproject.toml").read_text()
    assert 'traceview = ["py.typed"' in project  # shipped in the wheel
    assert 'files = ["traceview", "tests/test_public_api.py"]' in project  # checked in CI
