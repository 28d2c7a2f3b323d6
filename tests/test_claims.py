"""Every sentence the reports print is true of the report it is printed from.

Each sentence is a claim (``traceview.report.claims``): the figures it shows, where the
report holds each, and what it asserts between them. These tests read every claim of
every fixture, every public corpus trace and generated traces back against the report's
JSON, in every view (the default, ``--thread main``, a ``--window`` cutting the middle,
``--calls`` naming the calls), and check that the outputs (text, markdown, JSON) print
each claim as its text says it. Then, for each kind of relation, that a claim
contradicting its report is caught: a check that cannot fail proves nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import public_corpus
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import traceview
from tracebuilder import TraceBuilder
from traceview.codes import FINDINGS, SENTENCES
from traceview.errors import UsageError
from traceview.options import Options
from traceview.report.claims import (
    RELATION_KINDS,
    Claim,
    Figure,
    check,
    check_all,
    from_json,
    pointer,
    rel,
    resolve,
)
from traceview.report.model import Report
from traceview.units import fmt_ns

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(p.name for p in (ROOT / "fixtures").glob("*.json.gz"))

# Sentences of fixtures the check finds false today, with what is wrong. Each is a
# strict xfail: the fix that makes the sentence true makes its test fail here too, so
# the entry is removed with the fix.
#: (fixture, view) -> why its claims are known to contradict its figures (a strict xfail:
#: a fix makes the entry fail until it is removed)
KNOWN_FALSE: dict[tuple[str, str], str] = {}


def _views(trace, base: Report) -> dict[str, Options]:
    """The views every claim is checked in: what a user can ask for on this trace."""
    views = {"default": Options(), "thread": Options(thread="main")}
    w = base.window.dur_ns
    if w >= 4:
        views["window"] = Options(window=f"{w // 4}ns:{3 * w // 4}ns")
    if base.calls.per_call:
        views["calls"] = Options(calls=re.escape(base.calls.per_call[0].name))
    return views


def _problems(r: Report) -> list[str]:
    """Every contradiction between the report's claims and its JSON, and every finding
    whose message is not its claim's text."""
    doc = r.to_dict()
    out = check_all(r.claims, doc)
    assert doc["claims"] == [_claim_json(c) for c in r.claims] \
        == [c.as_json() for c in r.claims]
    texts = [c.text for c in r.claims]
    for f in r.findings:
        if f.message not in texts:
            out.append(f"{f.id}: the message {f.message!r} is no claim's text")
    ids = [c.id for c in r.claims if c.id in FINDINGS]
    if sorted(ids) != sorted(f.id for f in r.findings):
        out.append(f"claims {ids} are not the findings {[f.id for f in r.findings]}")
    out += [f"{c.id}: no such finding or sentence id" for c in r.claims
            if c.id not in FINDINGS and c.id not in SENTENCES]
    out += _render_lines_missing(r, doc)
    window = [c.text for c in r.claims if c.id == "window"]
    if window != [doc["window"]["description"]]:
        out.append(f"the window's description is not its claim's text: {window}")
    found = [c.text for c in r.claims if c.id == "calls-found"]
    if found != [doc["calls"]["description"]]:
        out.append(f"the calls' description is not its claim's text: {found}")
    # a cold call's or an outlier's reason is its claim's text, and every one has one
    said = {(c.id, c.value("call")): c.text for c in r.claims
            if c.id in ("cold-reason", "outlier-reason")}
    for row in r.calls.per_call:
        for sid, flag, words in (("cold-reason", row.cold, row.cold_reason),
                                 ("outlier-reason", row.outlier, row.outlier_reason)):
            if flag and said.get((sid, row.index)) != words:
                out.append(f"call {row.index}: {sid} {words!r} is not its claim's text")
            if not flag and (sid, row.index) in said:
                out.append(f"call {row.index}: a {sid} claim for a call that is not so")
    # the outliers the per-call title says are counted are warm (an incomplete one is not)
    warm = {row.index: row.warm for row in r.calls.per_call}
    for c in r.claims:
        if c.id == "calls-title":
            out += [f"calls-title: outlier #{f.value} is said counted but is not warm"
                    for f in c.figures if f.name.startswith("outliers:") and not warm[f.value]]
    return out


def _render_lines_missing(r: Report, doc: dict) -> list[str]:
    """The lines both outputs print beside their tables (the window's header, the device
    line, the per-call title, capture's baseline, the reproducer's results) are claims,
    each exactly where the report has its figures: a line the renderers word themselves
    again would be missing here (the renderers fall back to making the claim only for a
    report saved without claims)."""
    stats = doc["calls"]["stats"]
    baseline = (doc["trace"].get("capture") or {}).get("baseline")
    share = (doc["calls"].get("perturbation") or {}).get("unprofiled_share")
    want = {"window-length": 1, "device": 1,
            "calls-title": int(bool(doc["calls"]["per_call"])),
            "unprofiled-baseline": int(baseline is not None),
            "unprofiled-share": int(share is not None),
            "device-result": int(bool(stats.get("kernel_ns", {}).get("n"))),
            "api-result": int(bool(stats.get("api_ns", {}).get("n"))),
            "launches": 1, "warm-mode": 1, "timer": 1,
            "typical-call": int(doc["typical_call"] is not None),
            "correctness": int((doc["trace"].get("capture") or {}).get("correctness")
                               is not None)}
    # the typical step's section titles are where its headline is
    for sid in ("step-phases-title", "step-heading"):
        want[sid] = sum(1 for c in r.claims if c.id == "typical-step")
    want["operation-step"] = int(doc["steps"] is not None and bool(doc["steps"]["steps"]))
    # under the device's line: a line per device where there are several, per stream
    # where there are several or they overlap (their busy times sum past the union)
    dev = doc["device"]
    streams = dev["per_stream"]
    want["device-row"] = len(dev["per_device"]) if len(dev["per_device"]) > 1 else 0
    want["device-stream"] = len(streams) if len(streams) > 1 or sum(
        s["busy_ns"] for s in streams) > dev["busy_ns"] else 0
    # the module table is titled where it is shown: calls, families and Python frames
    want["families-title"] = int(bool(doc["calls"]["per_call"] and doc["host"]["families"]
                                      and doc["trace"]["python_frames"]))
    got = {sid: sum(1 for c in r.claims if c.id == sid) for sid in want}
    return [f"{sid}: {got[sid]} claims, want {n}" for sid, n in want.items() if got[sid] != n]


def _claim_json(c: Claim) -> dict:
    return {"id": c.id, "text": c.text,
            "figures": [{"name": f.name, "value": f.value, "path": f.path} for f in c.figures],
            "relations": [{"kind": x.kind, "figures": list(x.figures)} for x in c.relations]}


def _flat(text: str) -> str:
    return " ".join(text.split())


def _check_views(path: Path, name: str) -> dict[str, list[str]]:
    trace = traceview.load(path)
    base = traceview.explain(trace)
    got = {}
    for view, opts in _views(trace, base).items():
        try:
            r = base if view == "default" else traceview.explain(trace, opts)
        except UsageError as exc:  # a view this trace cannot give (no thread called main)
            assert view == "thread", (name, view, exc)
            continue
        got[view] = _problems(r) + _unprinted(r)
    return got


# Claims one output prints where the other shows the same figures otherwise: the lines
# under the device's line (the markdown's devices table has a row per device and stream,
# table cells; it has no launches line), the typical call's title (the markdown draws the
# call as a Mermaid chart titled in the chart's own syntax), the typical step's section
# titles (each output its own) and the reproducer template's fields (the text output
# has no template).
ONE_OUTPUT = {"device-row": "text", "device-stream": "text", "launches": "text",
              "typical-call": "text", "step-phases-title": "text", "step-heading": "markdown",
              "warm-mode": "markdown", "timer": "markdown", "correctness": "markdown",
              "operation-step": "markdown"}


def _unprinted(r: Report) -> list[str]:
    """The claims the text or markdown output does not print as their texts say them
    (the renderers print claims; they make no sentence of their own)."""
    from traceview.render.markdown import esc, prose
    from traceview.render.registry import RenderOptions, renderer

    outs = [renderer(name).render(r, opts) for name, opts in
            (("text", RenderOptions(width=400)), ("md", RenderOptions()))]
    assert all(isinstance(o, str) for o in outs)  # both renderers write text
    text, md = (_flat(str(o)) for o in outs)
    # with no call, the text's header has no calls to describe (the JSON says why)
    shown = [c for c in r.claims if c.id != "calls-found" or r.calls.per_call]
    # markdown prints a sentence escaped, or as prose with its names in code spans
    return [f"{c.id}: not printed in {what}" for c in shown
            for what, out, said in (("text", text, (c.text,)),
                                    ("markdown", md, (esc(c.text), prose(c.text))))
            if ONE_OUTPUT.get(c.id, what) == what and not any(_flat(s) in out for s in said)]


def _cases():
    for name in FIXTURES:
        for view in ("default", "thread", "window", "calls"):
            why = KNOWN_FALSE.get((name, view))
            marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
            yield pytest.param(name, view, marks=marks, id=f"{name}-{view}")


_SEEN: dict[str, dict[str, list[str]]] = {}


@pytest.mark.parametrize(("name", "view"), list(_cases()))
def test_every_claim_of_a_fixture_holds(name, view):
    if name not in _SEEN:
        _SEEN[name] = _check_views(ROOT / "fixtures" / name, name)
    views = _SEEN[name]
    if view not in views:
        pytest.skip(f"{name} has no {view} view (no calls, or too short a window)")
    assert views[view] == []


@pytest.mark.parametrize("entry", [e.name for e in public_corpus.kineto_entries()] or ["(none)"])
def test_every_claim_of_a_public_trace_holds(entry):
    path = public_corpus.locate(entry) if entry != "(none)" else None
    if path is None:
        pytest.skip(f"public trace {entry} not in the corpus directory")
    views = _check_views(path, entry)
    assert views == {v: [] for v in views}


FORMATTERS = ("fmt_ns", "fmt_signed_ns", "fmt_share", "fmt_pct", "fmt_bytes", "fmt_rate",
              "plural")


def test_analyses_format_no_figure():
    """Analyses compute figures and never words: nothing under ``analyses/`` imports a
    unit formatter (the report's claims word the figures)."""
    pkg = ROOT / "traceview" / "analyses"
    used = {(p.name, f) for p in sorted(pkg.glob("*.py")) for f in FORMATTERS
            if re.search(rf"\b{f}\b", p.read_text())}
    assert used == set()


# The report modules that make sentences: each sentence a claim (``report.claims``).
CLAIMS_LAYER = ("claims.py", "sentences.py", "messages.py", "integrity_claims.py",
                "kernel_words.py", "unprofiled_words.py", "proton_words.py", "proton_lines.py",
                "measured_lines.py")
# An f-string value that reads as a figure: a length, a time, a count, a share.
FIGURE_SOURCE = re.compile(r"\blen\(|_ns\b|count|ratio|share|\bn\b|rounds|calls\b")
# What the renderers' guards read as a figure besides: the sides' or a row's calls
# (``d.calls_before``), a list's total, what is shown and the rest, the wrong, passed and
# ran counts, a call's number, a time limit, an error or index, and spaced arithmetic
# (``total - shown``).
STRICT_FIGURE_SOURCE = re.compile(
    FIGURE_SOURCE.pattern + r"|calls_|\btotal\b|\bshown\b|\brest\b|\bwrong\b|\bpassed\b"
    r"|\bran\b|\bcall\b|timeout|out_of_range|_err\b|index|\w \S?[-+*/] \w")
#: (module, the formatted expression) -> why it is still worded outside the claims layer
#: (an entry that no longer occurs fails the test: it is removed with the fix)
WORDED_ELSEWHERE = {
    ("explanation.py", "len(lanes)"): "a diagnostic's message (input problems are not claims)",
    ("explanation.py", "MAX_HOST_THREADS"): "the same diagnostic",
    ("explanation.py", "left"): "the same diagnostic",
    ("explanation.py", "n.holes"): "the events-removed diagnostic's message",
    ("explanation.py", "n.numbered"): "the same diagnostic",
}


def _formatted_figures(path: Path) -> set[tuple[str, str]]:
    """(module, expression) of every figure ``path`` formats into words: a unit
    formatter named, or an f-string value with a format spec or that reads as a figure.
    Error messages (``raise``) are not report sentences."""
    import ast

    tree = ast.parse(path.read_text())
    raised = {id(sub) for node in ast.walk(tree) if isinstance(node, ast.Raise)
              for sub in ast.walk(node)}
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in FORMATTERS:
            out.add((path.name, node.id))
        if isinstance(node, ast.JoinedStr) and id(node) not in raised:
            for v in node.values:
                if not isinstance(v, ast.FormattedValue):
                    continue
                src = ast.unparse(v.value)
                if v.format_spec is not None or STRICT_FIGURE_SOURCE.search(src):
                    out.add((path.name, src.split("(")[0] if "fmt_" in src else src))
    return out


def test_report_modules_word_no_figure_outside_the_claims_layer():
    """Only the claims layer turns a figure into words: any other module of ``report/``
    that formats one makes a sentence no claim checks."""
    found = set()
    for p in sorted((ROOT / "traceview" / "report").glob("*.py")):
        if p.name not in CLAIMS_LAYER:
            found |= _formatted_figures(p)
    assert found == set(WORDED_ELSEWHERE)


def test_the_guard_sees_a_formatted_figure(tmp_path):
    """The guard above catches what it is for: a percentage, a time, a count."""
    p = tmp_path / "words.py"
    p.write_text("from traceview.units import fmt_ns\n"
                 "def f(r):\n"
                 "    a = f'{r.share:.0%} of the call'\n"
                 "    b = f'{len(r.calls)} calls'\n"
                 "    c = f'{fmt_ns(r.wall_ns)}'\n"
                 "    raise ValueError(f'{r.n_bad} bad')\n")
    assert _formatted_figures(p) == {("words.py", "r.share"), ("words.py", "len(r.calls)"),
                                     ("words.py", "fmt_ns")}


# The renderers of explain's report: they print claims' texts and word no figure of their
# own, but in table cells, charts and input diagnostics.
EXPLAIN_RENDERERS = ("console.py", "markdown.py", "percall.py", "training.py",
                     "call_picture.py", "labels.py", "figure.py", "names.py", "text.py")
#: (module, function) -> why it formats a figure in an f-string that is no claim (an entry
#: that no longer occurs fails the test: it is removed with the fix)
RENDERED_ELSEWHERE = {
    ("console.py", "_header"): "the calls' count for a report read back from a JSON saved "
                               "before the calls' description (calls-found) was a claim",
    ("markdown.py", "_heading"): "the same fallback",
    ("console.py", "_notes"): "input diagnostics' counts: input problems are not claims",
    ("markdown.py", "_findings"): "the same diagnostics",
    ("console.py", "_waterfall"): "the waterfall's axis and legend: a chart's labels",
    ("markdown.py", "gantt"): "the Mermaid chart's title and bars, in the chart's syntax",
    ("call_picture.py", "busy_words"): "a chart's legend (terminal, SVG)",
    ("call_picture.py", "note"): "what a chart leaves out or merges of its own bars",
    ("figure.py", "render_svg"): "the SVG chart's title, note and axis",
    ("figure.py", "_host_rows"): "the SVG chart's legend",
    ("markdown.py", "_matrix"): "table cells (the matrix's total row)",
    ("markdown.py", "_operation"): "the kernels named with their counts in code spans and "
                                   "the op's launches: a list of names in markdown's code "
                                   "spans that a claim's plain text cannot hold",
    ("names.py", "kernel_labels"): "a kernel table's name cell ('[1 of 3 variants]')",
    ("percall.py", "unprofiled_parts"): "table cells (the unprofiled table's share column)",
    ("percall.py", "console_sections"): "a table row ('4 more') and the tree's fixed fold share",
    ("percall.py", "markdown_sections"): "the tree's fixed fold share",
    ("percall.py", "_node_label"): "a tree's rows",
    ("percall.py", "add"): "a tree's folded row ('... 3 smaller')",
    ("training.py", "threads_table"): "table cells",
    ("training.py", "step_sections"): "table rows ('4 more')",
    ("training.py", "_markdown_lines"): "table rows (markdown pipe rows)",
    ("console.py", "_calls"): "the per-call table's title: the calls-title and "
                              "unprofiled-share claims' texts (calls_title_words)",
    ("markdown.py", "render_markdown"): "the same title",
    ("console.py", "_functions"): "table cells (in calls: the warm calls holding a function)",
    ("markdown.py", "_pc"): "the same table cells",
    ("markdown.py", "left_out_claim"): "makes the rows-left-out claim",
    ("percall.py", "reasons_lines"): "a call's number and name labelling its cold and "
                                     "outlier reasons (the cold-reason and outlier-reason "
                                     "claims' texts)",
}


def _worded_in(path: Path, source: re.Pattern[str] = STRICT_FIGURE_SOURCE
               ) -> set[tuple[str, str]]:
    """(module, function) of every f-string in ``path`` that formats a figure (as
    ``_formatted_figures`` reads one, or as ``source`` does), by the innermost function
    holding it."""
    import ast

    out: set[tuple[str, str]] = set()

    def visit(node: ast.AST, fn: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) \
                else fn
            if isinstance(child, ast.JoinedStr) and any(
                    isinstance(v, ast.FormattedValue) and (
                        v.format_spec is not None
                        or source.search(src := ast.unparse(v.value))
                        or any(f in src for f in FORMATTERS)) for v in child.values):
                out.add((path.name, name))
            visit(child, name)

    visit(ast.parse(path.read_text()), "<module>")
    return out


def test_explain_renderers_word_figures_only_in_cells_charts_and_diagnostics():
    """Every sentence explain's outputs print is a claim's text: an f-string of a
    renderer that formats a figure anywhere else makes a sentence no claim checks."""
    found = set()
    for name in EXPLAIN_RENDERERS:
        found |= _worded_in(ROOT / "traceview" / "render" / name)
    assert found == set(RENDERED_ELSEWHERE)


# The renderers of the measured documents (serve, ab, ranks, capture's summary, a sweep):
# their sentences are claims made from the document they print (``claims_of``-like
# functions, listed first: each makes its text from the figures it cites), the rest table
# cells, titles of tables whose figures are the cells, and what a user asked for.
MEASURED_RENDERERS = ("serve_common.py", "serve_console.py", "serve_markdown.py",
                      "ab_report.py", "ranks_report.py", "measured/capture.py",
                      "measured/sweep.py")
#: (module, function) -> why it formats a figure in an f-string that is no claim, or the
#: claim it makes (an entry that no longer occurs fails the test: it is removed with it)
MEASURED_ELSEWHERE = {
    ("serve_common.py", "result_claim"): "makes the serve-result claim",
    ("serve_common.py", "decode_claim"): "makes the serve-decode claim",
    ("serve_common.py", "attribution_caption_claim"):
        "makes the serve-attribution-caption claim",
    ("ranks_report.py", "ranks_claims"): "makes the ranks-* summary claims",
    ("ranks_report.py", "title_claims"): "makes the ranks-title and ranks-heading claims",
    ("serve_common.py", "ns"): "a number format (table cells and the claims' texts)",
    ("serve_common.py", "pct"): "a number format",
    ("serve_common.py", "rate"): "a number format",
    ("ranks_report.py", "_pct"): "a number format (table cells)",
    ("ranks_report.py", "_relative"): "a number format (the straggler claim's reasons)",
    ("serve_common.py", "_ci"): "the attribution table's interval cells",
    ("serve_common.py", "model_line"): "the model as the run was asked for it (its config "
                                       "echoed: layers, sizes, seed), no measured figure",
    ("serve_common.py", "workload_line"): "the workload as asked for (requests, lengths, "
                                          "batch, arrivals), no measured figure",
    ("serve_common.py", "correctness_line"): "the words of the serve-correctness claim "
                                             "(correctness_claim cites their figures)",
    ("serve_common.py", "bisect_claims"): "makes the serve-bisect-* claims",
    ("serve_console.py", "_bisect"): "the bisect table's detail cells (a ratio per op)",
    ("serve_common.py", "ab_title_claims"): "makes the serve-ab-title and -heading claims",
    ("serve_console.py", "_ab"): "the A/B table's cells",
    ("serve_console.py", "_diagnosis"): "the host categories and ops per decode step: lists "
                                        "of names with their figures, as table rows",
    ("serve_common.py", "protocol_claim"): "makes the serve-protocol claim",
    ("serve_markdown.py", "render_serve_markdown"): "table rows, the failing ops after the "
                                                    "bisect line in code spans, the host time "
                                                    "per decode step by op (a list of names "
                                                    "with their figures, as table rows)",
    ("ab_report.py", "_comparison_rows"): "table cells",
    ("ab_report.py", "_with_ci"): "table cells",
    ("capture.py", "_render_capture"): "the summary table's cells and its 'how' column",
    ("capture.py", "efficiency_rows"): "the summary table's rows",
    ("sweep.py", "markdown"): "the page's table rows",
}


def test_measured_renderers_word_figures_only_in_claims_cells_and_inputs():
    """Every sentence the measured documents' outputs print with a figure is a claim's
    text, or is listed above with why not: an f-string that formats a figure anywhere
    else makes a sentence no claim checks."""
    found = set()
    for name in MEASURED_RENDERERS:
        found |= _worded_in(ROOT / "traceview" / "render" / name)
    assert found == set(MEASURED_ELSEWHERE)


def test_the_render_guard_sees_a_formatted_figure(tmp_path):
    p = tmp_path / "lines.py"
    p.write_text("def f(r):\n"
                 "    def g():\n"
                 "        return f'launches {r.count}'\n"
                 "    return f'{r.name}', g\n"
                 "def h(r):\n"
                 "    return f'busy {fmt_ns(r.busy)}'\n")
    assert _worded_in(p) == {("lines.py", "g"), ("lines.py", "h")}


def test_the_widened_guard_sees_a_hand_written_sentence_in_a_renderer(tmp_path):
    """The renderers' guard reads attribute access and arithmetic as figures: markdown's
    "3 more not shown" formatted by hand again (``total - shown``) and a line of ab's
    report worded from a document's field (``d.calls_before``) are each seen in their own
    module, where the guard's earlier pattern saw neither."""
    md = (ROOT / "traceview" / "render" / "markdown.py").read_text()
    made = '    return "" if claim is None else f"\\n\\n_{claim.text}._"\n'
    assert made in md
    p = tmp_path / "markdown.py"
    p.write_text(md.replace("def _more(claim: Claim | None) -> str:\n" + made,
                            "def _more(shown: int, total: int) -> str:\n"
                            "    return f'_{total - shown} more not shown._'\n"))
    assert _worded_in(p) - set(RENDERED_ELSEWHERE) == {("markdown.py", "_more")}
    assert ("markdown.py", "_more") not in _worded_in(p, FIGURE_SOURCE)
    ab = tmp_path / "ab_report.py"
    ab.write_text((ROOT / "traceview" / "render" / "ab_report.py").read_text()
                  + "\n\ndef sides(d):\n"
                    "    return f'before ({d.calls_before} of them), after {d.after}'\n")
    assert _worded_in(ab) - set(MEASURED_ELSEWHERE) == {("ab_report.py", "sides")}
    assert ("ab_report.py", "sides") not in _worded_in(ab, FIGURE_SOURCE)


def _left_out_said(doc: dict) -> dict[str, int]:
    """What markdown's tables leave out, recounted from the report's JSON: the rows each
    lists less those its table shows."""
    from traceview.render.markdown import MAX_CALL_ROWS, MAX_FUNCTION_ROWS, MAX_KERNEL_ROWS

    lists = {"functions": (sum(1 for f in doc["host"]["functions"] if f["self_ns"] > 0),
                           MAX_FUNCTION_ROWS),
             "kernels": (len(doc["device"]["kernels"]), MAX_KERNEL_ROWS),
             "calls": (len(doc["calls"]["per_call"]), MAX_CALL_ROWS)}
    return {what: n - top for what, (n, top) in lists.items() if n > top}


def test_every_count_of_rows_the_markdown_leaves_out_is_a_claim_that_holds(fixture_reports):
    """Under each table it cuts, explain's markdown says how many rows it left out: that
    sentence is a claim holding against the report's JSON, printed as its text says, once
    for each table cut, its count the rows recounted here from the JSON."""
    from traceview.render.markdown import left_out_claims
    from traceview.render.registry import RenderOptions, renderer

    seen = set()
    for name in FIXTURES:
        r = fixture_reports[name]
        doc = json.loads(str(renderer("json").render(r, RenderOptions())))
        md = str(renderer("md").render(r, RenderOptions()))
        claims = left_out_claims(r)
        assert check_all(claims, doc) == [], name
        assert all(c.id in SENTENCES for c in claims)
        said = [int(n) for n in re.findall(r"^_(\d+) more not shown\._$", md, re.M)]
        assert said == [c.value("rest") for c in claims], name
        assert sorted(said) == sorted(_left_out_said(doc).values()), name
        seen |= {w for w in _left_out_said(doc)}
    assert seen == {"functions", "kernels", "calls"}  # every cut table is checked


def test_a_count_of_rows_left_out_that_the_report_contradicts_is_caught(fixture_reports):
    """A count made from one kernel more than the report lists, and one whose shown and
    rest do not add up to its total: caught."""
    from traceview.render.markdown import MAX_KERNEL_ROWS, left_out_claim

    r = next(r for n in FIXTURES if len((r := fixture_reports[n]).device.kernels)
             > MAX_KERNEL_ROWS)
    doc = r.to_dict()
    n = len(doc["device"]["kernels"])
    c = left_out_claim(n + 1, MAX_KERNEL_ROWS, ("device", "kernels"))
    assert c is not None and c.text == f"{n + 1 - MAX_KERNEL_ROWS} more not shown"
    assert check(c, doc) == [f"rows-left-out: total is {n + 1}, the report has {n} at "
                             "/device/kernels"]
    right = left_out_claim(n, MAX_KERNEL_ROWS, ("device", "kernels"))
    assert right is not None and check(right, doc) == []
    bent = Claim(right.id, right.text, tuple(
        Figure(f.name, f.value + 1 if f.name == "rest" else f.value, f.path)
        for f in right.figures), right.relations)
    assert check(bent, doc) == [
        f"rows-left-out: sum('shown', 'rest', 'total') does not hold: the parts add up to "
        f"{n + 1}, not {n}"]


def test_docs_list_the_sentence_table_exactly():
    text = (ROOT / "docs" / "findings.md").read_text()
    section = text.split("## Sentence ids", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| (\w+) \| (.+?) \|$", section, re.M)
    assert rows == [(c.id, c.severity, c.meaning) for c in SENTENCES.values()]


# --- generated traces ------------------------------------------------------------------

@st.composite
def _loops(draw):
    """A loop of calls, each a Python frame around a launch and its kernel, with random
    host work before, launch cost, kernel length and gaps: host-bound and device-bound
    both reachable, the typical call anywhere."""
    n = draw(st.integers(2, 9))
    calls = []
    for _ in range(n):
        calls.append((draw(st.integers(100, 40_000)), draw(st.integers(500, 8_000)),
                      draw(st.integers(200, 60_000)), draw(st.integers(0, 30_000)),
                      draw(st.booleans())))
    return calls


def _build(calls) -> TraceBuilder:
    b = TraceBuilder()
    t = 1_000_000
    for i, (pre, launch, kernel, gap, sync) in enumerate(calls):
        start = t
        launch_at = start + pre
        k_start = launch_at + launch + 1_000
        end = launch_at + launch + (kernel + 2_000 if sync else 500)
        b.py(f"loop.py(3): step_{i % 2}", start, end - start + 10)
        b.launched_kernel(f"k{i % 3}", launch_at, launch, k_start, kernel)
        if sync:
            b.sync(launch_at + launch + 100, end - launch_at - launch - 100)
        t = end + 10 + gap
    return b


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(calls=_loops())
def test_every_claim_of_a_generated_trace_holds(tmp_path, calls):
    """Every claim, but one relation known false on some loops (the next test)."""
    path = _build(calls).write(tmp_path / "loop.json")
    views = _check_views(path, "generated")
    assert {v: [p for p in got if "drawn_idle_share" not in p] for v, got in views.items()} \
        == {v: [] for v in views}


# Two calls; call 0's kernel runs inside call 1. The medians give a call idle 50% of the
# time ("device-bound: the device is busy 50% of a typical call (1.11 us)"), while the
# typical call drawn (call 0) has the device idle all of it: that sentence was false of
# the call every output draws. Found by the property test above; the verdict now reads
# every figure from the typical call itself.
DRAWN_AGAINST_VERDICT = [(100, 500, 556, 0, False), (100, 500, 200, 0, False)]


def test_the_verdict_agrees_with_the_call_drawn(tmp_path):
    path = _build(DRAWN_AGAINST_VERDICT).write(tmp_path / "loop.json")
    r = traceview.analyze(path)
    assert r.verdict is not None and r.typical is not None
    assert _problems(r) == []


# --- a contradicting claim is caught, for each relation -------------------------------

DOC = {"calls": {"stats": {"api_ns": {"p50": 1_000}, "host_overhead_ns": {"p50": 600}},
                 "categories": {"a/b": {"p50": 7}}},
       "window": {"dur_ns": 5_000}, "findings": [{"id": "x", "evidence": {"count": 3}}]}
CALL = Figure("call", 1_000, "/calls/stats/api_ns/p50")
IDLE = Figure("idle", 600, "/calls/stats/host_overhead_ns/p50")
WINDOW = Figure("window", 5_000, "/window/dur_ns")


def _claim(*figures: Figure, relations=()) -> Claim:
    return Claim("host-bound", "words", figures, tuple(relations))


@pytest.mark.parametrize(("kind", "figures", "true", "false"), [
    ("eq", (CALL, Figure("c", 1_000)), ("call", "c"), ("call", "idle")),
    ("lt", (IDLE, CALL), ("idle", "call"), ("call", "idle")),
    ("le", (IDLE, CALL), ("idle", "call"), ("call", "idle")),
    ("gt", (IDLE, CALL), ("call", "idle"), ("idle", "call")),
    ("ge", (IDLE, CALL), ("call", "idle"), ("idle", "call")),
    ("ratio", (IDLE, CALL, Figure("share", 0.6), Figure("wrong", 0.61)),
     ("idle", "call", "share"), ("idle", "call", "wrong")),
    ("ratio_rounded", (IDLE, Figure("third", 3), Figure("r", 200.0), Figure("wrong", 200.001),
                       Figure("decimals", 3)),
     ("idle", "third", "r", "decimals"), ("idle", "third", "wrong", "decimals")),
    ("sum", (IDLE, CALL, Figure("rest", 400), Figure("off", 401)),
     ("idle", "rest", "call"), ("idle", "off", "call")),
])
def test_each_relation_holds_or_fails(kind, figures, true, false):
    figs = figures if "idle" in {f.name for f in figures} else (*figures, IDLE)
    assert check(_claim(*figs, relations=[rel(kind, *true)]), DOC) == []
    got = check(_claim(*figs, relations=[rel(kind, *false)]), DOC)
    assert len(got) == 1 and "does not hold" in got[0], got


def test_every_relation_kind_is_tested():
    tested = {"eq", "lt", "le", "gt", "ge", "ratio", "ratio_rounded", "sum"}
    assert set(RELATION_KINDS) == tested


def test_a_figure_unlike_the_report_is_caught():
    """The sentence shows 22.8 us where the report holds 23.0 us: caught, with the path."""
    wrong = _claim(Figure("call", 999, CALL.path), IDLE)
    assert check(wrong, DOC) == [
        "host-bound: call is 999, the report has 1000 at /calls/stats/api_ns/p50"]
    assert check(_claim(CALL, IDLE), DOC) == []


def test_a_figure_at_no_path_is_caught():
    got = check(_claim(Figure("call", 1_000, "/calls/stats/wall_ns/p50")), DOC)
    assert len(got) == 1 and "no 'wall_ns' there" in got[0]


def test_a_relation_of_an_unknown_or_unknown_valued_figure_is_caught():
    assert check(_claim(CALL, relations=[rel("lt", "call", "nothing")]), DOC)
    assert check(_claim(CALL, Figure("none", None), relations=[rel("lt", "none", "call")]), DOC)
    assert check(_claim(CALL, IDLE, relations=[rel("ratio", "idle", "call")]), DOC)


def test_pointers_escape_any_key():
    """A category of a user's rule table may hold "/" or "~": the pointer still finds it."""
    p = pointer("calls", "categories", "a/b", "p50")
    assert p == "/calls/categories/a~1b/p50" and resolve(DOC, p) == 7
    assert resolve(DOC, pointer("findings", 0, "evidence", "count")) == 3
    with pytest.raises(KeyError):
        resolve(DOC, "/findings/1")


def test_a_verdict_the_drawn_call_contradicts_is_caught():
    """A sentence seen wrong in the field, as the verdict's claim cites it: "device is
    busy 100% of a typical call (22.8 us)" where the call drawn has the device idle all
    of it. The medians agree with each other; the call drawn does not: caught."""
    doc = {"calls": {"stats": {"api_ns": {"p50": 22_800}, "host_overhead_ns": {"p50": 0}},
                     "per_call": [{"metrics": {"api_ns": 22_800, "host_overhead_ns": 22_800}}]}}
    busy = _claim(
        Figure("call", 22_800, "/calls/stats/api_ns/p50"),
        Figure("idle", 0, "/calls/stats/host_overhead_ns/p50"), Figure("idle_share", 0.0),
        Figure("threshold", 0.5),
        Figure("drawn_call", 22_800, "/calls/per_call/0/metrics/api_ns"),
        Figure("drawn_idle", 22_800, "/calls/per_call/0/metrics/host_overhead_ns"),
        Figure("drawn_idle_share", 1.0),
        relations=[rel("ratio", "idle", "call", "idle_share"), rel("lt", "idle_share", "threshold"),
                   rel("ratio", "drawn_idle", "drawn_call", "drawn_idle_share"),
                   rel("lt", "drawn_idle_share", "threshold")])
    assert [p for p in check(busy, doc) if "drawn_idle_share" in p]


# --- diff's verdict --------------------------------------------------------------------

DIFF_PAIRS = [(f"{stem}.cold.json.gz", f"{stem}.json.gz") for stem in sorted(
    n[: -len(".cold.json.gz")] for n in FIXTURES if n.endswith(".cold.json.gz"))] + [
    ("flaggems_add_16x4096_bf16_unpatched.json.gz", "flaggems_add_16x4096_bf16_patched.json.gz"),
    ("torch_mul_1x4096_f32.json.gz", "triton_mul_1x4096_f32.json.gz"),
]


@pytest.mark.parametrize(("before", "after"), DIFF_PAIRS, ids=lambda n: n.split(".")[0])
def test_every_claim_of_a_diff_holds(before, after, fixture_reports):
    from traceview.multi.compare import diff_reports, read_diff

    d = diff_reports(fixture_reports[before], fixture_reports[after])
    doc = d.as_dict()
    claims = [from_json(c) for c in doc["claims"]]
    assert [c.id for c in claims][:1] == ["diff-verdict"] and claims[0].text == doc["verdict"]
    speed = (doc["code_path"] or {}).get("machine_speed") or {}
    assert [c.text for c in claims[1:]] == ([speed["note"]] if speed.get("uniform") else [])
    assert check_all(claims, doc) == []
    assert read_diff(doc).claims == doc["claims"]


def test_one_call_against_one_claims_no_interval():
    """A diff of one step against one: the bootstrap resamples each side's one value, so
    its "interval" is the difference itself ("95% CI [-4.41 ms, -4.41 ms]"). The line
    says there is no interval; a claim of one is caught."""
    from traceview.multi.compare import Comparison, Diff

    api = Comparison("calls.api_ns.p50", 10_000_000, 5_590_000, -4_410_000, -4_410_000,
                     -4_410_000, True, 1, 1)
    d = Diff("a", "b", 1, 1, [api], [])
    doc = d.as_dict()
    assert "cannot be told from noise (1 against 1 calls: no interval)" in doc["verdict"]
    assert "CI" not in doc["verdict"] and "differs" not in doc["verdict"]
    claim = from_json(doc["claims"][0])
    assert check(claim, doc) == []
    with_ci = Claim(claim.id, claim.text, (*claim.figures, Figure("fewest", 2)),
                    (*claim.relations, rel("ge", "p.n_before", "fewest")))
    assert check(with_ci, doc) == [
        "diff-verdict: ge('p.n_before', 'fewest') does not hold: 1 ge 2 is false"]


# --- integrity verdicts and what-if projections ---------------------------------------

US = 1_000


def _drops(b: TraceBuilder, n: int, dropped: set[int], name: str = "call") -> None:
    """``n`` calls of three pointwise launches; the second launch of each call in
    ``dropped`` has no kernel record."""
    t = 0
    for i in range(n):
        b.annotation(name.replace("#", f"#{i}") if "#" in name else name, t, 100 * US)
        for j in range(3):
            ls = t + 5 * US + j * 20 * US
            if i in dropped and j == 1:
                b.launch(ls, 5 * US)
            else:
                b.launched_kernel("vectorized_elementwise_kernel", ls, 5 * US, ls + 8 * US,
                                  3 * US)
        t += 200 * US


def _prefix(b: TraceBuilder) -> None:
    for j in range(4):
        b.launch(j * 10 * US, 2 * US)
    for j in range(4, 8):
        b.launched_kernel("k", j * 10 * US, 2 * US, j * 10 * US + 3 * US, 1 * US)


def _overrun(b: TraceBuilder) -> None:
    b.launched_kernel("a", 0, 2 * US, 5 * US, 10 * US)
    b.launched_kernel("b", 3 * US, 2 * US, 12 * US, 10 * US)
    b.launched_kernel("c", 6 * US, 2 * US, 30 * US, 10 * US, stream=8)


def _capture(b: TraceBuilder) -> None:
    b.launch(0, 2 * US, api="cudaStreamBeginCapture")
    for j in range(5):
        b.launch(5 * US + j * 10 * US, 3 * US, api="cudaLaunchKernel")
    b.launch(60 * US, 2 * US, api="cudaStreamEndCapture")
    b.launch(70 * US, 50 * US, api="cudaGraphInstantiateWithFlags")
    b.launched_kernel("k", 200 * US, 2 * US, 205 * US, 1 * US)


def _short_replay(b: TraceBuilder) -> None:
    t = 0
    for nodes in (5, 5, 3, 5):
        corr = b.launch(t, 4 * US, api="cudaGraphLaunch")
        for k in range(nodes):
            b.kernel(f"node{k}", t + 10 * US + k * 2 * US, 1 * US, corr=corr)
        t += 100 * US


DAMAGED = {
    "two-dropped": (lambda b: _drops(b, 10, {3, 7}), {"integrity-check", "integrity-incomplete",
                                                      "integrity-unreliable"}),
    # more incomplete calls than a sentence names: "and 7 more"
    "fifteen-dropped": (lambda b: _drops(b, 30, set(range(0, 30, 2))),
                        {"integrity-check", "integrity-incomplete"}),
    "steps-touched": (lambda b: _drops(b, 6, {2}, "ProfilerStep#"),
                      {"integrity-check", "what-if"}),
    "dropped-prefix": (_prefix, {"integrity-check"}),
    "duration-overrun": (_overrun, {"integrity-check"}),
    "graph-capture": (_capture, {"integrity-check"}),
    "short-replay": (_short_replay, {"integrity-check", "integrity-graphs"}),
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_every_integrity_and_what_if_claim_holds(tmp_path, case):
    """Each damaged trace says what the check found, in every view, as claims the JSON
    bears out and the outputs print."""
    build, ids = DAMAGED[case]
    b = TraceBuilder()
    build(b)
    path = b.write(tmp_path / "t.json")
    r = traceview.analyze(path)
    assert ids <= {c.id for c in r.claims}, [c.id for c in r.claims]
    views = _check_views(path, case)
    assert views == {v: [] for v in views}


def test_integrity_sentences_name_each_call_or_count_the_rest(tmp_path):
    """15 incomplete calls: the sentence names 8 and says "7 more", and the report's
    list (counted here from the calls dropped) has 15."""
    b = TraceBuilder()
    _drops(b, 30, set(range(0, 30, 2)))
    r = traceview.analyze(b.write(tmp_path / "t.json"), Options(calls="call"))
    said = [c for c in r.claims if c.id == "integrity-incomplete"]
    assert [c.text for c in said] == [
        "15 incomplete call(s) left out of the warm figures: #0, #2, #4, #6, #8, #10, #12, #14 "
        "and 7 more"]
    assert check_all(said, r.to_dict()) == []
    c = said[0]
    wrong = Claim(c.id, c.text, tuple(Figure(f.name, 16, f.path) if f.name == "incomplete"
                                      else f for f in c.figures), c.relations)
    assert check(wrong, r.to_dict()) == [
        "integrity-incomplete: eq('incomplete', 'call:listed') does not hold: 16 eq 15 is false"]


def test_a_what_if_claim_against_another_call_is_caught(tmp_path):
    """A projection is of the typical call and replaces that call's own figure: a claim
    that says otherwise (the measured figure off by 1 ns) is caught at the path."""
    b = TraceBuilder()
    _drops(b, 10, {3, 7})
    r = traceview.analyze(b.write(tmp_path / "t.json"), Options(calls="call"))
    doc = r.to_dict()
    c = next(c for c in r.claims if c.id == "what-if")
    assert check(c, doc) == []
    m = c.value("measured")
    assert isinstance(m, int)
    off = Claim(c.id, c.text, tuple(Figure(f.name, m + 1, f.path) if f.name == "measured"
                                    else f for f in c.figures), c.relations)
    assert check(off, doc)[0].startswith(f"what-if: measured is {m + 1}, the report has {m}")


def test_a_window_of_user_ranges_counts_them(tmp_path):
    """``--window ProfilerStep``: the line says how many user ranges the window spans,
    counted here from the raw events, and its claim holds; a claim of one range more is
    caught at ``/window/ranges``."""
    import gzip
    import json

    path = ROOT / "fixtures" / "train_llama_eager.json.gz"
    raw = json.loads(gzip.decompress(path.read_bytes()))
    events = raw["traceEvents"] if isinstance(raw, dict) else raw
    want = sum(1 for e in events if e.get("cat") == "user_annotation" and e.get("ph") == "X"
               and "ProfilerStep" in str(e.get("name")))
    r = traceview.explain(traceview.load(path), Options(window="ProfilerStep"))
    assert r.window.description == f"span of {want} user range(s) matching 'ProfilerStep'"
    assert _problems(r) + _unprinted(r) == []
    c = next(c for c in r.claims if c.id == "window")
    more = Claim(c.id, c.text, (Figure("ranges", want + 1, "/window/ranges"),
                                *c.figures[1:]), c.relations)
    assert check(more, r.to_dict()) == [
        f"window: ranges is {want + 1}, the report has {want} at /window/ranges"]


def test_the_device_line_counts_overlapping_streams_once(tmp_path):
    """Two streams whose kernels overlap: the device line's busy time is the union of
    the kernels' intervals and the overlap the rest of their sum, both counted here from
    the kernels as written; busy and idle tile the window. Both outputs print the line
    whole (the overlap on it, not after the next line), and a claim of 1 ns more busy
    time is caught twice: at its path and in the tiling."""
    b = TraceBuilder()
    kernels = [(1, 10_000, 40_000), (2, 30_000, 25_000), (1, 60_000, 5_000)]
    for stream, start, dur in kernels:
        b.launched_kernel(f"k{stream}", start - 5_000, 2_000, start, dur, stream=stream)
    r = traceview.explain(traceview.load(b.write(tmp_path / "streams.json")))
    union = (55_000 - 10_000) + 5_000  # [10, 50) u [30, 55) = [10, 55), then [60, 65)
    total = sum(d for _, _, d in kernels)
    c = next(c for c in r.claims if c.id == "device")
    assert (c.value("busy"), c.value("overlap"), c.value("work_sum")) == (
        union, total - union, total)
    assert c.value("busy") + c.value("idle") == r.window.dur_ns
    assert f"(streams overlapped: {fmt_ns(total - union)} counted once)" in c.text
    assert _problems(r) + _unprinted(r) == []
    more = Claim(c.id, c.text, tuple(Figure(f.name, union + 1, f.path) if f.name == "busy"
                                     else f for f in c.figures), c.relations)
    assert check(more, r.to_dict()) == [
        f"device: busy is {union + 1}, the report has {union} at /device/busy_ns",
        "device: sum('busy', 'idle', 'window') does not hold: the parts add up to "
        f"{union + 1 + r.device.idle_ns}, not {r.window.dur_ns}",
        "device: ratio('busy', 'window', 'share') does not hold: "
        f"{union + 1} / {r.window.dur_ns} = {(union + 1) / r.window.dur_ns!r}, "
        f"not {union / r.window.dur_ns!r}",
        "device: sum('busy', 'overlap', 'work_sum') does not hold: the parts add up to "
        f"{total + 1}, not {total}"]


def test_the_per_call_title_names_cold_outlier_and_incomplete_calls(fixture_reports):
    """The per-call title's figures are the calls the report marks, counted here from
    its rows; text and markdown print the one claim."""
    for name, r in fixture_reports.items():
        if not r.calls.per_call:
            continue
        c = next(c for c in r.claims if c.id == "calls-title")
        rows = r.calls.per_call
        assert c.value("warm") == sum(1 for x in rows if not x.cold
                                      and not x.launches_without_work), name
        assert [f.value for f in c.figures if f.name.startswith("cold:")] == \
            [x.index for x in rows if x.cold], name
        assert [f.value for f in c.figures if f.name.startswith("outliers:")] == \
            [x.index for x in rows if x.outlier], name
        assert [f.value for f in c.figures if f.name.startswith("incomplete:")] == \
            [x.index for x in rows if x.launches_without_work and not x.cold][:8], name


# --- the device block's lines, the typical call's title, the reproducer's fields ---------

# The lines that were worded by the renderers themselves before they were claims.
RENDER_LINE_IDS = ("device-row", "device-stream", "launches", "typical-call", "warm-mode",
                   "timer", "correctness", "families-title", "step-phases-title",
                   "step-heading", "operation-step")
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def _two_devices(path: Path) -> Path:
    """Two devices: device 0 with two streams whose kernels overlap and a kernel with no
    launch record, device 1 with a kernel and a copy on one stream; launches by three
    APIs, one whose device record is lost."""
    b = TraceBuilder()
    b.launched_kernel("a", 0, 2 * US, 10 * US, 40 * US, stream=7, device=0)
    b.launched_kernel("b", 5 * US, 2 * US, 30 * US, 25 * US, stream=8, device=0)
    corr = b.launch(60 * US, 3 * US, api="cudaLaunchKernel")
    b.kernel("c", 100 * US, 20 * US, corr=corr, stream=7, device=1)
    corr = b.launch(65 * US, 3 * US, api="cudaMemcpyAsync")
    b.kernel("Memcpy HtoD", 125 * US, 10 * US, corr=corr, stream=7, device=1, cat="gpu_memcpy")
    b.launch(70 * US, 3 * US, api="cudaLaunchKernel")  # its device record is lost
    b.kernel("orphan", 140 * US, 5 * US, stream=8, device=0)
    return b.write(path)


def _union_ns(spans: list[tuple[int, int]]) -> int:
    """The length of a union of [start, end) spans, walked in start order."""
    total, reach = 0, None
    for a, b in sorted(spans):
        if reach is None or a >= reach:
            total, reach = total + b - a, b
        elif b > reach:
            total, reach = total + b - reach, b
    return total


def _records(events: list[dict]) -> tuple[list[dict], list[dict]]:
    """(launches, device records) as written, each with its times in ns."""
    def ns(e: dict) -> tuple[int, int]:
        a = round(float(e["ts"]) * 1000)
        return a, a + round(float(e["dur"]) * 1000)

    xs = [dict(e, span=ns(e)) for e in events if e.get("ph") == "X"]
    launches = [e for e in xs if e.get("cat") in LAUNCH_CATS and any(
        w in e["name"] for w in ("Launch", "Memcpy", "Memset"))]
    return launches, [e for e in xs if e.get("cat") in DEVICE_CATS]


def _launch_counts(events: list[dict]) -> tuple[dict[str, int], int, int]:
    """Launches by API, those whose correlation id a device record carries, and the
    device records no launch carries, counted from the events as written."""
    from collections import Counter

    launches, work = _records(events)
    launched = {e["args"].get("correlation") for e in launches}
    carried = {e["args"].get("correlation") for e in work} - {None}
    return (dict(Counter(e["name"] for e in launches)),
            sum(1 for e in launches if e["args"].get("correlation") in carried),
            sum(1 for e in work if e["args"].get("correlation") not in launched))


def _by_api(c: Claim) -> dict[str, int | float | None]:
    """A launches claim's APIs (from each figure's path) and their counts."""
    return {(f.path or "").rsplit("/", 1)[1].replace("~1", "/").replace("~0", "~"): f.value
            for f in c.figures if f.name.startswith("api:")}


def test_the_device_rows_streams_and_launches_count_the_records(tmp_path):
    """Two devices, two overlapping streams, a copy, a launch that lost its kernel and a
    kernel with no launch: each device's and each stream's busy time is the union of its
    records as written (counted here), its work items and sums theirs; the launches line
    counts the launch records by API. Both outputs print what they print of them."""
    import json

    path = _two_devices(tmp_path / "two_devices.json")
    events = json.loads(path.read_text())["traceEvents"]
    r = traceview.explain(traceview.load(path))
    assert _problems(r) + _unprinted(r) == []
    _, work = _records(events)
    rows = [c for c in r.claims if c.id == "device-row"]
    assert [c.text.split(":")[0] for c in rows] == ["device 0", "device 1"]
    for dev, c in zip((0, 1), rows, strict=True):
        mine = [e for e in work if e["args"]["device"] == dev]
        kernels = [e["span"] for e in mine if e["cat"] == "kernel"]
        copies = [e["span"] for e in mine if e["cat"] != "kernel"]
        assert c.value("busy") == _union_ns([e["span"] for e in mine])
        assert (c.value("kernels"), c.value("kernel_sum")) == (
            len(kernels), sum(b - a for a, b in kernels))
        if copies:
            assert (c.value("copies"), c.value("copy_sum")) == (
                len(copies), sum(b - a for a, b in copies))
        assert c.text.startswith(f"device {dev}: busy {fmt_ns(c.value('busy'))} (")
    streams = [c for c in r.claims if c.id == "device-stream"]
    keys = sorted({(e["args"]["device"], e["args"]["stream"]) for e in work})
    assert len(streams) == len(keys) == 3
    for (dev, stream), c in zip(keys, streams, strict=True):
        mine = [e["span"] for e in work if (e["args"]["device"], e["args"]["stream"])
                == (dev, stream)]
        assert (c.value("busy"), c.value("items")) == (_union_ns(mine), len(mine))
        assert c.text.startswith(f"device {dev} stream {stream}: busy {fmt_ns(_union_ns(mine))}")
    by_api, linked, unlinked = _launch_counts(events)
    c = next(c for c in r.claims if c.id == "launches")
    assert (_by_api(c), c.value("linked"), c.value("unlinked")) == (by_api, linked, unlinked)
    assert (linked, unlinked) == (4, 1)  # one launch lost its kernel; "orphan" has none
    assert c.value("count") == sum(by_api.values()) == 5


@pytest.mark.parametrize("name", ["torch_mul_1x4096_f32.json.gz", "train_llama_eager.json.gz",
                                  "torch_mul_graph.json.gz",
                                  "inductor_mul_1x4096_f32.cold.json.gz"])
def test_the_launches_line_counts_the_launch_records(name, fixture_reports):
    """The launches line of a fixture: its launches by API and those linked to device
    work, counted here from the fixture's events as written."""
    import gzip
    import json

    raw = json.loads(gzip.decompress((ROOT / "fixtures" / name).read_bytes()))
    events = raw["traceEvents"] if isinstance(raw, dict) else raw
    by_api, linked, unlinked = _launch_counts(events)
    c = next(c for c in fixture_reports[name].claims if c.id == "launches")
    assert (_by_api(c), c.value("count"), c.value("linked")) == (
        by_api, sum(by_api.values()), linked)
    assert unlinked == 0 and "unlinked" not in {f.name for f in c.figures}


def test_each_render_line_claim_is_on_some_fixture(fixture_reports, tmp_path):
    """Every line the renderers used to word themselves is a claim some fixture has (the
    per-device lines need two devices: a built trace), and a cold capture trace's timer
    field says its profiled calls are in the warm trace."""
    seen = {c.id for r in fixture_reports.values() for c in r.claims}
    assert set(RENDER_LINE_IDS) - {"device-row"} <= seen
    built = traceview.explain(traceview.load(_two_devices(tmp_path / "two.json")))
    assert "device-row" in {c.id for c in built.claims}
    cold = next(c for c in fixture_reports["torch_mul_1x4096_f32.cold.json.gz"].claims
                if c.id == "timer")
    assert "30 profiled calls in the warm trace (this trace: the cold call alone)" in cold.text


@pytest.mark.parametrize("name", ["two_streams_8192x8192_f16.json.gz",
                                  "torch_mul_1x4096_f32.cold.json.gz",
                                  "flag_gems_add_16x4096_bf16.json.gz",
                                  "train_llama_eager.json.gz"])
def test_a_report_saved_without_claims_prints_the_same_lines(name, fixture_reports):
    """A report read back from a JSON saved before its lines were claims: the renderers
    make each claim again from the figures, and print what they print from the claims."""
    from traceview.render.registry import RenderOptions, renderer
    from traceview.report.schema import from_dict

    r = fixture_reports[name]
    doc = r.to_dict()
    del doc["claims"]
    old = from_dict(doc)
    assert old.claims == ()
    for fmt, opts in (("text", RenderOptions(width=120)), ("md", RenderOptions())):
        assert renderer(fmt).render(old, opts) == renderer(fmt).render(r, opts), fmt


# (trace, claim id, which of its claims of that id, the figure made wrong, its wrong value
# from the claim's figures, the relation the wrong value breaks)
WRONG_FIGURE = [
    ("two devices", "device-row", 1, "busy", lambda c: c.value("work_sum") + 1,
     "le('busy', 'work_sum')"),
    ("two_streams_8192x8192_f16.json.gz", "device-stream", 0, "busy",
     lambda c: c.value("all_busy") + 1, "le('busy', 'all_busy')"),
    ("torch_mul_1x4096_f32.json.gz", "launches", 0, "linked", lambda c: c.value("count") + 1,
     "le('linked', 'count')"),
    ("train_llama_eager.json.gz", "typical-call", 0, "kernels",
     lambda c: c.value("device") + 1, "le('kernels', 'device')"),
    ("shape_loop_two_ops.json.gz", "warm-mode", 0, "warm", lambda c: c.value("count") + 1,
     "le('warm', 'count')"),
    ("torch_mul_1x4096_f32.json.gz", "timer", 0, "count", lambda c: c.value("iters") + 1,
     "le('count', 'iters')"),
    ("torch_mul_1x4096_f32.cold.json.gz", "timer", 0, "count", lambda c: 2,
     "le('count', 'one')"),
    ("flag_gems_add_16x4096_bf16.json.gz", "families-title", 0, "warm_calls",
     lambda c: c.value("warm") + 1, "le('warm_calls', 'warm')"),
    ("shape_model_schedule_cold.json.gz", "step-heading", 0, "warm",
     lambda c: c.value("count") + 1, "le('warm', 'count')"),
]
# Claims that assert nothing between their figures: a wrong figure is caught where the
# report holds it.
CITED_ONLY = [("train_llama_eager.json.gz", "step-phases-title", "wall"),
              ("train_llama_eager.json.gz", "operation-step", "count"),
              ("torch_mul_1x4096_f32.json.gz", "correctness", "max_abs_err")]


@pytest.mark.parametrize(("trace", "sid", "name"), CITED_ONLY, ids=[w[1] for w in CITED_ONLY])
def test_a_wrong_cited_figure_of_a_render_line_is_caught(trace, sid, name, fixture_reports):
    """A title or field that only cites its figures: the claim holds, and a copy of the
    report holding another value where it cites one is caught."""
    import copy

    r = fixture_reports[trace]
    doc = r.to_dict()
    c = next(c for c in r.claims if c.id == sid)
    assert check(c, doc) == []
    f = c.figure(name)
    assert f.path is not None and isinstance(f.value, int | float)
    moved = copy.deepcopy(doc)
    _set_at(moved, f.path, f.value * 2 + 1)
    assert check(c, moved) == [
        f"{sid}: {name} is {f.value!r}, the report has {f.value * 2 + 1!r} at {f.path}"]


def _set_at(doc: dict, path: str, value: object) -> None:
    parent, _, key = path.rpartition("/")
    holder = resolve(doc, parent)
    holder[int(key) if isinstance(holder, list) else
           key.replace("~1", "/").replace("~0", "~")] = value


@pytest.mark.parametrize(("trace", "sid", "k", "name", "wrong", "breaks"), WRONG_FIGURE,
                         ids=[f"{w[1]}-{w[0].split('.')[0]}" for w in WRONG_FIGURE])
def test_a_wrong_figure_of_a_render_line_is_caught(trace, sid, k, name, wrong, breaks,
                                                   fixture_reports, tmp_path):
    """Each render line's claim holds, and is caught twice over when one figure is wrong:
    a copy of the report holding another value where the claim cites it, and the claim
    saying a value that breaks what it asserts."""
    import copy

    r = (traceview.explain(traceview.load(_two_devices(tmp_path / "two.json")))
         if trace == "two devices" else fixture_reports[trace])
    doc = r.to_dict()
    c = [c for c in r.claims if c.id == sid][k]
    assert check(c, doc) == []
    f = c.figure(name)
    assert f.path is not None and isinstance(f.value, int)
    moved = copy.deepcopy(doc)
    _set_at(moved, f.path, f.value + 1)
    assert check(c, moved) == [
        f"{sid}: {name} is {f.value}, the report has {f.value + 1} at {f.path}"]
    bad = wrong(c)
    said = Claim(c.id, c.text, tuple(Figure(x.name, bad, x.path) if x.name == name else x
                                     for x in c.figures), c.relations)
    got = check(said, doc)
    assert got[0] == f"{sid}: {name} is {bad}, the report has {f.value} at {f.path}", got
    assert any(p.startswith(f"{sid}: {breaks} does not hold") for p in got), got


# --- ab's verdict and diff's unprofiled line --------------------------------------------

AB_DOCS = sorted(p for p in [*(ROOT / "tests" / "data").glob("ab_*.json"),
                             *(ROOT / "fixtures").glob("*ab*.json")]
                 if "comparisons" in p.read_text())


@pytest.mark.parametrize("path", AB_DOCS, ids=lambda p: p.name)
def test_every_claim_of_an_ab_document_holds(path):
    """A saved ab result's verdict is the claim its figures make, and the claim holds
    against the document; so does ``diff --ab``'s unprofiled line made from it."""
    import json

    from traceview.documents import upgrade
    from traceview.multi.ab_result import claims_of
    from traceview.multi.unprofiled import from_ab, line_claim

    doc = upgrade(json.loads(path.read_text()), "ab")
    claims = claims_of(doc)
    assert [c.text for c in claims if c.id == "ab-verdict"] == [doc["verdict"]]
    assert len([c for c in claims if c.id == "ab-split"]) == len(doc.get("splits") or {})
    assert check_all(claims, doc) == []
    block = from_ab(doc)
    line = line_claim(block, ("unprofiled",))
    assert line.text == block["line"]
    assert check(line, {"unprofiled": block}) == []


def test_an_ab_verdict_on_the_wrong_side_of_zero_is_caught():
    """"B faster" with an interval reaching above zero: the sentence made from the
    figures holds; the document's interval moved above zero afterwards is caught, and a
    claim carrying that interval breaks its relation."""
    import json

    from traceview.multi.ab_result import claims_of

    doc = json.loads((ROOT / "tests" / "data" / "ab_add_cpu.json").read_text())
    c = doc["comparisons"]["full_api_ns_p50"]
    c.update(ci_low_ns=-5_000.0, ci_high_ns=-1_000.0, estimate_ns=-3_000.0,
             relative=-3_000.0 / c["a_median_ns"])
    claim = claims_of(doc)[0]
    assert claim.text.startswith("B faster by 3 us") and check(claim, doc) == []
    c["ci_high_ns"] = 500.0  # the saved figure moved; the sentence did not
    assert check(claim, doc) == [
        "ab-verdict: high is -1000.0, the report has 500.0 at "
        "/comparisons/full_api_ns_p50/ci_high_ns"]
    moved = Claim(claim.id, claim.text, tuple(Figure("high", 500.0, f.path) if f.name == "high"
                                              else f for f in claim.figures), claim.relations)
    assert "ab-verdict: lt('high', 'zero') does not hold: 500.0 lt 0 is false" in check(moved, doc)


@pytest.mark.parametrize(("before", "after"), [
    ([100_000, 101_000, 99_000], [90_000, 91_000, 89_000]),  # too few to tell
    ([100_000 + 37 * i for i in range(8)], [100_020 + 41 * i for i in range(8)]),  # covers 0
    ([100_000 + 37 * i for i in range(8)], [80_000 + 41 * i for i in range(8)]),  # faster
    ([100_000 + 37 * i for i in range(8)], [120_000 + 41 * i for i in range(8)]),  # slower
])
def test_every_claim_of_a_capture_line_holds(before, after):
    """The capture-metadata line, in each of its four forms, is true of its figures."""
    from traceview.multi.twosample import shift
    from traceview.multi.unprofiled import capture_claim

    s = shift(before, after)
    f = {"before_ns": list(s.before), "after_ns": list(s.after), "estimate_ns": s.estimate_ns,
         "ci_low_ns": s.ci_low_ns, "ci_high_ns": s.ci_high_ns, "verdict": s.verdict}
    doc = {"unprofiled": {"figures": [f]}}
    c = capture_claim(f, ("unprofiled", "figures", 0))
    assert check(c, doc) == []
    word = {"cannot tell": "cannot tell", "after faster": "after faster",
            "after slower": "after slower"}[s.verdict]
    assert c.text.startswith("too few" if s.ci_low_ns is None else word)


# --- serve's result line ----------------------------------------------------------------

SERVE_DOCS = [ROOT / "tests" / "data" / "serve_tiny_cpu.json",
              *sorted((ROOT / "fixtures").glob("serve_*.json"))]


@pytest.mark.parametrize("path", SERVE_DOCS, ids=lambda p: p.name)
def test_every_claim_of_a_serve_document_holds(path):
    """The serving result line is true of the document it is printed from, and the
    markdown prints it."""
    import json

    from traceview.render.serve_common import result_claim
    from traceview.render.serve_markdown import esc, render_serve_markdown

    doc = json.loads(path.read_text())
    c = result_claim(doc)
    assert check(c, doc) == []

    assert esc(c.text) in render_serve_markdown(doc)


def test_a_serve_row_whose_word_contradicts_its_interval_is_caught():
    """A row saying "B faster" over an interval wholly above zero: caught."""
    import json

    from traceview.render.serve_common import result_claim

    doc = json.loads(SERVE_DOCS[1].read_text())
    rows = [(k, r) for k, r in doc["ab"]["figures"].items()
            if k in ("wall", "tpot_p50", "ttft_p50") and r["ci_low_ns"] is not None]
    assert rows, "the H200 serve fixture has six rounds: every row has an interval"
    key, row = rows[0]
    row.update(ci_low_ns=1_000.0, ci_high_ns=9_000.0, estimate_ns=5_000.0, verdict="B faster")
    got = check(result_claim(doc), doc)
    assert got == [f"serve-result: lt('{key}.ci_high_ns', 'zero') does not hold: "
                   "9000.0 lt 0 is false"]


# --- ranks' summary -----------------------------------------------------------------------

def _ranks(tmp_path, names: list[str], cut_last: bool = False):
    import gzip

    from traceview.multi.ranks import analyze_ranks

    for i, name in enumerate(names):
        raw = gzip.decompress((ROOT / "fixtures" / name).read_bytes())
        if cut_last and i == len(names) - 1:
            (tmp_path / f"rank{i}.json").write_bytes(raw[: len(raw) * 2 // 3])
        else:
            (tmp_path / f"rank{i}.json.gz").write_bytes(gzip.compress(raw, mtime=0))
    return analyze_ranks([tmp_path], jobs=1)


@pytest.mark.parametrize(("names", "cut", "ids"), [
    # the rank cut short has a third of the calls: it stands out
    (["torch_mul_1x4096_f32.json.gz"] * 4, True, {"ranks-summary", "ranks-straggler"}),
    (["torch_mul_1x4096_f32.json.gz"] * 2, False, {"ranks-summary", "ranks-no-straggler"}),
    (["torch_mul_1x4096_f32.json.gz"] * 4 + ["two_streams_8192x8192_f16.json.gz"], False,
     {"ranks-summary", "ranks-straggler"}),
], ids=["damaged", "too-few", "straggler"])
def test_every_claim_of_a_ranks_summary_holds(tmp_path, names, cut, ids):
    """The ranks summary's sentences hold against the ranks document, and the outputs
    print them."""
    from traceview.render.ranks_report import _summary_lines, ranks_claims

    report = _ranks(tmp_path, names, cut)
    claims = ranks_claims(report)
    assert {c.id for c in claims} == ids
    assert check_all(claims, report.to_dict()) == []
    assert [c.text for c in claims] == _summary_lines(report)[: len(claims)]
    for c in claims:
        if c.id == "ranks-straggler":
            # the one rank unlike the others (the last) is the one named
            assert c.value("rank") == len(names) - 1


def test_a_straggler_reason_against_the_rule_is_caught(tmp_path):
    """A reason held against a rule it does not meet (a share of the median far beyond
    its distance from the median): caught."""
    from traceview.render.ranks_report import ranks_claims

    report = _ranks(tmp_path, ["torch_mul_1x4096_f32.json.gz"] * 4
                    + ["two_streams_8192x8192_f16.json.gz"])
    c = next(c for c in ranks_claims(report) if c.id == "ranks-straggler")
    assert check(c, report.to_dict()) == []
    apart = c.value("r0.apart")
    assert isinstance(apart, float | int)
    # the share of the median the rule asks for, ten times the rank's distance
    far = Claim(c.id, c.text, tuple(Figure(f.name, 10 * apart, None) if f.name == "r0.least"
                                    else f for f in c.figures), c.relations)
    got = check(far, report.to_dict())
    assert any(p.startswith("ranks-straggler: ge('r0.apart', 'r0.least') does not hold")
               for p in got), got


def test_an_ab_verdict_at_until_s_per_look_level_says_that_level():
    """``ab --until`` judges each look at a smaller alpha (0.0056 for nine looks): its
    interval is a 99.4% one and needs 9 rounds, not 6. The verdict said "95% CI" and
    "(6 at least)" whatever the level; the claim now cites the achieved confidence
    against the level it states. Rounds recomputed here at that level from the saved
    per-round figures."""
    import json

    from traceview.multi.ab_result import claims_of
    from traceview.paired import compare

    base = json.loads((ROOT / "tests" / "data" / "ab_add_cpu.json").read_text())
    alpha = 0.05 / 9
    c = base["comparisons"]["full_api_ns_p50"]
    a = [1000 + 7 * i for i in range(10)]
    b = [x - 300 + (i % 3) for i, x in enumerate(a)]
    for n, want in ((6, "cannot tell: 6 rounds are too few for a 99.4% interval (9 at least"),
                    (10, "B faster by 299 ns per call, 29% of A (99.4% CI [")):
        pc = compare(a[:n], b[:n], alpha=alpha)
        doc = dict(base, rounds=n, protocol=dict(base["protocol"],
                                                  until={"per_look_alpha": alpha}))
        doc["comparisons"] = {"full_api_ns_p50": dict(
            c, rounds=n, a_ns=list(pc.a), b_ns=list(pc.b), diff_ns=list(pc.diffs),
            estimate_ns=pc.estimate_ns, ci_low_ns=pc.ci_low_ns, ci_high_ns=pc.ci_high_ns,
            confidence=pc.confidence, b_faster_rounds=pc.b_faster_rounds,
            b_slower_rounds=pc.b_slower_rounds, min_detectable_ns=pc.min_detectable_ns,
            a_median_ns=pc.a_median_ns, b_median_ns=pc.b_median_ns, relative=pc.relative,
            verdict=pc.verdict)}
        claim = claims_of(doc)[0]
        assert claim.text.startswith(want), claim.text
        assert check(claim, doc) == []
    # an interval whose achieved confidence is under the level the line says: caught
    doc["comparisons"]["full_api_ns_p50"]["confidence"] = 0.95
    got = check(claims_of(doc)[0], doc)
    assert len(got) == 1 and got[0].startswith(
        "ab-verdict: ge('confidence', 'level') does not hold: 0.95 ge 0.99"), got


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(50_000, 150_000), st.integers(-30_000, 30_000)),
                min_size=1, max_size=14),
       st.sampled_from([0.05, 0.05 / 9]))
def test_every_ab_verdict_of_generated_rounds_holds(rounds, alpha):
    """Any rounds, at 95% or --until's per-look level: the verdict made from the
    comparison is true of the comparison as the ab document writes it."""
    from traceview.documents import builtins
    from traceview.multi.ab_result import comparison_doc, document_verdict_claim
    from traceview.paired import compare

    a = [x for x, _ in rounds]
    b = [x + d for x, d in rounds]
    pc = compare(a, b, alpha=alpha)
    protocol = {"until": {"per_look_alpha": alpha}} if alpha != 0.05 else {}
    doc = {"rounds": len(rounds), "protocol": protocol,
           "comparisons": {"full_api_ns_p50": builtins(comparison_doc(pc))}}
    claim = document_verdict_claim(pc, len(rounds), {"A": {}, "B": {}}, protocol)
    assert check(claim, doc) == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(50_000, 150_000), min_size=1, max_size=10),
       st.lists(st.integers(50_000, 150_000), min_size=1, max_size=10))
def test_every_capture_line_of_generated_processes_holds(before, after):
    """Any processes on each side: the capture-metadata line is true of its figures."""
    from traceview.multi.twosample import shift
    from traceview.multi.unprofiled import capture_claim

    s = shift(before, after)
    f = {"before_ns": list(s.before), "after_ns": list(s.after), "estimate_ns": s.estimate_ns,
         "ci_low_ns": s.ci_low_ns, "ci_high_ns": s.ci_high_ns, "verdict": s.verdict}
    assert check(capture_claim(f, ("unprofiled", "figures", 0)),
                 {"unprofiled": {"figures": [f]}}) == []



# --- Proton reports ---------------------------------------------------------------------

PROTON = ("proton_mul_20_calls.chrome_trace", "proton_nested.chrome_trace")


@pytest.mark.parametrize("name", PROTON)
def test_every_claim_of_a_proton_report_holds(name):
    """A Proton trace's outlier reasons and notes are claims true of its document: each
    outlier's span above twice the median of the others' (counted here from the calls'
    spans), each note the claim of the figures it states."""
    from traceview.analyses.calls import OUTLIER_RATIO
    from traceview.io import proton
    from traceview.report.proton import trace_report
    from traceview.report.proton_words import outlier_claim, overlap_claim
    from traceview.stats import median

    r = trace_report(proton.read_trace(ROOT / "fixtures" / "proton" / f"{name}.gz"))
    doc = r.to_dict()
    spans = [c.span_ns for c in r.calls]
    said = []
    for j, c in enumerate(r.calls):
        if c.outlier_reason is None:
            continue
        med = int(median(spans[:j] + spans[j + 1:]))
        claim = outlier_claim(j, c.span_ns, med, OUTLIER_RATIO)
        assert claim.text == c.outlier_reason
        said.append(claim)
    notes = [n for n in r.notes if "overlap in time" in n]
    if notes:
        said.append(overlap_claim(int(notes[0].split()[0]), len(r.calls)))
        assert said[-1].text == notes[0]
    assert check_all(said, doc) == []
    if name == "proton_nested.chrome_trace":  # its first call is far slower (test_proton)
        assert [c.id for c in said] == ["proton-outlier"]


PROTON_ALL = (*PROTON, "proton_mul_20_calls.hatchet", "proton_nested.hatchet")


def _proton(name: str):
    from traceview.io import proton
    from traceview.report.proton import trace_report, tree_report

    path = ROOT / "fixtures" / "proton" / f"{name}.gz"
    return trace_report(proton.read_trace(path)) if proton.sniff(path) == "trace" \
        else tree_report(proton.read_tree(path))


@pytest.mark.parametrize("name", PROTON_ALL)
def test_every_line_of_a_proton_report_is_a_claim_that_holds(name):
    """The lines above a Proton report's tables (a trace's kernels, busy time and calls;
    a tree's kernel time, rates and devices) are claims true of its document, and the
    text and markdown print each one."""
    from traceview.render.proton import render
    from traceview.report.proton import ProtonTraceReport
    from traceview.report.proton_lines import trace_claims, tree_claims

    r = _proton(name)
    claims = trace_claims(r) if isinstance(r, ProtonTraceReport) else tree_claims(r)
    assert check_all(claims, r.to_dict()) == []
    ids = [c.id for c in claims]
    if isinstance(r, ProtonTraceReport):
        assert ids[:2] == ["proton-summary", "proton-calls"]
        # the calls' kinds add up to the calls, counted here from the rows
        assert claims[1].value("calls") == len(r.calls) == sum(r.call_kinds.values())
    else:
        assert ids == ["proton-tree-summary"] + ["proton-device"] * len(r.devices)
    for fmt in ("text", "md"):
        out = _flat(render(r, fmt, 400))
        assert [c.id for c in claims if _flat(c.text) not in out] == [], fmt


@pytest.mark.parametrize(("name", "sid", "figure", "breaks"), [
    ("proton_nested.chrome_trace", "proton-summary", "busy", "le('busy', 'kernel_sum')"),
    ("proton_mul_20_calls.chrome_trace", "proton-calls", "kind:0", "sum('kind:0', 'calls')"),
    ("proton_nested.hatchet", "proton-tree-summary", "bytes",
     "ratio('bytes', 'time', 'gb_per_s')"),
    ("proton_nested.hatchet", "proton-device", "memory_clock_khz",
     "ratio('peak', 'memory_clock_khz', 'per_khz')"),
])
def test_a_wrong_figure_of_a_proton_line_is_caught(name, sid, figure, breaks):
    """A Proton line whose figure is not the document's: caught where the document holds
    it, and in what the line asserts (each wrong value far from the right one)."""
    import copy

    from traceview.report.proton import ProtonTraceReport
    from traceview.report.proton_lines import trace_claims, tree_claims

    r = _proton(name)
    doc = r.to_dict()
    c = next(c for c in (trace_claims(r) if isinstance(r, ProtonTraceReport)
                         else tree_claims(r)) if c.id == sid)
    f = c.figure(figure)
    assert f.path is not None and isinstance(f.value, int)
    moved = copy.deepcopy(builtins_of(doc))
    _set_at(moved, f.path, 10 * f.value + 1)
    assert check(c, moved) == [
        f"{sid}: {figure} is {f.value}, the report has {10 * f.value + 1} at {f.path}"]
    said = Claim(c.id, c.text, tuple(Figure(x.name, 10 * f.value + 1, x.path)
                                     if x.name == figure else x for x in c.figures),
                 c.relations)
    got = check(said, doc)
    assert any(p.startswith(f"{sid}: {breaks} does not hold") for p in got), got


def builtins_of(doc):
    """A document with its tuples as lists, so a copy can be changed in place."""
    if isinstance(doc, dict):
        return {k: builtins_of(v) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [builtins_of(v) for v in doc]
    return doc


def test_the_kernels_outside_every_proton_call_are_some_of_the_kernels():
    """No fixture has kernels outside every scope: a report said to have two prints the
    line, which holds; one said to have more than every kernel is caught."""
    from dataclasses import replace

    from traceview.render.proton import render
    from traceview.report.proton_lines import unscoped_claim

    r = _proton("proton_nested.chrome_trace")
    assert r.unscoped_kernels == 0 and unscoped_claim(r) is None
    two = replace(r, unscoped_kernels=2)
    c = unscoped_claim(two)
    assert c is not None and check(c, two.to_dict()) == []
    assert c.text == "2 kernels ran outside any scope (not in a call)"
    assert c.text in render(two, "md", 80)
    over = replace(r, unscoped_kernels=r.kernel_count + 1)
    c = unscoped_claim(over)
    assert c is not None and check(c, over.to_dict()) == [
        f"proton-unscoped: le('unscoped', 'kernels') does not hold: {r.kernel_count + 1} "
        f"le {r.kernel_count} is false"]


def _ab_outputs(doc: dict) -> tuple[str, str]:
    """An ab document's text (400 columns) and markdown, whitespace folded."""
    from io import StringIO

    from rich.console import Console

    from traceview.render.ab_report import render_ab_console, render_ab_markdown

    buf = StringIO()
    render_ab_console(doc, Console(width=400, file=buf, color_system=None))
    return _flat(buf.getvalue()), _flat(render_ab_markdown(doc))


def _checked_cache(doc: dict, passed: bool = True) -> dict:
    """``doc`` with a ``--check-cache`` result on side A (no committed document has one:
    the option is a later one), and the kernel probe every such run records."""
    import copy

    out = copy.deepcopy(doc)
    out.setdefault("kernels_used", {"same": None, "differences": None})
    out["sides"]["A"]["cache_check"] = {"passed": passed, "calls": 48,
                                        "reproducer": "traceview check-cache ..."}
    return out


@pytest.mark.parametrize("path", AB_DOCS, ids=lambda p: p.name)
def test_every_line_of_an_ab_report_is_a_claim_it_prints(path):
    """The ab report's header, its cache-check lines and its interval's confidence are
    claims true of the document, printed as their texts say in text and markdown."""
    import json

    from traceview.documents import upgrade
    from traceview.multi.ab_result import claims_of

    doc = _checked_cache(upgrade(json.loads(path.read_text()), "ab"))
    claims = [c for c in claims_of(doc) if c.id in ("ab-protocol", "ab-cache-check",
                                                     "ab-confidence")]
    assert [c.id for c in claims] == ["ab-protocol", "ab-cache-check", "ab-confidence"]
    assert check_all(claims, doc) == []
    # the rounds the header says are the rounds the processes ran in, counted here
    assert claims[0].value("rounds") == len({r for r, _ in doc["run_order"]})
    text, md = _ab_outputs(doc)
    assert [c.id for c in claims if _flat(c.text) not in text] == []
    from traceview.render.markdown import esc
    assert [c.id for c in claims if _flat(esc(c.text)) not in md] == []


def test_a_wrong_figure_of_an_ab_line_is_caught():
    """An ab line whose figure is not the document's: a judged figure over more rounds
    than were run, a confidence over 1, a cache check that failed under a line saying
    every call was right."""
    import json

    from traceview.documents import upgrade
    from traceview.multi.ab_result import cache_check_claims, confidence_claim, protocol_claim

    doc = upgrade(json.loads((ROOT / "tests" / "data" / "ab_add_cpu.json").read_text()), "ab")
    c = protocol_claim(doc)
    more = Claim(c.id, c.text, tuple(Figure(f.name, doc["rounds"] + 1, f.path)
                                     if f.name == "judged_rounds" else f for f in c.figures),
                 c.relations)
    got = check(more, doc)
    assert got[-1] == (f"ab-protocol: le('judged_rounds', 'rounds') does not hold: "
                       f"{doc['rounds'] + 1} le {doc['rounds']} is false"), got
    c = confidence_claim(doc)
    over = Claim(c.id, c.text, tuple(Figure(f.name, 1.5, f.path) if f.name == "confidence"
                                     else f for f in c.figures), c.relations)
    assert check(over, doc)[-1] == \
        "ab-confidence: le('confidence', 'certain') does not hold: 1.5 le 1 is false"
    failed = _checked_cache(doc, passed=False)
    said = cache_check_claims(_checked_cache(doc))
    assert check_all(said, failed) == [
        "ab-cache-check: passed is True, the report has False at /sides/A/cache_check/passed"]
    assert check_all(cache_check_claims(failed), failed) == [
        "ab-cache-check: eq('passed', 'all_right') does not hold: False eq True is false"]


# --- the measured documents' lines: serve's decode step and attribution caption, capture's
# notes, a sweep's sentences, the ranks titles and ab's per-round note -------------------

def _serve_text(doc: dict) -> str:
    """A serve document's text (400 columns), whitespace folded."""
    from io import StringIO

    from rich.console import Console

    from traceview.render.serve_console import render_serve_console

    buf = StringIO()
    render_serve_console(doc, Console(width=400, file=buf, color_system=None))
    return _flat(buf.getvalue())


ATTRIBUTION_DOCS = [ROOT / "tests" / "data" / "serve_attribute_cpu.json",
                    *sorted((ROOT / "tests" / "data" / "serve_attribute_h100").glob("*.json"))]
SERVE_ALL = [*SERVE_DOCS, *ATTRIBUTION_DOCS]


@pytest.mark.parametrize("path", SERVE_ALL, ids=lambda p: p.name)
def test_every_decode_line_of_a_serve_document_is_a_claim_it_prints(path):
    """Each profiled side's decode-step line is true of its diagnosis block (the busy
    shares each a busy time over its window, the overhead's median at most the step's)
    and the terminal prints it; a side not profiled has none."""
    import json

    from traceview.render.serve_common import decode_claim

    doc = json.loads(path.read_text())
    text = _serve_text(doc)
    for i, v in enumerate(doc["variants"]):
        c = decode_claim(doc, i)
        profiled = bool(v.get("diagnosis")) and "decode" in v["diagnosis"]
        assert (c is not None) == profiled, (path.name, i)
        if c is None:
            continue
        assert check(c, doc) == []
        assert {r.kind for r in c.relations} >= {"ratio"}
        assert _flat(c.text) in text, (path.name, i)


@pytest.mark.parametrize("path", SERVE_ALL, ids=lambda p: p.name)
def test_every_correctness_line_of_a_serve_document_is_a_claim_it_prints(path):
    """Each side's correctness line is true of its check (the error over the largest
    logit is the ratio shown, within the tolerance it passed; the identical rows and the
    first divergence recounted here from each row's first divergence), and both outputs
    print it."""
    import json

    from traceview.render.serve_common import correctness_claim
    from traceview.render.serve_markdown import esc, render_serve_markdown

    doc = json.loads(path.read_text())
    text, md = _serve_text(doc), render_serve_markdown(doc)
    for i, v in enumerate(doc["variants"]):
        c = correctness_claim(doc, i)
        assert check(c, doc) == []
        assert _flat(c.text) in text and esc(c.text) in md, (path.name, i)
        checked = v["correctness"].get("recheck") or v["correctness"]["check"]
        if checked["status"] == "reference":
            assert c.figures == ()
            continue
        rows = checked["tokens"]["first_divergence"]
        diverged = [s for s in rows if s is not None]
        assert c.value("tokens.identical_rows") == len(rows) - len(diverged)
        assert c.value("tokens.earliest_divergence") == (min(diverged) if diverged else None)
        assert c.value("tokens.rows") == len(rows)


def test_a_wrong_figure_of_a_correctness_line_is_caught():
    """A logits ratio unlike the document's, a tolerance the ratio passed is said to be
    under, and a divergence the rows are said not to show: caught."""
    import copy
    import json

    from traceview.render.serve_common import correctness_claim

    doc = json.loads(SERVE_DOCS[1].read_text())
    c = correctness_claim(doc, 1)  # side B's recheck: passed, one row diverged at 14
    at = "/variants/1/correctness/recheck"
    assert check(c, doc) == []
    moved = copy.deepcopy(doc)
    moved["variants"][1]["correctness"]["recheck"]["logits"]["ratio"] = 0.5
    assert check(c, moved) == [f"serve-correctness: ratio is {c.value('ratio')!r}, the report "
                               f"has 0.5 at {at}/logits/ratio"]
    strict = Claim(c.id, c.text, tuple(Figure(f.name, 0.001, f.path) if f.name == "tolerance"
                                       else f for f in c.figures), c.relations)
    assert check(strict, doc)[-1] == (f"serve-correctness: le('ratio', 'tolerance') does not "
                                      f"hold: {c.value('ratio')!r} le 0.001 is false")
    moved = copy.deepcopy(doc)
    moved["variants"][1]["correctness"]["recheck"]["tokens"]["identical_rows"] = 8
    said = correctness_claim(moved, 1)
    assert check(said, moved) == ["serve-correctness: lt('tokens.identical_rows', "
                                  "'tokens.rows') does not hold: 8 lt 8 is false"]


BISECTED = sorted((ROOT / "fixtures").glob("serve_*.json"))


@pytest.mark.parametrize("path", BISECTED, ids=lambda p: p.name)
def test_every_bisect_line_of_a_serve_document_is_a_claim_it_prints(path):
    """A bisected side's title, caption and markdown line hold against its bisect block
    (the ops passed and the culprits recounted here from the rows tried, each culprit's
    row a crash or a wrong answer) and the outputs print them."""
    import json

    from traceview.render.serve_common import bisect_claims
    from traceview.render.serve_markdown import esc, render_serve_markdown

    doc = json.loads(path.read_text())
    text, md = _serve_text(doc), render_serve_markdown(doc)
    seen = 0
    for i, v in enumerate(doc["variants"]):
        b = v["correctness"].get("bisect")
        if not b:
            continue
        seen += 1
        title, caption, line = bisect_claims(doc, i)
        assert check_all([title, caption, line], doc) == []
        rows = b["tested"]
        assert title.value("ok") == sum(1 for r in rows if r["verdict"] == "ok")
        assert caption.value("culprits") == sum(1 for r in rows
                                                if r["verdict"] in ("crashed", "wrong"))
        assert title.value("tested") == len(rows) <= len(b["candidates"])
        assert _flat(title.text) in text and _flat(caption.text) in text
        assert f"  - {esc(line.text)}" in md
    assert seen, "the H200 serve fixtures bisect their B side"


def test_a_wrong_figure_of_a_bisect_line_is_caught():
    """A culprit whose row says it passed alone, and a bisect said to have run in no
    process: caught."""
    import copy
    import json

    from traceview.render.serve_common import bisect_claims

    doc = json.loads(BISECTED[0].read_text())
    title, caption, _ = bisect_claims(doc, 1)
    k = next(k for k, r in enumerate(doc["variants"][1]["correctness"]["bisect"]["tested"])
             if r["verdict"] == "wrong")
    at = f"/variants/1/correctness/bisect/tested/{k}/passed"
    moved = copy.deepcopy(doc)
    moved["variants"][1]["correctness"]["bisect"]["tested"][k]["passed"] = True
    assert check(caption, moved) == [
        f"serve-bisect-caption: culprit:0 is False, the report has True at {at}"]
    assert check_all(list(bisect_claims(moved, 1)), moved)[0] == (
        "serve-bisect-title: eq('culprit:0', 'no') does not hold: True eq False is false")
    moved = copy.deepcopy(doc)
    moved["variants"][1]["correctness"]["bisect"]["children"] = 0
    assert check(bisect_claims(moved, 1)[0], moved) == [
        "serve-bisect-title: ge('children', 'one') does not hold: 0 ge 1 is false"]


@pytest.mark.parametrize("path", SERVE_ALL, ids=lambda p: p.name)
def test_the_protocol_field_of_a_serve_document_is_a_claim_it_prints(path):
    """The markdown's protocol field holds against its document: each side's repetitions
    (recounted here from its repetitions) and the A/B's rounds (from a figure's per-round
    differences) at most the processes per side asked for; with --attribute each stage's
    processes (from the orders it ran) its kind's."""
    import json

    from traceview.render.serve_common import protocol_claim
    from traceview.render.serve_markdown import esc, render_serve_markdown

    doc = json.loads(path.read_text())
    c = protocol_claim(doc)
    assert check(c, doc) == []
    assert f"- Protocol: {esc(c.text)}\n" in render_serve_markdown(doc)
    att = doc.get("attribution")
    if att is not None:
        for i, s in enumerate(att["stages"]):
            assert c.value(f"stage:{i}") == len(s["orders"])
        return
    for i, v in enumerate(doc["variants"]):
        if v.get("summary"):
            assert c.value(f"repetitions:{i}") == len(v["repetitions"]) <= c.value("rounds")
    if doc.get("ab"):
        assert c.value("ab_rounds") == len(doc["ab"]["figures"]["wall"]["diffs"])


def test_a_wrong_figure_of_the_protocol_field_is_caught():
    """An A/B said to have run more rounds than the processes asked for: caught."""
    import copy
    import json

    from traceview.render.serve_common import protocol_claim

    doc = json.loads(SERVE_DOCS[0].read_text())
    moved = copy.deepcopy(doc)
    moved["ab"]["rounds"] = doc["protocol"]["rounds"] + 1
    assert check(protocol_claim(doc), moved) == [
        f"serve-protocol: ab_rounds is {doc['ab']['rounds']}, the report has "
        f"{doc['protocol']['rounds'] + 1} at /ab/rounds"]
    assert check(protocol_claim(moved), moved) == [
        f"serve-protocol: le('ab_rounds', 'rounds') does not hold: "
        f"{doc['protocol']['rounds'] + 1} le {doc['protocol']['rounds']} is false"]


@pytest.mark.parametrize("path", [p for p in SERVE_ALL if '"ab": {' in p.read_text()],
                         ids=lambda p: p.name)
def test_the_ab_titles_of_a_serve_document_are_claims_they_print(path):
    """The A/B table's titles hold against the document: its rounds (recounted here from
    each figure's per-round differences) at most the processes per side asked for; the
    terminal and the markdown print them."""
    import json

    from traceview.render.serve_common import ab_title_claims
    from traceview.render.serve_markdown import esc, render_serve_markdown

    doc = json.loads(path.read_text())
    title, heading = ab_title_claims(doc)
    assert check_all([title, heading], doc) == []
    assert {len(r["diffs"]) for r in doc["ab"]["figures"].values()} == {title.value("rounds")}
    assert _flat(title.text) in _serve_text(doc)
    assert f"\n{esc(heading.text)}\n" in render_serve_markdown(doc)
    moved = json.loads(path.read_text())
    moved["ab"]["figures"]["wall"]["b_faster_rounds"] = doc["ab"]["rounds"] + 1
    assert check(ab_title_claims(moved)[0], moved) == [
        f"serve-ab-title: le('wall.faster', 'rounds') does not hold: "
        f"{doc['ab']['rounds'] + 1} le {doc['ab']['rounds']} is false"]


def _served_trace(tmp_path: Path, steps: int, per_step: int) -> Path:
    """A profiled serving run as serve's profile child names it: a prefill range, then
    ``steps`` decode ranges of ``per_step`` launched kernels each (the first a little
    longer: cold), the host waiting between kernels."""
    b = TraceBuilder()
    b.annotation("serve_prefill", 0, 400 * US)
    b.launched_kernel("prefill_k", 10 * US, 5 * US, 20 * US, 300 * US)
    t = 500 * US
    for s in range(steps):
        dur = (300 if s == 0 else 200) * US
        b.annotation(f"decode_{s}", t, dur)
        for k in range(per_step):
            at = t + 10 * US + k * 40 * US
            b.launched_kernel(f"k{k}", at, 4 * US, at + 6 * US, 20 * US)
        t += dur + 20 * US
    return b.write(tmp_path / "serve_profile.json")


def test_a_decode_line_counts_the_steps_and_launches_of_its_trace(tmp_path):
    """serve's diagnosis of a built profile: the decode line's steps are the decode
    ranges and its launches per step the launches inside them over the steps, both
    counted here from the events as written; its busy share is the kernels' union over
    the decode window, also counted here."""
    import json

    from traceview.render.serve_common import decode_claim
    from traceview.serve.diagnosis import diagnose

    steps, per_step = 5, 4
    path = _served_trace(tmp_path, steps, per_step)
    events = json.loads(path.read_text())["traceEvents"]
    diag = diagnose(str(path), steps)
    assert "error" not in diag, diag
    doc = {"variants": [{"label": "B", "backend": "flag_gems", "diagnosis": diag}]}
    c = decode_claim(doc, 0)
    assert c is not None and check(c, doc) == []
    ranges = [e for e in events if e.get("cat") == "user_annotation"
              and re.fullmatch(r"decode_\d+", e["name"])]
    spans = [(round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)) for e in ranges]
    lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
    launches, work = _records(events)
    inside = [e for e in launches if any(a <= e["span"][0] and e["span"][1] <= b
                                         for a, b in spans)]
    assert c.value("steps") == len(ranges) == steps
    assert c.value("launches_per_step") == len(inside) // steps == per_step
    busy = _union_ns([(max(a, lo), min(b, hi)) for a, b in (e["span"] for e in work)
                      if b > lo and a < hi])
    assert (c.value("busy"), c.value("window")) == (busy, hi - lo)
    assert c.text.startswith(f"decode step, B flag_gems (profiled, {steps} steps): ")
    assert f"{per_step} launches per step" in c.text


def test_a_wrong_figure_of_a_decode_line_is_caught():
    """A decode line whose busy time is not its document's: caught at the path and in
    the share it is said to make; an overhead said above the step: caught."""
    import copy
    import json

    from traceview.render.serve_common import decode_claim

    doc = json.loads(SERVE_DOCS[1].read_text())
    c = decode_claim(doc, 0)
    assert c is not None and check(c, doc) == []
    busy = c.figure("busy")
    assert busy.path is not None and isinstance(busy.value, int)
    moved = copy.deepcopy(doc)
    _set_at(moved, busy.path, 2 * busy.value + 1)
    assert check(c, moved) == [
        f"serve-decode: busy is {busy.value}, the report has {2 * busy.value + 1} at {busy.path}"]
    said = Claim(c.id, c.text, tuple(Figure(f.name, 2 * busy.value + 1, f.path)
                                     if f.name == "busy" else f for f in c.figures), c.relations)
    assert any(p.startswith("serve-decode: ratio('busy', 'window', 'busy_share') does not hold")
               for p in check(said, doc))
    step = c.value("step_p50")
    assert isinstance(step, int)
    over = Claim(c.id, c.text, tuple(Figure(f.name, step + 1, f.path) if f.name == "overhead_p50"
                                     else f for f in c.figures), c.relations)
    got = check(over, doc)
    assert got[-1] == (f"serve-decode: le('overhead_p50', 'step_p50') does not hold: "
                       f"{step + 1} le {step} is false"), got


@pytest.mark.parametrize("path", ATTRIBUTION_DOCS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_attribution_caption_is_a_claim_it_prints(path):
    """The attribution caption holds against its document: each screening stage ran
    ``screen_rounds`` processes and the final ``rounds`` (each stage's processes counted
    here from the orders it ran), the candidate ops are the units (every part's ops among
    them), and per figure the parts and interaction add up to the whole. Text and
    markdown print it."""
    import json

    from traceview.render.markdown import esc
    from traceview.render.serve_common import attribution_caption_claim
    from traceview.render.serve_markdown import render_serve_markdown

    doc = json.loads(path.read_text())
    att = doc["attribution"]
    c = attribution_caption_claim(att)
    assert check(c, doc) == []
    units = set(att["units"])
    assert c.value("units") == len(units) and all(o in units for p in att["parts"]
                                                   for o in p["ops"])
    screens = [s for s in att["stages"] if s["kind"] == "screen"]
    assert c.value("screens") == len(screens) >= 1
    assert all(len(s["orders"]) == c.value("screen_rounds") for s in screens)
    assert [len(s["orders"]) for s in att["stages"] if s["kind"] == "final"] == [c.value("rounds")]
    assert _flat(c.text) in _serve_text(doc)
    assert esc(c.text) in render_serve_markdown(doc)


def test_a_wrong_figure_of_the_attribution_caption_is_caught():
    """A stage that ran other rounds than the caption says, and a part whose estimate
    moved so the parts no longer add up: caught."""
    import copy
    import json

    from traceview.render.serve_common import attribution_caption_claim

    doc = json.loads((ROOT / "tests" / "data" / "serve_attribute_cpu.json").read_text())
    c = attribution_caption_claim(doc["attribution"])
    moved = copy.deepcopy(doc)
    moved["attribution"]["stages"][0]["rounds"] = 4
    assert check(c, moved) == ["serve-attribution-caption: stage:0 is 3, the report has 4 at "
                               "/attribution/stages/0/rounds"]
    said = attribution_caption_claim(moved["attribution"])
    assert check(said, moved) == ["serve-attribution-caption: eq('stage:0', 'screen_rounds') "
                                  "does not hold: 4 eq 3 is false"]
    moved = copy.deepcopy(doc)
    moved["attribution"]["parts"][0]["figures"]["wall"]["estimate_ns"] += 7
    got = check(attribution_caption_claim(moved["attribution"]), moved)
    assert len(got) == 1 and got[0].startswith(
        "serve-attribution-caption: sum('wall.part0'"), got


CAPTURED = ("torch_mul_1x4096_f32.json.gz", "torch_mul_graph.json.gz")


def _capture_summary(name: str, fixture_reports):
    """capture's summary of a committed capture trace: its metadata, explain's report."""
    import gzip
    import json

    from traceview.opcapture.summary import CaptureSummary

    raw = json.loads(gzip.decompress((ROOT / "fixtures" / name).read_bytes()))
    path = ROOT / "fixtures" / name
    return CaptureSummary(raw["traceview"], path, path, fixture_reports[name], None)


def _capture_text(summary) -> str:
    from io import StringIO

    from rich.console import Console

    from traceview.render.measured.capture import draw_capture

    buf = StringIO()
    draw_capture(Console(width=400, file=buf, color_system=None), summary)
    return _flat(buf.getvalue())


@pytest.mark.parametrize("name", CAPTURED)
def test_capture_notes_are_claims_it_prints(name, fixture_reports):
    """capture's amortized note holds against its JSON (``capture --format json``) and
    its perturbation note against explain's report of the trace; the summary prints
    both. The note's calls are the baseline's samples, its p50 their median, and its
    figures the medians of the fresh processes', counted here from the metadata."""
    from traceview.report.measured_lines import amortized_claim, perturbation_claim
    from traceview.stats import median

    s = _capture_summary(name, fixture_reports)
    doc = s.to_dict()
    base = doc["traceview"]["baseline"]
    amort = amortized_claim(base)
    assert amort is not None and check(amort, doc) == []
    assert amort.value("n") == len(base["full_api_ns_samples"])
    # "the median of n calls": of the samples kept (the median process's, where several)
    assert amort.value("full") == median(base["full_api_ns_samples"])
    procs = base.get("per_process")
    if procs:  # several fresh processes: the medians of theirs
        assert amort.value("full") == median([p["full_api_ns_p50"] for p in procs])
        assert amort.value("submit") == median([p["amortized_submit_ns"] for p in procs])
    report = s.analysis.to_dict()
    pert = perturbation_claim(report)
    assert pert is not None and check(pert, report) == []
    graph = doc["traceview"]["protocol"]["mode"] == "graph"
    assert pert.figure("ref").path == pointer(
        "trace", "capture", "baseline", "replay_ns_p50" if graph else "full_api_ns_p50")
    text = _capture_text(s)
    assert _flat(amort.text) in text and _flat(pert.text) in text


def test_a_wrong_figure_of_a_capture_note_is_caught(fixture_reports):
    """A submit said below the p50 where the document holds it above (and the reverse
    note's relation), and an unprofiled figure the report does not hold: caught."""
    import copy

    from traceview.report.measured_lines import amortized_claim, perturbation_claim

    s = _capture_summary(CAPTURED[0], fixture_reports)
    doc = s.to_dict()
    c = amortized_claim(doc["traceview"]["baseline"])
    assert c is not None and [r.kind for r in c.relations] == ["le"]  # 6.69 us under 12.7 us
    full = c.value("full")
    assert isinstance(full, int)
    above = Claim(c.id, c.text, tuple(Figure(f.name, full + 1, f.path) if f.name == "submit"
                                      else f for f in c.figures), c.relations)
    got = check(above, doc)
    assert got[-1] == f"capture-amortized: le('submit', 'full') does not hold: " \
                      f"{full + 1} le {full} is false", got
    report = s.analysis.to_dict()
    p = perturbation_claim(report)
    assert p is not None
    moved = copy.deepcopy(builtins_of(report))
    ref = p.figure("ref")
    assert ref.path is not None and isinstance(ref.value, int)
    _set_at(moved, ref.path, ref.value * 2)
    assert check(p, moved) == [
        f"capture-perturbation: ref is {ref.value}, the report has {ref.value * 2} at {ref.path}"]


def _sweep_summary(tmp_path) -> dict:
    """``sweep.json`` of ``_sweep``."""
    return _sweep(tmp_path).summary()


def _sweep(tmp_path):
    """A sweep over five sizes, one failed: the kernel catches up with the host gap at
    the third, which also reaches half of the copy peak."""
    from traceview.opcapture import CaptureConfig
    from traceview.sweep.sweep import SweepResult, SweepRow, _crossover

    def row(n, kernel, full, share, peak):
        return SweepRow(n, kernel_ns=kernel, kernel_source="trace", full_api_ns=full,
                        amortized_submit_ns=5_000, host_gap_ns=full - kernel, bytes=8 * n,
                        gb_per_s=8 * n / kernel, share_of_copy_peak=share,
                        copy_peak_gb_per_s=peak)

    rows = (row(64, 1_000, 9_000, 0.01, 2_400.0), SweepRow(256, error="out of memory"),
            row(4096, 4_000, 12_000, 0.3, 2_500.0), row(65536, 9_000, 17_000, 0.6, 2_450.0),
            row(1 << 20, 40_000, 48_000, 0.9, 2_480.0))
    crossover, fixed = _crossover(list(rows))
    cfg = CaptureConfig(op="relu", impl="torch", device="cpu")
    return SweepResult(cfg, tmp_path / "sw", tuple(r.numel for r in rows), rows, crossover,
                       fixed, {"name": "cpu"}, {"torch": "x"}, {"mode": "eager"})


def test_a_sweeps_sentences_are_claims_it_prints(tmp_path):
    """The crossover and bandwidth sentences hold against ``sweep.json``: the crossover
    the first size whose kernel takes its host gap, the bound the first at half the copy
    peak, the peak and best rate the largest, each recounted here from the rows. The
    page and the terminal print both."""
    from io import StringIO

    from rich.console import Console

    from traceview.render.measured.sweep import markdown, render_sweep
    from traceview.report.measured_lines import bandwidth_claim, crossover_claim
    from traceview.stats import median

    summary = _sweep_summary(tmp_path)
    ok = [r for r in summary["rows"] if "error" not in r]
    first = next(r["numel"] for r in ok if r["kernel_ns"] >= r["full_api_ns"] - r["kernel_ns"])
    gaps = [r["full_api_ns"] - r["kernel_ns"] for r in ok if r["numel"] < first]
    cross, band = crossover_claim(summary), bandwidth_claim(summary)
    assert check_all([cross, band], summary) == []
    assert (cross.value("crossover"), cross.value("fixed")) == (first, median(gaps)) == (
        65536, 8_000)
    assert band.value("bound") == next(r["numel"] for r in ok if r["share_of_copy_peak"] >= .5)
    assert band.value("peak") == max(r["copy_peak_gb_per_s"] for r in ok)
    assert band.value("best") == max(r["gb_per_s"] for r in ok)
    page = markdown(summary)
    assert cross.text in page and band.text in page
    buf = StringIO()
    render_sweep(Console(width=400, file=buf, color_system=None), _sweep(tmp_path), [])
    text = _flat(buf.getvalue())
    assert cross.text in text and band.text in text


def test_a_wrong_figure_of_a_sweeps_sentences_is_caught(tmp_path):
    """A size before the crossover whose kernel takes its gap, and a bound whose share is
    under half of the peak: caught where ``sweep.json`` holds them and as a figure the
    claim says."""
    import copy

    from traceview.report.measured_lines import bandwidth_claim, crossover_claim

    summary = _sweep_summary(tmp_path)
    cross = crossover_claim(summary)
    moved = copy.deepcopy(summary)
    moved["rows"][2]["kernel_ns"] = 9_000  # the size before the crossover: kernel >= gap
    assert check(cross, moved) == [
        "sweep-crossover: kernel:2 is 4000, the report has 9000 at /rows/2/kernel_ns"]
    said = crossover_claim(dict(moved, crossover_numel=65536))
    assert "sweep-crossover: lt('kernel:2', 'gap:2') does not hold: 9000 lt 8000 is false" \
        in check(said, moved)
    band = bandwidth_claim(summary)
    low = Claim(band.id, band.text, tuple(Figure(f.name, 0.4, f.path) if f.name == "share:3"
                                          else f for f in band.figures), band.relations)
    got = check(low, summary)
    assert got == ["sweep-bandwidth: share:3 is 0.4, the report has 0.6 at "
                   "/rows/3/share_of_copy_peak",
                   "sweep-bandwidth: ge('share:3', 'half') does not hold: 0.4 ge 0.5 is false"]


def test_the_ranks_titles_are_claims_they_print(tmp_path):
    """The ranks table's title and the markdown's heading count the ranks of the
    document (the files written here), analysed and failed adding up to them; a copy
    with one rank fewer analysed is caught."""
    import copy

    from traceview.render.ranks_report import render_ranks_markdown, title_claims
    from traceview.render.registry import RenderOptions, renderer

    names = ["torch_mul_1x4096_f32.json.gz"] * 3
    report = _ranks(tmp_path, names, cut_last=True)
    doc = report.to_dict()
    claims = title_claims(report)
    assert [c.id for c in claims] == ["ranks-title", "ranks-heading"]
    assert check_all(claims, doc) == []
    assert [c.value("count") for c in claims] == [len(list(tmp_path.glob("rank*")))] * 2
    text = renderer("text", "ranks").render(report, RenderOptions(width=120))
    assert claims[0].text in text
    assert f"### {claims[1].text}\n" in render_ranks_markdown(report)
    moved = copy.deepcopy(builtins_of(doc))
    moved["combined"]["ok"] -= 1
    assert check(claims[0], moved)[0] == (
        f"ranks-title: ok is {len(names)}, the report has {len(names) - 1} at /combined/ok")
    fewer = Claim(claims[0].id, claims[0].text, tuple(
        Figure(f.name, len(names) - 1, f.path) if f.name == "ok" else f
        for f in claims[0].figures), claims[0].relations)
    assert check(fewer, doc)[-1] == (
        f"ranks-title: sum('ok', 'failed', 'count') does not hold: the parts add up to "
        f"{len(names) - 1}, not {len(names)}")


@pytest.mark.parametrize("path", AB_DOCS, ids=lambda p: p.name)
def test_abs_per_round_note_is_a_claim_it_prints(path):
    """Where the per-process table's last column is not B minus A (a round's paired
    estimate), the note under it is a claim naming a round whose figure differs from its
    B minus its A, recounted here; both outputs print it. Elsewhere no note."""
    import json

    from traceview.documents import upgrade
    from traceview.multi.ab_result import per_round_claim
    from traceview.render.markdown import esc

    doc = upgrade(json.loads(path.read_text()), "ab")
    c = per_round_claim(doc)
    comp = doc["comparisons"]["full_api_ns_p50"]
    differ = [k for k, (a, b, d) in enumerate(zip(comp["a_ns"], comp["b_ns"], comp["diff_ns"],
                                                  strict=True)) if d != b - a]
    assert (c is not None) == bool(differ), path.name
    if c is None:
        return
    assert check(c, doc) == []
    k = differ[0]
    assert c.figure("shown").path == f"/comparisons/full_api_ns_p50/diff_ns/{k}"
    text, md = _ab_outputs(doc)
    assert _flat(c.text) in text and _flat(esc(c.text)) in md


def test_a_wrong_figure_of_abs_per_round_note_is_caught():
    """A round said to differ from its B minus its A where the document's figure is that
    difference: caught at the path and in the relation."""
    import copy
    import json

    from traceview.multi.ab_result import per_round_claim

    doc = json.loads((ROOT / "tests" / "data" / "ab_add_cpu_same_process.json").read_text())
    c = per_round_claim(doc)
    assert c is not None
    a, b, shown = c.value("a"), c.value("b"), c.value("shown")
    assert isinstance(a, int) and isinstance(b, int)
    moved = copy.deepcopy(doc)
    moved["comparisons"]["full_api_ns_p50"]["diff_ns"][0] = b - a
    assert check(c, moved) == [f"ab-per-round: shown is {shown}, the report has {b - a} at "
                               "/comparisons/full_api_ns_p50/diff_ns/0"]
    plain = Claim(c.id, c.text, tuple(Figure(f.name, b - a, f.path) if f.name == "shown"
                                      else f for f in c.figures), c.relations)
    assert any(p.startswith("ab-per-round: ") and "does not hold" in p
               for p in check(plain, doc))
