"""One process of ``traceview ab``: measure a ``CaptureConfig`` unprofiled, print JSON.

Reads the config as JSON on stdin (``runner.wire.encode_config``), then does what
capture's baseline child does -- build seeded inputs and the implementation, first call,
warm-up, ``baseline.measure`` -- and also checks that first output against the
reference, so a variant that is fast because it is wrong never gets a verdict. Prints
one JSON line: the baseline block plus ``correctness``, ``versions`` and ``device``, or
``{"error": ..., "exit_code": N}``.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import time
from typing import Any

from traceview.runner.process import SPAWNED_ENV, answer


class Phases:
    """Where a process's time goes, in ns: ``start_to_ready`` from the moment its parent
    started it (spawned: interpreter start and traceview's imports; forked from a
    template: the fork) to the entry, then each :meth:`mark`'s share since the last one
    (``imports``, ``cuda_init``, ``build_compile_warmup``, ``measure``)."""

    def __init__(self) -> None:
        now = time.monotonic_ns()
        started = int(os.environ.get(SPAWNED_ENV) or now)
        self.ns: dict[str, int] = {"start_to_ready": max(0, now - started)}
        self._last = now

    def mark(self, name: str) -> None:
        now = time.monotonic_ns()
        self.ns[name] = now - self._last
        self._last = now


def import_libraries(phases: Phases, *, triton: bool, flag_gems: bool = False) -> None:
    """torch (and triton for a Triton side, flag_gems for a FlagGems side), timed as
    ``imports``: the whole import in a spawned process, nothing in a child forked from
    a template that preloaded them, and flag_gems alone in a forked child (its import
    initialises CUDA, so no template holds it). A missing flag_gems is left to the
    implementation, which says how to install it."""
    from traceview.workload.device import import_torch

    import_torch()
    if triton:
        from traceview.workload.device import import_triton

        import_triton()
    if flag_gems:
        with contextlib.suppress(ImportError):
            importlib.import_module("flag_gems")
    phases.mark("imports")


def measure_side(text: str) -> dict[str, Any]:
    """One side's process (``ChildSpec.call``): the config's baseline, checked, with the
    process's phases (``phases_ns``)."""
    from traceview.opcapture.baseline_child import measure_here
    from traceview.workload.wire import decode_config

    phases = Phases()
    config = decode_config(text)
    import_libraries(phases, triton=config.impl == "triton",
                     flag_gems=config.impl == "flag_gems")
    result = measure_here(config, check=True, phases=phases)
    result["phases_ns"] = phases.ns
    return result


def main() -> None:
    answer(measure_side)


if __name__ == "__main__":
    main()
