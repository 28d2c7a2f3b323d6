"""``traceview.paired.compare`` on real rounds: the per-process figures of saved H200 A/B
runs, against a second implementation of the statistics written here from the
definitions (plain integers and fractions, no traceview code): each round's difference
B - A, the Hodges-Lehmann estimate (median of the Walsh averages), and the exact
Wilcoxon signed-rank interval (the null distribution of the signed-rank sum enumerated;
the widest order statistics whose exact confidence is at least 95%). The verdict follows
from the interval alone.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from traceview.paired import compare

FIX = Path(__file__).resolve().parents[1] / "fixtures"
#: Saved ``traceview ab`` documents with one process per side per round.
RUNS = sorted(p.name for p in FIX.glob("ab_h200_*.json")
              if p.name != "ab_h200_planted_delays.json"  # the calibration's record
              and all(proc.get("round") is not None
                     for s in "AB" for proc in json.loads(p.read_text())["sides"][s]["processes"]))


def _median(xs: list) -> Fraction:
    xs = sorted(xs)
    n = len(xs)
    return Fraction(xs[n // 2]) if n % 2 else Fraction(xs[n // 2 - 1] + xs[n // 2], 2)


def _signed_rank_counts(n: int) -> list[int]:
    """counts[t]: how many of the 2**n sign patterns give signed-rank sum t."""
    counts = [1]
    for rank in range(1, n + 1):
        grown = counts + [0] * rank
        for t, c in enumerate(counts):
            grown[t + rank] += c
        counts = grown
    return counts


def _interval(diffs: list[int]) -> tuple[Fraction, Fraction, Fraction]:
    n = len(diffs)
    walsh = sorted(Fraction(diffs[i] + diffs[j], 2) for i in range(n) for j in range(i, n))
    counts = _signed_rank_counts(n)
    total = 2 ** n
    best = None
    for k in range(1, len(walsh) // 2 + 1):  # interval [walsh[k-1], walsh[M-k]]
        confidence = 1 - Fraction(2 * sum(counts[:k]), total)
        if confidence >= Fraction(95, 100):
            best = (walsh[k - 1], walsh[len(walsh) - k], confidence)
    assert best is not None
    return best


def test_there_are_real_runs_to_check():
    assert len(RUNS) >= 5


@pytest.mark.parametrize("name", RUNS)
def test_paired_compare_on_real_rounds_matches_the_definitions(name):
    doc = json.loads((FIX / name).read_text())
    by_round = {side: {p["round"]: p["full_api_ns_p50"] for p in doc["sides"][side]["processes"]}
                for side in "AB"}
    rounds = sorted(by_round["A"])
    assert rounds == sorted(by_round["B"])
    a = [by_round["A"][r] for r in rounds]
    b = [by_round["B"][r] for r in rounds]
    c = compare(a, b)
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    low, high, confidence = _interval(diffs)
    n = len(diffs)
    walsh = [Fraction(diffs[i] + diffs[j], 2) for i in range(n) for j in range(i, n)]
    assert list(c.diffs) == diffs
    assert Fraction(c.estimate_ns) == _median(walsh)
    assert (Fraction(c.ci_low_ns), Fraction(c.ci_high_ns)) == (low, high)
    assert abs(c.confidence - float(confidence)) < 1e-12
    assert c.b_faster_rounds == sum(d < 0 for d in diffs)
    assert c.verdict == ("B faster" if high < 0 else "B slower" if low > 0 else "cannot tell")
    for values, median in ((a, c.a_median_ns), (b, c.b_median_ns)):  # the lower median
        assert median == sorted(values)[(len(values) - 1) // 2]
