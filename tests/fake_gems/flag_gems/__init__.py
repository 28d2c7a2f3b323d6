"""A CPU stand-in for FlagGems, for the serving tests: FlagGems 5.0.2's API, three ops.

``use_gems(exclude=..., include=...)`` registers ATen CPU kernels through a
``torch.library.Library("aten", "IMPL")`` as FlagGems registers CUDA ones, and
``all_registered_ops()`` / ``all_registered_keys()`` list what is registered. The ops:

* ``neg`` raises the error a CUDA illegal memory access gives (a crash);
* ``silu`` is wrong by a factor of 1.5 (wrong results);
* ``mean`` (``mean.dim``, RMSNorm's) returns NaN (wrong, and not finite);
* ``rsqrt`` is right (computed another way).
"""

from __future__ import annotations

import torch

__version__ = "0.0+fake"


def neg(x):
    raise RuntimeError("CUDA error: an illegal memory access was encountered (fake)")


def silu(x):
    return x * torch.sigmoid(x) * 1.5


def mean(x, dim=None, keepdim=False, dtype=None):
    shape = torch.ops.aten.sum.dim_IntList(x, dim, keepdim).shape
    return torch.full(shape, float("nan"), dtype=x.dtype)


def rsqrt(x):
    return torch.reciprocal(torch.sqrt(x))


_FULL_CONFIG = (("neg", neg), ("silu", silu), ("mean.dim", mean), ("rsqrt", rsqrt))
_registered: list[tuple[str, object]] | None = None


class use_gems:
    def __init__(self, exclude=None, include=None, record=False, once=False, path=None):
        self.exclude = list(exclude or [])
        self.include = list(include or [])

    def __enter__(self):
        global _registered
        self.lib = torch.library.Library("aten", "IMPL")
        if self.include:
            ops = [(k, f) for k, f in _FULL_CONFIG if f.__name__ in self.include]
        else:
            ops = [(k, f) for k, f in _FULL_CONFIG if f.__name__ not in self.exclude]
        for key, fn in ops:
            self.lib.impl(key, fn, "CPU")
        _registered = ops
        return self

    def __exit__(self, *exc):
        global _registered
        self.lib._destroy()
        _registered = None


def all_registered_ops():
    return [f.__name__ for _, f in _registered]


def all_registered_keys():
    return [k for k, _ in _registered]
