"""capture's summary: explain's headline numbers beside the unprofiled baseline.

Putting the trace's per-call figures next to the same call measured without the
profiler makes the profiler's own perturbation visible at a glance. explain is
optional here: without its report (``analysis`` None) the baseline is still printed
and ``why_not`` says why.

The document is a ``traceview.opcapture.summary.CaptureSummary``: the trace's
``traceview`` metadata, the paths written, and explain's report of the trace (or why
there is none).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from traceview.units import fmt_bytes, fmt_ns, fmt_rate

if TYPE_CHECKING:
    from traceview.report.model import Report


def draw_capture(console: Console, doc: Any) -> None:
    """The short summary table, the notes, and the paths written."""
    _render_capture(console, doc.meta, doc.trace, doc.cold, doc.analysis, doc.why_not)


def _render_capture(console: Console, meta: dict[str, Any], trace: Path, cold: Path,
                    analysis: Report | None, why_not: str | None) -> None:
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
    detail = meta.get("impl_detail") or {}
    if detail.get("launcher_form"):
        table.add_row("launcher", detail["launcher_form"],
                      f"{detail.get('launcher_does', '')} ({detail.get('launcher_why', '')})")
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
    for label, value, how in efficiency_rows(meta):
        table.add_row(label, value, how)

    if analysis is not None:
        st = analysis.calls.stats
        calls = analysis.calls.count
        api = st["api_ns"].p50
        table.add_section()
        table.add_row("trace: calls", str(calls) if calls is not None else "-",
                      f"profiled, sync {proto['sync']}, "
                      f"stack {'on' if proto['with_stack'] else 'off'}")
        table.add_row("trace: call API p50", fmt_ns(api), _perturbation(analysis))
        copy = st["copy_ns"].p50 if "copy_ns" in st else None
        moved = ((meta.get("bandwidth") or {}).get("bytes") or {}).get("total")
        rate = (f"; {fmt_rate(moved / st['kernel_ns'].p50)} for {fmt_bytes(moved)}"
                if moved and st["kernel_ns"].p50 else "")
        table.add_row("trace: kernel p50", fmt_ns(st["kernel_ns"].p50),
                      "device work per call" + (f", of it memcpy/memset {fmt_ns(copy)}"
                                                if copy else "") + rate)
        table.add_row("trace: host overhead p50",
                      fmt_ns(st["host_overhead_ns"].p50), "call minus kernel")
        for owner, ns in owner_split(analysis):
            table.add_row(f"trace: {owner} per call", fmt_ns(ns), OWNER_HOW[owner])
            if owner == OWNERS[0][0] and ns:
                table.add_row("trace: of it, traceview's own Python", fmt_ns(harness_python(
                    analysis)), HARNESS_PYTHON_HOW)
        table.add_row("trace: device busy / window",
                      f"{fmt_ns(analysis.device.busy_ns)} / "
                      f"{fmt_ns(analysis.window.dur_ns)}",
                      f"kernel sum {fmt_ns(analysis.device.kernel_sum_ns)}")
    console.print(table)
    words = amortized_words(base)
    if words:
        console.print(f"[dim]{escape(words)}[/]")

    for note in meta.get("notes", []):
        console.print(f"[yellow]note:[/] {escape(note)}")
    if analysis is not None:
        for finding in analysis.findings[:5]:
            console.print(f"[bold]{escape(finding.severity)}[/] {escape(finding.id)}: "
                          f"{escape(finding.message)}")
    elif why_not:
        console.print(f"[dim]{escape(why_not)}; baseline shown only[/]")
    console.print(f"trace: {escape(str(trace))}", highlight=False, soft_wrap=True)
    console.print(f"cold trace: {escape(str(cold))}", highlight=False, soft_wrap=True)


def efficiency_rows(meta: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(label, value, how) rows: kernels per call, bytes moved, achieved bandwidth."""
    from traceview.report.kernel_words import describe
    from traceview.report.sentences import copy_shares

    rows = []
    k = meta.get("kernels_used")
    if k is not None:
        rows.append(("kernels per call", "-" if k.get("note") else str(k["launches_per_call"]),
                     escape(describe(k)) + ("" if k.get("note") else
                                            f" (profiled probe, {k['calls']} calls)")))
    bw = meta.get("bandwidth")
    if bw:
        b = bw["bytes"]
        rows.append(("bytes per call", fmt_bytes(b["total"]),
                     f"read {fmt_bytes(b['read'])} + written {fmt_bytes(b['written'])}; "
                     "each distinct element once"))
        if bw.get("gb_per_s") is not None:
            rows.append(("achieved bandwidth", fmt_rate(bw["gb_per_s"]),
                         "bytes / device per op; " + copy_shares(bw)))
    return rows


#: Whose code a warm call's host time runs in, by the innermost Python frame's module
#: (explain's module table): the harness's own (traceview's frames: the call wrapper and,
#: for --impl triton, the built-in launcher), Triton's, torch's, and everyone else's.
OWNERS = (("harness (traceview)", "traceview"), ("Triton", "triton"), ("torch", "torch"))
OWNER_HOW = {
    "harness (traceview)": "frames of traceview's own code; sum of its modules' p50 per "
                           "warm call (explain's module table)",
    "Triton": "frames of triton.*; sum of module p50s per warm call",
    "torch": "frames of torch.*; sum of module p50s per warm call",
    "other code": "every other module (the library under test, user code); sum of p50s",
}


#: A traceview Python frame in the trace's function names (``.../traceview/x.py(12): f``).
_TRACEVIEW_FRAME = re.compile(r"(^|/)traceview/[\w/]+\.py\(\d+\): ")
HARNESS_PYTHON_HOW = ("self time of traceview's Python frames (p50 per warm call, summed); "
                      "the rest of the harness row is C++ work those frames call directly: "
                      "the output's torch.empty_like, the op itself for --impl torch, the "
                      "profiler's own ranges")


def harness_python(analysis: Report) -> int:
    """The harness row's part that is traceview's own Python (not the torch calls and
    profiler ranges its frames make, which the module table gives to the caller)."""
    return sum(f.self_ns_per_call or 0 for f in analysis.host.functions
               if _TRACEVIEW_FRAME.search(f.name))


def owner_split(analysis: Report) -> list[tuple[str, int]]:
    """A warm call's host time by whose code it runs in, from the trace's Python frames
    (none without them)."""
    if not analysis.trace.python_frames or not analysis.host.families:
        return []
    sums = dict.fromkeys([o for o, _ in OWNERS] + ["other code"], 0)
    for f in analysis.host.families:
        top = f.name.split(".", 1)[0]
        owner = next((o for o, pkg in OWNERS if top == pkg), "other code")
        sums[owner] += f.ns_per_call
    return [(o, ns) for o, ns in sums.items() if ns or o != "other code"]


def amortized_words(base: dict[str, Any]) -> str:
    """Why 'amortized submit' and 'full API p50' differ, in words, with this run's figures
    (the ``capture-amortized`` claim's text; empty without both figures)."""
    from traceview.report.measured_lines import amortized_claim

    claim = amortized_claim(base)
    return "" if claim is None else claim.text


def _perturbation(analysis: Report) -> str:
    """How far the profiled call is from the same thing unprofiled: the profiler's cost
    (the ``capture-perturbation`` claim's text over explain's report of the trace)."""
    from traceview.report.measured_lines import perturbation_claim

    claim = perturbation_claim(analysis.to_dict())
    return "profiled" if claim is None else claim.text
