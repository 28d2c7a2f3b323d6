"""The documented Python API as user code writes it, type-checked by mypy in CI.

This file is in mypy's ``files`` (``pyproject.toml``), so it is checked as a user's
module would be: every call below must type-check against the package's annotations
(``traceview/py.typed`` marks the package as typed for installed users). The tests also
run it, so the names the annotations promise exist at run time.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import traceview
from traceview import Options
from traceview.analyses.breakdown import Cell
from traceview.diagnostics import Diagnostic
from traceview.report.model import CallRow, CallsInfo, Finding, TraceInfo, WindowInfo
from traceview.report.proton import ProtonTreeReport
from traceview.stats import Stats

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "torch_mul_1x4096_f32.json.gz"


def p50_api_ns(report: traceview.Report) -> int | None:
    """A user's helper annotated with the exported types."""
    stats: Stats = report.calls.stats["api_ns"]
    return stats.p50


def busy_cells(report: traceview.Report) -> list[Cell]:
    return [c for c in report.breakdown if c.device == "busy"]


def test_load_explain_analyze_and_the_report_types() -> None:
    trace: traceview.Trace = traceview.load(FIXTURE)
    report: traceview.Report = traceview.explain(trace, Options(top=5))
    assert isinstance(report, traceview.Report)
    again: traceview.Report = traceview.analyze(FIXTURE)
    assert p50_api_ns(report) == p50_api_ns(again) is not None
    info: TraceInfo = report.trace
    window: WindowInfo = report.window
    calls: CallsInfo = report.calls
    first: CallRow = calls.per_call[0]
    findings: tuple[Finding, ...] = report.findings
    diagnostics: tuple[Diagnostic, ...] = report.diagnostics
    assert info.slices > 0 and window.dur_ns > 0 and first.end_ns > first.start_ns
    assert all(isinstance(f, Finding) for f in findings)
    assert all(isinstance(g, Diagnostic) for g in diagnostics)
    assert sum(c.ns for c in busy_cells(report)) == report.device.busy_ns
    doc: dict[str, Any] = report.to_dict()
    assert doc["calls"]["count"] == calls.count


def test_ranks_and_proton() -> None:
    ranks: traceview.RanksReport = traceview.analyze_ranks([FIXTURE], jobs=1)
    assert len(ranks.ranks) == 1
    proton = traceview.proton(ROOT / "fixtures" / "proton" / "proton_mul_20_calls.hatchet.gz")
    assert isinstance(proton, ProtonTreeReport)


def test_capture_is_a_plain_typed_function_and_no_module_is_callable() -> None:
    """``traceview.capture(fn, *inputs, reference=...)`` is a function of the facade (not
    run here: it needs torch, and ``tests/test_capture_fn.py`` runs it); importing the
    capture protocol's package does not rebind it, and no traceview module is callable."""
    run: Callable[..., dict[str, Any]] = traceview.capture
    assert isinstance(run, types.FunctionType)
    params = list(inspect.signature(traceview.capture).parameters)
    assert params[:3] == ["fn", "inputs", "reference"]
    api = importlib.import_module("traceview.opcapture.api")
    from traceview.opcapture import CaptureConfig

    assert traceview.capture is run and CaptureConfig.__name__ == "CaptureConfig"
    assert list(inspect.signature(api.capture).parameters)[:3] == params[:3]
    for module in (traceview, importlib.import_module("traceview.opcapture"), api):
        assert type(module) is types.ModuleType and not callable(module)


def test_the_contract_is_small_and_in_one_list() -> None:
    assert len(traceview.__all__) <= 12
    assert len(set(traceview.__all__)) == len(traceview.__all__)
    assert "Trace" in traceview.__all__ and "CallRow" not in traceview.__all__


def test_the_facade_types_for_mypy_exactly_the_exported_types() -> None:
    """The types of ``__all__`` are imported under TYPE_CHECKING for user code's mypy;
    that block is checked against ``__all__`` (and where each type lives, ``_HOMES``)."""
    import ast

    tree = ast.parse((ROOT / "traceview" / "__init__.py").read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If)
                 and ast.unparse(n.test) == "TYPE_CHECKING")
    typed = {a.asname: f"{n.module}" for n in block.body if isinstance(n, ast.ImportFrom)
             for a in n.names if a.asname == a.name}
    exported = {n for n in traceview.__all__ if n[0].isupper()}
    assert set(typed) == exported
    assert all(traceview._HOMES[n] == typed[n] for n in exported)


@pytest.mark.parametrize("name", ["CallRow", "Cell", "Stats", "Diagnostic", "Finding",
                                  "ProtonTreeReport"])
def test_a_name_exported_before_warns_and_still_resolves(name: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"traceview\.{name} is deprecated: "
                                                r"import it from traceview\."):
        old = getattr(traceview, name)
    assert old is globals()[name]


def test_a_public_name_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert traceview.Report.__name__ == "Report" and traceview.Options is Options


def _python_paragraph() -> str:
    text = (ROOT / "README.md").read_text()
    return text.split("\nPython: ", 1)[1].split("\n\n", 1)[0]


def test_readme_names_every_public_name_in_its_python_paragraph() -> None:
    """README's Python paragraph is checked against ``__all__``, never kept as a copy."""
    spans = re.findall(r"`([^`]+)`", _python_paragraph())
    said = {word for span in spans for word in re.findall(r"\w+", span)}
    assert set(traceview.__all__) - said == set()


def test_the_docs_name_only_public_names_or_modules_on_the_package() -> None:
    """``traceview.X`` in README and docs/ is a public name, ``__version__`` or a module:
    never a name the facade no longer exports."""
    wrong = set()
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for name in re.findall(r"\btraceview\.(\w+)", path.read_text()):
            if name in traceview.__all__ or name in ("__version__", "__all__"):
                continue
            if importlib.util.find_spec(f"traceview.{name}") is None:
                wrong.add(f"{path.name}: traceview.{name}")
    assert not wrong, sorted(wrong)


def test_every_exported_name_exists_and_the_package_is_marked_typed() -> None:
    for name in traceview.__all__:
        assert getattr(traceview, name) is not None, name
    assert (ROOT / "traceview" / "py.typed").is_file()
    project = (ROOT / "pyproject.toml").read_text()
    assert 'traceview = ["py.typed"' in project  # shipped in the wheel
    assert 'files = ["traceview", "tests/test_public_api.py"]' in project  # checked in CI
