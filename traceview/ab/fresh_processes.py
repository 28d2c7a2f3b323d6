"""Interleaved rounds of fresh processes, one per side (torch-free): the generic runner.

The GPU machine drifts over minutes and one process's median sits up to 2x from the
next one's, so two variants measured one after the other compare machine states, not
code. This module runs the two variants as *rounds* of fresh processes, each round one
process of each side back to back in an order that alternates (``paired.interleaved_order``:
balanced ``AB BA AB ...`` or seeded-random per round, never all of one side first).
:class:`Side` describes one variant's process, :func:`run_interleaved` runs them::

    a = Side("A", entry=("-m", "my.child"), config={"n": 100})
    b = Side("B", entry=("-m", "my.child"), config={"n": 100},
             python="/venv2/bin/python", env={"MY_FLAG": "1"}, path=("/patches",))
    runs = run_interleaved(a, b, rounds=10, seed=None)   # list[ProcessRun], run order
    pairs = paired_figures(runs, "p50_ns")               # ([a per round], [b per round])
    cmp = traceview.paired.compare(*pairs)

Each process is ``[side.python, *side.entry]`` started fresh, with ``side.config``
serialised as JSON on stdin, the environment of this process plus ``side.env``, and
``PYTHONPATH`` = ``side.path`` entries, then the folder holding this ``traceview``
package (so another interpreter without traceview installed still finds the child),
then the inherited ``PYTHONPATH``. The child prints its result as one JSON object on
the last stdout line that starts with ``{``; ``{"error": "...", "exit_code": N}`` is a
problem the user can fix and stops the run with that line (and exit code N, default 2).
A non-zero exit or no JSON line is an error naming the side, the round and the last
line of stderr. :class:`~traceview.multi.ab_result.ProcessRun` keeps the round, the
side, its position within the round, the process's wall time and its JSON result.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from traceview.errors import CaptureError, CorrectnessError
from traceview.multi.ab_result import ProcessRun
from traceview.paired import interleaved_order

#: A child that compiles, or imports a large library, can take a while.
PROCESS_TIMEOUT_S = 600
#: The environment variable that tells a child when (``time.monotonic_ns()``, one clock
#: for every process of the machine) its parent started it: the child's phases begin there.
SPAWNED_ENV = "TRACEVIEW_SPAWNED_NS"
#: One process of a side for a round: ``(round, timeout_s) -> (wall ns, JSON result)``.
Starter = Callable[[int, float], tuple[int, dict[str, Any]]]
#: The traceview package's parent folder: on every child's PYTHONPATH.
_ROOT = str(Path(__file__).resolve().parents[2])


@dataclass(frozen=True)
class Side:
    """One variant's process: interpreter, entry, JSON config, environment, import path."""

    label: str
    entry: tuple[str, ...]
    config: Any = None
    python: str = sys.executable
    env: Mapping[str, str] = field(default_factory=dict)
    path: tuple[str, ...] = ()
    cwd: str | None = None
    #: CPUs the process is pinned to (``os.sched_setaffinity`` before it starts); empty:
    #: wherever the OS puts it. Both sides get the same set, so which core a process lands
    #: on is not a difference between them.
    cpus: tuple[int, ...] = ()
    #: ``"module:function"``: the same work as ``entry`` as a function of the config's
    #: JSON text, returning the result dict (raising TraceviewError for a problem the
    #: user can fix). Only with it can a round be a child forked from a preloaded
    #: template (:mod:`traceview.runner.fork_server`); None: always spawned fresh.
    call: str | None = None
    #: Modules the template imports before it forks (``"?name"``: only if importable).
    preload: tuple[str, ...] = ()

    def describe(self) -> dict[str, Any]:
        return {"label": self.label, "python": self.python, "env": dict(self.env),
                "path": list(self.path), "entry": list(self.entry), "cpus": list(self.cpus)}


def child_env(side: Side) -> dict[str, str]:
    env = dict(os.environ)
    env.update(side.env)
    parts = [*side.path, _ROOT]
    if env.get("PYTHONPATH"):
        parts.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


def run_process(side: Side, round_: int = 0, timeout_s: float = PROCESS_TIMEOUT_S
                ) -> tuple[int, dict[str, Any]]:
    """Run one fresh process of ``side``: (wall ns, its JSON result), or TraceviewError."""
    where = f"side {side.label}, round {round_ + 1}"
    cpus = frozenset(side.cpus)
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    t0 = time.perf_counter_ns()
    try:
        env = child_env(side)
        env[SPAWNED_ENV] = str(time.monotonic_ns())  # the child's start-to-ready clock
        proc = subprocess.run([side.python, *side.entry], input=json.dumps(side.config),
                              capture_output=True, text=True, env=env,
                              cwd=side.cwd, timeout=timeout_s, check=False,
                              preexec_fn=pin)  # noqa: PLW1509 (no threads started here)
    except subprocess.TimeoutExpired:
        raise CaptureError(f"{where}: the process took over {timeout_s:g} s") from None
    except OSError as exc:
        raise CaptureError(f"{where}: cannot start {side.python!r}: {exc.strerror}") from None
    wall = time.perf_counter_ns() - t0
    return wall, read_result(where, proc.returncode, proc.stdout, proc.stderr)


def read_result(where: str, returncode: int | None, stdout: str, stderr: str
                ) -> dict[str, Any]:
    """A finished process's JSON result (its last ``{``-line), or the TraceviewError
    that names ``where`` and what went wrong: its own error line, else the last line of
    stderr or the exit code."""
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    result = None
    if lines:
        try:
            result = json.loads(lines[-1])
        except json.JSONDecodeError:
            result = None
    if isinstance(result, dict) and "error" in result:
        err = CorrectnessError if result.get("exit_code") == 3 else CaptureError
        raise err(f"{where}: {result['error']}")
    if returncode != 0 or not isinstance(result, dict):
        err_lines = [ln for ln in stderr.splitlines()
                     if ln.strip() and not ln.startswith("USDT")]
        raise CaptureError(f"{where}: the process failed: "
                           + (err_lines[-1] if err_lines else f"exit code {returncode}"
                              + ("" if lines else ", no JSON result line")))
    return result


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


def run_interleaved(a: Side, b: Side, rounds: int, seed: int | None = None,
                    on_run: Callable[[ProcessRun], None] | None = None,
                    timeout_s: float = PROCESS_TIMEOUT_S,
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
    (:func:`run_process`).
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


def run_same_process(pair: Side, rounds: int,
                     on_run: Callable[[ProcessRun], None] | None = None,
                     timeout_s: float = PROCESS_TIMEOUT_S,
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


def _spawner(side: Side) -> Starter:
    return lambda round_, timeout_s: run_process(side, round_, timeout_s)
