"""Bytes a pointwise kernel must move per call, from shapes, dtypes and strides; and what
its time means against that: achieved GB/s, and the share of a measured copy rate.

The count is the *least* traffic that computes the op: every distinct element of every
tensor input read once, every output element written once. A tensor's distinct elements
are the product of its sizes along the dimensions whose stride is not zero (a stride-0
dimension is a broadcast: the same element again, not new bytes; a transposed or sliced
view still holds ``numel`` distinct elements). Python scalars move nothing. Examples
(float32, 4 bytes): ``(16, 4096) + (4096,)`` reads 16*4096*4 + 4096*4 and writes
16*4096*4 bytes; ``x[..., ::2]`` of a ``(64, 8192)`` buffer (strides ``(8192, 2)``)
reads 64*4096*4 bytes, though the memory system may fetch the skipped halves too, which
shows as a lower GB/s than a contiguous input gets.

``capture`` counts from the tensors themselves (exact); ``explain`` from the launching
op's recorded shapes (:func:`from_recorded_op`: Kineto's ``Input Dims``, ``Input type``
and ``Input Strides`` with ``record_shapes``), for the pointwise ATen ops whose output
is the broadcast of their inputs, and says "unknown" for everything else.

GB/s here is 10**9 bytes per second, which is bytes per nanosecond.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

#: Kineto ``Input type`` strings -> bytes per element.
ITEMSIZE_BY_TYPE = {
    "float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "int": 4, "long int": 8,
    "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1,
    "c10::complex<float>": 8, "c10::complex<double>": 16,
}
#: ATen ops whose output has the broadcast shape of the tensor inputs (pointwise), so the
#: bytes follow from the recorded inputs alone.
POINTWISE_OPS = frozenset(f"aten::{n}" for n in (
    "add", "sub", "mul", "div", "neg", "abs", "relu", "sigmoid", "silu", "gelu", "exp",
    "add_", "sub_", "mul_", "div_", "tanh", "rsqrt", "sqrt", "pow", "maximum", "minimum",
    "where", "clamp", "log", "sin", "cos",
))


def distinct_elements(shape: list[int] | tuple[int, ...],
                      strides: list[int] | tuple[int, ...] | None) -> int:
    """Elements a view addresses, counting a stride-0 (broadcast) dimension once."""
    if any(d == 0 for d in shape):
        return 0
    if strides is None or len(strides) != len(shape):
        return math.prod(shape)
    return math.prod(d for d, s in zip(shape, strides, strict=True) if s != 0)


@dataclass(frozen=True)
class Operand:
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None
    itemsize: int

    @property
    def bytes(self) -> int:
        return distinct_elements(self.shape, self.strides) * self.itemsize


def bytes_moved(inputs: list[Operand], outputs: list[Operand]) -> dict[str, int]:
    """``{read, written, total}`` bytes of one call (see the module docstring)."""
    read = sum(op.bytes for op in inputs)
    written = sum(op.bytes for op in outputs)
    return {"read": read, "written": written, "total": read + written}


def broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    """NumPy broadcasting of ``shapes``; None when they do not broadcast."""
    if not shapes:
        return ()
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = {s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0} - {1}
        if len(dims) > 1:
            return None
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def from_recorded_op(name: str, args: dict[str, Any]) -> dict[str, Any] | None:
    """Bytes of one call of a pointwise ATen op from its recorded args, or None (unknown).

    The output is taken as the broadcast shape of the tensor inputs, contiguous, in the
    widest input element size (type promotion within one kind; a mixed int/float op with
    a wider int would be counted wide): ``assumed`` says so.
    """
    if name not in POINTWISE_OPS:
        return None
    dims, types = args.get("Input Dims"), args.get("Input type")
    strides = args.get("Input Strides")
    if not isinstance(dims, list) or not isinstance(types, list) or len(dims) != len(types):
        return None
    inputs: list[Operand] = []
    for i, (d, t) in enumerate(zip(dims, types, strict=True)):
        size = ITEMSIZE_BY_TYPE.get(t) if isinstance(t, str) else None
        if size is None or not isinstance(d, list):
            continue  # a Scalar, an optional, or a type not known: moves nothing counted
        s = strides[i] if isinstance(strides, list) and i < len(strides) else None
        inputs.append(Operand(tuple(d), tuple(s) if isinstance(s, list) and s else None, size))
    if not inputs:
        return None
    shape = broadcast([op.shape for op in inputs])
    if shape is None:
        return None
    out = Operand(shape, None, max(op.itemsize for op in inputs))
    moved: dict[str, Any] = bytes_moved(inputs, [out])
    moved["assumed"] = "output: broadcast shape of the inputs, widest input dtype"
    moved["strides_recorded"] = isinstance(strides, list)
    return moved


def gb_per_s(nbytes: int | None, ns: int | None) -> float | None:
    """Bytes per nanosecond (= GB/s, 10**9 bytes per second); None without both."""
    if not nbytes or not ns:
        return None
    return round(nbytes / ns, 3)


def share(achieved: float | None, reference: float | None) -> float | None:
    """``achieved / reference`` (a fraction), None without both."""
    if achieved is None or not reference:
        return None
    return round(achieved / reference, 4)


def for_report(op_name: str | None, op_args: dict[str, Any] | None,
               bandwidth: dict[str, Any] | None, kernel_p50_ns: int | None) -> dict[str, Any]:
    """explain's bytes per call: capture's exact count when the trace has one, else the
    launching op's recorded shapes, else unknown (``total`` None, ``source`` says why);
    ``gb_per_s`` over the per-call device work p50. ``bandwidth``: capture's block of
    that name (``CaptureMeta.bandwidth``), when the trace has one."""
    exact = (bandwidth or {}).get("bytes")
    if isinstance(exact, dict) and isinstance(exact.get("total"), int):
        got: dict[str, Any] = {"read": exact.get("read"), "written": exact.get("written"),
                               "total": exact["total"], "assumed": None,
                               "source": "capture's metadata (exact, from the tensors)"}
    elif op_name is None:
        return {"total": None, "source": "unknown: no aten op around the launches"}
    elif not (op_args or {}).get("Input Dims"):
        return {"total": None, "source": f"unknown: {op_name} has no recorded shapes "
                                         "(record_shapes off)"}
    else:
        rec = from_recorded_op(op_name, op_args or {})
        if rec is None:
            return {"total": None, "source": f"unknown: {op_name} is not a known pointwise op"}
        got = {"read": rec["read"], "written": rec["written"], "total": rec["total"],
               "assumed": rec["assumed"],
               "source": f"{op_name}'s recorded shapes"
                         + ("" if rec["strides_recorded"] else " (no strides recorded: "
                            "every input counted whole)")}
    got["gb_per_s"] = gb_per_s(got["total"], kernel_p50_ns)
    return got
