"""The capture A/B: the parent side of ``traceview ab`` (torch-free).

:func:`capture_side` makes a :class:`~traceview.runner.process.ChildSpec` whose child
(``traceview.ab.ab_child``) builds the inputs and the implementation of a
``CaptureConfig``, checks the first output against the reference, warms up and
measures exactly as capture's unprofiled baseline does (``baseline.measure``: full API
synchronised each call, amortized submit, device per op from graph replays on CUDA).
:func:`run_capture_ab` checks both sides, runs the rounds
(:mod:`traceview.ab.fresh_processes`) and pairs them
(:func:`traceview.multi.ab_result.analyze`) into an ``ABResult``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from traceview.ab.fresh_processes import check_time_limit, run_interleaved, run_same_process
from traceview.checks.failure import check_isolated
from traceview.errors import CaptureError
from traceview.multi.ab_result import ABResult, ProcessRun, analyze, judged_diffs
from traceview.multi.sequential import Until, plan_looks
from traceview.runner.fork_server import start_templates
from traceview.runner.outcome import CHILD_TIMEOUT_S
from traceview.runner.process import ChildSpec, child_env, last_stderr_line, spawn

T = TypeVar("T")
K = TypeVar("K")


def capture_side(label: str, config: Any, *, python: str | None = None,
                 env: Mapping[str, str] | None = None, path: Sequence[str] = (),
                 cache_root: str | None = None, cpus: Sequence[int] = ()) -> ChildSpec:
    """A :class:`ChildSpec` whose child measures ``config`` (a ``CaptureConfig``) unprofiled.

    All of one side's processes share one compile cache folder under ``cache_root``, so
    compilation happens once (in round 1's unmeasured warm-up), never in a timed call.
    """
    from traceview.workload.wire import encode_config

    full_env = dict(env or {})
    if cache_root is not None:
        full_env.setdefault("TRITON_CACHE_DIR", os.path.join(cache_root, label, "triton"))
        full_env.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(cache_root, label, "inductor"))
    if config.interpreted:
        full_env.setdefault("TRITON_INTERPRET", "1")
    return ChildSpec(label=label, entry=("-m", "traceview.ab.ab_child"),
                config=json.loads(encode_config(config)), python=python or sys.executable,
                env=full_env, path=tuple(str(Path(p).resolve()) for p in path),
                cwd=os.getcwd(), cpus=tuple(sorted(set(cpus))),
                call="traceview.ab.ab_child:measure_side",
                preload=preload_for(config.impl))


#: What a side's template imports before it forks: torch, triton, the capture modules a
#: round's child runs, and torch._dynamo (``--impl inductor`` compiles through it, and
#: libraries may import it: 4-5 s of a process's start, paid here once; the correctness
#: check itself no longer needs it), so the child only creates its CUDA context, builds,
#: compiles or loads, and measures.
PRELOAD = ("torch", "?triton", "?torch._dynamo", "traceview.opcapture.baseline_child",
           "traceview.opcapture.baseline", "traceview.workload.impls",
           "traceview.workload.inputs", "traceview.checks.correctness",
           "traceview.workload.graphs", "traceview.opcapture.metadata")


def preload_for(*impls: str) -> tuple[str, ...]:
    """:data:`PRELOAD`, with the built-in kernels for Triton and flag_gems for FlagGems
    (``~``: tried in a throwaway child first; FlagGems 5's import queries the device,
    which initialises CUDA, so then each round's child imports it after the fork)."""
    extra = (("?traceview.workload.kernels",) if "triton" in impls else ()) + \
        (("~flag_gems",) if "flag_gems" in impls else ())
    return PRELOAD + extra


def profiled_trace(side: ChildSpec, config: Any, out: Path,
                   timeout_s: float = CHILD_TIMEOUT_S) -> Path:
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
        done = spawn([side.python, "-m", "traceview", "capture", *argv], "", env,
                     timeout_s=timeout_s, cwd=side.cwd)
    except OSError as exc:
        raise CaptureError(f"{where}: cannot start {side.python!r}: {exc.strerror}") from None
    if done.returncode is None:
        raise CaptureError(f"{where}: took over {timeout_s:g} s")
    if done.returncode != 0:
        raise CaptureError(f"{where}: " + (last_stderr_line(done.stderr)
                                           or f"exit code {done.returncode}"))
    return out


def probe_kernels(side: ChildSpec, config: Any) -> dict[str, Any]:
    """The kernels ``config`` launches per call in ``side``'s process setting: one fresh,
    profiled process (``probe.probe_child``), never one of the timed ones."""
    from traceview.checks.failure import STARTUP_S
    from traceview.opcapture.probe import CPU_NOTE
    from traceview.runner import isolation
    from traceview.workload.wire import encode_config

    if config.device != "cuda":
        return {"note": CPU_NOTE, "calls": 0, "kernels": [], "how": "not probed"}
    outcome = isolation.run_child("traceview.opcapture.probe:probe_child",
                                  {"config": encode_config(config)}, config.timeout_s,
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
                   blocks: int = 10, check_cache: bool = False,
                   fork: bool = True, reference: Any = None,
                   until: Until | None = None, split: bool = False,
                   block_ns: int | None = None) -> ABResult:
    """The capture A/B: ``sides[label]`` may give ``python``, ``env``, ``path``, ``name``.

    ``trace_dir``: after the rounds, one profiled capture per side there
    (``<name>.json.gz``), recorded as ``sides[label]["trace"]``. ``time_limit_s``: from
    the start of this call (the correctness checks, cache checks and kernel probes
    before the rounds count, so a run ends in time); the profiled traces after the rounds
    are not counted. ``same_process``: each round is one fresh process that measures
    both variants in ``blocks`` alternating blocks (``ab_pair_child``); the sides must
    then share interpreter, environment and import path, and differ by implementation or
    callable only. ``check_cache``: each side's ``--check-cache`` sequence
    (``cache_check``) in its own setting after the first correctness check and before
    any round; a wrong side stops the run (exit 3). Beside those checks, always, each
    side's kernels are probed once (``probe.probe_child``, a profiled process of its own,
    not timed) so the result says which kernels each launched. ``fork``: each round's
    process is a child forked from a per-side template that has imported everything
    (:mod:`traceview.runner.fork_server`); where that cannot work, and with
    ``fork=False``, a fresh interpreter per process. ``reference`` (a ``CaptureConfig``):
    each side's process also measures this call in alternating blocks, and the side's
    figure is its difference from it (``ab_pair_child.measure_against_reference``).
    ``until``: planned looks (:mod:`traceview.multi.sequential`); ``rounds`` is then the most
    rounds, and the intervals are at the looks' level. ``split``: :func:`_with_splits`.
    ``block_ns``: :func:`pair_side` (``same_process`` only)."""
    started = time.monotonic()
    if reference is not None:
        check_reference(config_a, config_b, reference, same_process=same_process,
                        blocks=blocks)
    sides = sides or {}
    check_time_limit(time_limit_s)  # here too: before the checks, not after them
    if same_process:
        check_same_process(config_a, config_b, sides, seed, blocks)
    configs = {"A": config_a, "B": config_b}
    with tempfile.TemporaryDirectory(prefix="traceview-ab-") as root:
        made = _made_sides(configs, sides, root, cpus)
        processes = ({"A+B": pair_side(configs, made, blocks, block_ns)} if same_process else
                     {label: reference_side(made[label], reference, blocks)
                      for label in made} if reference is not None else made)
        with start_templates(processes, fork=fork) as templates:  # importing meanwhile
            cache_checks, kernels = check_sides(configs, made, Path(root),
                                                check_cache=check_cache)

            def run_rounds(count: int, first: int, limit: float | None
                           ) -> list[ProcessRun]:
                """``count`` more rounds, numbered from ``first``."""
                shift = {label: _shifted(start, first)
                         for label, start in templates.starters.items()}
                if same_process:
                    more = run_same_process(processes["A+B"], count, None,
                                            time_limit_s=limit, started=started,
                                            starter=shift.get("A+B"))
                else:
                    more = run_interleaved(processes["A"], processes["B"], count, seed,
                                           None, time_limit_s=limit, started=started,
                                           starters=shift)
                return [_renumbered(run, first, on_run) for run in more]

            runs, looked = run_until(run_rounds, rounds, until, time_limit_s, started)
            process = templates.describe()
    traces = _profiled_traces(trace_dir, configs, made, sides)
    described = {label: _described(label, config, made[label], sides.get(label, {}),
                                   traces, kernels, cache_checks)
                 for label, config in configs.items()}
    protocol = _protocol(config_a, rounds, len(runs) // 2, cpus=cpus,
                         time_limit_s=time_limit_s, blocks=blocks if same_process else None,
                         process=process, block_calls=chosen_block_calls(
                             runs, block_ns) if same_process and block_ns else None)
    alpha = _with_reference_and_looks(protocol, reference, blocks, looked, rounds,
                                      len(runs) // 2)
    result = analyze(runs, described, len(runs) // 2, _order(blocks, seed, same_process=same_process),
                     protocol, alpha=alpha)
    return _with_splits(result, configs, made, traces) if split else result


def _order(blocks: int, seed: int | None, *, same_process: bool) -> str:
    """The result's ``order``, in words."""
    if same_process:
        return f"both sides in each process, {blocks} blocks per side: A B, B A, ..."
    return "balanced (AB BA ...)" if seed is None else f"random per round (seed {seed})"


def _with_splits(result: ABResult, configs: Mapping[str, Any], made: Mapping[str, Any],
                 traces: Mapping[str, str]) -> ABResult:
    """``result`` with each side's unprofiled split, after the rounds and the traces
    (:mod:`traceview.ab.splits`: one profiled capture per side, ``trace_dir``'s reused)."""
    from traceview.ab.splits import side_splits

    return dataclasses.replace(result, splits=side_splits(configs, made, traces,
                                                          profiled_trace))


def _made_sides(configs: Mapping[str, Any], sides: Mapping[str, Mapping[str, Any]],
                root: str, cpus: Sequence[int]) -> dict[str, Any]:
    """Each side's process description: its config in its own interpreter, environment
    and import path (``sides[label]``), caching under ``root``."""
    return {label: capture_side(label, config, python=sides.get(label, {}).get("python"),
                                env=sides.get(label, {}).get("env"),
                                path=sides.get(label, {}).get("path", ()),
                                cache_root=root, cpus=cpus)
            for label, config in configs.items()}


def _profiled_traces(trace_dir: Path | None, configs: Mapping[str, Any],
                     made: Mapping[str, Any], sides: Mapping[str, Mapping[str, Any]]
                     ) -> dict[str, str]:
    """One profiled capture per side in ``trace_dir`` (``<name>.json.gz``), after the
    rounds so that profiling never touches a timed process."""
    traces: dict[str, str] = {}
    if trace_dir is not None:
        trace_dir.mkdir(parents=True, exist_ok=True)
        for label, config in configs.items():
            name = (sides.get(label, {}).get("name") or label).replace("/", "_")
            traces[label] = str(profiled_trace(made[label], config,
                                               trace_dir / f"{name}.json.gz"))
    return traces


def _with_reference_and_looks(protocol: dict[str, Any], reference: Any, blocks: int,
                              looked: dict[str, Any] | None, rounds: int, ran: int) -> float:
    """Record ``--reference`` and ``--until`` in the protocol; the intervals' alpha (the
    per-look level when looks were planned)."""
    if reference is not None:
        protocol["reference"] = {"impl": reference.impl, "fn": reference.fn,
                                 "blocks": blocks, "reproducer": reference.reproducer}
    if looked is None:
        return 0.05
    protocol["until"] = looked
    if looked["stopped_because"] and ran < rounds:
        protocol["stopped"] = (f"--until: {looked['stopped_because']} after "
                               f"{ran} of at most {rounds} rounds")
    return float(looked["per_look_alpha"])


def run_until(run_rounds: Callable[[int, int, float | None], list[ProcessRun]],
              rounds: int, until: Until | None, time_limit_s: float | None,
              started: float) -> tuple[list[ProcessRun], dict[str, Any] | None]:
    """All ``rounds`` (no ``until``), or up to the planned look that meets ``until``
    (:mod:`traceview.multi.sequential`): (runs, what the looks saw, for ``protocol.until``)."""
    if until is None:
        return run_rounds(rounds, 0, time_limit_s), None
    from traceview.multi.ab_result import paired_figures
    from traceview.paired import compare

    plan = plan_looks(rounds)
    limits = [x for x in (time_limit_s, until.seconds) if x is not None]
    limit = min(limits) if limits else None
    runs: list[ProcessRun] = []
    seen: list[dict[str, Any]] = []
    why = None
    for look in plan.looks:
        done = len(runs) // 2
        more = run_rounds(look - done, done, limit)
        runs += more
        pairs = paired_figures(runs, "full_api_ns_p50")
        if pairs is None or not runs:
            break
        c = compare(*pairs, alpha=plan.per_look_alpha, diffs=judged_diffs(runs))
        seen.append({"rounds": c.rounds, "ci_low_ns": c.ci_low_ns, "ci_high_ns": c.ci_high_ns,
                     "elapsed_s": round(time.monotonic() - started, 1)})
        if len(more) // 2 < look - done:
            why = "time budget spent"
            break
        why = until.reached(c)
        if why:
            break
    return runs, dict(plan.as_dict(), until=until.as_dict(), seen=seen,
                      stopped_because=why)


def _shifted(start: Callable[[int, float], Any], first: int) -> Callable[[int, float], Any]:
    return lambda round_, timeout_s: start(round_ + first, timeout_s)


def _renumbered(run: ProcessRun, first: int,
                on_run: Callable[[ProcessRun], None] | None) -> ProcessRun:

    moved = dataclasses.replace(run, round=run.round + first, index=run.index + 2 * first)
    if on_run is not None:
        on_run(moved)
    return moved


def reference_side(side: ChildSpec, reference: Any, blocks: int) -> ChildSpec:
    """A side's timed process with ``--reference``: its call and the reference call in
    alternating blocks, in the side's own setting (interpreter, environment, path)."""

    from traceview.workload.wire import encode_config

    return dataclasses.replace(
        side, entry=("-m", "traceview.ab.ab_pair_child", "--reference"),
        config={"reference": json.loads(encode_config(reference)), "side": side.config,
                "blocks": blocks},
        call="traceview.ab.ab_pair_child:measure_against_reference",
        preload=tuple(dict.fromkeys(side.preload + preload_for(reference.impl))))


def check_reference(config_a: Any, config_b: Any, reference: Any, *, same_process: bool,
                    blocks: int) -> None:
    """``--reference`` is for fresh processes per side; FlagGems' ``use_gems()`` is
    process-wide, so the reference would run through the side's FlagGems too."""
    if same_process:
        raise CaptureError("--reference is for a process per side; with --same-process "
                           "both sides already share each process: leave it out")
    if not 2 <= blocks <= 1000 or blocks % 2:
        raise CaptureError(f"--blocks takes an even number from 2 to 1000, got {blocks}")
    if "flag_gems" in (config_a.impl, config_b.impl, reference.impl):
        raise CaptureError("--reference cannot take --impl flag_gems: use_gems() is "
                           "process-wide, so the reference call would run through each "
                           "side's FlagGems and change with it; give --a-fn/--b-fn")


def check_same_process(config_a: Any, config_b: Any, sides: Mapping[str, Mapping[str, Any]],
                       seed: int | None, blocks: int) -> None:
    """``--same-process`` takes two sides that can live in one interpreter: same
    interpreter, environment and path, no FlagGems (process-wide), eager mode."""
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
                               "--b-fn callables instead (docs/figures/flaggems_type_promotion/flaggems_type_promotion_fns.py)")
        if cfg.mode != "eager":
            raise CaptureError("--same-process measures eager calls only; leave out "
                               "--mode graph")


def check_sides(configs: Mapping[str, Any], made: Mapping[str, ChildSpec], root: Path, *,
                check_cache: bool) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Before any round, per side in fresh processes of its own setting: correctness
    alone (a wrong, crashing or hanging variant is named before anything is timed), then
    the ``--check-cache`` sequence when asked; beside them, the kernel probe. All of it
    runs at once, both sides' checks and probes in processes of their own (none is
    timed; on the H200 a FlagGems check or probe process costs 10-15 s, mostly imports):
    (cache checks, kernels used), by label. A check's error comes first."""
    def check(label: str) -> dict[str, Any] | None:
        config, side = configs[label], made[label]
        check_isolated(config, root / f"check-{label}", config.timeout_s,
                       python=side.python, env=child_env(side))
        if not check_cache:
            return None
        from traceview.checks.cache_check import check_cache as run_cache_check

        done = run_cache_check(config, config.timeout_s, python=side.python,
                               env=child_env(side), side=label)
        return {"passed": done["passed"], "calls": done["calls"],
                "reproducer": done["reproducer"]}

    def one(task: tuple[str, str]) -> Any:
        what, label = task
        return check(label) if what == "check" else probe_kernels(made[label], configs[label])

    done = at_once(one, [(what, label) for what in ("check", "probe") for label in configs])
    cache_checks = {label: c for label in configs if (c := done["check", label]) is not None}
    return cache_checks, {label: done["probe", label] for label in configs}


def at_once(work: Callable[[K], T], labels: Sequence[K]) -> dict[K, T]:
    """``work(label)`` for every label (a side, or a task) at once, each in a thread that
    waits on its own child processes; the first label's error (in order) is raised.
    Daemon threads: on Ctrl-C the process leaves at once and the children die with it
    (PR_SET_PDEATHSIG)."""
    results: dict[K, T] = {}
    errors: dict[K, BaseException] = {}

    def run(label: K) -> None:
        try:
            results[label] = work(label)
        except BaseException as exc:  # noqa: BLE001 (re-raised in the caller's thread)
            errors[label] = exc

    threads = [threading.Thread(target=run, args=(label,), daemon=True) for label in labels]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for label in labels:
        if label in errors:
            raise errors[label]
    return results


def chosen_block_calls(runs: Sequence[ProcessRun], block_ns: int) -> dict[str, Any]:
    """``protocol.block_calls`` of a run whose processes chose their calls per block:
    the rule, the block's length aimed at, and each process's choice (round order)."""
    chosen = [run.result.get("block_calls", {}).get("chosen") for run in runs
              if run.side == "A"]
    return {"rule": "per process: the slower side's lower quartile of its synchronized "
                    "calls over a 20 ms pilot after the warm-up; calls per block = "
                    "block_ns / that call, rounded, at least 1",
            "block_ns": block_ns, "chosen": chosen}


def pair_side(configs: Mapping[str, Any], made: Mapping[str, ChildSpec],
              blocks: int, block_ns: int | None = None) -> ChildSpec:
    """The one process of a ``--same-process`` round: A's setting (the user's setting
    is the same on both sides, checked), A's cache folders serve both, and the
    interpreter if either side needs it. ``block_ns``: the process chooses its calls per
    block so that a block lasts about this long (``ab_pair_child.block_calls``) instead
    of taking the configs' ``baseline_n``."""
    a = made["A"]
    pair_env = dict(a.env)
    if any(c.interpreted for c in configs.values()):
        pair_env.setdefault("TRITON_INTERPRET", "1")
    return ChildSpec(label="A+B", entry=("-m", "traceview.ab.ab_pair_child"),
                config={"a": a.config, "b": made["B"].config, "blocks": blocks,
                        **({} if block_ns is None else {"block_ns": block_ns})},
                python=a.python, env=pair_env, path=a.path, cwd=a.cwd, cpus=a.cpus,
                call="traceview.ab.ab_pair_child:measure_both",
                preload=preload_for(*(c.impl for c in configs.values())),
                round_key="round")


def _described(label: str, config: Any, side: ChildSpec, opts: Mapping[str, Any],
               traces: Mapping[str, str], kernels: Mapping[str, Any],
               cache_checks: Mapping[str, Any]) -> dict[str, Any]:
    """``sides.X`` of the result: the side's setting as the user gave it, what it ran,
    its trace, kernels and cache check."""
    d = side.describe()
    d.pop("entry")
    d["env"] = dict(opts.get("env") or {})  # what the user set, not the cache folders
    d.update(name=opts.get("name") or label, impl=config.impl, fn=config.fn,
             reproducer=config.reproducer)
    if label in traces:
        d["trace"] = traces[label]
    d["kernels_used"] = kernels[label]
    if label in cache_checks:
        d["cache_check"] = cache_checks[label]
    return d


def _protocol(config: Any, planned: int, ran: int, *, cpus: Sequence[int],
              time_limit_s: float | None, blocks: int | None,
              process: dict[str, Any], block_calls: dict[str, Any] | None = None
              ) -> dict[str, Any]:
    """``protocol`` of the result: what was measured, how, and how processes started;
    with ``block_calls`` (each process chose its calls per block) ``baseline_n`` is
    null and ``block_calls`` says how they chose."""
    forked = process["mode"] == "fork"
    start = ("each a child forked from its side's template process (imports done "
             "once, CUDA initialised in the child)" if forked else
             "each a fresh interpreter" + (f" ({process['why']})" if process.get("why")
                                           else ""))
    words = (f"one fresh process per round measuring both variants in {blocks} blocks "
             f"per side (A B, B A, ...), profiler never started; {start}"
             if blocks is not None else
             f"fresh process per side per round, profiler never started; {start}")
    return {
        "op": config.op, "shape": list(config.out_shape), "dtype": config.dtype,
        "layout": config.layout, "device": config.device, "mode": config.mode,
        "warmup": config.warmup, "baseline_n": config.baseline_n,
        "timer": "time.perf_counter_ns around call+synchronize (full call), a batch of "
                 "baseline_n calls and one sync (amortized)",
        "cpus": sorted(set(cpus)) or None,
        "blocks": blocks,
        "process": words,
        "process_start": process,
        "rounds_planned": planned,
        "time_limit_s": time_limit_s,
        "stopped": None if ran == planned or time_limit_s is None else
        f"time limit: {ran} of {planned} rounds fit in {time_limit_s:g} s",
        **({} if block_calls is None else {"baseline_n": None, "block_calls": block_calls}),
    }
