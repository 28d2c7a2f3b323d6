"""Do per-process medians fall into clusters, and does anything recorded explain them?

On the H200 the same call's per-process median sits in one of two clusters (e.g. about
85 us and 140 us), on both sides of an A/B; a round whose two processes land in different
clusters swings by tens of microseconds. :func:`two_clusters` finds such a split in
one side's per-process figures (the best split of the sorted values into a low and a high
group, Otsu's criterion in one dimension) and says whether it is one: both groups hold at
least two processes and the split explains at least :data:`EXPLAINED` of the variance
(one normal cluster of 10 values reaches it 9% of the time, of 20 values 0.2%:
:func:`explained_null`; read a split of fewer than 10 processes as a hint).

:func:`association` asks whether a recorded per-process attribute (the CPU or NUMA node
the process ran on, the GPU clock it saw, where its buffers landed) goes with the cluster:
an exact-in-the-limit permutation test. Categorical attributes: the statistic is how
unevenly the clusters split across the attribute's values (the sum over values of
``|slow count - expected|``); numeric attributes: the difference of the two clusters'
means. ``p`` is ``(1 + #permutations at least as extreme) / (1 + permutations)``; a small
``p`` makes the attribute a suspect, a large one rules it out for these processes.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

#: Fraction of the variance a split must explain to be called two clusters.
EXPLAINED = 0.85


@dataclass(frozen=True)
class Split:
    """The best low/high split of some values."""

    threshold: float  # the low group's largest value: values above it are "high"
    low: int
    high: int
    explained: float  # between-groups variance / total variance
    clustered: bool

    def as_dict(self) -> dict[str, object]:
        return {"threshold_ns": self.threshold, "low": self.low, "high": self.high,
                "explained": round(self.explained, 4), "clustered": self.clustered}


def _ss(values: Sequence[float]) -> float:
    if not values:
        return 0.0
    m = sum(values) / len(values)
    return sum((v - m) ** 2 for v in values)


def two_clusters(values: Sequence[float], explained: float = EXPLAINED) -> Split | None:
    """The split of ``values`` that explains the most variance; None below 4 values or
    when all are equal."""
    v = sorted(float(x) for x in values)
    total = _ss(v)
    if len(v) < 4 or total == 0:
        return None
    best_k, best = 1, -1.0
    for k in range(1, len(v)):
        if v[k] == v[k - 1]:
            continue
        share = 1.0 - (_ss(v[:k]) + _ss(v[k:])) / total
        if share > best:
            best_k, best = k, share
    low, high = best_k, len(v) - best_k
    return Split(threshold=v[best_k - 1], low=low, high=high,
                 explained=best, clustered=min(low, high) >= 2 and best >= explained)


def explained_null(n: int, trials: int = 2000, seed: int = 0) -> float:
    """How often ``n`` normal values (one cluster) reach :data:`EXPLAINED`: the false
    alarm rate of :func:`two_clusters`."""
    rng = random.Random(seed)
    hits = 0
    for _ in range(trials):
        s = two_clusters([rng.gauss(0.0, 1.0) for _ in range(n)])
        hits += bool(s is not None and s.clustered)
    return hits / trials


@dataclass(frozen=True)
class Association:
    """A permutation test of one attribute against cluster membership."""

    attribute: str
    kind: str  # "categorical" or "numeric"
    statistic: float
    p_value: float
    permutations: int

    def as_dict(self) -> dict[str, object]:
        return {"attribute": self.attribute, "kind": self.kind,
                "statistic": round(self.statistic, 6), "p_value": round(self.p_value, 4),
                "permutations": self.permutations}


def _numeric(values: Sequence[Hashable]) -> bool:
    return all(isinstance(x, int | float) and not isinstance(x, bool) for x in values) \
        and len(set(values)) > 3


def _statistic(high: Sequence[bool], attr: Sequence[Hashable], *, numeric: bool) -> float:
    if numeric:
        hi = [float(a) for h, a in zip(high, attr, strict=True) if h]  # type: ignore[arg-type]
        lo = [float(a) for h, a in zip(high, attr, strict=True) if not h]  # type: ignore[arg-type]
        if not hi or not lo:
            return 0.0
        return abs(sum(hi) / len(hi) - sum(lo) / len(lo))
    share = sum(high) / len(high)
    groups: dict[Hashable, list[bool]] = {}
    for h, a in zip(high, attr, strict=True):
        groups.setdefault(a, []).append(h)
    return sum(abs(sum(g) - share * len(g)) for g in groups.values())


def association(name: str, high: Sequence[bool], attr: Sequence[Hashable],
                permutations: int = 2000, seed: int = 0, *,
                categorical: bool = False) -> Association | None:
    """Does ``attr`` go with cluster membership ``high``? None when the attribute is
    missing for a process or takes one value only (nothing to test). ``categorical``:
    numbers that name things (a CPU's id), never compared by size."""
    if len(high) != len(attr) or any(a is None for a in attr) or len(set(attr)) < 2:
        return None
    numeric = not categorical and _numeric(attr)
    observed = _statistic(high, attr, numeric=numeric)
    rng = random.Random(seed)
    labels = list(high)
    extreme = 0
    for _ in range(permutations):
        rng.shuffle(labels)
        extreme += _statistic(labels, attr, numeric=numeric) >= observed - 1e-12
    return Association(attribute=name, kind="numeric" if numeric else "categorical",
                       statistic=observed, p_value=(1 + extreme) / (1 + permutations),
                       permutations=permutations)
