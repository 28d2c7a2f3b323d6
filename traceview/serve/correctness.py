"""Correctness before speed: the swapped backend against torch eager, in one fresh child.

Same process, same weights, same prompts (the first batch of the measured workload):

1. **first-step logits** (prefill, last position, every request of the batch): eager
   first, then the backend. Passes when ``max |backend - eager| <= tol * max |eager|``,
   ``tol`` by dtype (:data:`TOLERANCE`). The scale is the logits' own range because a
   random-weight model's logits are small and near-uniform; an absolute bound would mean
   something different for every config.
2. **greedy tokens** for ``check_steps`` steps with ``generate``, compared per request:
   the first step where they differ, or none. In bf16/fp16 two correct backends round
   differently, random weights leave near-ties in the argmax, and one flipped token
   changes everything after it, so divergence with passing logits is reported as
   legitimate, not as a failure.

A crash (CUDA illegal memory access, a Triton error) is caught and returned as data with
the phase it happened in, so the parent can bisect instead of printing a stack trace.
"""

from __future__ import annotations

import contextlib
from typing import Any

from traceview.errors import TraceviewError
from traceview.serve import backends
from traceview.serve.engine import generate
from traceview.serve.model import generation_config
from traceview.serve.spec import Variant

#: max |backend - eager| / max |eager| allowed on the first-step logits, by dtype.
TOLERANCE = {"bfloat16": 5e-2, "float16": 1e-2, "float32": 1e-3}


def first_step_logits(torch: Any, model: Any, batch: list[list[int]]) -> Any:
    ids = torch.tensor(batch, device=model.device)
    with torch.inference_mode():
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)
        return out.logits[:, -1, :].float().cpu()


def first_divergence(ref: list[int], got: list[int]) -> int | None:
    """Index of the first differing token, or None when the sequences are identical."""
    for k, (x, y) in enumerate(zip(ref, got, strict=False)):
        if x != y:
            return k
    return None if len(ref) == len(got) else min(len(ref), len(got))


def reference(torch: Any, model: Any, batch: list[list[int]], steps: int) -> dict[str, Any]:
    """Eager logits and greedy tokens; computed before any backend is switched on."""
    return {"logits": first_step_logits(torch, model, batch),
            "tokens": generate(torch, model, batch, generation_config(steps))}


def compare(torch: Any, model: Any, batch: list[list[int]], steps: int, ref: dict[str, Any],
            variant: Variant, dtype: str, include: list[str] | None = None) -> dict[str, Any]:
    """Enter the backend, compute the same things, compare. Never raises for a backend
    failure: ``{"crashed": True, "phase": ..., "error": ...}`` instead."""
    phase = "enable"
    tol = TOLERANCE[dtype]
    try:
        with contextlib.ExitStack() as stack:
            gen = generation_config(steps)
            detail = backends.enter(variant, torch, model, gen, stack, include=include)
            phase = "first-step logits"
            logits = first_step_logits(torch, model, batch)
            phase = "greedy decode"
            tokens = generate(torch, model, batch, gen)
            if model.device.type == "cuda":
                torch.cuda.synchronize()
    except TraceviewError:  # a setup problem (no FlagGems): one line, not a "crash"
        raise
    except Exception as exc:  # noqa: BLE001  (a crashing backend is a result here)
        return {"crashed": True, "phase": phase, "error": _one_line(exc)}
    ref_logits = ref["logits"]
    finite = bool(torch.isfinite(logits).all())
    scale = float(ref_logits.abs().max())
    # NaN/inf logits have no meaningful distance (and would not be valid JSON): None
    max_abs = float((logits - ref_logits).abs().max()) if finite else None
    ratio = None if max_abs is None else (max_abs / scale if scale else
                                          (0.0 if max_abs == 0 else None))
    top1 = (logits.argmax(-1) == ref_logits.argmax(-1)).tolist()
    div = [first_divergence(r, g) for r, g in zip(ref["tokens"], tokens, strict=True)]
    return {
        "crashed": False,
        "backend_detail": detail,
        "logits": {"max_abs_diff": max_abs, "max_abs_ref": scale, "ratio": ratio,
                   "tolerance": tol, "finite": finite,
                   "passed": ratio is not None and ratio <= tol,
                   "top1_agree": sum(top1), "rows": len(top1)},
        "tokens": {"steps": steps, "rows": len(div),
                   "identical_rows": sum(1 for d in div if d is None),
                   "first_divergence": div,
                   "earliest_divergence": min((d for d in div if d is not None), default=None)},
    }


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return first[:300]
