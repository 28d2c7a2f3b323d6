"""The correctness checks' reports for people: the isolated check's failure report, the
warm-cache check's (its failure and its passing table) and the layout matrix.

The documents are the plain dicts the checks write as JSON (schemas in docs/capture.md):
a failure report (``traceview_check``, with ``cache_check`` inside it for the cache
check), the cache check's passing result (``traceview_cache_check``) and the layout
matrix (``traceview_check_layouts``). ``failure_headline`` is also the exception's
message.
"""

from __future__ import annotations

from typing import Any


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


def failure_headline(rep: dict[str, Any]) -> str:
    """The report's first line (also the exception's message)."""
    what = f"{rep['op']} ({rep['impl']}, {rep['dtype']}, {rep['device']})"
    verdict = rep["verdict"]
    if verdict == "wrong":
        c = rep.get("comparison") or {}
        if c.get("mismatch"):
            return f"correctness check failed: {what}: {c['mismatch']}; no timings written"
        tol = c.get("tolerance") or {}
        return (f"correctness check failed: {what} gives wrong values: {c.get('wrong'):,} of "
                f"{c.get('total'):,} elements ({_pct(c)}) outside rtol={tol.get('rtol'):g} "
                f"atol={tol.get('atol'):g} of the float64 reference; no timings written")
    crash = rep.get("crash") or {}
    if verdict == "timeout":
        return (f"correctness check failed: {what} did not return within "
                f"{crash.get('timeout_s'):g} s and was killed; no timings written")
    return f"correctness check failed: {what} crashed: {crash.get('error')}; no timings written"


def failure_lines(rep: dict[str, Any]) -> list[str]:
    """The isolated check's failure report for a terminal: a headline, then one labelled line per fact."""
    lines = [failure_headline(rep)]

    def add(label: str, text: str) -> None:
        lines.append(f"  {label:<10} {text}")

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
                add(key, element_text(c[key]))
            per_dim = " x ".join(f"{a}/{b}" for a, b in c.get("wrong_per_dim") or [])
            add("wrong", f"{c['wrong']:,} of {c['total']:,} elements; indices per dim holding "
                         f"a wrong element: {per_dim}")
            add("range", out_of_range_text(c))
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
    return lines


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


def out_of_range_text(c: dict[str, Any]) -> str:
    n = c.get("out_of_range") or 0
    rng = c.get("reference_range")
    span = f"[{fmt(rng[0])}, {fmt(rng[1])}]" if rng else "(no finite reference)"
    if n:
        return (f"{n:,} values lie far outside the reference's range {span} or are not "
                "finite: garbage, which suggests an out-of-bounds read (wrong strides, "
                "offset or broadcast)")
    return (f"all values lie near the reference's range {span}: wrong elements read, not "
            "garbage (an indexing or broadcast mistake within the operands)")


def cache_check_headline(rep: dict[str, Any]) -> str:
    cc = rep["cache_check"]
    who = f"{rep['op']} ({rep['impl']}, {rep['dtype']}, {rep['device']})"
    side = f"side {rep['side']}: " if rep.get("side") else ""
    where = f"call {cc['call']} of {cc['calls']} ({cc['name']})"
    if rep["verdict"] == "wrong":
        c = rep.get("comparison") or {}
        if c.get("mismatch"):
            what = c["mismatch"]
        else:
            tol = c.get("tolerance") or {}
            what = (f"{c.get('wrong'):,} of {c.get('total'):,} elements outside "
                    f"rtol={tol.get('rtol'):g} atol={tol.get('atol'):g} of the float64 "
                    "reference")
        before = (f"; the {cc['passed_before']} calls before it were right"
                  if cc.get("passed_before") else "")
        return f"{side}cache check failed: {who}: {where} is wrong: {what}{before}"
    crash = rep.get("crash") or {}
    if rep["verdict"] == "timeout":
        return (f"{side}cache check failed: {who}: {where} did not return within "
                f"{crash.get('timeout_s'):g} s and was killed")
    return f"{side}cache check failed: {who}: {where} crashed: {crash.get('error')}"


def cache_check_lines(rep: dict[str, Any]) -> list[str]:
    """The cache check's failure report for a terminal: a headline, then one labelled line per fact."""
    cc = rep["cache_check"]
    lines = [cache_check_headline(rep)]

    def add(label: str, text: str) -> None:
        lines.append(f"  {label:<10} {text}")

    add("call", f"{cc['call']} of {cc['calls']} in one warm process: {cc['name']}"
                + (f" ({cc['context']})" if cc["context"] != "eager" else ""))
    prev = cc.get("previous")
    add("changed", ("from call " + f"{prev['call']} ({prev['name']}): " if prev else "")
        + "; ".join(cc["changed"]))
    for i, op in enumerate(rep.get("operands") or []):
        add("operands" if i == 0 else "", f"{'ab'[i] if i < 2 else i}: {operand_text(op)}"
            + ("" if op.get("kind") == "scalar" or op.get("align16", True) else
               ", not 16-byte aligned"))
    c = rep.get("comparison")
    if c is not None:
        add("output", f"{_x(c.get('out_shape'))} {c.get('out_dtype')}; eager PyTorch: "
                      f"{_x(c.get('expected_shape'))} {c.get('expected_dtype')}")
        if c.get("worst"):
            add("worst", f"{element_text(c['worst'])}; max abs err "
                         f"{fmt(c.get('max_abs_err'))}")
            add("wrong", f"{c['wrong']:,} of {c['total']:,} elements")
            add("range", out_of_range_text(c))
    crash = rep.get("crash")
    if crash is not None:
        if crash.get("frame"):
            add(*crash_frame_line(rep))
    others = [n for n in cc.get("wrong_calls") or [] if n != cc["call"]]
    if others:
        names = {r["call"]: r["name"] for r in cc["rows"]}
        add("also", "wrong: " + ", ".join(f"call {n} ({names.get(n)})" for n in others[:8])
            + (f" and {len(others) - 8} more" if len(others) > 8 else ""))
    add("reproduce", rep["reproducer"])
    return lines


def draw_cache_check(console: Any, doc: dict[str, Any]) -> None:
    """The passing sequence as a table (what each call changed, its max error)."""
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=escape(f"--check-cache: {doc['op']} ({doc['impl']}, {doc['dtype']}, "
                           f"{doc['device']}): {doc['calls']} calls in one warm process"),
              title_justify="left")
    for col in ("call", "what", "result", "max abs err"):
        t.add_column(col, justify="right" if col in ("call", "max abs err") else "left")
    for r in doc["rows"]:
        t.add_row(str(r["call"]), escape(r["name"]), r["status"], fmt(r["max_abs_err"]))
    console.print(t)
    skipped = [r for r in doc["rows"] if r["status"] == "skipped"]
    for r in skipped:
        console.print(f"[yellow]call {r['call']} skipped:[/] {escape(r['skipped'])}")
    console.print(f"all {doc['calls'] - len(skipped)} calls that ran were right against the "
                  "float64 reference (dtype and shape included); each change was followed by "
                  "the base call again")


#: How each status reads in the table.
STATUS_TEXT = {"pass": "pass", "wrong": "WRONG", "raised": "RAISED", "crashed": "CRASH",
               "timeout": "HANG"}


def draw_layouts(console: Any, doc: dict[str, Any]) -> None:
    """The table: one row per layout, what each operand was, and the verdict with the
    worst error, the exception or the crash."""
    from rich.markup import escape
    from rich.table import Table

    rows = doc["rows"]
    passed = sum(r["status"] == "pass" for r in rows)
    title = (f"{doc['op']} | {doc['impl']} | {doc['dtype']} | {doc['device']} | output "
             f"{_x(tuple(doc['shape']))}: {passed} of {len(rows)} layouts pass "
             "(float64 reference, no timing)")
    table = Table(title=escape(title), title_justify="left", header_style="bold")
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
