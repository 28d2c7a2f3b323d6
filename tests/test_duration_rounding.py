"""Durations as every output prints them (``units.fmt_ns``): the printed number is the
nearest at its precision, halves up, whatever binary floats make of the half."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from traceview.units import fmt_ns

SCALE = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def _printed(text: str) -> tuple[Fraction, Fraction]:
    """The printed value in ns, and the half step of its last printed digit."""
    number, unit = text.split(" ")
    decimals = len(number.split(".")[1]) if "." in number else 0
    scale = SCALE[unit]
    return Fraction(number) * scale, Fraction(scale, 10 ** decimals) / 2


@given(st.integers(min_value=-999_000_000_000, max_value=999_000_000_000))
def test_the_printed_duration_is_the_nearest_halves_away_from_zero(ns):
    value, half = _printed(fmt_ns(ns))
    err = Fraction(ns) - value
    # within half a last digit; an exact half goes away from zero (the printed value is
    # the larger in size), never to the even digit
    assert abs(err) < half or (abs(err) == half and abs(value) > abs(ns))


def test_halves_that_binary_floats_rounded_both_ways():
    assert (fmt_ns(3_655_000), fmt_ns(1_435_000)) == ("3.66 ms", "1.44 ms")
    assert (fmt_ns(150_500), fmt_ns(-1_065)) == ("151 us", "-1.07 us")
    assert fmt_ns(999_999) == "1000 us"  # "%.3g" wrote 1e+03 us
