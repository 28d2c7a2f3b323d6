"""The unprofiled split on a planted library, against a staged timing done in the test.

``planted_stages.op`` runs a busy-wait, 400 tiny Python calls and a C call. The profiler
inflates the tiny-call stage several times and the busy-wait barely; the split must
give each stage its unprofiled time. The expected figures are measured here,
independently: each stage replaced in its module by a wrapper with a perf_counter_ns
accumulator (what a kernel author does by hand), one stage per run.
"""

from __future__ import annotations

import time
import types

import planted_stages as P
import pytest
from hypothesis import given
from hypothesis import strategies as st

from traceview.report.unprofiled import _normalise, choose, profiled_by_name
from traceview.stats import median
from traceview.unprofiled import calibrate, find, split, timer
from traceview.unprofiled.timer import FunctionTimer

STAGES = {f.__name__: f for f in P.STAGES}


def staged(name: str, calls: int = 60, repeats: int = 5) -> tuple[int, int]:
    """Median per call of one stage, wrapped alone in its module (the reference), and
    of the whole call in the same runs."""
    orig = STAGES[name]
    acc = [0]
    perf = time.perf_counter_ns

    def wrapper(*a, **k):
        t0 = perf()
        try:
            return orig(*a, **k)
        finally:
            acc[0] += perf() - t0

    per: list[float] = []
    walls: list[float] = []
    for _ in range(repeats):
        setattr(P, name, wrapper)
        try:
            got, wall = [], []
            for _ in range(calls):
                before = acc[0]
                t0 = perf()
                P.op()
                wall.append(perf() - t0)
                got.append(acc[0] - before)
        finally:
            setattr(P, name, orig)
        per.append(median(got))
        walls.append(median(wall))
    return round(median(per)), round(median(walls))


def expected(name: str, call_ns: int) -> int:
    """The staged figure at the split's call time: this machine is shared, and another
    load slows a stage and its call alike, so the stage's share of its own call is what
    carries from one run to the other."""
    stage, call = staged(name)
    return round(stage * call_ns / call)


@pytest.fixture(scope="module")
def profiled_trace(tmp_path_factory):
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, record_function

    for _ in range(20):
        P.op()
    path = tmp_path_factory.mktemp("planted") / "planted.json"
    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
        for i in range(12):
            with record_function(f"call_{i}"):
                P.op()
    prof.export_chrome_trace(str(path))
    del torch
    return path


@pytest.fixture(scope="module")
def measured(profiled_trace):
    from traceview.unprofiled.structure import choose_from_trace

    names = choose_from_trace(str(profiled_trace), calls=r"^call_\d+$")
    block = split.measure(P.op, lambda: None, find.functions_for(names), blocks=6)
    return names, block


def by_stage(block: dict) -> dict[str, dict]:
    return {find.parse(f["name"])[2]: f for f in block["functions"]}


def test_the_chosen_functions_are_the_stages(measured):
    names, _ = measured
    got = {find.parse(n)[2] for n in names}
    assert {"op", "busy_stage", "tiny_stage", "crc_stage"} <= got


def agree_in_one_of(attempts: int, measure, check) -> None:
    """``check(measure(i))`` for i = 0, 1, ... until it holds. The machine is shared
    (the suite runs on two workers over two cores): a burst of load moves one
    measurement and not its staged reference taken moments later. A real error fails
    every attempt; the same burst three times running is rare."""
    for i in range(attempts):
        try:
            check(measure(i))
            return
        except AssertionError:
            if i == attempts - 1:
                raise


def test_every_major_stage_is_within_25_percent_of_the_staged_timing(measured):
    names, first = measured

    def check(block: dict) -> None:
        got = by_stage(block)
        call = block["call_ns"]
        for name in STAGES:
            want = expected(name, call)
            if want < 0.10 * call:
                continue
            assert abs(got[name]["inclusive_ns"] - want) <= 0.25 * want, (name, got[name], want)
            assert got[name]["low_ns"] <= got[name]["inclusive_ns"] <= got[name]["high_ns"]

    agree_in_one_of(3, lambda i: first if i == 0 else
                    split.measure(P.op, lambda: None, find.functions_for(names), blocks=6), check)


def test_the_split_ranks_the_stages_as_the_staged_timing_does(measured):
    _, block = measured
    got = by_stage(block)
    want = {name: expected(name, block["call_ns"]) for name in STAGES}
    for a in STAGES:
        for b in STAGES:
            if want[a] > 1.3 * want[b]:  # clear differences only (the machine is shared)
                assert got[a]["inclusive_ns"] > got[b]["inclusive_ns"], (a, b, want)


def test_the_profiler_inflates_the_tiny_frames_and_not_the_busy_wait(profiled_trace, measured):
    """The planted perturbation is real: profiled, the tiny-call stage grows several
    times its unprofiled figure while the busy-wait stays near its own."""
    import traceview
    from traceview.options import Options
    from traceview.report.explanation import analyze_trace

    a = analyze_trace(traceview.load(str(profiled_trace)), Options(calls=r"^call_\d+$"))
    prof = {find.parse(n)[2]: v for n, v in profiled_by_name(a.per_call.tree).items()}
    got = by_stage(measured[1])
    assert prof["tiny_stage"] > 2.5 * got["tiny_stage"]["inclusive_ns"]
    assert prof["busy_stage"] < 1.5 * got["busy_stage"]["inclusive_ns"]


def test_the_measuring_cost_is_measured_and_stated(measured):
    _, block = measured
    cal = block["calibration"]
    assert 0 < cal["in_band_ns"] and 0 <= cal["per_invocation_ns"]
    assert block["method"] == timer.METHOD
    for f in block["functions"]:
        assert "measuring_cost_ns" in f


def test_the_timer_reads_a_busy_wait_and_counts_recursion_once():
    def rec(n):
        return 0 if n == 0 else rec(n - 1) + 1

    readings = []
    for _ in range(5):  # the least of five: a preempted run only reads longer
        with FunctionTimer(P.busy_stage) as t:
            P.busy_stage()
            readings.append(t.reading())
    r = min(readings, key=lambda x: x.ns)
    assert all(x.outer == 1 and x.nested == 0 for x in readings)
    assert P.BUSY_NS <= r.ns < 3 * P.BUSY_NS
    with FunctionTimer(rec) as t:
        assert rec(4) == 4
        r = t.reading()
    assert (r.outer, r.nested, r.open) == (1, 4, 0)


def test_the_timer_leaves_the_function_as_it_found_it():
    code = P.tiny_stage.__code__
    with FunctionTimer(P.tiny_stage):
        assert P.tiny_stage() == P.TINY_CALLS
    assert P.tiny_stage.__code__ is code
    assert not [k for k in vars(P) if k.startswith("__traceview_timer")]


def test_closures_and_methods_can_be_timed():
    def make(k):
        def add(x):
            return x + k
        return add

    add2, add3 = make(2), make(3)

    class C:
        def m(self, x):
            return super().__hash__() is not None and x

    with FunctionTimer([add2, add3]) as t:
        assert (add2(1), add3(1)) == (3, 4)
        assert t.reading().outer == 2
    with FunctionTimer(C.m) as t:
        assert C().m(5) == 5
        assert t.reading().outer == 1


def test_a_generator_is_refused():
    def gen():
        yield 1

    with pytest.raises(TypeError, match="generator"):
        FunctionTimer(gen)


def test_calibration_is_positive():
    c = calibrate.calibrate(loops=500, repeats=3)
    assert c.in_band_ns > 0 and c.per_invocation_ns >= 0 and c.empty_call_ns > 0


def test_find_resolves_frame_names_to_live_functions():
    code = P.busy_stage.__code__
    name = f"{code.co_filename}({code.co_firstlineno}): busy_stage"
    short = f"tests/planted_stages.py({code.co_firstlineno}): busy_stage"
    got = find.functions_for([name, short, "nowhere.py(1): f", "aten::add"])
    assert got[name] == [P.busy_stage] and got[short] == [P.busy_stage]
    assert set(got) == {name, short}


class _Node(types.SimpleNamespace):
    pass


def _tree():
    leaf = _Node(name="lib.py(9): tiny", category="library", inclusive_ns=60, self_ns=60,
                 count=1, folded=0, folded_ns=0, children=[])
    prof = _Node(name="torch/profiler.py(1): exit", category="profiler", inclusive_ns=500,
                 self_ns=500, count=1, folded=0, folded_ns=0, children=[])
    top = _Node(name="lib.py(1): op", category="dispatch", inclusive_ns=100, self_ns=40, count=1,
                folded=0, folded_ns=0, children=[leaf])
    return [top, prof]


def test_choose_skips_the_profilers_frames_and_small_ones():
    assert choose(_tree(), 100) == ["lib.py(1): op", "lib.py(9): tiny"]
    assert choose(_tree(), 100, min_share=0.7) == ["lib.py(1): op"]


def test_categories_scale_inside_each_measured_function():
    from traceview.report.unprofiled import _scaled_categories

    # op measured at 50 (of 100 profiled), tiny at 10 (of 60): op's own 40 -> 40
    got = _scaled_categories(_tree(), {"lib.py(1): op": 50.0, "lib.py(9): tiny": 10.0}, 100, 50)
    assert got == {"dispatch": pytest.approx(40.0), "library": pytest.approx(10.0)}


@given(st.dictionaries(st.sampled_from(["a", "b", "c", "d"]),
                       st.floats(min_value=0.001, max_value=1e9), min_size=1),
       st.integers(min_value=1, max_value=10**9))
def test_normalised_categories_sum_to_the_call_exactly(raw, total):
    out = _normalise(raw, total)
    assert sum(out.values()) == total and all(v > 0 for v in out.values())


def _planted_fn(a):
    P.op()
    return a + 1


def test_the_python_api_records_the_split_of_a_live_callable(tmp_path):
    torch = pytest.importorskip("torch")
    a = torch.ones(8)

    def measure(i: int) -> dict:
        meta = traceview_capture(_planted_fn, a, out=tmp_path / f"fn{i}.json.gz", warmup=2,
                                 iters=6, baseline_n=20)
        return meta["baseline"]["split"]

    def check(block: dict) -> None:
        got = {find.parse(f["name"])[2] for f in block["functions"]}
        assert {"busy_stage", "tiny_stage", "crc_stage"} <= got
        assert "this process" in block["process"] and block["calibration"]["in_band_ns"] > 0
        busy = next(f for f in block["functions"] if f["name"].endswith(": busy_stage"))
        want = expected("busy_stage", block["call_ns"])  # the staged figure, same call time
        assert abs(busy["inclusive_ns"] - want) <= 0.25 * want, (busy, want)

    agree_in_one_of(3, measure, check)


def test_find_sees_functions_after_the_cli_froze_the_collector():
    """The CLI freezes gc at start (io/allocator.collect_less); find must still see
    functions that existed then."""
    import gc

    gc.freeze()
    try:
        code = P.busy_stage.__code__
        name = f"{code.co_filename}({code.co_firstlineno}): busy_stage"
        assert find.functions_for([name])[name] == [P.busy_stage]
        assert gc.get_freeze_count() > 0  # left frozen, as found
    finally:
        gc.unfreeze()


def traceview_capture(*args, **kwargs):
    import traceview

    return traceview.capture(*args, **kwargs)
