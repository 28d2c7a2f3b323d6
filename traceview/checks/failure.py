"""Correctness first, isolated, and one report when it fails.

:func:`check_isolated` is step 1 of every capture: the op runs once on the capture's own
seeded inputs in a fresh child process (:mod:`traceview.runner.isolation`), its output
is compared with the float64 reference there, and only when that passes does anything
else run (baseline processes, the profiled process). A wrong result, a crash (an
illegal memory access, a device-side assert, a segfault) or a hang is raised as
:class:`~traceview.errors.CorrectnessError` (exit 3) or
:class:`~traceview.errors.KernelHangError` (exit 2) carrying :func:`report`: the op,
impl, every operand's shape, dtype, strides and contiguity, what went wrong (worst
element, how many, whether the values suggest an out-of-bounds read; or the error and
the Python frame that raised it), and the smallest command that reproduces it.
:mod:`traceview.render.measured.checks` writes that report for a terminal; ``--format
json`` prints the dict.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from traceview.documents import stamp
from traceview.errors import CaptureError, CorrectnessError, KernelHangError
from traceview.render.measured.checks import failure_headline as headline
from traceview.runner import isolation
from traceview.runner.outcome import CHILD_TIMEOUT_S, Outcome
from traceview.workload.config import CaptureConfig

CHECK_ENTRY = "traceview.checks.check_child:check"
#: Seconds the child may take to import torch, open the device and build the inputs (it
#: reports the operands when done; the op's own ``timeout_s`` starts there).
STARTUP_S = 300.0


def check_isolated(config: CaptureConfig, cache_root: Path | None = None,
                   timeout_s: float = CHILD_TIMEOUT_S, *, python: str | None = None,
                   env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run the correctness check in a fresh process; return its result when it passes.

    ``cache_root`` gives the child its own Triton/Inductor caches (so the capture's cold
    call stays cold); ``python`` and ``env`` run it as another process setting would
    (``traceview ab`` checks each side in its own interpreter and environment). Raises CaptureError (cannot run: no GPU, FlagGems missing),
    CorrectnessError (wrong values or a crash, with ``.report``) or KernelHangError.
    """
    from traceview.workload.wire import encode_config

    env = dict(env or {})
    if cache_root is not None:
        env.update({"TRITON_CACHE_DIR": str(cache_root / "triton"),
                    "TORCHINDUCTOR_CACHE_DIR": str(cache_root / "inductor")})
    outcome = isolation.run_child(CHECK_ENTRY, {"config": encode_config(config)}, timeout_s,
                                  env=env or None, locate=config.device == "cuda",
                                  startup_s=max(timeout_s, STARTUP_S), python=python)
    if outcome.status == "ok":
        return outcome.value or {}
    if outcome.status == "error":
        err = CaptureError(outcome.error or "the correctness check could not run")
        err.exit_code = outcome.exit_code or 2
        raise err
    rep = report(config, outcome)
    cls = KernelHangError if outcome.status == "timeout" else CorrectnessError
    raise cls(headline(rep), report=rep)


def from_comparison(config: CaptureConfig, torch: Any, inputs: Any, comparison: dict[str, Any],
                    found_by: str) -> CorrectnessError:
    """The same report for a wrong output found in the capturing process itself (the
    cold call, or a graph replay) after the isolated check passed: an implementation
    whose result changes between processes or between eager and graph."""
    from traceview.checks.check_child import describe_operands

    rep = _base(config, "wrong", describe_operands(torch, inputs.args), found_by)
    rep["comparison"] = comparison
    return CorrectnessError(headline(rep), report=rep)


def _base(config: CaptureConfig, verdict: str, operands: Any, found_by: str) -> dict[str, Any]:
    return {
        **stamp("check"),
        "verdict": verdict,  # wrong | crashed | timeout
        "found_by": found_by,
        "op": config.op, "impl": config.impl_label, "device": config.device,
        "dtype": config.dtype, "layout": config.layout, "seed": config.seed,
        "shapes": [list(s) for s in config.shapes], "scalar": config.scalar,
        "operands": operands,
        "reproducer": reproducer(config),
        "written": [],
    }


def report(config: CaptureConfig, outcome: Outcome) -> dict[str, Any]:
    """The failure report as plain JSON-able data (schema in docs/capture.md)."""
    value = outcome.value or {}
    operands = value.get("operands") or next(
        (r["operands"] for r in reversed(outcome.records) if "operands" in r), None)
    rep = _base(config, outcome.status, operands, "isolated check (fresh process, first)")
    if outcome.status == "wrong":
        rep["comparison"] = value.get("comparison")
    else:
        rep["crash"] = crash_fields(outcome)
    return rep


def crash_fields(outcome) -> dict[str, Any]:
    """A crashed or hung child's report block (the isolated check and the cache check)."""
    return {
        "error": outcome.error, "frame": outcome.frame, "stack": list(outcome.stack[-8:]),
        "located": outcome.located, "first_error": outcome.first_error,
        "signal": outcome.signal, "returncode": outcome.returncode,
        "stderr_tail": list(outcome.stderr_tail[-5:]),
        "timeout_s": outcome.timeout_s if outcome.status == "timeout" else None,
    }


def reproducer(config: CaptureConfig) -> str:
    """The shortest ``traceview capture`` line with the same inputs and implementation:
    only the options that change what runs (defaults left out)."""
    who = ["--fn", config.fn] if config.fn else ["--impl", config.impl]
    for flag, value in (("--inputs", config.inputs_fn), ("--ref", config.ref)):
        if value:
            who += [flag, value]
    parts = ["traceview", "capture", "--op", config.op, *who,
             "--shape", ",".join("x".join(map(str, s)) for s in config.shapes),
             "--dtype", config.dtype]
    if config.layout != "contiguous":
        parts += ["--layout", config.layout]
    if config.scalar is not None:
        parts += ["--scalar", str(config.scalar)]
    if config.device != "cuda":
        parts += ["--device", config.device]
    if config.seed != 0:
        parts += ["--seed", str(config.seed)]
    return shlex.join(parts)


