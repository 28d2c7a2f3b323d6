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
:func:`render_text` is that report for a terminal; ``--format json`` prints the dict.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from traceview.capture.config import CaptureConfig
from traceview.checks.correctness import fmt
from traceview.errors import CaptureError, CorrectnessError, KernelHangError
from traceview.runner import isolation
from traceview.runner.outcome import Outcome

CHECK_ENTRY = "traceview.checks.check_child:check"
#: Default seconds the isolated check may go without an answer before it is a hang. It
#: covers importing torch, building the inputs and compiling the kernel (Inductor can
#: take a minute), so a real hang costs this long to detect: ``--timeout`` changes it.
DEFAULT_TIMEOUT_S = 120.0
#: Seconds the child may take to import torch, open the device and build the inputs (it
#: reports the operands when done; the op's own ``timeout_s`` starts there).
STARTUP_S = 300.0
SCHEMA = 1


def check_isolated(config: CaptureConfig, cache_root: Path | None = None,
                   timeout_s: float = DEFAULT_TIMEOUT_S, *, python: str | None = None,
                   env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run the correctness check in a fresh process; return its result when it passes.

    ``cache_root`` gives the child its own Triton/Inductor caches (so the capture's cold
    call stays cold); ``python`` and ``env`` run it as another process setting would
    (``traceview ab`` checks each side in its own interpreter and environment). Raises CaptureError (cannot run: no GPU, FlagGems missing),
    CorrectnessError (wrong values or a crash, with ``.report``) or KernelHangError.
    """
    from traceview.runner.wire import encode_config

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
        "traceview_check": SCHEMA,
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


def headline(rep: dict[str, Any]) -> str:
    """The report's first line (also the exception's message)."""
    what = f"{rep['op']} ({rep['impl']}, {rep['dtype']}, {rep['device']})"
    verdict = rep["verdict"]
    if verdict == "wrong":
        c = rep.get("comparison") or {}
        if c.get("mismatch"):
            return f"correctness check failed: {what}: {c['mismatch']}; no timings written"
        tol = c.get("tolerance") or {}
        return (f"correctness check failed: {what} gives wrong values: {c.get('wrong'):,} of "
                f"{c.get('total'):,} elements ({_pct(c)}) outside rtol={tol.get('rtol'):g} "
                f"atol={tol.get('atol'):g} of the float64 reference; no timings written")
    crash = rep.get("crash") or {}
    if verdict == "timeout":
        return (f"correctness check failed: {what} did not return within "
                f"{crash.get('timeout_s'):g} s and was killed; no timings written")
    return f"correctness check failed: {what} crashed: {crash.get('error')}; no timings written"


def render_text(rep: dict[str, Any]) -> list[str]:
    """The report for a terminal: a headline, then one labelled line per fact."""
    lines = [headline(rep)]

    def add(label: str, text: str) -> None:
        lines.append(f"  {label:<10} {text}")

    operands = rep.get("operands") or []
    mixed = len({op.get("device") for op in operands if op.get("kind") == "tensor"}) > 1
    for i, op in enumerate(operands):
        add("operands" if i == 0 else "",
            f"{'ab'[i] if i < 2 else i}: {operand_text(op, show_device=mixed)}")
    c = rep.get("comparison")
    if c is not None:
        add("output", f"{_x(c.get('out_shape'))} {c.get('out_dtype')}, strides "
                      f"{tuple(c.get('out_strides') or ())}; eager PyTorch: "
                      f"{_x(c.get('expected_shape'))} {c.get('expected_dtype')}")
        if c.get("worst"):
            for key in ("worst", "first"):
                add(key, element_text(c[key]))
            per_dim = " x ".join(f"{a}/{b}" for a, b in c.get("wrong_per_dim") or [])
            add("wrong", f"{c['wrong']:,} of {c['total']:,} elements; indices per dim holding "
                         f"a wrong element: {per_dim}")
            add("range", out_of_range_text(c))
    crash = rep.get("crash")
    if crash is not None:
        if crash.get("frame"):
            add(*crash_frame_line(rep))
        if crash.get("first_error") and crash["first_error"] != crash.get("error"):
            add("first", f"without CUDA_LAUNCH_BLOCKING: {crash['first_error']}")
    if not rep.get("found_by", "").startswith("isolated"):
        add("found by", f"{rep['found_by']}, after the isolated check passed: the result "
                        "differs between processes or modes")
    add("reproduce", rep["reproducer"])
    return lines


def element_text(e: dict[str, Any]) -> str:
    """One compared element (``correctness.compare``'s ``worst``/``first``) for people."""
    return (f"index {tuple(e['index'])}: got {fmt(e['got'])}, expected {fmt(e['expected'])} "
            f"(abs err {fmt(e['abs_err'])})")


def crash_frame_line(rep: dict[str, Any]) -> tuple[str, str]:
    """The report's (label, text) line for the frame a crash or hang happened in."""
    crash = rep["crash"]
    how = " (located with CUDA_LAUNCH_BLOCKING=1)" if crash.get("located") else ""
    where = "stuck at" if rep["verdict"] == "timeout" else "raised at"
    return where, f"{isolation.short_frame(crash['frame'])}{how}"


def operand_text(op: dict[str, Any], *, show_device: bool = False) -> str:
    if op.get("kind") == "scalar":
        return f"Python {op.get('type')} {op.get('value')}"
    if "strides" not in op:  # only the spec is known (the process died before building it)
        return f"{_x(op.get('shape'))} {op.get('layout', '')}".strip()
    layout = "contiguous" if op["contiguous"] else "non-contiguous"
    extra = f", storage offset {op['storage_offset']}" if op.get("storage_offset") else ""
    dev = f", on {op['device']}" if show_device else ""
    return (f"{_x(op['shape'])} {op['dtype']}, strides {tuple(op['strides'])}, "
            f"{layout}{extra}{dev}")


def out_of_range_text(c: dict[str, Any]) -> str:
    n = c.get("out_of_range") or 0
    rng = c.get("reference_range")
    span = f"[{fmt(rng[0])}, {fmt(rng[1])}]" if rng else "(no finite reference)"
    if n:
        return (f"{n:,} values lie far outside the reference's range {span} or are not "
                "finite: garbage, which suggests an out-of-bounds read (wrong strides, "
                "offset or broadcast)")
    return (f"all values lie near the reference's range {span}: wrong elements read, not "
            "garbage (an indexing or broadcast mistake within the operands)")


def _pct(c: dict[str, Any]) -> str:
    total = c.get("total") or 0
    return f"{100 * (c.get('wrong') or 0) / total:.3g}%" if total else "n/a"


def _x(shape: Any) -> str:
    return "x".join(map(str, shape)) if shape else "()"
