"""``traceview.capture(fn, *inputs, reference=...)``: the protocol for a live callable.

For a Triton kernel author in a notebook or a test: the callable and its inputs are
Python objects, not names, so nothing can rebuild them in a fresh process. This runs
the protocol **in the calling process**: first call profiled alone (cold), correctness
of its output against ``reference`` (called on the inputs upcast to float64), warm-up,
the unprofiled figures (``baseline.measure``: full call synchronized each call,
amortized submit, device per op from CUDA graph replays) *before* the profiler starts
for the warm calls, then the profiled warm calls and the trace with its metadata.
The metadata says the baseline ran in-process; for fresh-process figures, name the
callable (``traceview capture --fn pkg.module:function``) or A/B it (``traceview ab``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from traceview.errors import CaptureError, CorrectnessError


def _compare(torch: Any, out: Any, ref: Any, label: str) -> dict[str, Any]:
    from traceview.capture import ops

    out_dtype = str(out.dtype).removeprefix("torch.")
    if tuple(out.shape) != tuple(ref.shape):
        raise CorrectnessError(f"correctness check failed for {label}: output shape "
                               f"{tuple(out.shape)}, reference {tuple(ref.shape)}")
    rtol, atol = ops.TOLERANCES.get(out_dtype, (1e-5, 1e-6))
    got, ref = out.double(), ref.double()
    diff = (got - ref).abs()
    bad = ~(diff <= atol + rtol * ref.abs())
    max_abs = float(diff.max()) if diff.numel() else 0.0
    if bool(bad.any()):
        raise CorrectnessError(f"correctness check failed for {label}: max abs error "
                               f"{max_abs:.3g} exceeds rtol={rtol:g} atol={atol:g}")
    return {"reference": "float64 via reference=", "tolerance": {"rtol": rtol, "atol": atol},
            "max_abs_err": max_abs, "passed": True, "out_dtype": out_dtype,
            "out_shape": list(out.shape)}


def capture(fn: Callable[..., Any], *inputs: Any, reference: Callable[..., Any] | None = None,
            out: str | Path = "traceview-fn.json.gz", warmup: int = 10, iters: int = 30,
            baseline_n: int = 200, with_stack: bool = True) -> dict[str, Any]:
    """Measure ``fn(*inputs)``; write the trace to ``out``; return its metadata block.

    ``reference`` (strongly advised) is called with the inputs upcast to float64; a
    wrong output raises CorrectnessError and writes nothing. Without it the metadata
    says correctness was not checked.
    """
    from traceview.capture import baseline, metadata, profiling, tracefile
    from traceview.capture.device import Device, import_torch

    torch = import_torch()
    tensors = [a for a in inputs if isinstance(a, torch.Tensor)]
    if not tensors:
        raise CaptureError("traceview.capture(fn, *inputs): give at least one tensor input")
    kind = "cuda" if tensors[0].is_cuda else "cpu"
    dev = Device(torch=torch, kind=kind)
    name = f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"
    out = Path(out)
    tracefile.check_out_path(out)
    call = lambda: fn(*inputs)
    with tempfile.TemporaryDirectory(prefix="traceview-raw-") as raw, \
            tracefile.Publisher() as publisher:
        raw_dir = Path(raw)
        cold_wall, first = profiling.profile_cold(dev, call, with_stack, True,
                                                  raw_dir / "cold.json")
        if reference is not None:
            args64 = tuple(a.double() if isinstance(a, torch.Tensor) else a for a in inputs)
            checked = _compare(torch, first, reference(*args64), name)
        else:
            checked = {"reference": None, "passed": None,
                       "note": "no reference= given: correctness not checked"}
        out_bytes = first.numel() * first.element_size()
        del first
        for _ in range(warmup):
            call()
            dev.sync()
        base = baseline.measure(dev, call, baseline_n, out_bytes, name)
        base["processes"] = 1
        base["process"] = ("this process (a live callable), before the profiler started "
                           "for the warm calls")
        base["per_process"] = [{k: base.get(k) for k in
                                ("full_api_ns_p50", "amortized_submit_ns", "device_ns")}]
        profiling.profile_warm(dev, call, iters, True, with_stack, True, raw_dir / "warm.json")
        meta = {
            "schema": metadata.SCHEMA, "tool_version": metadata.tool_version(), "kind": "warm",
            "command": f"traceview.capture({name}, ...)", "reproducer": None,
            "op": getattr(fn, "__name__", "fn"), "impl": "fn", "impl_detail": {"entry": name, "api": True},
            "shape": list(tensors[0].shape),
            "input_shapes": [list(t.shape) for t in tensors],
            "dtype": str(tensors[0].dtype).removeprefix("torch."),
            "strides": [list(t.stride()) for t in tensors],
            "contiguous": [bool(t.is_contiguous()) for t in tensors],
            "scalars": [a for a in inputs if isinstance(a, (int, float))],
            "device": dict(dev.info(), kind=kind), "versions": metadata.versions(torch),
            "protocol": {"mode": "eager", "sync": "each", "warmup": warmup, "iters": iters,
                         "with_stack": with_stack, "record_shapes": True,
                         "timer": baseline.TIMER, "baseline_n": baseline_n,
                         "call_range": "call_{i}", "cold_range": "cold_call_0"},
            "correctness": checked, "baseline": base,
            "cold": {"wall_ns": int(cold_wall), "trace": tracefile.cold_path(out).name,
                     "with_stack": with_stack, "fresh_caches": False},
            "notes": [("Python API: inputs, caches and the unprofiled baseline are this "
                       "process's own (not fresh processes)")],
        }
        meta = {k: v for k, v in meta.items() if v is not None}
        publisher.stage_trace(out, tracefile.embed(raw_dir / "warm.json", meta))
        publisher.stage_trace(tracefile.cold_path(out),
                              tracefile.embed(raw_dir / "cold.json",
                                              metadata.for_cold(meta, out.name)))
        publisher.commit()
    return meta
