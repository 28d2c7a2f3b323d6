"""An SVG picture of one typical call: host categories on one row, device work on another.

Self-contained SVG (no scripts, no external fonts), so it renders the same in a browser,
in an image viewer and when attached to an issue (``--figure``; ``.png`` too, through the
optional ``cairosvg``). The axis is the typical call's own range; device work that goes
on after the call is said in words, not drawn on a longer axis. Each row is drawn per
pixel column (the category owning most of the column; the share of the column the
device is busy), with neighbouring equal columns merged, so the file stays small (a few
KB) whatever the trace. The legend's figures are the text's (``call_picture.legend``:
each category's time in the call, the device's busy time in it), not totals measured off
the pixels, and it says that a pixel shows the category owning most of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar
from xml.sax.saxutils import escape

from traceview.errors import UsageError
from traceview.render.call_picture import (
    DEVICE_HEX,
    HEX,
    busy_after_call,
    busy_in_call,
    busy_words,
    legend,
)
from traceview.render.labels import unit
from traceview.report.sentences import typical_call_words
from traceview.units import fmt_ns

if TYPE_CHECKING:
    from traceview.report.model import Report

# Colours from the one table (call_picture): every category's distinct, and the device's.
COLOURS = HEX
BUSY = DEVICE_HEX
WIDTH, LEFT, RIGHT = 900, 70, 20
ROW_H = 28
CHAR_W = 7.2  # average glyph width of 14px sans-serif, for fitting the title
FONT = 'font-family="sans-serif"'


def _fit(text: str, px: float, char_w: float = CHAR_W) -> str:
    n = int(px / char_w)
    return text if len(text) <= n else text[: max(n - 1, 1)] + "…"


def _columns(spans: list[tuple[int, int, str]], lo: int, hi: int, n: int) -> list[dict[str, int]]:
    """ns of each label inside each of ``n`` equal pixel columns of [lo, hi)."""
    cols: list[dict[str, int]] = [{} for _ in range(n)]
    span = max(hi - lo, 1)
    for s, e, label in spans:
        s, e = max(s, lo), min(e, hi)
        if e <= s:
            continue
        first = (s - lo) * n // span
        last = min((e - 1 - lo) * n // span, n - 1)
        for i in range(first, last + 1):
            a = lo + span * i // n
            b = lo + span * (i + 1) // n
            ov = min(e, b) - max(s, a)
            if ov > 0:
                cols[i][label] = cols[i].get(label, 0) + ov
    return cols


_V = TypeVar("_V")


def _runs(values: list[_V]) -> list[tuple[int, int, _V]]:
    """Run-length encoding: (first column, column count, value)."""
    out: list[tuple[int, int, _V]] = []
    for i, v in enumerate(values):
        if out and out[-1][2] == v:
            out[-1] = (out[-1][0], out[-1][1] + 1, v)
        else:
            out.append((i, 1, v))
    return out


def _host_rows(rows: list[tuple[str, list[tuple[int, int, str]]]], lo: int, hi: int,
               inner: int, dev_y: int) -> list[str]:
    """The row heads (each thread's, then the device's) and each host row's bars."""
    pitch = ROW_H + 8
    parts = []
    for k, (label, _) in enumerate(rows):
        name = label.split(" [")[0].removesuffix(" thread")
        hover = f"<title>{escape(label)}</title>" if len(rows) > 1 else ""
        parts.append(f'<text x="8" y="{40 + pitch * k + ROW_H * 0.65:.0f}" font-size="12" '
                     f'{FONT}>{hover}{escape(_fit(name, LEFT - 10, 6.6))}</text>')
    parts.append(f'<text x="8" y="{dev_y + ROW_H * 0.65:.0f}" font-size="12" {FONT}>device</text>')
    for k, (_, spans) in enumerate(rows):
        y = 40 + pitch * k
        hcols = _columns(spans, lo, hi, inner)
        owner = [max(c, key=lambda k: (c[k], k)) if c else None for c in hcols]
        for first, count, top in _runs(owner):
            if top is None:
                continue
            ns = sum(hcols[i].get(top, 0) for i in range(first, first + count))
            parts.append(f'<rect x="{LEFT + first}" y="{y}" width="{count}" height="{ROW_H}" '
                         f'fill="{COLOURS.get(str(top), "#999999")}"><title>{escape(str(top))} '
                         f'{fmt_ns(ns)}</title></rect>')
    return parts


def render_svg(r: Report) -> str:
    inner = WIDTH - LEFT - RIGHT
    t, call = r.typical_call, r.typical
    if t is None or call is None:
        # no calls: the window's host categories stacked by total, device busy share
        lo, hi = 0, max(r.window.dur_ns, 1)
        title = f"Window {fmt_ns(r.window.dur_ns)}: host categories by total time, device busy share"
        host, x = [], 0
        for cat, ns in sorted(r.host.categories.items(), key=lambda kv: -kv[1]):
            if ns:
                host.append((x, x + ns, cat))
                x += ns
        busy = [(0, r.device.busy_ns)] if r.device.busy_ns else []
        note = "stacked totals, not a timeline"
    else:
        lo, hi = t.start_ns, t.end_ns
        title = typical_call_words(r) or ""
        host = [(s.start_ns, s.end_ns, s.category) for s in t.host]
        busy = list(t.device_busy)
        note = (f"device work goes on {fmt_ns(t.axis_end_ns - t.end_ns)} after the call ends"
                if t.axis_end_ns > t.end_ns else "")
    # one row per host thread: a training step runs on several at once (the autograd
    # engine's backward, a data loader), each drawn on the same axis
    rows: list[tuple[str, list[tuple[int, int, str]]]] = [("host", host)]
    if t is not None and t.threads:
        own = r.host.thread.label if r.host.thread is not None else "host"
        rows = [(own, host)] + [(ln.label, [(g.start_ns, g.end_ns, g.category) for g in ln.host])
                                for ln in t.threads]
    dev_y = 40 + (ROW_H + 8) * len(rows)
    dcols = _columns([(s, e, "busy") for s, e in busy], lo, hi, inner)
    span = max(hi - lo, 1)
    col_ns = [span * (i + 1) // inner - span * i // inner for i in range(inner)]
    # busy share of each column, in quarters (0 = idle, 4 = busy throughout)
    level = [min(4, round(4 * c.get("busy", 0) / max(col_ns[i], 1))) if c.get("busy") else 0
             for i, c in enumerate(dcols)]
    level = [max(lv, 1) if dcols[i] else lv for i, lv in enumerate(level)]

    parts = [f'<text x="{LEFT}" y="18" font-size="14" {FONT}>'
             f'{escape(_fit(title, WIDTH - LEFT - RIGHT))}</text>',
             *_host_rows(rows, lo, hi, inner, dev_y)]
    for first, count, lv in _runs(level):
        if not lv:
            continue
        ns = sum(dcols[i].get("busy", 0) for i in range(first, first + count))
        parts.append(f'<rect x="{LEFT + first}" y="{dev_y}" width="{count}" '
                     f'height="{ROW_H}" fill="{BUSY}" fill-opacity="{int(lv) / 4:g}">'
                     f'<title>device busy {fmt_ns(ns)}</title></rect>')
    axis_y = dev_y + ROW_H + 8
    parts.append(f'<line x1="{LEFT}" y1="{axis_y}" x2="{WIDTH - RIGHT}" y2="{axis_y}" stroke="#333"/>')
    for i in range(5):
        tick = span * i // 4
        parts.append(f'<text x="{LEFT + inner * i / 4:.1f}" y="{axis_y + 14}" font-size="11" '
                     f'text-anchor="middle" {FONT}>{fmt_ns(tick)}</text>')
    ly = axis_y + 34
    if note:
        parts.append(f'<text x="{LEFT}" y="{ly}" font-size="11" {FONT}>{escape(note)}</text>')
        ly += 18
    items = [(COLOURS.get(c, "#999999"), f"{c} {fmt_ns(ns)}") for c, ns in legend(r)]
    busy_ns = busy_in_call(t) + busy_after_call(t) if t is not None else r.device.busy_ns
    if busy_ns:
        words = busy_words(t) if t is not None else f"device busy {fmt_ns(busy_ns)}"
        items.append((BUSY, f"{words} (paler: part of a pixel)"))
    parts.append(f'<text x="{LEFT}" y="{ly}" font-size="11" {FONT}>'
                 + escape("each pixel column shows the host category owning most of it; "
                          f"figures: the {unit(r)}'s own"
                          + (f" on {rows[0][0]}" if len(rows) > 1 else "")) + "</text>")
    ly += 18
    lx: float = LEFT
    for colour, label in items:
        w = 24 + 6.2 * len(label)
        if lx > LEFT and lx + w > WIDTH - RIGHT:
            lx, ly = LEFT, ly + 16
        parts.append(f'<rect x="{lx:.0f}" y="{ly - 10}" width="10" height="10" fill="{colour}"/>'
                     f'<text x="{lx + 14:.0f}" y="{ly}" font-size="11" {FONT}>{escape(label)}</text>')
        lx += w
    height = ly + 14
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}"><rect width="100%" height="100%" fill="white"/>'
            + "".join(parts) + "</svg>\n")


def render_png(r: Report, scale: float = 2.0) -> bytes:
    """The SVG rasterised by cairosvg (``pip install 'traceview[png]'``)."""
    try:
        import cairosvg
    except (ImportError, OSError) as exc:
        raise UsageError("a .png figure needs cairosvg (pip install 'traceview[png]'): "
                         f"{type(exc).__name__}: {exc}; write an .svg instead") from None
    return cairosvg.svg2png(bytestring=render_svg(r).encode(), scale=scale)

