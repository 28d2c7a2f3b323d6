"""Paired A/B statistics over interleaved rounds: is B faster than A, and by how much?

The GPU machine drifts over minutes and one process's median can sit 1.5-2x from the
next one's, so two variants are never compared one after the other. An A/B run is made
of *rounds*; each round runs one fresh process of each side back to back (in an order
that alternates, :func:`interleaved_order`), and the unit of evidence is the round's
paired difference ``d = B - A`` of the two per-process figures. Drift that is slow next
to one round cancels in ``d``.

The estimate and its interval are distribution-free and exact for the sample sizes an
A/B run has (3-50 rounds):

* the **Hodges-Lehmann estimate**: the median of the Walsh averages ``(d_i + d_j) / 2``
  for ``i <= j``;
* its **confidence interval** from the Wilcoxon signed-rank distribution: the
  ``k``-th smallest and ``k``-th largest Walsh averages, where ``k`` is the largest
  count such that ``P(W <= k - 1) <= alpha / 2`` under the null (exact distribution,
  computed by counting sign patterns; Hollander & Wolfe, *Nonparametric Statistical
  Methods*, 3rd ed., section 3.3). The achieved confidence is reported, since with few
  rounds 95% cannot be reached exactly (5 rounds: 93.75% at best).

*Minimum detectable difference*: the half-width of the same interval computed on the
centred differences ``d_i - HL``. A true shift smaller than this would, with the
observed spread, give an interval that covers zero: it is what these rounds on this
machine could have told apart.

Everything is integer nanoseconds in, float nanoseconds out (Walsh averages are halves).
No numpy needed: the counts are tiny.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from traceview.stats import median

Side = Literal["A", "B"]

#: Fewest rounds for which a two-sided interval with confidence above 80% exists.
MIN_ROUNDS = 3


def interleaved_order(rounds: int, seed: int | None = None) -> list[tuple[int, Side]]:
    """The run order: round ``r`` runs both sides back to back, never all of one side first.

    Without a seed the order is balanced ``AB BA AB BA ...``; with a seed each round's
    order is drawn at random (still one of each side per round), so a periodic machine
    state cannot line up with one side.
    """
    rng = random.Random(seed) if seed is not None else None
    order: list[tuple[int, Side]] = []
    for r in range(rounds):
        first: Side
        if rng is None:
            first = "A" if r % 2 == 0 else "B"
        else:
            first = "A" if rng.random() < 0.5 else "B"
        second: Side = "B" if first == "A" else "A"
        order += [(r, first), (r, second)]
    return order


@lru_cache(maxsize=64)
def _signed_rank_counts(n: int) -> tuple[int, ...]:
    """counts[w] = number of the 2**n sign patterns whose positive-rank sum is w."""
    counts = [1] + [0] * (n * (n + 1) // 2)
    top = 0
    for rank in range(1, n + 1):
        top += rank
        for w in range(top, rank - 1, -1):
            counts[w] += counts[w - rank]
    return tuple(counts)


def critical_from_counts(counts: Sequence[int], alpha: float) -> tuple[int, float]:
    """(k, achieved confidence) from an exact null distribution ``counts[w]`` of a rank
    statistic: the largest k with P(W <= k - 1) <= alpha / 2 (k = 0: no interval at this
    confidence). Shared with the two-sample (Mann-Whitney) interval in ``multi.twosample``.
    """
    total = sum(counts)
    cum = 0
    k = 0
    for w, c in enumerate(counts):
        if (cum + c) / total > alpha / 2:
            break
        cum += c
        k = w + 1
    return k, 1.0 - 2 * cum / total


def _critical_k(n: int, alpha: float) -> tuple[int, float]:
    """(k, achieved confidence) of the signed-rank interval for n rounds: the interval is
    the k-th smallest/largest Walsh average."""
    return critical_from_counts(_signed_rank_counts(n), alpha)


def walsh_averages(d: Sequence[float]) -> list[float]:
    """Sorted ``(d_i + d_j) / 2`` for all ``i <= j``."""
    n = len(d)
    return sorted((d[i] + d[j]) / 2 for i in range(n) for j in range(i, n))


def hodges_lehmann(d: Sequence[float]) -> float:
    w = walsh_averages(d)
    m = len(w)
    return w[m // 2] if m % 2 else (w[m // 2 - 1] + w[m // 2]) / 2


def signed_rank_interval(d: Sequence[float], alpha: float = 0.05) -> tuple[float, float, float] | None:
    """(low, high, achieved confidence) for the centre of the differences, or None."""
    n = len(d)
    if n == 0:
        return None
    k, conf = _critical_k(n, alpha)
    if k == 0:
        return None
    w = walsh_averages(d)
    return w[k - 1], w[len(w) - k], conf


@dataclass(frozen=True)
class PairedComparison:
    """B against A over paired rounds. ``diff`` is B - A: negative means B is faster."""

    rounds: int
    a: tuple[int, ...]
    b: tuple[int, ...]
    diffs: tuple[int, ...]
    estimate_ns: float | None
    ci_low_ns: float | None
    ci_high_ns: float | None
    confidence: float | None
    b_faster_rounds: int
    b_slower_rounds: int
    min_detectable_ns: float | None
    a_median_ns: float | None
    b_median_ns: float | None

    @property
    def relative(self) -> float | None:
        """The estimate as a fraction of A's median (negative: B faster)."""
        if self.estimate_ns is None or not self.a_median_ns:
            return None
        return self.estimate_ns / self.a_median_ns

    @property
    def verdict(self) -> Literal["B faster", "B slower", "cannot tell"]:
        if self.ci_low_ns is None or self.ci_high_ns is None:
            return "cannot tell"
        if self.ci_high_ns < 0:
            return "B faster"
        if self.ci_low_ns > 0:
            return "B slower"
        return "cannot tell"


def _median(values: Sequence[float]) -> float | None:
    """The project's one median (``stats.median``: nearest-rank p50, a measured value)."""
    return float(median(values)) if values else None


def compare(a: Sequence[int], b: Sequence[int], alpha: float = 0.05,
            diffs: Sequence[int] | None = None) -> PairedComparison:
    """Paired comparison of per-round figures ``a[r]`` and ``b[r]`` (integer ns).

    ``diffs``: each round's B - A when the round measures it better than ``b[r] - a[r]``
    (both sides in one process: from neighbouring blocks, ``traceview.multi.block_pairs``);
    ``a`` and ``b`` are then shown, not judged."""
    if len(a) != len(b) or (diffs is not None and len(diffs) != len(a)):
        raise ValueError(f"paired rounds differ in number: {len(a)} vs {len(b)}")
    if diffs is None:
        diffs = tuple(int(y) - int(x) for x, y in zip(a, b, strict=True))
    diffs = tuple(int(x) for x in diffs)
    n = len(diffs)
    est = hodges_lehmann(diffs) if n else None
    ci = signed_rank_interval(diffs, alpha) if n else None
    mdd = None
    if ci is not None and est is not None:
        centred = signed_rank_interval([x - est for x in diffs], alpha)
        if centred is not None:
            mdd = (centred[1] - centred[0]) / 2
    return PairedComparison(
        rounds=n,
        a=tuple(int(x) for x in a),
        b=tuple(int(x) for x in b),
        diffs=diffs,
        estimate_ns=est,
        ci_low_ns=None if ci is None else ci[0],
        ci_high_ns=None if ci is None else ci[1],
        confidence=None if ci is None else ci[2],
        b_faster_rounds=sum(1 for x in diffs if x < 0),
        b_slower_rounds=sum(1 for x in diffs if x > 0),
        min_detectable_ns=mdd,
        a_median_ns=_median([float(x) for x in a]),
        b_median_ns=_median([float(x) for x in b]),
    )
