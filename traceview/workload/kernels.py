"""The project's own Triton kernels, in two documented forms (``--launcher``).

**minimal** (the default where it applies: contiguous inputs of one shape and one dtype,
a scalar that does not promote): ``flat_binary_kernel`` (tensor op tensor) or
``flat_scalar_kernel`` (tensor op scalar, unary), 1-D kernels over flat offsets with four
runtime arguments, the op and block bound as defaults, and ``MinimalLauncher``, whose
call only allocates the output and launches with a grid computed once -- what a kernel
author ships for that case and what a plain hand-written wrapper does. No type
promotion, broadcasting, stride or validation work happens per call; whether the inputs
qualify is decided once, when the capture is set up (``minimal_applies``).

**library** (``--launcher library``, and the only form for broadcast, mixed-dtype or
non-contiguous inputs): ``pointwise_kernel``, a general strided rank-4 kernel with 16
runtime arguments, and ``PointwiseLauncher``, which per call does what an operator
library must: torch's type promotion, broadcasting, the rank-4 strides, the 64-bit index
decision. That work is real and is what a library pays, but it is the harness's, not the
kernel's: in a profiled H200 call of 470 us, this module took 99 us (89 us of it
``torch.functional.broadcast_shapes``) -- so it is no longer the default.

One kernel serves every op in :mod:`traceview.workload.ops`; the op is a ``tl.constexpr``
string, so each op compiles to its own specialised kernel with no runtime branch. The
library kernel handles contiguous inputs on a fast path (flat offsets) and anything else
(transposed, strided, broadcast with stride 0) through a rank-4 index decomposition, so
``--layout transposed|strided`` measure real non-contiguous loads, not a hidden copy.
Half-precision inputs are computed in float32 and rounded once on store, like ATen.

This module imports triton at import time (the kernel's annotations need ``tl``), so it
is only imported inside a capture, after :func:`device.fresh_compile_caches` has set the
environment. No ``from __future__ import annotations`` here: Triton reads the real
``tl.constexpr`` annotations.
"""

import os
import types

import triton
import triton.language as tl

#: Elements per program. 1024 with 4 warps is a sane default for memory-bound pointwise
#: work on current NVIDIA parts; it is recorded in the metadata, not tuned.
BLOCK = 1024
NUM_WARPS = 4


@triton.jit
def _apply(x, y, OP: tl.constexpr):
    """OP(x, y) (unary ops ignore ``y``): the one definition of every op the kernels
    below compute. ``OP`` is a compile-time string, so each op's kernel holds only its
    own branch."""
    if OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "mul":
        r = x * y
    elif OP == "div":
        r = x / y
    elif OP == "neg":
        r = -x
    elif OP == "abs":
        r = tl.abs(x)
    elif OP == "relu":
        r = tl.maximum(x, 0)
    elif OP == "sigmoid":
        r = tl.sigmoid(x)
    elif OP == "silu":
        r = x * tl.sigmoid(x)
    elif OP == "gelu":
        r = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    elif OP == "exp":
        r = tl.exp(x)
    else:
        # Triton's builtin takes the condition positionally (no keyword in the JIT's subset)
        tl.static_assert(False, "unknown OP")  # noqa: FBT003
    return r


def pointwise_kernel(
    x_ptr, y_ptr, out_ptr, scalar, n,
    size1, size2, size3,
    xs0, xs1, xs2, xs3,
    ys0, ys1, ys2, ys3,
    OP: tl.constexpr,
    Y_KIND: tl.constexpr,
    CONTIG: tl.constexpr,
    UPCAST: tl.constexpr,
    INDEX_64: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """out[i] = OP(x[i], y[i] | scalar) over the broadcast output, written contiguously.

    Y_KIND is "none" (unary), "tensor" or "scalar". CONTIG: every input is contiguous
    with the output's shape, so the flat offset is the element offset.
    """
    pid = tl.program_id(0)
    if INDEX_64:
        pid = pid.to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
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
    if Y_KIND == "tensor":
        y = tl.load(y_ptr + y_off, mask=mask, other=1)  # 1: masked lanes never divide by 0
        if UPCAST:
            y = y.to(tl.float32)
        else:
            y = y.to(out_ptr.dtype.element_ty)
    elif Y_KIND == "scalar":
        y = scalar
    else:
        y = x

    r = _apply(x, y, OP)
    tl.store(out_ptr + offs, r, mask=mask)


@triton.jit
def _load(ptr, offs, mask, other):
    """A load, half precision widened to float32 (rounded once on store, like ATen):
    decided from the pointer's type when the kernel compiles, not by an argument."""
    v = tl.load(ptr + offs, mask=mask, other=other)
    if ptr.dtype.element_ty == tl.float16 or ptr.dtype.element_ty == tl.bfloat16:
        v = v.to(tl.float32)
    return v


def flat_binary_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr = "add",
                       BLOCK: tl.constexpr = 1024):
    """The minimal form, tensor op tensor: out[i] = OP(x[i], y[i]) over ``n`` contiguous
    elements of one dtype. The runtime arguments are a hand-written wrapper's (three
    pointers and the count); a call passes ``OP`` by keyword, ``BLOCK`` keeps its default
    (a hand-written wrapper passes ``BLOCK=`` and ``num_warps=``)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = _load(x_ptr, offs, mask, 0)
    y = _load(y_ptr, offs, mask, 1)  # 1: masked lanes never divide by 0
    r = _apply(x, y, OP)
    tl.store(out_ptr + offs, r, mask=mask)


def flat_scalar_kernel(x_ptr, out_ptr, y, n, OP: tl.constexpr = "add",
                       BLOCK: tl.constexpr = 1024):
    """The minimal form, tensor op scalar (or a unary op, which ignores ``y``)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = _load(x_ptr, offs, mask, 0)
    r = _apply(x, y, OP)
    tl.store(out_ptr + offs, r, mask=mask)


def make_kernel(op=None, fn=None):
    """A new ``JITFunction`` with an empty in-memory cache, named ``<op>_kernel``.

    Each capture gets its own, so its first call compiles for real (together with the
    fresh ``TRITON_CACHE_DIR``) even when an earlier capture ran in this process. The
    device kernel takes the Python function's name, so a trace of ``mul`` shows
    ``mul_kernel`` rather than a generic name. Under ``TRITON_INTERPRET=1`` this returns
    the interpreter's function, which looks its source up by the original name, so
    there the name stays ``pointwise_kernel`` (no device kernels to name anyway).
    """
    fn = fn or pointwise_kernel
    if op is None or _interpreting():
        return triton.jit(fn)
    return triton.jit(_renamed(fn, f"{op}_kernel"))


def _interpreting():
    knobs = getattr(triton, "knobs", None)  # Triton >= 3.4
    if knobs is not None:
        return bool(knobs.runtime.interpret)
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def _renamed(fn, name):
    """A copy of ``fn`` under another name, keeping its source, globals and annotations
    (Triton reads ``tl.constexpr`` from the annotations and the body from the source)."""
    clone = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    clone.__qualname__ = name
    clone.__annotations__ = dict(fn.__annotations__)
    clone.__kwdefaults__ = fn.__kwdefaults__
    clone.__doc__ = fn.__doc__
    clone.__module__ = fn.__module__
    return clone


class PointwiseLauncher:
    """Host side of the kernel for one op: ``launcher(x, other)`` behaves like ``torch.<op>``.

    Output dtype follows torch's type promotion, the shape follows broadcasting, and the
    output is freshly allocated (contiguous) on every call, as an operator API would.
    Everything this does per call is part of the "full API" time that capture measures.
    """

    def __init__(self, torch, op, kernel=None):
        self.torch = torch
        self.op = op
        self.kernel = kernel if kernel is not None else make_kernel(op)
        self._half = (torch.float16, torch.bfloat16)

    def __call__(self, x, other=None):
        torch = self.torch
        if other is None:
            y, y_kind, scalar, out_dtype = x, "none", 0.0, x.dtype
            out_shape = x.shape
        elif isinstance(other, torch.Tensor):
            y, y_kind, scalar = other, "tensor", 0.0
            out_dtype = torch.result_type(x, other)
            out_shape = torch.broadcast_shapes(x.shape, other.shape)
        else:
            y, y_kind, scalar = x, "scalar", other
            out_dtype = torch.result_type(x, other)
            out_shape = x.shape
        if self.op == "div" and not out_dtype.is_floating_point:
            out_dtype = torch.get_default_dtype()
        out = torch.empty(out_shape, dtype=out_dtype, device=x.device)
        n = out.numel()
        if n == 0:
            return out

        pad = (1,) * (4 - len(out_shape))
        sizes = pad + tuple(out_shape)
        xs = _strides4(x, out_shape)
        ys = _strides4(y, out_shape)
        contig = all(t.shape == out_shape and t.is_contiguous() for t in (x, y))
        index_64 = n >= 2**31 or any(
            t.untyped_storage().nbytes() // t.element_size() >= 2**31 for t in (x, y)
        )
        grid = (triton.cdiv(n, BLOCK),)
        self.kernel[grid](
            x, y, out, scalar, n,
            sizes[1], sizes[2], sizes[3],
            *xs, *ys,
            OP=self.op, Y_KIND=y_kind, CONTIG=contig, UPCAST=out_dtype in self._half,
            INDEX_64=index_64, BLOCK=BLOCK, num_warps=NUM_WARPS,
        )
        return out


#: The launcher forms, by ``--launcher`` name: (launcher class's dotted name, kernel).
LAUNCHERS = ("minimal", "library")


def minimal_applies(torch, op, args):
    """Whether the minimal form computes exactly what ``torch.<op>(*args)`` does, and if
    not, why: every tensor contiguous, one shape, one dtype, floating point for div, a
    scalar that leaves the dtype alone, fewer than 2**31 elements."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    x = tensors[0]
    if any(t.shape != x.shape for t in tensors):
        return False, "the inputs broadcast"
    if any(t.dtype != x.dtype for t in tensors):
        return False, "the inputs' dtypes differ (type promotion)"
    if not all(t.is_contiguous() for t in tensors):
        return False, "an input is not contiguous"
    if x.numel() >= 2**31:
        return False, "2**31 elements or more need 64-bit indices"
    if op == "div" and not x.dtype.is_floating_point:
        return False, "integer div promotes to floating point"
    scalars = [a for a in args if not isinstance(a, torch.Tensor)]
    if scalars and torch.result_type(x, scalars[0]) != x.dtype:
        return False, "the scalar promotes the dtype"
    return True, "contiguous inputs of one shape and dtype"


class MinimalLauncher:
    """Host side of the minimal kernels: allocate the output, launch. Nothing else per call.

    What a kernel author ships for inputs that ``minimal_applies`` accepted: everything
    that depends on them is decided here, once, before any timed call -- which kernel
    (tensor-tensor, or tensor-scalar/unary), the element count, the grid, and the
    launch bound to that grid (``kernel[grid]``). A call is then ``out =
    torch.empty_like(x)``, one launch with four runtime arguments and ``OP=``, ``return
    out``: what a hand-written wrapper does (which passes ``BLOCK=`` and ``num_warps=``;
    here the block is the kernel's default and 4 warps Triton's).
    """

    def __init__(self, torch, op, args, kernel=None):
        self.torch = torch
        self.op = op
        x = args[0]
        other = args[1] if len(args) > 1 else None
        self.y_kind = ("none" if other is None else
                       "tensor" if isinstance(other, torch.Tensor) else "scalar")
        fn = flat_binary_kernel if self.y_kind == "tensor" else flat_scalar_kernel
        self.kernel = kernel if kernel is not None else make_kernel(op, fn)
        self.n = x.numel()
        self.grid = (triton.cdiv(self.n, BLOCK),)
        launch, empty_like, n = self.kernel[self.grid], torch.empty_like, self.n
        if self.y_kind == "tensor":
            def call(x, y=None):
                out = empty_like(x)
                launch(x, y, out, n, OP=op)
                return out
        else:
            scalar = 0.0 if other is None else other

            def call(x, y=None):
                out = empty_like(x)
                launch(x, out, scalar, n, OP=op)
                return out
        self.call = call

    def __call__(self, x, other=None):
        """For a caller that keeps the launcher: the same call (``impls`` binds
        :attr:`call` itself, so a timed call has no frame of this method)."""
        return self.call(x, other)


def _strides4(t, out_shape):
    """Element strides of ``t`` broadcast to ``out_shape``, left-padded to rank 4."""
    expanded = t.expand(out_shape).stride() if t.shape != out_shape else t.stride()
    return (0,) * (4 - len(expanded)) + tuple(expanded)
