"""Interleaved A/B in fresh processes: the parent side of ``traceview ab`` (torch-free).

The GPU machine drifts over minutes and one process's median sits up to 2x from the
next one's, so two variants measured one after the other compare machine states, not
code. This module runs the two variants as *rounds* of fresh processes, each round one
process of each side back to back in an order that alternates (``paired.interleaved_order``:
balanced ``AB BA AB ...`` or seeded-random per round, never all of one side first), and
hands the per-round pairs to :mod:`traceview.paired`.

Two layers:

**The generic runner** (also used by the serving workload's A/B) --
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
line of stderr. :class:`ProcessRun` keeps the round, the side, its position within the
round, the process's wall time and its JSON result.

**The capture A/B** -- :func:`capture_side` makes a :class:`Side` whose child
(``traceview.capture.ab_child``) builds the inputs and the implementation of a
``CaptureConfig``, checks the first output against the reference, warms up and
measures exactly as capture's unprofiled baseline does (``baseline.measure``: full API
synchronised each call, amortized submit, device per op from graph replays on CUDA).
:func:`analyze` pairs the rounds and returns an :class:`ABResult` (JSON:
``as_dict``, schema in docs/ab.md).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from traceview.capture.failure import check_isolated
from traceview.errors import CaptureError, CorrectnessError, TraceviewError
from traceview.paired import PairedComparison, compare, interleaved_order

#: A child that compiles, or imports a large library, can take a while.
PROCESS_TIMEOUT_S = 600
#: The figures a capture child reports, in the order they are shown. The first judges.
FIGURES = ("full_api_ns_p50", "amortized_submit_ns", "amortized_ns", "device_ns")
FIGURE_LABELS = {
    "full_api_ns_p50": "full call, synchronized each call (median per process)",
    "amortized_submit_ns": "amortized submit, one sync per batch",
    "amortized_ns": "amortized completion per call",
    "device_ns": "device time per op (CUDA graph replay)",
}
METHOD = ("Hodges-Lehmann estimate of the paired per-round difference B - A; exact "
          "Wilcoxon signed-rank confidence interval")
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

    def describe(self) -> dict[str, Any]:
        return {"label": self.label, "python": self.python, "env": dict(self.env),
                "path": list(self.path), "entry": list(self.entry), "cpus": list(self.cpus)}


@dataclass(frozen=True)
class ProcessRun:
    """One fresh process: its place in the run and what it printed."""

    index: int
    round: int
    side: str
    position: int | None  # 0 or 1 within its round; None: both sides in one process
    wall_ns: int
    result: dict[str, Any]


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
        proc = subprocess.run([side.python, *side.entry], input=json.dumps(side.config),
                              capture_output=True, text=True, env=child_env(side),
                              cwd=side.cwd, timeout=timeout_s, check=False,
                              preexec_fn=pin)  # noqa: PLW1509 (no threads started here)
    except subprocess.TimeoutExpired:
        raise CaptureError(f"{where}: the process took over {timeout_s:g} s") from None
    except OSError as exc:
        raise CaptureError(f"{where}: cannot start {side.python!r}: {exc.strerror}") from None
    wall = time.perf_counter_ns() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    result = None
    if lines:
        try:
            result = json.loads(lines[-1])
        except json.JSONDecodeError:
            result = None
    if isinstance(result, dict) and "error" in result:
        err = CorrectnessError if result.get("exit_code") == 3 else CaptureError
        raise err(f"{where}: {result['error']}")
    if proc.returncode != 0 or not isinstance(result, dict):
        err_lines = [ln for ln in proc.stderr.splitlines()
                     if ln.strip() and not ln.startswith("USDT")]
        raise CaptureError(f"{where}: the process failed: "
                           + (err_lines[-1] if err_lines else f"exit code {proc.returncode}"
                              + ("" if lines else ", no JSON result line")))
    return wall, result


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
                   clock: Callable[[], float] = time.monotonic) -> Iterator[int]:
    """The rounds ``0 .. rounds-1`` that may start: each only when the time used so far
    plus the longest round so far (:func:`_longest`) still fits in ``time_limit_s``, so
    a run planned for more rounds than the time allows ends with whole rounds."""
    if rounds < 1:
        raise CaptureError(f"--rounds must be >= 1, got {rounds}")
    check_time_limit(time_limit_s)
    start = round_start = clock()
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
                    clock: Callable[[], float] = time.monotonic) -> list[ProcessRun]:
    """Run ``rounds`` rounds of one fresh process per side, in interleaved order.

    ``seed`` None: balanced order (AB, BA, AB, ...); an int: each round's order drawn at
    random from it. ``on_run`` sees each process as it finishes (progress). Returns the
    runs in the order they ran; the first failing process stops the run (TraceviewError).
    ``time_limit_s``: :func:`rounds_in_time` (never half a pair); the caller compares
    ``len(runs) // 2`` with ``rounds`` to say it stopped early.
    """
    sides = {"A": a, "B": b}
    order = interleaved_order(rounds, seed)
    runs: list[ProcessRun] = []
    for r in rounds_in_time(rounds, time_limit_s, clock):
        for _, which in order[2 * r:2 * r + 2]:
            i = len(runs)
            wall, result = run_process(sides[which], r, timeout_s)
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
                     clock: Callable[[], float] = time.monotonic) -> list[ProcessRun]:
    """``rounds`` fresh processes of ``pair``, each measuring both variants in blocks.

    ``pair``'s entry prints ``{"A": figures, "B": figures, ...}``
    (``traceview.capture.ab_pair_child``); each process becomes two :class:`ProcessRun`
    records of one round, so :func:`paired_figures` and the statistics are the same as
    for fresh processes per side. ``time_limit_s`` as in :func:`run_interleaved`.
    """
    runs: list[ProcessRun] = []
    for r in rounds_in_time(rounds, time_limit_s, clock):
        wall, result = run_process(pair, r, timeout_s)
        shared = {k: v for k, v in result.items() if k not in ("A", "B")}
        for label in ("A", "B"):
            run = ProcessRun(index=len(runs), round=r, side=label, position=None,
                             wall_ns=wall, result=dict(result[label], **shared))
            runs.append(run)
            if on_run is not None:
                on_run(run)
    return runs


def paired_figures(runs: Sequence[ProcessRun], key: str) -> tuple[list[int], list[int]] | None:
    """Per-round (A values, B values) of ``result[key]``; None when any round lacks it."""
    by_round: dict[int, dict[str, Any]] = {}
    for run in runs:
        by_round.setdefault(run.round, {})[run.side] = run.result.get(key)
    a, b = [], []
    for r in sorted(by_round):
        x, y = by_round[r].get("A"), by_round[r].get("B")
        if not isinstance(x, int) or not isinstance(y, int):
            return None
        a.append(x)
        b.append(y)
    return a, b


# -- the capture A/B ---------------------------------------------------------------------
def capture_side(label: str, config: Any, *, python: str | None = None,
                 env: Mapping[str, str] | None = None, path: Sequence[str] = (),
                 cache_root: str | None = None, cpus: Sequence[int] = ()) -> Side:
    """A :class:`Side` whose child measures ``config`` (a ``CaptureConfig``) unprofiled.

    All of one side's processes share one compile cache folder under ``cache_root``, so
    compilation happens once (in round 1's unmeasured warm-up), never in a timed call.
    """
    from traceview.capture.baseline_child import _encode

    full_env = dict(env or {})
    if cache_root is not None:
        full_env.setdefault("TRITON_CACHE_DIR", os.path.join(cache_root, label, "triton"))
        full_env.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(cache_root, label, "inductor"))
    if config.interpreted:
        full_env.setdefault("TRITON_INTERPRET", "1")
    return Side(label=label, entry=("-m", "traceview.capture.ab_child"),
                config=json.loads(_encode(config)), python=python or sys.executable,
                env=full_env, path=tuple(str(Path(p).resolve()) for p in path),
                cwd=os.getcwd(), cpus=tuple(sorted(set(cpus))))


@dataclass(frozen=True)
class ABResult:
    """An interleaved A/B: the sides, every process, and the paired comparisons."""

    sides: dict[str, dict[str, Any]]
    runs: tuple[ProcessRun, ...]
    rounds: int
    order: str
    comparisons: dict[str, PairedComparison]
    protocol: dict[str, Any]

    @property
    def judged(self) -> PairedComparison | None:
        return self.comparisons.get(FIGURES[0])

    def verdict(self) -> str:
        """The one-line verdict; sides named ``B (patched)`` when they have names."""
        names = tuple(f"{k} ({v['name']})" if v.get("name") and v["name"] != k else k
                      for k, v in sorted(self.sides.items()))
        return verdict_line(self.judged, self.rounds, names=names)  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, Any]:
        per_side: dict[str, Any] = {}
        for label, desc in self.sides.items():
            mine = [r for r in self.runs if r.side == label]
            first = mine[0].result if mine else {}
            per_side[label] = dict(desc, processes=[
                {"round": r.round + 1,
                 "position": None if r.position is None else r.position + 1,
                 "wall_ns": r.wall_ns,
                 **{k: r.result.get(k) for k in FIGURES}, "cpu": r.result.get("cpu")}
                for r in mine],
                correctness=first.get("correctness"), versions=first.get("versions"),
                device=first.get("device"))
        return {
            "schema": "traceview.ab/1",
            "protocol": self.protocol,
            "rounds": self.rounds,
            "order": self.order,
            "run_order": [[r.round + 1, r.side] for r in self.runs],
            "sides": per_side,
            "method": METHOD,
            "comparisons": {k: comparison_dict(c) for k, c in self.comparisons.items()},
            "kernels_used": kernels_used_dict(self.sides),
            "verdict": self.verdict(),
        }


def kernels_used_dict(sides: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """``{same, differences}`` from each side's ``kernels_used`` probe; None without."""
    from traceview.analyses.kernels_used import differences

    a, b = (sides.get(x, {}).get("kernels_used") for x in ("A", "B"))
    if a is None and b is None:
        return None
    diffs = differences(a, b)
    return {"same": None if diffs is None else not diffs, "differences": diffs}


def comparison_dict(c: PairedComparison) -> dict[str, Any]:
    return {"rounds": c.rounds, "a_ns": list(c.a), "b_ns": list(c.b),
            "diff_ns": list(c.diffs), "a_median_ns": c.a_median_ns,
            "b_median_ns": c.b_median_ns, "estimate_ns": c.estimate_ns,
            "ci_low_ns": c.ci_low_ns, "ci_high_ns": c.ci_high_ns, "confidence": c.confidence,
            "b_faster_rounds": c.b_faster_rounds, "b_slower_rounds": c.b_slower_rounds,
            "min_detectable_ns": c.min_detectable_ns, "relative": c.relative,
            "verdict": c.verdict}


def analyze(runs: Sequence[ProcessRun], sides: dict[str, dict[str, Any]], rounds: int,
            order: str, protocol: dict[str, Any]) -> ABResult:
    comps = {}
    for key in FIGURES:
        pairs = paired_figures(runs, key)
        if pairs is not None:
            comps[key] = compare(*pairs)
    return ABResult(sides=sides, runs=tuple(runs), rounds=rounds, order=order,
                    comparisons=comps, protocol=protocol)


def _us(ns: float) -> str:
    from traceview.units import fmt_ns

    return fmt_ns(round(ns))


def verdict_line(c: PairedComparison | None, rounds: int,
                 data: str = "unprofiled, synchronized each call",
                 names: tuple[str, str] = ("A", "B")) -> str:
    """One line that names its data: "B faster by 9.8 us per call (95% CI [...]; ...)".

    ``names`` relabels the sides (``diff`` says before/after)."""
    a_name, b_name = names
    if c is None:
        return f"cannot tell: no full-call figure on both sides in every round ({data})"
    if c.ci_low_ns is None or c.estimate_ns is None or c.ci_high_ns is None:
        from traceview.units import plural

        few = plural(rounds, "round") + (" is" if rounds == 1 else " are")
        return (f"cannot tell: {few} too few for a 95% interval "
                f"(6 at least; {data})")
    agree = c.b_faster_rounds if c.estimate_ns < 0 else c.b_slower_rounds
    if c.verdict == "cannot tell":
        mdd = "" if c.min_detectable_ns is None else \
            f"; these rounds could detect about {_us(c.min_detectable_ns)}"
        return (f"cannot tell: {b_name} - {a_name} = {_us(c.estimate_ns)} per call (95% CI "
                f"[{_us(c.ci_low_ns)}, {_us(c.ci_high_ns)}] covers zero; {b_name} faster in "
                f"{c.b_faster_rounds} of {c.rounds} rounds{mdd}; {data})")
    if c.verdict == "B faster":
        lo, hi = -c.ci_high_ns, -c.ci_low_ns
    else:
        lo, hi = c.ci_low_ns, c.ci_high_ns
    pct = "" if c.relative is None else \
        f", {abs(c.relative):.{0 if abs(c.relative) >= 0.1 else 1}%} of {a_name}"
    return (f"{c.verdict.replace('B', b_name, 1)} by {_us(abs(c.estimate_ns))} per call{pct} "
            f"(95% CI [{_us(lo)}, {_us(hi)}]; {agree} of {c.rounds} rounds; {data})")


def profiled_trace(side: Side, config: Any, out: Path,
                   timeout_s: float = PROCESS_TIMEOUT_S) -> Path:
    """One profiled ``traceview capture`` of ``config`` in ``side``'s process setting.

    For diagnosis after the rounds (``ab --trace-dir``): the same interpreter,
    environment and import path as the side's measured processes; capture's own
    protocol (fresh caches, correctness, baseline, profiled calls) writes ``out``.
    """
    import shlex

    argv = [*shlex.split(config.reproducer)[2:], "--out", str(out)]
    env = child_env(side)
    for key in ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR"):
        env.pop(key, None)  # capture makes its own fresh caches
    where = f"side {side.label}, profiled trace"
    try:
        proc = subprocess.run([side.python, "-m", "traceview", "capture", *argv], env=env,
                              cwd=side.cwd, capture_output=True, text=True,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise CaptureError(f"{where}: took over {timeout_s:g} s") from None
    except OSError as exc:
        raise CaptureError(f"{where}: cannot start {side.python!r}: {exc.strerror}") from None
    if proc.returncode != 0:
        err = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("USDT")]
        raise CaptureError(f"{where}: " + (err[-1] if err else f"exit code {proc.returncode}"))
    return out


def probe_kernels(side: Side, config: Any) -> dict[str, Any]:
    """The kernels ``config`` launches per call in ``side``'s process setting: one fresh,
    profiled process (``probe.probe_child``), never one of the timed ones."""
    from traceview.capture import isolation
    from traceview.capture.baseline_child import _encode
    from traceview.capture.failure import STARTUP_S
    from traceview.capture.probe import CPU_NOTE

    if config.device != "cuda":
        return {"note": CPU_NOTE, "calls": 0, "kernels": [], "how": "not probed"}
    outcome = isolation.run_child("traceview.capture.probe:probe_child",
                                  {"config": _encode(config)}, config.timeout_s,
                                  env=child_env(side), python=side.python,
                                  startup_s=max(config.timeout_s, STARTUP_S))
    if outcome.status != "ok":
        return {"note": f"kernel probe failed: {outcome.error}", "calls": 0, "kernels": [],
                "how": "probe process"}
    return (outcome.value or {}).get("kernels_used") or {"note": "kernel probe gave nothing"}


def run_capture_ab(config_a: Any, config_b: Any, rounds: int, *, seed: int | None = None,
                   sides: Mapping[str, Mapping[str, Any]] | None = None,
                   on_run: Callable[[ProcessRun], None] | None = None,
                   trace_dir: Path | None = None,
                   time_limit_s: float | None = None,
                   cpus: Sequence[int] = (), same_process: bool = False,
                   blocks: int = 10, check_cache: bool = False) -> ABResult:
    """The capture A/B: ``sides[label]`` may give ``python``, ``env``, ``path``, ``name``.

    ``trace_dir``: after the rounds, one profiled capture per side there
    (``<name>.json.gz``), recorded as ``sides[label]["trace"]``. ``time_limit_s``: for
    the rounds (:func:`run_interleaved`); the correctness checks before them and the
    profiled traces after them are not counted. ``same_process``: each round is one
    fresh process that measures both variants in ``blocks`` alternating blocks
    (``ab_pair_child``); the sides must then share interpreter, environment and import
    path, and differ by implementation or callable only. ``check_cache``: each side's
    ``--check-cache`` sequence (``cache_check``) in its own setting after the first
    correctness check and before any round; a wrong side stops the run (exit 3). Then,
    always, each side's kernels are probed once (``probe.probe_child``, a profiled
    process of its own, not timed) so the result says which kernels each launched."""
    sides = sides or {}
    check_time_limit(time_limit_s)  # here too: before the checks, not after them
    if same_process:
        if not 2 <= blocks <= 1000 or blocks % 2:
            raise CaptureError(f"--blocks takes an even number from 2 to 1000 (each side "
                               f"first in half of the pairs), got {blocks}")
        if seed is not None:
            raise CaptureError("--order-seed orders processes; with --same-process each "
                               "process runs both sides in blocks A B, B A, ...: leave it out")
        a_opts, b_opts = (dict(sides.get(x, {})) for x in ("A", "B"))
        for key, flag in (("python", "python"), ("env", "env"), ("path", "path")):
            if (a_opts.get(key) or None) != (b_opts.get(key) or None):
                raise CaptureError(f"--same-process runs both variants in one interpreter: "
                                   f"--a-{flag} and --b-{flag} must be the same (they "
                                   "may differ by --a-impl/--b-impl or --a-fn/--b-fn)")
        for cfg in (config_a, config_b):
            if cfg.impl == "flag_gems":
                raise CaptureError("--same-process cannot take --impl flag_gems: it enters "
                                   "flag_gems.use_gems() for the whole process, so the other "
                                   "side would run through FlagGems too; give two --a-fn/"
                                   "--b-fn callables instead (tools/gpu/issue13_fns.py)")
            if cfg.mode != "eager":
                raise CaptureError("--same-process measures eager calls only; leave out "
                                   "--mode graph")
    with tempfile.TemporaryDirectory(prefix="traceview-ab-") as root:
        made = {}
        for label, config in (("A", config_a), ("B", config_b)):
            opts = dict(sides.get(label, {}))
            made[label] = capture_side(label, config, python=opts.get("python"),
                                       env=opts.get("env"), path=opts.get("path", ()),
                                       cache_root=root, cpus=cpus)
        # Correctness first, each side alone in a fresh process of its own setting: a
        # wrong, crashing or hanging variant is named before any round is timed.
        for label, config in (("A", config_a), ("B", config_b)):
            check_isolated(config, Path(root) / f"check-{label}", config.timeout_s,
                           python=made[label].python, env=child_env(made[label]))
        cache_checks: dict[str, dict[str, Any]] = {}
        if check_cache:
            from traceview.capture.cache_check import check_cache as run_cache_check

            for label, config in (("A", config_a), ("B", config_b)):
                done = run_cache_check(config, config.timeout_s, python=made[label].python,
                                       env=child_env(made[label]), side=label)
                cache_checks[label] = {"passed": done["passed"], "calls": done["calls"],
                                       "reproducer": done["reproducer"]}
        kernels = {label: probe_kernels(made[label], config)
                   for label, config in (("A", config_a), ("B", config_b))}
        if same_process:
            # one interpreter: the user's env is the same on both sides (checked above);
            # A's cache folders serve both, and the interpreter if either side needs it
            pair_env = dict(made["A"].env)
            if config_a.interpreted or config_b.interpreted:
                pair_env.setdefault("TRITON_INTERPRET", "1")
            pair = Side(label="A+B", entry=("-m", "traceview.capture.ab_pair_child"),
                        config={"a": made["A"].config, "b": made["B"].config,
                                "blocks": blocks},
                        python=made["A"].python, env=pair_env, path=made["A"].path,
                        cwd=made["A"].cwd, cpus=made["A"].cpus)
            runs = run_same_process(pair, rounds, on_run, time_limit_s=time_limit_s)
        else:
            runs = run_interleaved(made["A"], made["B"], rounds, seed, on_run,
                                   time_limit_s=time_limit_s)
    traces: dict[str, str] = {}
    if trace_dir is not None:
        trace_dir.mkdir(parents=True, exist_ok=True)
        for label, config in (("A", config_a), ("B", config_b)):
            name = (sides.get(label, {}).get("name") or label).replace("/", "_")
            traces[label] = str(profiled_trace(made[label], config,
                                               trace_dir / f"{name}.json.gz"))
    described = {}
    for label, config in (("A", config_a), ("B", config_b)):
        opts = dict(sides.get(label, {}))
        d = made[label].describe()
        d.pop("entry")
        d["env"] = dict(opts.get("env") or {})  # what the user set, not the cache folders
        d.update(name=opts.get("name") or label, impl=config.impl, fn=config.fn,
                 reproducer=config.reproducer)
        if label in traces:
            d["trace"] = traces[label]
        d["kernels_used"] = kernels[label]
        if label in cache_checks:
            d["cache_check"] = cache_checks[label]
        described[label] = d
    protocol = {
        "op": config_a.op, "shape": list(config_a.out_shape), "dtype": config_a.dtype,
        "layout": config_a.layout, "device": config_a.device, "mode": config_a.mode,
        "warmup": config_a.warmup, "baseline_n": config_a.baseline_n,
        "timer": "time.perf_counter_ns around call+synchronize (full call), a batch of "
                 "baseline_n calls and one sync (amortized)",
        "cpus": sorted(set(cpus)) or None,
        "blocks": blocks if same_process else None,
        "process": ("one fresh process per round measuring both variants in "
                    f"{blocks} blocks per side (A B, B A, ...), profiler never started"
                    if same_process else
                    "fresh process per side per round, profiler never started"),
        "rounds_planned": rounds,
        "time_limit_s": time_limit_s,
        "stopped": None if len(runs) // 2 == rounds else
        f"time limit: {len(runs) // 2} of {rounds} rounds fit in {time_limit_s:g} s",
    }
    return analyze(runs, described, len(runs) // 2,
                   f"both sides in each process, {blocks} blocks per side: A B, B A, ..."
                   if same_process else
                   "balanced (AB BA ...)" if seed is None else f"random per round (seed {seed})",
                   protocol)


__all__ = [
    "ABResult",
    "ProcessRun",
    "Side",
    "TraceviewError",
    "analyze",
    "capture_side",
    "paired_figures",
    "run_capture_ab",
    "run_interleaved",
    "run_same_process",
    "run_process",
    "verdict_line",
]
