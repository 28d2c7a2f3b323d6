"""An SVG picture of one typical call: host categories on one row, device work on another.

Self-contained SVG (no scripts, no external fonts), so it renders the same in a browser,
in an image viewer and when attached next to a markdown report (``--figure``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

from traceview.atomic import write_text_atomic
from traceview.units import fmt_ns

if TYPE_CHECKING:
    from traceview.report.explanation import Explanation

# Hex colours per category (the console uses named terminal colours for the same ids).
COLOURS = {
    "launch": "#b0359e", "sync": "#d62728", "specialize": "#e0b000", "cache_key": "#f2d64b",
    "launch_metadata": "#17becf", "compile": "#8c1c13", "import": "#ff7f50",
    "dispatch": "#1f77b4", "library": "#6baed6", "user": "#2ca02c", "profiler": "#7f7f7f",
    "other": "#c7c7c7", "untraced": "#e6e6e6",
}
WIDTH, LEFT, RIGHT = 900, 70, 20
ROW_H = 28


def typical_call(ex: Explanation):
    warm = ex.calls.warm
    if not warm:
        return None
    p50 = ex.calls.stats["api_ns"].p50 or 0
    return min(warm, key=lambda c: (abs(c.metrics["api_ns"] - p50), c.index))


def render_svg(ex: Explanation) -> str:
    call = typical_call(ex)
    if call is None:
        lo, hi, title = ex.window.start_ns, ex.window.end_ns, "Window"
    else:
        lo, hi = call.start_ns, max(call.end_ns, call.kernel_end_ns or 0)
        title = (f"Typical call #{call.index} ({escape(call.name)}): {fmt_ns(call.metrics['api_ns'])} "
                 f"wall, kernel {fmt_ns(call.metrics['kernel_ns'])}")
    span = max(hi - lo, 1)
    inner = WIDTH - LEFT - RIGHT

    def x(t: int) -> float:
        return LEFT + inner * (min(max(t, lo), hi) - lo) / span

    tl = ex.timeline
    parts = [f'<text x="{LEFT}" y="18" font-size="14" font-family="sans-serif">{title}</text>',
             f'<text x="8" y="{40 + ROW_H * 0.65:.0f}" font-size="12" font-family="sans-serif">host</text>',
             f'<text x="8" y="{48 + ROW_H * 1.65:.0f}" font-size="12" font-family="sans-serif">device</text>']
    m = (tl.seg_end > lo) & (tl.seg_start < hi)
    used: dict[str, int] = {}
    for s, e, c in zip(tl.seg_start[m].tolist(), tl.seg_end[m].tolist(), tl.seg_cat[m].tolist()):
        cat = tl.categories[c]
        used[cat] = used.get(cat, 0) + min(e, hi) - max(s, lo)
        x0, x1 = x(s), x(e)
        parts.append(f'<rect x="{x0:.2f}" y="40" width="{max(x1 - x0, 0.5):.2f}" height="{ROW_H}" '
                     f'fill="{COLOURS.get(cat, "#999999")}"><title>{escape(cat)} {fmt_ns(e - s)}</title></rect>')
    bs, be = ex.device.busy
    dm = (be > lo) & (bs < hi)
    for s, e in zip(bs[dm].tolist(), be[dm].tolist()):
        x0, x1 = x(s), x(e)
        parts.append(f'<rect x="{x0:.2f}" y="{48 + ROW_H}" width="{max(x1 - x0, 1.0):.2f}" '
                     f'height="{ROW_H}" fill="#2ca02c"><title>device busy {fmt_ns(e - s)}</title></rect>')
    axis_y = 56 + 2 * ROW_H
    parts.append(f'<line x1="{LEFT}" y1="{axis_y}" x2="{WIDTH - RIGHT}" y2="{axis_y}" stroke="#333"/>')
    for i in range(5):
        t = lo + span * i // 4
        parts.append(f'<text x="{x(t):.1f}" y="{axis_y + 14}" font-size="11" text-anchor="middle" '
                     f'font-family="sans-serif">{fmt_ns(t - lo)}</text>')
    lx, ly = LEFT, axis_y + 34
    for cat, ns in sorted(used.items(), key=lambda kv: -kv[1]):
        label = f"{cat} {fmt_ns(ns)}"
        parts.append(f'<rect x="{lx}" y="{ly - 10}" width="10" height="10" fill="{COLOURS.get(cat, "#999")}"/>'
                     f'<text x="{lx + 14}" y="{ly}" font-size="11" font-family="sans-serif">{escape(label)}</text>')
        lx += 24 + 7 * len(label)
        if lx > WIDTH - 150:
            lx, ly = LEFT, ly + 16
    height = ly + 14
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}"><rect width="100%" height="100%" fill="white"/>'
            + "".join(parts) + "</svg>\n")


def write_figure(ex: Explanation, path: Path) -> None:
    write_text_atomic(Path(path), render_svg(ex))
