"""What the timer itself costs, measured in the process that measures, the same way.

Timing a function adds two timer events to each of its invocations. Part of their cost
falls between the two clock readings (``in_band_ns``: it inflates the figure read for
the function and is subtracted from it); all of it lands on the enclosing call
(``per_invocation_ns``: what the measurement costs the call, stated, and subtracted for
nested invocations of a recursive function, whose whole events lie inside the outer
span). Both are read on an empty function of the same shape (a plain function and a
method, both with one argument), so whatever the mechanism costs on this interpreter
is what gets removed.
"""

from __future__ import annotations

import time
import types
from dataclasses import dataclass

from traceview.stats import median
from traceview.unprofiled.timer import FunctionTimer


def _empty(a: object) -> None:
    return None


class _Shape:
    def empty(self, a: object) -> None:
        return None


@dataclass(frozen=True)
class Calibration:
    in_band_ns: int  # per timed invocation, inside the two clock readings
    per_invocation_ns: int  # per timed invocation, added to the enclosing call
    empty_call_ns: int  # an untimed call of the empty function (context)


def _loop(f: object, arg: object, n: int) -> int:
    perf = time.perf_counter_ns
    t0 = perf()
    for _ in range(n):
        f(arg)  # type: ignore[operator]
    return perf() - t0


def calibrate(loops: int = 2000, repeats: int = 5, *, method: bool = False) -> Calibration:
    """Median over ``repeats`` of the empty function timed and untimed, alternated."""
    func: types.FunctionType = _Shape.empty if method else _empty  # type: ignore[assignment]
    target: object = _Shape().empty if method else _empty
    in_band, added, plain = [], [], []
    _loop(target, 1, loops)  # warm
    for _ in range(repeats):
        t_plain = _loop(target, 1, loops)
        with FunctionTimer(func) as timer:
            t_timed = _loop(target, 1, loops)
            r = timer.reading()
        in_band.append(r.ns / max(r.outer, 1))
        added.append((t_timed - t_plain) / loops)
        plain.append(t_plain / loops)
    return Calibration(round(median(in_band)), max(0, round(median(added))), round(median(plain)))
