"""The text layer (``traceview/render/text.py``): a number never parted from its unit, a
name broken only at its boundaries, at every width; golden outputs at 80, 120 and 200
columns on real H200 fixtures (a FlagGems op, a Triton capture, profiler steps of a
compiled model).

Refresh the goldens deliberately, and read the diff:

    TRACEVIEW_UPDATE_GOLDEN=1 python -m pytest tests/test_text_layout.py
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import traceview
from traceview.render.registry import RenderOptions, renderer
from traceview.render.text import GLUE, SOFT, bind, finish, name

ROOT = Path(__file__).parent.parent
GOLDEN = Path(__file__).parent / "golden"
UPDATE = bool(os.environ.get("TRACEVIEW_UPDATE_GOLDEN"))
FIXTURES = (
    "flag_gems_add_16x4096_bf16.json.gz",  # FlagGems add on the H200: long module names
    "triton_add_16x4096_bcast.json.gz",  # traceview capture's built-in Triton launcher
    "shape_model_schedule.json.gz",  # a compiled model's ProfilerStep#N steps
    "flaggems_sigmoid_65536_f32_split.json.gz",  # FlagGems with its unprofiled split
)
GOLDEN_WIDTHS = (80, 120, 200)
WIDTHS = (60, 72, 80, 96, 100, 120, 137, 160, 200)
# ("s" alone only before punctuation or a cell's end: the legend's glyph "s" names specialize)
UNIT = r"(?:(?:ns|us|ms|KiB|MiB|GiB|%)(?=[\s,;)\]│┃]|$)|s(?=[,;)\]]|\s*[│┃]|\s*$))"
# A line, or a table cell's line, that starts with a unit: its number is on the line above.
STARTS_WITH_UNIT = re.compile(r"(?:^|[│┃|])[\s│├└─┃]*" + UNIT)
# A line (or cell line) that ends inside a number: "8." or "3,"; its digits go on below.
ENDS_IN_NUMBER = re.compile(r"(?<![\w.])\d+[.,]\s*(?:[│┃]|$)")


@pytest.fixture(scope="module")
def reports():
    cwd = os.getcwd()
    os.chdir(ROOT)  # trace.path as written in the goldens: fixtures/<name>
    try:
        return {f: traceview.analyze(Path("fixtures") / f) for f in FIXTURES}
    finally:
        os.chdir(cwd)


def text(report, width: int) -> str:
    return renderer("text").render(report, RenderOptions(width=width))


def broken_units(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if STARTS_WITH_UNIT.search(ln)
            or ENDS_IN_NUMBER.search(ln)]


@pytest.mark.parametrize("fixture", FIXTURES)
def test_no_number_is_parted_from_its_unit_at_any_width(reports, fixture):
    for width in WIDTHS:
        out = text(reports[fixture], width)
        assert not broken_units(out), (width, broken_units(out)[:4])
        assert max(len(ln) for ln in out.splitlines()) <= width
        assert GLUE not in out and SOFT not in out


def test_the_checks_above_can_fail():
    assert broken_units("device work 3.05\nms")
    assert broken_units("│ 1.8 ms incl, 311 │\n│ us self │")
    assert broken_units("intervals [11.1 ms, 17\nms]")
    assert broken_units("<built-in method add>  600 us incl, 8.\n51 us self")
    assert not broken_units("device work 3.05 ms\nhost 1 us")


def test_bind_keeps_numbers_with_units_and_the_length():
    s = "untraced 16.6 ms, [11.1 ms, 17 ms] 4.5% +3.04 ms 12 streams 3 s"
    b = bind(s)
    assert len(b) == len(s)
    assert finish(b) == s
    assert "16.6" + GLUE + "ms" in b and "17" + GLUE + "ms]" in b and "3" + GLUE + "s" in b
    assert "12 streams" in b  # a count and its noun may part


def test_names_break_at_their_boundaries_only():
    n = name("flag_gems/utils/pointwise_dynamic.py(1303): _call_real_impl")
    parts = n.replace(" ", SOFT).split(SOFT)
    assert parts[:4] == ["flag_gems/", "utils/", "pointwise_dynamic.", "py"]
    assert "_call_real_impl" in parts  # a short identifier stays whole
    assert name("at::native::add_kernel<…>(…)").split(SOFT) == [
        "at::", "native::", "add_kernel", "<…>", "(…)"]
    assert SOFT not in name("8.51 us")  # a decimal point is no boundary


def test_module_names_are_whole_at_200_columns(reports):
    out = text(reports["flag_gems_add_16x4096_bf16.json.gz"], 200)
    assert "…" not in out.split("A warm call by Python module")[1].split("\n\n")[0]
    assert "code_cache.pointwise_dynamic_2bc9b7c9~_add_func_kernel_rank_1_bptr" in out


def test_a_module_table_without_rows_says_why(tb, analyze_builder):
    """Warm calls of two kinds alternating, each all in its own module (``pkga.moda`` in
    calls 0 and 2, ``pkgb.modb`` in 1 and 3): each module runs in two of the four warm
    calls, so its nearest-rank p50 per call is 0 and the table has no row. The title then
    says why on its own line, never above an empty table (a real vLLM trace's was)."""
    t = 0
    for fn in ["pkga/moda.py(1): f", "pkgb/modb.py(1): g"] * 2:
        tb.py(fn, t, 10_000)
        tb.launched_kernel("k", t + 2_000, 1_000, t + 4_000, 500)
        t += 20_000
    r = analyze_builder(tb)
    assert r.calls.warm_count == 4
    # the p50 of [10 us, 0, 10 us, 0] is the second smallest: 0, for both modules
    assert {f.name: f.ns_per_call for f in r.host.families} == {"pkga.moda": 0, "pkgb.modb": 0}
    out = text(r, 120)
    assert "┃module (innermost frame)" not in out
    assert ("A warm call by Python module (p50 of 4 warm calls; share of a call's p50, 10 us): "
            "no module has time in the p50 warm call") in " ".join(out.split())
    md = renderer("md").render(r, RenderOptions())
    assert "| module (innermost frame) |" not in md and "no module has time in the p50 warm call" in md


@pytest.mark.parametrize("width", GOLDEN_WIDTHS)
@pytest.mark.parametrize("fixture", FIXTURES)
def test_golden_text(reports, fixture, width):
    from test_golden import check

    check(text(reports[fixture], width),
          GOLDEN / f"{fixture.removesuffix('.json.gz')}.text{width}.txt")


def test_the_readme_shows_what_explain_prints_today(reports):
    """README.md's first text block is explain's headline of the FlagGems split fixture at 80
    columns, as printed now."""
    readme = (ROOT / "README.md").read_text()
    block = readme.split("```text\n", 1)[1].split("```", 1)[0]
    out = text(reports["flaggems_sigmoid_65536_f32_split.json.gz"], 80)
    printed = "\n".join(ln.rstrip() for ln in out.splitlines())
    assert block.strip() in printed


# --- Proton views ----------------------------------------------------------------------

PROTON = tuple(sorted(p.name for p in (ROOT / "fixtures" / "proton").glob("*.gz")))
PROTON_WIDTHS = (80, 100, 120)


def _proton_report(path: Path):
    from traceview.io import proton
    from traceview.report.proton import trace_report, tree_report

    return trace_report(proton.read_trace(str(path))) if proton.sniff(str(path)) == "trace" \
        else tree_report(proton.read_tree(str(path)))


def _public_proton() -> list[Path]:
    """The public corpus's Proton profiles here that are not held out and that read (two
    of a Triton fork's trees are not valid JSON: ``tests/test_public_proton.py``)."""
    import public_corpus

    from traceview.errors import TraceLoadError

    out = []
    for e in public_corpus.entries():
        path = public_corpus.locate(e.name)
        if not public_corpus.is_proton(e) or e.held_out or path is None:
            continue
        try:
            _proton_report(path)
        except TraceLoadError:
            continue
        out.append(path)
    return out


def _too_wide(out: str, width: int) -> list[str]:
    return [ln for ln in out.splitlines() if len(ln) > width]


def _table_rows(out: str) -> list[list[str]]:
    """The figure cells of each table row of a Proton view (after its name: cells are
    two spaces apart, a figure's own spaces single)."""
    import re

    cells = (re.split(r" {2,}", ln.strip()) for ln in out.splitlines() if ln.startswith("  "))
    return [c[1:] for c in cells if len(c) > 1]  # a wrapped line of prose has one


@pytest.mark.parametrize("width", PROTON_WIDTHS)
@pytest.mark.parametrize("name", PROTON)
def test_no_line_of_a_proton_view_is_wider_than_the_width(name, width):
    from traceview.render.proton import render

    r = _proton_report(ROOT / "fixtures" / "proton" / name)
    out = render(r, "text", width)
    assert not _too_wide(out, width), _too_wide(out, width)[:3]
    assert not broken_units(out), broken_units(out)[:3]
    # the figures are those of the table laid out with no limit, whole
    assert _table_rows(out) == _table_rows(render(r, "text", 10_000))


def test_no_line_of_a_public_proton_view_is_wider_than_the_width():
    from traceview.render.proton import render

    paths = _public_proton()
    if not paths:
        pytest.skip("no readable public Proton profile in this machine's corpus copy")
    for path in paths:
        r = _proton_report(path)
        for width in PROTON_WIDTHS:
            out = render(r, "text", width)
            assert not _too_wide(out, width), (path.name, width, _too_wide(out, width)[:3])
            assert _table_rows(out) == _table_rows(render(r, "text", 10_000))


def test_the_proton_width_check_can_fail():
    """Laid out with no limit, the nested tree's table is wider than 80 columns (the
    layout before tables fit the width): the check above would see it."""
    from traceview.render.proton import render

    r = _proton_report(ROOT / "fixtures" / "proton" / "proton_nested.hatchet.gz")
    assert _too_wide(render(r, "text", 10_000), 80)


def test_a_proton_name_is_cut_in_the_middle_to_fit():
    from traceview.render.proton import NAME_FLOOR, Label, _fit_labels, middle_cut

    assert middle_cut("abcdefghij", 10) == "abcdefghij"
    cut = middle_cut("_ZN2at6native18elementwise_kernelILi128ELi2E", 16)
    # two thirds of what is kept from the start (a kernel's namespace and name)
    assert cut == "_ZN2at6nat…ELi2E"
    long = "x_val_" + "9" * 60 + "_tail"
    header = ["scope", "time"]
    rows = [[Label("root", 0), "1 us"], [Label(long, 1, kernel=True), "2 us"]]
    laid, marked = _fit_labels(header, rows, 40)
    # what the other column and the gaps leave: 40 - 2 (lead) - 4 - 2 = 32
    assert marked and [r[0] for r in laid] == ["root", " " + middle_cut(long, 29) + " *"]
    assert max(len(r[0]) for r in laid) == 32
    # a name is never cut below the floor: the line is then wider than asked
    laid, _ = _fit_labels(header, rows, 12)
    assert laid[1][0] == " " + middle_cut(long, NAME_FLOOR) + " *"
