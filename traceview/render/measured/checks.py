"""The correctness checks' reports for people: the isolated check's failure report, the
warm-cache check's (its failure and its passing table) and the layout matrix.

The documents are the plain dicts the checks write as JSON (schemas in docs/capture.md):
a failure report (``traceview_check``, with ``cache_check`` inside it for the cache
check), the cache check's passing result (``traceview_cache_check``) and the layout
matrix (``traceview_check_layouts``). ``failure_headline`` is also the exception's
message.

Every line with a figure is a claim over the report it is printed from
(``report.claims``: ``failure_claims``, ``cache_check_claims``,
``cache_check_pass_claims``, ``layouts_title_claim``), made with its text from the same
figures, so ``tests/test_claims_diff_checks.py`` reads each back against the report.
"""

from __future__ import annotations

from typing import Any

from traceview.report.claims import Claim, Figure, Relation, pointer, rel


def fmt(x: float | str | None) -> str:
    """A compared value for people: 4 significant digits; nan/inf as they are."""
    return "n/a" if x is None else x if isinstance(x, str) else f"{x:.4g}"


def short_frame(frame: str) -> str:
    """``.../flag_gems/ops/mul.py:40 in mul`` for ``/long/path/flag_gems/ops/mul.py:40 in
    mul``: the last three path components, enough to find the file."""
    path, sep, rest = frame.partition(":")
    parts = path.split("/")
    return ("/".join(["..."] + parts[-3:]) if len(parts) > 4 else path) + sep + rest


def _x(shape: Any) -> str:
    return "x".join(map(str, shape)) if shape else "()"


def _pct(c: dict[str, Any]) -> str:
    total = c.get("total") or 0
    return f"{100 * (c.get('wrong') or 0) / total:.3g}%" if total else "n/a"


def _wrong_figures(c: dict[str, Any], at: tuple[str, ...], *, share: bool = False,
                   tolerance: bool = False) -> tuple[list[Figure], list[Relation]]:
    """What "64 of 96 elements (66.7%) outside rtol=1e-05 atol=1e-06" asserts: the
    wrong elements some of the elements (at least one: the check failed), their share,
    the tolerances they are outside of."""
    figs = [Figure("wrong", c.get("wrong"), pointer(*at, "wrong")),
            Figure("total", c.get("total"), pointer(*at, "total")), Figure("zero", 0)]
    rels = [rel("le", "wrong", "total"), rel("gt", "wrong", "zero")]
    if share and c.get("total"):
        figs.append(Figure("share", (c.get("wrong") or 0) / c["total"]))
        rels.append(rel("ratio", "wrong", "total", "share"))
    if tolerance:
        figs += [Figure(k, (c.get("tolerance") or {}).get(k), pointer(*at, "tolerance", k))
                 for k in ("rtol", "atol")]
    return figs, rels


def _timeout_figures(rep: dict[str, Any]) -> list[Figure]:
    return [Figure("timeout_s", (rep.get("crash") or {}).get("timeout_s"),
                   pointer("crash", "timeout_s"))]


def failure_headline_claim(rep: dict[str, Any]) -> Claim:
    """The failure report's first line as a claim over the report: the wrong elements
    against the elements, their share and the tolerances, or the time limit a hang ran
    into (a crash's and a mismatch's lines cite no figure)."""
    what = f"{rep['op']} ({rep['impl']}, {rep['dtype']}, {rep['device']})"
    verdict = rep["verdict"]
    sid = "check-failure"
    if verdict == "wrong":
        c = rep.get("comparison") or {}
        if c.get("mismatch"):
            return Claim(sid, f"correctness check failed: {what}: {c['mismatch']}; no timings "
                              "written", ())
        tol = c.get("tolerance") or {}
        figs, rels = _wrong_figures(c, ("comparison",), share=True, tolerance=True)
        return Claim(sid, (
            f"correctness check failed: {what} gives wrong values: {c.get('wrong'):,} of "
            f"{c.get('total'):,} elements ({_pct(c)}) outside rtol={tol.get('rtol'):g} "
            f"atol={tol.get('atol'):g} of the float64 reference; no timings written"),
            tuple(figs), tuple(rels))
    crash = rep.get("crash") or {}
    if verdict == "timeout":
        return Claim(sid, (f"correctness check failed: {what} did not return within "
                           f"{crash.get('timeout_s'):g} s and was killed; no timings written"),
                     tuple(_timeout_figures(rep)))
    return Claim(sid, f"correctness check failed: {what} crashed: {crash.get('error')}; no "
                      "timings written", ())


def failure_headline(rep: dict[str, Any]) -> str:
    """The report's first line (also the exception's message)."""
    return failure_headline_claim(rep).text


class _Lines:
    """A report's lines for a terminal, a headline then one labelled line per fact, and
    the claims among them (each line with a figure is a claim's text)."""

    def __init__(self, headline: Claim) -> None:
        self.lines = [headline.text]
        self.claims = [headline]

    def add(self, label: str, text: str | Claim) -> None:
        if isinstance(text, Claim):
            self.claims.append(text)
            text = text.text
        self.lines.append(f"  {label:<10} {text}")


def failure_lines(rep: dict[str, Any]) -> list[str]:
    """The isolated check's failure report for a terminal: a headline, then one labelled line per fact."""
    return _failure(rep).lines


def failure_claims(rep: dict[str, Any]) -> list[Claim]:
    """The claims ``failure_lines`` prints, over the failure report."""
    return _failure(rep).claims


def _failure(rep: dict[str, Any]) -> _Lines:
    out = _Lines(failure_headline_claim(rep))
    add = out.add
    operands = rep.get("operands") or []
    mixed = len({op.get("device") for op in operands if op.get("kind") == "tensor"}) > 1
    for i, op in enumerate(operands):
        add("operands" if i == 0 else "",
            f"{'ab'[i] if i < 2 else i}: {operand_text(op, show_device=mixed)}")
    c = rep.get("comparison")
    if c is not None:
        add("output", f"{_x(c.get('out_shape'))} {c.get('out_dtype')}, strides "
                      f"{tuple(c.get('out_strides') or ())}; eager PyTorch: "
                      f"{_x(c.get('expected_shape'))} {c.get('expected_dtype')}")
        if c.get("worst"):
            for key in ("worst", "first"):
                add(key, element_claim(c, key))
            add("wrong", wrong_claim(c, per_dim=True))
            add("range", out_of_range_claim(c))
    crash = rep.get("crash")
    if crash is not None:
        if crash.get("frame"):
            add(*crash_frame_line(rep))
        if crash.get("first_error") and crash["first_error"] != crash.get("error"):
            add("first", f"without CUDA_LAUNCH_BLOCKING: {crash['first_error']}")
    if not rep.get("found_by", "").startswith("isolated"):
        add("found by", f"{rep['found_by']}, after the isolated check passed: the result "
                        "differs between processes or modes")
    add("reproduce", rep["reproducer"])
    return out


def _number(x: Any) -> int | float | None:
    """A compared value as a claim's figure: nan and inf are written as text, which no
    figure holds."""
    return x if isinstance(x, int | float) and not isinstance(x, bool) else None


def element_claim(c: dict[str, Any], key: str, *, at: tuple[str, ...] = ("comparison",),
                  max_err: bool = False) -> Claim:
    """One compared element (``correctness.compare``'s ``worst``/``first``) for people,
    as a claim over the report: its index, the value got and expected and the error
    between them, each where the report holds it (a non-finite one, written as text,
    is shown and not cited); ``max_err``: with the largest error beside it, at least
    the element's."""
    e = c[key]
    figs = [Figure(f"index:{k}", i, pointer(*at, key, "index", k))
            for k, i in enumerate(e["index"])]
    figs += [Figure(n, _number(e[n]), pointer(*at, key, n)) for n in ("got", "expected", "abs_err")
             if _number(e[n]) is not None]
    text = element_text(e)
    rels: list[Relation] = []
    if max_err:
        text += f"; max abs err {fmt(c.get('max_abs_err'))}"
        if _number(c.get("max_abs_err")) is not None:
            figs.append(Figure("max_abs_err", c["max_abs_err"], pointer(*at, "max_abs_err")))
            if _number(e["abs_err"]) is not None:
                rels.append(rel("le", "abs_err", "max_abs_err"))
    return Claim("check-element", text, tuple(figs), tuple(rels))


def wrong_claim(c: dict[str, Any], *, per_dim: bool = False,
                at: tuple[str, ...] = ("comparison",)) -> Claim:
    """``64 of 96 elements`` (``per_dim``: and the indices per dimension holding a wrong
    element, ``4/4 x 3/3 x 8/8``) as a claim over the report: some of the elements, and
    per dimension some of its indices, as many as the output has."""
    figs, rels = _wrong_figures(c, at)
    text = f"{c['wrong']:,} of {c['total']:,} elements"
    if per_dim:
        dims = c.get("wrong_per_dim") or []
        for k, _ in enumerate(dims):
            figs += [Figure(f"held:{k}", dims[k][0], pointer(*at, "wrong_per_dim", k, 0)),
                     Figure(f"size:{k}", dims[k][1], pointer(*at, "wrong_per_dim", k, 1)),
                     Figure(f"shape:{k}", (c.get("out_shape") or [None] * len(dims))[k],
                            pointer(*at, "out_shape", k))]
            rels += [rel("le", f"held:{k}", f"size:{k}"), rel("eq", f"size:{k}", f"shape:{k}")]
        text += ("; indices per dim holding a wrong element: "
                 + " x ".join(f"{a}/{b}" for a, b in dims))
    return Claim("check-wrong", text, tuple(figs), tuple(rels))


def element_text(e: dict[str, Any]) -> str:
    """One compared element (``correctness.compare``'s ``worst``/``first``) for people."""
    return (f"index {tuple(e['index'])}: got {fmt(e['got'])}, expected {fmt(e['expected'])} "
            f"(abs err {fmt(e['abs_err'])})")


def crash_frame_line(rep: dict[str, Any]) -> tuple[str, str]:
    """The report's (label, text) line for the frame a crash or hang happened in."""
    crash = rep["crash"]
    how = " (located with CUDA_LAUNCH_BLOCKING=1)" if crash.get("located") else ""
    where = "stuck at" if rep["verdict"] == "timeout" else "raised at"
    return where, f"{short_frame(crash['frame'])}{how}"


def operand_text(op: dict[str, Any], *, show_device: bool = False) -> str:
    if op.get("kind") == "scalar":
        return f"Python {op.get('type')} {op.get('value')}"
    if "strides" not in op:  # only the spec is known (the process died before building it)
        return f"{_x(op.get('shape'))} {op.get('layout', '')}".strip()
    layout = "contiguous" if op["contiguous"] else "non-contiguous"
    extra = f", storage offset {op['storage_offset']}" if op.get("storage_offset") else ""
    dev = f", on {op['device']}" if show_device else ""
    return (f"{_x(op['shape'])} {op['dtype']}, strides {tuple(op['strides'])}, "
            f"{layout}{extra}{dev}")


def out_of_range_claim(c: dict[str, Any], at: tuple[str, ...] = ("comparison",)) -> Claim:
    """Whether the wrong values lie near the reference's range or far outside it, as a
    claim over the report: the values outside (none, or some), the range's ends in
    order."""
    n = c.get("out_of_range") or 0
    rng = c.get("reference_range")
    figs = [Figure("out_of_range", n, pointer(*at, "out_of_range") if "out_of_range" in c
                   else None), Figure("zero", 0)]
    rels = [rel("gt" if n else "eq", "out_of_range", "zero")]
    if rng:
        figs += [Figure("low", _number(rng[0]), pointer(*at, "reference_range", 0)),
                 Figure("high", _number(rng[1]), pointer(*at, "reference_range", 1))]
        rels.append(rel("le", "low", "high"))
    span = f"[{fmt(rng[0])}, {fmt(rng[1])}]" if rng else "(no finite reference)"
    if n:
        text = (f"{n:,} values lie far outside the reference's range {span} or are not "
                "finite: garbage, which suggests an out-of-bounds read (wrong strides, "
                "offset or broadcast)")
    else:
        text = (f"all values lie near the reference's range {span}: wrong elements read, "
                "not garbage (an indexing or broadcast mistake within the operands)")
    return Claim("check-range", text, tuple(figs), tuple(rels))


def cache_check_headline(rep: dict[str, Any]) -> str:
    return cache_check_headline_claim(rep).text


def _call_figures(cc: dict[str, Any]) -> tuple[list[Figure], list[Relation]]:
    """"call 18 of 27": one of the calls in the sequence."""
    at = ("cache_check",)
    return ([Figure("call", cc["call"], pointer(*at, "call")),
             Figure("calls", cc["calls"], pointer(*at, "calls")),
             Figure("one", 1)],
            [rel("le", "call", "calls"), rel("ge", "call", "one")])


def cache_check_headline_claim(rep: dict[str, Any]) -> Claim:
    """The cache check's failure headline as a claim over its report: the call that
    failed, one of the sequence's calls; its wrong elements, some of the elements; the
    calls before it that were right, all of those before it; or the time limit it ran
    into."""
    cc = rep["cache_check"]
    who = f"{rep['op']} ({rep['impl']}, {rep['dtype']}, {rep['device']})"
    side = f"side {rep['side']}: " if rep.get("side") else ""
    where = f"call {cc['call']} of {cc['calls']} ({cc['name']})"
    figs, rels = _call_figures(cc)
    sid = "cache-check-failure"
    if rep["verdict"] == "wrong":
        c = rep.get("comparison") or {}
        if c.get("mismatch"):
            what = c["mismatch"]
        else:
            tol = c.get("tolerance") or {}
            more, more_rels = _wrong_figures(c, ("comparison",), tolerance=True)
            figs, rels = figs + more, rels + more_rels
            what = (f"{c.get('wrong'):,} of {c.get('total'):,} elements outside "
                    f"rtol={tol.get('rtol'):g} atol={tol.get('atol'):g} of the float64 "
                    "reference")
        before = ""
        if cc.get("passed_before"):
            # "the 17 calls before it were right": every call before the wrong one
            figs += [Figure("passed_before", cc["passed_before"],
                            pointer("cache_check", "passed_before"))]
            rels.append(rel("sum", "passed_before", "one", "call"))
            before = f"; the {cc['passed_before']} calls before it were right"
        return Claim(sid, f"{side}cache check failed: {who}: {where} is wrong: {what}{before}",
                     tuple(figs), tuple(rels))
    crash = rep.get("crash") or {}
    if rep["verdict"] == "timeout":
        return Claim(sid, (f"{side}cache check failed: {who}: {where} did not return within "
                           f"{crash.get('timeout_s'):g} s and was killed"),
                     tuple(figs + _timeout_figures(rep)), tuple(rels))
    return Claim(sid, f"{side}cache check failed: {who}: {where} crashed: {crash.get('error')}",
                 tuple(figs), tuple(rels))


def cache_check_lines(rep: dict[str, Any]) -> list[str]:
    """The cache check's failure report for a terminal: a headline, then one labelled line per fact."""
    return _cache_check(rep).lines


def cache_check_claims(rep: dict[str, Any]) -> list[Claim]:
    """The claims ``cache_check_lines`` prints, over the cache check's failure report."""
    return _cache_check(rep).claims


def _cache_check(rep: dict[str, Any]) -> _Lines:
    cc = rep["cache_check"]
    out = _Lines(cache_check_headline_claim(rep))
    add = out.add
    figs, rels = _call_figures(cc)
    add("call", Claim("cache-check-call", f"{cc['call']} of {cc['calls']} in one warm "
                      f"process: {cc['name']}" + (f" ({cc['context']})"
                                                  if cc["context"] != "eager" else ""),
                      tuple(figs), tuple(rels)))
    prev = cc.get("previous")
    changes = "; ".join(cc["changed"])
    if prev:
        add("changed", Claim("cache-check-changed", f"from call {prev['call']} ({prev['name']}): "
                             + changes,
                             (Figure("previous", prev["call"],
                                     pointer("cache_check", "previous", "call")), figs[0]),
                             (rel("lt", "previous", "call"),)))
    else:
        add("changed", changes)
    for i, op in enumerate(rep.get("operands") or []):
        add("operands" if i == 0 else "", f"{'ab'[i] if i < 2 else i}: {operand_text(op)}"
            + ("" if op.get("kind") == "scalar" or op.get("align16", True) else
               ", not 16-byte aligned"))
    c = rep.get("comparison")
    if c is not None:
        add("output", f"{_x(c.get('out_shape'))} {c.get('out_dtype')}; eager PyTorch: "
                      f"{_x(c.get('expected_shape'))} {c.get('expected_dtype')}")
        if c.get("worst"):
            add("worst", element_claim(c, "worst", max_err=True))
            add("wrong", wrong_claim(c))
            add("range", out_of_range_claim(c))
    crash = rep.get("crash")
    if crash is not None:
        if crash.get("frame"):
            add(*crash_frame_line(rep))
    also = also_wrong_claim(cc)
    if also is not None:
        add("also", also)
    add("reproduce", rep["reproducer"])
    return out


ALSO_SHOWN = 8  # the other wrong calls the "also" line names


def also_wrong_claim(cc: dict[str, Any]) -> Claim | None:
    """The other calls that were wrong (``wrong: call 20 (...), ... and 3 more``) as a
    claim over the cache check's report: each call named where the report lists it, and
    with the failed call itself and those not named, as many as it lists."""
    wrong = list(cc.get("wrong_calls") or [])
    others = [(j, n) for j, n in enumerate(wrong) if n != cc["call"]]
    if not others:
        return None
    names = {r["call"]: r["name"] for r in cc["rows"]}
    shown = others[:ALSO_SHOWN]
    figs = [Figure(f"call:{k}", n, pointer("cache_check", "wrong_calls", j))
            for k, (j, n) in enumerate(shown)]
    figs += [Figure("wrong_calls", len(wrong), pointer("cache_check", "wrong_calls")),
             Figure("itself", len(wrong) - len(others)), Figure("shown", len(shown)),
             Figure("rest", len(others) - len(shown))]
    rels = [rel("sum", "shown", "rest", "itself", "wrong_calls")]
    rest = len(others) - len(shown)
    return Claim("cache-check-also", "wrong: " + ", ".join(
        f"call {n} ({names.get(n)})" for _, n in shown)
        + (f" and {rest} more" if rest > 0 else ""), tuple(figs), tuple(rels))


def draw_cache_check(console: Any, doc: dict[str, Any]) -> None:
    """The passing sequence as a table (what each call changed, its max error)."""
    from rich.markup import escape
    from rich.table import Table

    title, *skipped, passed = cache_check_pass_claims(doc)
    t = Table(title=escape(title.text), title_justify="left")
    for col in ("call", "what", "result", "max abs err"):
        t.add_column(col, justify="right" if col in ("call", "max abs err") else "left")
    for r in doc["rows"]:
        t.add_row(str(r["call"]), escape(r["name"]), r["status"], fmt(r["max_abs_err"]))
    console.print(t)
    for c in skipped:
        head, _, why = c.text.partition(": ")
        console.print(f"[yellow]{escape(head)}:[/] {escape(why)}")
    console.print(passed.text)


def cache_check_pass_claims(doc: dict[str, Any]) -> list[Claim]:
    """The passing cache check's sentences as claims over its report: the table's title
    (its calls, a row each), a line per skipped call, and the closing line (the calls
    that ran, the calls less the skipped ones)."""
    rows = doc["rows"]
    calls = (Figure("calls", doc["calls"], pointer("calls")),
             Figure("rows", len(rows), pointer("rows")))
    out = [Claim("cache-check-title", f"--check-cache: {doc['op']} ({doc['impl']}, "
                 f"{doc['dtype']}, {doc['device']}): {doc['calls']} calls in one warm process",
                 calls, (rel("eq", "calls", "rows"),))]
    skipped = [(i, r) for i, r in enumerate(rows) if r["status"] == "skipped"]
    out += [Claim("cache-check-skipped", f"call {r['call']} skipped: {r['skipped']}",
                  (Figure("call", r["call"], pointer("rows", i, "call")),))
            for i, r in skipped]
    ran = doc["calls"] - len(skipped)
    out.append(Claim("cache-check-passed", (
        f"all {ran} calls that ran were right against the float64 reference (dtype and "
        "shape included); each change was followed by the base call again"),
        (*calls, Figure("ran", ran), Figure("skipped", len(skipped))),
        (rel("sum", "ran", "skipped", "calls"),)))
    return out


#: How each status reads in the table.
STATUS_TEXT = {"pass": "pass", "wrong": "WRONG", "raised": "RAISED", "crashed": "CRASH",
               "timeout": "HANG"}


def draw_layouts(console: Any, doc: dict[str, Any]) -> None:
    """The table: one row per layout, what each operand was, and the verdict with the
    worst error, the exception or the crash."""
    from rich.markup import escape
    from rich.table import Table

    rows = doc["rows"]
    table = Table(title=escape(layouts_title_claim(doc).text), title_justify="left",
                  header_style="bold")
    table.add_column("layout")
    table.add_column("operands", style="dim")
    table.add_column("result")
    table.add_column("detail")
    for r in rows:
        ops_text = "\n".join(short_operand(o) for o in r["operands"] or [])
        status = STATUS_TEXT.get(r["status"], r["status"])
        style = "green" if r["status"] == "pass" else "bold red"
        table.add_row(escape(r["name"]), escape(ops_text), f"[{style}]{status}[/]",
                      escape(_layout_detail(r)))
    console.print(table)


def layouts_title_claim(doc: dict[str, Any]) -> Claim:
    """The layout matrix's title as a claim over its report: the layouts that passed
    (counted from the rows), some of the layouts, a row each; the report's own counts
    where it holds them."""
    rows = doc["rows"]
    passed = sum(r["status"] == "pass" for r in rows)
    figs = [Figure("passed", passed), Figure("layouts", len(rows), pointer("rows"))]
    rels = [rel("le", "passed", "layouts")]
    for key, name in (("passed", "passed"), ("total", "layouts")):
        if isinstance(doc.get(key), int) and not isinstance(doc.get(key), bool):
            figs.append(Figure(f"report_{key}", doc[key], pointer(key)))
            rels.append(rel("eq", name, f"report_{key}"))
    return Claim("check-layouts-title", (
        f"{doc['op']} | {doc['impl']} | {doc['dtype']} | {doc['device']} | output "
        f"{_x(tuple(doc['shape']))}: {passed} of {len(rows)} layouts pass "
        "(float64 reference, no timing)"), tuple(figs), tuple(rels))


def short_operand(op: dict[str, Any]) -> str:
    """``4x8x16x32 (4096,512,1,16)``, ``+4096`` for a storage offset, ``cpu`` when on the
    CPU beside a device tensor; a scalar is its value."""
    if op.get("kind") == "scalar" or "scalar" in op:
        return f"scalar {op.get('value', op.get('scalar'))}"
    if "strides" not in op:
        return f"{_x(tuple(op.get('shape') or ()))} {op.get('layout', '')}".strip()
    text = f"{_x(tuple(op['shape']))} ({','.join(map(str, op['strides']))})"
    if op.get("storage_offset"):
        text += f" +{op['storage_offset']}"
    return text


def _layout_detail(r: dict[str, Any]) -> str:
    if r["status"] == "pass":
        c = r["comparison"] or {}
        return f"max abs err {fmt(c.get('max_abs_err'))}"
    if r["status"] == "wrong":
        c = r["comparison"] or {}
        if c.get("mismatch") or not c.get("worst"):
            return str(c.get("mismatch"))
        w = c["worst"]
        hint = "out-of-range values: likely an out-of-bounds read" if c.get("out_of_range") \
            else "values in range: wrong elements read"
        return (f"{c['wrong']:,} of {c['total']:,} wrong; worst at {tuple(w['index'])}: got "
                f"{fmt(w['got'])}, expected {fmt(w['expected'])}; {hint}")
    where = f" at {short_frame(r['frame'])}" if r["frame"] else ""
    how = " (CUDA_LAUNCH_BLOCKING=1)" if r["located"] else ""
    return f"{r['error']}{where}{how}"
