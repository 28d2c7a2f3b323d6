"""Which ATen ops a short ``generate`` calls: prefill, decode steps, and generate's own.

A ``TorchDispatchMode`` sees ops at the level FlagGems registers at (below autograd and
composite decompositions, above the CUDA kernels), so its names map one-to-one onto
FlagGems' registration keys. Recorded under torch eager, before any backend is on.
"""

from __future__ import annotations

from typing import Any


def aten_ops(torch: Any, model: Any, batch: list[list[int]]) -> list[str]:
    """Sorted overload names (``aten::mul.Tensor``) called by a 3-token ``generate``."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: set[str] = set()

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.add(func.name())
            return func(*args, **(kwargs or {}))

    from traceview.capture.serving.engine import generate
    from traceview.capture.serving.model import generation_config

    with Record():
        generate(torch, model, batch, generation_config(3))
    return sorted(seen)
