"""The op table: which pointwise ops capture knows, what dtypes they take, how to check them.

Torch-free on purpose: the CLI validates ``--op``/``--dtype``/``--scalar`` against this
table before paying for ``import torch``, so a typo fails in milliseconds with one line.

Every op has one name used everywhere: in the Triton kernel's ``OP`` constexpr, in the
ATen function looked up for ``--impl torch``/``inductor``/``flag_gems``, and in the
float64 reference. Tolerances are per *output* dtype and sized so that one rounding of a
correct float32-accumulated result to that dtype passes, while a wrong kernel does not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from traceview.errors import CaptureError

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
INT_DTYPES = ("int32", "int64")

#: Accepted spellings for ``--dtype``; values are torch attribute names.
DTYPE_ALIASES: dict[str, str] = {
    "float16": "float16", "f16": "float16", "fp16": "float16", "half": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "float32": "float32", "f32": "float32", "fp32": "float32", "float": "float32",
    "float64": "float64", "f64": "float64", "fp64": "float64", "double": "float64",
    "int32": "int32", "i32": "int32", "int": "int32",
    "int64": "int64", "i64": "int64", "long": "int64",
}

#: Short names used in default file names (``1x4096_f32``).
DTYPE_SHORT = {
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "int32": "i32", "int64": "i64",
}

#: (rtol, atol) for comparing an output of this dtype with the float64 reference.
#: Floats: a little above half an ulp of the dtype (the unavoidable final rounding),
#: with slack for transcendental approximations. Integers must match exactly.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-5, 1e-6),
    "float16": (2e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "int32": (0.0, 0.0),
    "int64": (0.0, 0.0),
}

#: Bytes per element, for the memory estimate done before allocating anything.
ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int32": 4, "int64": 8}


@dataclass(frozen=True)
class OpSpec:
    """One pointwise op.

    ``arity`` is 1 (unary) or 2 (binary: tensor-tensor, broadcasting, or tensor-scalar).
    ``aten`` names the ATen entry point as ``module:function`` relative to ``torch``.
    ``dtypes`` are the input dtypes the op accepts in every implementation.
    """

    name: str
    arity: int
    aten: str
    dtypes: tuple[str, ...]
    note: str = ""

    def torch_fn(self, torch: Any) -> Callable[..., Any]:
        """The ATen callable (``torch.mul``, ``torch.nn.functional.gelu``...)."""
        module, _, fn = self.aten.rpartition(":")
        obj = torch
        for part in filter(None, module.split(".")):
            obj = getattr(obj, part)
        return getattr(obj, fn)


_ALL = FLOAT_DTYPES + INT_DTYPES

OPS: dict[str, OpSpec] = {
    spec.name: spec
    for spec in (
        OpSpec("add", 2, ":add", _ALL),
        OpSpec("sub", 2, ":sub", _ALL),
        OpSpec("mul", 2, ":mul", _ALL),
        OpSpec("div", 2, ":div", FLOAT_DTYPES, "true division"),
        OpSpec("neg", 1, ":neg", _ALL),
        OpSpec("abs", 1, ":abs", _ALL),
        OpSpec("relu", 1, ":relu", _ALL),
        OpSpec("sigmoid", 1, ":sigmoid", FLOAT_DTYPES),
        OpSpec("silu", 1, "nn.functional:silu", FLOAT_DTYPES),
        OpSpec("gelu", 1, "nn.functional:gelu", FLOAT_DTYPES, "exact (erf) form"),
        OpSpec("exp", 1, ":exp", FLOAT_DTYPES),
    )
}


def get_op(name: str) -> OpSpec:
    """The spec for ``name``, or a CaptureError listing the known ops."""
    try:
        return OPS[name]
    except KeyError:
        raise CaptureError(f"unknown op {name!r}; known ops: {', '.join(OPS)}") from None


def canonical_dtype(name: str) -> str:
    """``bf16`` -> ``bfloat16``; unknown names raise CaptureError."""
    try:
        return DTYPE_ALIASES[name.strip().lower()]
    except KeyError:
        known = ", ".join(dict.fromkeys(DTYPE_ALIASES.values()))
        raise CaptureError(f"unknown dtype {name!r}; known dtypes: {known}") from None


def check_dtype(op: OpSpec, dtype: str) -> None:
    """Refuse dtypes the op cannot take (e.g. ``sigmoid`` on int32) before any work."""
    if dtype not in op.dtypes:
        raise CaptureError(
            f"op {op.name!r} does not take dtype {dtype}; it takes: {', '.join(op.dtypes)}"
        )


def tolerance(dtype: str) -> tuple[float, float]:
    """(rtol, atol) for an output of ``dtype``."""
    return TOLERANCES[dtype]
