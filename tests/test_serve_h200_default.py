"""The default serving A/B as it ran on the H200, every cache empty
(fixtures/serve_h200_default_cold.json: ``tools/measure_serve_default_on_gpu.sh``'s
``cold.json``, 2026-12-03), read back and recounted: the figures docs/serving.md gives
for it ("How long it takes") are recomputed here from the raw per-request timestamps and
per-process times, and the verdicts from the per-round walls by an independent count
(each round's B - A, all of them positive, which with 6 rounds is the exact signed-rank
test's strongest evidence: every Walsh average above zero)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from traceview.paired import compare

DOC = Path(__file__).resolve().parents[1] / "fixtures" / "serve_h200_default_cold.json"


@pytest.fixture(scope="module")
def doc() -> dict:
    return json.loads(DOC.read_text())


def s(ns: int) -> float:
    return round(ns / 1e9, 1)


def test_where_the_time_went(doc):
    start = doc["protocol"]["process_start"]
    assert start["mode"] == "fork" and list(start["templates"]) == ["A+B"]
    assert s(start["templates"]["A+B"]["imports_ns"]) == 12.8
    a, b = doc["variants"]
    check = b["correctness"]["check"]
    phases = check["phases_ns"]
    assert s(check["process_wall_ns"]) == 74.2 and s(phases["backend"]) == 51.9
    assert (s(phases["bisect"]), s(phases["recheck"])) == (5.5, 0.9)
    assert sum(phases.values()) <= check["process_ns"]["task"] <= check["process_wall_ns"]
    assert check["parallel_compile"] == {"keys": 13, "configs": 348,
                                         "ns": check["parallel_compile"]["ns"], "failed": 0,
                                         "why": None}
    assert s(check["parallel_compile"]["ns"]) == 14.4
    assert b["correctness"]["bisect"]["culprits"] == ["mul"]
    assert len(b["correctness"]["bisect"]["tested"]) == 55
    walls = {v["label"]: [r["process_wall_ns"] for r in v["repetitions"]] for v in (a, b)}
    assert (s(sum(walls["A"])), s(min(walls["A"])), s(max(walls["A"]))) == (18.3, 2.6, 3.6)
    assert (s(sum(walls["B"])), s(min(walls["B"])), s(max(walls["B"]))) == (46.6, 6.9, 9.8)
    reps = b["repetitions"]
    for key, (lo, hi) in (("setup_ns", (1.35, 2.0)), ("warmup_ns", (3.01, 4.3))):
        got = [r[key] for r in reps]
        assert (round(min(got) / 1e9, 2), round(max(got) / 1e9, 1)) == (lo, hi), key
    got = [r["figures"]["wall_ns"] for r in reps]
    assert (round(min(got) / 1e9, 2), round(max(got) / 1e9, 1)) == (2.15, 3.3)
    for v in (a, b):
        for r in v["repetitions"]:  # forked: the task is nearly the whole process
            assert r["process_ns"]["start_to_task"] < 0.05e9
            assert r["setup_ns"] + r["warmup_ns"] <= r["process_ns"]["task"]
    assert (s(a["diagnosis"]["process_wall_ns"]), s(b["diagnosis"]["process_wall_ns"])) == \
        (2.1, 4.6)
    assert doc["complete"] and doc["measured"]


def test_the_verdicts_recounted_from_the_requests(doc):
    a, b = doc["variants"]

    def walls(v: dict) -> dict[int, int]:
        return {r["round"]: max(q["last_token_ns"] for q in r["requests"])
                for r in v["repetitions"]}

    wa, wb = walls(a), walls(b)
    diffs = [wb[k] - wa[k] for k in sorted(wa)]
    assert len(diffs) == 6 and all(d > 0 for d in diffs)  # B slower in every round
    row = doc["ab"]["figures"]["wall"]
    assert row["diffs"] == diffs and row["verdict"] == "B slower"
    c = compare([wa[k] for k in sorted(wa)], [wb[k] for k in sorted(wb)])
    assert (c.ci_low_ns, c.ci_high_ns) == (row["ci_low_ns"], row["ci_high_ns"]) == \
        (min(diffs), max(diffs))  # 6 rounds, 96.9%: the extreme Walsh averages
    assert (round(row["estimate_ns"] / 1e7) / 100, round(row["ci_low_ns"] / 1e7) / 100,
            round(row["ci_high_ns"] / 1e7) / 100) == (1.98, 1.78, 2.75)
    assert all(f["verdict"] == "B slower" for f in doc["ab"]["figures"].values())


def test_the_run_before_the_parallel_compile():
    """Run 1 (fixtures/serve_h200_default_cold_serial_compile.json): the same command,
    the check compiling one config after another; stopped at the script's 203 s limit in
    B's profiled run (``complete`` false), the repetitions and the A/B already written."""
    doc = json.loads((DOC.parent / "serve_h200_default_cold_serial_compile.json").read_text())
    a, b = doc["variants"]
    check = b["correctness"]["check"]
    phases = check["phases_ns"]
    assert "parallel_compile" not in check
    assert s(doc["protocol"]["process_start"]["templates"]["A+B"]["imports_ns"]) == 9.5
    assert s(check["process_wall_ns"]) == 129.7 and s(phases["backend"]) == 109.8
    assert (s(phases["bisect"]), s(phases["recheck"])) == (6.8, 1.2)
    walls = {v["label"]: [r["process_wall_ns"] for r in v["repetitions"]] for v in (a, b)}
    assert (s(sum(walls["A"])), s(min(walls["A"])), s(max(walls["A"]))) == (18.9, 2.5, 3.8)
    assert (s(sum(walls["B"])), s(min(walls["B"])), s(max(walls["B"]))) == (47.4, 6.6, 10.2)
    assert not doc["complete"] and doc["measured"] and b["diagnosis"] is None
    assert all(f["verdict"] == "B slower" for f in doc["ab"]["figures"].values())
