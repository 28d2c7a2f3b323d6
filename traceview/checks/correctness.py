"""Correctness before speed: compare an implementation's output with a float64 reference.

A fast wrong kernel is not a result. The reference is the same ATen op run on
the same inputs upcast to float64, on the same device. Output *behaviour* is checked
too: shape after broadcasting and dtype after type promotion must match eager PyTorch,
or the comparison of speeds compares different operations.
"""

from __future__ import annotations

import math
from typing import Any

from traceview.errors import CorrectnessError
from traceview.render.measured.checks import fmt
from traceview.workload import ops, usercode
from traceview.workload.config import CaptureConfig
from traceview.workload.inputs import Inputs


def check(torch: Any, config: CaptureConfig, inputs: Inputs, out: Any) -> dict[str, Any]:
    """The ``correctness`` metadata block, or CorrectnessError (exit 3) on any mismatch;
    its ``report`` is the :func:`compare` result (``failure.from_comparison`` turns it
    into the full failure report)."""
    label = f"{config.fn or config.impl} {config.op} {config.dtype}"
    found = compare_config(torch, config, inputs.args, out)
    if found["mismatch"]:
        raise CorrectnessError(
            f"correctness check failed for {label}: {found['mismatch']}; no timings written",
            report=found)
    block = {k: found[k] for k in ("reference", "tolerance", "max_abs_err", "max_rel_err",
                                   "passed", "out_dtype", "out_shape", "out_strides")}
    if not found["passed"]:
        w = found["worst"]
        rtol, atol = found["tolerance"]["rtol"], found["tolerance"]["atol"]
        raise CorrectnessError(
            f"correctness check failed for {label}: max abs error {fmt(found['max_abs_err'])} "
            f"(max rel {fmt(found['max_rel_err'])}) exceeds rtol={rtol:g} atol={atol:g}; worst "
            f"element {tuple(w['index'])}: got {fmt(w['got'])}, expected {fmt(w['expected'])}; "
            "no timings written", report=found
        )
    return block


def compare_config(torch: Any, config: CaptureConfig, args: tuple[Any, ...],
                   out: Any) -> dict[str, Any]:
    """:func:`compare` for a capture: the op's ATen, or the user's ``--ref`` as reference."""
    fn = config.spec.torch_fn(torch)
    if config.ref:
        return compare(torch, None, args, out, reference=usercode.load_callable("ref", config.ref),
                       reference_name=f"float64 via --ref {config.ref}")
    return compare(torch, fn, args, out)


def compare(torch: Any, fn: Any, args: tuple[Any, ...], out: Any, *,
            reference: Any = None, reference_name: str = "float64") -> dict[str, Any]:
    """Everything the float64 comparison of ``out`` with ``fn(*args)`` can say.

    ``fn`` is the ATen op, ``args`` the inputs exactly as the implementation got them
    (tensors and scalars). A user ``reference`` (called on the float64 inputs) replaces
    ``fn`` as the reference; its output's shape is then the contract (the op's promotion
    rules may not apply), and ``fn`` may be None. Returns plain JSON-able values:

    * ``passed``; ``wrong`` elements of ``total``; ``max_abs_err``, ``max_rel_err``
      (relative only where the reference is larger than atol);
    * ``worst`` and ``first`` wrong element: ``{index, got, expected, abs_err}``;
    * ``nonfinite``: NaN/inf where the reference is finite;
    * ``out_of_range``: outputs outside anything the op gives on these inputs (the
      reference's range widened by its own span on each side, or non-finite): a kernel
      that reads the wrong *in-bounds* element still lands inside it, garbage from memory
      outside the operands usually does not, so these suggest an out-of-bounds read;
    * ``wrong_per_dim``: for each output dimension, how many of its indices hold a wrong
      element (a broadcast bug on dim 1 shows as "15 of 16": index 0 is right);
    * the expected and actual output shape/dtype; a mismatch there is ``mismatch``.
    """
    args64 = tuple(a.double() if isinstance(a, torch.Tensor) else a for a in args)
    ref = None
    if reference is not None:
        ref = reference(*args64).double()
        shape, dtype = tuple(ref.shape), out.dtype
    else:
        shape, dtype = _eager_meta(torch, fn, args)
    out_dtype = str(dtype).removeprefix("torch.")
    rtol, atol = ops.tolerance(out_dtype) if out_dtype in ops.TOLERANCES else (0.0, 0.0)
    base: dict[str, Any] = {
        "reference": reference_name,
        "tolerance": {"rtol": rtol, "atol": atol},
        "out_dtype": str(out.dtype).removeprefix("torch."),
        "out_shape": list(out.shape),
        "out_strides": list(out.stride()),
        "expected_shape": list(shape),
        "expected_dtype": out_dtype,
    }
    if tuple(out.shape) != tuple(shape) or out.dtype != dtype:
        return {**base, "passed": False, "max_abs_err": None, "max_rel_err": None,
                "total": int(out.numel()), "wrong": None,
                "mismatch": (f"output is {tuple(out.shape)} {base['out_dtype']}, eager PyTorch "
                             f"gives {tuple(shape)} {out_dtype}")}
    cast = None
    if ref is None:
        ref = fn(*args64)
        cast = _reference_in_result_dtype(torch, fn, args, dtype)
    got = out.double()
    diff = (got - ref).abs()
    finite = torch.isfinite(ref)
    bad = (~(diff <= atol + rtol * ref.abs()) & finite) | (torch.isfinite(got) != finite)
    if cast is not None:  # right against either reading of the op's promotion is right
        diff_cast = (got - cast).abs()
        bad &= ~(diff_cast <= atol + rtol * cast.abs()) | (torch.isfinite(got)
                                                           != torch.isfinite(cast))
        diff = torch.minimum(diff, diff_cast)
    max_abs = float(diff[finite].max()) if bool(finite.any()) else 0.0
    sized = finite & (ref.abs() > atol)
    max_rel = float((diff[sized] / ref[sized].abs()).max()) if bool(sized.any()) else 0.0
    wrong = int(bad.sum())
    found: dict[str, Any] = {**base, "passed": wrong == 0, "max_abs_err": _num(max_abs),
                             "max_rel_err": _num(max_rel), "total": int(out.numel()),
                             "wrong": wrong, "mismatch": None}
    if wrong == 0:
        return found
    found.update(_where_wrong(torch, got, ref, diff, bad, finite, atol))
    return found


def _where_wrong(torch: Any, got: Any, ref: Any, diff: Any, bad: Any, finite: Any,
                 atol: float) -> dict[str, Any]:
    """The worst and first wrong element, the non-finite and out-of-range counts and
    the wrong indices per dimension (what :func:`compare` adds for a failed check)."""
    found: dict[str, Any] = {}
    score = torch.where(bad, diff.nan_to_num(nan=float("inf")), torch.full_like(diff, -1.0))
    flat_worst = int(score.reshape(-1).argmax())
    flat_first = int(bad.reshape(-1).nonzero()[0])
    found["worst"] = _element(got, ref, flat_worst)
    found["first"] = _element(got, ref, flat_first)
    found["nonfinite"] = int((~torch.isfinite(got) & finite).sum())
    if bool(finite.any()):
        lo, hi = float(ref[finite].min()), float(ref[finite].max())
        span = max(hi - lo, atol, 1.0)
        outside = ((got < lo - span) | (got > hi + span) | ~torch.isfinite(got)) & finite
        found["out_of_range"] = int(outside.sum())
        found["reference_range"] = [lo, hi]
    else:
        found["out_of_range"], found["reference_range"] = 0, None
    found["wrong_per_dim"] = [
        [int(bad.any(dim=[d for d in range(bad.dim()) if d != k]).sum()) if bad.dim() > 1
         else int(bad.sum()), int(bad.shape[k])]
        for k in range(bad.dim())
    ]
    return found


def _reference_in_result_dtype(torch: Any, fn: Any, args: tuple[Any, ...],
                               dtype: Any) -> Any:
    """The float64 reference with every floating tensor input wider than the result first
    rounded to the result dtype, or None when no input is.

    Why: PyTorch itself reads such an input in two ways. ``bfloat16 + a 0-dim float64
    tensor`` gives bfloat16; on the CPU, TensorIterator casts the 0-dim operand to the
    common dtype (bfloat16) before adding, on CUDA the kernel takes it as a float32
    scalar. Where the sum cancels (``-1.0 + 1.0318``), the first differs from the float64
    reference by far more than bfloat16's tolerance of the small result, so eager PyTorch
    on the CPU "failed" ``--check-cache``'s 0-dim step. An output is right when it is within
    tolerance of either reference; a kernel that computes in too narrow a type (Triton's
    own promotion computes bfloat16 + float16 in float16) stays wrong against both, since
    rounding to the result dtype (float32 there) changes neither input."""
    if not dtype.is_floating_point:
        return None
    size = torch.empty((), dtype=dtype).element_size()
    narrowed = False
    cast = []
    for a in args:
        if (isinstance(a, torch.Tensor) and a.dtype.is_floating_point
                and a.element_size() > size):
            cast.append(a.to(dtype).double())
            narrowed = True
        else:
            cast.append(a.double() if isinstance(a, torch.Tensor) else a)
    return fn(*cast) if narrowed else None


def _eager_meta(torch: Any, fn: Any, args: tuple[Any, ...]) -> tuple[tuple, Any]:
    """(shape, dtype) eager PyTorch returns for ``args``: the shape by broadcasting, the
    dtype from ``fn`` on one-element CPU stand-ins of the same dtypes and ranks (a 0-dim
    tensor stays 0-dim and Python scalars stay as given, so promotion sees what eager
    sees; every op here is pointwise).

    Why stand-ins: on meta tensors the first call of a meta kernel imports
    ``torch._dynamo`` (its Python meta functions are wrapped to disable dynamo), 4-5 s in
    every checking process, on the H200 as on the CPU; and the real inputs would, inside
    ``flag_gems.use_gems()``, ask the implementation under test what the answer's dtype
    is. Meta tensors remain the fallback for an op the CPU lacks for a dtype.
    """
    def stand_in(a: Any) -> Any:
        return torch.ones((1,) * a.dim(), dtype=a.dtype) if isinstance(a, torch.Tensor) else a

    try:
        dtype = fn(*(stand_in(a) for a in args)).dtype
        shape = torch.broadcast_shapes(*(a.shape for a in args if isinstance(a, torch.Tensor)))
        return tuple(shape), dtype
    except (RuntimeError, TypeError, NotImplementedError):
        return _meta_call(torch, fn, args)


def _meta_call(torch: Any, fn: Any, args: tuple[Any, ...]) -> tuple[tuple, Any]:
    """(shape, dtype) of ``fn`` on meta tensors (no data; 0-dim CPU tensors stay CPU
    tensors so that mixed-device promotion behaves as in eager)."""
    def meta(a: Any) -> Any:
        if not isinstance(a, torch.Tensor):
            return a
        if a.dim() == 0 and a.device.type == "cpu":
            return torch.empty((), dtype=a.dtype)
        return torch.empty(a.shape, dtype=a.dtype, device="meta")
    out = fn(*(meta(a) for a in args))
    return tuple(out.shape), out.dtype


def _element(got: Any, ref: Any, flat: int) -> dict[str, Any]:
    index = [int(i) for i in _unravel(flat, tuple(got.shape))]
    g, e = float(got.reshape(-1)[flat]), float(ref.reshape(-1)[flat])
    return {"index": index, "got": _num(g), "expected": _num(e), "abs_err": _num(abs(g - e))}


def _unravel(flat: int, shape: tuple[int, ...]) -> list[int]:
    out = []
    for size in reversed(shape):
        out.append(flat % size)
        flat //= size
    return list(reversed(out))


def _num(x: float) -> float | str:
    """JSON has no NaN or infinity: those become the strings ``nan``, ``inf``, ``-inf``."""
    if math.isnan(x):
        return "nan"
    if x in (float("inf"), float("-inf")):
        return "inf" if x > 0 else "-inf"
    return x
