"""One rule for which calls the statistics are over, shared by explain and ``diff``.

Every call that is not cold counts; an outlier (a call over 2x the median of the others)
is named and stays in: a real warm call at 2x is part of the p90 and the max. ``diff T
T`` compares the same calls explain summarises, so both print the same p50 for the same
trace, and the samples diff resamples have explain's n, p90 and max. Expected figures are
counted here from the per-call rows (nearest-rank percentiles written out). Where the
window holds no device work, the figures of waiting for the device or leaving it idle
are compared by neither: explain's views leave their rows out and diff has none.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import FIXTURE_NAMES
from traceview.analyses.calls import DEVICE_ONLY_METRICS
from traceview.multi.compare import CALL_METRICS, _warm, diff_reports
from traceview.render.labels import shown_metrics


def rank(values: list[int], p: float) -> int:
    v = sorted(values)
    return v[max(1, math.ceil(p / 100 * len(v))) - 1]


def by_hand(r, metric: str) -> list[int]:
    rows = [c for c in r.calls.per_call if not c.cold] or list(r.calls.per_call)
    return [c.metrics[metric] for c in rows if c.metrics.get(metric) is not None]


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_diff_of_a_trace_with_itself_reads_explains_statistics(fixture_reports, name):
    r = fixture_reports[name]
    if not r.calls.count:
        pytest.skip("no calls")
    d = diff_reports(r, r)
    for m in CALL_METRICS:
        want = by_hand(r, m)
        st = r.calls.stats[m]
        comp = next(c for c in d.comparisons if c.metric == f"calls.{m}.p50")
        if m in DEVICE_ONLY_METRICS and r.device.busy_ns == 0:
            assert r.device.kernel_count + r.device.memcpy_count + r.device.memset_count == 0
            assert m not in shown_metrics(copies=True, device=False)
            assert comp.before is None and comp.after is None, (name, m)
            continue
        if not want:
            assert st.n == 0 and comp.before is None
            continue
        assert (st.n, st.p50, st.p90, st.max) == (len(want), rank(want, 50), rank(want, 90),
                                                   max(want)), (name, m)
        assert comp.before == comp.after == st.p50, (name, m)
        sample = _warm(r, m)
        assert (sample.size, int(np.max(sample)), rank(sample.tolist(), 90)) == (
            st.n, st.max, st.p90), (name, m)


def test_an_outlier_is_named_and_counted(fixture_reports):
    """``shape_loop_two_ops``: call #2 is over 2x the others of its kind; it is listed as
    an outlier and its wall time is in its kind's max."""
    r = fixture_reports["shape_loop_two_ops.json.gz"]
    c = r.calls.per_call[2]
    assert c.outlier and c.index in r.calls.outliers
    assert c.index in [w.index for w in r.calls.warm]
    kind = next(k for k in r.calls.kinds if k.name == c.kind)
    assert kind.stats["api_ns"].max >= c.metrics["api_ns"]
    assert r.calls.warm_count == sum(1 for x in r.calls.per_call if not x.cold)
