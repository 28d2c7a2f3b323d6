"""Summary statistics over samples: the project's one percentile and median definition.

Percentiles use the nearest-rank definition (the smallest sample with at least p% of
samples at or below it), so every reported percentile is a value that was measured. The
median is the nearest-rank p50: the lower median for an even count (of 1, 2, 3, 4 it is
2). Per-call stats (and the outlier rule's "median of the other calls"), ``diff``, the
ranks' straggler rule, ``ab``'s per-variant medians, capture's baseline and sweep, and
serve's repetitions all use these two functions; ``tests/test_one_median.py`` fails on a
median computed anywhere else. (The Hodges-Lehmann estimates of ``paired.py`` and
``multi/twosample.py`` are a different statistic: the centre of pairwise averages or
differences, defined with the midpoint.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


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


def nearest_rank(sorted_values: Sequence[float], p: float) -> float:
    """The nearest-rank ``p``-th percentile of sorted ``values`` (the project's one
    definition; :func:`percentile` and :func:`median` are this one)."""
    n = len(sorted_values)
    rank = max(1, math.ceil(p / 100 * n))
    return sorted_values[rank - 1]


def percentile(sorted_values: Sequence[int], p: float) -> int:
    return int(nearest_rank(sorted_values, p))


def median(values: Sequence[float]) -> float:
    """The nearest-rank p50 (the lower median) of unsorted ``values``; at least one value."""
    return nearest_rank(sorted(values), 50)


def median_of_array(values: np.ndarray) -> int:
    """:func:`median` of an integer array (at least one value), by a partition at the
    nearest rank instead of a Python sort: the trace's launch durations, 22,000 on a
    mid-sized trace, are asked for it."""
    k = max(1, math.ceil(50 / 100 * values.size)) - 1
    return int(np.partition(values, k)[k])


def medians_by_group(group: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``group`` codes (sorted) and :func:`median` of each one's ``values``,
    from one sort (``sort_within_groups``): a median per kernel over its launches."""
    g, v = sort_within_groups(group, values)
    if g.size == 0:
        return g, v
    starts = np.flatnonzero(np.append(True, g[1:] != g[:-1]))
    counts = np.diff(np.append(starts, g.size))
    rank = np.maximum(1, np.ceil(50 / 100 * counts).astype(np.int64))  # nearest_rank's
    return g[starts], v[starts + rank - 1]


def medians_of_others(values: np.ndarray) -> np.ndarray:
    """For each value, :func:`median` of all the *other* values, from one sort (the
    outlier rule asks this of every call; a sort per call is quadratic). Leaving out the
    value at sorted position ``p`` shifts the order statistics after ``p`` down by one, so
    the others' nearest-rank ``r``-th value is ``a[r - 1]`` when ``p >= r`` and ``a[r]``
    otherwise; ties do not matter (leaving out either of two equal values leaves the same
    multiset). At least two values."""
    n = values.size
    order = np.argsort(values, kind="stable")
    a = values[order]
    r = max(1, math.ceil(50 / 100 * (n - 1)))  # nearest_rank's rank among n - 1 values
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    return np.where(pos >= r, a[r - 1], a[min(r, n - 1)])


def sort_within_groups(group: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (group, value) pairs sorted by group, then value: what ``np.lexsort((values,
    group))`` orders, as two int64 arrays. From one sort of one key, ``group * span +
    value``, where that fits in int64 (groups are codes >= 0): a two-key lexsort took
    several times as long on the per-call function tables of a loop of 6,000 calls.
    Pairs with equal group and value are interchangeable, so the order is the same."""
    group = np.asarray(group, np.int64)
    values = np.asarray(values, np.int64)
    if group.size == 0:
        return group, values
    lo = int(values.min())
    span = int(values.max()) - lo + 1
    if int(group.min()) < 0 or (int(group.max()) + 1) * span >= 2**63:
        order = np.lexsort((values, group))
        return group[order], values[order]
    key = np.sort(group * span + (values - lo))
    return key // span, key % span + lo


def summarize(values: Sequence[int | None]) -> Stats:
    v = sorted(map(int, [x for x in values if x is not None]))
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
