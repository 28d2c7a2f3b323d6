"""A known before/after: cache FlagGems' type promotion on the pointwise hot path.

On side B's import path only (``traceview ab --b-path docs/figures/flaggems_type_promotion/flaggems_type_promotion_patch``), and
active only with ``TV13_PATCH=1``. FlagGems 5.0.2's ``PointwiseDynamicFunction`` calls
``flag_gems.utils.type_utils.type_promotion`` (a thin wrapper of
``torch._prims_common.elementwise_dtypes``, ~10-30 us of Python per call) on every
call to find the output dtype (``flag_gems/utils/pointwise_dynamic.py`` line 1506). The
result depends only on the argument dtypes, whether each tensor is 0-dim, the Python
scalar types, and the promotion kind, so it can be cached on exactly that key. The
answer (fewer microseconds of host work per ``add``) is known independently of any
traceview figure: the cached path skips the call entirely.

Python imports ``sitecustomize`` at start-up from the first folder on ``sys.path`` that
has one, so this one chains to the next one found, if any, to leave the machine's own
start-up as it was.

The patch is applied when FlagGems' ``pointwise_dynamic`` module is first imported (an
import hook), not by importing FlagGems here: FlagGems' import queries the device, which
initialises CUDA, and a process whose start-up initialises CUDA cannot serve as
``traceview ab``'s template (a CUDA context does not survive a fork), so every round
would pay a fresh interpreter. A process that never imports FlagGems is never patched;
``ab``'s kernel lines would show that side launching other kernels.
"""

import importlib.abc
import os
import sys

TARGET = "flag_gems.utils.pointwise_dynamic"


def _chain() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    for folder in sys.path:
        path = os.path.join(os.path.abspath(folder or "."), "sitecustomize.py")
        if os.path.dirname(path) != here and os.path.isfile(path):
            with open(path) as f:
                code = compile(f.read(), path, "exec")
            exec(code, {"__name__": "sitecustomize_chained", "__file__": path})  # noqa: S102
            return


def _patch(pointwise_dynamic) -> None:
    """Cache ``type_promotion`` in the module (``flag_gems.utils`` re-exports a
    *function* named pointwise_dynamic; this is the module)."""
    import torch

    original = pointwise_dynamic.type_promotion
    cache: dict = {}

    def cached_type_promotion(*args, type_promotion):
        key = (type_promotion,) + tuple(
            (a.dtype, a.dim() == 0) if isinstance(a, torch.Tensor) else type(a) for a in args)
        hit = cache.get(key)
        if hit is None:
            hit = cache[key] = original(*args, type_promotion=type_promotion)
        return hit

    pointwise_dynamic.type_promotion = cached_type_promotion


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for ``TARGET`` it asks the other finders for the module's
    spec and wraps its loader so that the patch runs right after the module's code."""

    def find_spec(self, fullname, path, target=None):
        if fullname != TARGET:
            return None
        sys.meta_path.remove(self)  # once: the module is imported once
        for finder in sys.meta_path:
            spec = finder.find_spec(fullname, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None:
                break
        else:
            return None
        real_exec = spec.loader.exec_module

        def exec_module(module):
            real_exec(module)
            if module.__name__ != TARGET:  # a loader shared by other modules (zip, egg)
                return
            # an Exception here would surface as FlagGems' ImportError and could be
            # caught; SystemExit stops the process (and the A/B with it): a patch that
            # cannot apply must not pass for an A/A run
            try:
                _patch(module)
            except Exception as exc:  # noqa: BLE001
                raise SystemExit(f"issue13 patch failed: {type(exc).__name__}: {exc}") from None

        spec.loader.exec_module = exec_module
        return spec


_chain()
if os.environ.get("TV13_PATCH") == "1":
    sys.meta_path.insert(0, _PatchOnImport())
