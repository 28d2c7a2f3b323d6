"""The known before/after as two callables that live in one process (``ab --same-process``).

``unpatched`` and ``patched`` are FlagGems 5.0.2 ``add`` through ``use_gems()`` (entered once,
at import, for the process's life, as ``capture --impl flag_gems`` does). They differ only
in the module global ``flag_gems.utils.pointwise_dynamic.type_promotion`` the call sees:
FlagGems' own function, or the cached wrapper of ``flaggems_type_promotion_patch/sitecustomize.py``
(same key, same result). Each callable sets the global before its call, so both pay the
same one attribute store and the only difference is the cache. ``patched`` checks once
that its call went through the cache (a FlagGems that stopped reading that global would
otherwise make this an A/A run). Everything after import runs under ``use_gems()``, on
both sides alike: the inputs, the float64 references, the graph captures.

    traceview ab --op add --shape 16x4096 --dtype bf16 --same-process \\
        --a-fn flaggems_type_promotion_fns:unpatched --b-fn flaggems_type_promotion_fns:patched --a-name unpatched --b-name patched
"""

import importlib

import flag_gems
import torch

_gems = flag_gems.use_gems()
_gems.__enter__()
_pd = importlib.import_module("flag_gems.utils.pointwise_dynamic")
_original = _pd.type_promotion
_cache: dict = {}


_hits = [0]


def _cached(*args, type_promotion):
    _hits[0] += 1
    key = (type_promotion,) + tuple(
        (a.dtype, a.dim() == 0) if isinstance(a, torch.Tensor) else type(a) for a in args)
    hit = _cache.get(key)
    if hit is None:
        hit = _cache[key] = _original(*args, type_promotion=type_promotion)
    return hit


def unpatched(a, b):
    _pd.type_promotion = _original
    return torch.add(a, b)


def patched(a, b):
    _pd.type_promotion = _cached
    out = torch.add(a, b)
    if not _hits[0]:
        raise RuntimeError("flaggems_type_promotion_fns.patched: FlagGems did not call type_promotion "
                           "through the module global; the patch does not apply here")
    return out
