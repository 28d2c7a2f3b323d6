"""Draw one step of an annotated trace (``explain --annotate``) as a self-contained SVG.

Usage::

    python tools/draw_annotated_step.py ANNOTATED.json.gz OUT.svg [STEP_INDEX]

Reads only the annotated file's raw events: the ``traceview: steps and phases``,
``traceview: critical path`` and ``traceview: device idle`` tracks, and the device's own
kernels/copies as a busy row, over the step's range. Each row is drawn per pixel column
(the label owning most of the column), with the pixel helpers of ``--figure``
(``traceview/render/figure.py``), so the file stays small. The legend gives each
critical-path item's time in the step, summed from the slices' durations.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from xml.sax.saxutils import escape

from traceview.render.call_picture import DEVICE_HEX, HEX
from traceview.render.figure import FONT, _columns, _runs
from traceview.units import fmt_ns

WIDTH, LEFT, RIGHT, ROW_H = 1000, 150, 20, 26
KIND_HEX = {"device": DEVICE_HEX, "queued": "#9e9ac8", "launch_latency": "#fd8d3c"}
PHASE_HEX = {"forward": "#74c476", "backward": "#6baed6", "optimizer": "#fd8d3c",
             "data loading": "#fdd0a2", "other": "#d9d9d9"}
SPARE = ["#8dd3c7", "#bebada", "#fb8072", "#80b1d3", "#b3de69", "#fccde5", "#bc80bd"]


def ns(v) -> int:
    return int(Decimal(str(v)) * 1000)


def main() -> int:
    if len(sys.argv) not in (3, 4):
        print(__doc__)
        return 2
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    data = src.read_bytes()
    doc = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("cat") == "traceview" and e.get("ph") == "M" and e["name"] == "thread_name"}
    track = defaultdict(list)
    for e in events:
        if e.get("cat") == "traceview" and e.get("ph") == "X":
            track[names[(e["pid"], e["tid"])]].append(e)
    steps = sorted((e for e in track["traceview: steps and phases"] if "phase" not in e["args"]),
                   key=lambda e: ns(e["ts"]))
    if not steps:
        print("draw_annotated_step: no steps in this annotated trace")
        return 1
    step = steps[int(sys.argv[3]) if len(sys.argv) == 4 else len(steps) // 2]
    lo, hi = ns(step["ts"]), ns(step["ts"]) + ns(step["dur"])

    def spans(evs, label):
        return [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), label(e)) for e in evs
                if ns(e["ts"]) < hi and ns(e["ts"]) + ns(e["dur"]) > lo]

    path = spans(track["traceview: critical path"],
                 lambda e: e["name"] if e["args"]["kind"] == "host" else e["args"]["kind"])
    rows = [
        ("phases", spans([e for e in track["traceview: steps and phases"] if "phase" in e["args"]],
                         lambda e: e["args"]["phase"])),
        ("critical path", path),
        ("device busy", spans([e for e in events if e.get("cat") in ("kernel", "gpu_memcpy",
                                                                     "gpu_memset")],
                              lambda e: "device")),
        ("device idle", spans(track["traceview: device idle"], lambda e: e["args"]["what"])),
    ]
    colour: dict[str, str] = {**HEX, **KIND_HEX, **PHASE_HEX, "device": DEVICE_HEX}
    spare = iter(SPARE * 10)
    inner = WIDTH - LEFT - RIGHT
    legend_items: dict[str, int] = defaultdict(int)
    for a, b, label in path:
        legend_items[label] += min(b, hi) - max(a, lo)
    for _, sp in rows:
        for *_, label in sp:
            if label not in colour:
                colour[label] = next(spare)
    phase_ns = defaultdict(int)
    for a, b, label in rows[0][1]:
        phase_ns[label] += min(b, hi) - max(a, lo)
    height = 40 + ROW_H * len(rows) + 30 + 18 * ((len(legend_items) + 3) // 4) + 30
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}">',
           f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
           f'<text x="10" y="20" {FONT} font-size="14">{escape(step["name"])}: '
           f'{fmt_ns(hi - lo)} wall; the critical path attributes each ns once '
           f'(from {escape(src.name)})</text>']
    for r, (label, sp) in enumerate(rows):
        y = 34 + r * ROW_H
        svg.append(f'<text x="{LEFT - 8}" y="{y + 16}" {FONT} font-size="12" '
                   f'text-anchor="end">{escape(label)}</text>')
        cols = _columns(sp, lo, hi, inner)
        owner = [max(c, key=lambda k: c[k]) if c else None for c in cols]
        for first, n, who in _runs(owner):
            if who is None:
                continue
            svg.append(f'<rect x="{LEFT + first}" y="{y}" width="{n}" height="{ROW_H - 6}" '
                       f'fill="{colour[who]}"/>')
    y = 34 + len(rows) * ROW_H + 4
    svg.append(f'<text x="{LEFT}" y="{y + 10}" {FONT} font-size="11">0</text>')
    svg.append(f'<text x="{WIDTH - RIGHT}" y="{y + 10}" {FONT} font-size="11" '
               f'text-anchor="end">{fmt_ns(hi - lo)}</text>')
    y += 26
    for i, (label, t) in enumerate(sorted(legend_items.items(), key=lambda kv: -kv[1])):
        x = 10 + (i % 4) * (WIDTH // 4)
        yy = y + (i // 4) * 18
        svg.append(f'<rect x="{x}" y="{yy - 10}" width="12" height="12" fill="{colour[label]}"/>')
        svg.append(f'<text x="{x + 16}" y="{yy}" {FONT} font-size="11">'
                   f'{escape(label)} {fmt_ns(t)}</text>')
    yy = y + ((len(legend_items) + 3) // 4) * 18 + 6
    x = 10
    svg.append(f'<text x="{x}" y="{yy}" {FONT} font-size="11">phases:</text>')
    x += 52
    for label, t in phase_ns.items():
        svg.append(f'<rect x="{x}" y="{yy - 10}" width="12" height="12" fill="{colour[label]}"/>')
        text = f"{label} {fmt_ns(t)}"
        svg.append(f'<text x="{x + 16}" y="{yy}" {FONT} font-size="11">{escape(text)}</text>')
        x += 16 + int(len(text) * 6.5) + 14
    svg.append("</svg>")
    out.write_text("\n".join(svg) + "\n")
    print(f"draw_annotated_step: {out} ({step['name']}, {len(path)} critical-path slices)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
