"""tools/attribution_verdicts.py, the GPU planted check's judge, on documents written here
with known parts: the planted op's size against its truth, and another part with a real
cost of its own told apart from one the plant moved (its interval disjoint from its
unplanted run's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MS = 1_000_000


def part(name: str, est: int, lo: int, hi: int) -> dict:
    return {"name": name, "ops": name.split("+"), "host_ns_per_step_b": 0,
            "figures": {"tpot_p50": {"estimate_ns": est, "ci_low_ns": lo, "ci_high_ns": hi,
                                     "excludes_zero": lo > 0 or hi < 0}}}


def doc(*parts: dict) -> dict:
    whole = sum(p["figures"]["tpot_p50"]["estimate_ns"] for p in parts)
    fig = {"estimate_ns": whole, "ci_low_ns": whole, "ci_high_ns": whole}
    return {"attribution": {"parts": list(parts), "whole": {"tpot_p50": fig},
                            "interaction": {"tpot_p50": {"estimate_ns": 0}},
                            "screening_ended": "test"}}


def judge(tmp_path: Path, run1: dict, planted: dict) -> tuple[int, str]:
    (tmp_path / "run1.json").write_text(json.dumps(run1))
    (tmp_path / "planted.json").write_text(json.dumps(planted))
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "attribution_verdicts.py"),
                           str(tmp_path), "argmax", str(5 * MS)], capture_output=True,
                          text=True, env={**os.environ, "CALLS_PER_STEP": "1"}, check=False)
    return done.returncode, done.stdout


def test_a_real_cost_the_plant_did_not_move_passes(tmp_path):
    run1 = doc(part("mm", 7 * MS, 5 * MS, 9 * MS))
    planted = doc(part("argmax", 6 * MS, 2 * MS, 8 * MS), part("mm", 8 * MS, 6 * MS, 10 * MS))
    rc, out = judge(tmp_path, run1, planted)
    assert "within 25%: True" in out and "excludes zero: ['mm']" in out
    assert "moved by the plant (interval disjoint from run1's): none" in out
    assert rc == 0, out


def test_a_part_the_plant_moved_fails(tmp_path):
    run1 = doc(part("mm", 1 * MS, -1 * MS, 2 * MS))
    planted = doc(part("argmax", 5 * MS, 4 * MS, 6 * MS), part("mm", 6 * MS, 5 * MS, 7 * MS))
    rc, out = judge(tmp_path, run1, planted)
    assert "moved by the plant (interval disjoint from run1's): ['mm']" in out
    assert rc == 1, out


def test_a_planted_op_off_by_more_than_a_quarter_fails(tmp_path):
    rc, out = judge(tmp_path, doc(), doc(part("argmax", int(0.14 * MS), 10_000, 240_000)))
    assert "within 25%: False" in out and rc == 1, out


def test_an_op_run1_kept_in_a_group_is_judged_against_both_ends_of_its_range(tmp_path):
    # unplanted, argmax costs between nothing and its whole group's +2 ms: truth 5..7 ms
    run1 = doc(part("argmax+bitwise_not", 2 * MS, 1 * MS, 3 * MS))
    rc, out = judge(tmp_path, run1, doc(part("argmax", int(5.6 * MS), 4 * MS, 7 * MS)))
    assert "truth +5.00..+7.00 ms" in out and "within 25% of both ends: True" in out, out
    assert rc == 0, out
    # 4.2 ms is within a quarter of 5 ms but not of 7 ms: the range does not excuse it
    rc, out = judge(tmp_path, run1, doc(part("argmax", int(4.2 * MS), 3 * MS, 5 * MS)))
    assert "within 25% of both ends: False" in out and rc == 1, out
