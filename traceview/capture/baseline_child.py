"""The unprofiled baseline, taken in a fresh process that never starts the profiler.

Why a separate process: once ``torch.profiler`` has run with CUDA activities, CUPTI's
callbacks can stay registered for the rest of the process, so every later launch pays
for them. A baseline taken after the cold-call profile would then measure a perturbed
API. The child inherits the parent's environment (so it finds the kernels the parent
compiled in its fresh cache folder, and ``TRITON_INTERPRET`` on the CPU), rebuilds the
same seeded inputs and implementation, warms up, measures, and prints one JSON line.

Run as ``python -m traceview.capture.baseline_child`` with the config as JSON on stdin.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from traceview.capture.config import CaptureConfig
from traceview.errors import CaptureError

#: Generous: a child that compiles (inductor) or runs the interpreter can take a while.
CHILD_TIMEOUT_S = 600
#: Fresh processes measured. One process's median can sit 30-70% off another's on the
#: H200 machine (12.5 vs 21.5 us for torch.mul 1x4096, same command, seen 2026-11-30),
#: so the recorded figures are the medians over processes, with each process's kept.
BASELINE_PROCESSES = 3


def _encode(config: CaptureConfig) -> str:
    d = dataclasses.asdict(config)
    d["out"] = None if config.out is None else str(config.out)
    return json.dumps(d)


def _decode(text: str) -> CaptureConfig:
    d = json.loads(text)
    d["shapes"] = tuple(tuple(s) for s in d["shapes"])
    d["argv"] = tuple(d.get("argv") or ())
    d["out"] = None if d.get("out") is None else Path(d["out"])
    return CaptureConfig(**d)


def measure_in_children(config: CaptureConfig, procs: int = BASELINE_PROCESSES) -> dict[str, Any]:
    """The ``baseline`` metadata block: medians over ``procs`` fresh processes.

    ``full_api_ns_p50``, ``amortized_submit_ns``, ``amortized_ns``, ``device_ns`` (and
    ``replay_ns_p50`` in graph mode) are medians of the per-process figures, which are
    kept under ``per_process``; the sample lists are those of the median process.
    """
    import statistics

    blocks = [measure_in_child(config) for _ in range(procs)]
    key = sorted(range(procs), key=lambda i: blocks[i]["full_api_ns_p50"])[(procs - 1) // 2]
    out = dict(blocks[key])
    for name in ("full_api_ns_p50", "amortized_submit_ns", "amortized_ns", "device_ns",
                 "replay_ns_p50"):
        values = [b.get(name) for b in blocks if b.get(name) is not None]
        if values:
            out[name] = int(statistics.median_low(values))
    out["processes"] = procs
    out["per_process"] = [{k: b.get(k) for k in ("full_api_ns_p50", "amortized_submit_ns",
                                                 "device_ns", "replay_ns_p50") if k in b}
                          for b in blocks]
    out["process"] = f"median of {procs} fresh processes, profiler never started in them"
    return out


def measure_in_child(config: CaptureConfig) -> dict[str, Any]:
    """The ``baseline`` block measured by one fresh interpreter."""
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "traceview.capture.baseline_child"],
            input=_encode(config), capture_output=True, text=True, env=dict(os.environ),
            timeout=CHILD_TIMEOUT_S, check=False,
        )
    except subprocess.TimeoutExpired:
        raise CaptureError(f"the unprofiled baseline took over {CHILD_TIMEOUT_S} s") from None
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        err = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("USDT")]
        raise CaptureError("the unprofiled baseline process failed: "
                           + (err[-1] if err else f"exit code {proc.returncode}"))
    return json.loads(lines[-1])


def _child() -> None:
    from traceview.capture import baseline as baseline_mod
    from traceview.capture import device as device_mod
    from traceview.capture.graphs import capture_graph
    from traceview.capture.impls import build_impl, on_streams
    from traceview.capture.inputs import make_inputs

    config = _decode(sys.stdin.read())
    dev = device_mod.open_device(config)
    torch = dev.torch
    what = f"--impl {config.impl} {config.op}"
    with contextlib.ExitStack() as stack:
        inputs = make_inputs(torch, config, dev.torch_device)
        impl = build_impl(config, dev, inputs, stack)
        first = impl.call()
        dev.sync()
        out_bytes = first.numel() * first.element_size()
        del first
        call = impl.call if config.streams == 1 else on_streams(dev, impl.call, config.streams)
        for _ in range(config.warmup):
            call()
            dev.sync()
        replay = None
        if config.mode == "graph":
            graph = capture_graph(torch, impl.call, config.graph_ops, what)
            graph.replay()
            dev.sync()
            replay = graph.replay
        block = baseline_mod.measure(dev, call, config.baseline_n, out_bytes, what, replay=replay)
    print(json.dumps(block), flush=True)


if __name__ == "__main__":
    _child()
