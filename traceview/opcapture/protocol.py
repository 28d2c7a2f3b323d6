"""The capture protocol: a careful measurement of one op, one step after another.

:func:`run_capture` is the whole of it; each step is a call into a module that owns one
idea (inputs, correctness, baseline, profiling, metadata, tracefile). The order matters
and is recorded in the metadata (``metadata.STEPS``):

1. validate and estimate memory; then, before anything else runs, correctness first,
isolated: the op runs once on the seeded inputs in a fresh child process and is compared
with float64 there (``failure.check_isolated``); a wrong result, a crash or a hang stops
everything with one report (exit 3, 2 for a hang) before any timing or profiling runs;
2. prepare inputs;
3. cold call, profiled alone; 4. correctness of that output against float64 again (the
output the trace's cold call really gave); 5. warm-up (and the CUDA graph in graph
mode); 6. unprofiled baseline; 7. profiled warm calls; 8. metadata and atomic
publication of both traces.

The baseline runs in a fresh process that never starts the profiler
(``baseline_child``; the median of three such processes, run after the isolated check
and before this process touches the device), so the profiler's perturbation shows as
the difference between the trace's per-call API time and the baseline's full-API time.
"""

from __future__ import annotations

import contextlib
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from traceview.checks import correctness, failure
from traceview.errors import CaptureError, CorrectnessError
from traceview.opcapture import (
    baseline_child,
    metadata,
    probe,
    profiling,
    tracefile,
)
from traceview.unprofiled import child as unprofiled_child
from traceview.workload import device as device_mod
from traceview.workload.config import CaptureConfig
from traceview.workload.graphs import capture_graph
from traceview.workload.impls import build_impl, on_streams
from traceview.workload.inputs import make_inputs


@dataclass
class CaptureResult:
    """What a capture wrote: the warm trace, the cold trace, and the metadata in both."""

    path: Path
    cold_path: Path
    metadata: dict[str, Any]


def run_capture(config: CaptureConfig) -> CaptureResult:
    """Run the protocol for ``config`` and publish ``<out>`` and ``<stem>.cold.<ext>``.

    Raises CaptureError (cannot run as asked), CorrectnessError (wrong output, or the
    op crashed; ``.report`` says what) or KernelHangError (it never returned); in every
    case nothing is written.
    """
    config.validate()
    out = config.out_path
    tracefile.check_out_path(out)
    cold_out = tracefile.cold_path(out)

    with (
        device_mod.fresh_compile_caches(config) as cache_root,
        tempfile.TemporaryDirectory(prefix="traceview-raw-") as raw_dir,
        contextlib.ExitStack() as stack,
        tracefile.Publisher() as publisher,
    ):
        # 0. Correctness first, in a fresh process: nothing is timed before it passes.
        first = failure.check_isolated(config, Path(cache_root) / "check", config.timeout_s)
        # 6 (next in time). The unprofiled baseline, in fresh processes, before this
        # process touches the device or the profiler.
        base = baseline_child.measure_in_children(config, Path(cache_root) / "baseline")
        dev = device_mod.open_device(config)
        device_mod.check_memory(dev, config)
        try:
            meta = _measure(config, dev, Path(raw_dir), stack, cold_out.name, base)
            meta["correctness"]["isolated_check"] = _isolated_summary(first)
            # After the profiled run (it names the functions), in a fresh process.
            split = unprofiled_child.split_after_profile(config, Path(raw_dir) / "warm.json",
                                                         Path(cache_root) / "split")
            if split is not None:
                meta["baseline"]["split"] = split
        except Exception as exc:
            if not _is_oom(dev.torch, exc):
                raise
            raise CaptureError(
                f"out of {config.device} memory for shape {config.shape_label} {config.dtype}: "
                f"{str(exc).strip().splitlines()[0]}"
            ) from None
        publisher.stage_trace(out, tracefile.embed(Path(raw_dir) / "warm.json", meta))
        publisher.stage_trace(
            cold_out,
            tracefile.embed(Path(raw_dir) / "cold.json", metadata.for_cold(meta, out.name)),
        )
        publisher.commit()
    return CaptureResult(path=out, cold_path=cold_out, metadata=meta)


def _measure(config: CaptureConfig, dev: device_mod.Device, raw_dir: Path,
             stack: contextlib.ExitStack, cold_name: str, base: dict[str, Any]) -> dict[str, Any]:
    """Steps 2-7; returns the metadata block. Raw profiler exports go to ``raw_dir``."""
    torch = dev.torch
    inputs = make_inputs(torch, config, dev.torch_device)
    impl = build_impl(config, dev, inputs, stack)
    what = f"--impl {config.impl} {config.op}"

    # 3. cold call, then 4. correctness of its output, before any timing is kept.
    cold_wall, cold_output = profiling.profile_cold(
        dev, impl.call, with_stack=config.stack and config.impl != "inductor",
        record_shapes=config.record_shapes, trace_path=raw_dir / "cold.json",
    )
    try:
        checked = correctness.check(torch, config, inputs, cold_output)
    except CorrectnessError as exc:
        raise failure.from_comparison(config, torch, inputs, exc.report or {},
                                      "the capturing process's cold call") from None
    out_probe = cold_output if isinstance(cold_output, torch.Tensor) else None
    del cold_output

    call = impl.call if config.streams == 1 else on_streams(dev, impl.call, config.streams)

    # 5. warm-up.
    for _ in range(config.warmup):
        call()
        dev.sync()

    replay: Any | None = None
    if config.mode == "graph":
        graph = capture_graph(torch, impl.call, config.graph_ops, what)
        graph.replay()
        dev.sync()
        try:
            correctness.check(torch, config, inputs, graph.outputs[-1])
        except CorrectnessError as exc:
            raise failure.from_comparison(config, torch, inputs, exc.report or {},
                                          "a CUDA graph replay") from None
        replay = graph.replay

    # 6. the unprofiled baseline was measured first, in fresh processes (run_capture).

    # 7. profiled warm calls.
    profiling.profile_warm(
        dev, replay if replay is not None else call, config.iters,
        sync_each=config.sync == "each", with_stack=config.stack,
        record_shapes=config.record_shapes, trace_path=raw_dir / "warm.json",
    )

    # Apart from every timed run: which kernels a call launches (a profiled probe of its
    # own), and a device-to-device copy of the same bytes for the bandwidth figures.
    kernels = probe.kernels_used(dev, replay if replay is not None else call)
    bandwidth = (None if out_probe is None else
                 probe.bandwidth_block(dev, inputs.tensors, out_probe, base.get("device_ns")))
    del out_probe

    meta = metadata.build(
        config,
        device_info=dev.info(),
        torch=torch,
        inputs=inputs.describe(),
        impl_detail=impl.detail,
        correctness=checked,
        baseline=base,
        cold={
            "wall_ns": int(cold_wall),
            "trace": cold_name,
            "with_stack": config.stack and config.impl != "inductor",
            "fresh_caches": True,
        },
    )
    meta["kernels_used"] = kernels
    meta["bandwidth"] = bandwidth
    return meta


def _isolated_summary(first: dict[str, Any]) -> dict[str, Any]:
    """What the isolated first check found, for the metadata's correctness block."""
    c = first.get("comparison") or {}
    return {"process": "fresh child, before any baseline or profiling", "passed": True,
            "max_abs_err": c.get("max_abs_err"), "max_rel_err": c.get("max_rel_err")}


def _is_oom(torch: Any, exc: BaseException) -> bool:
    """CUDA's OutOfMemoryError, or the CPU allocator's plain RuntimeError."""
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    return isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc)
