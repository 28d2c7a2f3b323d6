"""Interleaved rounds of fresh processes, one per side (torch-free).

The GPU machine drifts over minutes and one process's median sits up to 2x from the
next one's, so two variants measured one after the other compare machine states, not
code. This module runs the two variants as *rounds* of fresh processes, each round one
process of each side back to back in an order that alternates (``paired.interleaved_order``:
balanced ``AB BA AB ...`` or seeded-random per round, never all of one side first).
A :class:`~traceview.runner.process.ChildSpec` describes one side's process,
:func:`run_interleaved` runs them::

    a = ChildSpec("A", entry=("-m", "my.child"), config={"n": 100})
    b = ChildSpec("B", entry=("-m", "my.child"), config={"n": 100},
                  python="/venv2/bin/python", env={"MY_FLAG": "1"}, path=("/patches",))
    runs = run_interleaved(a, b, rounds=10, seed=None)   # list[ProcessRun], run order
    pairs = paired_figures(runs, "p50_ns")               # ([a per round], [b per round])
    cmp = traceview.paired.compare(*pairs)

How a process starts and reports is :mod:`traceview.runner.process`'s; a child's
``{"error": ...}`` line, a non-zero exit or a missing result line stops the run with an
error naming the side and the round.
:class:`~traceview.multi.ab_result.ProcessRun` keeps the round, the side, its position
within the round, the process's wall time and its JSON result.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

from traceview.errors import CaptureError
from traceview.multi.ab_result import ProcessRun
from traceview.paired import interleaved_order
from traceview.runner.outcome import CHILD_TIMEOUT_S
from traceview.runner.process import ChildSpec, Starter, run_process


def check_time_limit(time_limit_s: float | None) -> None:
    """``--time-limit`` is a finite number of seconds > 0 (or not given)."""
    if time_limit_s is not None and not (math.isfinite(time_limit_s) and time_limit_s > 0):
        raise CaptureError(f"--time-limit takes a number of seconds > 0, got {time_limit_s:g}")


def _longest(took: Sequence[float]) -> float:
    """The longest round so far, leaving out round 1 once there are others: it compiles
    and loads caches (40 s against 24-28 s for the rest on the H200), so counting it
    would stop a run a round early."""
    return max(took[1:] if len(took) > 1 else took, default=0.0)


def rounds_in_time(rounds: int, time_limit_s: float | None,
                   clock: Callable[[], float] = time.monotonic,
                   started: float | None = None) -> Iterator[int]:
    """The rounds ``0 .. rounds-1`` that may start: each only when the time used so far
    plus the longest round so far (:func:`_longest`) still fits in ``time_limit_s``, so
    a run planned for more rounds than the time allows ends with whole rounds.

    ``started`` (a ``clock()`` value): when the time limit began, if before the rounds
    (``ab`` counts its checks and probes too); then round 1 also needs a guess of its
    length, and gets none: it always starts, and the limit binds from round 2."""
    if rounds < 1:
        raise CaptureError(f"--rounds must be >= 1, got {rounds}")
    check_time_limit(time_limit_s)
    round_start = clock()
    start = round_start if started is None else started
    took: list[float] = []
    for r in range(rounds):
        now = clock()
        if r:
            took.append(now - round_start)
            if time_limit_s is not None and now - start + _longest(took) > time_limit_s:
                return
        round_start = now
        yield r


def run_interleaved(a: ChildSpec, b: ChildSpec, rounds: int, seed: int | None = None,
                    on_run: Callable[[ProcessRun], None] | None = None,
                    timeout_s: float = CHILD_TIMEOUT_S,
                    time_limit_s: float | None = None,
                    clock: Callable[[], float] = time.monotonic,
                    starters: Mapping[str, Starter] | None = None,
                    started: float | None = None) -> list[ProcessRun]:
    """Run ``rounds`` rounds of one fresh process per side, in interleaved order.

    ``seed`` None: balanced order (AB, BA, AB, ...); an int: each round's order drawn at
    random from it. ``on_run`` sees each process as it finishes (progress). Returns the
    runs in the order they ran; the first failing process stops the run (TraceviewError).
    ``time_limit_s``: :func:`rounds_in_time` (never half a pair); the caller compares
    ``len(runs) // 2`` with ``rounds`` to say it stopped early; ``started`` as there.
    ``starters`` (by label): how a side's process starts, e.g. forked from a template
    (:class:`traceview.runner.fork_server.Template`); default: spawned fresh
    (:func:`traceview.runner.process.run_process`).
    """
    sides = {"A": a, "B": b}
    start = dict(starters or {})
    for label, side in sides.items():
        start.setdefault(label, _spawner(side))
    order = interleaved_order(rounds, seed)
    runs: list[ProcessRun] = []
    for r in rounds_in_time(rounds, time_limit_s, clock, started):
        for _, which in order[2 * r:2 * r + 2]:
            i = len(runs)
            wall, result = start[which](r, timeout_s)
            run = ProcessRun(index=i, round=r, side=which, position=i % 2, wall_ns=wall,
                             result=result)
            runs.append(run)
            if on_run is not None:
                on_run(run)
    return runs


def run_same_process(pair: ChildSpec, rounds: int,
                     on_run: Callable[[ProcessRun], None] | None = None,
                     timeout_s: float = CHILD_TIMEOUT_S,
                     time_limit_s: float | None = None,
                     clock: Callable[[], float] = time.monotonic,
                     starter: Starter | None = None,
                     started: float | None = None) -> list[ProcessRun]:
    """``rounds`` fresh processes of ``pair``, each measuring both variants in blocks.

    ``pair``'s entry prints ``{"A": figures, "B": figures, ...}``
    (``traceview.ab.ab_pair_child``); each process becomes two :class:`ProcessRun`
    records of one round, so :func:`paired_figures` and the statistics are the same as
    for fresh processes per side. ``time_limit_s``, ``started`` and ``starter`` as in
    :func:`run_interleaved`.
    """
    start = starter or _spawner(pair)
    runs: list[ProcessRun] = []
    for r in rounds_in_time(rounds, time_limit_s, clock, started):
        wall, result = start(r, timeout_s)
        shared = {k: v for k, v in result.items() if k not in ("A", "B")}
        for label in ("A", "B"):
            run = ProcessRun(index=len(runs), round=r, side=label, position=None,
                             wall_ns=wall, result=dict(result[label], **shared))
            runs.append(run)
            if on_run is not None:
                on_run(run)
    return runs


def _spawner(side: ChildSpec) -> Starter:
    return lambda round_, timeout_s: run_process(side, round_, timeout_s)
