"""The user's own code in a capture: ``--fn``, ``--inputs`` and ``--ref`` callables.

A Triton kernel author, or someone testing a patched library, measures *their* callable
under the same protocol as the built-in implementations. Each is named as
``pkg.module:function`` (``module:Class.method`` works too) and imported in every process
that runs the call, so it must be importable there: from the current folder, from
``PYTHONPATH``, or from an extra import path (``traceview ab --a-path``).

* ``--fn`` is called with the op's positional arguments (the inputs built from
  ``--op/--shape/--dtype/--layout``, or what ``--inputs`` returns) and returns the
  output tensor.
* ``--inputs`` is called with one argument, the ``torch.device`` to build on, and
  returns the tuple of positional arguments (tensors and Python scalars).
* ``--ref`` is called with the same arguments upcast to float64 and returns the
  expected output; without it the op's own ATen function in float64 is the reference.

Torch-free at import: the callables load only when a capture runs.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from traceview.errors import CaptureError
from traceview.workload.config import check_spec


def load_callable(flag: str, spec: str) -> Callable[..., Any]:
    """Import ``spec``'s module and return the callable, or one line saying what failed."""
    check_spec(flag, spec)
    module_name, _, attr = spec.partition(":")
    # The current folder, as `python -m` would have it (the console script does not).
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 -- the user's module may raise anything at import
        raise CaptureError(f"--{flag} {spec}: cannot import {module_name!r}: "
                           f"{type(exc).__name__}: {exc}") from None
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise CaptureError(f"--{flag} {spec}: {module_name!r} has no attribute {attr!r}")
    if not callable(obj):
        raise CaptureError(f"--{flag} {spec}: {attr!r} is not callable")
    return obj

