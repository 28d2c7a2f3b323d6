"""Every sentence ``diff``, ``explain --annotate`` and the correctness checks print is
true of the document it is printed from.

Their sentences are claims (``traceview.report.claims``) over their own documents: diff's
JSON (``diff --format json``), explain's report for the annotated trace, and the checks'
reports. These tests make every claim of a diff of each fixture against itself, of the
fixtures' cold and warm captures, of different fixtures, and of public corpus traces,
and read each back against the diff's JSON, and check that its text and markdown print
each claim as its text says it; then the same for every fixture's annotation in every
view of ``tests/test_claims.py`` and for every saved check report. Then a claim whose
figures its document contradicts is caught, for each kind of sentence, and the guard
sees a figure worded outside a claim in these renderers.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import public_corpus
import pytest
from test_claims import (
    DIFF_PAIRS,
    FIXTURES,
    ROOT,
    STRICT_FIGURE_SOURCE,
    _flat,
    _views,
    _worded_in,
)

import traceview
from traceview.codes import SENTENCES
from traceview.multi.compare import Comparison, Diff, diff_reports
from traceview.render.diff_top import TOP_WARNINGS
from traceview.render.markdown import esc, prose
from traceview.render.registry import RenderOptions, renderer
from traceview.report.claims import Claim, Figure, check, check_all

# --- diff --------------------------------------------------------------------------------

# The claims diff's JSON carries itself; the others are made from it when printed.
IN_THE_DOCUMENT = ("diff-verdict", "diff-machine-speed")
# Claims one output prints: the terminal's header and the markdown's line under its
# heading name the sides each in their own way; only the terminal leaves items of a long
# list out (the markdown prints them all).
DIFF_ONE_OUTPUT = {"diff-header": "text", "diff-heading": "markdown", "diff-more": "text"}


def _diff_outputs(d: Diff) -> tuple[dict[str, Any], str, str]:
    """The diff's JSON as ``--format json`` writes it, its text and its markdown."""
    doc = json.loads(renderer("json", "diff").render(d, RenderOptions()))
    text = renderer("text", "diff").render(d, RenderOptions(width=400))
    md = renderer("md", "diff").render(d, RenderOptions())
    assert isinstance(text, str) and isinstance(md, str)
    return doc, text, md


def _diff_problems(d: Diff) -> list[str]:
    """Every contradiction between a diff's printed claims and its JSON, every claim an
    output does not print as its text says, and every count of what the terminal leaves
    out that is not the document's own, recounted here from the JSON."""
    from traceview.multi.compare import KERNEL_ROWS, kernel_row_claims
    from traceview.render.diff_report import claims_printed
    from traceview.render.diff_top import TOP_FUNCTIONS, TOP_KERNELS
    from traceview.report.kernel_words import difference_claims

    doc, text, md = _diff_outputs(d)
    claims = claims_printed(d)
    out = check_all(claims, doc)
    out += [f"{c.id}: no such sentence id" for c in claims if c.id not in SENTENCES]
    if doc["claims"] != [c.as_json() for c in claims if c.id in IN_THE_DOCUMENT]:
        out.append("the document's claims are not the verdict's and the speed note's")
    flat_text, flat_md = _flat(text), _flat(md)
    # a word longer than the line (a mangled kernel name) is folded inside itself
    bare = "".join(text.split())
    for c in claims:
        where = DIFF_ONE_OUTPUT.get(c.id)
        if c.id == "diff-unlinked-work":
            # a warning among the others: the terminal prints it where it is among the
            # first it shows, the markdown always
            if c.text not in doc["warnings"]:
                out.append(f"{c.id}: not among the document's warnings: {c.text!r}")
            elif doc["warnings"].index(c.text) >= TOP_WARNINGS:
                where = "markdown"
        if where in (None, "text") and _flat(c.text) not in flat_text \
                and "".join(c.text.split()) not in bare:
            out.append(f"{c.id}: not printed in text: {c.text!r}")
        if where in (None, "markdown") and not any(
                _flat(s) in flat_md for s in (esc(c.text), prose(c.text), c.text)):
            out.append(f"{c.id}: not printed in markdown: {c.text!r}")
    # the counts of what the terminal leaves out, against the JSON's lists
    more = {c.text.split(" more ")[1]: c for c in claims if c.id == "diff-more"}
    cp = doc["code_path"] or {}
    changed = sum(1 for k in doc["kernels"] if k["status"] != "common")
    for what, total, top in (
            ("differences in what was measured (--format json)", len(doc["warnings"]),
             TOP_WARNINGS),
            ("functions (--format json)", len(cp.get("functions") or ()), TOP_FUNCTIONS),
            ("kernel changes (--format json)", changed, TOP_KERNELS)):
        m = more.pop(what) if what in more else None
        said = None if m is None else (m.value("total"), m.value("shown"), m.value("rest"))
        want = (total, top, total - top) if total > top else None
        if said != want:
            out.append(f"+N more {what}: the claim says {said}, the JSON lists {want}")
    out += [f"diff-more: {c.text!r} counts no list" for c in more.values()]
    shown = [ln for ln in text.splitlines() if ln.startswith("warning: ")]
    if len(shown) != min(len(doc["warnings"]), TOP_WARNINGS) + (len(doc["warnings"]) > TOP_WARNINGS):
        out.append(f"{len(shown)} warning lines for {len(doc['warnings'])} warnings")
    # the traces' kernel rows: each difference the document words is a claim that holds
    ku = doc["kernels_used"]
    if ku and ku["source"] == KERNEL_ROWS:
        rows = kernel_row_claims(d.kernels, d.calls_before, d.calls_after)
        if [c.text for c in rows] != ku["differences"]:
            out.append(f"the kernel rows' differences are not their claims' texts: "
                       f"{ku['differences']}")
        out += check_all(rows, doc)
    elif ku and ku.get("before") is not None and ku.get("differences") is not None:
        made = difference_claims(ku["before"], ku["after"], ("before", "after"),
                                 (("kernels_used", "before"), ("kernels_used", "after")))
        if made is None or [c.text for c in made] != ku["differences"]:
            out.append(f"the probe's differences are not their claims' texts: "
                       f"{ku['differences']}")
        out += check_all(made or [], doc)
    return out


def _fixture_diff(before: str, after: str, fixture_reports) -> Diff:
    return diff_reports(fixture_reports[before], fixture_reports[after],
                        f"fixtures/{before}", f"fixtures/{after}")


# Different programs: the diffs whose warnings, functions and kernel changes run past
# what the terminal shows, and whose kernel rows differ.
DIFFERENT = [(FIXTURES[i], FIXTURES[i + 7]) for i in range(0, len(FIXTURES) - 7, 5)]


@pytest.mark.parametrize(("before", "after"), [*DIFF_PAIRS, *DIFFERENT],
                         ids=lambda n: n.split(".")[0])
def test_every_printed_claim_of_a_diff_holds(before, after, fixture_reports):
    assert _diff_problems(_fixture_diff(before, after, fixture_reports)) == []


@pytest.mark.parametrize("name", FIXTURES)
def test_every_printed_claim_of_a_diff_of_a_trace_with_itself_holds(name, fixture_reports):
    from traceview.render.diff_report import kernels_used_claims

    d = _fixture_diff(name, name, fixture_reports)
    assert _diff_problems(d) == []
    # a trace against itself: the kernels are the same, and said so where there are some
    launched = [c for c in kernels_used_claims(d) if c.id == "diff-kernels-launched"]
    assert all("the same in both" in c.text for c in launched)


def test_the_diffs_cover_every_diff_sentence(fixture_reports):
    """The diffs above print every diff sentence id at least once (a kind of sentence
    no diff makes would go unchecked)."""
    from traceview.render.diff_report import claims_printed

    seen = {c.id for b, a in [*DIFF_PAIRS, *DIFFERENT]
            for c in claims_printed(_fixture_diff(b, a, fixture_reports))}
    assert {s for s in SENTENCES if s.startswith("diff-")} - seen == {
        "diff-unprofiled",  # diff --ab's line: tests/test_claims.py checks it on ab documents
        "diff-kernel-rows",  # folded into diff-kernels-launched (checked on its own above)
        "diff-machine-speed",  # no two fixtures' shared functions moved by one factor: next
        "diff-unlinked-work",  # no fixture has device work with no launch record: below
    }, seen


def test_every_printed_claim_of_a_diff_on_machines_of_two_speeds_holds():
    """A report against itself on a machine 1.5x slower, with ab's rounds saying the
    after side is faster: the verdict names the profiled disagreement and the machine
    speed, and the speed note is printed; each holds."""
    from test_diff_unprofiled import GEMS, _ab_doc, _slower

    from traceview.multi.compare import load_report
    from traceview.report.schema import from_dict

    gems = load_report(GEMS).to_dict()
    a = [100_000, 120_000, 90_000, 130_000, 110_000, 95_000, 105_000, 125_000]
    b = [x - 10_000 + (i % 3) * 500 for i, x in enumerate(a)]
    d = diff_reports(from_dict(gems), from_dict(_slower(gems, 1.5)), ab=_ab_doc(a, b))
    assert [c["id"] for c in d.as_dict()["claims"]] == ["diff-verdict", "diff-machine-speed"]
    assert _diff_problems(d) == []


DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")


def _unlinked_in(path: Path) -> int:
    """Device records in the trace at ``path`` whose correlation no launch carries (or
    that carry none), counted from its raw events."""
    events = json.loads(path.read_text())["traceEvents"]
    launched = {e["args"]["correlation"] for e in events
                if e.get("cat") in LAUNCH_CATEGORIES and "correlation" in e.get("args", {})}
    return sum(1 for e in events if e.get("cat") in DEVICE_CATEGORIES
               and e.get("args", {}).get("correlation") not in launched)


def _unlinked_pair(tmp_path: Path) -> tuple[Path, Path]:
    """Two traces of four 10 us calls each launching a 1 us kernel. Before: two calls run a
    kernel whose correlation was dropped. After: every call does, and a copy whose launch
    record is missing (its correlation names no launch) runs after the last call."""
    from tracebuilder import TraceBuilder

    paths = []
    for name, orphans, lost_copy in (("before.json", (0, 2), False),
                                     ("after.json", (0, 1, 2, 3), True)):
        tb = TraceBuilder()
        for i in range(4):
            s = i * 20_000
            tb.annotation(f"call_{i}", s, 10_000)
            tb.launched_kernel("k", s + 1_000, 500, s + 2_000, 1_000)
            if i in orphans:
                tb.kernel("orphan", s + 4_000, 3_000)
        if lost_copy:
            tb.kernel("Memcpy DtoH", 85_000, 2_000, corr=999, cat="gpu_memcpy")
        paths.append(tb.write(tmp_path / name))
    return paths[0], paths[1]


def test_the_warning_about_device_work_with_no_launch_record_is_a_claim_that_holds(tmp_path):
    """The warning's counts are the diff document's ``unlinked_device_work``, each side's
    device records that no launch names, counted here from the traces' events; the
    warning is the claim's text, printed by the text and the markdown, and holds."""
    from traceview.render.diff_report import claims_printed

    before, after = _unlinked_pair(tmp_path)
    nb, na = _unlinked_in(before), _unlinked_in(after)
    assert (nb, na) == (2, 5)
    d = diff_reports(traceview.analyze(before), traceview.analyze(after))
    doc, text, md = _diff_outputs(d)
    assert doc["unlinked_device_work"] == {"before": nb, "after": na}
    (c,) = [c for c in claims_printed(d) if c.id == "diff-unlinked-work"]
    assert (c.value("unlinked_before"), c.value("unlinked_after")) == (nb, na)
    assert c.text.startswith(f"device work with no launch record: {nb} item(s) before, "
                             f"{na} after;")
    assert c.text in doc["warnings"] and f"warning: {c.text}" in _flat(text)
    assert _diff_problems(d) == []
    # a trace against itself: as many on both sides; a trace with none: no warning
    same = diff_reports(traceview.analyze(after), traceview.analyze(after))
    assert same.as_dict()["unlinked_device_work"] == {"before": na, "after": na}
    assert _diff_problems(same) == []
    fixture = traceview.analyze(ROOT / "fixtures" / "torch_mul_1x4096_f32.json.gz")
    plain = diff_reports(fixture, fixture)
    assert plain.as_dict()["unlinked_device_work"] == {"before": 0, "after": 0}
    assert not [c for c in claims_printed(plain) if c.id == "diff-unlinked-work"]
    assert not any("no launch record" in w for w in plain.warnings)


def test_a_warning_that_miscounts_the_device_work_with_no_launch_record_is_caught(tmp_path):
    """The warning made from other counts than the document's, or saying the sides add up
    to another figure: caught at the figures' paths."""
    from traceview.multi.compare import UnlinkedWork, unlinked_claim

    before, after = _unlinked_pair(tmp_path)
    doc = diff_reports(traceview.analyze(before), traceview.analyze(after)).as_dict()
    said = unlinked_claim(UnlinkedWork(2, 4))
    assert said is not None and "2 item(s) before, 4 after" in said.text
    assert check(said, doc) == ["diff-unlinked-work: unlinked_after is 4, the report has 5 "
                                "at /unlinked_device_work/after"]
    right = unlinked_claim(UnlinkedWork(2, 5))
    assert right is not None and check(right, doc) == []
    assert check(_with(right, unlinked=8), doc) == [
        "diff-unlinked-work: sum('unlinked_before', 'unlinked_after', 'unlinked') does not "
        "hold: the parts add up to 7, not 8"]
    assert unlinked_claim(UnlinkedWork(0, 0)) is None and unlinked_claim(None) is None


# Small public traces: each against itself, each against the next (different programs,
# often of different profilers), and the corpus's own before/after pairs.
PUBLIC_LIMIT = 1 << 20
PUBLIC_PAIRS = [("pytorch__kineto/docs__traces__before_fix_trace.json.gz",
                 "pytorch__kineto/docs__traces__after_fix_trace.json.gz"),
                ("facebookresearch__HolisticTraceAnalysis/trace_compare__base__base.json.gz",
                 "facebookresearch__HolisticTraceAnalysis/trace_compare__test__test.json.gz")]


def _public_cases() -> list[tuple[str, str]]:
    small = [e.name for e in public_corpus.kineto_entries()
             if (p := public_corpus.locate(e.name)) is not None
             and p.stat().st_size <= PUBLIC_LIMIT]
    small.sort()
    return ([(n, n) for n in small] + list(zip(small[::2], small[1::2], strict=False))
            + PUBLIC_PAIRS)


@pytest.mark.parametrize(("before", "after"), _public_cases() or [("(none)", "(none)")])
def test_every_printed_claim_of_a_diff_of_public_traces_holds(before, after):
    from traceview.multi.compare import load_report

    paths = [public_corpus.locate(n) if n != "(none)" else None for n in (before, after)]
    if None in paths:
        pytest.skip(f"public traces {before}, {after} not in the corpus directory")
    a, b = (load_report(p) for p in paths)
    assert _diff_problems(diff_reports(a, b, before, after)) == []


# --- diff: a contradicting claim is caught -------------------------------------------

def _api(before: int = 10_000, after: int = 12_000) -> Comparison:
    return Comparison("calls.api_ns.p50", before, after, after - before, 1_000, 3_000, True,
                      8, 8)


def _with(c: Claim, **values: Any) -> Claim:
    """``c`` saying other figures (its text unchanged): a sentence whose figures are not
    the document's."""
    return Claim(c.id, c.text, tuple(Figure(f.name, values.get(f.name, f.value), f.path)
                                     for f in c.figures), c.relations)


def test_a_diff_header_that_miscounts_the_calls_is_caught():
    """A header made from 5 calls before (the text says "(5 calls)") over a document of 4:
    caught at the figure's path."""
    from traceview.render.diff_report import header_claims

    said = header_claims(Diff("a.json", "b.json", 5, 7, [_api()], []))
    doc = Diff("a.json", "b.json", 4, 7, [_api()], []).as_dict()
    assert "(5 calls)" in said[0].text and "(5 calls)" in said[1].text
    for c in said:
        assert check(c, doc) == [f"{c.id}: calls_before is 5, the report has 4 at /calls/before"]


def test_a_diff_header_of_one_call_says_one_call():
    """Two DLRM ranks of one profiler step each: the header said "(1 calls)"."""
    from traceview.render.diff_report import header_claims

    said = header_claims(Diff("a.json", "b.json", 1, 2, [_api()], []))
    assert said[0].text == "before a.json (1 call)\nafter  b.json (2 calls)"
    assert "(1 call) · after" in said[1].text and said[1].text.endswith("(2 calls)")


def test_a_diff_more_line_that_miscounts_its_list_is_caught():
    """"+2 more differences" made from 8 warnings over a document listing 7 (the count is
    checked against the list's length), and a line whose shown and rest do not add up to
    the list: caught."""
    from traceview.render.diff_top import warnings_claim

    eight = [f"key{i} differs: {i} vs {i + 1}" for i in range(8)]
    c = warnings_claim(eight)
    assert c is not None and c.text == "+2 more differences in what was measured (--format json)"
    assert check(c, Diff("a", "b", 1, 1, [_api()], [], eight).as_dict()) == []
    doc = Diff("a", "b", 1, 1, [_api()], [], eight[:7]).as_dict()
    assert check(c, doc) == ["diff-more: total is 8, the report has 7 at /warnings"]
    assert check(_with(c, rest=3), Diff("a", "b", 1, 1, [_api()], [], eight).as_dict()) == [
        "diff-more: sum('shown', 'rest', 'total') does not hold: the parts add up to 9, not 8"]


def test_a_kernel_row_said_at_another_count_per_call_is_caught():
    """"k: 2 per call before, 1 after" where the rows hold 4 launches over 2 calls and 3 over
    3: holds; the per-call figure said otherwise, or the document's launches moved, caught."""
    from traceview.multi.compare import kernel_row_claims

    kernels = [{"name": "k", "status": "common", "count_before": 4, "count_after": 3,
                "p50_before": 10, "p50_after": 10},
               {"name": "gone", "status": "removed", "count_before": 2, "count_after": 0,
                "p50_before": 5, "p50_after": None}]
    d = Diff("a", "b", 2, 3, [_api()], kernels)
    doc = d.as_dict()
    row, only = kernel_row_claims(kernels, 2, 3)
    assert (row.text, only.text) == ("k: 2 per call before, 1 after", "only before launched gone")
    assert check_all([row, only], doc) == []
    assert check(_with(row, per_call_before=1.5), doc) == [
        "diff-kernel-rows: ratio('count_before', 'calls_before', 'per_call_before') does not "
        "hold: 4 / 2 = 2.0, not 1.5"]
    moved = copy.deepcopy(doc)
    moved["kernels"][1]["count_after"] = 1
    assert check(only, moved) == ["diff-kernel-rows: count_after is 0, the report has 1 at "
                                  "/kernels/1/count_after"]


def test_kernels_said_the_same_where_a_count_per_call_differs_are_caught():
    """"the same in both" asserts one count per call on both sides: a document whose
    after side launched a kernel once more is caught."""
    from traceview.render.diff_report import kernels_used_claims

    kernels = [{"name": "k", "status": "common", "count_before": 4, "count_after": 6,
                "p50_before": 10, "p50_after": 10}]
    d = Diff("a", "b", 2, 3, [_api()], kernels, kernels_used={
        "source": "the traces' kernel rows (launches / calls; grids not compared)",
        "same": True, "differences": []})
    (c,) = kernels_used_claims(d)
    assert c.id == "diff-kernels-launched" and check(c, d.as_dict()) == []
    moved = d.as_dict()
    moved["kernels"][0]["count_after"] = 7
    assert check(c, moved) == [
        "diff-kernels-launched: count_after:0 is 6, the report has 7 at /kernels/0/count_after"]
    assert check(_with(c, **{"count_after:0": 7}), moved)[-1].startswith(
        "diff-kernels-launched: ratio('count_after:0', 'calls_after', 'per_call:0') does not "
        "hold")


def _probe(*kernels: tuple[str, int, list[int]]) -> dict[str, Any]:
    """capture's kernel probe block: (name, count per call, grid) per row."""
    return {"calls": 3, "same_every_call": True, "kernels": [
        {"name": n, "kind": "kernel", "grid": g, "block": [128, 1, 1], "count": c}
        for n, c, g in kernels]}


def test_kernels_the_probe_says_differ_are_claims_that_hold():
    """From capture's probe: a kernel launched once per call before and, in two grids,
    once each after (two per call), and one only before. Each side's line and the
    differences hold and are printed; a row's count moved is caught, and a per-call count
    said other than its rows' sum breaks the sum."""
    from traceview.metadata import CaptureMeta
    from traceview.multi.compare import kernels_used
    from traceview.render.diff_report import kernels_used_claims

    before = _probe(("add", 1, [16, 1, 1]), ("copy", 1, [4, 1, 1]))
    after = _probe(("add", 1, [16, 1, 1]), ("add", 1, [8, 1, 1]))

    class _Side:  # what ``kernels_used`` reads of a report: its capture's probe
        def __init__(self, block: dict[str, Any]) -> None:
            self.capture_meta = CaptureMeta(kernels_used=block)

    ku = kernels_used(_Side(before), _Side(after), [])
    assert ku is not None and ku["same"] is False
    assert ku["differences"] == ["add: 1 per call in before, 2 in after",
                                 "add: grid/block (16, 1, 1) (128, 1, 1) in before, "
                                 "(16, 1, 1) (128, 1, 1), (8, 1, 1) (128, 1, 1) in after",
                                 "only before launched copy"]
    d = Diff("a", "b", 3, 3, [_api()], [], kernels_used=ku)
    assert _diff_problems(d) == []
    line = kernels_used_claims(d)[-1]
    assert line.id == "diff-kernels-launched" and check(line, d.as_dict()) == []
    moved = d.as_dict()
    moved["kernels_used"]["after"]["kernels"][1]["count"] = 2
    assert check(line, moved) == ["diff-kernels-launched: d0.count1:1 is 1, the report has 2 "
                                  "at /kernels_used/after/kernels/1/count"]
    assert check(_with(line, **{"d0.per_call1": 3}), d.as_dict()) == [
        "diff-kernels-launched: sum('d0.count1:0', 'd0.count1:1', 'd0.per_call1') does not "
        "hold: the parts add up to 2, not 3"]


# --- annotate ----------------------------------------------------------------------------

def _annotation_problems(a, r, ann) -> list[str]:
    """Every sentence the annotated trace carries that is not a claim of ``r`` holding
    against its JSON: each finding's instant's message, each call's cold and outlier
    reason (the added events, as the file holds them)."""
    from traceview.render.annotate import iter_annotation_events

    doc = r.to_dict()
    out = []
    by = {(c.id, c.text): c for c in r.claims}
    events = [e for e in iter_annotation_events(ann, 1) if isinstance(e, dict)]
    for e in events:
        if e["ph"] == "i":
            c = by.get((e["name"], e["args"]["message"]))
            if c is None:
                out.append(f"{e['name']}: the instant's message is no claim's text")
            else:
                out += check(c, doc)
        if e["ph"] == "X" and "cold_reason" in e["args"]:
            for sid, key in (("cold-reason", "cold_reason"), ("outlier-reason", "outlier_reason")):
                words = e["args"][key]
                if words is None:
                    continue
                c = by.get((sid, words))
                if c is None or c.value("call") != e["args"]["index"]:
                    out.append(f"call {e['args']['index']}: its {key} is no claim of it")
                else:
                    out += check(c, doc)
    found = sum(1 for e in events if e["ph"] == "i")
    if found != len(r.findings):
        out.append(f"{found} finding instants for {len(r.findings)} findings")
    return out


def _annotated(trace, opts):
    from traceview.render.annotate import build_annotation
    from traceview.report.build import build_report
    from traceview.report.explanation import analyze_trace

    a = analyze_trace(trace, opts)
    r = build_report(a)
    return a, r, build_annotation(a, r)


@pytest.mark.parametrize("name", FIXTURES)
def test_every_sentence_of_an_annotation_is_a_claim_that_holds(name):
    """In every view: the annotated trace's findings and reasons are the report's claims,
    and they hold against the report."""
    from traceview.errors import UsageError

    trace = traceview.load(ROOT / "fixtures" / name)
    base = traceview.explain(trace)
    got = {}
    for view, opts in _views(trace, base).items():
        try:
            a, r, ann = _annotated(trace, opts)
        except UsageError:
            assert view == "thread"
            continue
        got[view] = _annotation_problems(a, r, ann)
    assert got == {v: [] for v in got}


def test_an_annotation_sentence_that_is_no_claim_is_caught():
    """A finding's instant whose message says another figure than its claim, and a call's
    reason that is another call's: caught."""
    from traceview.render.annotate import Annotation

    trace = traceview.load(ROOT / "fixtures" / "torch_mul_1x4096_f32.cold.json.gz")
    a, r, ann = _annotated(trace, None)
    assert r.findings and _annotation_problems(a, r, ann) == []
    fid, ts, args = ann.instants[0]
    wrong = Annotation(ann.slices, ann.flows, [(fid, ts, {**args, "message": re.sub(
        r"\d", "9", args["message"], count=1)}), *ann.instants[1:]])
    assert _annotation_problems(a, r, wrong) == [
        f"{fid}: the instant's message is no claim's text"]


# --- the correctness checks ----------------------------------------------------------

CHECK_DOCS = sorted((ROOT / "tests" / "data" / "check_reports").glob("*.json"))


def _subject(doc: dict[str, Any]) -> str:
    if "verdict" in doc:
        return "failure"
    return "cache_check" if "calls" in doc else "layouts"


def check_claims(doc: dict[str, Any]) -> list[Claim]:
    """Every claim the check report's text prints."""
    from traceview.render.measured import checks

    subject = _subject(doc)
    if subject == "failure":
        return checks.cache_check_claims(doc) if "cache_check" in doc else \
            checks.failure_claims(doc)
    if subject == "cache_check":
        return checks.cache_check_pass_claims(doc)
    return [checks.layouts_title_claim(doc)]


def _variants() -> dict[str, dict[str, Any]]:
    """The saved reports, and the same reports in the forms the saved ones do not take:
    a hang, a hung cache check, a cache check with wrong values and other wrong calls
    past the "also" line's eight, a passing cache check with a call skipped."""
    docs = {p.stem: json.loads(p.read_text()) for p in CHECK_DOCS}
    hang = copy.deepcopy(docs["check_crashed_cpu"])
    hang["verdict"] = "timeout"
    hang["crash"].update(timeout_s=120.0, frame=hang["crash"]["frame"])
    docs["timeout"] = hang
    cache_hang = copy.deepcopy(docs["check_cache_wrong_promotion_cpu"])
    cache_hang.pop("comparison")
    cache_hang.update(verdict="timeout", crash=dict(hang["crash"]))
    docs["cache_timeout"] = cache_hang
    values = copy.deepcopy(docs["check_cache_wrong_promotion_cpu"])
    values["comparison"] = copy.deepcopy(docs["check_wrong_broadcast_cpu"]["comparison"])
    values["cache_check"]["wrong_calls"] = [18, *range(19, 28)]
    docs["cache_wrong_values"] = values
    skipped = copy.deepcopy(docs["cache_check_add_cpu"])
    skipped["rows"][3].update(status="skipped", skipped="float16 is not supported here")
    docs["cache_skipped"] = skipped
    return docs


VARIANTS = _variants()


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_claim_of_a_check_report_holds(name):
    """Each claim holds against the report as the JSON output writes it, and the text
    prints it; the counts it says are the report's rows recounted here."""
    doc = VARIANTS[name]
    subject = _subject(doc)
    claims = check_claims(doc)
    assert claims and [c.id for c in claims if c.id not in SENTENCES] == []
    written = json.loads(renderer("json", subject).render(doc, RenderOptions()))
    assert check_all(claims, written) == []
    text = _flat(str(renderer("text", subject).render(doc, RenderOptions(width=400))))
    assert [c.text for c in claims if _flat(c.text) not in text] == []
    by = {c.id: c for c in claims}
    if subject == "layouts":
        passed = sum(1 for r in doc["rows"] if r["status"] == "pass")
        assert (by["check-layouts-title"].value("passed"),
                by["check-layouts-title"].value("layouts")) == (passed, len(doc["rows"]))
    if subject == "cache_check":
        ran = sum(1 for r in doc["rows"] if r["status"] != "skipped")
        assert by["cache-check-passed"].value("ran") == ran
        assert [c.value("call") for c in claims if c.id == "cache-check-skipped"] == [
            r["call"] for r in doc["rows"] if r["status"] == "skipped"]
    if "cache-check-also" in by:
        cc = doc["cache_check"]
        named = [int(n) for n in re.findall(r"call (\d+) \(", by["cache-check-also"].text)]
        rest = re.search(r"and (\d+) more", by["cache-check-also"].text)
        assert cc["call"] not in named
        assert len(named) + (int(rest.group(1)) if rest else 0) == len(
            [n for n in cc["wrong_calls"] if n != cc["call"]])


def test_the_check_reports_cover_every_check_sentence():
    seen = {c.id for doc in VARIANTS.values() for c in check_claims(doc)}
    assert {s for s in SENTENCES if s.startswith(("check-", "cache-check-"))} - seen == set()


def test_a_check_sentence_its_report_contradicts_is_caught():
    """A headline made from 65 wrong elements (its text says "65 of 96") over a report of
    64; a layout title counting a crashed layout as passed against the report's own count;
    a skipped call the closing line does not leave out: caught."""
    from traceview.render.measured import checks

    doc = VARIANTS["check_wrong_broadcast_cpu"]
    said = copy.deepcopy(doc)
    said["comparison"]["wrong"] = 65
    c = checks.failure_headline_claim(said)
    assert "65 of 96 elements" in c.text
    assert check(c, doc) == ["check-failure: wrong is 65, the report has 64 at /comparison/wrong"]
    layouts = VARIANTS["check_layouts_segfault_cpu"]
    bent = copy.deepcopy(layouts)
    bent["rows"][1]["status"] = "pass"
    t = checks.layouts_title_claim(bent)
    assert t.text.endswith("14 of 17 layouts pass (float64 reference, no timing)")
    assert check(t, layouts) == [
        "check-layouts-title: eq('passed', 'report_passed') does not hold: 14 eq 13 is false"]
    passed = checks.cache_check_pass_claims(VARIANTS["cache_skipped"])[-1]
    assert check(_with(passed, ran=27), VARIANTS["cache_skipped"]) == [
        "cache-check-passed: sum('ran', 'skipped', 'calls') does not hold: the parts add up "
        "to 28, not 27"]
    also = checks.also_wrong_claim(VARIANTS["cache_wrong_values"]["cache_check"])
    assert also is not None and also.text.endswith("and 1 more")
    fewer = copy.deepcopy(VARIANTS["cache_wrong_values"])
    fewer["cache_check"]["wrong_calls"].pop()
    assert check(also, fewer)[0] == ("cache-check-also: wrong_calls is 10, the report has 9 "
                                     "at /cache_check/wrong_calls")


# --- the guard ---------------------------------------------------------------------------

RENDERERS = ("diff_report.py", "diff_top.py", "annotate.py", "measured/checks.py")
#: (module, function) -> the claim it makes, or why its f-string with a figure is no
#: sentence (an entry that no longer occurs fails the test: it is removed with it)
WORDED_ELSEWHERE = {
    ("diff_report.py", "kernels_used_claims"): "makes the diff-kernels-launched claim",
    ("diff_top.py", "more_claim"): "makes the diff-more claims",
    ("diff_report.py", "_change"): "table cells (the change and its share of before)",
    ("diff_report.py", "_ci"): "table cells",
    ("diff_report.py", "_share"): "a number format (table cells)",
    ("diff_report.py", "unprofiled_rows"): "table cells",
    ("diff_report.py", "code_rows"): "table cells",
    ("diff_report.py", "family_rows"): "table cells",
    ("diff_top.py", "top_kernels"): "table cells (launches before -> after)",
    ("annotate.py", "build_annotation"): "a call's slice name where it has none ('call 3')",
    ("annotate.py", "iter_annotation_events"): "a second track's number in its name",
    ("annotate.py", "_us_text"): "the trace's own microsecond numbers as JSON text",
    ("checks.py", "failure_headline_claim"): "makes the check-failure claim",
    ("checks.py", "cache_check_headline_claim"): "makes the cache-check-failure claim",
    ("checks.py", "_cache_check"): "makes the cache-check-call and -changed claims",
    ("checks.py", "element_claim"): "makes the check-element claim",
    ("checks.py", "element_text"): "the words of the check-element claim",
    ("checks.py", "wrong_claim"): "makes the check-wrong claim",
    ("checks.py", "out_of_range_claim"): "makes the check-range claim",
    ("checks.py", "also_wrong_claim"): "makes the cache-check-also claim",
    ("checks.py", "cache_check_pass_claims"): "makes the cache-check-title, -skipped and "
                                              "-passed claims",
    ("checks.py", "layouts_title_claim"): "makes the check-layouts-title claim",
    ("checks.py", "fmt"): "a number format (the claims' texts and table cells)",
    ("checks.py", "_pct"): "a number format (the check-failure claim's share)",
    ("checks.py", "add"): "a line's label padded to its column",
    ("checks.py", "_layout_detail"): "the layout table's detail cells",
}


def test_diff_annotate_and_check_renderers_word_figures_only_in_claims_and_cells():
    """Every sentence with a figure that diff, --annotate and the checks print is a
    claim's text: an f-string of theirs that formats a figure anywhere else than listed
    makes a sentence no claim checks."""
    found = set()
    for name in RENDERERS:
        found |= _worded_in(ROOT / "traceview" / "render" / name, STRICT_FIGURE_SOURCE)
    assert found == set(WORDED_ELSEWHERE)


def test_the_guard_sees_a_hand_formatted_diff_or_check_sentence(tmp_path: Path):
    """The sentences these modules printed by hand before they were claims: each is seen."""
    p = tmp_path / "lines.py"
    p.write_text("def header(d):\n"
                 "    return f'before {d.before_path} ({d.calls_before} calls)'\n"
                 "def more(rows):\n"
                 "    return f'+{len(rows) - 15} more functions'\n"
                 "def title(doc, passed, rows):\n"
                 "    return f'{passed} of {rows} layouts pass'\n"
                 "def also(others):\n"
                 "    return f' and {others - 8} more'\n"
                 "def hang(crash):\n"
                 "    return f'did not return within {crash[\"timeout_s\"]:g} s'\n"
                 "def name(track):\n"
                 "    return f'traceview: {track}'\n")
    assert _worded_in(p, STRICT_FIGURE_SOURCE) == {
        ("lines.py", f) for f in ("header", "more", "title", "also", "hang")}
