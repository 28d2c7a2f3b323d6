"""The op backend under the model, entered once per child process, outside timed regions.

* ``eager``: plain torch.
* ``flag_gems``: ``flag_gems.use_gems(exclude=[...])`` for the whole process: FlagGems'
  Triton ops replace ATen's CUDA kernels. ``use_gems(include=[op])`` (FlagGems 5.0.2's
  ``only_enable`` underneath) enables one op at a time for the bisect. Op names are
  FlagGems' function names (``mul``, ``rms_norm``, ``to_copy``...), the unit both its
  include and exclude lists take.
* ``compile``: transformers' own path, a static KV cache and a ``CompileConfig``:
  ``generate`` compiles the decode step (``torch.compile``, inductor, "reduce-overhead":
  CUDA graphs on a GPU) in the warm-up; the prefill stays eager, so for this backend the
  first-step logits check is eager against eager and the greedy tokens check the
  compiled decode.

``--env`` and ``--python`` variants need nothing here: they change the process.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

from traceview.errors import CaptureError
from traceview.serve.spec import Variant

FLAG_GEMS_MISSING = ("the flag_gems backend needs FlagGems importable in the variant's "
                     "Python (pip install flag_gems)")


def import_flag_gems() -> Any:
    try:
        import flag_gems
    except ImportError:
        raise CaptureError(FLAG_GEMS_MISSING) from None
    return flag_gems


def enter(variant: Variant, torch: Any, model: Any, gen_config: Any,
          stack: contextlib.ExitStack, include: Iterable[str] | None = None) -> dict[str, Any]:
    """Switch the backend on for the rest of ``stack``; return what to record about it.

    ``include`` (flag_gems only) enables just those ops, for the bisect.
    """
    if variant.backend == "eager":
        return {"backend": "eager"}
    if variant.backend == "flag_gems":
        gems = import_flag_gems()
        if include is not None:
            stack.enter_context(gems.use_gems(include=list(include)))
        else:
            stack.enter_context(gems.use_gems(exclude=list(variant.exclude_ops)))
        try:
            registered = len(gems.all_registered_ops())
        except Exception:  # noqa: BLE001  (a count for the record only)
            registered = None
        return {"backend": "flag_gems", "entry": "flag_gems.use_gems()",
                "excluded_ops": list(variant.exclude_ops),
                "included_ops": None if include is None else list(include),
                "registered_ops": registered}
    if variant.backend == "compile":
        from transformers.generation.configuration_utils import CompileConfig

        gen_config.cache_implementation = "static"
        gen_config.compile_config = CompileConfig()
        gen_config.compile_config._compile_all_devices = True  # CPU too (tests, --device cpu)
        return {"backend": "compile",
                "entry": "generate(cache_implementation='static', compile_config="
                         "CompileConfig()): transformers compiles the decode step "
                         "(torch.compile, inductor, mode reduce-overhead); prefill stays eager"}
    raise CaptureError(f"unknown backend {variant.backend!r}")


def same_generation(probe: Any, target: Any) -> Any:
    """Carry what :func:`enter` set on one GenerationConfig over to another."""
    for name in ("cache_implementation", "compile_config"):
        value = getattr(probe, name, None)
        if value is not None:
            setattr(target, name, value)
    return target


def flag_gems_units(hit_ops: Iterable[str]) -> tuple[list[str], list[str]]:
    """(FlagGems ops the model is seen to call, every other FlagGems op), sorted.

    ``hit_ops`` are ATen overload names as a dispatch mode sees them
    (``aten::mul.Tensor``, ``aten::_to_copy``). FlagGems registers keys such as
    ``mul.Tensor`` or ``_to_copy``; ``all_registered_keys()`` and ``all_registered_ops()``
    list them side by side once ``use_gems()`` is entered. The dispatch mode sees some
    composite ops undecomposed (``aten::linear`` rather than ``aten::mm``), so the ops it
    does not name are returned apart: the bisect tests the first list only (the second
    is counted in the result), since an op the model never reaches cannot break it.
    """
    gems = import_flag_gems()
    with gems.use_gems():
        registry = list(zip(gems.all_registered_keys(), gems.all_registered_ops(),
                            strict=False))
    called = match_units(hit_ops, registry)
    rest = sorted({unit for _, unit in registry} - set(called))
    return called, rest


def flag_gems_keys(units: Iterable[str]) -> dict[str, list[str]]:
    """Per FlagGems op name, the registry keys (ATen overloads) it registers for."""
    gems = import_flag_gems()
    wanted = set(units)
    with gems.use_gems():
        pairs = list(zip(gems.all_registered_keys(), gems.all_registered_ops(), strict=False))
    out: dict[str, list[str]] = {}
    for key, unit in pairs:
        if unit in wanted:
            out.setdefault(unit, []).append(key)
    return out


def match_units(hit_ops: Iterable[str], registry: Iterable[tuple[str, str]]) -> list[str]:
    """The registry's unit names whose key the model calls, sorted, once each.

    A key ``mul.Tensor`` matches ``aten::mul.Tensor``; a key without overload (``_to_copy``)
    matches ``aten::_to_copy`` and ``aten::_to_copy.default``; and any key matches a bare
    name from the profiler (``aten::mul`` matches ``mul.Tensor`` and ``mul.Scalar``: more
    candidates, never fewer).
    """
    full, bare = set(), set()
    for op in hit_ops:
        name = op.removeprefix("aten::")
        full.add(name.removesuffix(".default"))
        if "." not in name:
            bare.add(name)
    return sorted({unit for key, unit in registry
                   if key in full or key.split(".", 1)[0] in bare})
