"""Three cached ``add`` implementations: one right, two with the cache bugs a review of a
FlagGems #4812-style host-overhead fix has to rule out. ``traceview capture --check-cache``
tells them apart::

    traceview capture --op add --fn examples.cached_add:bad_promotion_cache --check-cache  # exit 3
    traceview capture --op add --fn examples.cached_add:bad_grid_cache --check-cache       # exit 3
    traceview capture --op add --fn examples.cached_add:cached_add --check-cache           # exit 0

(on a machine without a GPU: ``TRITON_INTERPRET=1 traceview capture ... --device cpu``).

All three launch the same Triton kernel and skip the same host work on a cache hit: the
output dtype (type promotion) and the launch plan (grid, fast path, element strides).
They differ only in the cache key:

* :func:`cached_add` keys on everything the plan depends on: each operand's shape,
  strides, dtype and whether it is a 0-dim tensor, or a Python scalar's type. The data
  pointer (and so the storage offset and its alignment) is not part of the plan: it is
  passed to the kernel on every call, and Triton's own launcher specialises on the
  pointer's 16-byte alignment.
* :func:`bad_promotion_cache` keys the *output dtype* on the operands' shapes only (a
  #4828-style promotion cache that forgot the dtypes): the first call with the same
  shapes in another dtype gets the old call's dtype.
* :func:`bad_grid_cache` keys the *launch plan* on shape and dtype and ignores strides:
  the first transposed (or sliced) view of a shape seen contiguous reuses the contiguous
  fast path and reads elements in memory order, which are the wrong elements.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, scalar, n, size1, size2, size3,
                xs0, xs1, xs2, xs3, ys0, ys1, ys2, ys3,
                Y_SCALAR: tl.constexpr, CONTIG: tl.constexpr, UPCAST: tl.constexpr,
                BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if CONTIG:
        x_off = offs
        y_off = offs
    else:
        i3 = offs % size3
        rest = offs // size3
        i2 = rest % size2
        rest = rest // size2
        i1 = rest % size1
        i0 = rest // size1
        x_off = i0 * xs0 + i1 * xs1 + i2 * xs2 + i3 * xs3
        y_off = i0 * ys0 + i1 * ys1 + i2 * ys2 + i3 * ys3
    x = tl.load(x_ptr + x_off, mask=mask)
    if UPCAST:
        x = x.to(tl.float32)
    else:
        x = x.to(out_ptr.dtype.element_ty)
    if Y_SCALAR:
        y = scalar
    else:
        y = tl.load(y_ptr + y_off, mask=mask)
        if UPCAST:
            y = y.to(tl.float32)
        else:
            y = y.to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + offs, x + y, mask=mask)


def _strides4(t, shape):
    """Element strides of ``t`` broadcast to ``shape`` (stride 0 where it broadcasts),
    left-padded to rank 4."""
    s = t.expand(shape).stride()
    return (0,) * (4 - len(s)) + tuple(s)


def _promote(a, b):
    """The output dtype: PyTorch's type promotion (the host work a cache would skip)."""
    return torch.result_type(a, b)


def _plan(a, b):
    """The launch plan: (output shape, grid, contiguous fast path, x strides, y strides)."""
    scalar = not isinstance(b, torch.Tensor)
    shape = tuple(a.shape) if scalar else tuple(torch.broadcast_shapes(a.shape, b.shape))
    n = 1
    for d in shape:
        n *= d
    tensors = (a,) if scalar else (a, b)
    contig = all(tuple(t.shape) == shape and t.is_contiguous() for t in tensors)
    ys = (0, 0, 0, 0) if scalar else _strides4(b, shape)
    return shape, (triton.cdiv(max(n, 1), BLOCK),), contig, _strides4(a, shape), ys


def _launch(a, b, out_dtype, plan):
    shape, grid, contig, xs, ys = plan
    out = torch.empty(shape, dtype=out_dtype, device=a.device)
    n = out.numel()
    if n == 0:
        return out
    sizes = (1,) * (4 - len(shape)) + tuple(shape)
    scalar = not isinstance(b, torch.Tensor)
    _add_kernel[grid](a, a if scalar else b, out, b if scalar else 0, n,
                      sizes[1], sizes[2], sizes[3], *xs, *ys,
                      Y_SCALAR=scalar, CONTIG=contig,
                      UPCAST=out_dtype in (torch.float16, torch.bfloat16), BLOCK=BLOCK)
    return out


def _operand_key(t):
    if isinstance(t, torch.Tensor):
        return (tuple(t.shape), tuple(t.stride()), t.dtype, t.dim() == 0, t.device.type)
    return (type(t),)


_good: dict = {}


def cached_add(a, b):
    """``a + b`` with a correct cache: the key holds everything the plan depends on."""
    key = (_operand_key(a), _operand_key(b))
    hit = _good.get(key)
    if hit is None:
        hit = _good[key] = (_promote(a, b), _plan(a, b))
    return _launch(a, b, *hit)


_dtypes_by_shape: dict = {}


def bad_promotion_cache(a, b):
    """``a + b`` whose output dtype is cached on the operands' shapes only (wrong)."""
    key = tuple(tuple(t.shape) for t in (a, b) if isinstance(t, torch.Tensor))
    dtype = _dtypes_by_shape.get(key)
    if dtype is None:
        dtype = _dtypes_by_shape[key] = _promote(a, b)
    return _launch(a, b, dtype, _plan(a, b))


_plans_by_shape: dict = {}


def bad_grid_cache(a, b):
    """``a + b`` whose launch plan is cached on shape and dtype, ignoring strides (wrong)."""
    key = tuple((tuple(t.shape), t.dtype) if isinstance(t, torch.Tensor) else type(t)
                for t in (a, b))
    plan = _plans_by_shape.get(key)
    if plan is None:
        plan = _plans_by_shape[key] = _plan(a, b)
    return _launch(a, b, _promote(a, b), plan)
