"""Deliberately broken implementations of ``mul`` for capture's correctness tests.

Used as ``--impl broken_kernels:NAME`` (this folder on PYTHONPATH). Each call appends
this process's id to ``$BROKEN_CALLS`` (when set), so a test can count how many
processes ran the op and how often: the isolated check must be the only one.
Also the entries for the child runner's own tests (``entry_*``).
"""

from __future__ import annotations

import ctypes
import os
import time


def _count() -> None:
    path = os.environ.get("BROKEN_CALLS")
    if path:
        with open(path, "a") as f:
            f.write(f"{os.getpid()}\n")


def mul_flat_broadcast(a, b):
    """Right on two tensors of one shape; wrong on broadcast: reads ``b`` by the flat
    output index modulo its size (a classic bug; right only when ``b`` broadcasts over
    leading dimensions)."""
    import torch

    _count()
    if not isinstance(b, torch.Tensor):
        return a * b
    shape = torch.broadcast_shapes(a.shape, b.shape)
    n = 1
    for d in shape:
        n *= d
    flat = b.contiguous().reshape(-1)
    idx = torch.arange(n, device=b.device) % max(flat.numel(), 1)
    return a.expand(shape) * flat[idx].reshape(shape)


def mul_garbage(a, b):
    """Right except for a few elements that look like memory read out of bounds."""
    out = a * b
    _count()
    flat = out.view(-1)
    flat[3] = 1.5e20
    flat[7] = float("nan")
    return out


def mul_cuda_error(a, b):
    """Raises what torch raises after an illegal memory access."""
    _count()
    raise RuntimeError(
        "CUDA error: an illegal memory access was encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.")


def mul_segfault(a, b):
    """Kills its process with SIGSEGV (a native crash: no Python exception at all)."""
    _count()
    ctypes.string_at(0)


def mul_hangs(a, b):
    """Never returns."""
    _count()
    while True:
        time.sleep(0.05)


# -- entries for traceview.capture.isolation.run_child's own tests --------------------------
def entry_ok(payload, emit):
    emit({"step": 1})
    return {"echo": payload["x"]}


def entry_wrong(payload, emit):
    return {"status": "wrong", "why": "2 + 2 = 5"}


def entry_usage(payload, emit):
    from traceview.errors import CaptureError

    raise CaptureError("no CUDA GPU available")


def entry_raises(payload, emit):
    emit({"step": "before"})
    return {"v": 1 / payload["zero"]}


def entry_segfault(payload, emit):
    emit({"step": "before"})
    ctypes.string_at(0)


def entry_slow_steps(payload, emit):
    """Emits every 0.3 s for ~1.5 s: never idle as long as a 1 s timeout, so no hang."""
    for i in range(5):
        time.sleep(0.3)
        emit({"step": i})
    return {"done": True}


def entry_hangs(payload, emit):
    emit({"step": "before"})
    while True:
        time.sleep(0.05)
