"""The one unit formatter: durations, shares and counts as every output shows them.

Bottom layer: used by every renderer, by finding messages (``report/messages.py``) and
by capture, so one number reads the same everywhere (863 ns, 25.5 us, 11.27 ms).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal


def fmt_ns(ns: int | float | None) -> str:
    """A duration in the unit that keeps 3-4 significant digits: 863 ns, 25.5 us, 11.27 ms.
    Halves round up, in decimal: binary floats rounded 3,655,000 ns to "3.65 ms" and
    1,435,000 ns to "1.44 ms" (3.655 is stored just under its half, 1.435 just over), and
    microsecond-resolution traces hit such halves often."""
    if ns is None:
        return "-"
    ns = round(ns)
    a = abs(ns)
    if a < 1_000:
        return f"{ns} ns"
    if a < 1_000_000:
        return f"{_sig3(ns, 3)} us" if a < 100_000 else f"{_whole(ns, 3)} us"
    if a < 1_000_000_000:
        return f"{_sig3(ns, 6)} ms" if a < 100_000_000 else f"{_whole(ns, 6)} ms"
    if a < 999_500_000_000:
        return f"{_sig3(ns, 9)} s"
    return f"{ns / 1e9:.3g} s"


def _sig3(ns: int, shift: int) -> str:
    """``ns / 10**shift`` to 3 significant digits, halves up, trailing zeros dropped (as
    ``%.3g`` writes it, for values under 1000)."""
    x = Decimal(ns).scaleb(-shift)
    q = x.quantize(Decimal(1).scaleb(x.adjusted() - 2), ROUND_HALF_UP)
    text = format(q, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _whole(ns: int, shift: int) -> str:
    """``ns / 10**shift`` to a whole number, halves up."""
    return format(Decimal(ns).scaleb(-shift).quantize(Decimal(1), ROUND_HALF_UP), "f")


def fmt_signed_ns(ns: int | float | None) -> str:
    """A difference: ``+9.8 us``, ``-120 ns`` (``-`` when unknown)."""
    if ns is None:
        return "-"
    return ("+" if ns > 0 else "") + fmt_ns(ns)


def fmt_share(part: int, whole: int) -> str:
    """``part`` of ``whole`` to 0.1% ("<0.1%" for a sliver, "-" when there is no whole)."""
    if whole <= 0:
        return "-"
    share = 100 * part / whole
    if part and share < 0.1:
        return "<0.1%"
    return f"{share:.1f}%"


def fmt_pct(fraction: float) -> str:
    """A fraction as a whole percentage: 0.456 -> '46%'. A sliver is "<1%", never "0%":
    68.8 ms of a 15.4 s window is not none, and the table beside it says 0.4%."""
    if 0 < fraction < 0.005:
        return "<1%"
    return f"{_half_up(100 * fraction, 0)}%"


def _half_up(x: float, decimals: int) -> str:
    """``x`` to ``decimals`` places, halves up in decimal (the float's shortest repr), as
    durations round: 12.5% is "13%", not the binary float's "12%"."""
    q = Decimal(repr(x)).quantize(Decimal(1).scaleb(-decimals), ROUND_HALF_UP)
    return format(q, "f")


def fmt_bytes(n: int | None) -> str:
    """Bytes in decimal units with 3-4 significant digits: 768 B, 393 kB, 134 MB."""
    if n is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            v = n / scale
            return f"{v:.3g} {unit}" if abs(v) < 100 else f"{v:.0f} {unit}"
    return f"{n} B"


def fmt_rate(gb_per_s: float | None) -> str:
    """A bandwidth in GB/s (10**9 bytes per second): 3.1 GB/s, 2870 GB/s."""
    if gb_per_s is None:
        return "-"
    return f"{gb_per_s:.3g} GB/s" if gb_per_s < 1000 else f"{gb_per_s:.0f} GB/s"


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 call', '2 calls', '0 calls'."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def printable(name: str) -> str:
    """A name fit for one line of text: control and zero-width characters shown as '?',
    a name over ``printable.MAX_NAME_CHARS`` cut with a note (a 20 MB name took minutes
    to lay out)."""
    from traceview.printable import cut

    name = cut(name)
    if name.isprintable():
        return name
    return "".join(ch if ch.isprintable() else "?" for ch in name)
