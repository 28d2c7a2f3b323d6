"""Terminal output with rich: reads well at 80 columns.

Order follows the questions a user asks: what window is this; where did the time go
(the matrix); is the device busy; what does one call cost; what does a typical call
look like; which kernels and functions; what to be careful about.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from traceview import intervals
from traceview.render._format import METRIC_LABELS, fmt_ns, fmt_share, printable

if TYPE_CHECKING:
    from traceview.explanation import Explanation

CATEGORY_STYLE = {
    "launch": "bold magenta", "sync": "red", "specialize": "yellow", "cache_key": "bright_yellow",
    "launch_metadata": "cyan", "compile": "bold red", "import": "bright_red",
    "dispatch": "blue", "library": "bright_blue", "user": "green", "profiler": "grey50",
    "other": "white", "untraced": "grey35",
}
# One letter per category so the waterfall reads without colour too.
CATEGORY_GLYPH = {
    "launch": "L", "sync": "S", "specialize": "s", "cache_key": "k", "launch_metadata": "m",
    "compile": "C", "import": "I", "dispatch": "d", "library": "b", "user": "u",
    "profiler": "p", "other": "o", "untraced": ".",
}
BAR_WIDTH = 60


def _style(cat: str) -> str:
    return CATEGORY_STYLE.get(cat, "white")


def _header(ex: Explanation) -> RenderableType:
    t = Text()
    t.append("traceview ", style="bold")
    t.append(ex.trace.path + "\n")
    t.append(f"window {fmt_ns(ex.window.dur_ns)}", style="bold")
    t.append(f"  ({ex.window.description})\n")
    lane = ex.timeline.lane
    t.append(f"host {lane.label if lane else 'no thread'}")
    if ex.calls.calls:
        t.append(f" · {ex.calls.description}")
    cap = ex.trace.metadata.get("traceview")
    if isinstance(cap, dict):
        proto = cap.get("protocol", {}) or {}
        shape = "x".join(str(x) for x in cap.get("shape", []) or [])
        t.append(f"\ncapture: {cap.get('op')} · {cap.get('impl')} · {shape} {cap.get('dtype')}"
                 f" · {cap.get('layout', '')} · {proto.get('mode')} · sync {proto.get('sync')}")
        dev = cap.get("device", {}) or {}
        if dev.get("name"):
            t.append(f" · {dev.get('name')}")
    return t


def _matrix(ex: Explanation) -> RenderableType:
    w = ex.window.dur_ns
    table = Table(title="Where the window went (host category x device state)", title_justify="left",
                  show_footer=True, expand=False, pad_edge=False)
    table.add_column("host", footer="total")
    table.add_column("device busy", justify="right", footer=fmt_ns(ex.device.busy_ns))
    table.add_column("device idle", justify="right", footer=fmt_ns(ex.device.idle_ns))
    table.add_column("total", justify="right", footer=fmt_ns(w))
    table.add_column("share", justify="right", footer=fmt_share(w, w))
    by = {}
    for c in ex.cells:
        by.setdefault(c.host, {})[c.device] = c.ns
    rows = sorted(by.items(), key=lambda kv: -(kv[1].get("busy", 0) + kv[1].get("idle", 0)))
    for cat, v in rows:
        total = v.get("busy", 0) + v.get("idle", 0)
        table.add_row(Text(cat, style=_style(cat)), fmt_ns(v.get("busy", 0)),
                      fmt_ns(v.get("idle", 0)), fmt_ns(total), fmt_share(total, w))
    return table


def _device(ex: Explanation) -> RenderableType:
    d = ex.device
    w = ex.window.dur_ns
    t = Text()
    t.append("device ", style="bold")
    t.append(f"busy {fmt_ns(d.busy_ns)} ({fmt_share(d.busy_ns, w)}), idle {fmt_ns(d.idle_ns)} · "
             f"{d.kernel_count} kernels")
    if d.memcpy_count or d.memset_count:
        t.append(f", {d.memcpy_count} copies, {d.memset_count} sets")
    t.append(f" · kernel time summed over streams {fmt_ns(d.kernel_sum_ns)}")
    if d.work_sum_ns > d.busy_ns:
        t.append(f" (streams overlapped: {fmt_ns(d.work_sum_ns - d.busy_ns)} counted once)")
    ln = ex.launches
    t.append(f"\nlaunches {ln.count} ({', '.join(f'{k} {v}' for k, v in ln.by_api.items()) or 'none'})"
             f", {ln.linked} linked to device work")
    if ln.unlinked_work:
        t.append(f", {ln.unlinked_work} device work items with no launch record")
    return t


def _calls(ex: Explanation) -> RenderableType | None:
    c = ex.calls
    if not c.calls:
        return None
    cold = f"; cold: #{', #'.join(map(str, c.cold_indices))} shown apart" if c.cold_indices else ""
    if c.outlier_indices:
        cold += f"; outliers: #{', #'.join(map(str, c.outlier_indices))} left out"
    from traceview.render.percall import unprofiled_short

    table = Table(title=f"Per call: {c.warm_count} warm of {len(c.calls)}{cold}"
                        f"{unprofiled_short(ex)}",
                  title_justify="left", pad_edge=False)
    table.add_column("metric")
    for col in ("p50", "p90", "min", "max"):
        table.add_column(col, justify="right")
    if c.cold_indices:
        table.add_column(f"cold #{c.cold_indices[0]}", justify="right")
    cold_call = c.calls[c.cold_indices[0]] if c.cold_indices else None
    for m, label in METRIC_LABELS.items():
        s = c.stats[m]
        if s.n == 0:
            continue
        row = [label, fmt_ns(s.p50), fmt_ns(s.p90), fmt_ns(s.min), fmt_ns(s.max)]
        if cold_call is not None:
            row.append(fmt_ns(cold_call.metrics.get(m)))
        table.add_row(*row)
    cats = sorted(c.category_stats.items(), key=lambda kv: -(kv[1].p50 or 0))
    for cat, s in cats:
        row = [Text(f"  host: {cat}", style=_style(cat)), fmt_ns(s.p50), fmt_ns(s.p90),
               fmt_ns(s.min), fmt_ns(s.max)]
        if cold_call is not None:
            row.append(fmt_ns(cold_call.categories.get(cat, 0)))
        table.add_row(*row)
    return table


def _waterfall(ex: Explanation) -> RenderableType | None:
    """One typical call (median wall time) as two bars on a shared time axis."""
    warm = ex.calls.warm
    if not warm:
        return None
    p50 = ex.calls.stats["api_ns"].p50
    call = min(warm, key=lambda c: (abs(c.metrics["api_ns"] - (p50 or 0)), c.index))
    lo = call.start_ns
    hi = max(call.end_ns, call.kernel_end_ns or 0)
    span = max(hi - lo, 1)
    tl = ex.timeline
    host = Text()
    dev = Text()
    edges = [lo + span * i // BAR_WIDTH for i in range(BAR_WIDTH + 1)]
    for a, b in zip(edges, edges[1:]):
        b = max(b, a + 1)
        # the category owning most of this cell
        m = (tl.seg_end > a) & (tl.seg_start < b)
        best, best_ns = "untraced", -1
        for cat_code in set(tl.seg_cat[m].tolist()):
            sel = m & (tl.seg_cat == cat_code)
            ns = int((tl.seg_end[sel].clip(None, b) - tl.seg_start[sel].clip(a, None)).sum())
            if ns > best_ns:
                best, best_ns = tl.categories[cat_code], ns
        if a >= call.end_ns:
            host.append(" ")
        else:
            host.append(CATEGORY_GLYPH.get(best, "?"), style=f"reverse {_style(best)}")
        busy = intervals.length(intervals.clip(ex.device.busy, a, b))
        dev.append("K" if busy * 2 >= (b - a) else ("k" if busy else "."),
                   style="reverse bold green" if busy else "grey35")
    legend = Text("  ")
    seen = []
    for cat, ns in sorted(call.categories.items(), key=lambda kv: -kv[1]):
        if ns and cat not in seen:
            seen.append(cat)
            legend.append(CATEGORY_GLYPH.get(cat, "?"), style=f"reverse {_style(cat)}")
            legend.append(f" {cat} {fmt_ns(ns)}  ")
    title = Text(f"Typical call #{call.index} ({call.name}): {fmt_ns(call.metrics['api_ns'])} wall"
                 f", kernel {fmt_ns(call.metrics['kernel_ns'])}", style="bold")
    legend.append("K", style="reverse bold green")
    legend.append(" device busy (k: partly)")
    return Group(title, Text("host   ") + host, Text("device ") + dev,
                 Text(f"       0{' ' * (BAR_WIDTH - 1 - len(fmt_ns(span)))}{fmt_ns(span)}"),
                 legend)


def _kernels(ex: Explanation) -> RenderableType | None:
    ks = ex.device.kernels[: ex.options.top]
    if not ks:
        return None
    table = Table(title="Top kernels (sum over launches)", title_justify="left", pad_edge=False)
    table.add_column("kernel", overflow="ellipsis", max_width=40, no_wrap=True)
    for col in ("count", "sum", "p50", "max"):
        table.add_column(col, justify="right")
    for k in ks:
        # Text, not str: a kernel named like rich markup ('[/]') must print as written
        table.add_row(Text(k.name), str(k.count), fmt_ns(k.sum_ns), fmt_ns(k.stats.p50),
                      fmt_ns(k.stats.max))
    return table


def _functions(ex: Explanation) -> RenderableType | None:
    fs = [f for f in ex.functions if f.self_ns > 0][: ex.options.top]
    if not fs:
        return None
    per = ex.per_call.functions if ex.per_call else {}
    warm = ex.per_call.warm_calls if ex.per_call else 0
    # per call: p50 over the warm calls that contain the function ("in calls")
    table = Table(title="Hot host functions (self time)", title_justify="left", pad_edge=False)
    table.add_column("function", overflow="ellipsis", max_width=22, no_wrap=True)
    table.add_column("category")
    table.add_column("self", justify="right")
    table.add_column("self/call", justify="right")
    table.add_column("incl/call", justify="right")
    table.add_column("in calls", justify="right")
    for f in fs:
        pf = per.get(f.name)
        table.add_row(Text(printable(f.name)), Text(f.category, style=_style(f.category)),
                      fmt_ns(f.self_ns), fmt_ns(pf.self_ns) if pf else "-", fmt_ns(pf.inclusive_ns) if pf else "-",
                      Text(f"{pf.calls_with}/{warm}" if pf else f"0/{warm}",
                           style="yellow" if pf is None or pf.few_calls else ""))
    return table


VERDICTS = ("host-bound", "device-bound")
SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _verdict(ex: Explanation) -> RenderableType | None:
    for f in ex.findings:
        if f.id in VERDICTS:
            return Text(f.message, style="bold")
    return None


def _baseline(ex: Explanation) -> RenderableType | None:
    cap = ex.trace.metadata.get("traceview")
    base = cap.get("baseline") if isinstance(cap, dict) else None
    if not isinstance(base, dict):
        return None
    t = Text("unprofiled baseline (same run): ", style="bold")
    t.append(f"full API p50 {fmt_ns(base.get('full_api_ns_p50'))} (synchronized each call)"
             f" · amortized submit {fmt_ns(base.get('amortized_submit_ns'))}"
             f" · device {fmt_ns(base.get('device_ns'))} per op")
    return t


def _notes(ex: Explanation) -> RenderableType | None:
    rows = [(f.severity, f.id, f.message) for f in ex.findings if f.id not in VERDICTS]
    rows += [(g.severity, f"input:{g.code}", f"{g.count} x {g.message}")
             for g in ex.trace.diagnostics]
    if not rows:
        return None
    table = Table(title="Findings", title_justify="left", show_header=False, box=None,
                  pad_edge=False)
    table.add_column("severity", no_wrap=True)
    table.add_column("finding", ratio=1)
    for sev, fid, msg in rows:
        table.add_row(Text(sev, style=SEVERITY_STYLE.get(sev, "")),
                      Text.assemble((fid, "bold"), ": ", msg))
    return table


def render_console(ex: Explanation, console: Console) -> None:
    from traceview.render.percall import console_sections

    parts = [_header(ex), _verdict(ex), _baseline(ex), _matrix(ex), _device(ex), _calls(ex),
             *console_sections(ex), _waterfall(ex), _kernels(ex), _functions(ex), _notes(ex)]
    for p in parts:
        if p is not None:
            console.print(p)
            console.print()
