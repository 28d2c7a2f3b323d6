"""Deliberately broken implementations of ``mul`` for capture's correctness tests.

Used as ``--fn broken_kernels:NAME`` (this folder on PYTHONPATH). Each call appends
this process's id to ``$BROKEN_CALLS`` (when set), so a test can count how many
processes ran the op and how often: the isolated check must be the only one.
Also the entries for the child runner's own tests (``entry_*``).
"""

from __future__ import annotations

import ctypes
import os
import sys
import time


def _count() -> None:
    """One line per call: ``pid program``, the program being ``isolation.py`` (the
    isolated check), ``baseline_child.py`` or the capturing process's own."""
    path = os.environ.get("BROKEN_CALLS")
    if path:
        with open(path, "a") as f:
            f.write(f"{os.getpid()} {os.path.basename(sys.argv[0])}\n")


def _dump(*tensors) -> None:
    """Save what the op got and gave to ``$BROKEN_DUMP``, for an independent recount."""
    path = os.environ.get("BROKEN_DUMP")
    if path:
        import torch

        torch.save([t.clone() for t in tensors], path)


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
    out = a.expand(shape) * flat[idx].reshape(shape)
    _dump(a, b, out)
    return out


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


def mul_segfault_on_transposed(a, b):
    """Right, except that a first operand whose last dim is not unit-stride kills the
    process (as an out-of-bounds read on the device can)."""
    import torch

    if isinstance(a, torch.Tensor) and a.dim() >= 2 and a.stride(-1) != 1:
        ctypes.string_at(0)
    return a * b


def mul_hangs_on_scalar(a, b):
    """Right, except that a Python scalar operand never returns."""
    import torch

    if not isinstance(b, torch.Tensor):
        while True:
            time.sleep(0.05)
    return a * b


# -- entries for traceview.runner.isolation.run_child's own tests --------------------------
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
