"""Summary statistics over samples: the project's one percentile and median definition.

Percentiles use the nearest-rank definition (the smallest sample with at least p% of
samples at or below it), so every reported percentile is a value that was measured. The
median is the nearest-rank p50: the lower median for an even count (of 1, 2, 3, 4 it is
2). Per-call stats, ``diff`` and capture's sweep use these two functions.

One exception, kept here so that it is visible: the ranks' straggler rule centres on
``midpoint_median`` across ranks (of 1, 2, 3, 4: 2.5). That centre is not a measured
sample but a reference between ranks, and with two camps of ranks (three near 100, three
near 300) the lower median would sit in one camp and name the whole other camp as
stragglers (``docs/ranks.md``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Stats:
    n: int
    p50: int | None
    p90: int | None
    p99: int | None
    min: int | None
    max: int | None
    mean: int | None

    def as_dict(self) -> dict[str, int | None]:
        return {"n": self.n, "p50": self.p50, "p90": self.p90, "p99": self.p99,
                "min": self.min, "max": self.max, "mean": self.mean}


def percentile(sorted_values: Sequence[int], p: float) -> int:
    n = len(sorted_values)
    rank = max(1, math.ceil(p / 100 * n))
    return int(sorted_values[rank - 1])


def median(values: Sequence[float]) -> float:
    """The nearest-rank p50 (the lower median) of unsorted ``values``; at least one value."""
    v = sorted(values)
    return v[max(1, math.ceil(len(v) / 2)) - 1]


def midpoint_median(values: Sequence[float]) -> float:
    """The mean of the two middle values for an even count (the straggler rule's centre)."""
    v = sorted(values)
    n = len(v)
    mid = n // 2
    return float(v[mid]) if n % 2 else (v[mid - 1] + v[mid]) / 2


def summarize(values: Sequence[int | None]) -> Stats:
    v = sorted(int(x) for x in values if x is not None)
    if not v:
        return Stats(0, None, None, None, None, None, None)
    return Stats(
        n=len(v),
        p50=percentile(v, 50),
        p90=percentile(v, 90),
        p99=percentile(v, 99),
        min=v[0],
        max=v[-1],
        mean=round(sum(v) / len(v)),
    )
