"""When each request arrives, in integer ns from the start of the measured workload.

``offline``: all at 0 (the whole workload is queued at once). ``poisson``: the first
request at 0, then exponential gaps with mean ``1e9 / rate`` ns from ``random.Random(seed)``
(Python's generator, not torch's, so the schedule is identical in every environment a
variant runs in). Gaps are rounded to whole nanoseconds once; the offsets are their
running sums, so ``offsets[i + 1] - offsets[i]`` is exactly the recorded gap.
"""

from __future__ import annotations

import random

from traceview.serve.spec import Workload


def poisson_gaps_ns(n: int, rate: float, seed: int) -> list[int]:
    """``n - 1`` exponential inter-arrival gaps (ns) at ``rate`` requests per second."""
    rng = random.Random(seed)
    return [round(rng.expovariate(rate) * 1e9) for _ in range(max(n - 1, 0))]


def arrival_offsets_ns(workload: Workload) -> list[int]:
    """One offset per request, non-decreasing, the first one 0."""
    n = workload.requests
    if workload.arrival == "offline":
        return [0] * n
    assert workload.rate is not None  # Workload refuses poisson arrivals without a rate
    offsets = [0]
    for gap in poisson_gaps_ns(n, float(workload.rate), workload.seed):
        offsets.append(offsets[-1] + gap)
    return offsets


def prompts(workload: Workload, vocab: int, *, warmup: bool = False) -> list[list[int]]:
    """Seeded prompt token ids, ``prompt_len`` each; the warm-up's are a different draw."""
    rng = random.Random(f"{workload.seed}:{'warmup' if warmup else 'measured'}")
    count = workload.batch_size * max(workload.warmup_batches, 1) if warmup else workload.requests
    return [[rng.randrange(vocab) for _ in range(workload.prompt_len)] for _ in range(count)]
