"""The unprofiled split of a call: each chosen function's inclusive time per call.

One function is timed per run, so the only perturbation of a run is that function's
own two timer events per invocation, exactly what a hand-written staged timing adds.
(Timing every chosen function at once inflates an outer function by the events of all
the timed functions below it: measured on the H200, FlagGems sigmoid's ``__call__``
read 191 us that way against 69 us staged.)

A block holds, for each chosen function in a shuffled order, a run of the call with no
timer (the call's own time) beside a run with that function timed; the calibration
(``calibrate``) is measured in every block too, so slow drift of the machine lands
alike on all of them. Per block and function: the median over the run's calls of the
function's inclusive time minus the calibrated in-band cost of its invocations; the
figure is the median over blocks, with the signed-rank interval over the blocks.
"""

from __future__ import annotations

import random
import sys
import time
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from traceview.paired import signed_rank_interval
from traceview.stats import median
from traceview.unprofiled.calibrate import Calibration, calibrate
from traceview.unprofiled.timer import METHOD, FunctionTimer

#: Blocks of interleaved runs; the interval is over these.
BLOCKS = 10
#: Target wall time of one run of calls, and its bounds in calls.
RUN_TARGET_NS = 15_000_000
RUN_CALLS_MIN, RUN_CALLS_MAX = 20, 400


def _run(call: Callable[[], Any], sync: Callable[[], Any], n: int,
         timer: FunctionTimer | None) -> tuple[list[int], list[tuple[int, int, int]]]:
    """``n`` synchronized calls: each call's wall ns, and (with a timer) each call's
    (inclusive ns, outermost invocations, nested invocations)."""
    perf = time.perf_counter_ns
    walls: list[int] = []
    reads: list[tuple[int, int, int]] = []
    if timer is not None:
        timer.reading()
    for _ in range(n):
        t0 = perf()
        call()
        sync()
        walls.append(perf() - t0)
        if timer is not None:
            r = timer.reading()
            reads.append((r.ns, r.outer, r.nested))
    return walls, reads


def _interval(values: list[float]) -> tuple[int, int, int]:
    centre = round(median(values))
    ci = signed_rank_interval(values)
    if ci is None:
        return centre, round(min(values)), round(max(values))
    return centre, round(ci[0]), round(ci[1])


def measure(call: Callable[[], Any], sync: Callable[[], Any],
            targets: Mapping[str, Sequence[types.FunctionType | types.CodeType]], *, blocks: int = BLOCKS,
            seed: int = 0, calls_per_run: int | None = None) -> dict[str, Any]:
    """The ``split`` block for ``targets`` (frame name -> its function objects).

    ``call`` must be warm. All figures are integer ns per call of ``call``.
    """
    rng = random.Random(seed)
    walls0, _ = _run(call, sync, 20, None)
    call_ns = max(1, round(median(walls0)))
    n = calls_per_run or max(RUN_CALLS_MIN, min(RUN_CALLS_MAX, RUN_TARGET_NS // call_ns))
    timers, untimeable = {}, {}
    for name, funcs in targets.items():
        try:
            timers[name] = FunctionTimer(funcs)
            with timers[name]:  # a stand-in that cannot be installed says so here
                pass
        except TypeError as exc:  # a generator, or a code object only before 3.12
            untimeable[name] = str(exc)
    names = list(timers)
    per_fn: dict[str, dict[str, list[float]]] = {
        name: {"est": [], "share": [], "count": [], "cost": []} for name in names}
    calls_block: list[float] = []
    cals: list[Calibration] = []
    for _ in range(blocks):
        cal = calibrate(loops=1000, repeats=3)
        cals.append(cal)
        order = names[:]
        rng.shuffle(order)
        block_walls: list[int] = []
        for name in order:
            plain, _ = _run(call, sync, n, None)
            with timers[name] as timer:
                timed, reads = _run(call, sync, n, timer)
            block_walls += plain
            est = median([ns - outer * cal.in_band_ns - nested * cal.per_invocation_ns
                          for ns, outer, nested in reads])
            f = per_fn[name]
            f["est"].append(max(0.0, est))
            f["share"].append(max(0.0, est) / max(median(plain), 1))
            f["count"].append(median([o + k for _, o, k in reads]))
            f["cost"].append(median(timed) - median(plain))
        calls_block.append(median(block_walls) if block_walls else median(walls0))
    call_c, call_lo, call_hi = _interval(calls_block)
    functions: list[dict[str, Any]] = []
    for name in names:
        f = per_fn[name]
        inc, lo, hi = _interval(f["est"])
        functions.append({
            "name": name, "inclusive_ns": inc, "low_ns": lo, "high_ns": hi,
            "share": round(median(f["share"]), 4),
            "invocations_per_call": median(f["count"]),
            "measuring_cost_ns": round(median(f["cost"])),
        })
    functions.sort(key=lambda d: -int(d["inclusive_ns"]))
    in_band = round(median([c.in_band_ns for c in cals]))
    per_inv = round(median([c.per_invocation_ns for c in cals]))
    return {
        "method": METHOD,
        "python": sys.version.split()[0],
        "blocks": blocks, "calls_per_run": n,
        "call_ns": call_c, "call_low_ns": call_lo, "call_high_ns": call_hi,
        "calibration": {
            "in_band_ns": in_band, "per_invocation_ns": per_inv,
            "what": "measured on an empty function in every block; the in-band part is "
                    "subtracted per timed invocation, the whole cost per nested invocation",
        },
        "functions": functions,
        "untimeable": untimeable,
    }
