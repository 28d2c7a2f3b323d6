"""Golden outputs: every renderer's output for four fixtures, byte for byte.

A change to any column, label or number shows up here as a diff against
``tests/golden/<fixture>.<renderer>``. When a change is intended, refresh them all with
one command and review the diff in git:

    TRACEVIEW_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py

The terminal report is rendered at 80 and 120 columns without colour
(``Console(width=..., file=StringIO(), color_system=None)``, through the registry).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

import traceview
from traceview.render.registry import RenderOptions, renderer

ROOT = Path(__file__).parent.parent
GOLDEN = Path(__file__).parent / "golden"
UPDATE = bool(os.environ.get("TRACEVIEW_UPDATE_GOLDEN"))
FIXTURES = (
    "torch_mul_1x4096_f32.json.gz",  # eager torch, capture metadata and baseline
    "triton_mul_1x4096_f32_stack.json.gz",  # with_stack: Triton's host stages apart
    "two_streams_8192x8192_f16.json.gz",  # two streams overlapping
    "torch_mul_graph.json.gz",  # CUDA graph replay
)
OUTPUTS = {  # golden suffix -> (renderer, options)
    "text80.txt": ("text", RenderOptions(width=80)),
    "text120.txt": ("text", RenderOptions(width=120)),
    "md": ("md", RenderOptions()),
    "json": ("json", RenderOptions()),
    "svg": ("svg", RenderOptions()),
}


@pytest.fixture(scope="module")
def reports():
    cwd = os.getcwd()
    os.chdir(ROOT)  # trace.path as written in the goldens: fixtures/<name>
    try:
        return {name: traceview.analyze(Path("fixtures") / name) for name in FIXTURES}
    finally:
        os.chdir(cwd)


def render(report, suffix: str) -> str:
    name, options = OUTPUTS[suffix]
    return renderer(name).render(report, options)


def check(got: str, path: Path) -> None:
    if UPDATE:
        path.write_text(got)
        return
    assert path.exists(), f"{path.name} missing: TRACEVIEW_UPDATE_GOLDEN=1 python -m pytest {__file__}"
    want = path.read_text()
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                            f"golden/{path.name}", "now", n=1))
        pytest.fail(f"{path.name} differs from the golden output "
                    f"(TRACEVIEW_UPDATE_GOLDEN=1 to accept):\n{diff[:4000]}", pytrace=False)


@pytest.mark.parametrize("suffix", list(OUTPUTS))
@pytest.mark.parametrize("fixture", FIXTURES)
def test_golden(reports, fixture, suffix):
    check(render(reports[fixture], suffix), GOLDEN / f"{fixture.removesuffix('.json.gz')}.{suffix}")


@pytest.mark.parametrize("suffix", ["text80.txt", "text120.txt", "md"])
def test_swapping_busy_and_idle_columns_fails(reports, suffix, monkeypatch):
    """The check above catches a renderer that swaps the matrix's busy and idle columns."""
    from traceview.report import model

    fixture = FIXTURES[0]
    path = GOLDEN / f"{fixture.removesuffix('.json.gz')}.{suffix}"
    if UPDATE:
        pytest.skip("refreshing")
    honest = model.Report.matrix

    def swapped(self):
        return [model.MatrixRow(r.host, r.idle_ns, r.busy_ns) for r in honest(self)]

    monkeypatch.setattr(model.Report, "matrix", swapped)
    with pytest.raises(pytest.fail.Exception, match="differs from the golden output"):
        check(render(reports[fixture], suffix), path)


def test_terminal_lines_fit_the_width(reports):
    for fixture in FIXTURES:
        for suffix, (_, options) in OUTPUTS.items():
            if suffix.startswith("text"):
                text = render(reports[fixture], suffix)
                too_long = [ln for ln in text.splitlines() if len(ln) > options.width]
                assert not too_long, (fixture, suffix, too_long[:3])
