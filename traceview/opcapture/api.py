"""``traceview.capture(fn, *inputs, reference=...)``: the protocol for a live callable.

For a Triton kernel author in a notebook or a test: the callable and its inputs are
Python objects, not names, so nothing can rebuild them in a fresh process. This runs
the protocol **in the calling process**: the first call, unprofiled, checked against
``reference`` (called on the inputs upcast to float64) before anything is timed; the
second call profiled alone (the "cold" trace, cold only for what the check left cold), warm-up,
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


def _check(torch: Any, first: Any, inputs: tuple[Any, ...], reference: Any,
           label: str) -> dict[str, Any]:
    """The correctness block (correctness.compare against ``reference`` on float64 inputs);
    CorrectnessError, with the full comparison as its report, when it fails."""
    from traceview.checks.correctness import compare, fmt

    found = compare(torch, None, inputs, first, reference=reference,
                    reference_name="float64 via reference=")
    if not found["passed"]:
        detail = found["mismatch"] or (f"max abs error {fmt(found['max_abs_err'])}, "
                                       f"{found['wrong']} of {found['total']} elements wrong")
        raise CorrectnessError(f"correctness check failed for {label}: {detail}; "
                               "nothing written", report=found)
    return {k: found[k] for k in ("reference", "tolerance", "max_abs_err", "max_rel_err",
                                  "passed", "out_dtype", "out_shape", "out_strides")}


def capture(fn: Callable[..., Any], *inputs: Any, reference: Callable[..., Any] | None = None,
            out: str | Path = "traceview-fn.json.gz", warmup: int = 10, iters: int = 30,
            baseline_n: int = 200, with_stack: bool = True) -> dict[str, Any]:
    """Measure ``fn(*inputs)``; write the trace to ``out``; return its metadata block.

    ``reference`` (strongly advised) is called with the inputs upcast to float64; a
    wrong output raises CorrectnessError and writes nothing. Without it the metadata
    says correctness was not checked.
    """
    from traceview.opcapture import baseline, metadata, profiling, tracefile
    from traceview.workload.device import Device, import_torch

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
        # Correctness first, before anything is timed or profiled (in this process: a
        # live callable cannot be rebuilt in an isolated one). The profiled "cold" call
        # is therefore the second call; the metadata says so.
        first = call()
        dev.sync()
        if reference is not None:
            checked = _check(torch, first, inputs, reference, name)
        else:
            checked = {"reference": None, "passed": None,
                       "note": "no reference= given: correctness not checked"}
        out_bytes = first.numel() * first.element_size()
        del first
        cold_wall, _ = profiling.profile_cold(dev, call, with_stack=with_stack, record_shapes=True,
                                              trace_path=raw_dir / "cold.json")
        for _ in range(warmup):
            call()
            dev.sync()
        base = baseline.measure(dev, call, baseline_n, out_bytes, name)
        base["processes"] = 1
        base["process"] = ("this process (a live callable), before the profiler started "
                           "for the warm calls")
        base["per_process"] = [{k: base.get(k) for k in
                                ("full_api_ns_p50", "amortized_submit_ns", "device_ns")}]
        profiling.profile_warm(dev, call, iters, sync_each=True, with_stack=with_stack,
                               record_shapes=True, trace_path=raw_dir / "warm.json")
        base["split"] = _split_here(call, dev, raw_dir / "warm.json") if with_stack else None
        meta = {
            **metadata.SCHEMA, "tool_version": metadata.tool_version(), "kind": "warm",
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
                     "with_stack": with_stack, "fresh_caches": False,
                     "note": "second call: the first was the correctness check"},
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


def _split_here(call: Callable[[], Any], dev: Any, warm_trace: Path) -> dict[str, Any] | None:
    """The unprofiled split (``traceview.unprofiled``) of a live callable, in this process
    (it cannot be rebuilt in a fresh one), after the profiled calls named its functions."""
    from traceview.unprofiled import find, split, structure

    names = structure.choose_from_trace(str(warm_trace), calls=r"^call_\d+$")
    if not names:
        return None
    found = find.functions_for(names)
    block = split.measure(call, dev.sync, {n: found[n] for n in names if n in found})
    block["missing"] = [n for n in names if n not in found]
    block["process"] = ("this process (a live callable), after its profiled calls: on a GPU "
                        "the profiler's callbacks may still slow its launches")
    return block