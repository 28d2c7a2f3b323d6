"""The fresh process behind every serving task: ``python -m traceview.serve.child``.

It reads one task as JSON on stdin and prints JSON lines on stdout, the last one being
``{"result": ...}`` or ``{"error": "one line"}``. Tasks:

* ``check``: correctness of the variant's backend against torch eager (:mod:`.correctness`);
* ``measure``: warm up, then one measured pass of the workload (:mod:`.engine`);
* ``bisect``: list the backend's ops the model calls (``{"candidates": [...]}``), then
  enable them one at a time from ``start``, printing ``{"testing": op}`` before and
  ``{"op": ..., ...}`` after each, so a process that dies mid-op still names it;
* ``profile``: one profiled prefill + decode steps (:mod:`.profile`).

:func:`run_task` is the same thing without the process, for tests and for callers that
already are a fresh process.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from traceview.errors import TraceviewError
from traceview.runner.process import SPAWNED_ENV
from traceview.serve import backends, correctness, engine
from traceview.serve import model as model_mod
from traceview.serve.arrivals import prompts
from traceview.serve.spec import (
    ModelSpec,
    Variant,
    Workload,
    model_from_dict,
    workload_from_dict,
)

Emit = Callable[[dict[str, Any]], None]
#: Greedy steps per op in the bisect: enough to run the decode path, few enough for
#: hundreds of ops.
BISECT_STEPS = 2
#: Set (to anything) to compile an autotuner's configs one after the other in the check,
#: as Triton does by itself (default: all at once, :mod:`.parallel_compile`).
SERIAL_COMPILE_ENV = "TRACEVIEW_SERIAL_COMPILE"


def environment(torch: Any, spec: ModelSpec) -> dict[str, Any]:
    """Versions and device, as this process sees them."""
    import importlib.metadata as md

    def version(name: str) -> str | None:
        mod = sys.modules.get(name)
        v = getattr(mod, "__version__", None)
        if v:
            return str(v)
        try:
            return md.version(name.replace("_", "-"))
        except md.PackageNotFoundError:
            return None

    dev: dict[str, Any] = {"kind": spec.device}
    if spec.device == "cuda":
        try:  # after a CUDA fault (a crashed backend) the context may refuse even this
            p = torch.cuda.get_device_properties(0)
            dev.update(name=p.name, memory_bytes=int(p.total_memory),
                       capability=f"{p.major}.{p.minor}")
        except Exception as exc:  # noqa: BLE001  (a record, not the result)
            dev.update(name=None, error=f"{type(exc).__name__}: {exc}"[:200])
    else:
        dev.update(name=platform.processor() or platform.machine())
    return {"python": platform.python_version(), "executable": sys.executable,
            "torch": torch.__version__, "transformers": version("transformers"),
            "triton": version("triton"), "flag_gems": version("flag_gems"),
            "cuda": getattr(torch.version, "cuda", None), "device": dev}


def _setup(task: dict[str, Any]) -> tuple[Any, Any, ModelSpec, Workload, Variant]:
    spec = model_from_dict(task["model"])
    workload = workload_from_dict(task["workload"])
    variant = Variant.from_dict(task["variant"])
    if spec.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise TraceviewError("--device cuda but torch sees no CUDA device here "
                                 "(use --device cpu)")
    positions = workload.prompt_len + max(workload.output_len, task.get("check_steps", 0),
                                          task.get("profile_steps", 0) + 1) + 8
    torch, model = model_mod.build_model(spec, positions)
    return torch, model, spec, workload, variant


def _check_batch(workload: Workload, vocab: int) -> list[list[int]]:
    return prompts(workload, vocab)[: min(workload.batch_size, workload.requests)]


def task_check(task: dict[str, Any], emit: Emit) -> dict[str, Any]:
    """The check; with ``bisect_on_failure`` a flag_gems backend whose logits are wrong
    (not crashed: the process is still sound) is bisected here too, in the same process
    with the model built, the reference computed and the backend's kernels compiled,
    and when culprits are found it is checked again without them (``recheck``): one
    process instead of three, each compile paid once."""
    phases: dict[str, int] = {}
    mark = time.perf_counter_ns()

    def lap(name: str) -> None:
        nonlocal mark
        now = time.perf_counter_ns()
        phases[name] = now - mark
        mark = now

    torch, model, spec, workload, variant = _setup(task)
    lap("model")
    with contextlib.ExitStack() as stack:
        compiling = None
        if variant.backend == "flag_gems" and not os.environ.get(SERIAL_COMPILE_ENV):
            from traceview.serve.parallel_compile import autotune_compiles_in_parallel

            compiling = stack.enter_context(autotune_compiles_in_parallel())
        out = _check_in(torch, model, spec, workload, variant, task, emit, lap)
    return dict(out, environment=environment(torch, spec), phases_ns=phases,
                parallel_compile=compiling)


def _check_in(torch: Any, model: Any, spec: ModelSpec, workload: Workload, variant: Variant,
              task: dict[str, Any], emit: Emit, lap: Callable[[str], None]) -> dict[str, Any]:
    steps = int(task["check_steps"])
    batch = _check_batch(workload, spec.vocab)
    ref = correctness.reference(torch, model, batch, steps)
    lap("reference")
    out = correctness.compare(torch, model, batch, steps, ref, variant, spec.dtype)
    lap("backend")  # with the backend's first calls: its imports, compiles, autotuning
    out["reference_tokens_sha256"] = engine.tokens_digest(ref["tokens"])
    if (task.get("bisect_on_failure") and variant.backend == "flag_gems"
            and not out["crashed"] and not out["logits"]["passed"]):
        units, rows = bisect_here(torch, model, spec, variant, batch, steps, None, 0, emit)
        lap("bisect")
        culprits = [r["op"] for r in rows if r["crashed"] or not r["passed"]]
        if culprits and len(rows) == len(units) and not rows[-1]["crashed"]:
            fixed = Variant.from_dict(dict(variant.to_dict(), exclude_ops=[
                *variant.exclude_ops, *culprits]))
            out["recheck"] = dict(correctness.compare(torch, model, batch, steps, ref, fixed,
                                                      spec.dtype),
                                  exclude_ops=list(fixed.exclude_ops))
            lap("recheck")
            from traceview.serve.reproducer import record_ops

            # every culprit was wrong, none crashed: the process is sound to record them
            out["reproducers"] = [record_ops(torch, model, batch, variant, op, spec.dtype,
                                             emit) for op in culprits]
            lap("reproduce")
    return out


def task_measure(task: dict[str, Any], emit: Emit) -> dict[str, Any]:
    t_start = time.perf_counter_ns()
    torch, model, spec, workload, variant = _setup(task)
    gen = model_mod.generation_config(workload.output_len)
    with contextlib.ExitStack() as stack:
        detail = backends.enter(variant, torch, model, gen, stack)
        t_warm = time.perf_counter_ns()
        warm_calls = engine.warm_up(torch, model, workload, gen, spec.vocab)
        t_measure = time.perf_counter_ns()
        run = engine.run_workload(torch, model, workload, gen, spec.vocab)
    run.update(backend_detail=detail, warmup_calls=warm_calls,
               setup_ns=t_warm - t_start, warmup_ns=t_measure - t_warm,
               env_seen={k: os.environ.get(k) for k in variant.env},
               environment=environment(torch, spec), pid=os.getpid())
    return run


def task_bisect(task: dict[str, Any], emit: Emit) -> dict[str, Any]:
    """One op at a time; stops at the first crash (the CUDA context is gone after one)."""
    torch, model, spec, workload, variant = _setup(task)
    batch = _check_batch(workload, spec.vocab)
    _, tested = bisect_here(torch, model, spec, variant, batch, int(task["check_steps"]),
                            task.get("candidates"), int(task.get("start", 0)), emit)
    return {"tested": tested}


def bisect_here(torch: Any, model: Any, spec: ModelSpec, variant: Variant,
                batch: list[list[int]], check_steps: int, units: list[str] | None,
                start: int, emit: Emit) -> tuple[list[str], list[dict[str, Any]]]:
    """The bisect's ops from ``start`` in this process: (candidates, rows tested)."""
    from traceview.serve.opcalls import aten_ops

    steps = min(check_steps, BISECT_STEPS)
    if units is None:
        hit = aten_ops(torch, model, batch)
        called, rest = backends.flag_gems_units(hit)
        units = [u for u in called if u not in variant.exclude_ops]
        emit({"candidates": units, "called": called, "not_called": len(rest),
              "aten_ops": hit})
    ref = correctness.reference(torch, model, batch, steps)
    tested: list[dict[str, Any]] = []
    for unit in units[start:]:
        emit({"testing": unit})
        out = correctness.compare(torch, model, batch, steps, ref, variant, spec.dtype,
                                  include=[unit])
        row = {"op": unit, "crashed": out["crashed"]}
        if out["crashed"]:
            row.update(phase=out["phase"], error=out["error"])
        else:
            row.update(logits_ratio=out["logits"]["ratio"], passed=out["logits"]["passed"],
                       earliest_divergence=out["tokens"]["earliest_divergence"])
        emit(row)
        tested.append(row)
        if out["crashed"]:
            break
    return units, tested


def task_profile(task: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from traceview.serve.profile import profile_steps

    torch, model, spec, workload, variant = _setup(task)
    batch = _check_batch(workload, spec.vocab)
    with contextlib.ExitStack() as stack:
        probe = model_mod.generation_config(2)
        detail = backends.enter(variant, torch, model, probe, stack)

        def gen_for(n: int) -> Any:
            return backends.same_generation(probe, model_mod.generation_config(n))

        out = profile_steps(torch, model, batch, int(task["profile_steps"]), gen_for,
                            Path(task["trace_path"]))
    return dict(out, backend_detail=detail, environment=environment(torch, spec))


def task_units(task: dict[str, Any], emit: Emit) -> dict[str, Any]:
    """The backend's ops this model calls (the bisect's candidates), with the registry
    keys each one registers (``mul`` -> ``mul.Tensor``, ``mul.Scalar``)."""
    from traceview.serve.opcalls import aten_ops

    torch, model, spec, workload, variant = _setup(task)
    hit = aten_ops(torch, model, _check_batch(workload, spec.vocab))
    called, rest = backends.flag_gems_units(hit)
    keys = backends.flag_gems_keys(called)
    return {"units": [u for u in called if u not in variant.exclude_ops], "called": called,
            "not_called": len(rest), "keys": keys, "aten_ops": hit}


def task_attribute(task: dict[str, Any], emit: Emit) -> dict[str, Any]:
    """One round of ``serve --attribute``: the model built once, then each configuration
    in the task's order (eager, the whole backend, or ops alone: ``include``), each
    warmed up and measured over one pass of the workload, the backend left between."""
    t_start = time.perf_counter_ns()
    torch, model, spec, workload, variant = _setup(task)
    setup_ns = time.perf_counter_ns() - t_start
    out = []
    for cfg in task["configs"]:
        emit({"config": cfg["name"]})
        t0 = time.perf_counter_ns()
        gen = model_mod.generation_config(workload.output_len)
        include = cfg.get("include")
        with contextlib.ExitStack() as stack:
            if include != []:  # [] is eager: the backend stays off
                backends.enter(variant, torch, model, gen, stack, include=include)
            engine.warm_up(torch, model, workload, gen, spec.vocab)
            run = engine.run_workload(torch, model, workload, gen, spec.vocab)
        out.append({"name": cfg["name"], "requests": run["requests"],
                    "tokens_sha256": run["tokens_sha256"],
                    "elapsed_ns": time.perf_counter_ns() - t0})
    return {"configs": out, "setup_ns": setup_ns, "environment": environment(torch, spec),
            "pid": os.getpid()}


def task_reproduce(task: dict[str, Any], emit: Emit) -> dict[str, Any]:
    """Each wrong op alone, its calls recorded and compared with a float64 reference
    (:mod:`.reproducer`)."""
    from traceview.serve.reproducer import record_ops

    torch, model, spec, workload, variant = _setup(task)
    batch = _check_batch(workload, spec.vocab)
    return {"ops": [record_ops(torch, model, batch, variant, op, spec.dtype, emit)
                    for op in task["ops"]]}


TASKS = {"check": task_check, "measure": task_measure, "bisect": task_bisect,
         "profile": task_profile, "units": task_units, "attribute": task_attribute,
         "reproduce": task_reproduce}


def run_task(task: dict[str, Any], emit: Emit) -> None:
    """Run one task, emitting its lines; the last is ``result`` or ``error``. The result
    says where the process's time went (``process_ns``): ``start_to_task``, from its
    start (spawned: the interpreter and traceview's imports; forked from a template: the
    fork) to the task, and ``task``, the task itself (torch and transformers when no
    template imported them, the model, backend, compiles, the work)."""
    began = time.monotonic_ns()
    try:
        result = TASKS[task["task"]](task, emit)
    except TraceviewError as exc:
        emit({"error": str(exc)})
        return
    started = os.environ.get(SPAWNED_ENV)
    result["process_ns"] = {
        "start_to_task": began - int(started) if started and started.isdigit() else None,
        "task": time.monotonic_ns() - began}
    emit({"result": result})


def _print_line(line: dict[str, Any]) -> None:
    print(json.dumps(line), flush=True)


def forked(text: str) -> int:
    """The task in a process forked from a template (``launch.forking``): the same lines
    as :func:`main` prints; the template's child flushes and leaves with ``os._exit``."""
    run_task(json.loads(text), _print_line)
    return 0


def main() -> None:
    task = json.loads(sys.stdin.read())
    run_task(task, _print_line)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: after a CUDA fault it can hang on the dead context, and
    # everything this process owes the parent is already on stdout (or on disk).
    os._exit(0)


if __name__ == "__main__":
    main()
