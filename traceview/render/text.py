"""The terminal text layer: where a line may break, for every text renderer.

rich wraps at whitespace and, for a word wider than its column, folds at any cell. Both
are wrong for what traceview prints: ``3.05 ms`` split into ``3.05`` / ``ms``, an interval
``[11.1 ms, 17 ms]`` broken inside ``17 ms``, a kernel or module name cut between two
letters (``pointwise_dyna`` / ``mic``). This module decides the breaks instead, and every
text renderer goes through it (``registry._console_text`` prints on ``TextConsole``):

* a number and its unit are one word: the space between them becomes ``GLUE``, a
  character rich does not break at, written back as a space once the text is laid out;
* names (kernels, functions, modules, files) may break at their own boundaries
  (``::``, ``.``, ``/``, ``<``, ``(``, ``,``, ``~``, and ``_`` inside a long part):
  ``name()`` puts ``SOFT``, a break opportunity that prints nothing, after each
  (before ``<`` and ``(``), so a name wider than its column
  wraps at a boundary and is folded between letters only when one part alone is wider.

Both marks are private characters (``GLUE``: a private-use code point, one cell wide;
``SOFT``: the ASCII unit separator, zero cells, which rich and ``str.split`` take for
whitespace); ``finish`` removes them from the laid-out text. Markdown and JSON never
see them.
"""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from traceview.printable import SOFT, cut, escape_controls

GLUE = "\ue000"  # a space that never breaks (rich's word regex does not see it as space)

# The units the outputs print after a number (traceview.units, bytes, rates, counts).
UNITS = ("ns", "us", "µs", "ms", "s", "min", "h", "B", "KiB", "MiB", "GiB", "kB", "MB",
         "GB", "GB/s", "tok/s", "req/s", "%")
_NUMBER_UNIT = re.compile(
    r"(?<![\w.])([-+]?\d[\d,]*(?:\.\d+)?) (" + "|".join(re.escape(u) for u in
                                                    sorted(UNITS, key=len, reverse=True))
    + r")(?![\w/])")
# Where even the longest words of a table do not fit, a text column may be this narrow.
TEXT_COLUMN_FLOOR = 6
# After these a name may break (the mark goes after the run: ``::`` stays whole).
_NAME_BREAK = re.compile(r"(::|[/,~]+|\.(?!\d)|(?<=[\w>)\]])(?=[<(\[]))")
# A part between those longer than this may break after its underscores too (a hashed
# module name); a shorter identifier stays whole (``_call_real_impl``).
LONG_PART = 24


def bind(s: str) -> str:
    """``s`` with each number's space before its unit made unbreakable (same length)."""
    if " " not in s:
        return s
    return _NUMBER_UNIT.sub(lambda m: m.group(1) + GLUE + m.group(2), s)


def name(s: str, *, long_part: int = LONG_PART) -> str:
    """A name with a break opportunity after each of its boundaries (``SOFT``); parts
    longer than ``long_part`` break after underscores too (0: a file name, where every
    ``_`` and ``-`` is a boundary). Control characters but newline and tab (a header's
    line break) escaped, a very long name cut (``printable.py``)."""
    s = escape_controls(cut(s))
    marked = _NAME_BREAK.sub(lambda m: m.group(0) + SOFT, s)
    seps = r"[_\-]+" if long_part == 0 else r"_+"
    return re.sub(r"[^\s" + SOFT + r"]{%d,}" % (long_part + 1),
                  lambda m: re.sub(seps, lambda u: u.group(0) + SOFT, m.group(0)), marked)


def name_text(s: str, style: str = "", *, long_part: int = LONG_PART) -> Text:
    """``name(s)`` as a rich ``Text`` (plain: a name is never markup)."""
    return Text(name(s, long_part=long_part), style=style)


def finish(laid_out: str) -> str:
    """The laid-out text with the marks gone: ``GLUE`` a space again, ``SOFT`` nothing."""
    return laid_out.replace(GLUE, " ").replace(SOFT, "")


def _bind_text(t: Text) -> Text:
    plain = t.plain
    bound = bind(plain)
    if bound != plain:  # same length: the spans (styles) stay where they were
        t = t.copy()
        t.plain = bound
    return t


def prepare(r: Any, console: Console | None = None) -> Any:
    """A renderable with ``bind`` applied to all its text: strings, ``Text``, and the
    cells, titles, headers and footers of tables, groups and trees within it; with a
    ``console``, a top-level table's columns are sized by ``fit_columns``."""
    if isinstance(r, str):
        return bind(r)
    if isinstance(r, Text):
        return _bind_text(r)
    if isinstance(r, Table) and console is not None:
        prepare(r)
        fit_columns(r, console, console.width)
        return r
    if isinstance(r, Table):
        if r.title is not None:
            r.title = prepare(r.title)
        for col in r.columns:
            col.header = prepare(col.header)
            if isinstance(col.header, str) and "[" not in col.header:
                col.header = name(col.header)  # "self/call" may go on two lines
            col.footer = prepare(col.footer)
            col._cells[:] = [prepare(c) for c in col._cells]
        return r
    if isinstance(r, Group):
        r._renderables = tuple(prepare(x) for x in r._renderables)
        return r
    if isinstance(r, Tree):
        r.label = prepare(r.label)
        for child in r.children:
            prepare(child)
        return r
    return r


def fit_columns(table: Table, console: Console, width: int) -> None:
    """Column widths that cut no word: each column gets at least its longest unbreakable
    word (header included: a number with its unit, a name's part between boundaries, a
    figure column's widest cell), and the room left goes to the columns that want more,
    in proportion to how much more. rich's own narrowing takes the widest column down
    first whatever it holds and then cuts every column evenly; it is left to do so only
    when even the longest words do not fit (``width`` too small for the table)."""
    from rich.measure import Measurement

    opts = console.options.update_width(width)
    lows, highs, pads, rigid, tight = [], [], [], [], []
    for i, col in enumerate(table.columns):
        head = ([col.header] if table.show_header else []) + (
            [col.footer] if table.show_footer else [])
        body = [Measurement.get(console, opts, c) for c in col._cells]
        over = [Measurement.get(console, opts, c) for c in head]
        lo = max([1] + [m.minimum for m in body + over])
        hi = max([1] + [m.maximum for m in body + over])
        # a figure column: right-aligned single words (figures, "-", "3/5")
        whole = col.justify == "right" and all(m.minimum == m.maximum for m in body)
        if col.no_wrap:
            lo = hi
        if col.max_width is not None:
            hi = max(lo, min(hi, col.max_width))
        pad = table._get_padding_width(i)
        lows.append(lo + pad)
        highs.append(hi + pad)
        pads.append(pad)
        rigid.append(whole or col.no_wrap)
        # the least a column of single-word cells needs when its header may wrap
        tight.append(max([1] + [m.maximum for m in body] + [m.minimum for m in over]) + pad
                     if whole else None)
    room = width - table._extra_width
    if sum(highs) <= room or any(c.width is not None for c in table.columns):
        return
    if sum(lows) <= room:
        widths = _grow(lows, highs, room - sum(lows))
    else:
        # Not even the longest words fit. Figure columns keep their cells whole and give
        # up their headers' width first (a header wraps); the text columns then get their
        # longest words back, then the figure headers, then the rest; a text column's
        # word is folded only when that is not enough.
        floor = [t if t is not None else lo if r else min(lo, TEXT_COLUMN_FLOOR + pad)
                 for lo, r, pad, t in zip(lows, rigid, pads, tight, strict=True)]
        if sum(floor) > room:
            return
        text_words = [lo if t is None and not r else f
                      for lo, f, r, t in zip(lows, floor, rigid, tight, strict=True)]
        widths = _grow(floor, text_words, room - sum(floor))
        widths = _grow(widths, [hi if t is not None else w for hi, w, t in
                                zip(highs, widths, tight, strict=True)], room - sum(widths))
        widths = _grow(widths, highs, room - sum(widths))
        for col, t in zip(table.columns, tight, strict=True):
            if t is not None:
                col.no_wrap = False
    for col, w, pad in zip(table.columns, widths, pads, strict=True):
        col.width = max(1, w - pad)


def _grow(widths: list[int], targets: list[int], spare: int) -> list[int]:
    """``widths`` grown toward ``targets`` by at most ``spare`` in all, in proportion to
    what each still wants (whole cells, the remainder one at a time to the neediest)."""
    want = [max(0, t - w) for w, t in zip(widths, targets, strict=True)]
    total = sum(want)
    if total == 0 or spare <= 0:
        return list(widths)
    if total <= spare:
        return [w + x for w, x in zip(widths, want, strict=True)]
    out = [w + spare * x // total for w, x in zip(widths, want, strict=True)]
    left = spare - (sum(out) - sum(widths))
    for i in sorted(range(len(out)), key=lambda i: -(targets[i] - out[i])):
        if left <= 0:
            break
        if out[i] < targets[i]:
            out[i] += 1
            left -= 1
    return out


class TextConsole(Console):
    """A console whose ``print`` lays text out with traceview's breaks (``prepare``);
    what it writes still holds the marks: pass it through ``finish``."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        super().print(*(prepare(o, self) for o in objects), **kwargs)


def laid_out(draw: Any) -> Any:
    """For a renderer's ``draw(report, console, ...)``: on a plain rich ``Console`` (a
    caller's own), lay the text out on a ``TextConsole`` of the same width and colours and
    write the finished text to that console's file, so the marks never reach it."""
    import functools
    from io import StringIO

    @functools.wraps(draw)
    def wrapper(report: Any, console: Console, *args: Any, **kwargs: Any) -> Any:
        if isinstance(console, TextConsole):
            return draw(report, console, *args, **kwargs)
        buf = StringIO()
        text = TextConsole(width=console.width, file=buf, highlight=False,
                           color_system=console.color_system,  # type: ignore[arg-type]
                           force_terminal=console.is_terminal, legacy_windows=False)
        out = draw(report, text, *args, **kwargs)
        console.file.write(finish(buf.getvalue()))
        return out

    return wrapper
