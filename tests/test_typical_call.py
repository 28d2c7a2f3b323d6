"""The typical call is one real call of the dominant kind, and the verdict's every figure
is that call's own.

A loop of two ops per iteration (a 70-80 us step and a 20-24 us mul whose kernel keeps
the device busy most of its call): the p50 of every call's wall time is a mul call, the
p50 of their idle time another call's, and a share of one over the other described no
call that ran ("device-bound 63% of a typical call (24 us)"). The figures expected here
are the durations this file writes, counted by hand.
"""

from __future__ import annotations

import pytest

from traceview.units import fmt_ns, fmt_pct

STEP = "script.py(10): step"
MUL = "<built-in method mul of type object at 0x1>"
STEP_DURS = [70_000, 72_000, 75_000, 78_000, 80_000]
MUL_DURS = [20_000, 21_000, 22_000, 23_000, 24_000]
STEP_KERNEL = 1_000
MUL_KERNEL = 15_000
PERIOD = 200_000


def two_kinds(tb, order=None):
    """for i: step(); mul() under <module>; each launches one kernel inside its call."""
    n = len(STEP_DURS)
    tb.py("script.py(1): <module>", 0, n * PERIOD + 1_000)
    for i in order or range(n):
        s = 500 + i * PERIOD
        tb.py(STEP, s, STEP_DURS[i])
        tb.launched_kernel("k_step", s + 1_000, 500, s + 2_000, STEP_KERNEL)
        t = s + STEP_DURS[i] + 1_000
        tb.py(MUL, t, MUL_DURS[i])
        tb.op("aten::mul", t + 100, MUL_DURS[i] - 200)
        tb.launched_kernel("k_mul", t + 200, 400, t + 1_000, MUL_KERNEL)


def nearest_rank_p50(values):
    v = sorted(values)
    return v[(len(v) + 1) // 2 - 1]


def verdict(r):
    return next(f for f in r.findings if f.id in ("host-bound", "device-bound"))


def test_the_verdict_is_the_dominant_kinds_median_call(tb, analyze_builder):
    two_kinds(tb)
    r = analyze_builder(tb)
    assert [k.name for k in r.calls.kinds] == [STEP, MUL]
    # the step kind holds the most time (sum 375 us against 110 us); its p50 call is 75 us
    assert sum(STEP_DURS) > sum(MUL_DURS)
    want = nearest_rank_p50(STEP_DURS)
    t = r.typical
    assert t is not None and t.kind == STEP and t.api_ns == want == 75_000
    # the old mix: the p50 over both kinds is a mul call's, not a step's
    assert nearest_rank_p50(STEP_DURS + MUL_DURS) == 24_000
    idle = want - STEP_KERNEL  # the kernel is the only device work inside the step
    v = verdict(r)
    assert v.id == "host-bound", v.message
    assert v.message.startswith(f"host-bound: the device is idle {fmt_pct(idle / want)} of a "
                                f"typical call ({fmt_ns(want)}); kernel {fmt_ns(STEP_KERNEL)};")
    # the call the waterfall draws is the verdict's call: the same device busy
    tc = r.typical_call
    assert tc.index == t.index
    assert sum(e - s for s, e in tc.device_busy) == STEP_KERNEL


def test_the_typical_call_is_a_call_that_ran_at_its_kinds_median(tb, analyze_builder):
    """Its wall time is its kind's p50 exactly where the kind's p50 is a call's time (the
    nearest-rank p50 always is): never a call of one kind at twice its kind's median."""
    two_kinds(tb, order=[3, 0, 4, 1, 2])
    r = analyze_builder(tb)
    t = r.typical
    assert t.api_ns == nearest_rank_p50(STEP_DURS)
    assert t.metrics["kernel_ns"] == STEP_KERNEL
    assert t.metrics["host_overhead_ns"] == t.api_ns - STEP_KERNEL


@pytest.mark.parametrize("with_stack", [False, True])
def test_fixture_verdicts_cite_their_typical_calls_own_kernel(fixture_reports, with_stack):
    """The torch mul captured with and without stacks: the kernel named is the typical
    call's own, and it is never longer than the call where the call synchronizes."""
    name = "torch_mul_1x4096_f32_stack.json.gz" if with_stack else "torch_mul_1x4096_f32.json.gz"
    r = fixture_reports[name]
    t = r.typical
    v = verdict(r)
    assert f"kernel {fmt_ns(t.metrics['kernel_ns'])};" in v.message
    assert t.metrics["kernel_ns"] < t.api_ns and "longer than the call" not in v.message
