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
import sys


def main() -> None:
    from traceview.capture.baseline_child import _decode, measure_here
    from traceview.errors import TraceviewError

    config = _decode(sys.stdin.read())
    try:
        block = measure_here(config, check=True)
    except TraceviewError as exc:
        print(json.dumps({"error": str(exc), "exit_code": exc.exit_code}), flush=True)
        sys.exit(exc.exit_code)
    print(json.dumps(block), flush=True)


if __name__ == "__main__":
    main()
