"""Tables that cannot contradict themselves: every table the renderers emit (terminal and
markdown, for traces, ranks, diffs, ab and serve documents) is walked, and wherever a
table shows a share beside a figure, the shares must come from the figures shown over
one whole (one scope per table) and the rows be sorted by those figures; the kernel and
function tables are sorted by their first figure. The figures are parsed back from the
printed text, with the rounding they were printed with."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

import pytest

import traceview
from conftest import FIXTURES
from traceview.render.registry import RenderOptions, renderer
from traceview.render.text import TextConsole

TRACES = ("flag_gems_add_16x4096_bf16", "triton_add_16x4096_bcast", "shape_model_schedule",
          "triton_mul_1x4096_f32_stack", "two_streams_8192x8192_f16", "torch_mul_graph",
          "inductor_mul_1x4096_f32", "shape_user_inductor_stack")
DATA = Path(__file__).parent / "data"
UNIT_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
DURATION = re.compile(r"^[+-]?(\d+(?:\.\d+)?) (ns|us|ms|s)$")
SHARE = re.compile(r"^(<)?(\d+(?:\.\d+)?)%$")
SORTED_BY_FIRST_FIGURE = ("Top kernels", "Hot host functions")


def duration(cell: str) -> tuple[float, float] | None:
    """The interval of ns a printed duration stands for (3-4 significant digits)."""
    m = DURATION.match(cell.strip())
    if not m:
        return None
    v, unit = float(m.group(1)), UNIT_NS[m.group(2)]
    if unit == 1:
        return v - 0.5, v + 0.5
    decimals = len(m.group(1).split(".")[1]) if "." in m.group(1) else 0
    half = 0.5 * 10 ** -decimals
    if v > 0:
        half = max(half, 0.5 * 10 ** (math.floor(math.log10(v)) - 2))
    return (v - half) * unit, (v + half) * unit


def share(cell: str) -> tuple[float, float] | None:
    m = SHARE.match(cell.strip())
    if not m:
        return None
    if m.group(1):
        return 0.0, float(m.group(2)) / 100
    v = float(m.group(2))
    return max(0.0, v - 0.05) / 100, (v + 0.05) / 100


def check_table(title: str, header: list[str], rows: list[list[str]]) -> int:
    """Assert the rules on one table; returns how many share columns were checked."""
    checked = 0
    for j, head in enumerate(header):
        if head.strip().lower() != "share" or j == 0:
            continue
        pairs = [(duration(r[j - 1]), share(r[j])) for r in rows if len(r) > j]
        pairs = [(f, s) for f, s in pairs if f is not None and s is not None]
        if not pairs:
            continue
        lo, hi = 0.0, math.inf  # the one whole every row's share is taken of
        for (f_lo, f_hi), (s_lo, s_hi) in pairs:
            lo = max(lo, f_lo / s_hi if s_hi else 0.0)
            hi = min(hi, f_hi / s_lo if s_lo else math.inf)
        assert lo <= hi * 1.000001, (title, "shares of different wholes", rows[:6])
        parts = [duration(r[j - 1]) for r in rows if len(r) > j and share(r[j]) is not None
                 and duration(r[j - 1]) is not None and r[0].strip("*").lower() != "total"]
        for a, b in itertools.pairwise(parts):  # a total row closes a table, unsorted
            assert b[0] <= a[1], (title, "rows not sorted by the figure", a, b)
        checked += 1
    if title.startswith(SORTED_BY_FIRST_FIGURE):
        col = next((j for j in range(1, len(header)) if any(duration(r[j]) for r in rows)), None)
        figs = [duration(r[col]) for r in rows] if col is not None else []
        figs = [f for f in figs if f is not None]
        for a, b in itertools.pairwise(figs):
            assert b[0] <= a[1], (title, "rows not sorted", a, b)
    return checked


def _plain(x) -> str:
    from rich.text import Text

    if isinstance(x, Text):
        return x.plain
    return str(x or "")


def terminal_tables(render) -> list[tuple[str, list[str], list[list[str]]]]:
    """Every rich table printed while ``render()`` runs: (title, header, rows)."""
    from rich.table import Table

    from traceview.render.text import finish

    seen = []
    real = TextConsole.print

    def spy(self, *objects, **kw):
        for o in objects:
            if isinstance(o, Table):
                cols = o.columns
                rows = [[finish(_plain(c._cells[i])) for c in cols] for i in range(o.row_count)]
                seen.append((finish(_plain(o.title)), [finish(_plain(c.header)).replace("\n", " ")
                                                       for c in cols], rows))
        return real(self, *objects, **kw)

    TextConsole.print = spy
    try:
        render()
    finally:
        TextConsole.print = real
    return seen


def markdown_tables(md: str) -> list[tuple[str, list[str], list[list[str]]]]:
    out, title, lines = [], "", md.splitlines()
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith("|") and i + 1 < len(lines) and set(lines[i + 1]) <= set("|-: "):
            header = [c.strip() for c in ln.strip("|").split("|")]
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append([c.strip().strip("`*") for c in lines[i].strip("|").split("|")])
                i += 1
            out.append((title, header, rows))
            continue
        if ln.strip():
            title = ln.lstrip("#* ").strip()
        i += 1
    return out


@pytest.fixture(scope="module")
def reports():
    return {n: traceview.analyze(FIXTURES / f"{n}.json.gz") for n in TRACES}


def _all_tables(reports):
    tables = []
    for r in reports.values():
        for width in (80, 200):
            tables += terminal_tables(lambda r=r, w=width: renderer("text").render(
                r, RenderOptions(width=w)))
        tables += markdown_tables(renderer("md").render(r, RenderOptions()))
    from traceview.multi.compare import diff_reports

    names = list(reports)
    d = diff_reports(reports[names[0]], reports[names[1]])
    tables += terminal_tables(lambda: renderer("text", "diff").render(d, RenderOptions(width=120)))
    tables += markdown_tables(renderer("md", "diff").render(d, RenderOptions()))
    for subject, doc in (("ab", "ab_add_cpu.json"), ("serve", "serve_tiny_cpu.json")):
        document = json.loads((DATA / doc).read_text())
        tables += terminal_tables(lambda s=subject, x=document: renderer("text", s).render(
            x, RenderOptions(width=120)))
        tables += markdown_tables(renderer("md", subject).render(document, RenderOptions()))
    return tables


def test_every_table_the_renderers_emit_agrees_with_itself(reports):
    tables = _all_tables(reports)
    assert len(tables) > 60
    checked = sum(check_table(*t) for t in tables)
    assert checked >= 2 * len(reports)  # the matrix and the module tables at least


def test_ranks_tables(tmp_path):
    """With a copy column (two compiled-model traces launch memsets) and long file names,
    the ranks table at 80 columns still shows every column, the verdict included, and
    wraps the file names at their separators."""
    import shutil

    from traceview.multi.ranks import analyze_ranks
    from traceview.options import Options

    for i, n in enumerate(("shape_model_schedule_cold", "shape_compile_cold",
                           "flag_gems_add_16x4096_bf16")):
        shutil.copy(FIXTURES / f"{n}.json.gz", tmp_path / f"job_rank{i}_long_name_host{i}.json.gz")
    rr = analyze_ranks([tmp_path], Options(), jobs=1)
    tables = terminal_tables(lambda: renderer("text", "ranks").render(rr, RenderOptions(width=80)))
    tables += markdown_tables(renderer("md", "ranks").render(rr, RenderOptions()))
    assert tables
    for t in tables:
        check_table(*t)
        assert "verdict" in t[1] and "copy p50" in t[1], t[1]
    text = renderer("text", "ranks").render(rr, RenderOptions(width=80))
    rows = [ln for ln in text.splitlines() if re.match(r"\s+\d+  ", ln)]
    assert len(rows) == 3 and all(ln.rstrip().endswith("host-bound") for ln in rows), rows
    assert max(len(ln) for ln in text.splitlines()) <= 80
    pieces = [ln[6:14].strip() for ln in text.splitlines()[4:13] if ln[6:14].strip()]
    assert all(p.endswith(("_", "…")) or p.startswith("host") for p in pieces[:3]), pieces


def test_the_checks_can_fail():
    head = ["module", "per call", "share"]
    with pytest.raises(AssertionError, match="different wholes"):  # 19.3 ms of a 42.8 ms call
        check_table("t", head, [["a", "19.3 ms", "37.2%"], ["b", "10 ms", "23.4%"]])
    with pytest.raises(AssertionError, match="different wholes"):
        check_table("t", head, [["a", "10 ms", "50.0%"], ["(untraced)", "0 ns", "11.7%"]])
    with pytest.raises(AssertionError, match="not sorted"):
        check_table("t", head, [["a", "99.3 us", "21.6%"], ["b", "103 us", "22.4%"]])
    assert check_table("t", head, [["a", "103 us", "22.4%"], ["b", "99.3 us", "21.6%"]]) == 1
