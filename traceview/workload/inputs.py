"""Inputs for a capture: fresh, seeded, random, never zeros, in the layout asked for.

Prepared once, before anything is timed: building inputs inside a timed region would
be measured as the op. Non-contiguous layouts are real views with real strides, so a kernel
that copies them to contiguous memory first pays for that copy in the measurement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from traceview.errors import CaptureError
from traceview.workload.config import CaptureConfig


@dataclass
class Inputs:
    """The tensors, plus the scalar for tensor-scalar ops, in call order."""

    tensors: list[Any]
    scalar: float | int | None

    @property
    def args(self) -> tuple[Any, ...]:
        """Positional arguments for ``torch.<op>`` and the Triton launcher."""
        if self.scalar is not None:
            return (self.tensors[0], self.scalar)
        return tuple(self.tensors)

    def describe(self) -> dict[str, Any]:
        """Shapes, strides (in elements) and contiguity per tensor input."""
        return {
            "input_shapes": [list(t.shape) for t in self.tensors],
            "strides": [list(t.stride()) for t in self.tensors],
            "contiguous": [bool(t.is_contiguous()) for t in self.tensors],
            "scalars": [] if self.scalar is None else [self.scalar],
        }


def make_inputs(torch: Any, config: CaptureConfig, device: Any) -> Inputs:
    """Build the inputs for ``config`` on ``device`` from ``config.seed`` (or ``--inputs``)."""
    if config.inputs_fn:
        torch.manual_seed(config.seed)
        return user_inputs(torch, config.inputs_fn, device)
    gen = torch.Generator(device=device)
    gen.manual_seed(config.seed)
    dtype = getattr(torch, config.dtype)
    shapes = config.shapes
    if config.spec.arity == 2 and len(shapes) == 1 and config.scalar is None:
        shapes = (shapes[0], shapes[0])  # tensor-tensor, same shape
    tensors = []
    for i, shape in enumerate(shapes):
        divisor = config.op == "div" and i == 1
        t = _laid_out(torch, shape, dtype, device, gen, config.layout, divisor)
        tensors.append(t)
    if config.layout != "contiguous" and tensors[0].is_contiguous():
        raise CaptureError(
            f"--layout {config.layout} on shape {'x'.join(map(str, shapes[0]))} still gives "
            "a contiguous tensor (size-1 dimensions); use a shape like 64x4096"
        )
    return Inputs(tensors=tensors, scalar=config.scalar)


def _laid_out(torch, shape, dtype, device, gen, layout, divisor):
    """A tensor of logical ``shape`` whose memory layout is ``layout``.

    transposed: allocated with the last two dims swapped, then ``.transpose(-1, -2)``.
    strided: allocated with the last dim doubled, then every other element.
    A 1-D input under ``transposed`` (a broadcast operand) stays contiguous.
    """
    shape = tuple(shape)
    if layout == "transposed" and len(shape) >= 2:
        alloc = shape[:-2] + (shape[-1], shape[-2])
        return _random(torch, alloc, dtype, device, gen, divisor).transpose(-1, -2)
    if layout == "strided":
        alloc = shape[:-1] + (shape[-1] * 2,)
        return _random(torch, alloc, dtype, device, gen, divisor)[..., ::2]
    return _random(torch, shape, dtype, device, gen, divisor)


def _random(torch, shape, dtype, device, gen, divisor):
    """Normal floats (divisors kept away from zero) or small non-zero integers."""
    if dtype.is_floating_point:
        if divisor:
            mag = torch.rand(shape, generator=gen, device=device, dtype=torch.float32) + 0.5
            sign = torch.randint(0, 2, shape, generator=gen, device=device) * 2 - 1
            return (mag * sign).to(dtype)
        return torch.randn(shape, generator=gen, device=device, dtype=torch.float32).to(dtype)
    t = torch.randint(-1000, 1001, shape, generator=gen, device=device, dtype=dtype)
    return torch.where(t == 0, torch.ones_like(t), t)


@dataclass
class UserInputs(Inputs):
    """What ``--inputs`` returned, kept as the exact positional arguments."""

    positional: tuple[Any, ...] = ()

    @property
    def args(self) -> tuple[Any, ...]:
        return self.positional

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["scalars"] = [a for a in self.positional if isinstance(a, (int, float))]
        d["inputs_fn"] = True
        return d


def user_inputs(torch: Any, spec: str, device: Any) -> UserInputs:
    from traceview.workload.usercode import load_callable

    make = load_callable("inputs", spec)
    args = make(device)
    if not isinstance(args, (tuple, list)):
        args = (args,)
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if not tensors:
        raise CaptureError(f"--inputs {spec} returned no tensors; return a tuple of arguments")
    return UserInputs(tensors=tensors, scalar=None, positional=tuple(args))
