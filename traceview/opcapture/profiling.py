"""Profiled runs: the warm calls (``call_{i}``) and the cold call (``cold_call_0``).

The range names are a contract with ``traceview explain``: it groups repeated names that
differ only by digits and treats each range as one call. With ``--sync each`` the
synchronize is inside the range, so a call's range spans its completion; with
``--sync end`` the ranges cover submission only and one synchronize follows the loop.

Both runs use a profiler schedule with one warm-up step: the profiler's own start-up
(per-thread buffers, first CUPTI activity) happens in a step that is traced and then
discarded, so it is not charged to ``call_0`` or to the cold call. The warm run primes
with real calls; the cold run primes with an unrelated range and, on the GPU, a
one-element fill, so the op's first call stays genuinely first.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from traceview.workload.device import Device

WARM_RANGE = "call_{i}"
COLD_RANGE = "cold_call_0"
PRIME_RANGE = "traceview_profiler_warmup"
#: Calls made in the discarded profiler warm-up step of the warm run.
PRIME_CALLS = 3


@contextlib.contextmanager
def _profiler(device: Device, *, with_stack: bool, record_shapes: bool,
              trace_path: Path) -> Iterator[Any]:
    """A profiler that discards step 0 (warm-up), records step 1, and exports it.

    torch warns that a scheduled profiler "clears events at the end of each cycle"; with
    one cycle (``repeat=1``) nothing is cleared that the trace needs, so that one warning,
    printed in every capture on the H200, is silenced here and nothing else.
    """
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CPU]
    if device.is_cuda:
        activities.append(ProfilerActivity.CUDA)
    from traceview.runner.profiler_log import quiet_profiler_log

    with warnings.catch_warnings(), quiet_profiler_log(cuda=device.is_cuda):
        warnings.filterwarnings("ignore", message=".*Profiler clears events at the end")
        with profile(
            activities=activities,
            record_shapes=record_shapes,
            with_stack=with_stack,
            schedule=schedule(wait=0, warmup=1, active=1, repeat=1),
            on_trace_ready=lambda prof: prof.export_chrome_trace(str(trace_path)),
        ) as prof:
            yield prof


def profile_cold(device: Device, call: Callable[[], Any], *, with_stack: bool,
                 record_shapes: bool, trace_path: Path) -> tuple[int, Any]:
    """Profile the very first call; return (wall ns of call+sync, its output).

    The wall time is taken inside the profiled range, so it includes profiler overhead;
    for a compile-dominated first call that overhead is small next to the compile.
    """
    from torch.profiler import record_function

    torch = device.torch
    with _profiler(device, with_stack=with_stack, record_shapes=record_shapes,
                   trace_path=trace_path) as prof:
        with record_function(PRIME_RANGE):
            if device.is_cuda:
                torch.zeros(1, device=device.torch_device)
            device.sync()
        prof.step()
        with record_function(COLD_RANGE):
            t0 = time.perf_counter_ns()
            out = call()
            device.sync()
            wall = time.perf_counter_ns() - t0
        prof.step()
    return wall, out


def profile_warm(device: Device, call: Callable[[], Any], iters: int, *, sync_each: bool,
                 with_stack: bool, record_shapes: bool, trace_path: Path) -> None:
    """Profile ``iters`` warm calls, each in its own ``call_{i}`` range."""
    from torch.profiler import record_function

    sync = device.sync
    with _profiler(device, with_stack=with_stack, record_shapes=record_shapes,
                   trace_path=trace_path) as prof:
        for _ in range(PRIME_CALLS):
            call()
            sync()
        prof.step()
        for i in range(iters):
            with record_function(WARM_RANGE.format(i=i)):
                call()
                if sync_each:
                    sync()
        sync()
        prof.step()
