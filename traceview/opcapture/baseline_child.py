"""The unprofiled baseline, taken in a fresh process that never starts the profiler.

Why a separate process: once ``torch.profiler`` has run with CUDA activities, CUPTI's
callbacks can stay registered for the rest of the process, so every later launch pays
for them (measured: ``tools/cupti_residue.py``). The children run before the capturing
process touches the GPU at all, so no profiler or CUDA state of the parent can reach
them. Each child compiles into its own cache folder (unmeasured warm-up), so the
parent's cold call stays cold; it
rebuilds the same seeded inputs and implementation, warms up, measures, and prints one
JSON line (or ``{"error": ...}`` for a problem the user can fix, such as no GPU).

Run as ``python -m traceview.opcapture.baseline_child`` with the config as JSON on stdin.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from traceview.runner.process import measure_in_module
from traceview.workload.config import CaptureConfig
from traceview.workload.prepare import prepare
from traceview.workload.wire import decode_config, encode_config

#: Fresh processes measured. One process's median can sit far from another's on the
#: H200 machine (torch.mul 1x4096: 12.5 vs 21.5 us; the Triton mul: 57 to 108 us, same
#: command), so the recorded figures are the medians over processes, with
#: each process's figures kept under ``per_process``.
BASELINE_PROCESSES = 3


def measure_in_children(config: CaptureConfig, cache_root: Path,
                        procs: int = BASELINE_PROCESSES) -> dict[str, Any]:
    """The ``baseline`` metadata block: medians over ``procs`` fresh processes.

    ``full_api_ns_p50``, ``amortized_submit_ns``, ``amortized_ns``, ``device_ns`` (and
    ``replay_ns_p50`` in graph mode) are medians of the per-process figures, which are
    kept under ``per_process``; the sample lists are those of the median process.
    """
    from traceview.stats import median

    blocks = [measure_in_child(config, cache_root) for _ in range(procs)]
    mid = median([b["full_api_ns_p50"] for b in blocks])
    out = dict(next(b for b in blocks if b["full_api_ns_p50"] == mid))  # the median process
    for name in ("full_api_ns_p50", "amortized_submit_ns", "amortized_ns", "device_ns",
                 "replay_ns_p50"):
        values = [v for b in blocks if (v := b.get(name)) is not None]
        if values:
            out[name] = int(median(values))
    out["processes"] = procs
    out["per_process"] = [{k: b.get(k) for k in ("full_api_ns_p50", "amortized_submit_ns",
                                                 "device_ns", "replay_ns_p50") if k in b}
                          for b in blocks]
    out["process"] = f"median of {procs} fresh processes, profiler never started in them"
    return out


def measure_in_child(config: CaptureConfig, cache_root: Path) -> dict[str, Any]:
    """The ``baseline`` block measured by one fresh interpreter (caches under cache_root)."""
    return measure_in_module("traceview.opcapture.baseline_child", encode_config(config),
                             cache_root, "the unprofiled baseline")


def measure_here(config: CaptureConfig, *, check: bool = False,
                 phases: Any = None) -> dict[str, Any]:
    """The ``baseline`` block measured in this process: :func:`prepare`, then
    ``baseline.measure``.

    ``check`` also compares the first output with the reference (``correctness`` key) and
    records ``versions``: what ``traceview ab``'s children report. Raises TraceviewError
    for a problem the user can fix (no GPU, too large, wrong output). ``phases``
    (``ab_child.Phases``) is marked after the device opens, after the preparation, and
    after the measurement.
    """
    from traceview.checks import correctness
    from traceview.opcapture import baseline as baseline_mod
    from traceview.workload import device as device_mod
    from traceview.workload.graphs import capture_graph

    mark = phases.mark if phases is not None else (lambda _name: None)
    dev = device_mod.open_device(config)
    device_mod.check_memory(dev, config)
    mark("cuda_init")
    torch = dev.torch
    what = f"--impl {config.impl} {config.op}"
    with contextlib.ExitStack() as stack:
        ready = prepare(config, dev, stack,
                        check=correctness.check if check else None)
        mark("build_compile_warmup")
        replay = None
        if config.mode == "graph":
            graph = capture_graph(torch, ready.impl_call, config.graph_ops, what)
            graph.replay()
            dev.sync()
            if check:  # the replays are what gets timed: check what they produce too
                correctness.check(torch, config, ready.inputs, graph.outputs[-1])
            replay = graph.replay
        block = baseline_mod.measure(dev, ready.call, config.baseline_n, ready.out_bytes,
                                     what, replay=replay)
    mark("measure")
    if check:
        from traceview.opcapture.metadata import versions

        block["correctness"] = ready.checked
        block["versions"] = versions(torch)
        block["device"] = dev.info()
    return block


def _child() -> None:
    from traceview.errors import TraceviewError

    config = decode_config(sys.stdin.read())
    try:
        block = measure_here(config)
    except TraceviewError as exc:  # no GPU, too large: the parent says it in one line
        print(json.dumps({"error": str(exc)}), flush=True)
        sys.exit(2)
    print(json.dumps(block), flush=True)


if __name__ == "__main__":
    _child()
