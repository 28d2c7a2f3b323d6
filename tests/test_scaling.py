"""explain is linear in the number of calls: the time per call at 16,000 calls is under
twice that at 2,000 (a ratio of two sizes measured side by side, never an absolute time;
a stage that sorts all calls once per call, as the outlier rule once did, makes it 8x).
And the one-sort helpers behind the outlier and first-use rules are the project's median.
And the user time per call of each renderer (JSON, text, markdown) at 60,000 calls stays
near that at 3,000.
And the memory explain holds per event of a cold compile's trace stays bounded (the
bytes a trace of more events takes beyond a smaller one's, counted by tracemalloc:
exact, whatever the machine's other processes do)."""

from __future__ import annotations

import functools
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import traceview
from traceview.report import schema
from traceview.stats import (
    median,
    median_of_array,
    medians_by_group,
    medians_of_others,
    sort_within_groups,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import make_large_trace  # noqa: E402  (benchmarks/, not a package)
import synth_calls  # noqa: E402


@given(st.lists(st.integers(-3, 9), min_size=2, max_size=12))
def test_medians_of_others_is_the_median_of_the_others(values):
    v = np.asarray(values, np.int64)
    got = medians_of_others(v).tolist()
    assert got == [median(values[:j] + values[j + 1:]) for j in range(len(values))]


@given(st.lists(st.integers(-2**62, 2**62), min_size=1, max_size=12))
def test_the_array_median_is_the_median(values):
    assert median_of_array(np.asarray(values, np.int64)) == median(values)


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(-9, 9)), max_size=12))
def test_medians_by_group_are_each_group_s_median(pairs):
    g = np.asarray([p[0] for p in pairs], np.int64)
    v = np.asarray([p[1] for p in pairs], np.int64)
    keys, meds = medians_by_group(g, v)
    want = {k: median([b for a, b in pairs if a == k]) for k in sorted({a for a, _ in pairs})}
    assert dict(zip(keys.tolist(), meds.tolist(), strict=True)) == want


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


def _render_user_per_call(render, report, calls: int, repeats: int = 7) -> float:
    """The median user CPU seconds per call of ``repeats`` renders of one report. The
    median, not the least: the cyclic collector's full walks that a renderer's own
    allocations set off land in some renders and not in others, and the least render
    leaves them out (the JSON's builtin copy of every call cost 3.8-6.3 us a call in the
    renders with a full walk, 2.4 in the one without); a neighbour's burst on a shared machine
    moves the median of seven little. User time, not system time: glibc maps a fresh block
    for every document over 32 MB, and the kernel's zero-filling of its pages (system
    time) is a fixed cost per byte from there on that a smaller document, carved from
    memory the process holds, never pays; what the renderer's own code does per call is
    user time."""
    spent = []
    for _ in range(repeats):
        t = resource.getrusage(resource.RUSAGE_SELF).ru_utime
        render(report)
        spent.append(resource.getrusage(resource.RUSAGE_SELF).ru_utime - t)
    return statistics.median(spent) / calls


# Per call, a renderer at 60,000 calls may take this much of its user time at 3,000. The
# JSON's builtin copy of every call (three dicts a call) made it 1.64-2.31x in six runs
# of this test (the collector's full walks over all it allocated); written from the
# report's own rows, 0.92-1.00x in four. Text and markdown draw a bounded number of rows
# whatever the calls (0.1x and 0.5x).
RENDER_GROWTH = 1.4


def test_rendering_time_per_call_does_not_grow_with_calls(tmp_path):
    """JSON, text and markdown of 3,000 and of 60,000 calls: the user time per call of
    each renderer at the larger is under ``RENDER_GROWTH`` times that at the smaller."""
    from traceview.render.registry import RenderOptions, renderer

    small, big = 3_000, 60_000
    reports = {}
    for calls in (small, big):
        reports[calls] = traceview.explain(
            traceview.load(synth_calls.write(tmp_path / f"c{calls}.json", calls)))
        assert len(reports[calls].calls.per_call) == calls
    # the document holds every call: a renderer that left them out would be quick
    assert schema.to_json(reports[big]).count(b'"outlier_reason"') == big
    renders = {"json": schema.to_json,
               **{fmt: functools.partial(renderer(fmt).render, options=RenderOptions(width=80))
                  for fmt in ("text", "md")}}
    for fmt, render in renders.items():
        per_call = {n: _render_user_per_call(render, reports[n], n) for n in (small, big)}
        ratio = per_call[big] / per_call[small]
        assert ratio < RENDER_GROWTH, (
            f"{fmt}: {per_call[big] * 1e6:.2f} us per call at {big:,} calls, "
            f"{ratio:.2f}x the {per_call[small] * 1e6:.2f} us at {small:,}")


# Bytes per event, beyond a smaller trace's: what the loaded trace holds, and the peak of
# explain and its JSON on top of it. Between the 1- and 6-copy traces below: 16.0 and
# 59.6, against 32.0 and 103.2 before the columns were narrowed, the timeline packed and
# the correlation ids held sparse (the 4.47 GB trace's peak RSS: 1.9 GB then, 1.0 now;
# docs/performance.md).
HELD_PER_EVENT = 24
PEAK_PER_EVENT = 72
# The pure-Python paths (TRACEVIEW_NO_NATIVE=1, or an install without a C compiler) sweep
# the frames with Python lists: 261-268 bytes an event at the peak (held: the same 16.0).
PEAK_PER_EVENT_PURE = 290


def _held_and_peak(path: Path) -> tuple[int, int, int]:
    """(bytes the loaded trace holds, peak bytes of explain + JSON, events), by tracemalloc
    (numpy's arrays included)."""
    import gc
    import tracemalloc

    tracemalloc.start()
    try:
        trace = traceview.load(path)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        schema.to_json(traceview.explain(trace))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return held, peak, len(trace.slices)


def test_memory_per_event_does_not_grow(tmp_path):
    """A cold compile's trace (the real fixture's events repeated, as the 4 GB benchmark
    makes them) of 1 and of 6 copies: the bytes per event of the difference stay under
    the bounds above (a row-sized int64 column more is 8 bytes an event)."""
    sizes = []
    for copies in (1, 6):
        out = tmp_path / f"c{copies}.json"
        info = make_large_trace.build(make_large_trace.DEFAULT_FIXTURE, 1, out, 6) if copies == 1 \
            else make_large_trace.build(make_large_trace.DEFAULT_FIXTURE,
                                        int(copies * 14.6e6), out, 6)
        assert info["copies"] == copies
        sizes.append(_held_and_peak(out))
    (h1, p1, n1), (h6, p6, n6) = sizes
    assert n6 - n1 > 300_000
    held, peak = (h6 - h1) / (n6 - n1), (p6 - p1) / (n6 - n1)
    assert held < HELD_PER_EVENT, f"the loaded trace holds {held:.1f} bytes an event"
    from traceview import native

    bound = PEAK_PER_EVENT_PURE if native.load("sweep") is None else PEAK_PER_EVENT
    assert peak < bound, f"explain peaks at {peak:.1f} bytes an event"
