"""A call dominated by first uses is cold whatever its kind, and never the typical call.

The shape of a real trace (a Switch Transformer's forward, nn.Module frames of one call
each): once the profiler's start-up call is cold, the first block's call was the typical
call, but most of its 155 ms went to the first launches of kernels the trace had not
launched before (each first launch 10-25 ms before its kernel began, the same kernels'
later launches a few microseconds: lazy module loading). A call of a kind of its own has
no others of its kind to be slow against. Here such a call is cold with its reason, and
the typical call is another kind's; first launches that the later launches match, or of
kernels never launched again, or too small a part of the call, leave it warm. Every
expected figure is counted from the events this file writes (or, for the real trace,
from its raw events) by ``first_uses_by_hand``.
"""

from __future__ import annotations

import gzip
import json
from decimal import Decimal

import public_corpus
import pytest
import reference_count

import rawcount
import traceview
from traceview.units import fmt_ns, fmt_pct

MODULE = "script.py(1): <module>"
START = 1_000
GAP = 5_000
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
WORK_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def _ns(x) -> int:
    return int(Decimal(str(x)) * 1000)


def _lower_median(values: list[int]) -> int:
    v = sorted(values)
    return v[max(1, -(-len(v) // 2)) - 1]


def first_uses_by_hand(events: list[dict], a: int, b: int, ratio: float = 5.0
                       ) -> tuple[int, int, int]:
    """The first-use launches in [a, b), from the raw events: (launches, their time before
    their device work began with the device idle, the same kernels' later launches' lower
    medians of it, summed). A launch's kernel is the name of its device work; its time
    is from its start to the earlier of its end and its work's start, less the time any
    device work ran then (waiting behind queued work is no set-up). A first use is a
    kernel's first launch in the trace whose time is over ``ratio`` times both the lower
    median of that kernel's later launches' and the lower median duration of every
    launch API call (``launch_apis`` of the rule table, as the reference reads it)."""
    work: dict = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in WORK_CATS:
            work.setdefault(e.get("args", {}).get("correlation"), []).append(e)
    busy = rawcount.union([(_ns(e["ts"]), _ns(e["ts"]) + _ns(e.get("dur", 0)))
                           for w in work.values() for e in w])
    apis = reference_count.launch_apis()
    calls = [e for e in events if e.get("ph") == "X" and e.get("cat") in LAUNCH_CATS]
    typical = _lower_median([_ns(e.get("dur", 0)) for e in calls if e["name"] in apis])
    launches = sorted((e for e in calls if e.get("args", {}).get("correlation") in work),
                      key=lambda e: _ns(e["ts"]))
    per_kernel: dict[str, list[tuple[int, int]]] = {}
    for e in launches:
        w = work[e["args"]["correlation"]]
        began = min(_ns(x["ts"]) for x in w)
        start, end = _ns(e["ts"]), _ns(e["ts"]) + _ns(e.get("dur", 0))
        before = max(0, min(end, began) - start)
        before -= rawcount.length(rawcount.clip(busy, start, start + before))
        name = min(w, key=lambda x: _ns(x["ts"]))["name"]
        per_kernel.setdefault(name, []).append((start, before))
    n = took = usual = 0
    for runs in per_kernel.values():
        (start, before), later = runs[0], [r[1] for r in runs[1:]]
        if not later or not a <= start < b:
            continue
        med = _lower_median(later)
        if before > ratio * max(med, typical):
            n, took, usual = n + 1, took + before, usual + med
    return n, took, usual


def write_calls(tb, calls):
    """One Python frame per call (``(name, wall, [(kernel, launch_at, launch_dur,
    kernel_at, kernel_dur)...])``, times from the call's start), one after the other
    under <module>. Returns each call's (start, end)."""
    spans, t = [], START
    for name, wall, launches in calls:
        tb.py(name, t, wall)
        for kernel, at, dur, k_at, k_dur in launches:
            tb.launched_kernel(kernel, t + at, dur, t + k_at, k_dur)
        spans.append((t, t + wall))
        t += wall + GAP
    tb.py(MODULE, 0, t + 1_000)
    return spans


KERNELS = ("k_attn", "k_gate", "k_topk", "k_ffn")


def blocks(first_launch: int, first_wall: int, *, later_launch: int = 6_000,
           kernels: tuple[str, ...] = KERNELS):
    """embed (one 6 us launch of a kernel of its own), then three blocks of one call each
    launching ``KERNELS`` once, each launch followed by its 1 ms kernel 1 us later: block_0
    (``first_wall``) with launches of ``first_launch``, the others of ``later_launch``."""
    embed = ("model.py(10): embed", 2_000_000, [("k_embed", 500, 6_000, 10_000, 1_000_000)])
    out = [embed]
    for j, wall in enumerate([first_wall, 12_000_000, 10_000_000]):
        dur = first_launch if j == 0 else later_launch
        names = kernels if j == 0 else KERNELS
        step = dur + 1_200_000
        out.append((f"model.py({20 + j}): block_{j}", wall,
                    [(k, 1_000 + step * i, dur, 1_000 + step * i + dur + 1_000, 1_000_000)
                     for i, k in enumerate(names)]))
    return out


def verdict(r):
    return next(f for f in r.findings if f.id in ("host-bound", "device-bound"))


def test_a_first_use_call_of_its_own_kind_is_cold_and_not_typical(tb, analyze_builder):
    calls = blocks(first_launch=10_000_000, first_wall=46_000_000)
    spans = write_calls(tb, calls)
    a, b = spans[1]
    n, took, usual = first_uses_by_hand(tb.events, a, b)
    # four first launches of 10 ms against 6 us later: 40 ms beyond them, of a 46 ms call
    assert (n, took, usual) == (4, 40_000_000, 24_000)
    assert took - usual > 0.5 * (b - a)
    r = analyze_builder(tb)
    assert [c.name for c in r.calls.per_call] == [c[0] for c in calls]
    assert r.calls.cold == (1,) and r.calls.warm_count == 3
    assert r.calls.per_call[1].cold_reason == (
        f"first use: {n} launches of kernels the trace had not launched before waited "
        f"{fmt_ns(took)} of the call's {fmt_ns(b - a)}, the device idle, before their device "
        f"work began; the same kernels' later launches wait {fmt_ns(usual)} (their medians, "
        f"summed)")
    # the typical call: the warm kind with the most wall time, block_1 (12 ms)
    t = r.typical
    assert t is not None and t.index == 2 and (t.start_ns, t.end_ns) == spans[2]
    ta, tb_ = spans[2]
    busy = 4 * 1_000_000  # its four 1 ms kernels, apart, inside the call
    assert t.metrics["device_busy_ns"] == busy
    assert verdict(r).message.startswith(
        f"host-bound: the device is idle {fmt_pct((tb_ - ta - busy) / (tb_ - ta))} of a "
        f"typical call ({fmt_ns(tb_ - ta)})")
    # the warm wall-time p50 over embed (2 ms), block_1 (12 ms), block_2 (10 ms): 10 ms
    assert r.calls.stats["api_ns"].p50 == 10_000_000
    cold = next(f for f in r.findings if f.id == "cold-path")
    assert r.calls.per_call[1].cold_reason in cold.message


def test_first_launches_as_slow_as_the_later_ones_stay_warm(tb, analyze_builder):
    """The converse: block_0's launches are 10 ms and so are the later launches of the
    same kernels (a launch that blocks every time): nothing is a first use."""
    calls = blocks(first_launch=10_000_000, first_wall=46_000_000, later_launch=10_000_000)
    calls[2] = (calls[2][0], 50_000_000, calls[2][2])
    calls[3] = (calls[3][0], 48_000_000, calls[3][2])
    spans = write_calls(tb, calls)
    assert first_uses_by_hand(tb.events, *spans[1])[0] == 0
    r = analyze_builder(tb)
    assert r.calls.cold == ()


def test_first_launches_waiting_behind_device_work_stay_warm(tb, analyze_builder):
    """block_0's slow first launches wait while a 45 ms kernel it launched first runs (a
    blocking launch queued behind work, as a copy behind 493 ms of kernels): the device is
    busy all the while, the wait is no set-up of their own, and the call stays warm."""
    calls = blocks(first_launch=10_000_000, first_wall=46_000_000)
    spans = write_calls(tb, calls)
    a, _ = spans[1]
    tb.launched_kernel("k_long", a + 100, 500, a + 700, 45_500_000)
    assert first_uses_by_hand(tb.events, *spans[1])[0] == 0
    r = analyze_builder(tb)
    assert r.calls.cold == ()


def test_kernels_never_launched_again_are_no_evidence(tb, analyze_builder):
    """block_0's slow first launches are of kernels no later call launches: nothing says
    a later launch of them would be quicker, and the call stays warm (and typical)."""
    calls = blocks(first_launch=10_000_000, first_wall=46_000_000,
                   kernels=("k_once_a", "k_once_b", "k_once_c", "k_once_d"))
    spans = write_calls(tb, calls)
    assert first_uses_by_hand(tb.events, *spans[1])[0] == 0
    r = analyze_builder(tb)
    assert r.calls.cold == ()
    assert r.typical is not None and r.typical.index == 1


def test_first_uses_under_half_the_call_stay_warm(tb, analyze_builder):
    """First uses of 4 x 2 ms (8 ms beyond the later launches) in a 20 ms call: under
    half of it, the call's time is its own and it stays warm."""
    calls = blocks(first_launch=2_000_000, first_wall=20_000_000)
    spans = write_calls(tb, calls)
    n, took, usual = first_uses_by_hand(tb.events, *spans[1])
    assert n == 4 and took - usual <= 0.5 * (spans[1][1] - spans[1][0])
    r = analyze_builder(tb)
    assert r.calls.cold == ()


SWITCH = ("CodingPlatelets__SwitchTransformers/"
          "result__trace_100Kpar_4exp_8batch_128seq_1024.json.gz",
          "CodingPlatelets__SwitchTransformers/"
          "result__trace_128token_100Kpar_4exp_4batch_128seq.json.gz")


def _events(path) -> list[dict]:
    """The trace's complete events, each exact duplicate once (the loader drops them)."""
    with gzip.open(path, "rt") as f:
        events = [e for e in json.load(f, parse_float=Decimal)["traceEvents"]
                  if e.get("ph") == "X"]
    seen, out = set(), []
    for e in events:
        key = (e.get("cat"), e.get("name"), str(e["ts"]), str(e.get("dur")), e.get("tid"),
               json.dumps(e.get("args", {}).get("correlation")))
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out


@pytest.mark.parametrize("name", SWITCH)
def test_switch_transformer_first_block_is_a_first_use_call(name):
    path = public_corpus.locate(name)
    if path is None:
        pytest.skip(f"public corpus trace {name} absent")
    xs = _events(path)
    frames = {e["name"]: (_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in xs
              if e.get("cat") == "python_function" and e["name"].startswith("nn.Module: ")}
    r = traceview.analyze(path)
    block = next(c for c in r.calls.per_call if c.name == "nn.Module: SwitchTransformerBlock_0")
    a, b = frames[block.name]
    assert (block.start_ns, block.end_ns) == (a, b)
    n, took, usual = first_uses_by_hand(xs, a, b)
    assert took - usual > 0.5 * (b - a)  # the rule, by hand: most of the call
    assert block.cold and block.index in r.calls.cold
    assert block.cold_reason == (
        f"first use: {n} launches of kernels the trace had not launched before waited "
        f"{fmt_ns(took)} of the call's {fmt_ns(b - a)}, the device idle, before their device "
        f"work began; the same kernels' later launches wait {fmt_ns(usual)} (their medians, "
        f"summed)")
    # every other call the rule leaves warm is warm; the typical call is the warm layer
    # at the nearest-rank p50 of the warm layers' wall times (the ten blocks are one kind,
    # the instances of one module class), and no first-use call
    for c in r.calls.per_call:
        ca, cb = frames[c.name]
        k, t_, u = first_uses_by_hand(xs, ca, cb)
        if c.cold_reason and c.cold_reason.startswith("first use"):
            assert t_ - u > 0.5 * (cb - ca)
        elif not c.cold_reason:
            assert not c.cold and t_ - u <= 0.5 * (cb - ca)
    walls = sorted(frames[c.name][1] - frames[c.name][0] for c in r.calls.per_call
                   if c.name.startswith("nn.Module: SwitchTransformerBlock_") and not c.cold)
    p50 = walls[(len(walls) + 1) // 2 - 1]
    t = r.typical
    assert t is not None and not t.cold
    assert t.name.startswith("nn.Module: SwitchTransformerBlock_")
    assert (t.start_ns, t.end_ns) == frames[t.name] and t.api_ns == p50
