"""Kineto's microsecond numbers as exact integer nanoseconds.

``ts``/``dur`` are microseconds with three decimals. Below 2**43 us (101 days of clock)
the float split ``floor(x)*1000 + rint((x - floor(x))*1000)`` recovers the exact ns
(``round(x*1000)`` does not everywhere: between 2**42 us and 2**52 ns the product lands
on a half-integer grid). At or above 2**43 us the number's text is parsed as a decimal,
exactly (the decoder keeps that text for such chunks: ``io/events.py``).
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np

EXACT_FLOAT_LIMIT_US = float(2**43)
MISSING = np.iinfo(np.int64).min  # "no usable ts/dur"


def split_ns(x: np.ndarray) -> np.ndarray:
    """Float us -> exact int64 ns below 2**43 us; MISSING where NaN/inf."""
    ok = np.isfinite(x)
    safe = np.where(ok, x, 0.0)
    w = np.floor(safe)
    ns = w.astype(np.int64) * 1000 + np.rint((safe - w) * 1000.0).astype(np.int64)
    return np.where(ok, ns, MISSING)


def text_to_ns(text: bytes | str) -> int | None:
    """A JSON number text in us -> exact int ns (None if not a finite number)."""
    try:
        d = Decimal(text.decode() if isinstance(text, bytes) else text.strip())
        if not d.is_finite() or abs(d) >= 2**62 // 1000:
            return None
        return int((d * 1000).to_integral_value())
    except (ArithmeticError, ValueError, UnicodeDecodeError):  # InvalidOperation, Overflow
        return None


def value_to_ns(value: object) -> int | None:
    """One loosely typed us value -> int ns (exact for text and integers; float split
    for floats); None for anything else (null, a boolean, an object, a list)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (str, bytes)):
        return text_to_ns(value)
    if isinstance(value, int):
        return value * 1000 if abs(value) < 2**62 // 1000 else None
    if not isinstance(value, float):
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return None
    if abs(value) >= 2**62 / 1000:
        return None
    return int(split_ns(np.asarray([float(value)]))[0])


def or_missing(v: int | None) -> int:
    """An ns value for a column: MISSING when absent or beyond 2**62."""
    return MISSING if v is None or abs(v) > 2**62 else v
