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
from traceview.stats import Stats
from traceview.units import fmt_bytes, fmt_ns, fmt_rate, plural, printable

CALL_ROWS = 30  # calls listed one per row in text and markdown (all are in JSON)


def si(v: float | None, unit: str) -> str:
    """A count or rate with an SI prefix and 3 significant digits: 81.9 kFLOP, 4.8 GFLOP/s."""
    if v is None:
        return "-"
    for p, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.3g} {p}{unit}"
    return f"{v:.3g} {unit}"


def flop_rate(tflop_per_s: float | None) -> str:
    return "-" if tflop_per_s is None else si(tflop_per_s * 1e12, "FLOP/s")


def _name(s: str, n: int = 40) -> str:
    s = printable(s)
    return s if len(s) <= n else s[: n - 1] + "…"


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
    share = f" ({100 * r.device_busy_ns / r.window_ns:.2f}% of it)" if r.window_ns else ""
    out.append(f"{plural(r.kernel_count, 'kernel')} on {plural(len(r.streams), 'stream')} "
               f"over {fmt_ns(r.window_ns)} (first kernel start to last kernel end); "
               f"device busy {fmt_ns(r.device_busy_ns)}{share}; kernel sum "
               f"{fmt_ns(r.kernel_sum_ns)}")
    out.append("")
    kinds = ", ".join(f"{_name(k)} x{n}" for k, n in sorted(r.call_kinds.items(),
                                                             key=lambda kv: -kv[1]))
    out.append(f"{h}{plural(len(r.calls), 'call')}: {r.calls_source} ({kinds})")
    if r.unscoped_kernels:
        out.append(f"{plural(r.unscoped_kernels, 'kernel')} ran outside any scope "
                   "(not in a call)")
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
    peak = next((d.peak_gb_per_s for d in r.devices if d.peak_gb_per_s), None)
    line = f"{plural(r.count, 'kernel invocation')}, {fmt_ns(r.time_ns)} of kernel time"
    if r.flops is not None:
        line += f"; {si(r.flops, 'FLOP')} at {flop_rate(r.tflop_per_s)}"
    if r.bytes is not None:
        line += f"; {fmt_bytes(int(r.bytes))} at {fmt_rate(r.gb_per_s)}"
        if peak and r.gb_per_s is not None:
            line += f" ({100 * r.gb_per_s / peak:.1f}% of the device's {peak:.0f} GB/s)"
    out.append(line)
    for d in r.devices:
        out.append(f"device {d.type} {d.id}: arch {d.arch}, {d.num_sms} SMs, clock "
                   f"{(d.clock_khz or 0) / 1e6:.2f} GHz, memory {d.bus_width_bits}-bit at "
                   f"{(d.memory_clock_khz or 0) / 1e6:.2f} GHz"
                   + (f" (peak {d.peak_gb_per_s:.0f} GB/s)" if d.peak_gb_per_s else ""))
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
