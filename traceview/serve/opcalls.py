"""Which ATen ops a short ``generate`` calls: prefill, decode steps, and generate's own.

Two views, merged: the profiler's CPU op events (every level of the dispatch, so the
``aten::mm`` under ``aten::linear`` is there too, but without overload names) and a
``TorchDispatchMode`` (overload names such as ``aten::mul.Tensor``, but composite ops
can appear undecomposed). Recorded under torch eager, before any backend is on.
"""

from __future__ import annotations

from typing import Any


def aten_ops(torch: Any, model: Any, batch: list[list[int]]) -> list[str]:
    """Sorted ATen names (``aten::mul`` and ``aten::mul.Tensor``) a 3-token generate calls."""
    from torch.profiler import ProfilerActivity, profile
    from torch.utils._python_dispatch import TorchDispatchMode

    from traceview.serve.engine import generate
    from traceview.serve.model import generation_config

    seen: set[str] = set()

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.add(func.name())
            return func(*args, **(kwargs or {}))

    with Record():
        generate(torch, model, batch, generation_config(3))
    from traceview.runner.profiler_log import quiet_profiler_log

    with quiet_profiler_log(cuda=False), profile(activities=[ProfilerActivity.CPU]) as prof:
        generate(torch, model, batch, generation_config(3))
    seen.update(e.name for e in prof.events() if e.name.startswith("aten::"))
    return sorted(seen)
