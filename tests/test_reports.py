"""Markdown reports, the SVG figure and `traceview diff`, on every real fixture."""

from __future__ import annotations

import json
import re

import pytest
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from conftest import FIXTURES
from traceview.cli.app import app
from traceview.multi.compare import diff_reports
from traceview.render.figure import render_svg
from traceview.render.markdown import MAX_CHARS, render_markdown

ALL = sorted(FIXTURES.glob("*.json.gz"))
FIELDS = ["Operation / model", "Shape, dtype, strides and scalar arguments",
          "Device, driver, framework and compiler revisions", "Correctness reference and tolerance",
          "Cold or warmed? Eager or graph replay?", "Timer, synchronization points and repetitions",
          "Device-kernel result", "Full-API result", "Serving result, if measured",
          "Public reproducer / trace"]
gfm = MarkdownIt("gfm-like", {"linkify": False})


def _by(part):
    hits = [p for p in ALL if part in p.name and ".cold." not in p.name]
    assert hits, part
    return hits[0]


@pytest.fixture(scope="module")
def explained(fixture_reports):
    return fixture_reports


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_markdown_is_valid_gfm_and_complete(explained, path):
    md = render_markdown(explained[path.name])
    assert len(md) < MAX_CHARS
    html = gfm.render(md)
    # every pipe table parsed as a table: one <table> per block of | lines
    blocks = re.findall(r"(?:^\|.*\|\n)+", md, flags=re.M)
    assert html.count("<table>") == len(blocks) >= 3
    # the template, in its order, with no raw template markers
    positions = [md.index(f"| {f} |") for f in FIELDS]
    assert positions == sorted(positions)
    assert "{" + "{" not in md and "<details>" in md
    assert md.count("```mermaid") == 1 and "gantt" in md
    # balanced details blocks
    assert md.count("<details>") == md.count("</details>")


def test_markdown_says_not_recorded_instead_of_inventing(tb, analyze_builder):
    # a Triton-style trace without capture metadata: a launch from Python, no aten op
    tb.annotation("call_0", 0, 10_000)
    tb.launched_kernel("mul_kernel", 1_000, 2_000, 4_000, 900)
    md = render_markdown(analyze_builder(tb))
    for field in ("Shape, dtype", "Correctness", "Operation / model"):
        row = next(line for line in md.splitlines() if line.startswith(f"| {field}"))
        assert "not recorded" in row, field
    assert "`mul_kernel` x1" in md


def test_markdown_fills_the_template_from_capture_metadata(explained):
    md = render_markdown(explained[_by("flag_gems_add").name])
    rows = {line.split(" | ")[0][2:]: line for line in md.splitlines() if line.startswith("| ")}
    assert "[16, 4096]" in rows["Shape, dtype, strides and scalar arguments"]
    assert "bfloat16" in rows["Shape, dtype, strides and scalar arguments"]
    assert "flag_gems" in rows["Device, driver, framework and compiler revisions"]
    assert "float64" in rows["Correctness reference and tolerance"]
    assert "traceview capture" in rows["Public reproducer / trace"]
    assert "unprofiled" in rows["Full-API result"]


def test_mermaid_gantt_bars_are_well_formed(explained):
    md = render_markdown(explained[_by("torch_mul_1x4096_f32.json").name])
    block = md.split("```mermaid\n", 1)[1].split("```", 1)[0]
    bars = [ln.strip() for ln in block.splitlines() if re.search(r":(active, )?[hd]\d+,", ln)]
    assert bars
    for bar in bars:
        start, end = (int(x) for x in bar.rsplit(",", 2)[1:])
        assert 0 <= start < end


def test_figure_svg_renders_and_is_not_blank(explained, tmp_path):
    cairosvg = pytest.importorskip("cairosvg")
    png = tmp_path / "f.png"
    cairosvg.svg2png(bytestring=render_svg(explained[_by("triton_mul_1x4096_f32_stack").name]).encode(),
                     write_to=str(png))
    from PIL import Image

    img = Image.open(png).convert("RGB")
    colours = img.getcolors(maxcolors=1 << 20)
    non_white = sum(n for n, c in colours if c != (255, 255, 255))
    assert img.size[0] >= 800 and non_white > 0.05 * img.size[0] * img.size[1]


def test_explain_md_with_figure_via_cli(tmp_path):
    fig = tmp_path / "call.svg"
    r = CliRunner().invoke(app, ["explain", str(_by("torch_mul_1x4096_f32.json")), "--format", "md",
                                 "--figure", str(fig)])
    assert r.exit_code == 0, r.output
    # GitHub cannot show a local file: the markdown says where the figure is and how to
    # upload it, and links nothing
    assert "`call.svg`" in r.stdout and "drag it into the comment box" in r.stdout
    assert "![" not in r.stdout and fig.read_text().startswith("<svg")


def test_diff_triton_vs_torch_has_the_right_sign(explained):
    a = explained[_by("triton_mul_1x4096_f32.json").name]
    b = explained[_by("torch_mul_1x4096_f32.json").name]
    d = diff_reports(a, b).as_dict()
    api = next(c for c in d["comparisons"] if c["metric"] == "calls.api_ns.p50")
    assert api["delta"] == api["after"] - api["before"] < 0  # torch.mul's call is cheaper
    assert api["significant"] and api["ci_high"] < 0
    names = {c["metric"] for c in d["comparisons"]}
    assert {"calls.api_ns.p50", "calls.kernel_ns.p50", "device.busy_ns"} <= names
    assert any(m.startswith("host.categories.") for m in names)
    assert {k["status"] for k in d["kernels"]} == {"added", "removed"}


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_diff_against_itself_is_all_noise(explained, path):
    r = explained[path.name]
    d = diff_reports(r, r).as_dict()
    assert not [c["metric"] for c in d["comparisons"] if c["significant"]]
    assert all(c["delta"] in (0, None) for c in d["comparisons"])
    assert d["warnings"] == []


def test_diff_cli_accepts_saved_json_and_traces(tmp_path):
    runner = CliRunner()
    saved = tmp_path / "before.json"
    r = runner.invoke(app, ["explain", str(_by("triton_mul_1x4096_f32.json")), "--format", "json"])
    saved.write_text(r.stdout)
    r = runner.invoke(app, ["diff", str(saved), str(_by("torch_mul_1x4096_f32.json")), "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["comparisons"][0].keys() >= {"metric", "before", "after", "delta", "ci_low", "ci_high",
                                          "significant"}
    r = runner.invoke(app, ["diff", str(saved), str(_by("torch_mul_1x4096_f32.json")), "--format", "md"])
    assert r.exit_code == 0 and "**Verdict:**" in r.stdout
    # unprofiled, profiled (diagnosis), code path, kernels; no Python frames on either
    # side, so no module families (explain shows none either), and a note says so
    assert gfm.render(r.stdout).count("<table>") == 4
    assert "no module families: before and after have no Python frames" in r.stdout


def test_diff_warns_when_graph_meets_eager(explained):
    a = explained[_by("triton_mul_1x4096_f32.json").name]
    b = explained[_by("graph").name]
    d = diff_reports(a, b)
    assert any("graph replay" in w for w in d.warnings)


def _mermaid_js():
    import os
    import shutil
    from pathlib import Path

    js = os.environ.get("TRACEVIEW_MERMAID_JS")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not js or not Path(js).is_file() or not browser:
        if os.environ.get("TRACEVIEW_REQUIRE_RENDER"):
            pytest.fail("TRACEVIEW_REQUIRE_RENDER is set but chromium or mermaid.min.js is missing")
        pytest.skip("set TRACEVIEW_MERMAID_JS to mermaid.min.js and install chromium (.ci/run does)")
    return Path(js), browser


def test_mermaid_block_renders_in_headless_chromium(explained, tmp_path):
    """Render the markdown's Mermaid gantt for real, as GitHub would, and look at the pixels."""
    import html
    import subprocess

    js, browser = _mermaid_js()
    md = render_markdown(explained[_by("triton_mul_1x4096_f32_stack").name])
    block = md.split("```mermaid\n", 1)[1].split("```", 1)[0]
    from PIL import Image

    def render(text: str, name: str) -> tuple[int, int]:
        """(non-white pixels, distinct colours) of ``text`` rendered by mermaid."""
        page = tmp_path / f"{name}.html"
        page.write_text(
            "<html><body style='background:white;margin:0'>"
            f"<pre class='mermaid'>{html.escape(text)}</pre><script src='{js.as_uri()}'></script>"
            "<script>mermaid.initialize({startOnLoad:true});</script></body></html>")
        shot = tmp_path / f"{name}.png"
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                        "--no-first-run", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,900",
                        "--virtual-time-budget=5000", f"--screenshot={shot}", page.as_uri()],
                       capture_output=True, timeout=120, check=False)
        cols = Image.open(shot).convert("RGB").getcolors(maxcolors=1 << 22)
        return sum(n for n, c in cols if c != (255, 255, 255)), len(cols)

    # A parse error renders mermaid's error box (measured: about 10,000 non-white pixels,
    # under 500 colours); the compact gantt (one host row, one device row, an axis) about
    # 31,000 with over 1,500 colours. Compared with a broken block rendered the same way.
    non_white, n_colours = render(block, "chart")
    broken, _ = render("gantt\n  this is not ::: valid\n", "broken")
    assert non_white > 2 * broken, (non_white, broken)
    assert n_colours > 20
