"""The correctness check's child side: run the op once on fresh inputs and compare.

Entry points for :func:`traceview.runner.isolation.run_child` (so they run in a fresh
process, where a crash or a hang cannot reach the tool or a later measurement):

* :func:`check`: the capture's own inputs (same seed, shapes, layout as the capture
  will use), one call, one synchronize, the float64 comparison. Returns
  ``{"status": "ok"|"wrong", "operands": [...], "comparison": {...}}``.
* :func:`check_variants`: the same for a list of operand layouts
  (:mod:`traceview.checks.layouts`), emitting ``{"start": i}`` before and
  ``{"done": i, ...}`` after each, so that the parent knows which one a crash or a hang
  belongs to and can go on with the rest in a new process.

Before the op runs, ``{"operands": [...]}`` is emitted: the report of a crash still says
what the op was given.
"""

from __future__ import annotations

import contextlib
import traceback
from typing import Any

from traceview.workload.config import CaptureConfig
from traceview.workload.wire import decode_config


def check(payload: dict[str, Any], emit: Any) -> dict[str, Any]:
    from traceview.workload import device as device_mod
    from traceview.workload.inputs import make_inputs

    config = decode_config(payload["config"])
    dev = device_mod.open_device(config)
    device_mod.check_memory(dev, config)
    inputs = make_inputs(dev.torch, config, dev.torch_device)
    return _run_one(config, dev, inputs, emit)


def check_variants(payload: dict[str, Any], emit: Any) -> dict[str, Any]:
    from traceview.errors import TraceviewError
    from traceview.workload import device as device_mod

    config = decode_config(payload["config"])
    dev = device_mod.open_device(config)
    torch = dev.torch
    for index, variant in zip(payload["indices"], payload["variants"], strict=True):
        emit({"start": index})
        try:
            inputs = build_operands(torch, config, dev.torch_device, variant["operands"])
            result = _run_one(config, dev, inputs, emit)
        except TraceviewError:
            raise  # cannot run at all (FlagGems missing...): one line from the parent
        except Exception as exc:  # the impl refused these operands
            if not _device_healthy(dev):
                raise  # the context is gone: end here, the parent goes on in a new process
            frames = [f"{f.filename}:{f.lineno} in {f.name}"
                      for f in traceback.extract_tb(exc.__traceback__)]
            message = (str(exc).strip().splitlines() or [""])[0]
            emit({"done": index, "status": "raised",
                  "error": f"{type(exc).__name__}: {message}".rstrip(": "), "stack": frames})
            continue
        emit({"done": index, **result})
    return {"status": "ok"}


def _run_one(config: CaptureConfig, dev: Any, inputs: Any, emit: Any) -> dict[str, Any]:
    from traceview.checks.correctness import compare_config
    from traceview.workload.impls import build_impl

    torch = dev.torch
    operands = describe_operands(torch, inputs.args)
    emit({"operands": operands})
    with contextlib.ExitStack() as stack:
        impl = build_impl(config, dev, inputs, stack)
        out = impl.call()
        dev.sync()
    if not isinstance(out, torch.Tensor):
        return {"status": "wrong", "operands": operands,
                "comparison": {"passed": False,
                               "mismatch": f"the call returned {type(out).__name__}, not a tensor"}}
    found = compare_config(torch, config, inputs.args, out)
    dev.sync()
    return {"status": "ok" if found["passed"] else "wrong", "operands": operands,
            "comparison": found}


def _device_healthy(dev: Any) -> bool:
    if not dev.is_cuda:
        return True
    try:
        dev.sync()
        return True
    except Exception:  # noqa: BLE001 (a sticky CUDA error)
        return False


def describe_operands(torch: Any, args: tuple[Any, ...]) -> list[dict[str, Any]]:
    """Shape, dtype, strides, contiguity, storage offset and device of every operand."""
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            out.append({
                "kind": "tensor", "shape": list(a.shape),
                "dtype": str(a.dtype).removeprefix("torch."), "strides": list(a.stride()),
                "contiguous": bool(a.is_contiguous()), "storage_offset": int(a.storage_offset()),
                "device": str(a.device),
            })
        else:
            out.append({"kind": "scalar", "value": a, "type": type(a).__name__})
    return out


def build_operands(torch: Any, config: CaptureConfig, device: Any,
                   specs: list[dict[str, Any]]) -> Any:
    """:class:`~traceview.workload.inputs.Inputs` from operand specs (see ``layouts``)."""
    from traceview.workload.inputs import Inputs, _laid_out, _random

    gen = torch.Generator(device=device)
    gen.manual_seed(config.seed)
    dtype = getattr(torch, config.dtype)
    tensors: list[Any] = []
    scalar = None
    for i, spec in enumerate(specs):
        divisor = config.op == "div" and i == 1
        if "scalar" in spec:
            scalar = spec["scalar"]
            continue
        if "zero_dim" in spec:
            where = torch.device("cpu") if spec["zero_dim"] == "cpu" else device
            value = _random(torch, (), dtype, device, gen, divisor)
            tensors.append(value.to(where))
            continue
        shape, layout = tuple(spec["shape"]), spec["layout"]
        if layout == "offset":  # a slice that starts one row in: non-zero storage offset
            t = _random(torch, (shape[0] + 1,) + shape[1:], dtype, device, gen, divisor)[1:]
        elif layout == "expand":  # a stride-0 view of the full shape
            t = _random(torch, tuple(spec["base"]), dtype, device, gen, divisor).expand(shape)
        else:
            t = _laid_out(torch, shape, dtype, device, gen, layout, divisor)
        tensors.append(t)
    return Inputs(tensors=tensors, scalar=scalar)
