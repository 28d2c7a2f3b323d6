"""Whole-percent shares as sentences print them (``units.fmt_pct``): a nonzero share is
never "0%" (68.8 ms of compile work in a 15.4 s window read "(0%)" beside a table saying
0.4%), and every other share is the nearest whole percent."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from traceview.units import fmt_pct


@given(st.integers(min_value=1, max_value=10**12), st.integers(min_value=1, max_value=10**12))
def test_a_nonzero_share_is_never_printed_as_none(part, extra):
    whole = part + extra
    text = fmt_pct(part / whole)
    assert text != "0%"
    if 200 * part < whole:  # under half a percent: the sliver word
        assert text == "<1%"
    else:
        assert abs(int(text[:-1]) - 100 * part / whole) <= 0.5 + 1e-9


def test_the_cold_path_share_of_the_eval_trace_is_a_sliver():
    # 68,800,000 ns of a 15,400,000,000 ns window (0.45%)
    assert fmt_pct(68_800_000 / 15_400_000_000) == "<1%"
    assert fmt_pct(0) == "0%"
    assert fmt_pct(0.005) == "1%"
