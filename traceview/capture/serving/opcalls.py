"""Which ATen ops one prefill and one decode step of the model call (for the bisect).

A ``TorchDispatchMode`` sees ops at the level FlagGems registers at (below autograd and
composite decompositions, above the CUDA kernels), so its names map one-to-one onto
FlagGems' registration keys. Recorded under torch eager, before any backend is on.
"""

from __future__ import annotations

from typing import Any


def aten_ops(torch: Any, model: Any, batch: list[list[int]]) -> list[str]:
    """Sorted overload names (``aten::mul.Tensor``) called by prefill + one decode step."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: set[str] = set()

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.add(func.name())
            return func(*args, **(kwargs or {}))

    ids = torch.tensor(batch, device=model.device)
    with torch.inference_mode(), Record():
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True)
        nxt = out.logits[:, -1, :].argmax(-1, keepdim=True)
        mask = torch.ones(ids.shape[0], ids.shape[1] + 1, dtype=ids.dtype, device=ids.device)
        model(input_ids=nxt, attention_mask=mask, past_key_values=out.past_key_values,
              use_cache=True)
    return sorted(seen)
