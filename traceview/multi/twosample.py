"""Two independent samples (not paired): the shift between them, with an exact interval.

``diff`` of two captures has, per side, the medians of a few fresh processes that ran
one capture after the other -- not interleaved, so there are no pairs. The shift
``after - before`` is estimated by the **Hodges-Lehmann two-sample estimate** (the
median of all ``m * n`` differences ``b_j - a_i``) with the exact **Mann-Whitney**
confidence interval: the ``k``-th smallest and largest of those differences, where
``k`` is the largest count with ``P(U <= k - 1) <= alpha / 2`` under the null (exact
distribution of U by counting arrangements; Hollander & Wolfe, 3rd ed., section 4.3).

With 3 processes per side no two-sided interval at 95% exists (the most extreme
arrangement has probability 1/20 per tail): the honest answer is "too few processes
to tell".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from traceview.paired import critical_from_counts


@lru_cache(maxsize=256)
def u_counts(m: int, n: int) -> tuple[int, ...]:
    """counts[u] = arrangements of m a's and n b's whose Mann-Whitney U equals u.

    U counts the pairs (a_i, b_j) with b_j < a_i; recurrence on the largest element:
    if it is an a, it beats all n b's (U grows by n); if it is a b, it beats none.
    """
    if m == 0 or n == 0:
        return (1,)
    with_a = u_counts(m - 1, n)
    with_b = u_counts(m, n - 1)
    out = [0] * (m * n + 1)
    for u, c in enumerate(with_a):
        out[u + n] += c
    for u, c in enumerate(with_b):
        out[u] += c
    return tuple(out)


def critical_k(m: int, n: int, alpha: float = 0.05) -> tuple[int, float]:
    """(k, achieved confidence); k = 0: no interval at this confidence for m and n."""
    return critical_from_counts(u_counts(m, n), alpha)


@dataclass(frozen=True)
class Shift:
    """``after - before`` from two independent samples (negative: after is lower)."""

    before: tuple[int, ...]
    after: tuple[int, ...]
    estimate_ns: float | None
    ci_low_ns: float | None
    ci_high_ns: float | None
    confidence: float | None

    @property
    def verdict(self) -> str:
        if self.ci_low_ns is None or self.ci_high_ns is None:
            return "cannot tell"
        if self.ci_high_ns < 0:
            return "after faster"
        if self.ci_low_ns > 0:
            return "after slower"
        return "cannot tell"


def shift(before: Sequence[int], after: Sequence[int], alpha: float = 0.05) -> Shift:
    a, b = tuple(int(x) for x in before), tuple(int(x) for x in after)
    if not a or not b:
        return Shift(a, b, None, None, None, None)
    d = sorted(y - x for x in a for y in b)
    mid = len(d) // 2
    est = float(d[mid]) if len(d) % 2 else (d[mid - 1] + d[mid]) / 2
    k, conf = critical_k(len(a), len(b), alpha)
    if k == 0:
        return Shift(a, b, est, None, None, None)
    return Shift(a, b, est, float(d[k - 1]), float(d[len(d) - k]), conf)
