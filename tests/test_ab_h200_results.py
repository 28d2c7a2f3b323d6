"""The H200 `ab` results quoted in docs/ab.md and docs/capture.md, recounted from their
per-process figures with a second implementation of the statistics written here from
the definitions (plain integers and fractions, no traceview code): each round's
difference B - A, the Hodges-Lehmann estimate (median of the Walsh averages), and the
exact Wilcoxon signed-rank interval (the null distribution of the signed-rank sum
enumerated; the widest order statistics whose exact confidence is at least 95%).
The verdict follows from the interval alone. Also the figures the docs state.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

FIX = Path(__file__).resolve().parents[1] / "fixtures"
RESULTS = {
    # file: (verdict word, rounds, a median ns, b median ns) as the docs quote them
    "ab_h200_builtin_vs_handwritten.json": ("B slower", 12, 27631, 29624),
    "ab_h200_flaggems_add_forked.json": ("B faster", 10, 143009, 89195),
    "ab_h200_flaggems_add_forked_2.json": ("B faster", 10, 157165, 124676),
    "ab_h200_flaggems_add_forked_3.json": ("B faster", 10, 124845, 86242),
    "ab_h200_flaggems_add_forked_aa.json": ("cannot tell", 10, 144088, 136551),
    "ab_h200_flaggems_add_same_process_forked.json": ("B faster", 8, 143364, 127952),
}


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


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_the_quoted_h200_result_recounted(name):
    doc = json.loads((FIX / name).read_text())
    word, rounds, a_med, b_med = RESULTS[name]
    by_round = {side: {p["round"]: p["full_api_ns_p50"] for p in doc["sides"][side]["processes"]}
                for side in "AB"}
    assert sorted(by_round["A"]) == sorted(by_round["B"]) and len(by_round["A"]) == rounds
    diffs = [by_round["B"][r] - by_round["A"][r] for r in sorted(by_round["A"])]
    low, high, confidence = _interval(diffs)
    walsh = [Fraction(diffs[i] + diffs[j], 2) for i in range(rounds) for j in range(i, rounds)]
    c = doc["comparisons"]["full_api_ns_p50"]
    assert c["diff_ns"] == diffs
    assert Fraction(c["estimate_ns"]) == _median(walsh)
    assert (Fraction(c["ci_low_ns"]), Fraction(c["ci_high_ns"])) == (low, high)
    assert abs(c["confidence"] - float(confidence)) < 1e-12
    assert c["b_faster_rounds"] == sum(d < 0 for d in diffs)
    verdict = "B faster" if high < 0 else "B slower" if low > 0 else "cannot tell"
    assert verdict == word == c["verdict"]
    assert (c["a_median_ns"], c["b_median_ns"]) == (a_med, b_med)
    for side, key in (("A", "a_median_ns"), ("B", "b_median_ns")):  # the lower median
        values = sorted(by_round[side].values())
        assert c[key] == values[(len(values) - 1) // 2]


def test_the_forked_flaggems_runs_forked_and_fit_the_two_minute_goal():
    """docs/ab.md: every process forked, flag_gems left to the children, 10 rounds whose
    processes together took well under the 120 s the whole command was given."""
    for name in ("ab_h200_flaggems_add_forked.json", "ab_h200_flaggems_add_forked_2.json",
                 "ab_h200_flaggems_add_forked_3.json", "ab_h200_flaggems_add_forked_aa.json"):
        doc = json.loads((FIX / name).read_text())
        start = doc["protocol"]["process_start"]
        assert start["mode"] == "fork" and start["why"] is None
        for t in start["templates"].values():
            assert t["left_out"] == "flag_gems (its import initialises CUDA)"
        walls = [p["wall_ns"] for s in "AB" for p in doc["sides"][s]["processes"]]
        assert len(walls) == 20 and sum(walls) < 80 * 10**9
