"""The sweep's text: its table, its markdown page, and the one place the sweep's summary
files are written (:func:`write_sweep`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from traceview.units import fmt_bytes, fmt_ns, fmt_pct, fmt_rate

if TYPE_CHECKING:
    from traceview.sweep.sweep import SweepResult

SUMMARY_FILES = ("sweep.json", "sweep.md")  # what write_sweep writes into the sweep's folder


def write_sweep(result: SweepResult) -> list[Path]:
    """``sweep.json`` and ``sweep.md`` into the sweep's folder, both or neither (staged,
    then renamed into place); returns their paths."""
    import json

    from traceview.capture.tracefile import Publisher

    summary = result.summary()
    paths = [result.folder / name for name in SUMMARY_FILES]
    data = [json.dumps(summary, indent=2).encode(), markdown(summary).encode()]
    with Publisher() as pub:
        for path, body in zip(paths, data, strict=True):
            pub.stage(path, body)
        pub.commit()
    return paths


def _has_copies(rows: list[dict[str, Any]]) -> bool:
    """Some size's calls launched memcpy/memset: its kernel figure is more than kernels."""
    return any(r.get("copy_ns") for r in rows)


def render_sweep(console: Console, result: SweepResult, files: list[Path]) -> None:
    """The #4812-style table: numel, kernel, full API, host gap, device, crossover."""
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
    console.print(crossover_sentence(result.crossover_numel, result.fixed_host_gap_ns))
    if rates:
        console.print(bandwidth_sentence(result.bandwidth_bound_numel, rows))
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
    lines += ["", crossover_sentence(summary["crossover_numel"], summary["fixed_host_gap_ns"])]
    if rates:
        lines += ["", bandwidth_sentence(summary.get("bandwidth_bound_numel"), summary["rows"])]
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


def bandwidth_sentence(bound: int | None, rows: list[dict[str, Any]]) -> str:
    peaks = [r["copy_peak_gb_per_s"] for r in rows if r.get("copy_peak_gb_per_s")]
    peak = f" (copy peak measured {fmt_rate(max(peaks))})" if peaks else ""
    best = max((r["gb_per_s"] for r in rows if r.get("gb_per_s") is not None), default=None)
    if bound is None:
        return (f"Latency-bound over the whole range: no size reaches half of this device's "
                f"copy peak{peak}; best {fmt_rate(best)}.")
    return (f"Bandwidth-bound from numel {bound}: the first size whose kernel moves its bytes "
            f"at half of this device's copy peak or more{peak}; below it the kernel is "
            f"latency-bound. Best {fmt_rate(best)}.")


def crossover_sentence(crossover: int | None, fixed_gap_ns: int | None) -> str:
    if fixed_gap_ns is None:
        return "No host gap measured (no device kernel time on this device)."
    gap = f"fixed host gap about {fmt_ns(fixed_gap_ns)}"
    if crossover is None:
        return f"No crossover in this range: the kernel never hides the host cost ({gap})."
    return (f"Crossover at numel {crossover}: from there the kernel takes at least as long "
            f"as the host gap ({gap}).")
