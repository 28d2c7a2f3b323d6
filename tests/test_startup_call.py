"""A call dominated by the profiler's start-up is cold whatever its kind, and never the
typical call.

The shape of a real trace (a Switch Transformer's forward, nn.Module frames of one call
each): the first module's call holds the trace's first launch, which took 323 ms of its
324 ms (the CUDA context). With one call per kind no call of its kind is there to be slow
against; the call held the most wall time, so it was the typical call and the verdict
read "idle 100% of a typical call (324 ms)". Here the start-up call is left out of the
warm calls and the typical call is another kind's; a first call long for its device work
(a short first launch) stays warm. Every expected figure is counted from the events this
file writes (or, for the real trace, from its raw events).
"""

from __future__ import annotations

import gzip
import json
from decimal import Decimal

import public_corpus
import pytest
from test_first_use_call import first_uses_by_hand

import rawcount
import traceview
from traceview.units import fmt_ns, fmt_pct

MODULE = "script.py(1): <module>"
START = 1_000
GAP = 5_000


def verdict(r):
    return next(f for f in r.findings if f.id in ("host-bound", "device-bound"))


def write_calls(tb, calls):
    """One Python frame per call (``(name, wall, [(launch_at, launch_dur, kernel_at,
    kernel_dur)...])``, times from the call's start), one after the other under
    <module>. Returns each call's (start, end)."""
    return write_calls_from(tb, calls, START)


def write_calls_from(tb, calls, t):
    """``write_calls`` from ``t`` on."""
    spans = []
    for name, wall, launches in calls:
        tb.py(name, t, wall)
        for at, dur, k_at, k_dur in launches:
            tb.launched_kernel(f"k_{name[:12]}", t + at, dur, t + k_at, k_dur)
        spans.append((t, t + wall))
        t += wall + GAP
    tb.py(MODULE, 0, t + 1_000)
    return spans


def four_kinds(first_launch: int, first_wall: int):
    """embed (the first call, one launch of ``first_launch``) and three blocks of
    four 6 us launches 2 ms apart each, one call per kind."""
    embed = ("model.py(10): embed", first_wall,
             [(500, first_launch, 500 + first_launch + 1_000, 100_000)])
    blocks = []
    for j, (wall, kernel) in enumerate([(10_000_000, 3_000_000), (12_000_000, 4_000_000),
                                        (11_000_000, 5_000_000)]):
        blocks.append((f"model.py({20 + j}): block_{j}", wall,
                       [(1_000 + 2_000_000 * i, 6_000, 1_000 + 2_000_000 * i + 10_000,
                         kernel // 4) for i in range(4)]))
    return [embed, *blocks]


def test_a_start_up_call_of_its_own_kind_is_cold_and_not_typical(tb, analyze_builder):
    calls = four_kinds(first_launch=49_000_000, first_wall=50_000_000)
    spans = write_calls(tb, calls)
    r = analyze_builder(tb)
    assert [k.name for k in r.calls.kinds] == [c[0] for c in calls]
    # the first launch (49 ms) is over half its call (50 ms) and over 5x the other
    # launches' median (6 us): call #0 is cold, the others warm
    assert r.calls.cold == (0,)
    assert r.calls.warm_count == 3
    reason = r.calls.per_call[0].cold_reason
    # the kernel begins 1 us after its launch returns: the whole launch is before it
    assert reason == ("profiler start-up: the trace's first launch took 49 ms of the call's "
                      "50 ms before its device work began (the other launches' median 6 us)")
    # the typical call: the warm kind with the most wall time, block_1 (12 ms)
    t = r.typical
    assert t is not None and t.index == 2 and t.name == calls[2][0]
    a, b = spans[2]
    assert (t.start_ns, t.end_ns) == (a, b)
    # its device work: four kernels of 1 ms, 2 ms apart, all inside the call
    busy = 4 * 1_000_000
    assert t.metrics["device_busy_ns"] == busy
    idle = (b - a) - busy
    v = verdict(r)
    assert v.id == "host-bound"
    assert v.message.startswith(f"host-bound: the device is idle {fmt_pct(idle / (b - a))} "
                                f"of a typical call ({fmt_ns(b - a)})")
    # the warm wall-time p50 is over the three blocks (10, 11, 12 ms): 11 ms
    assert r.calls.stats["api_ns"].p50 == 11_000_000
    cold = next(f for f in r.findings if f.id == "cold-path")
    assert "mostly profiler start-up" in cold.message
    assert "warm calls (without it): p50 11 ms over 3" in cold.message
    # the what-if projections are of the typical call, not the start-up call
    assert r.what_if and all(w.measured_ns == b - a for w in r.what_if)


def test_diff_reads_the_same_warm_calls(tb, analyze_builder):
    """``diff`` compares explain's warm calls: the start-up call is out of its samples."""
    from traceview.multi.compare import _warm

    write_calls(tb, four_kinds(first_launch=49_000_000, first_wall=50_000_000))
    r = analyze_builder(tb)
    assert sorted(_warm(r, "api_ns").tolist()) == [10_000_000, 11_000_000, 12_000_000]


def test_a_first_call_long_for_its_device_work_stays_warm(tb, analyze_builder):
    """The converse: the first call is the longest for real device work (a 40 ms kernel
    after a 7 us launch): no start-up, it stays warm and typical."""
    calls = four_kinds(first_launch=7_000, first_wall=50_000_000)
    embed = (calls[0][0], calls[0][1], [(500, 7_000, 2_000, 40_000_000)])
    spans = write_calls(tb, [embed, *calls[1:]])
    r = analyze_builder(tb)
    assert r.calls.cold == ()
    assert r.calls.warm_count == 4
    t = r.typical
    assert t is not None and t.index == 0 and (t.start_ns, t.end_ns) == spans[0]
    assert t.metrics["device_busy_ns"] == 40_000_000


def test_a_first_call_blocking_on_its_copy_stays_warm(tb, analyze_builder):
    """The converse for a blocking copy: the first launch is a 3.6 ms cudaMemcpy that
    waits for its 3.5 ms copy (a pipeline moving its input to the device). The launch is
    most of the call and 600x the others, but the device worked through it: no start-up,
    the call stays warm and, holding the most wall time, typical."""
    t0 = START
    tb.py("model.py(10): to_device", t0, 3_750_000)
    corr = tb.launch(t0 + 100_000, 3_600_000, api="cudaMemcpyAsync")
    tb.kernel("Memcpy HtoD (Pageable -> Device)", t0 + 150_000, 3_500_000, corr=corr,
              cat="gpu_memcpy")
    rest = four_kinds(first_launch=7_000, first_wall=50_000_000)[1:]
    spans = write_calls_from(tb, rest, t0 + 3_750_000 + GAP)
    r = analyze_builder(tb)
    assert r.calls.count == 4 and r.calls.cold == ()
    assert r.typical is not None and r.typical.index == 2
    assert (r.typical.start_ns, r.typical.end_ns) == spans[1]
    assert r.calls.per_call[0].metrics["kernel_ns"] == 3_500_000


def test_a_first_launch_long_against_a_long_call_stays_warm(tb, analyze_builder):
    """A first launch 100x the others but under half its call: the call's time is its
    own work, not the start-up's, and it stays warm."""
    write_calls(tb, four_kinds(first_launch=600_000, first_wall=50_000_000))
    r = analyze_builder(tb)
    assert r.calls.cold == ()
    assert r.typical is not None and r.typical.index == 0


def test_only_a_start_up_call_leaves_no_typical_call(tb, analyze_builder):
    """Nothing warm remains: no call is typical, and the cold-path finding says so."""
    calls = four_kinds(first_launch=49_000_000, first_wall=50_000_000)
    # the first call, then one short launch outside every call (a median to compare with)
    write_calls(tb, calls[:1])
    tb.launched_kernel("k_after", 60_000_000, 6_000, 60_010_000, 1_000)
    r = analyze_builder(tb)
    assert r.calls.count == 1 and r.calls.cold == (0,) and r.calls.warm_count == 0
    assert r.typical is None and r.typical_call is None
    assert not r.what_if
    cold = next(f for f in r.findings if f.id == "cold-path")
    assert cold.message.endswith("no warm call remains, so no call is typical")


SWITCH = ("CodingPlatelets__SwitchTransformers/"
          "result__trace_100Kpar_4exp_8batch_128seq_1024.json.gz")
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
LAUNCH_NAMES = ("cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync")


def _ns(x) -> int:
    return int(Decimal(x) * 1000)


def test_switch_transformer_start_up_call_is_not_typical():
    path = public_corpus.locate(SWITCH)
    if path is None:
        pytest.skip(f"public corpus trace {SWITCH} absent")
    with gzip.open(path, "rt") as f:
        events = [e for e in json.load(f, parse_float=Decimal)["traceEvents"]
                  if e.get("ph") == "X"]
    # exact duplicates are dropped by the loader: count each event once
    seen, xs = set(), []
    for e in events:
        key = (e.get("cat"), e.get("name"), str(e["ts"]), str(e.get("dur")), e.get("tid"))
        if key not in seen:
            seen.add(key)
            xs.append(e)
    launches = sorted((e for e in xs if e.get("cat") in LAUNCH_CATS
                       and e["name"] in LAUNCH_NAMES), key=lambda e: _ns(e["ts"]))
    first = launches[0]
    f_dur = _ns(first["dur"])
    durs = sorted(_ns(e["dur"]) for e in launches[1:])
    med = durs[(len(durs) + 1) // 2 - 1]
    modules = sorted((e for e in xs if e.get("cat") == "python_function"
                      and e["name"].startswith("nn.Module: ")
                      and e["name"].count("_") >= 1), key=lambda e: _ns(e["ts"]))
    embed = next(e for e in modules if e["name"] == "nn.Module: Embedding_0")
    ea, eb = _ns(embed["ts"]), _ns(embed["ts"]) + _ns(embed["dur"])
    assert ea <= _ns(first["ts"]) < eb
    # its device work: the work of its correlation id; the launch's time before it began
    corr = first["args"]["correlation"]
    work_start = min(_ns(e["ts"]) for e in xs if e.get("cat") in ("kernel", "gpu_memcpy",
                                                                 "gpu_memset")
                     and e.get("args", {}).get("correlation") == corr)
    f_before = min(_ns(first["ts"]) + f_dur, work_start) - _ns(first["ts"])
    assert f_before > 0.5 * (eb - ea) and f_before > 5 * med  # the start-up rule, by hand

    r = traceview.analyze(path)
    startup = next(c for c in r.calls.per_call if c.name == "nn.Module: Embedding_0")
    assert startup.cold and startup.index in r.calls.cold
    assert startup.cold_reason == (f"profiler start-up: the trace's first launch took "
                                   f"{fmt_ns(f_before)} of the call's {fmt_ns(eb - ea)} before "
                                   f"its device work began (the other launches' median "
                                   f"{fmt_ns(med)})")
    # the typical call: the warm layer at the nearest-rank p50 of the warm layers' wall
    # times (the blocks are one kind, the instances of one module class); the others are
    # cold only where first uses hold most of them (test_first_use_call's rule, counted
    # from the raw events)
    others = [c for c in r.calls.per_call if c.index != startup.index]
    for c in others:
        frame = next(e for e in modules if e["name"] == c.name)
        a, b = _ns(frame["ts"]), _ns(frame["ts"]) + _ns(frame["dur"])
        _, took, usual = first_uses_by_hand(xs, a, b)
        assert c.cold == (took - usual > 0.5 * (b - a))
    layers = [e for e in modules if e["name"].startswith("nn.Module: SwitchTransformerBlock_")
              and not next(c for c in others if c.name == e["name"]).cold]
    walls = sorted(_ns(e["dur"]) for e in layers)
    p50 = walls[(len(walls) + 1) // 2 - 1]
    t = r.typical
    assert t is not None and t.index != startup.index
    frame = next(e for e in modules if e["name"] == t.name)
    assert frame in layers and _ns(frame["dur"]) == p50
    a, b = _ns(frame["ts"]), _ns(frame["ts"]) + _ns(frame["dur"])
    assert (t.start_ns, t.end_ns) == (a, b)
    work = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in xs
            if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    busy = rawcount.covered(work, a, b)
    assert t.metrics["device_busy_ns"] == busy
    v = verdict(r)
    idle = (b - a - busy) / (b - a)
    # the verdict's side is the typical call's idle share against half (findings.py)
    assert v.message.startswith(
        f"host-bound: the device is idle {fmt_pct(idle)} of a typical call ({fmt_ns(b - a)})"
        if idle >= 0.5 else
        f"device-bound: the device is busy {fmt_pct(1 - idle)} of a typical call "
        f"({fmt_ns(b - a)})")
    assert all(w.measured_ns == b - a for w in r.what_if)
