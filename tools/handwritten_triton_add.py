"""A plain hand-written Triton ``add``: the yardstick for capture's built-in launcher.

What a kernel author writes for contiguous inputs of one shape and dtype: a 1-D kernel
over flat offsets (half precision computed in float32, rounded once on store, block 1024,
4 warps: the same kernel as ``traceview.workload.kernels.flat_binary_kernel`` for ``add``) and a
wrapper that allocates the output and launches. Used by
``tools/measure_ab_process_cost_on_gpu.sh`` as ``--b-fn handwritten_triton_add:add``.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, x + y, mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, num_warps=4)
    return out
