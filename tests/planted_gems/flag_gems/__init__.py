"""A CPU backend with FlagGems 5.0.2's API whose cost is known by construction.

Its ops are ATen's own: ``use_gems`` lists each in the registry (``all_registered_ops``,
``all_registered_keys``) but leaves its ATen kernel in place, so switching it on
changes nothing, except for the one op named by ``PLANTED_GEMS_SLOW=op:ns`` (default
``silu:1500000``): that one is registered for the CPU key through
``torch.library.Library("aten", "IMPL")``, as FlagGems registers CUDA kernels, and
busy-waits that many ns on every call before computing through the op's own ``.out``
overload (a different operator, so the override never calls itself). A
``serve --attribute`` test then knows the truth: the planted op costs its waits, every
other op exactly nothing.

The ops are ones the tiny test model calls a few times per decode step (RMSNorm's
``pow``, ``mean`` and ``rsqrt``, rotary's ``neg``, the MLP's ``silu``).
"""

from __future__ import annotations

import os
import time

import torch

__version__ = "0.0+planted"

SLOW_ENV = "PLANTED_GEMS_SLOW"


def planted() -> tuple[str, int]:
    """(op, busy-wait ns per call) as the environment plants it."""
    op, _, ns = os.environ.get(SLOW_ENV, "silu:1500000").partition(":")
    return op, int(ns or 0)


#: The busy-waits as they ran: calls and wall ns. On a loaded machine a wait overshoots
#: its deadline by however long the process was descheduled at the end, so a test takes
#: the truth from here (the op's own clock), not from the planted ns alone.
BUSY = {"calls": 0, "ns": 0}


def _busy(name: str) -> None:
    op, ns = planted()
    if op == name and ns > 0:
        start = time.perf_counter_ns()
        end = start + ns
        now = start
        while now < end:
            now = time.perf_counter_ns()
        BUSY["calls"] += 1
        BUSY["ns"] += now - start


def _empty(x: torch.Tensor) -> torch.Tensor:
    return torch.empty(0, dtype=x.dtype, device=x.device)


def silu(x):
    _busy("silu")
    return torch.ops.aten.silu.out(x, out=_empty(x))


def rsqrt(x):
    _busy("rsqrt")
    return torch.ops.aten.rsqrt.out(x, out=_empty(x))


def neg(x):
    _busy("neg")
    return torch.ops.aten.neg.out(x, out=_empty(x))


def pow_tensor_scalar(x, exponent):
    _busy("pow_tensor_scalar")
    return torch.ops.aten.pow.Tensor_Scalar_out(x, exponent, out=_empty(x))


def mean_dim(x, dim=None, keepdim=False, dtype=None):
    _busy("mean_dim")
    out = torch.empty(0, dtype=dtype or x.dtype, device=x.device)
    return torch.ops.aten.mean.out(x, dim, keepdim, dtype=dtype, out=out)


_FULL_CONFIG = (("silu", silu), ("rsqrt", rsqrt), ("neg", neg),
                ("pow.Tensor_Scalar", pow_tensor_scalar), ("mean.dim", mean_dim))
#: FlagGems 5.0.2 indexes its table by function name at import, and ``use_gems(include=...)``
#: registers from that index, ``use_gems(exclude=...)`` from the table: the same here, so a
#: plant that wraps only one of them (tools/plant_flag_gems_slowdown) is caught on the CPU.
FULL_CONFIG_BY_FUNC: dict[str, list[tuple[str, object]]] = {}
for _item in _FULL_CONFIG:
    FULL_CONFIG_BY_FUNC.setdefault(_item[1].__name__, []).append(_item)
_registered: list[tuple[str, object]] | None = None


class use_gems:
    def __init__(self, exclude=None, include=None, record=False, once=False, path=None):
        self.exclude = list(exclude or [])
        self.include = list(include or [])

    def __enter__(self):
        global _registered
        self.lib = torch.library.Library("aten", "IMPL")
        if self.include:
            ops = [(k, f) for name in self.include for k, f in FULL_CONFIG_BY_FUNC.get(name, [])]
        else:
            ops = [(k, f) for k, f in _FULL_CONFIG if f.__name__ not in self.exclude]
        slow, _ = planted()
        for key, fn in ops:
            if fn.__name__ == slow:  # the others stay ATen's own kernels
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
