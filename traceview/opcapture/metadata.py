"""The ``traceview`` metadata block: the reproducer template, filled in by machine.

Everything someone needs to reproduce or question a number goes here: what ran (op,
impl, shapes, dtype, strides, scalars), where (device, driver, CUDA), with what
(torch, triton, Python, FlagGems), how (the protocol: mode, sync points, warm-up,
iterations, timer), whether it was right (reference, tolerance, measured error), and
the unprofiled figures the trace should be compared with. Schema in docs/capture.md.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import platform
import sys
from typing import Any

from traceview.documents import stamp
from traceview.opcapture.baseline import TIMER
from traceview.workload.config import CaptureConfig

SCHEMA = stamp("capture")  # the version field the block starts with (documents.py)

#: The protocol's steps, in the order the harness performs them.
STEPS = (
    "validate options and estimate memory before allocating",
    ("correctness first, isolated: one call on the seeded inputs in a fresh child process, "
     "compared with float64 there, under a timeout; a wrong result, crash or hang stops "
     "everything (exit 3, 2 for a hang) before any baseline or profiling"),
    "prepare seeded random inputs (never zeros) outside every timed region",
    ("cold call: first call on a fresh specialization (empty compile caches, new kernel "
     "object), profiled alone as cold_call_0 and timed (wall, includes profiler)"),
    ("correctness again: cold output vs float64 reference of the same op, tolerance by dtype, "
     "shape and dtype vs eager PyTorch; stop with exit 3 on failure"),
    "warm-up calls, synchronized",
    "graph mode only: capture the calls into a CUDA graph and check the replayed output",
    ("unprofiled baseline: full API (sync each, median), amortized submit (one sync), "
     "device per op (CUDA graph replay, events)"),
    "profiled warm calls, each in a call_{i} range, sync as --sync says",
    "embed this metadata and publish the traces atomically",
)


def tool_version() -> str:
    pkg = sys.modules.get("traceview")
    version = getattr(pkg, "__version__", None)
    if version:
        return str(version)
    return _dist_version("traceview") or "unknown"


def _dist_version(*names: str) -> str | None:
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def versions(torch: Any) -> dict[str, str | None]:
    """Software revisions. Imported modules win over installed-distribution records."""
    triton = sys.modules.get("triton")
    gems = sys.modules.get("flag_gems")
    return {
        "torch": torch.__version__,
        "triton": getattr(triton, "__version__", None) or _dist_version("triton", "pytorch-triton"),
        "python": platform.python_version(),
        "flag_gems": getattr(gems, "__version__", None) or _dist_version("flag_gems", "flag-gems"),
    }


def protocol(config: CaptureConfig) -> dict[str, Any]:
    return {
        "mode": config.mode,
        "sync": config.sync,
        "warmup": config.warmup,
        "iters": config.iters,
        "with_stack": config.stack,
        "with_stack_auto": config.with_stack is None,
        "record_shapes": config.record_shapes,
        "timer": TIMER,
        "baseline_n": config.baseline_n,
        "graph_ops": config.graph_ops if config.mode == "graph" else None,
        "streams": config.streams,
        "seed": config.seed,
        "call_range": "call_{i}",
        "cold_range": "cold_call_0",
        "steps": list(STEPS),
    }


def notes(config: CaptureConfig) -> list[str]:
    """Plain-language caveats that travel with the numbers."""
    out = []
    if config.mode == "graph":
        out.append(
            "graph mode: each call is a CUDA graph replay of "
            f"{config.graph_ops} op(s); graph results are not eager results"
        )
    if config.sync == "end":
        out.append("sync end: call ranges cover submission only; one synchronize after the loop")
    if config.streams > 1:
        out.append(f"each call runs the op once on each of {config.streams} CUDA streams")
    if config.interpreted:
        out.append("Triton interpreter (TRITON_INTERPRET=1): CPU emulation, not GPU timing")
    return out


def build(config: CaptureConfig, *, device_info: dict[str, Any], torch: Any,
          inputs: dict[str, Any], impl_detail: dict[str, Any], correctness: dict[str, Any],
          baseline: dict[str, Any], cold: dict[str, Any]) -> dict[str, Any]:
    """The complete block for the main (warm) trace."""
    return {
        **SCHEMA,
        "tool_version": tool_version(),
        "kind": "warm",
        "command": config.command,
        "reproducer": config.reproducer,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "op": config.op,
        "impl": config.impl,
        "impl_detail": impl_detail,
        "shape": list(config.out_shape),
        "input_shapes": inputs["input_shapes"],
        "dtype": config.dtype,
        "layout": config.layout,
        "strides": inputs["strides"],
        "contiguous": inputs["contiguous"],
        "scalars": inputs["scalars"],
        "device": dict(device_info, kind=config.device),
        "versions": versions(torch),
        "protocol": protocol(config),
        "correctness": correctness,
        "baseline": baseline,
        "cold": cold,
        "notes": notes(config),
    }


def for_cold(meta: dict[str, Any], warm_trace_name: str) -> dict[str, Any]:
    """The same block for the cold trace, marked as such and pointing at its warm twin."""
    return dict(meta, kind="cold", warm_trace=warm_trace_name)
