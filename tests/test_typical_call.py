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


BLOCK_DURS = [60_000, 90_000, 40_000, 50_000, 55_000]  # Block_0 .. Block_4, as they run
BLOCK_GAP = 20_000
BLOCK_HOST = 4_000  # each block's host time before its kernel starts, and after it ends


def module_blocks(tb):
    """A stack of layers: <module> calls nn.Module: Block_0 .. Block_4 once each (the
    profiler numbers each instance after its class), each launching one kernel that keeps
    the device busy all but BLOCK_HOST at each end of its call."""
    t = 1_000
    tb.py("script.py(1): <module>", 0, sum(BLOCK_DURS) + BLOCK_GAP * len(BLOCK_DURS) + 2_000)
    for i, d in enumerate(BLOCK_DURS):
        tb.py(f"nn.Module: Block_{i}", t, d)
        tb.launched_kernel("k_block", t + 1_000, 500, t + BLOCK_HOST, d - 2 * BLOCK_HOST)
        t += d + BLOCK_GAP


def test_module_instances_are_one_kind_whose_median_call_is_typical(tb, analyze_builder):
    """The instances of one module class are one kind of call: as five kinds of one call
    each, the slowest layer (Block_1, 90 us) held the most time and was "a typical call";
    it is the median layer, Block_4 (55 us), and each call keeps its own name."""
    module_blocks(tb)
    r = analyze_builder(tb)
    names = [f"nn.Module: Block_{i}" for i in range(len(BLOCK_DURS))]
    assert [c.name for c in r.calls.per_call] == names
    warm = [c for c in r.calls.per_call if c.warm]
    assert [c.name for c in warm] == names  # no layer is cold: one kernel, one launch each
    want = nearest_rank_p50(BLOCK_DURS)
    assert want == 55_000 and BLOCK_DURS.index(want) == 4
    t = r.typical
    assert t is not None and t.name == "nn.Module: Block_4" and t.api_ns == want, t
    assert [k.name for k in r.calls.kinds] == ["nn.Module: Block_#"]
    assert [k.count for k in r.calls.kinds] == [len(BLOCK_DURS)]
    busy = want - 2 * BLOCK_HOST  # the kernel, the only device work inside the call
    assert t.metrics["device_busy_ns"] == busy
    v = verdict(r)
    assert v.id == "device-bound", v.message
    assert v.message.startswith(f"device-bound: the device is busy {fmt_pct(busy / want)} of "
                                f"a typical call ({fmt_ns(want)})"), v.message
    assert r.typical_call.index == t.index == 4


@pytest.mark.parametrize("names, kinds", [
    (["nn.Module: Block_0", "nn.Module: Blocks_1", "nn.Module: Block_2"],  # another class
     ["nn.Module: Block_#", "nn.Module: Blocks_1"]),
    (["nn.Module: Block_0", "nn.Module: Block", "nn.Module: Block_x1"],  # no instance index
     ["nn.Module: Block_0", "nn.Module: Block", "nn.Module: Block_x1"]),
    (["nn.Module: Embed_0", "nn.Module: Block_0", "nn.Module: Head_0"],  # one instance each
     ["nn.Module: Embed_0", "nn.Module: Block_0", "nn.Module: Head_0"]),
    (["script.py(1): run_0", "script.py(1): run_1", "script.py(1): run_2"],  # not a module
     ["script.py(1): run_0", "script.py(1): run_1", "script.py(1): run_2"]),
])
def test_only_instances_of_one_module_class_fold(tb, analyze_builder, names, kinds):
    """Only the profiler's ``_<index>`` after one module class, run by two instances or
    more, folds; other names, digits or not, stay kinds of their own."""
    t = 1_000
    tb.py("script.py(1): <module>", 0, len(names) * 100_000)
    for n in names:
        tb.py(n, t, 50_000)
        tb.launched_kernel("k", t + 1_000, 500, t + 4_000, 40_000)
        t += 100_000
    r = analyze_builder(tb)
    assert [c.name for c in r.calls.per_call] == names
    assert [k.name for k in r.calls.kinds] == kinds
