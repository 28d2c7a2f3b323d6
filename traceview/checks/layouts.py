"""``capture --check-layouts``: the correctness check alone, over the operand layouts a
real model hands the op, with no timing.

A pointwise kernel that is right on two contiguous tensors of one shape can still be
wrong on what models actually pass: transposed views (attention's ``q.transpose(1, 2)``),
slices with a storage offset, every-other-element views, broadcast on one axis (rotary
embeddings: ``(B, H, S, D) * (B, 1, S, D)``), a bias of lower rank, a stride-0 expanded
view, a Python scalar, a 0-dim tensor (on the device, or on the CPU as
``x * torch.tensor(0.5)`` gives). Each variant is one operand list; all run in one child
process (:mod:`traceview.checks.check_child`), and a crash or hang ends that process
only: the variant is marked and the rest go on in a new one. Torch-free on this side.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from traceview.checks.failure import STARTUP_S
from traceview.documents import stamp
from traceview.runner import isolation
from traceview.workload.config import CaptureConfig

#: The output shape used when ``--shape`` is not given: rank 4, every dim > 1, small
#: enough for Triton's CPU interpreter.
DEFAULT_SHAPE = (4, 8, 16, 32)
#: The scalar used by the scalar-operand variant (an int for integer dtypes).
SCALAR_FLOAT, SCALAR_INT = 2.5, 3
CHILD_ENTRY = "traceview.checks.check_child:check_variants"


@dataclass(frozen=True)
class Variant:
    name: str
    operands: tuple[dict[str, Any], ...]


def variants(config: CaptureConfig) -> list[Variant]:
    """The layouts checked for ``config``'s op on its output shape (``config.out_shape``).

    Variants a shape cannot express (a transposed view needs the last two dims > 1,
    broadcast on an axis needs that axis > 1) are left out rather than faked.
    """
    shape = tuple(config.out_shape)
    rank = len(shape)
    c = _tensor(shape, "contiguous")
    can_t = rank >= 2 and min(shape[-2:]) > 1
    out: list[Variant] = [Variant("contiguous", (c,) * config.spec.arity)]
    if config.spec.arity == 1:
        if can_t:
            out.append(Variant("transposed view", (_tensor(shape, "transposed"),)))
        if shape[-1] > 1:
            out.append(Variant("strided (every other element)", (_tensor(shape, "strided"),)))
        out.append(Variant("sliced (storage offset)", (_tensor(shape, "offset"),)))
        if shape[0] > 1:
            base = (1,) + shape[1:]
            out.append(Variant("expanded (stride 0 on dim 0)", (_expand(shape, base),)))
        out.append(Variant("0-dim tensor", ({"zero_dim": "device"},)))
        return out

    if can_t:
        out.append(Variant("lhs transposed view", (_tensor(shape, "transposed"), c)))
        out.append(Variant("both transposed", (_tensor(shape, "transposed"),) * 2))
    if shape[-1] > 1:
        out.append(Variant("lhs strided (every other element)", (_tensor(shape, "strided"), c)))
    out.append(Variant("lhs sliced (storage offset)", (_tensor(shape, "offset"), c)))
    for k in range(rank):
        if shape[k] > 1:
            one = shape[:k] + (1,) + shape[k + 1:]
            out.append(Variant(f"rhs broadcast on dim {k} ({_x(one)})", (c, _tensor(one, "contiguous"))))
    for k in range(rank):
        if shape[k] > 1:
            one = shape[:k] + (1,) + shape[k + 1:]
            out.append(Variant(f"lhs broadcast on dim {k} ({_x(one)})", (_tensor(one, "contiguous"), c)))
    if rank >= 2:
        out.append(Variant(f"rhs of lower rank ({_x(shape[1:])})", (c, _tensor(shape[1:], "contiguous"))))
    if rank >= 3:
        out.append(Variant(f"rhs last dim only ({shape[-1]})", (c, _tensor(shape[-1:], "contiguous"))))
    axis = 1 if rank >= 3 else 0
    if can_t and shape[axis] > 1:
        one = shape[:axis] + (1,) + shape[axis + 1:]
        out.append(Variant(f"lhs transposed, rhs broadcast on dim {axis} ({_x(one)})",
                           (_tensor(shape, "transposed"), _tensor(one, "contiguous"))))
    if shape[axis] > 1:
        base = shape[:axis] + (1,) + shape[axis + 1:]
        out.append(Variant(f"rhs expanded (stride 0 on dim {axis})", (c, _expand(shape, base))))
    scalar = SCALAR_FLOAT if config.dtype.startswith(("float", "bfloat")) else SCALAR_INT
    out.append(Variant(f"scalar operand ({scalar})", (c, {"scalar": scalar})))
    out.append(Variant("0-dim tensor operand", (c, {"zero_dim": "device"})))
    if config.device == "cuda":
        out.append(Variant("0-dim CPU tensor operand", (c, {"zero_dim": "cpu"})))
    return out


def _tensor(shape: tuple[int, ...], layout: str) -> dict[str, Any]:
    return {"shape": list(shape), "layout": layout}


def _expand(shape: tuple[int, ...], base: tuple[int, ...]) -> dict[str, Any]:
    return {"shape": list(shape), "layout": "expand", "base": list(base)}


def _x(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) or "()"


@dataclass(frozen=True)
class Row:
    """One variant's verdict: ``pass``, ``wrong``, ``raised`` (the impl refused these
    operands with an exception, the device still usable), ``crashed`` or ``timeout``."""

    name: str
    status: str
    operands: list[dict[str, Any]] | None
    comparison: dict[str, Any] | None = None
    error: str | None = None
    frame: str | None = None
    located: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def check_layouts(config: CaptureConfig, timeout_s: float,
                  env: dict[str, str] | None = None) -> list[Row]:
    """Run every variant; returns one :class:`Row` per variant, in order.

    Raises CaptureError when the check cannot run at all (no GPU, FlagGems missing).
    """
    from traceview.errors import CaptureError
    from traceview.workload.wire import encode_config

    todo = variants(config)
    rows: dict[int, Row] = {}
    pending = list(range(len(todo)))
    encoded = encode_config(config)
    locate = config.device == "cuda"
    while pending:
        payload = {"config": encoded, "indices": pending,
                   "variants": [{"operands": list(todo[i].operands)} for i in pending]}
        outcome = isolation.run_child(CHILD_ENTRY, payload, timeout_s, env=env,
                                      startup_s=max(timeout_s, STARTUP_S))
        if outcome.status == "error":
            raise CaptureError(outcome.error or "the layout check could not run")
        started = None
        operands = None
        for rec in outcome.records:
            if "done" in rec:
                i = rec["done"]
                rows[i] = _row(todo[i].name, {"operands": operands, **rec})
                started = None
            elif "start" in rec:
                started, operands = rec["start"], None
            elif "operands" in rec:
                operands = rec["operands"]
        if outcome.status in ("ok", "wrong"):
            break
        if started is None:  # died before the first variant (an import, no device...)
            raise CaptureError(f"the layout check process failed: {outcome.error}")
        if outcome.status == "crashed" and locate:  # again alone, launches synchronous
            alone = {"config": encoded, "indices": [started],
                     "variants": [{"operands": list(todo[started].operands)}]}
            blocking = {**(env or {}), "CUDA_LAUNCH_BLOCKING": "1"}
            again = isolation.run_child(CHILD_ENTRY, alone, timeout_s, env=blocking,
                                        startup_s=max(timeout_s, STARTUP_S))
            if again.status == "crashed":
                outcome = dataclasses.replace(again, located=True, first_error=outcome.error)
        rows[started] = Row(todo[started].name, outcome.status, operands or
                            _declared(todo[started]), error=outcome.error,
                            frame=outcome.frame, located=outcome.located)
        pending = [i for i in pending if i > started and i not in rows]
    return [rows[i] for i in range(len(todo)) if i in rows]


def _row(name: str, rec: dict[str, Any]) -> Row:
    status = rec.get("status")
    if status == "raised":
        frame = isolation.culprit(rec.get("stack") or [])
        return Row(name, "raised", rec.get("operands"), error=rec.get("error"), frame=frame)
    return Row(name, "pass" if status == "ok" else "wrong", rec.get("operands"),
               comparison=rec.get("comparison"))


def _declared(v: Variant) -> list[dict[str, Any]]:
    """What the spec asked for, when the child died before describing the operands."""
    return [dict(o) for o in v.operands]


def exit_code(rows: list[Row]) -> int:
    """0 all pass; 2 when a variant hung (killed at the timeout); else 3 on any failure."""
    if any(r.status == "timeout" for r in rows):
        return 2
    return 0 if all(r.status == "pass" for r in rows) else 3


def document(config: CaptureConfig, rows: list[Row]) -> dict[str, Any]:
    """The matrix as plain data: what ``--format json`` prints and the table is drawn from."""
    return {
        **stamp("check_layouts"), "op": config.op, "impl": config.impl_label,
        "dtype": config.dtype, "device": config.device, "shape": list(config.out_shape),
        "rows": [r.to_dict() for r in rows],
        "passed": sum(r.status == "pass" for r in rows), "total": len(rows),
    }


