"""A wrong op's reproducer: the calls it saw in the model, its error against float64, a script.

The bisect says *which* op breaks the model; a backend maintainer also needs to know
whether it is a kernel bug or a tolerance question, and a file to run. In a fresh child
(:func:`record_ops`) the op is switched on alone (``use_gems(include=[op])``) under a
``TorchDispatchMode`` that keeps, for each distinct (overload, shapes, strides, dtypes)
it meets in a prefill and two decode steps, the inputs and the backend's output. With
the backend off again, each kept call is recomputed in float64 on the CPU (the
reference) and by torch eager in the same dtype on the same device. Per call:

* ``max_abs_err``: max |backend - reference|, and ``eager_max_abs_err`` likewise;
* ``beyond_tolerance``: some element outside ``atol + rtol * |reference|``, with
  ``torch.testing``'s default ``rtol``/``atol`` for the call's own output dtype
  (:data:`TOLERANCES`; a bf16 model's norms run in float32), or a
  non-finite value where the reference is finite; ``eager_beyond_tolerance`` the same
  for eager.

The verdict: beyond the tolerance where eager is within it is a **kernel bug**; within
it at every call, or beyond it only where eager is too, is a **tolerance question**
(the model-level check compounds rounding over layers).

:func:`script` (parent side, no torch) writes the one-file reproducer: the recorded
calls' shapes, strides and scalar arguments, seeded random inputs, the same comparison,
exit status 1 when the op is beyond tolerance where eager is not.
"""

from __future__ import annotations

import contextlib
import json
import pprint
from collections.abc import Callable
from typing import Any

from traceview.serve.spec import Variant

#: torch.testing.assert_close's defaults: (rtol, atol) by dtype.
TOLERANCES = {"bfloat16": (1.6e-2, 1e-5), "float16": (1e-3, 1e-5), "float32": (1.3e-6, 1e-5),
              "float64": (1e-7, 1e-7)}
#: Distinct call signatures kept per op (the model repeats the same shapes every layer).
MAX_CALLS = 8
KERNEL_BUG = "kernel bug"
TOLERANCE_QUESTION = "tolerance question"


def _describe(torch: Any, x: Any) -> Any:
    """An argument as the script rebuilds it: a tensor's layout, or a plain value."""
    if isinstance(x, torch.Tensor):
        return {"tensor": True, "shape": list(x.shape), "stride": list(x.stride()),
                "dtype": str(x.dtype).removeprefix("torch.")}
    if isinstance(x, torch.dtype):
        return {"dtype_value": str(x).removeprefix("torch.")}
    if isinstance(x, list | tuple):
        return [_describe(torch, y) for y in x]
    if x is None or isinstance(x, bool | int | float | str):
        return x
    return {"repr": repr(x)}


def _matches(name: str, keys: list[str]) -> bool:
    bare = name.removeprefix("aten::").removesuffix(".default")
    return bare in keys or name.removeprefix("aten::") in keys


def _recording(torch: Any, keys: list[str], kept: list[dict[str, Any]]) -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode

    def cpu(x: Any) -> Any:
        return x.detach().to("cpu", copy=True) if isinstance(x, torch.Tensor) else x

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = func.name()
            if not _matches(name, keys) or len(kept) >= MAX_CALLS:
                return func(*args, **kwargs)
            sig = json.dumps([name, _describe(torch, list(args)),
                              {k: _describe(torch, v) for k, v in kwargs.items()}],
                             sort_keys=True)
            if any(k["sig"] == sig for k in kept):
                return func(*args, **kwargs)
            entry = {"sig": sig, "func": func, "aten": name.removeprefix("aten::"),
                     "args": [cpu(a) for a in args], "kwargs": {k: cpu(v) for k, v in
                                                                kwargs.items()},
                     "device": next((a.device for a in args if isinstance(a, torch.Tensor)),
                                    None)}
            kept.append(entry)  # before the call: a crash still leaves the shapes
            out = func(*args, **kwargs)
            entry["out"] = cpu(out)
            return out

    return Record()


def _errors(torch: Any, got: Any, ref: Any, dtype: str) -> tuple[float | None, bool]:
    """(max |got - ref|, beyond tolerance); got/ref tensors (ref float64)."""
    if not isinstance(got, torch.Tensor) or not isinstance(ref, torch.Tensor):
        return None, False
    g = got.detach().to("cpu").double()
    if g.shape != ref.shape:
        return None, True
    rtol, atol = TOLERANCES.get(dtype, TOLERANCES["float32"])
    finite = torch.isfinite(ref)
    bad_nonfinite = bool((finite & ~torch.isfinite(g)).any())
    diff = (g - ref).abs()
    diff = torch.where(finite, diff, torch.zeros_like(diff))
    beyond = bad_nonfinite or bool((diff > atol + rtol * ref.abs()).any())
    err = float(diff.max()) if diff.numel() else 0.0
    return (None if bad_nonfinite else err), beyond


def _reference(torch: Any, entry: dict[str, Any]) -> tuple[Any, Any]:
    """(float64 CPU result, eager result in the call's own dtype and device)."""
    def f64(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            return x.double()
        if isinstance(x, list | tuple):
            return type(x)(f64(y) for y in x)
        return x

    def dev(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and entry["device"] is not None:
            return x.to(entry["device"])
        if isinstance(x, list | tuple):
            return type(x)(dev(y) for y in x)
        return x

    func = entry["func"]
    ref = func(*[f64(a) for a in entry["args"]], **{k: f64(v) for k, v in
                                                     entry["kwargs"].items()})
    eager = func(*[dev(a) for a in entry["args"]], **{k: dev(v) for k, v in
                                                       entry["kwargs"].items()})
    return ref, eager


def record_ops(torch: Any, model: Any, batch: list[list[int]], variant: Variant, op: str,
               dtype: str, emit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """The op alone in the model: its distinct calls, each against float64 and eager."""
    from traceview.serve import backends
    from traceview.serve.correctness import first_step_logits
    from traceview.serve.engine import generate
    from traceview.serve.model import generation_config

    emit({"reproducing": op})
    keys = backends.flag_gems_keys([op]).get(op, [])
    kept: list[dict[str, Any]] = []
    crashed = None
    try:
        with contextlib.ExitStack() as stack:
            gen = generation_config(2)
            backends.enter(variant, torch, model, gen, stack, include=[op])
            with _recording(torch, keys, kept):
                first_step_logits(torch, model, batch)
                generate(torch, model, batch, gen)
    except Exception as exc:  # noqa: BLE001  (a crashing op is a result here)
        crashed = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    calls = []
    for entry in kept:
        row: dict[str, Any] = {"aten": entry["aten"], "args": json.loads(entry["sig"])[1],
                               "kwargs": json.loads(entry["sig"])[2]}
        if "out" in entry:
            ref, eager = _reference(torch, entry)
            got = entry["out"]
            # the call's own dtype: RMSNorm and rotary run in float32 inside a bf16 model
            own = str(got.dtype).removeprefix("torch.") if isinstance(got, torch.Tensor) \
                else dtype
            row["dtype"] = own
            if isinstance(ref, torch.Tensor):
                row["max_abs_ref"] = float(ref.abs().max()) if ref.numel() else 0.0
            row["max_abs_err"], row["beyond_tolerance"] = _errors(torch, got, ref, own)
            row["eager_max_abs_err"], row["eager_beyond_tolerance"] = _errors(
                torch, eager, ref, own)
        calls.append(row)
    return {"op": op, "keys": keys, "dtype": dtype, "device": str(model.device.type),
            "tolerance": dict(zip(("rtol", "atol"), TOLERANCES.get(dtype, (None, None)),
                                  strict=True)),
            "crashed": crashed, "calls": calls, "verdict": verdict(calls, crashed)}


def verdict(calls: list[dict[str, Any]], crashed: str | None) -> str:
    """kernel bug, tolerance question, or crashed (see the module's docstring)."""
    if crashed is not None:
        return "crashed"
    if any(c.get("beyond_tolerance") and not c.get("eager_beyond_tolerance") for c in calls):
        return KERNEL_BUG
    return TOLERANCE_QUESTION


SCRIPT = '''"""Reproducer: FlagGems op {op!r} against a float64 reference, on the calls {model} made.

Written by traceview serve (its correctness bisect found {op!r} wrong in the model).
Recorded in the model: {verdict}; largest error {err} against float64 (eager in the
same dtype: {eager_err}). Inputs here are seeded random values with the recorded
shapes, strides and dtypes. Exit status 1 when the op is beyond the dtype's tolerance
(torch.testing's rtol/atol) on a call where torch eager is within it.

    python {name}
"""
import sys

import torch

import flag_gems

OP = {op!r}
DEVICE = {device!r}
CALLS = {calls}
TOLERANCES = {tolerances}


def build(spec, gen):
    if isinstance(spec, list):
        return [build(s, gen) for s in spec]
    if not isinstance(spec, dict):
        return spec
    if "dtype_value" in spec:
        return getattr(torch, spec["dtype_value"])
    if not spec.get("tensor"):
        raise SystemExit(f"cannot rebuild argument {{spec}}")
    dtype = getattr(torch, spec["dtype"])
    shape, stride = spec["shape"], spec["stride"]
    size = 1 + sum((n - 1) * s for n, s in zip(shape, stride) if n > 0)
    if dtype.is_floating_point:
        base = torch.randn(size, generator=gen, dtype=torch.float32).to(dtype)
    elif dtype == torch.bool:
        base = torch.randint(0, 2, (size,), generator=gen).bool()
    else:
        base = torch.randint(0, 8, (size,), generator=gen).to(dtype)
    return base.to(DEVICE).as_strided(shape, stride)


def f64(x):
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().double() if x.is_floating_point() else x.detach().cpu()
    if isinstance(x, list):
        return [f64(y) for y in x]
    return x


def check(got, ref, dtype):
    rtol, atol = TOLERANCES.get(dtype, TOLERANCES["float32"])
    g = got.detach().cpu().double()
    finite = torch.isfinite(ref)
    diff = torch.where(finite, (g - ref).abs(), torch.zeros_like(ref))
    beyond = bool((finite & ~torch.isfinite(g)).any()) or bool(
        (diff > atol + rtol * ref.abs()).any())
    return float(diff.max()) if diff.numel() else 0.0, beyond


def main():
    gen = torch.Generator().manual_seed(0)
    bug = False
    for call in CALLS:
        overload, _, name = call["aten"].partition(".")
        func = getattr(getattr(torch.ops.aten, overload), name or "default")
        args = build(call["args"], gen)
        kwargs = {{k: build(v, gen) for k, v in call["kwargs"].items()}}
        dtype = next((a.dtype for a in args if isinstance(a, torch.Tensor)
                      and a.is_floating_point()), torch.float32)
        dtype = str(dtype).removeprefix("torch.")
        ref = func(*f64(args), **{{k: f64(v) for k, v in kwargs.items()}})
        eager = func(*args, **kwargs)
        with flag_gems.use_gems(include=[OP]):
            got = func(*args, **kwargs)
        err, beyond = check(got, ref, dtype)
        eager_err, eager_beyond = check(eager, ref, dtype)
        bug = bug or (beyond and not eager_beyond)
        shapes = [a["shape"] for a in call["args"] if isinstance(a, dict) and "shape" in a]
        print(f"{{call['aten']}} {{shapes}} {{dtype}}: max |{{OP}} - float64| = {{err:.3g}}"
              f"{{' (beyond tolerance)' if beyond else ''}}; eager {{eager_err:.3g}}"
              f"{{' (beyond tolerance)' if eager_beyond else ''}}")
    print(f"{{OP}}: " + ("wrong beyond the dtype's tolerance where eager is within it "
                        "(a kernel bug)" if bug else "within tolerance, or only where eager "
                        "is not either (a tolerance question)"))
    return 1 if bug else 0


if __name__ == "__main__":
    sys.exit(main())
'''


def worst(calls: list[dict[str, Any]], key: str) -> float | None:
    vals = [float(c[key]) for c in calls if c.get(key) is not None]
    return max(vals) if vals else None


def script(found: dict[str, Any], name: str, model: str) -> str:
    """The one-file reproducer for one op's :func:`record_ops` result."""
    calls = [{"aten": c["aten"], "args": c["args"], "kwargs": c["kwargs"]}
             for c in found["calls"]]
    err, eager_err = worst(found["calls"], "max_abs_err"), worst(found["calls"],
                                                                "eager_max_abs_err")
    return SCRIPT.format(op=found["op"], model=model, verdict=found["verdict"],
                         err="not finite" if err is None and found["calls"] else f"{err}",
                         eager_err=f"{eager_err}", name=name, device=found["device"],
                         calls=pprint.pformat(calls, width=88, sort_dicts=False),
                         tolerances=repr(TOLERANCES))


def claim(found: dict[str, Any], root: str) -> dict[str, Any]:
    """The reproducer's sentence as a claim (``report.claims``): the op's largest error
    against float64 and eager's, each cited at the call that holds it (``root``: the
    JSON Pointer of this reproducer in the document)."""
    from traceview.report.claims import Claim, Figure, pointer

    figs = []
    words = f"{found['op']}: {found['verdict']}"
    if found.get("crashed"):
        words += f" ({found['crashed']})"
    for name, key, label in (("error", "max_abs_err", "max |error| against float64"),
                             ("eager", "eager_max_abs_err", f"eager in {found['dtype']}")):
        at = [(c[key], i) for i, c in enumerate(found["calls"]) if c.get(key) is not None]
        if not at:
            continue
        value, i = max(at)
        figs.append(Figure(name, value, root + pointer("calls", i, key)))
        words += f"; {label} {value:.3g}"
    beyond = sum(1 for c in found["calls"] if c.get("beyond_tolerance"))
    words += (f"; {beyond} of {len(found['calls'])} distinct call(s) beyond the dtype's "
              "tolerance")
    return Claim("op-reproducer", words, tuple(figs)).as_json()
