"""The SVG figure, the Mermaid chart and the terminal waterfall draw the typical call from
one set of numbers (``render/call_picture.py``): the legends carry the same figures as the
text, every category and the device have distinct colours, and a chart that cannot draw
every piece says what it left out or merged."""

from __future__ import annotations

import re

import pytest

import traceview
from conftest import FIXTURES
from traceview.render import call_picture
from traceview.render.registry import RenderOptions, renderer
from traceview.units import fmt_ns

CASES = ("flag_gems_add_16x4096_bf16", "triton_add_16x4096_bcast", "shape_model_schedule",
         "two_streams_8192x8192_f16", "torch_mul_8192x8192_f16_syncend")
CATEGORY_FIGURE = re.compile(r"\b([a-z_]+(?: busy)?) (\d+(?:\.\d+)? (?:ns|us|ms|s))\b")


AFTER = re.compile(r"(device busy) (\d+(?:\.\d+)? (?:ns|us|ms|s)) in the call, "
                   r"(\d+(?:\.\d+)? (?:ns|us|ms|s)) after it")


def _busy_after(item: str, out: dict[str, str]) -> bool:
    """``device busy 1 us in the call, 22 us after it``: both figures of the device row."""
    m = AFTER.fullmatch(item)
    if m:
        out[m.group(1)] = m.group(2)
        out["device busy after"] = m.group(3)
    return bool(m)


def _svg_legend(svg: str) -> dict[str, str]:
    texts = re.findall(r"<text [^>]*>([^<]*)</text>", svg)
    out: dict[str, str] = {}
    for t in texts:
        head = t.split(" (")[0]
        if not _busy_after(head, out) and (m := CATEGORY_FIGURE.fullmatch(head)):
            out[m.group(1)] = m.group(2)
    return out


def _text_legend(text: str) -> dict[str, str]:
    """The waterfall's legend lines (after the axis line) in the terminal report."""
    lines = re.split(r"Typical (?:call|step) #", text)[1].splitlines()
    lines = lines[next(i for i, ln in enumerate(lines) if ln.startswith("       0")) + 1:]
    out = {}
    for ln in lines:
        if not ln.startswith("  "):
            break
        for glyph_and_item in re.split(r"  (?=\S )", ln.strip()):
            if _busy_after(glyph_and_item.strip()[2:].removesuffix(" (a cell's height: its busy share)"), out):
                continue
            m = re.fullmatch(r"\S (.+?) (\d+(?:\.\d+)? (?:ns|us|ms|s))(?: \(a cell's height: its busy share\))?",
                             glyph_and_item.strip())
            if m:
                out[m.group(1)] = m.group(2)
    return out


@pytest.mark.parametrize("name", CASES)
def test_the_svg_legend_gives_the_texts_figures(name):
    r = traceview.analyze(FIXTURES / f"{name}.json.gz")
    svg = renderer("svg").render(r, RenderOptions())
    text = renderer("text").render(r, RenderOptions(width=200))
    in_svg, in_text = _svg_legend(svg), _text_legend(text)
    assert in_text and in_svg == in_text
    # and both are the call's own figures: its categories, and the busy time inside it,
    # summed here from the typical call's host segments and device intervals
    t = r.typical_call
    per_cat: dict[str, int] = {}
    for s in t.host:
        per_cat[s.category] = per_cat.get(s.category, 0) + s.end_ns - s.start_ns
    busy = sum(max(0, min(e, t.end_ns) - max(s, t.start_ns)) for s, e in t.device_busy)
    assert in_text.pop("device busy") == fmt_ns(busy)
    # the device row draws the work after the call too: the legend gives that part
    after = sum(max(0, min(e, t.axis_end_ns) - max(s, t.end_ns)) for s, e in t.device_busy)
    assert in_text.pop("device busy after", fmt_ns(0)) == fmt_ns(after)
    assert in_text == {c: fmt_ns(ns) for c, ns in per_cat.items() if ns}


def test_every_category_and_the_device_have_their_own_colour():
    hexes = [*call_picture.HEX.values(), call_picture.DEVICE_HEX]
    assert len(set(hexes)) == len(hexes)
    styles = [*call_picture.TERMINAL.values(), call_picture.DEVICE_TERMINAL]
    assert len(set(styles)) == len(styles)
    assert call_picture.HEX["user"] != call_picture.DEVICE_HEX
    from traceview.render import figure

    r = traceview.analyze(FIXTURES / "triton_add_16x4096_bcast.json.gz")
    svg = renderer("svg").render(r, RenderOptions())
    assert figure.BUSY == call_picture.DEVICE_HEX and f'fill="{figure.BUSY}"' in svg


def _gantt_lanes(md: str) -> tuple[list[str], list[str], str]:
    block = md.split("```mermaid")[1].split("```")[0]
    host = block.split("section host")[1].split("section device")[0].strip().splitlines()
    device = block.split("section device")[1].strip().splitlines()
    note = md.split("```mermaid")[1].split("```", 1)[1].split("\n\n")[1]
    return host, device, note


def test_the_mermaid_chart_says_what_it_leaves_out_and_spans_all_device_work():
    r = traceview.analyze(FIXTURES / "inductor_mul_1x4096_f32.cold.json.gz")
    t = r.typical_call
    assert len(t.device_busy) > 40 and len(t.host) > 40
    host, device, note = _gantt_lanes(renderer("md").render(r, RenderOptions()))
    assert len(host) == 40 and len(device) == 40
    assert f"the 40 longest of {len(t.host)} segments drawn (+{len(t.host) - 40} more segments" in note
    assert f"{len(t.device_busy)} busy intervals drawn as 40 bars" in note
    # the device lane reaches the last busy interval (it stopped after 40 before)
    last_end = max(int(ln.rsplit(",", 1)[1]) for ln in device)
    unit = 1_000 if t.end_ns - t.start_ns < 60_000_000 else 1_000_000  # ns per chart ms
    want = round((t.device_busy[-1][1] - t.start_ns) / unit)
    assert want <= last_end <= want + 1  # a bar is at least one chart unit long
    pieces = sum(int(m.group(1)) if (m := re.search(r" in (\d+) :", ln)) else 1 for ln in device)
    assert pieces == len(t.device_busy)


def test_a_chart_that_draws_everything_says_nothing():
    r = traceview.analyze(FIXTURES / "torch_mul_1x4096_f32.json.gz")
    md = renderer("md").render(r, RenderOptions())
    assert "more segments" not in md and "_Chart:" not in md
