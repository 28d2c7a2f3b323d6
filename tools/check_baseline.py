"""Check capture's unprofiled baseline against an independent timing, in one process.

For each case, this builds the call exactly as ``traceview capture`` does (same inputs,
same implementation, cold call and warm-up first), takes capture's full-API baseline
(``traceview.capture.baseline``), then times the same call with a plain loop written
here: ``time.perf_counter_ns()``, the call, ``torch.cuda.synchronize()``. It prints both
medians and their ratio, and exits 1 if any case differs by more than the tolerance.

The two are timed alternately in rounds, so clock or thermal drift hits both equally.

    PYTHONPATH=. python3 tools/check_baseline.py                 # GPU, default cases
    PYTHONPATH=. python3 tools/check_baseline.py --device cpu --case torch:mul:1x4096:float32
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time

from traceview.capture import baseline
from traceview.capture import config as cfg
from traceview.capture import device as devmod
from traceview.capture.impls import build_impl
from traceview.capture.inputs import make_inputs
from traceview.capture.ops import canonical_dtype

DEFAULT_CASES = (
    "triton:mul:1x4096:float32",
    "torch:mul:1x4096:float32",
    "triton:mul:4096x4096:float16",
    "torch:mul:4096x4096:float16",
)


def independent_p50(torch, call, n: int, cuda: bool) -> int:
    """The reference timing: nothing from traceview, just the loop."""
    samples = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        call()
        if cuda:
            torch.cuda.synchronize()
        samples.append(time.perf_counter_ns() - t0)
    return int(statistics.median_low(samples))


def check_case(spec: str, device: str, n: int, rounds: int) -> tuple[int, int]:
    impl, op, shape, dtype = spec.split(":")
    config = cfg.CaptureConfig(op=op, impl=impl, shapes=cfg.parse_shapes(shape),
                               dtype=canonical_dtype(dtype), device=device).validate()
    with devmod.fresh_compile_caches(config), contextlib.ExitStack() as stack:
        dev = devmod.open_device(config)
        torch = dev.torch
        inputs = make_inputs(torch, config, dev.torch_device)
        call = build_impl(config, dev, inputs, stack).call
        call()  # cold call (compile), not timed here
        for _ in range(config.warmup):
            call()
            dev.sync()
        ours, theirs = [], []
        for _ in range(rounds):
            ours.append(int(statistics.median_low(baseline.full_api_samples(dev, call, n))))
            theirs.append(independent_p50(torch, call, n, dev.is_cuda))
    return int(statistics.median_low(ours)), int(statistics.median_low(theirs))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", help="impl:op:shape:dtype (repeatable)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--n", type=int, default=200, help="calls per median")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds per case")
    ap.add_argument("--tolerance", type=float, default=0.10)
    args = ap.parse_args(argv)

    failed = 0
    print(f"{'case':36} {'capture p50':>12} {'plain p50':>12} {'ratio':>7}")
    for spec in args.case or DEFAULT_CASES:
        ours, theirs = check_case(spec, args.device, args.n, args.rounds)
        ratio = ours / theirs
        ok = abs(ratio - 1.0) <= args.tolerance
        failed += not ok
        print(f"{spec:36} {ours:>10} ns {theirs:>10} ns {ratio:7.3f} {'ok' if ok else 'OUTSIDE'}")
    print(f"{'all within' if not failed else f'{failed} case(s) outside'} "
          f"{args.tolerance:.0%} (capture baseline vs plain perf_counter_ns + synchronize loop)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
