"""One process of ``traceview ab``: measure a ``CaptureConfig`` unprofiled, print JSON.

Reads the config as JSON on stdin (``baseline_child._encode``), then does what
capture's baseline child does -- build seeded inputs and the implementation, first call,
warm-up, ``baseline.measure`` -- and also checks that first output against the
reference, so a variant that is fast because it is wrong never gets a verdict. Prints
one JSON line: the baseline block plus ``correctness``, ``versions`` and ``device``, or
``{"error": ..., "exit_code": N}``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from traceview.ab.fresh_processes import SPAWNED_ENV


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
    from traceview.capture.device import import_torch

    import_torch()
    if triton:
        from traceview.capture.device import import_triton

        import_triton()
    if flag_gems:
        with contextlib.suppress(ImportError):
            importlib.import_module("flag_gems")
    phases.mark("imports")


def where_it_ran() -> dict[str, object]:
    """The CPUs this process may run on and the one it last ran on (``/proc/self/stat``
    field 39), so per-process figures can be read against core placement."""
    out: dict[str, object] = {}
    try:
        out["affinity"] = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        pass
    try:
        with open("/proc/self/stat") as f:
            stat = f.read()
        out["last"] = int(stat[stat.rindex(")") + 2:].split()[36])
    except (OSError, ValueError, IndexError):
        pass
    if "last" in out:  # the NUMA node of that CPU (a suspect for per-process clusters)
        try:
            nodes = [n for n in os.listdir(f"/sys/devices/system/cpu/cpu{out['last']}")
                     if n.startswith("node") and n[4:].isdigit()]
            if nodes:
                out["numa_node"] = int(nodes[0][4:])
        except OSError:
            pass
    out.update(gpu_clocks())
    return out


def gpu_clocks() -> dict[str, int]:
    """The GPU's SM and memory clocks as this process ends (NVML, where installed): a
    suspect for per-process clusters, read, never set."""
    try:
        import pynvml  # type: ignore[import-not-found]

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        return {"gpu_sm_mhz": int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
                "gpu_mem_mhz": int(pynvml.nvmlDeviceGetClockInfo(handle,
                                                                 pynvml.NVML_CLOCK_MEM))}
    except Exception:  # noqa: BLE001  (no NVML, no GPU: nothing to record)
        return {}


def answer(measure: Callable[[str], dict[str, Any]], text: str | None = None, *,
           exit: bool = True) -> int:
    """The protocol of ``ab``'s children: the config (``text``, else stdin) ->
    ``measure`` -> one JSON line with where the process ran, or ``{"error",
    "exit_code"}`` and that exit code (returned instead when not ``exit``)."""
    from traceview.errors import TraceviewError

    try:
        result = measure(sys.stdin.read() if text is None else text)
    except TraceviewError as exc:
        print(json.dumps({"error": str(exc), "exit_code": exc.exit_code}), flush=True)
        if exit:
            sys.exit(exc.exit_code)
        return exc.exit_code
    result["cpu"] = where_it_ran()
    print(json.dumps(result), flush=True)
    return 0


def measure_side(text: str) -> dict[str, Any]:
    """One side's process (``Side.call``): the config's baseline, checked, with the
    process's phases (``phases_ns``)."""
    from traceview.capture.baseline_child import _decode, measure_here

    phases = Phases()
    config = _decode(text)
    import_libraries(phases, triton=config.impl == "triton",
                     flag_gems=config.impl == "flag_gems")
    result = measure_here(config, check=True, phases=phases)
    result["phases_ns"] = phases.ns
    return result


def main() -> None:
    answer(measure_side)


if __name__ == "__main__":
    main()
