"""Unprofiled step times beside the profiled steps of a user's own training loop.

``traceview.capture_steps(step_fn, ...)`` runs ``step_fn`` (one training step, no
arguments) as the profiler would see it and as it runs without it, in one process:

1. ``warmup`` unprofiled steps, untimed;
2. ``unprofiled`` steps timed with ``time.perf_counter_ns`` (each step then a
   synchronize), before the profiler ever starts: the step figure (``step_ns_p50``);
3. ``steps`` profiled steps under ``torch.profiler``, each in a ``ProfilerStep#N`` range
   (the name the profiler's own schedule gives steps, which explain reads as steps);
4. ``unprofiled // 2`` steps timed again after the profiler stopped (``after_ns_p50``),
   kept apart: a process can stay slower once the profiler has run in it (on the H200 a
   small Llama step ran 22 ms before and 30 ms after, in this timer and in an independent
   one alike), so those steps are not the unprofiled step; the difference is stated.

The trace is written with the unprofiled figures under its top-level key
``traceview_steps``; ``explain`` then shows "profiled step X ms, unprofiled Y ms" and the
phases and critical path corrected by the model it states
(``traceview/report/unprofiled_steps.py``). The same key can be written by hand into any
trace (a documented recipe in docs/training.md).
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from traceview.stats import median

TIMER = ("time.perf_counter_ns around step_fn() and a synchronize, before the profiler "
         "started in the process")


def _sync(torch: Any) -> Callable[[], None]:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return torch.cuda.synchronize
    return lambda: None


def _timed(step_fn: Callable[[], Any], sync: Callable[[], None], n: int) -> list[int]:
    perf = time.perf_counter_ns
    out = []
    for _ in range(n):
        t0 = perf()
        step_fn()
        sync()
        out.append(perf() - t0)
    return out


def capture_steps(step_fn: Callable[[], Any], out: str | os.PathLike[str], *, steps: int = 6,
                  warmup: int = 2, unprofiled: int = 10, with_stack: bool = False,
                  record_shapes: bool = False) -> Path:
    """Profile ``steps`` steps of ``step_fn`` into ``out`` (``.json`` or ``.json.gz``)
    with ``unprofiled`` unprofiled step times recorded beside them; returns ``out``."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    sync = _sync(torch)
    for _ in range(warmup):
        step_fn()
        sync()
    sync = _sync(torch)  # a step may have initialised CUDA
    before = _timed(step_fn, sync, unprofiled)
    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        activities.append(ProfilerActivity.CUDA)
    from traceview.runner.profiler_log import quiet_profiler_log

    with quiet_profiler_log(cuda=len(activities) > 1), profile(
            activities=activities, with_stack=with_stack, record_shapes=record_shapes) as prof:
        for i in range(steps):
            # the range torch.profiler itself records per step when it runs a schedule
            with record_function(f"ProfilerStep#{i}"):
                step_fn()
                sync()
    after = _timed(step_fn, sync, unprofiled // 2)
    block = {
        "n": len(before), "step_ns_p50": int(median(before)), "step_ns_samples": before,
        "before_ns_p50": int(median(before)),
        "after_ns_p50": int(median(after)) if after else None, "after_ns_samples": after,
        "profiled_steps": steps, "timer": TIMER,
    }
    with tempfile.TemporaryDirectory(prefix="traceview-steps-") as d:
        raw = Path(d) / "trace.json"
        prof.export_chrome_trace(str(raw))
        doc = json.loads(raw.read_text())
    doc["traceview_steps"] = block
    return _write(doc, Path(out))


def _write(doc: dict[str, Any], out: Path) -> Path:
    data = json.dumps(doc).encode()
    if out.name.endswith(".gz"):
        data = gzip.compress(data)
    from traceview.atomic import refuse_special

    refuse_special(out)  # a FIFO or a device is never replaced by a file
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, out)
    return out
