"""A user's Triton ``mul`` that is right on same-shape inputs and wrong on broadcast.

``--fn broken_triton:mul`` with ``TRITON_INTERPRET=1`` (Triton's CPU interpreter) and
this folder on PYTHONPATH. The bug: the second operand is read at the flat output index
modulo its own size, ignoring its strides, which is right only when it broadcasts over
leading dimensions (a bias), and wrong for ``(B, H, S, D) * (B, 1, S, D)``.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _mul_kernel(x_ptr, y_ptr, out_ptr, n, ny, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs % ny, mask=mask)
    tl.store(out_ptr + offs, x * y, mask=mask)


def mul(a, b):
    shape = torch.broadcast_shapes(a.shape, b.shape)
    x = a.expand(shape).contiguous()
    y = b.contiguous()
    out = torch.empty(shape, dtype=torch.result_type(a, b), device=a.device)
    n = out.numel()
    _mul_kernel[(triton.cdiv(n, 256),)](x, y, out, n, y.numel(), BLOCK=256)
    return out
