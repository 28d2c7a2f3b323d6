"""Text, markdown and JSON of the Proton reports (``traceview.report.proton``)."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
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
from traceview.units import fmt_bytes, fmt_ns, fmt_rate

CALL_ROWS = 30  # calls listed one per row in text and markdown (all are in JSON)


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


def _table(header: list[str], rows: list[list[str]], *, md: bool) -> list[str]:
    if md:
        out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
        return out
    widths = [max(len(x) for x in col) for col in zip(header, *rows, strict=True)]
    fmt = [f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths)]
    return ["  " + "  ".join(f.format(c) for f, c in zip(fmt, r, strict=True)).rstrip()
            for r in [header, *rows]]


# ------------------------------------------------------------------------------ trace


def trace_text(r: ProtonTraceReport, *, md: bool = False) -> str:
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
    rows = [[str(c.index), _name(c.name), str(c.kernels), fmt_ns(c.kernel_ns),
             fmt_ns(c.span_ns), fmt_ns(c.idle_after_ns), "outlier" if c.outlier_reason else ""]
            for c in r.calls[:CALL_ROWS]]
    out += _table(["#", "call", "kernels", "kernel time", "span", "idle after", ""], rows,
                  md=md)
    if len(r.calls) > CALL_ROWS:
        out.append(f"  ... {len(r.calls) - CALL_ROWS} more calls (all in --format json)")
    for c in r.calls:
        if c.outlier_reason:
            out.append(f"outlier {c.name}: {c.outlier_reason}")
    if r.scopes:
        out.append("")
        out.append(f"{h}scopes below the calls (kernel time inclusive of sub-scopes):")
        out += _table(["scope", "calls", "kernels", "kernel sum", "per call p50"],
                      [[("  " * d if not md else "&nbsp;" * 2 * d) + _name(s.name),
                        str(s.calls_with), str(s.kernels), fmt_ns(s.kernel_sum_ns),
                        fmt_ns(s.per_call.p50)] for d, s in _scope_rows(r.scopes)], md=md)
    out.append("")
    out.append(f"{h}kernels:")
    out += _table(["kernel", "count", "sum", "p50", "p90", "max"],
                  [[_name(k.name), str(k.count), fmt_ns(k.sum_ns), fmt_ns(k.stats.p50),
                    fmt_ns(k.stats.p90), fmt_ns(k.stats.max)] for k in r.kernels], md=md)
    for n in r.notes:
        out.append(f"note: {n}")
    out.append("")
    out.append(f"{h}what a Proton trace cannot answer:")
    out += [f"- {x}" for x in r.cannot_answer]
    out.append("For host time and launches, profile the same code with torch.profiler "
               "and run traceview explain on that trace.")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------- tree


def tree_text(r: ProtonTreeReport, *, md: bool = False) -> str:
    h = "## " if md else ""
    out: list[str] = [f"{'# ' if md else ''}Proton tree: {r.path}"]
    out += [c.text for c in tree_claims(r)]
    out.append(f"metrics recorded: {', '.join(r.metrics) or 'none'}")
    out.append("")
    out.append(f"{h}per scope (inclusive: the scope and every kernel below it; rates are "
               "the metric over that kernel time):")
    rows = []
    for t in _tree_rows(r.rows):
        pad = ("&nbsp;" * 2 * t.depth) if md else "  " * t.depth
        label = pad + _name(t.name) + (" [kernel]" if t.kind == "kernel" else "")
        rows.append([label, fmt_ns(t.time_ns), str(t.count),
                     si(t.flops, "FLOP") if t.flops is not None else "-",
                     flop_rate(t.tflop_per_s),
                     fmt_bytes(int(t.bytes)) if t.bytes is not None else "-",
                     fmt_rate(t.gb_per_s)])
    out += _table(["scope", "time", "count", "flops", "FLOP/s", "bytes", "GB/s"], rows, md=md)
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
    """``fmt``: text, json or md. Text prose is wrapped at ``width``; tables are not."""
    if fmt == "json":
        return json.dumps(to_json(r), indent=2) + "\n"
    md = fmt == "md"
    out = trace_text(r, md=md) if isinstance(r, ProtonTraceReport) else tree_text(r, md=md)
    return out if md else _wrap(out, width)


def _wrap(text: str, width: int) -> str:
    lines = []
    for line in text.splitlines():
        if line.startswith("  ") or len(line) <= width:
            lines.append(line)
        else:
            indent = "  " if line.startswith("- ") else ""
            lines += textwrap.wrap(line, width, subsequent_indent=indent,
                                   break_on_hyphens=False)
    return "\n".join(lines) + "\n"


def to_json(r: ProtonTraceReport | ProtonTreeReport) -> dict[str, Any]:
    """The Proton report's JSON, its layout's version first, as every document's."""
    from traceview.documents import stamp

    return {**stamp("proton"), **r.to_dict()}
