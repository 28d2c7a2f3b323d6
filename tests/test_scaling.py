"""explain is linear in the number of calls: the time per call at 16,000 calls is under
twice that at 2,000 (a ratio of two sizes measured side by side, never an absolute time;
a stage that sorts all calls once per call, as the outlier rule once did, makes it 8x).
And the one-sort helper behind the outlier rule is the project's median of the others."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import traceview
from traceview.report import schema
from traceview.stats import median, medians_of_others, sort_within_groups

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import synth_calls  # noqa: E402  (benchmarks/, not a package)


@given(st.lists(st.integers(-3, 9), min_size=2, max_size=12))
def test_medians_of_others_is_the_median_of_the_others(values):
    v = np.asarray(values, np.int64)
    got = medians_of_others(v).tolist()
    assert got == [median(values[:j] + values[j + 1:]) for j in range(len(values))]


@given(st.lists(st.tuples(st.integers(0, 5), st.one_of(st.integers(-9, 9),
                                                      st.integers(-2**63, 2**63 - 1))),
                max_size=12))
def test_sorting_within_groups_orders_pairs_by_group_then_value(pairs):
    """One key where it fits, a lexsort where group * span passes int64: the same pairs
    in the same order as sorting the tuples."""
    g = np.asarray([p[0] for p in pairs], np.int64)
    v = np.asarray([p[1] for p in pairs], np.int64)
    got_g, got_v = sort_within_groups(g, v)
    assert list(zip(got_g.tolist(), got_v.tolist(), strict=True)) == sorted(pairs)


def _cpu_per_call(path: Path, calls: int) -> float:
    """CPU seconds per call of load + explain + JSON (CPU time: the neighbours on a
    shared machine do not count), after checking the calls are the trace's."""
    t = time.process_time()
    report = traceview.explain(traceview.load(path))
    schema.to_json(report)
    spent = time.process_time() - t
    assert len(report.calls.per_call) == calls
    return spent / calls


def test_time_per_call_does_not_grow_with_calls(tmp_path):
    small, big = 2_000, 16_000
    a = synth_calls.write(tmp_path / "small.json", small)
    b = synth_calls.write(tmp_path / "big.json", big)
    _cpu_per_call(a, small)  # warm: imports and first-use costs out of the ratio
    ratio = _cpu_per_call(b, big) / _cpu_per_call(a, small)
    assert ratio < 2, f"time per call at {big:,} calls is {ratio:.2f}x that at {small:,}"
