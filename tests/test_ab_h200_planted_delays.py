"""The H200 calibration of ``ab`` with planted delays (fixtures/ab_h200_planted_delays.json,
made by tools/calibrate_ab_planted_delays_on_gpu.sh and tools/summarize_ab_calibration.py).

Every round's B - A is recomputed here from the recorded block medians by an independent
count (the lower median of each pair order's differences, written out below), checked
against what the child computed on the H200 and what ``traceview.multi.block_pairs`` gives,
and the verdicts are recomputed from those rounds: the table in docs/ab.md is what the
code's estimator makes of the recorded data, not a copy of numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from traceview.paired import compare

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ab_h200_planted_delays.json"


def _lower_median(values: list[int]) -> int:
    s = sorted(values)
    return s[(len(s) - 1) // 2]


def _by_hand(a: list[int], b: list[int]) -> int:
    d = [y - x for x, y in zip(a, b, strict=True)]
    return round((_lower_median(d[0::2]) + _lower_median(d[1::2])) / 2)


def _round(r: dict) -> int:
    if "a_ref" in r:
        return _by_hand(r["b_ref"], r["b"]) - _by_hand(r["a_ref"], r["a"])
    return _by_hand(r["a"], r["b"])


@pytest.fixture(scope="module")
def steps() -> dict:
    return json.loads(FIXTURE.read_text())["steps"]


def test_every_recorded_round_is_what_the_estimator_gives(steps):
    import sys

    sys.path.insert(0, str(FIXTURE.parents[1] / "tools"))
    from summarize_ab_calibration import round_diff

    for name, step in steps.items():
        for r in step["rounds"]:
            assert _round(r) == r["recorded_ns"] == round_diff(r), name


def _runs(step: dict) -> list:
    d = [_round(r) for r in step["rounds"]]
    return [compare([0] * 10, d[i:i + 10], diffs=d[i:i + 10]) for i in range(0, len(d) - 9, 10)]


def test_same_process_blocks_of_100_calls_miss_the_planted_1us(steps):
    """Blocks of 100 calls (10 per side): the A/A says "cannot tell" in 9 of 9 runs; the
    planted +1 us is resolved in 6 of 9 (the goal was 9 of 10): in the unresolved runs
    one or two processes flipped between a fast and a slow state (24 vs 37 us per call)
    from block to block, and those rounds read -3.7 to +8.2 us."""
    one, aa = _runs(steps["same_1us_blocks100"]), _runs(steps["same_aa_blocks100"])
    assert len(one) == len(aa) == 9
    assert sum(c.verdict == "B slower" for c in one) == 6
    assert not any(c.verdict == "B faster" for c in one)
    assert all(c.verdict == "cannot tell" for c in aa)
    # the resolved runs' intervals hold the planted 1 us (a busy-wait, plus the call)
    assert all(c.ci_low_ns <= 1000 <= c.ci_high_ns + 100 for c in one if c.verdict != "cannot tell")


def test_same_process_blocks_of_5_calls_resolve_the_planted_1us(steps):
    """Blocks of 5 calls (200 per side), the calibration script's setting, in two ab
    invocations (81 + 25 rounds planted, 84 + 27 A/A; runs never span two): a block
    rarely straddles a flip, so every round reads the planted delay (+0.51 to +1.64 us,
    none below zero) and all 10 ten-round runs exclude zero with an interval holding
    1 us; the A/A says "cannot tell" in 9 of 10 (the first run's 10 rounds happened to
    lean negative: -0.20 us [-0.39, -0.00], as a 95% interval allows)."""
    one, aa = steps["same_1us"], steps["same_aa"]
    assert one["block_calls"] == aa["block_calls"] == 5 and one["blocks"] == 200
    assert [p["recorded_rounds"] for p in one["parts"]] == [81, 25]
    assert [p["recorded_rounds"] for p in aa["parts"]] == [84, 27]
    runs_one, runs_aa = _runs(one), _runs(aa)
    assert len(runs_one) == len(runs_aa) == 10
    assert [c.verdict for c in runs_one] == [r["verdict"] for r in one["runs"]]
    assert all(c.verdict == "B slower" for c in runs_one)
    assert all(c.ci_low_ns <= 1000 <= c.ci_high_ns + 100 for c in runs_one)
    assert min(_round(r) for r in one["rounds"]) > 0
    assert sum(c.verdict == "cannot tell" for c in runs_aa) == 9
    # every round pooled: +1.02 us [+0.98, +1.07] planted, -0.03 us [-0.07, +0.01] A/A
    d1 = [_round(r) for r in one["rounds"]]
    d0 = [_round(r) for r in aa["rounds"]]
    pooled1 = compare([0] * len(d1), d1, diffs=d1)
    pooled0 = compare([0] * len(d0), d0, diffs=d0)
    assert (pooled1.estimate_ns, pooled1.ci_low_ns, pooled1.ci_high_ns) == (1024.5, 984.5, 1066)
    assert pooled0.verdict == "cannot tell"
    assert (pooled0.estimate_ns, pooled0.ci_low_ns, pooled0.ci_high_ns) == (-25.5, -66, 11.5)


def test_fresh_processes_with_reference_resolve_3us_within_two_minutes(steps):
    three, aa = steps["fresh_3us"], steps["fresh_aa"]
    for step, verdict in ((three, "B slower"), (aa, "cannot tell")):
        d = [_round(r) for r in step["rounds"]]
        c = compare([0] * len(d), d, alpha=step["until"]["per_look_alpha"], diffs=d)
        assert c.verdict == verdict
        # it stopped at a planned look, or where its time budget ended (the A/A: 13 rounds)
        assert len(d) in step["until"]["looks"] or \
            step["until"]["stopped_because"] == "time budget spent"
    c3 = compare([0] * len(three["rounds"]), [_round(r) for r in three["rounds"]],
                 alpha=three["until"]["per_look_alpha"],
                 diffs=[_round(r) for r in three["rounds"]])
    assert c3.ci_low_ns <= 3000 <= c3.ci_high_ns
    assert three["seconds"] <= 120
