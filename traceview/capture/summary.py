"""What capture prints: explain's headline numbers beside the unprofiled baseline.

Putting the trace's per-call figures next to the same call measured without the
profiler makes the profiler's own perturbation visible at a glance (trap 4). explain is
optional here: if ``traceview.analyze`` cannot be imported or fails, the baseline is
still printed and the trace is still on disk for a later ``traceview explain``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def analyze_trace(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(explain's JSON dict, None) or (None, why not)."""
    try:
        from traceview import analyze  # the explain half; may not be installed/landed
    except Exception as exc:  # noqa: BLE001  (ImportError, or a missing optional dependency)
        return None, f"explain unavailable ({type(exc).__name__}: {exc})"
    try:
        return analyze(path).to_dict(), None
    except Exception as exc:  # noqa: BLE001  (explain's problem must not lose a capture)
        return None, f"explain failed on {path.name} ({type(exc).__name__}: {exc})"


def get(d: dict[str, Any] | None, dotted: str) -> Any:
    """``get(d, "calls.api_ns.p50")``, None where any level is missing."""
    cur: Any = d
    for key in dotted.split("."):
        if not isinstance(cur, dict) or key not in cur:
            return None
        cur = cur[key]
    return cur


def fmt_ns(ns: float | None) -> str:
    """Human time for an integer-ns figure: ``850 ns``, ``51.2 us``, ``812.3 ms``."""
    if ns is None:
        return "-"
    ns = float(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            digits = 1 if abs(ns) < 100 * scale else 0
            return f"{ns / scale:.{digits}f} {unit}"
    return f"{ns:.0f} ns"


def render_capture(console: Console, meta: dict[str, Any], trace: Path, cold: Path,
                   analysis: dict[str, Any] | None, why_not: str | None) -> None:
    """The short summary table, the notes, and the paths written."""
    base = meta["baseline"]
    proto = meta["protocol"]
    shape = "x".join(map(str, meta["shape"]))
    title = escape(f"{meta['op']} | {meta['impl']} | {shape} {meta['dtype']} {meta['layout']} | "
                   f"{proto['mode']} | {meta['device']['name']}")
    table = Table(title=title, title_justify="left", show_header=True, header_style="bold")
    table.add_column("measurement")
    table.add_column("value", justify="right")
    table.add_column("how", style="dim")

    corr = meta["correctness"]
    table.add_row("correctness", "passed" if corr["passed"] else "FAILED",
                  f"max abs err {corr['max_abs_err']:.3g} vs float64 "
                  f"(rtol {corr['tolerance']['rtol']:g}, atol {corr['tolerance']['atol']:g})")
    table.add_row("cold first call", fmt_ns(meta["cold"]["wall_ns"]),
                  "fresh caches, profiled, wall")
    table.add_row("full API p50", fmt_ns(base["full_api_ns_p50"]),
                  f"unprofiled, sync each call, median of {base['n']}")
    table.add_row("amortized submit", fmt_ns(base["amortized_submit_ns"]),
                  f"unprofiled, {base['n']} calls, one sync")
    table.add_row("device per op", fmt_ns(base.get("device_ns")),
                  "CUDA graph replay, events" if base.get("device_ns") is not None
                  else (base.get("device_error") or "n/a"))
    if "replay_ns_p50" in base:
        table.add_row("graph replay p50", fmt_ns(base["replay_ns_p50"]),
                      f"unprofiled, {proto['graph_ops']} op(s) per replay, sync each")

    if analysis is not None:
        calls = get(analysis, "calls.count")
        api = get(analysis, "calls.api_ns.p50")
        table.add_section()
        table.add_row("trace: calls", str(calls) if calls is not None else "-",
                      f"profiled, sync {proto['sync']}, "
                      f"stack {'on' if proto['with_stack'] else 'off'}")
        table.add_row("trace: call API p50", fmt_ns(api), _perturbation(api, base, proto))
        table.add_row("trace: kernel p50", fmt_ns(get(analysis, "calls.kernel_ns.p50")),
                      "device kernels per call")
        table.add_row("trace: host overhead p50",
                      fmt_ns(get(analysis, "calls.host_overhead_ns.p50")), "call minus kernel")
        table.add_row("trace: device busy / window",
                      f"{fmt_ns(get(analysis, 'device.busy_ns'))} / "
                      f"{fmt_ns(get(analysis, 'window.dur_ns'))}",
                      f"kernel sum {fmt_ns(get(analysis, 'device.kernel_sum_ns'))}")
    console.print(table)

    for note in meta.get("notes", []):
        console.print(f"[yellow]note:[/] {escape(note)}")
    if analysis is not None:
        for finding in (analysis.get("findings") or [])[:5]:
            console.print(f"[bold]{escape(str(finding.get('severity', '')))}[/] "
                          f"{escape(str(finding.get('id', '')))}: "
                          f"{escape(str(finding.get('message', '')))}")
    elif why_not:
        console.print(f"[dim]{escape(why_not)}; baseline shown only[/]")
    console.print(f"trace: {escape(str(trace))}", highlight=False, soft_wrap=True)
    console.print(f"cold trace: {escape(str(cold))}", highlight=False, soft_wrap=True)


def _perturbation(api: float | None, base: dict[str, Any], proto: dict[str, Any]) -> str:
    """How far the profiled call is from the same thing unprofiled: the profiler's cost.

    The like-for-like baseline depends on the protocol: a graph replay, a synchronised
    call (``--sync each``) or a submission (``--sync end``).
    """
    if proto["mode"] == "graph":
        ref, label = base.get("replay_ns_p50"), "unprofiled replay"
    elif proto["sync"] == "each":
        ref, label = base.get("full_api_ns_p50"), "unprofiled full API"
    else:
        ref, label = base.get("amortized_submit_ns"), "unprofiled submit"
    if api is None or not ref:
        return "profiled"
    return f"profiled; {100.0 * (api - ref) / ref:+.0f}% vs {label}"


def render_sweep(console: Console, config: Any, result: Any) -> None:
    """The #4812-style table: numel, kernel, full API, host gap, device, crossover."""
    from traceview.capture.sweep import crossover_sentence

    table = Table(title=f"{config.op} | {config.impl} | {config.dtype} | {config.mode}",
                  title_justify="left")
    for col in ("numel", "kernel p50", "full API p50", "host gap", "device (graph)", "crossover"):
        table.add_column(col, justify="right")
    for r in result.rows:
        if "error" in r:
            table.add_row(str(r["numel"]), "error", "", "", "", "")
            continue
        table.add_row(str(r["numel"]), fmt_ns(r["kernel_ns"]), fmt_ns(r["full_api_ns"]),
                      fmt_ns(r["host_gap_ns"]), fmt_ns(r["device_ns"]),
                      "<-" if r["numel"] == result.crossover_numel else "")
    console.print(table)
    console.print(crossover_sentence(result.crossover_numel, result.fixed_host_gap_ns))
    console.print(f"traces: {escape(str(result.folder))}/", highlight=False)
    for f in result.files:
        console.print(f"summary: {escape(str(f))}", highlight=False)
