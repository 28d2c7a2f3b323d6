"""traceview.multi.twosample against brute force: arrangements enumerated, the test inverted."""

import itertools
import random
import statistics

import pytest

from traceview.multi import twosample


def _brute_u_counts(m, n):
    """U = pairs (a, b) with b < a, over every placement of the m a's among m + n ranks."""
    counts = {}
    for a_pos in itertools.combinations(range(m + n), m):
        b_pos = [p for p in range(m + n) if p not in a_pos]
        u = sum(1 for x in a_pos for y in b_pos if y < x)
        counts[u] = counts.get(u, 0) + 1
    return [counts.get(u, 0) for u in range(m * n + 1)]


@pytest.mark.parametrize(("m", "n"), [(1, 1), (1, 3), (2, 2), (3, 3), (3, 4), (4, 4), (5, 3),
                                      (5, 6)])
def test_u_counts_match_enumeration(m, n):
    assert list(twosample.u_counts(m, n)) == _brute_u_counts(m, n)


def _p_two_sided(a, b):
    """Exact two-sided Mann-Whitney p-value by permuting the pooled sample (distinct values)."""
    pooled = a + b
    m = len(a)

    def u(x, y):
        return sum(1 for p in x for q in y if q < p)

    observed = u(a, b)
    centre = len(a) * len(b) / 2
    total = extreme = 0
    for idx in itertools.combinations(range(len(pooled)), m):
        x = [pooled[i] for i in idx]
        y = [pooled[i] for i in range(len(pooled)) if i not in idx]
        total += 1
        extreme += abs(u(x, y) - centre) >= abs(observed - centre)
    return extreme / total


@pytest.mark.parametrize("seed", range(6))
def test_interval_is_the_inverted_exact_test(seed):
    rng = random.Random(seed)
    m, n = rng.choice([(4, 4), (4, 5), (5, 5)])
    a = [rng.randrange(0, 10**6) for _ in range(m)]
    b = [rng.randrange(0, 10**6) + 150_000 for _ in range(n)]
    s = twosample.shift(a, b)
    diffs = sorted(y - x for x in a for y in b)
    assert s.estimate_ns == statistics.median(diffs)
    assert s.ci_low_ns is not None
    # Every shift strictly between two consecutive pairwise differences: inside the
    # interval exactly when the exact test at 5% does not reject b - delta vs a.
    for lo, hi in itertools.pairwise(diffs):
        if hi - lo < 2:
            continue
        delta = (lo + hi) / 2
        inside = s.ci_low_ns < delta < s.ci_high_ns
        p = _p_two_sided(a, [y - delta for y in b])
        assert inside == (p > 0.05), (delta, p, s)


def test_three_per_side_has_no_95_interval():
    s = twosample.shift([100, 101, 102], [200, 201, 202])
    assert s.ci_low_ns is None and s.verdict == "cannot tell"
    assert twosample.critical_k(3, 3)[0] == 0 and twosample.critical_k(4, 4)[0] == 1
