"""Terminal output with rich: reads well at 80 columns.

Order follows the questions a user asks: what window is this; where did the time go
(the matrix); is the device busy; what does one call cost; what does a typical call
look like; which kernels and functions; what to be careful about.
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from traceview.metadata import ProtocolMeta
from traceview.render.call_picture import DEVICE_TERMINAL, TERMINAL, busy_words, legend
from traceview.render.labels import display_pattern, shown_metrics
from traceview.render.names import KERNEL_NAMES_NOTE, kernel_labels, short_kernel
from traceview.render.text import laid_out, name_text
from traceview.report.integrity_claims import (
    TITLE_INTEGRITY,
    TITLE_WHAT_IF,
    integrity_lines,
    what_if_lines,
)
from traceview.report.model import VERDICT_IDS
from traceview.report.sentences import (
    BASELINE,
    baseline_words,
    bytes_words,
    calls_title_words,
    device_rows_words,
    device_words,
    launches_words,
    result_words,
    typical_call_words,
    window_words,
)
from traceview.units import fmt_ns, fmt_share, plural, printable

if TYPE_CHECKING:
    from traceview.report.model import Report

CATEGORY_STYLE = TERMINAL  # one table with the SVG's (render/call_picture.py)
# One letter per category so the waterfall reads without colour too.
CATEGORY_GLYPH = {
    "launch": "L", "sync": "S", "specialize": "s", "cache_key": "k", "launch_metadata": "m",
    "compile": "C", "import": "I", "dispatch": "d", "library": "b", "user": "u",
    "profiler": "p", "other": "o", "untraced": ".",
}
BAR_WIDTH = 60


def _style(cat: str) -> str:
    return CATEGORY_STYLE.get(cat, "white")


def _header(r: Report) -> RenderableType:
    t = Text()
    t.append("traceview ", style="bold")
    t.append(r.trace.path + "\n")
    head, _, rest = window_words(r).partition(" (")
    t.append(head, style="bold")
    t.append(f" ({rest}\n")
    thread = r.host.thread
    t.append(f"host {thread.label if thread else 'no thread'}")
    c = r.calls
    if c.per_call:
        t.append(f" · {c.description}" if c.description else
                 f" · {plural(c.count, 'call')} from {c.source}"
                 + (f" '{display_pattern(c.pattern)}'" if c.pattern else ""))
    cap = r.capture_meta
    if cap is not None:
        proto = cap.protocol or ProtocolMeta()
        shape = "x".join(str(x) for x in cap.shape or [])
        t.append(f"\ncapture: {cap.op} · {cap.impl} · {shape} {cap.dtype}"
                 f" · {cap.layout or ''} · {proto.mode} · sync {proto.sync}")
        dev = cap.device or {}
        if dev.get("name"):
            t.append(f" · {dev.get('name')}")
    return t


def _matrix(r: Report) -> RenderableType:
    w = r.window.dur_ns
    title = "Where the window went (host category x device state)"
    from traceview.render.training import working_threads

    if working_threads(r) > 1 and r.host.thread is not None:
        title += f"; host: {r.host.thread.label} alone"
    table = Table(title=Text(title), title_justify="left",
                  show_footer=True, expand=False, pad_edge=False)
    table.add_column("host", footer="total", no_wrap=True)
    table.add_column("device busy", justify="right", footer=fmt_ns(r.device.busy_ns))
    table.add_column("device idle", justify="right", footer=fmt_ns(r.device.idle_ns))
    table.add_column("total", justify="right", footer=fmt_ns(w))
    table.add_column("share", justify="right", footer=fmt_share(w, w))
    for row in r.matrix():
        table.add_row(Text(row.host, style=_style(row.host)), fmt_ns(row.busy_ns),
                      fmt_ns(row.idle_ns), fmt_ns(row.total_ns), fmt_share(row.total_ns, w))
    return table


def _device(r: Report) -> RenderableType:
    t = Text()
    line = device_words(r)
    head, _, rest = line.partition(" ")
    t.append(head + " ", style="bold")
    t.append(rest)
    moved = bytes_words(r)
    if moved:
        t.append("\n" + moved)
    # per device where there are several, per stream where streams overlap or there
    # are several (every stream with work is named)
    for row in device_rows_words(r):
        t.append("\n  " + row)
    t.append("\n" + launches_words(r))
    return t


def _calls(r: Report) -> RenderableType | None:
    c = r.calls
    if not c.per_call:
        return None
    from traceview.render.percall import unprofiled_short
    from traceview.render.training import working_threads

    scope = ""
    if working_threads(r) > 1 and r.host.thread is not None:
        # ranks fused into one file: the device rows are the call's own process's
        fused = next((f for f in r.findings if f.id == "several-processes"), None)
        of = "" if fused is None else f" of process {fused.evidence.get('process')}"
        scope = (f" (host rows: {r.host.thread.label}; device rows: work launched in the call "
                 f"by any thread{of})")
    table = Table(title=Text(f"{calls_title_words(r)}{unprofiled_short(r)}{scope}"),
                  title_justify="left", pad_edge=False)
    table.add_column("metric")
    for col in ("p50", "p90", "min", "max"):
        table.add_column(col, justify="right")
    if c.cold:
        table.add_column(f"cold #{c.cold[0]}", justify="right")
    cold_call = c.per_call[c.cold[0]] if c.cold else None
    for m, label in shown_metrics(copies=c.has_copies, device=r.device.busy_ns > 0).items():
        s = c.stats.get(m)
        if s is None or s.n == 0:
            continue
        row: list[str | Text] = [label, fmt_ns(s.p50), fmt_ns(s.p90), fmt_ns(s.min),
                                 fmt_ns(s.max)]
        if cold_call is not None:
            row.append(fmt_ns(cold_call.metrics.get(m)))
        table.add_row(*row)
    cats = sorted(c.categories.items(), key=lambda kv: -(kv[1].p50 or 0))
    for cat, s in cats:
        # each category's own median over the calls: not parts of the row above (the
        # medians of parts need not add up to the median of the whole)
        row = [Text(f"host: {cat} (own p50)", style=_style(cat)), fmt_ns(s.p50), fmt_ns(s.p90),
               fmt_ns(s.min), fmt_ns(s.max)]
        if cold_call is not None:
            row.append(fmt_ns(cold_call.categories.get(cat, 0)))
        table.add_row(*row)
    return table


def _results(r: Report) -> RenderableType | None:
    """The reproducer template's results under the per-call table: the figures a
    markdown report's readers quote, worded once (``report.sentences.result_claims``)."""
    said = result_words(r)
    if not said:
        return None
    return Text("\n".join(said.values()))


def _legend_lines(items: list[Text], width: int) -> list[Text]:
    """Legend items laid out in lines no wider than ``width``, never broken inside one."""
    lines: list[Text] = []
    cur = Text("  ")
    for item in items:
        if cur.cell_len > 2 and cur.cell_len + 2 + item.cell_len > width:
            lines.append(cur)
            cur = Text("  ")
        if cur.cell_len > 2:
            cur.append("  ")
        cur.append_text(item)
    lines.append(cur)
    return lines


# The device row: a cell's glyph is as tall as the share of its time the device was busy,
# in eighths rounded up (any busy ns shows, "." is idle). A letter per busy cell ("K", "k")
# marked 54 of 60 cells for a step whose device was 10% busy: many short kernels touch
# most cells, and the row read as busy beside "idle 90%".
DEVICE_LEVELS = ".▁▂▃▄▅▆▇█"


def device_level(busy_ns: int, cell_ns: int) -> int:
    """0 (idle) to 8 (busy throughout): ``busy_ns`` of ``cell_ns`` in eighths, rounded up."""
    if busy_ns <= 0:
        return 0
    return min(8, -(-8 * busy_ns // max(cell_ns, 1)))


def _waterfall(r: Report, width: int) -> RenderableType | None:
    """The typical call (its kind's median wall time) as two bars on a shared time axis."""
    t = r.typical_call
    call = r.typical
    if t is None or call is None:
        return None
    bar = max(10, min(BAR_WIDTH, width - 8))
    lo, hi = t.start_ns, t.axis_end_ns
    span = max(hi - lo, 1)
    # a training step runs on several threads: one row each, on the same axis
    lanes = [("host", t.host)]
    if t.threads and r.host.thread is not None:
        lanes = [(r.host.thread.label, t.host)] + [(ln.label, ln.host) for ln in t.threads]
    rows = [Text() for _ in lanes]
    dev = Text()
    edges = [lo + span * i // bar for i in range(bar + 1)]
    for a, b in pairwise(edges):
        b = max(b, a + 1)
        for row, (_, segs) in zip(rows, lanes, strict=True):
            owned: dict[str, int] = {}  # the category owning most of this cell
            for seg in segs:
                if seg.end_ns > a and seg.start_ns < b:
                    owned[seg.category] = (owned.get(seg.category, 0) + min(seg.end_ns, b)
                                           - max(seg.start_ns, a))
            best = max(owned, key=lambda k: (owned[k], k)) if owned else "untraced"
            if a >= t.end_ns:
                row.append(" ")
            else:
                row.append(CATEGORY_GLYPH.get(best, "?"), style=f"reverse {_style(best)}")
        busy = sum(max(0, min(e, b) - max(s, a)) for s, e in t.device_busy)
        level = device_level(busy, b - a)
        dev.append(DEVICE_LEVELS[level], style=DEVICE_TERMINAL if level else "grey35")
    items = [Text.assemble((CATEGORY_GLYPH.get(cat, "?"), f"reverse {_style(cat)}"),
                           f" {cat} {fmt_ns(ns)}") for cat, ns in legend(r)]
    items.append(Text.assemble((DEVICE_LEVELS[-1], DEVICE_TERMINAL),
                               f" {busy_words(t)} (a cell's height: its busy share)"))
    title = Text(typical_call_words(r) or "", style="bold")
    end = fmt_ns(span)
    axis = Text(f"       0{' ' * max(1, bar - 1 - len(end))}{end}")
    heads = ["host   "] if len(lanes) == 1 else [f"{_short(label):<6} " for label, _ in lanes]
    key = [] if len(lanes) == 1 else [Text("  rows: " + "; ".join(
        f"{_short(label)} = {label}" for label, _ in lanes) + "; figures: the first row's")]
    return Group(title, *(Text(h) + row for h, row in zip(heads, rows, strict=True)),
                 Text("device ") + dev, axis, *_legend_lines(items, width), *key)


def _short(label: str) -> str:
    """A thread's row head: ``main``, ``pt_aut`` (six characters; the key gives the rest)."""
    name = label.split(" [")[0].removesuffix(" thread")
    return name[:6]


def _kernels(r: Report, top: int) -> RenderableType | None:
    ks = r.device.kernels[:top]
    if not ks:
        return None
    table = Table(title=f"Top kernels (sum over launches; {KERNEL_NAMES_NOTE})",
                  title_justify="left", pad_edge=False)
    table.add_column("kernel", overflow="fold", ratio=1)
    for col in ("count", "sum", "p50", "max"):
        table.add_column(col, justify="right", no_wrap=True)
    labels = kernel_labels([k.name for k in r.device.kernels])
    for k in ks:
        # Text, not str: a kernel named like rich markup ('[/]') must print as written
        table.add_row(name_text(labels[k.name]), str(k.count), fmt_ns(k.sum_ns),
                      fmt_ns(k.stats.p50), fmt_ns(k.stats.max))
    return table


def _functions(r: Report, top: int) -> RenderableType | None:
    fs = [f for f in r.host.functions if f.self_ns > 0][:top]
    if not fs:
        return None
    warm = r.calls.tree_warm_calls
    # per call: p50 over the warm calls that contain the function ("in calls")
    table = Table(title="Hot host functions (self time)", title_justify="left", pad_edge=False)
    table.add_column("function", overflow="fold", ratio=1)
    table.add_column("category", no_wrap=True)
    table.add_column("self", justify="right", no_wrap=True)
    table.add_column("self/call", justify="right", no_wrap=True)
    table.add_column("incl/call", justify="right", no_wrap=True)
    table.add_column("in calls", justify="right", no_wrap=True)
    for f in fs:
        per = f.inclusive_ns_per_call is not None
        name = short_kernel(f.name) if f.category == "launch" else printable(f.name)
        table.add_row(name_text(name), Text(f.category, style=_style(f.category)),
                      fmt_ns(f.self_ns), fmt_ns(f.self_ns_per_call) if per else "-",
                      fmt_ns(f.inclusive_ns_per_call) if per else "-",
                      Text(f"{f.calls_with}/{warm}",
                           style="yellow" if not per or f.few_calls else ""))
    return table

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _verdict(r: Report) -> RenderableType | None:
    v = r.verdict
    return None if v is None else Text(v.message, style="bold")


def _baseline(r: Report) -> RenderableType | None:
    line = baseline_words(r)
    if line is None:
        return None
    # one unprofiled call figure per report: the line says when it is a second measurement
    t = Text(BASELINE, style="bold")
    t.append(line[len(BASELINE):])
    return t


def _notes(r: Report) -> RenderableType | None:
    rows = [(f.severity, f.id, f.message) for f in r.findings if f.id not in VERDICT_IDS]
    rows += [(g.severity, f"input:{g.code}", f"{g.count} x {g.message}")
             for g in r.diagnostics]
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


def _claims(title: str, lines: list[str]) -> RenderableType | None:
    """A titled list of sentences (``report.integrity_claims``)."""
    if not lines:
        return None
    table = Table(title=title, title_justify="left", show_header=False, box=None,
                  pad_edge=False)
    table.add_column("claim", ratio=1)
    for line in lines:
        table.add_row(Text("- " + line))
    return table


def renderables(r: Report, width: int, top: int = 10) -> list[RenderableType]:
    """The terminal report's parts, in reading order, for a console ``width`` wide."""
    from traceview.render.percall import console_sections, unprofiled_console
    from traceview.render.training import headline, step_sections, threads_table

    step_line = headline(r)
    parts = [_header(r), _verdict(r), Text(step_line, style="bold") if step_line else None,
             _baseline(r), unprofiled_console(r), *step_sections(r), threads_table(r), _matrix(r), _device(r),
             _calls(r), _results(r), *console_sections(r), _waterfall(r, width), _kernels(r, top),
             _functions(r, top), _notes(r),
             _claims(TITLE_INTEGRITY, integrity_lines(r)), _claims(TITLE_WHAT_IF, what_if_lines(r))]
    return [p for p in parts if p is not None]


@laid_out
def render_console(r: Report, console: Console, top: int = 10) -> None:
    for p in renderables(r, console.width, top):
        console.print(p)
        console.print()
