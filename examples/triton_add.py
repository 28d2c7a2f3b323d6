"""A hand-written Triton kernel, measured with ``traceview capture --fn``.

    traceview capture --op add --fn examples.triton_add:add --shape 16x4096 --dtype bf16

``add(a, b)`` is what a kernel author ships: allocate the output, launch the kernel over
a 1-D grid of contiguous blocks, return the output. capture builds the inputs from
``--op/--shape/--dtype``, checks the output against ``torch.add`` in float64, then runs
its protocol (cold call apart, warm-up, unprofiled baseline in fresh processes,
profiled warm calls). From Python, without naming the module::

    import torch, traceview
    from examples.triton_add import add
    a = torch.randn(16, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn_like(a)
    traceview.capture(add, a, b, reference=torch.add, out="triton_add.json.gz")
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    # add in float32, round once on store: what torch.add does for bf16/fp16
    tl.store(out_ptr + offs, x.to(tl.float32) + y.to(tl.float32), mask=mask)


def add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Elementwise a + b for two contiguous tensors of one shape and dtype."""
    if a.shape != b.shape or a.dtype != b.dtype:
        raise ValueError("examples.triton_add.add: same shape and dtype only")
    a, b = a.contiguous(), b.contiguous()
    out = torch.empty_like(a)
    n = out.numel()
    _add_kernel[(triton.cdiv(n, BLOCK),)](a, b, out, n, BLOCK=BLOCK)
    return out
