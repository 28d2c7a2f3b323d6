"""The unprofiled split measured in a fresh process that never starts the profiler.

The parent (capture, ab) names the functions to time (``structure``, from its profiled
trace); the child rebuilds the same seeded inputs and implementation as the baseline
child does, warms up, finds the named functions among the live ones (``find``) and
times them one per run (``split``). It prints one JSON line: the ``split`` block, or
``{"error": ...}``.

Run as ``python -m traceview.unprofiled.child`` with ``{"config": ..., "names": [...]}``
as JSON on stdin.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from traceview.errors import CaptureError


def measure_here(config: Any, names: list[str]) -> dict[str, Any]:
    """The split block for ``names`` measured in this process."""
    from traceview.unprofiled import find, split
    from traceview.workload import device as device_mod
    from traceview.workload.prepare import prepare

    dev = device_mod.open_device(config)
    with contextlib.ExitStack() as stack:
        ready = prepare(config, dev, stack, check=None)
        found = find.functions_for(names)
        targets = {n: found[n] for n in names if n in found}
        block = split.measure(ready.call, dev.sync, targets)
    block["missing"] = [n for n in names if n not in found]
    return block


def split_in_child(config: Any, names: list[str], cache_root: Path) -> dict[str, Any]:
    """:func:`measure_here` in a fresh interpreter (compile caches under cache_root)."""
    from traceview.runner.process import measure_in_module
    from traceview.workload.wire import encode_config

    payload = json.dumps({"config": json.loads(encode_config(config)), "names": names})
    return measure_in_module("traceview.unprofiled.child", payload, cache_root,
                             "the unprofiled split")


def split_after_profile(config: Any, warm_trace: Path,
                        cache_root: Path) -> dict[str, Any] | None:
    """The ``baseline.split`` block: the functions that hold the profiled warm call
    (``unprofiled.structure``), timed one per run in a fresh process that never starts
    the profiler (``unprofiled.child``). None where there is nothing to split: a graph
    replay or a trace with no Python frames. A split that fails is recorded as
    ``{"error": ...}``: the capture itself stands.
    """
    from traceview.unprofiled import structure

    if config.mode != "eager" or not config.stack:
        return None
    names = structure.choose_from_trace(str(warm_trace), calls=r"^call_\d+$")
    if not names:
        return None
    try:
        return split_in_child(config, names, cache_root)
    except CaptureError as exc:
        return {"error": str(exc), "functions": [], "chosen": names}


def _child() -> None:
    from traceview.errors import TraceviewError
    from traceview.workload.wire import decode_config

    req = json.loads(sys.stdin.read())
    config = decode_config(json.dumps(req["config"]))
    try:
        block = measure_here(config, list(req["names"]))
    except TraceviewError as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
        sys.exit(2)
    print(json.dumps(block), flush=True)


if __name__ == "__main__":
    _child()
