"""One process of ``traceview ab``: measure a ``CaptureConfig`` unprofiled, print JSON.

Reads the config as JSON on stdin (``baseline_child._encode``), then does what
capture's baseline child does -- build seeded inputs and the implementation, first call,
warm-up, ``baseline.measure`` -- and also checks that first output against the
reference, so a variant that is fast because it is wrong never gets a verdict. Prints
one JSON line: the baseline block plus ``correctness``, ``versions`` and ``device``, or
``{"error": ..., "exit_code": N}``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any


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
    return out


def answer(measure: Callable[[str], dict[str, Any]]) -> None:
    """The protocol of ``ab``'s children: stdin -> ``measure`` -> one JSON line with
    where the process ran, or ``{"error", "exit_code"}`` and that exit code."""
    from traceview.errors import TraceviewError

    try:
        result = measure(sys.stdin.read())
    except TraceviewError as exc:
        print(json.dumps({"error": str(exc), "exit_code": exc.exit_code}), flush=True)
        sys.exit(exc.exit_code)
    result["cpu"] = where_it_ran()
    print(json.dumps(result), flush=True)


def main() -> None:
    from traceview.capture.baseline_child import _decode, measure_here

    answer(lambda text: measure_here(_decode(text), check=True))


if __name__ == "__main__":
    main()
