"""Text, markdown and JSON of the Proton reports (``traceview.report.proton``)."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from traceview.report.proton import (
    ProtonScopeRow,
    ProtonTraceReport,
    ProtonTreeReport,
    ProtonTreeRow,
)
from traceview.report.proton_lines import (
    NAME_CHARS,
    flop_rate,
    short_name,
    si,
    trace_claims,
    tree_claims,
)
from traceview.stats import Stats
from traceview.units import fmt_bytes, fmt_ns, fmt_rate, printable

CALL_ROWS = 30  # calls listed one per row in text and markdown (all are in JSON)
# A text table too wide for the terminal marks kernels with this (its title says so)...
KERNEL_MARK = " *"
# ...and cuts names in the middle to no fewer characters than this: shorter, a name tells
# nothing (a line wider than the width is the lesser harm).
NAME_FLOOR = 8


def _name(s: str, n: int = NAME_CHARS) -> str:
    return short_name(s, n)


def _stats_line(s: Stats) -> str:
    return f"{fmt_ns(s.p50)} / {fmt_ns(s.p90)} / {fmt_ns(s.max)}" if s.n else "-"


def _scope_rows(rows: tuple[ProtonScopeRow, ...]) -> Iterator[tuple[int, ProtonScopeRow]]:
    stack = [(0, r) for r in reversed(rows)]
    while stack:
        d, r = stack.pop()
        yield d, r
        stack.extend((d + 1, c) for c in reversed(r.children))


def _tree_rows(rows: tuple[ProtonTreeRow, ...]) -> Iterator[ProtonTreeRow]:
    stack = list(reversed(rows))
    while stack:
        r = stack.pop()
        yield r
        stack.extend(reversed(r.children))


@dataclass(frozen=True)
class Label:
    """A table's name cell: the name (a scope, kernel or call), its depth in the tree, and
    whether it is a kernel (marked after the name). Kept apart until the table is laid
    out, so that a table too wide for the terminal can shorten it: the indent first, then
    the marker, then the name, cut in the middle. Figures are never cut."""

    name: str
    depth: int = 0
    kernel: bool = False


# The steps a text table takes, in order, until it fits the width: (spaces per tree level,
# the kernel marker, whether names are cut in the middle). The first is what a table
# that fits prints.
_FITS = ((2, " [kernel]", False), (1, " [kernel]", False), (1, KERNEL_MARK, False),
         (1, KERNEL_MARK, True))
LEAD = "  "  # a table line's indent (``_wrap`` leaves such lines alone)
GAP = 2  # spaces between columns


def middle_cut(s: str, n: int) -> str:
    """``s`` in at most ``n`` characters: its start (two thirds: a kernel's namespace and
    name, mangled or not), ``…`` and its end (what often tells kernels of one family, or
    scopes of one loop, apart)."""
    if len(s) <= n:
        return s
    head = -(-2 * (n - 1) // 3)
    tail = n - 1 - head
    return s[:head] + "…" + (s[-tail:] if tail else "")


def _label_text(lb: Label, indent: int, mark: str, room: int | None) -> str:
    pad = " " * indent * lb.depth
    tail = mark if lb.kernel else ""
    if room is None:
        return pad + _name(lb.name) + tail
    full = printable(lb.name)
    n = max(room - len(pad) - len(tail), min(NAME_FLOOR, len(full)))
    return pad + (_name(lb.name) if n >= NAME_CHARS else middle_cut(full, n)) + tail


def _fit_labels(header: list[str], rows: list[list[Any]], width: int | None
                ) -> tuple[list[list[str]], bool]:
    """The rows with each ``Label`` laid out for a text table of ``width`` columns (None:
    no limit): as wide as the names need where that fits; else the first of ``_FITS``
    whose widest label fits what the other columns leave (each as wide as its widest
    cell, a figure never cut), the last cutting names in the middle down to
    ``NAME_FLOOR`` characters. Also whether the kernel marker is the short one (the
    caller says what it means)."""
    at = next((j for r in rows for j, c in enumerate(r) if isinstance(c, Label)), None)
    if at is None:
        return [[str(c) for c in r] for r in rows], False
    others = [max([len(header[j])] + [len(str(r[j])) for r in rows])
              for j in range(len(header)) if j != at]
    room = None if width is None else \
        width - len(LEAD) - sum(others) - GAP * (len(header) - 1)
    for indent, mark, cut in _FITS:
        laid = [[_label_text(c, indent, mark, room if cut else None) if isinstance(c, Label)
                 else str(c) for c in r] for r in rows]
        widest = max([len(header[at])] + [len(r[at]) for r in laid])
        if room is None or widest <= room:
            break
    kernels = any(isinstance(c, Label) and c.kernel for r in rows for c in r)
    return laid, kernels and mark == KERNEL_MARK


def _table(header: list[str], rows: list[list[Any]], *, md: bool, width: int | None = None
           ) -> list[str]:
    """A table's lines: markdown's, or text's at most ``width`` columns wide where the
    figures leave its names room (``_fit_labels``)."""
    if md:
        cells = [[_md_label(c) if isinstance(c, Label) else str(c) for c in r] for r in rows]
        out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in cells]
        return out
    laid, _ = _fit_labels(header, rows, width)
    widths = [max(len(x) for x in col) for col in zip(header, *laid, strict=True)]
    fmt = [f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths)]
    return [LEAD + (" " * GAP).join(f.format(c) for f, c in zip(fmt, r, strict=True)).rstrip()
            for r in [header, *laid]]


def _md_label(lb: Label) -> str:
    return "&nbsp;" * 2 * lb.depth + _name(lb.name) + (" [kernel]" if lb.kernel else "")


# ------------------------------------------------------------------------------ trace


def trace_text(r: ProtonTraceReport, *, md: bool = False, width: int | None = None) -> str:
    """The trace's text (tables at most ``width`` columns where they can be) or markdown."""
    h = "## " if md else ""
    out: list[str] = []
    out.append(f"{'# ' if md else ''}Proton trace: {r.path}")
    said = {c.id: c.text for c in trace_claims(r)}
    out.append(said["proton-summary"])
    out.append("")
    out.append(h + said["proton-calls"])
    if "proton-unscoped" in said:
        out.append(said["proton-unscoped"])
    out.append("")
    out.append("per call, p50 / p90 / max:")
    labels = {"kernel_ns": "kernel time (sum)", "busy_ns": "device busy",
              "span_ns": "span (first kernel start to last end)",
              "idle_after_ns": "device idle before the next call"}
    out += _table(["", "p50 / p90 / max"],
                  [[labels[m], _stats_line(s)] for m, s in r.call_stats.items()], md=md)
    out.append("")
    rows = [[str(c.index), Label(c.name), str(c.kernels), fmt_ns(c.kernel_ns),
             fmt_ns(c.span_ns), fmt_ns(c.idle_after_ns), "outlier" if c.outlier_reason else ""]
            for c in r.calls[:CALL_ROWS]]
    out += _table(["#", "call", "kernels", "kernel time", "span", "idle after", ""], rows,
                  md=md, width=width)
    if len(r.calls) > CALL_ROWS:
        out.append(f"  ... {len(r.calls) - CALL_ROWS} more calls (all in --format json)")
    for c in r.calls:
        if c.outlier_reason:
            out.append(f"outlier {c.name}: {c.outlier_reason}")
    if r.scopes:
        out.append("")
        out.append(f"{h}scopes below the calls (kernel time inclusive of sub-scopes):")
        out += _table(["scope", "calls", "kernels", "kernel sum", "per call p50"],
                      [[Label(s.name, d), str(s.calls_with), str(s.kernels),
                        fmt_ns(s.kernel_sum_ns), fmt_ns(s.per_call.p50)]
                       for d, s in _scope_rows(r.scopes)], md=md, width=width)
    out.append("")
    out.append(f"{h}kernels:")
    out += _table(["kernel", "count", "sum", "p50", "p90", "max"],
                  [[Label(k.name), str(k.count), fmt_ns(k.sum_ns), fmt_ns(k.stats.p50),
                    fmt_ns(k.stats.p90), fmt_ns(k.stats.max)] for k in r.kernels], md=md,
                  width=width)
    for n in r.notes:
        out.append(f"note: {n}")
    out.append("")
    out.append(f"{h}what a Proton trace cannot answer:")
    out += [f"- {x}" for x in r.cannot_answer]
    out.append("For host time and launches, profile the same code with torch.profiler "
               "and run traceview explain on that trace.")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------- tree


def tree_text(r: ProtonTreeReport, *, md: bool = False, width: int | None = None) -> str:
    """The tree's text (its table at most ``width`` columns where it can be) or markdown."""
    h = "## " if md else ""
    out: list[str] = [f"{'# ' if md else ''}Proton tree: {r.path}"]
    out += [c.text for c in tree_claims(r)]
    out.append(f"metrics recorded: {', '.join(r.metrics) or 'none'}")
    out.append("")
    rows: list[list[Any]] = []
    for t in _tree_rows(r.rows):
        rows.append([Label(t.name, t.depth, t.kind == "kernel"), fmt_ns(t.time_ns),
                     str(t.count), si(t.flops, "FLOP") if t.flops is not None else "-",
                     flop_rate(t.tflop_per_s),
                     fmt_bytes(int(t.bytes)) if t.bytes is not None else "-",
                     fmt_rate(t.gb_per_s)])
    header = ["scope", "time", "count", "flops", "FLOP/s", "bytes", "GB/s"]
    marked = not md and _fit_labels(header, rows, width)[1]
    out.append(f"{h}per scope (inclusive: the scope and every kernel below it; rates are "
               "the metric over that kernel time"
               + (f"; '{KERNEL_MARK.strip()}' marks a kernel" if marked else "") + "):")
    out += _table(header, rows, md=md, width=width)
    scoped = [t for t in _tree_rows(r.rows) if t.scope_metrics]
    if scoped:
        out.append("")
        out.append(f"{h}metrics recorded on scopes (proton.scope(name, metrics)), over the "
                   "scope's kernel time:")
        for t in scoped:
            parts = []
            for k, v in sorted(t.scope_metrics.items()):
                parts.append(f"{k} {v:g}")
            rates = []
            if t.scope_tflop_per_s is not None:
                rates.append(flop_rate(t.scope_tflop_per_s))
            if t.scope_gb_per_s is not None:
                rates.append(fmt_rate(t.scope_gb_per_s))
            out.append(f"- {_name(t.name)}: {', '.join(parts)}"
                       + (f" -> {', '.join(rates)}" if rates else ""))
    for n in r.notes:
        out.append(f"note: {n}")
    out.append("")
    out.append("A Proton tree sums each context's kernels: it has no timeline, no host "
               "time and no launches (for those, a torch.profiler trace).")
    return "\n".join(out) + "\n"


def render(r: ProtonTraceReport | ProtonTreeReport, fmt: str, width: int = 80) -> str:
    """``fmt``: text, json or md. Text prose is wrapped at ``width``; a table fits it by
    shortening its names (``_fit_labels``: tree indent, kernel marker, then names cut in
    the middle), its figures always whole."""
    if fmt == "json":
        return json.dumps(to_json(r), indent=2) + "\n"
    md = fmt == "md"
    w = None if md else width
    out = trace_text(r, md=md, width=w) if isinstance(r, ProtonTraceReport) \
        else tree_text(r, md=md, width=w)
    return out if md else _wrap(out, width)


def _wrap(text: str, width: int) -> str:
    """Prose wrapped at ``width``, a number never parted from its unit (``983 kB``, as
    the Kineto views keep them: ``render.text.bind``); table lines (``LEAD``) as laid out."""
    from traceview.render.text import GLUE, bind

    lines = []
    for line in text.splitlines():
        if line.startswith(LEAD) or len(line) <= width:
            lines.append(line)
        else:
            indent = "  " if line.startswith("- ") else ""
            lines += [ln.replace(GLUE, " ") for ln in
                      textwrap.wrap(bind(line), width, subsequent_indent=indent,
                                    break_on_hyphens=False)]
    return "\n".join(lines) + "\n"


def to_json(r: ProtonTraceReport | ProtonTreeReport) -> dict[str, Any]:
    """The Proton report's JSON, its layout's version first, as every document's."""
    from traceview.documents import stamp

    return {**stamp("proton"), **r.to_dict()}
