"""Correctness before speed: compare an implementation's output with a float64 reference.

A fast wrong kernel is not a result (trap 5). The reference is the same ATen op run on
the same inputs upcast to float64, on the same device. Output *behaviour* is checked
too: shape after broadcasting and dtype after type promotion must match eager PyTorch,
or the comparison of speeds compares different operations.
"""

from __future__ import annotations

from typing import Any

from traceview.capture import ops, usercode
from traceview.capture.config import CaptureConfig
from traceview.capture.inputs import Inputs
from traceview.errors import CorrectnessError


def expected_output(torch: Any, config: CaptureConfig, inputs: Inputs) -> tuple[tuple, Any]:
    """(shape, dtype) eager PyTorch would return, computed on the meta device (no data)."""
    fn = config.spec.torch_fn(torch)
    args = tuple(torch.empty(a.shape, dtype=a.dtype, device="meta")
                 if isinstance(a, torch.Tensor) else a for a in inputs.args)
    out = fn(*args)
    return tuple(out.shape), out.dtype


def check(torch: Any, config: CaptureConfig, inputs: Inputs, out: Any) -> dict[str, Any]:
    """The ``correctness`` metadata block, or CorrectnessError (exit 3) on any mismatch."""
    label = f"{config.fn or config.impl} {config.op} {config.dtype}"
    ref, ref_name = usercode.reference(torch, config, inputs)
    # With a user --ref the op's promotion rules may not apply: its shape is the contract.
    shape, dtype = (tuple(ref.shape), out.dtype) if config.ref else \
        expected_output(torch, config, inputs)
    if tuple(out.shape) != shape or out.dtype != dtype:
        raise CorrectnessError(
            f"correctness check failed for {label}: output is {tuple(out.shape)} {out.dtype}, "
            f"eager PyTorch gives {shape} {dtype}; no timings written"
        )
    out_dtype = str(dtype).removeprefix("torch.")
    rtol, atol = ops.tolerance(out_dtype)
    got = out.double()
    diff = (got - ref).abs()
    finite = torch.isfinite(ref)
    bad = ~(diff <= atol + rtol * ref.abs()) & finite | (torch.isfinite(got) != finite)
    max_abs = float(diff[finite].max()) if bool(finite.any()) else 0.0
    # Relative error only where it means something: outputs larger than atol.
    sized = finite & (ref.abs() > atol)
    max_rel = float((diff[sized] / ref[sized].abs()).max()) if bool(sized.any()) else 0.0
    passed = not bool(bad.any())
    block = {
        "reference": ref_name,
        "tolerance": {"rtol": rtol, "atol": atol},
        "max_abs_err": max_abs,
        "max_rel_err": max_rel,
        "passed": passed,
        "out_dtype": out_dtype,
        "out_shape": list(shape),
        "out_strides": list(out.stride()),
    }
    if not passed:
        idx = tuple(int(i) for i in bad.nonzero()[0].tolist())
        raise CorrectnessError(
            f"correctness check failed for {label}: max abs error {max_abs:.3g} "
            f"(max rel {max_rel:.3g}) exceeds rtol={rtol:g} atol={atol:g}; first bad element "
            f"{idx}: got {float(got[idx]):.6g}, expected {float(ref[idx]):.6g}; "
            "no timings written"
        )
    return block
