"""traceview.paired against brute force: sign patterns enumerated, the test inverted by hand."""

import itertools
import random

import pytest

from traceview import paired


def _brute_counts(n):
    counts = {}
    for signs in itertools.product((0, 1), repeat=n):
        w = sum(r + 1 for r, s in enumerate(signs) if s)
        counts[w] = counts.get(w, 0) + 1
    return [counts.get(w, 0) for w in range(n * (n + 1) // 2 + 1)]


@pytest.mark.parametrize("n", range(1, 11))
def test_signed_rank_counts_match_enumeration(n):
    assert list(paired._signed_rank_counts(n)) == _brute_counts(n)


def _w_plus(d):
    """Wilcoxon W+ by hand: ranks of |d| (distinct in these tests), summed over d > 0."""
    order = sorted(range(len(d)), key=lambda i: abs(d[i]))
    rank = {i: r + 1 for r, i in enumerate(order)}
    return sum(rank[i] for i in range(len(d)) if d[i] > 0)


def _not_rejected(d, alpha):
    """Exact two-sided signed-rank test at level alpha, by enumerating sign patterns."""
    n = len(d)
    counts = _brute_counts(n)
    total = 2 ** n
    w = _w_plus(d)
    lower = sum(counts[: w + 1]) / total
    upper = sum(counts[w:]) / total
    return 2 * min(lower, upper) > alpha


@pytest.mark.parametrize("seed", range(12))
def test_interval_is_the_inverted_test(seed):
    rng = random.Random(seed)
    n = rng.randint(6, 10)
    d = [rng.randint(-50_000, 20_000) for _ in range(n)]
    low, high, conf = paired.signed_rank_interval(d, 0.05)
    assert 0.95 <= conf < 1
    # the test inverted by hand: shifts just inside the interval are not rejected,
    # shifts just outside are (Walsh averages are halves: step by a quarter)
    for theta, inside in ((low + 0.25, True), (high - 0.25, True),
                          (low - 0.25, False), (high + 0.25, False)):
        shifted = [x - theta for x in d]
        assert _not_rejected(shifted, 1 - conf + 1e-12) == inside, (theta, inside)


def test_hodges_lehmann_by_hand():
    d = [-10, -4, 2]
    # Walsh averages: -10, -7, -4, -4, -1, 2 -> median (-4 + -4) / 2
    assert paired.walsh_averages(d) == [-10, -7, -4, -4, -1, 2]
    assert paired.hodges_lehmann(d) == -4


def test_too_few_rounds_cannot_tell():
    c = paired.compare([100, 110], [90, 95])
    assert c.ci_low_ns is None and c.verdict == "cannot tell"
    assert c.b_faster_rounds == 2


def test_clear_shift_is_found_with_sign():
    rng = random.Random(1)
    a = [100_000 + rng.randint(-30_000, 30_000) for _ in range(10)]
    b = [x - 10_000 + rng.randint(-1_000, 1_000) for x in a]
    c = paired.compare(a, b)
    assert c.verdict == "B faster"
    assert c.ci_low_ns <= -10_000 <= c.ci_high_ns
    assert c.b_faster_rounds == 10 and c.min_detectable_ns < 2_000


def test_interleaved_order_never_runs_one_side_first():
    for seed in (None, 0, 1, 2):
        order = paired.interleaved_order(6, seed)
        assert len(order) == 12
        for r in range(6):
            assert sorted(s for rr, s in order if rr == r) == ["A", "B"]
        assert order[0][1] != order[2][1] or seed is not None


def test_per_variant_medians_are_the_projects_median():
    """A and B medians are ``stats.median`` (nearest rank: a measured round), not the
    midpoint of the two middle rounds."""
    from traceview.paired import compare as paired_compare

    c = paired_compare([100, 400, 200, 300], [90, 380, 210, 290])
    assert (c.a_median_ns, c.b_median_ns) == (200.0, 210.0)  # a midpoint would say 250, 250
    assert c.relative == c.estimate_ns / 200
