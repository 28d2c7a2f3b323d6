"""FlagGems ``add``/``mul`` with a cache on type promotion (the FlagGems #4812 direction),
for ``traceview capture --check-cache`` on a GPU with FlagGems installed::

    traceview capture --op add --fn examples.flag_gems_promotion_cache:add --check-cache        # exit 0
    traceview capture --op add --fn examples.flag_gems_promotion_cache:add_by_shape --check-cache  # exit 3

FlagGems' ``PointwiseDynamicFunction`` asks ``flag_gems.utils.pointwise_dynamic
.type_promotion`` (a wrapper of ``torch._prims_common.elementwise_dtypes``, 10-30 us of
Python) for the output dtype on every call. Its answer depends only on the promotion kind,
each tensor's dtype and whether it is 0-dim, and each Python scalar's type, so a cache on
exactly that key is safe (:func:`add`, :func:`mul`: the key of ``docs/figures/flaggems_type_promotion/flaggems_type_promotion_patch``).
A cache keyed on the operands' *shapes* (:func:`add_by_shape`, :func:`mul_by_shape`) hands
the first call in a new dtype the dtype of an earlier call of the same shapes.

Not every FlagGems op asks that question. On Hopper with Triton >= 3.4, FlagGems 5.0.2
registers ``flag_gems/runtime/backend/_nvidia/hopper/ops/mul.py`` for ``aten::mul``: two
real tensors of the same rank go to ``mul_all_real_func`` (``torch.empty_like(a)`` and one
flat 1-D kernel), which asks for no promotion at all -- and ignores strides, broadcasting
and mixed dtypes, which is why ``capture --check-layouts`` finds FlagGems' ``mul`` wrong on
the H200 (docs/capture.md). There :func:`mul` and :func:`mul_by_shape` refuse to run (the
guard below) rather than report on a cache nothing consults; use :func:`add`.

``flag_gems.use_gems()`` is entered once, at import, for the process (as ``capture --impl
flag_gems`` does). Each callable installs its cache as that module global for its own call
only and puts FlagGems' function back after it, so everything else in the process (the
float64 reference included) runs FlagGems as shipped. The first call raises when it did
not go through the cache: a FlagGems that stopped reading that global would otherwise
make the check a check of FlagGems as shipped.
"""

import importlib

import flag_gems
import torch

_gems = flag_gems.use_gems()
_gems.__enter__()
_pd = importlib.import_module("flag_gems.utils.pointwise_dynamic")
_shipped = _pd.type_promotion


def _by_dtype(kind, args):
    return (kind,) + tuple((a.dtype, a.dim() == 0) if isinstance(a, torch.Tensor) else type(a)
                           for a in args)


def _by_shape(kind, args):
    return (kind,) + tuple(tuple(a.shape) if isinstance(a, torch.Tensor) else type(a)
                           for a in args)


def _cache(key):
    store, hits = {}, [0]

    def type_promotion(*args, type_promotion):
        hits[0] += 1
        k = key(type_promotion, args)
        got = store.get(k)
        if got is None:
            got = store[k] = _shipped(*args, type_promotion=type_promotion)
        return got

    return type_promotion, hits


_right = _cache(_by_dtype)
_wrong = _cache(_by_shape)


def _through(cache, op, a, b):
    promotion, hits = cache
    _pd.type_promotion = promotion
    try:
        out = op(a, b)
    finally:
        _pd.type_promotion = _shipped
    if not hits[0]:
        raise RuntimeError(
            "flag_gems_promotion_cache: this call never asked flag_gems.utils."
            "pointwise_dynamic.type_promotion, so a promotion cache does not apply to it "
            f"({getattr(op, '__name__', op)} of {tuple(a.shape)} and {tuple(b.shape)}; on "
            "Hopper FlagGems' mul of two same-rank tensors takes mul_all_real_func, which "
            "does no type promotion)")
    return out


def add(a, b):
    """``torch.add`` through FlagGems with a promotion cache keyed on dtypes (right)."""
    return _through(_right, torch.add, a, b)


def mul(a, b):
    """``torch.mul`` through FlagGems with a promotion cache keyed on dtypes (right)."""
    return _through(_right, torch.mul, a, b)


def add_by_shape(a, b):
    """``torch.add`` through FlagGems with a promotion cache keyed on shapes (wrong)."""
    return _through(_wrong, torch.add, a, b)


def mul_by_shape(a, b):
    """``torch.mul`` through FlagGems with a promotion cache keyed on shapes (wrong)."""
    return _through(_wrong, torch.mul, a, b)
