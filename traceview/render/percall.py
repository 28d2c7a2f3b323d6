"""Per-warm-call sections, for every output: what the calls are, their kinds, cold and
outlier calls with their reasons, module families, the typical call's tree, the
profiler's footprint per call.

Kept apart from the renderers' main bodies so each output adds them with one call:
``console_sections`` (rich), ``markdown_sections``. Everything is read from the
``Report`` (``calls.kinds``, ``calls.tree``, ``calls.perturbation``, ``host.families``,
each call's ``cold_reason``/``outlier_reason``); the JSON is the schema's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from traceview.render.labels import unit
from traceview.units import fmt_ns

if TYPE_CHECKING:
    from traceview.report.model import Report, TreeRow
    from traceview.stats import Stats

TREE_DEPTH_TEXT = 12  # levels shown in the terminal and markdown trees
TREE_MIN_SHARE_TEXT = 0.02  # nodes below this share of the call are folded there
FAMILY_ROWS = 15
KIND_ROWS = 8


# ---------------------------------------------------------------- text helpers


def _said(r: Report, sid: str) -> str:
    """The text of the report's claim ``sid`` ("" for none), made now for a report read
    back from a JSON written before it was a claim."""
    from traceview.report.sentences import perturbation_claims, unprofiled_steps_claims

    found = [c for c in r.claims if c.id == sid]
    if not found:
        api = r.calls.stats.get("api_ns")
        made = [*perturbation_claims(r.calls.perturbation, api.p50 if api else None, unit(r)),
                *unprofiled_steps_claims(r.unprofiled)]
        found = [c for c in made if c.id == sid]
    return found[0].text if found else ""


def unprofiled_note(r: Report) -> str:
    return _said(r, "perturbation-unprofiled")


def unprofiled_short(r: Report) -> str:
    """`` · unprofiled: 20% of this`` beside per-call figures, where capture measured it."""
    from traceview.report.sentences import unprofiled_share_words

    words = unprofiled_share_words(r)
    return "" if words is None else f" · {words}"


def span(low: int, high: int | None) -> str:
    """``74.9-85.7 us``: one unit where both ends have it (a narrow column), else both."""
    a, b = fmt_ns(low), fmt_ns(high)
    ua, ub = a.rpartition(" ")[2], b.rpartition(" ")[2]
    return f"{a.rpartition(' ')[0]}-{b}" if ua == ub and " " in a else f"{a} - {b}"


UNPROFILED_ROWS = 10
UNPROFILED_HEADER = ["function (as the trace names it)", "unprofiled", "interval",
                     "of the call", "profiled"]


def unprofiled_parts(r: Report) -> tuple[str, list[list[str]], list[str]] | None:
    """The estimated unprofiled split (``report/unprofiled.py``) as a headline, the
    function rows and the closing lines (categories, the measurement's cost, the model);
    None where the report has none (no warm call)."""
    u = r.unprofiled
    if u is None:
        return None
    from traceview.report.sentences import unprofiled_claims

    said = {c.id: c.text for c in r.claims if c.id.startswith("unprofiled-")} \
        or {c.id: c.text for c in unprofiled_claims(u)}  # a report saved without claims
    head = said["unprofiled-call"]
    if u.method is None or u.call_ns is None:
        return head, [], []
    rows = []
    for f in u.functions[:UNPROFILED_ROWS]:
        interval = (span(f.low_ns, f.high_ns) if f.low_ns is not None else "(model)")
        share = f"{100 * (f.inclusive_ns or 0) / u.call_ns:.0f}%"
        rows.append([f.name, fmt_ns(f.inclusive_ns), interval, share, fmt_ns(f.profiled_ns)])
    tail = [said.get("unprofiled-categories", ""),
            f"measurement: {u.measuring}" if u.measuring else "", u.note, *steps_lines(r)]
    return head, rows, [t for t in tail if t]


def steps_lines(r: Report) -> list[str]:
    """"profiled step X, unprofiled Y", the corrected phases and path, and the model."""
    st = None if r.unprofiled is None else r.unprofiled.steps
    if st is None:
        return []
    said = [_said(r, sid) for sid in ("unprofiled-steps", "unprofiled-steps-phases",
                                       "unprofiled-steps-path")]
    return [*said, f"correction model: {st.model}"]


def unprofiled_console(r: Report) -> Any:
    """The unprofiled split for the terminal (a rich table), or None."""
    parts = unprofiled_parts(r)
    if parts is None:
        return None
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    head, rows, tail = parts
    if not rows:
        return Group(Text(head, style="bold"), *(Text(x) for x in tail))
    from traceview.render.names import short_frame
    from traceview.render.text import name_text

    t = Table(title=head, title_justify="left", title_style="bold")
    for i, h in enumerate(UNPROFILED_HEADER):  # the names fold; the figures never break
        t.add_column(h, justify="left" if i == 0 else "right", overflow="fold",
                     no_wrap=i > 0, ratio=1 if i == 0 else None)
    for row in rows:  # a frame name breaks at its path and name boundaries
        t.add_row(name_text(short_frame(row[0])), *row[1:])
    return Group(t, *(Text(x) for x in tail))


def unprofiled_markdown(r: Report, esc: Any, table: Any, code: Any, prose: Any) -> list[str]:
    """The unprofiled split as markdown parts (a heading line, a table, notes); the
    markdown helpers come from ``render/markdown.py``, which calls this."""
    parts = unprofiled_parts(r)
    if parts is None:
        return []
    head, rows, tail = parts
    out = [f"#### {prose(head)}"]
    if rows:  # the function, as the trace names it, in a code span: ``__call__`` verbatim
        out.append(table(UNPROFILED_HEADER, [[code(row[0], limit=len(row[0]))]
                                             + [esc(c) for c in row[1:]] for row in rows],
                         "lrrrr"))
    out += [f"_{prose(x)}_" for x in tail]
    return out


def perturbation_line(r: Report) -> str:
    return _said(r, "perturbation-recorded")


def reasons_lines(r: Report) -> list[str]:
    out = []
    for c in r.calls.per_call:
        if c.cold:
            out.append(f"cold #{c.index} ({c.name}): {c.cold_reason}")
    for c in r.calls.per_call:
        if c.outlier and c.launches_without_work and not c.cold:
            # the title names it incomplete, not among the outliers the figures count
            out.append(f"incomplete #{c.index} ({c.name}), also slow: {c.outlier_reason}")
        elif c.outlier:
            out.append(f"outlier #{c.index} ({c.name}): {c.outlier_reason}")
    return out


def _visible(nodes: tuple[TreeRow, ...], floor: float) -> list[TreeRow]:
    return [n for n in nodes if n.inclusive_ns >= floor]


def _call_p50(r: Report) -> int:
    return r.calls.stats["api_ns"].p50 or 0


def _device_columns(c) -> tuple[tuple[str, ...], Any]:
    """The kinds table's device columns: ``kernel`` (the call's device work) or, where some
    call launched copies, ``kernel`` (kernels alone) and ``copy`` (memcpy/memset alone)."""
    if not c.has_copies:
        return ("kernel",), lambda st: (fmt_ns(st["kernel_ns"].p50),)

    def cells(st):
        k, cp = st.get("kernel_only_ns"), st.get("copy_ns")
        return (fmt_ns(None if k is None else k.p50), fmt_ns(None if cp is None else cp.p50))
    return ("kernel", "copy"), cells


# Where no module has time in the p50 warm call (the nearest-rank p50 of a module is 0
# unless it runs in more than half of the warm calls: calls of different kinds), a table
# of no rows under its title said nothing; this says why.
NO_FAMILY_ROWS = ("no module has time in the p50 warm call: each runs in half of the warm "
                  "calls or fewer (every module's figures: --format json)")


def family_rows(r: Report) -> list[tuple[str, int, str]]:
    """The module table's rows: (module, ns per call, share), the share computed from the
    figure shown over the one whole the title names (a warm call's p50), sorted by that
    figure; modules with no time in a typical warm call are left out."""
    from traceview.units import fmt_share

    call = _call_p50(r)
    fams = sorted((f for f in r.host.families if f.ns_per_call > 0),
                  key=lambda f: (-f.ns_per_call, f.name))
    return [(f.name, f.ns_per_call, fmt_share(f.ns_per_call, call)) for f in fams]


def family_title(r: Report) -> str:
    """The module table's title: the report's ``families-title`` claim."""
    from traceview.report.sentences import families_title_words

    return families_title_words(r)


def _node_label(n: TreeRow, warm: int, name=None) -> str:
    """A tree node's line; ``name``: what marks the name's break points (text only)."""
    count = f" x{n.count}" if n.count > 1 else ""
    few = f" (in {n.calls_with} of {warm} calls)" if 2 * n.calls_with < warm else ""
    shown = n.name if name is None else name(n.name).plain
    return (f"{shown}{count}  {fmt_ns(n.inclusive_ns)} incl, {fmt_ns(n.self_ns)} self"
            f"  [{n.category}]{few}")


# ---------------------------------------------------------------- terminal (rich)


def console_sections(r: Report) -> list[Any]:
    from rich.table import Table
    from rich.text import Text
    from rich.tree import Tree

    from traceview.render.text import name_text

    out: list[Any] = []
    c = r.calls
    if not c.per_call:
        return out
    reasons = reasons_lines(r)
    head = Text("\n".join(reasons)) if reasons else None
    if len(c.kinds) > 1 or (c.api_sync is not None and c.api_sync.n):
        # with no warm call the figures are over every call (``calls.warm_calls``)
        over = "warm calls" if c.warm_count else "every call: none is warm"
        t = Table(title=f"Call kinds (p50 over {over})", title_justify="left", pad_edge=False)
        t.add_column("kind", overflow="fold", max_width=40)
        dev_cols, dev_cells = _device_columns(c)
        for col in ("calls", "warm", "call", "+ sync", *dev_cols):
            t.add_column(col, justify="right")
        kind_rows: list[tuple[str, int, int, dict[str, Stats], Stats | None]] = [
            (k.name, k.count, k.warm_count, k.stats, k.api_sync) for k in c.kinds[:KIND_ROWS]]
        if len(c.kinds) > 1:
            kind_rows.append(("all kinds", c.count, c.warm_count, c.stats, c.api_sync))
        for name, n, w, st, sync in kind_rows:
            t.add_row(name_text(name), str(n), str(w), fmt_ns(st["api_ns"].p50),
                      fmt_ns(sync.p50 if sync is not None else None), *dev_cells(st))
        out.extend(x for x in (head, t) if x is not None)
    elif head is not None:
        out.append(head)
    warm_calls = c.tree_warm_calls
    families = r.host.families
    note = unprofiled_note(r)
    if families and r.trace.python_frames:
        t = Table(title=family_title(r) + unprofiled_short(r),
                  title_justify="left", pad_edge=False)
        t.add_column("module (innermost frame)", overflow="fold")
        t.add_column("per call", justify="right")
        t.add_column("share", justify="right")
        rows = family_rows(r)
        for name, ns, share in rows[:FAMILY_ROWS]:
            t.add_row(name_text(name), fmt_ns(ns), share)
        if len(rows) > FAMILY_ROWS:
            t.add_row(Text(f"{len(rows) - FAMILY_ROWS} more (--format json)"), "", "")
        out.append(t if rows else Text(f"{family_title(r)}{unprofiled_short(r)}: {NO_FAMILY_ROWS}"))
    if c.tree:
        floor = TREE_MIN_SHARE_TEXT * _call_p50(r)
        u = unit(r)
        tree = Tree(Text(f"Typical warm {u}, top-down (p50 per warm {u}; nodes under "
                         f"{100 * TREE_MIN_SHARE_TEXT:.0f}% of the {u} folded)", style="bold"))

        def add(branch, nodes, depth):
            shown = _visible(nodes, floor)
            for n in shown:
                sub = branch.add(Text(_node_label(n, warm_calls, name_text)))
                if depth < TREE_DEPTH_TEXT:
                    add(sub, n.children, depth + 1)
            hidden = len(nodes) - len(shown)
            if hidden:
                ns = sum(n.inclusive_ns for n in nodes if n not in shown)
                branch.add(Text(f"... {hidden} smaller ({fmt_ns(ns)})", style="grey50"))

        add(tree, c.tree, 1)
        out.append(tree)
    extra = [x for x in (perturbation_line(r), note) if x]
    if extra:
        out.append(Text("\n".join(extra)))
    return out


# ---------------------------------------------------------------- markdown


def markdown_sections(r: Report, esc, code, table, details) -> list[str]:
    c = r.calls
    if not c.per_call:
        return []
    parts = [esc(c.description) + "".join(f"  \n{esc(x)}" for x in reasons_lines(r))]
    if len(c.kinds) > 1 or (c.api_sync is not None and c.api_sync.n):
        dev_cols, dev_cells = _device_columns(c)
        rows = [[code(k.name), str(k.count), str(k.warm_count), fmt_ns(k.stats["api_ns"].p50),
                 fmt_ns(k.api_sync.p50), *dev_cells(k.stats)] for k in c.kinds]
        if len(c.kinds) > 1:
            rows.append(["all kinds", str(c.count), str(c.warm_count),
                         fmt_ns(c.stats["api_ns"].p50),
                         fmt_ns(c.api_sync.p50 if c.api_sync is not None else None),
                         *dev_cells(c.stats)])
        parts.append(table(["kind", "calls", "warm", "call", "call + sync", *dev_cols], rows))
    warm_calls = c.tree_warm_calls
    if r.host.families and r.trace.python_frames:
        rows = [[code(name), fmt_ns(ns), share] for name, ns, share in family_rows(r)[:FAMILY_ROWS]]
        parts.append(f"#### {esc(family_title(r))}{unprofiled_short(r)}")
        parts.append(table(["module (innermost frame)", "per call", "share"], rows) if rows
                     else esc(NO_FAMILY_ROWS))
    if c.tree:
        floor = TREE_MIN_SHARE_TEXT * _call_p50(r)
        lines: list[str] = []

        def add(nodes, depth):
            for n in _visible(nodes, floor):
                lines.append("  " * (depth - 1) + _node_label(n, warm_calls).replace("`", "'"))
                if depth < TREE_DEPTH_TEXT:
                    add(n.children, depth + 1)

        add(c.tree, 1)
        # a fenced block: deep nested lists exceed markdown renderers' nesting limits
        u = unit(r)
        parts.append(details(f"Typical warm {u}, top-down (p50 per warm {u}, inclusive and self"
                             f"; nodes under {100 * TREE_MIN_SHARE_TEXT:.0f}% of the {u} left out)",
                             "```text\n" + "\n".join(lines) + "\n```"))
    extra = [x for x in (perturbation_line(r), unprofiled_note(r)) if x]
    if extra:
        parts.append(esc("; ".join(extra)))
    return parts
