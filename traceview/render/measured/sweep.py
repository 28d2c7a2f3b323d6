"""The sweep's text: its table over sizes and its markdown page (``sweep.md``).

The document is a ``traceview.sweep.sweep_report.SweepOutput``: the ``SweepResult``
and the summary files written beside its traces.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from traceview.units import fmt_bytes, fmt_ns, fmt_pct, fmt_rate


def _has_copies(rows: list[dict[str, Any]]) -> bool:
    """Some size's calls launched memcpy/memset: its kernel figure is more than kernels."""
    return any(r.get("copy_ns") for r in rows)


def render_sweep(console: Console, result: Any, files: list[Path] | tuple[Path, ...]) -> None:
    """The table over sizes: numel, kernel, full API, host gap, device, crossover."""
    c = result.config
    rows = [r.to_dict() for r in result.rows]
    copies = _has_copies(rows)
    table = Table(title=f"{c.op} | {c.impl} | {c.dtype} | {c.mode}", title_justify="left")
    rates = _has_rates(rows)
    cols = ("numel", "kernel p50", *(("of it copies",) if copies else ()), "full API p50",
            "host gap", "device (graph)", *(RATE_COLS if rates else ()), "crossover")
    for col in cols:
        table.add_column(col, justify="right")
    for r in rows:
        if "error" in r:
            table.add_row(str(r["numel"]), "error", *[""] * (len(cols) - 2))
            continue
        table.add_row(str(r["numel"]), fmt_ns(r["kernel_ns"]),
                      *((fmt_ns(r["copy_ns"]),) if copies else ()), fmt_ns(r["full_api_ns"]),
                      fmt_ns(r["host_gap_ns"]), fmt_ns(r["device_ns"]),
                      *(rate_cells(r) if rates else ()),
                      "<-" if r["numel"] == result.crossover_numel else "")
    console.print(table)
    summary = result.summary()
    console.print(crossover_sentence(summary))
    if rates:
        console.print(bandwidth_sentence(summary))
    console.print(f"traces: {escape(str(result.folder))}/", highlight=False)
    for f in files:
        console.print(f"summary: {escape(str(f))}", highlight=False)


def markdown(summary: dict[str, Any]) -> str:
    """The sweep as a markdown page ready to paste into an issue."""
    dev = (summary.get("device_info") or {}).get("name") or summary["device"]
    vers = summary.get("versions") or {}
    lines = [
        f"# {summary['op']} ({summary['impl']}, {summary['dtype']}, {summary['mode']}) on {dev}",
        "",
        (f"torch {vers.get('torch')}, triton {vers.get('triton')}, "
         f"python {vers.get('python')}, flag_gems {vers.get('flag_gems')}"),
        "",
        f"Command: `{summary['command']}`",
        "",
    ]
    copies = _has_copies(summary["rows"])
    rates = _has_rates(summary["rows"])
    cols = ["numel", "kernel p50", *(["of it copies"] if copies else []), "full API p50",
            "host gap", "device (graph)", "submit", *(RATE_COLS if rates else [])]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---:|" * len(cols)]
    for r in summary["rows"]:
        if "error" in r:
            lines.append(f"| {r['numel']} | error: {r['error']} |" + " |" * (len(cols) - 2))
            continue
        mark = " <- crossover" if r["numel"] == summary["crossover_numel"] else ""
        copy = f" {fmt_ns(r.get('copy_ns'))} |" if copies else ""
        lines.append(
            f"| {r['numel']} | {fmt_ns(r['kernel_ns'])} |{copy} {fmt_ns(r['full_api_ns'])} | "
            f"{fmt_ns(r['host_gap_ns'])}{mark} | {fmt_ns(r['device_ns'])} | "
            f"{fmt_ns(r['amortized_submit_ns'])} |"
            + ("".join(f" {c} |" for c in rate_cells(r)) if rates else "")
        )
    lines += ["", crossover_sentence(summary)]
    if rates:
        lines += ["", bandwidth_sentence(summary)]
    lines += [""]
    lines += [f"- **{k}**: {v}" for k, v in summary["definitions"].items()]
    return "\n".join(lines) + "\n"


RATE_COLS = ("bytes", "GB/s", "of copy, same bytes", "of copy peak")


def _has_rates(rows: list[dict[str, Any]]) -> bool:
    return any(r.get("gb_per_s") is not None for r in rows)


def rate_cells(r: dict[str, Any]) -> tuple[str, str, str, str]:
    """bytes moved, achieved GB/s, and its shares of the two measured copy rates."""
    def pct(x: float | None) -> str:
        return "-" if x is None else fmt_pct(x)

    return (fmt_bytes(r.get("bytes")), fmt_rate(r.get("gb_per_s")),
            pct(r.get("share_of_copy_same_bytes")), pct(r.get("share_of_copy_peak")))


def bandwidth_sentence(summary: dict[str, Any]) -> str:
    """The bandwidth sentence of ``sweep.json`` (its ``sweep-bandwidth`` claim's text)."""
    from traceview.report.measured_lines import bandwidth_claim

    return bandwidth_claim(summary).text


def crossover_sentence(summary: dict[str, Any]) -> str:
    """The crossover sentence of ``sweep.json`` (its ``sweep-crossover`` claim's text)."""
    from traceview.report.measured_lines import crossover_claim

    return crossover_claim(summary).text
