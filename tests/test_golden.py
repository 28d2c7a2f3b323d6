"""Golden outputs: every renderer's output for four fixtures, byte for byte.

A change to any column, label or number shows up here as a diff against
``tests/golden/<fixture>.<renderer>``. When a change is intended, refresh them all with
one command and review the diff in git:

    TRACEVIEW_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py

The terminal report is rendered at 80 and 120 columns without colour
(``Console(width=..., file=StringIO(), color_system=None)``, through the registry).

``ab`` and ``serve`` render documents, not traces: two small ones saved from real CPU
runs live in ``tests/data/`` (``ab_add_cpu.json``: ``traceview ab --op add --device cpu
--impl torch --rounds 6 --out ...``, and ``ab_add_cpu_same_process.json`` with
``--same-process --no-split``, and ``ab_add_cpu_same_process_chosen.json`` the same
with its default blocks since they are chosen from the call's time;
``serve_tiny_cpu.json``: the tiny Llama of
docs/serving.md, ``--vs eager --vs-env ... --rounds 3 --profile-steps 2``, its command is
in the document), and their outputs are golden too.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
from pathlib import Path

import pytest

from traceview.render.registry import RenderOptions, renderer

ROOT = Path(__file__).parent.parent
GOLDEN = Path(__file__).parent / "golden"
UPDATE = bool(os.environ.get("TRACEVIEW_UPDATE_GOLDEN"))
FIXTURES = (
    "torch_mul_1x4096_f32.json.gz",  # eager torch, capture metadata and baseline
    "triton_mul_1x4096_f32_stack.json.gz",  # with_stack: Triton's host stages apart
    "two_streams_8192x8192_f16.json.gz",  # two streams overlapping
    "torch_mul_graph.json.gz",  # CUDA graph replay
    "flaggems_sigmoid_65536_f32_split.json.gz",  # FlagGems with its unprofiled split
)
OUTPUTS = {  # golden suffix -> (renderer, options)
    "text80.txt": ("text", RenderOptions(width=80)),
    "text120.txt": ("text", RenderOptions(width=120)),
    "md": ("md", RenderOptions()),
    "json": ("json", RenderOptions()),
    "svg": ("svg", RenderOptions()),
}


@pytest.fixture(scope="module")
def reports(fixture_reports):
    return fixture_reports  # analysed as fixtures/<name>: the path the goldens show


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


DATA = Path(__file__).parent / "data"
DOCUMENTS = {  # golden stem -> (registry subject, saved document)
    "ab_add_cpu": ("ab", DATA / "ab_add_cpu.json"),
    # --same-process (the same command, --same-process --rounds 6 --no-split): the
    # per-round column is the paired estimate, not B minus A
    "ab_add_cpu_same_process": ("ab", DATA / "ab_add_cpu_same_process.json"),
    # --same-process with its defaults (no --blocks, no --baseline-n): 200 blocks per
    # side whose calls each process chose from the call's time; the header says so
    "ab_add_cpu_same_process_chosen": ("ab", DATA / "ab_add_cpu_same_process_chosen.json"),
    # an H200 A/B with both sides' unprofiled splits (torch vs flag_gems sigmoid)
    "split_ab_h200_sigmoid": ("ab", ROOT / "fixtures" / "split_ab_h200_sigmoid.json"),
    "serve_tiny_cpu": ("serve", DATA / "serve_tiny_cpu.json"),
    # serve --attribute on the tiny Llama with tests/planted_gems (PLANTED_GEMS_SLOW=rsqrt:0:
    # rsqrt through a Python override that waits 0 ns, the other ops ATen's), run2 of
    # tools/attribute_serve_on_gpu.sh's CPU check (docs/serving.md); its command is in
    # the document
    "serve_attribute_cpu": ("serve", DATA / "serve_attribute_cpu.json"),
}
DOC_OUTPUTS = {k: OUTPUTS[k] for k in ("text80.txt", "text120.txt", "md")}


def _doc(stem: str) -> dict:
    return json.loads(DOCUMENTS[stem][1].read_text())


def render_doc(stem: str, doc: dict, suffix: str) -> str:
    name, options = DOC_OUTPUTS[suffix]
    return renderer(name, DOCUMENTS[stem][0]).render(doc, options)


@pytest.mark.parametrize("suffix", list(DOC_OUTPUTS))
@pytest.mark.parametrize("stem", list(DOCUMENTS))
def test_golden_documents(stem, suffix):
    check(render_doc(stem, _doc(stem), suffix), GOLDEN / f"{stem}.{suffix}")


@pytest.mark.parametrize("stem", list(DOCUMENTS))
def test_the_json_renderer_gives_back_the_saved_document(stem):
    """The documents were saved by ``--out``, which goes through the same JSON renderer."""
    subject, path = DOCUMENTS[stem]
    assert renderer("json", subject).render(_doc(stem), RenderOptions()) == path.read_text()


def _swap_a_and_b(stem: str, doc: dict) -> dict:
    """The document with side A's figures shown as B's and B's as A's: what a renderer that
    swapped the A and B columns would print."""
    d = copy.deepcopy(doc)
    if DOCUMENTS[stem][0] == "ab":
        for c in d["comparisons"].values():
            c["a_ns"], c["b_ns"] = c["b_ns"], c["a_ns"]
            c["a_median_ns"], c["b_median_ns"] = c["b_median_ns"], c["a_median_ns"]
    elif d.get("attribution"):
        for p in d["attribution"]["parts"]:
            p["host_ns_per_step_a"], p["host_ns_per_step_b"] = \
                p["host_ns_per_step_b"], p["host_ns_per_step_a"]
    else:
        a, b = d["variants"]
        a["summary"], b["summary"] = b["summary"], a["summary"]
        for r in d["ab"]["figures"].values():
            r["a_median_ns"], r["b_median_ns"] = r["b_median_ns"], r["a_median_ns"]
    return d


@pytest.mark.parametrize("suffix", list(DOC_OUTPUTS))
@pytest.mark.parametrize("stem", list(DOCUMENTS))
def test_swapping_the_a_and_b_columns_fails(stem, suffix):
    if UPDATE:
        pytest.skip("refreshing")
    swapped = _swap_a_and_b(stem, _doc(stem))
    with pytest.raises(pytest.fail.Exception, match="differs from the golden output"):
        check(render_doc(stem, swapped, suffix), GOLDEN / f"{stem}.{suffix}")


@pytest.mark.parametrize("stem", list(DOCUMENTS))
def test_document_lines_fit_the_width(stem):
    for suffix, (_, options) in DOC_OUTPUTS.items():
        if suffix.startswith("text"):
            text = render_doc(stem, _doc(stem), suffix)
            too_long = [ln for ln in text.splitlines() if len(ln) > options.width]
            assert not too_long, (stem, suffix, too_long[:3])


RANK_NAME = "trainer_job_2026_12_07_worker_rank{}.pt.trace.json"


@pytest.fixture(scope="module")
def ranks_report(tmp_path_factory):
    """Four ranks of one fixture under long names that differ only near their end, the
    last one cut short (damaged): what the ranks table must keep tellable apart at 80."""
    import gzip

    from traceview.multi.ranks import analyze_ranks

    d = tmp_path_factory.mktemp("ranks")
    raw = gzip.decompress((ROOT / "fixtures" / FIXTURES[0]).read_bytes())
    for i in range(3):
        (d / (RANK_NAME.format(i) + ".gz")).write_bytes(gzip.compress(raw, mtime=0))
    (d / RANK_NAME.format(3)).write_bytes(raw[: len(raw) * 2 // 3])
    return analyze_ranks([d], jobs=1)


@pytest.mark.parametrize("suffix", list(DOC_OUTPUTS))
def test_golden_ranks(ranks_report, suffix):
    name, options = DOC_OUTPUTS[suffix]
    got = renderer(name, "ranks").render(ranks_report, options)
    check(got, GOLDEN / f"ranks_four_damaged.{suffix}")
    if suffix.startswith("text"):
        assert max(len(line) for line in got.splitlines()) <= options.width
