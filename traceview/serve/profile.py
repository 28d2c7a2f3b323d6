"""One profiled ``generate``: a prefill and a few decode steps, named for explain.

Run in its own fresh child, after an unprofiled warm-up, so the profiler never touches
a measured process (CUPTI callbacks can stay registered once it has run). The streamer
opens and closes ``record_function`` ranges at transformers' own step boundaries:
``serve_prefill`` from the prompt's ``put`` to the first token's, then ``decode_{i}``
from token ``i+1``'s ``put`` to token ``i+2``'s. Each decode range is therefore exactly one
engine step (forward, logits processing, argmax, the token's copy to the host), and
``traceview explain --calls 'decode_\\d+'`` treats each as one call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from traceview.serve.engine import StepClock, generate
from traceview.serve.model import generation_config

PREFILL_RANGE = "serve_prefill"
DECODE_RANGE = "decode_{i}"
DECODE_PATTERN = r"decode_\d+"


def profile_steps(torch: Any, model: Any, batch: list[list[int]], steps: int,
                  gen_config_for: Any, trace_path: Path) -> dict[str, Any]:
    """Profile prefill + ``steps`` decode steps; write the Chrome trace to ``trace_path``."""
    from torch.autograd.profiler import record_function
    from torch.profiler import ProfilerActivity, profile

    gen = gen_config_for(steps + 1)
    generate(torch, model, batch, gen)  # warm at exactly these shapes, unprofiled
    open_ranges: list[Any] = []

    def on_put(k: int) -> None:
        if open_ranges:
            open_ranges.pop().__exit__(None, None, None)
        if k == 0:
            name = PREFILL_RANGE
        elif k <= steps:
            name = DECODE_RANGE.format(i=k - 1)
        else:
            return
        rf = record_function(name)
        rf.__enter__()
        open_ranges.append(rf)

    activities = [ProfilerActivity.CPU]
    if model.device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    clock = StepClock(on_put)
    from traceview.runner.profiler_log import quiet_profiler_log

    with quiet_profiler_log(cuda=len(activities) > 1), profile(
            activities=activities, record_shapes=False, with_stack=False) as prof:
        generate(torch, model, batch, gen, streamer=clock)
        while open_ranges:
            open_ranges.pop().__exit__(None, None, None)
        if model.device.type == "cuda":
            torch.cuda.synchronize()
    prof.export_chrome_trace(str(trace_path))
    return {"trace": str(trace_path), "decode_steps": steps, "batch": len(batch),
            "step_wall_ns": [b - a for a, b in zip(clock.stamps[1:], clock.stamps[2:],
                                                    strict=False)]}


__all__ = ["generation_config", "profile_steps"]
