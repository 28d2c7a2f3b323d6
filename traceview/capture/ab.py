"""The capture A/B: the parent side of ``traceview ab`` (torch-free).

:func:`capture_side` makes a :class:`~traceview.capture.fresh_processes.Side` whose child
(``traceview.capture.ab_child``) builds the inputs and the implementation of a
``CaptureConfig``, checks the first output against the reference, warms up and
measures exactly as capture's unprofiled baseline does (``baseline.measure``: full API
synchronised each call, amortized submit, device per op from graph replays on CUDA).
:func:`run_capture_ab` checks both sides, runs the rounds
(:mod:`traceview.capture.fresh_processes`) and pairs them
(:func:`traceview.multi.ab_result.analyze`) into an ``ABResult``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from traceview.capture.failure import check_isolated
from traceview.capture.fresh_processes import (
    PROCESS_TIMEOUT_S,
    Side,
    check_time_limit,
    child_env,
    run_interleaved,
    run_same_process,
)
from traceview.errors import CaptureError
from traceview.multi.ab_result import ABResult, ProcessRun, analyze


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
        opts = sides.get(label, {})
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
