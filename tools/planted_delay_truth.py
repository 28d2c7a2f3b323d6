"""The planted delay's true cost, measured with a plain loop: the truth that
``tools/summarize_ab_calibration.py`` checks ``traceview ab``'s intervals against.

    python tools/planted_delay_truth.py [--b plus_1us] [--pairs 2000] [--block-calls 5]
        [--device cuda] >> truth.jsonl

``tools/planted_delay_add.py``'s ``plus_1us`` busy-waits 1 us before the add, but what
that costs a synchronized call is not 1 us exactly: the wait's own loop overshoots by up
to one clock read, and the call after it may run slower or faster than it would have
(on an H100 host, ``ab`` read a planted +1 us as +1.5 to +2.0 us, with the wait's cost
there never measured). So this measures it, in one process, with nothing of traceview:
the undelayed callable (``plain``) and the delayed one in interleaved blocks of
``--block-calls`` synchronized calls (``time.perf_counter_ns`` around the call and the
synchronize), A B, B A, A B, ..., so each side goes first in half of the pairs. Pair
``i``'s difference is B's block median minus A's (lower medians: integer ns); the
estimate is the mean of the median difference over the pairs run A then B and over the
pairs run B then A (a drift over the process, or a carry-over from a pair's first block
to its second, adds to one order what it takes from the other). Each order's median gets
its distribution-free 95% interval from the binomial order statistics; the estimate's
interval is the mean of the two orders' ends (wider than the estimate's own spread:
both orders' ends are taken at 95%).

Prints one JSON line: ``b`` (the delayed callable), ``estimate_ns``, ``ci_ns``,
``a_then_b_ns``, ``b_then_a_ns``, ``pairs``, ``block_calls``, ``a_median_ns`` and
``b_median_ns`` (of all calls), ``device``. Run it in several fresh processes (the
calibration script runs three): a process's fast or slow state may change what the
delay costs, and the summarizer takes the median over processes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def lower_median(values: Sequence[int]) -> int:
    s = sorted(values)
    return s[(len(s) - 1) // 2]


def median_interval(values: Sequence[int], level: float = 0.95) -> tuple[int, int]:
    """Distribution-free interval for the median: order statistics ``s[k]`` and
    ``s[n-1-k]`` with the largest ``k`` whose binomial(n, 1/2) coverage is at least
    ``level``."""
    s, n = sorted(values), len(values)
    if n < 6:
        return s[0], s[-1]
    total = 2 ** n
    k, tail = 0, math.comb(n, 0)  # tail: P(X <= k) * 2**n
    while 2 * (tail + math.comb(n, k + 1)) <= (1 - level) * total:
        k += 1
        tail += math.comb(n, k)
    return s[k], s[n - 1 - k]


def measure(a: Callable[[], Any], b: Callable[[], Any], sync: Callable[[], Any],
            pairs: int, block_calls: int) -> dict[str, Any]:
    """Interleaved blocks of ``a`` and ``b`` (A B, B A, ...): per pair B - A of the block
    medians, and the estimate from both orders."""
    perf = time.perf_counter_ns
    diffs: list[int] = []
    every: dict[str, list[int]] = {"a": [], "b": []}

    def block(fn: Callable[[], Any], side: str) -> int:
        samples = []
        for _ in range(block_calls):
            t0 = perf()
            fn()
            sync()
            samples.append(perf() - t0)
        every[side] += samples
        return lower_median(samples)

    for i in range(pairs):
        if i % 2 == 0:
            ta = block(a, "a")
            tb = block(b, "b")
        else:
            tb = block(b, "b")
            ta = block(a, "a")
        diffs.append(tb - ta)
    ab, ba = diffs[0::2], diffs[1::2] or diffs[0::2]
    m_ab, m_ba = lower_median(ab), lower_median(ba)
    (lo_ab, hi_ab), (lo_ba, hi_ba) = median_interval(ab), median_interval(ba)
    return {"estimate_ns": (m_ab + m_ba) / 2, "ci_ns": [(lo_ab + lo_ba) / 2, (hi_ab + hi_ba) / 2],
            "a_then_b_ns": m_ab, "b_then_a_ns": m_ba, "pairs": pairs,
            "block_calls": block_calls, "a_median_ns": lower_median(every["a"]),
            "b_median_ns": lower_median(every["b"])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", default="plain")
    ap.add_argument("--b", default="plus_1us")
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--block-calls", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--device", default=None, help="cuda | cpu (default: cuda if present)")
    args = ap.parse_args(argv)
    if args.pairs < 2 or args.block_calls < 1:
        print("planted_delay_truth: --pairs takes 2 or more, --block-calls 1 or more",
              file=sys.stderr)
        return 2
    import planted_delay_add as planted
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.randn(16, 4096, device=device, dtype=torch.bfloat16)
    y = torch.randn(16, 4096, device=device, dtype=torch.bfloat16)
    fa, fb = getattr(planted, args.a), getattr(planted, args.b)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    for _ in range(args.warmup):
        fa(x, y)
        fb(x, y)
    sync()
    out = measure(lambda: fa(x, y), lambda: fb(x, y), sync, args.pairs, args.block_calls)
    print(json.dumps(dict(out, a=args.a, b=args.b, device=device,
                          device_name=torch.cuda.get_device_name(0) if device == "cuda"
                          else "cpu", pid=os.getpid())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
