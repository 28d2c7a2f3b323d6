"""diff on a real H200 before/after whose answer is known from the code.

Side B caches FlagGems' per-call type promotion, so ``torch/_prims_common`` ``elementwise_dtypes``
is gone from its calls. The per-call figure is counted here from the raw events (Decimal
microseconds to integer ns, the union of the function's intervals inside each ``call_N``
range, lower median over the calls that contain it) and must equal diff's.
"""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from typer.testing import CliRunner

from traceview.cli.app import app
from traceview.documents import builtins
from traceview.errors import UsageError
from traceview.multi.compare import read_diff

FIX = Path(__file__).resolve().parents[1] / "fixtures"
BEFORE = FIX / "flaggems_add_16x4096_bf16_unpatched.json.gz"
AFTER = FIX / "flaggems_add_16x4096_bf16_patched.json.gz"
AB = FIX / "ab_h200_flaggems_add.json"


def _ns(x) -> int:
    return int(Decimal(x) * 1000)


def per_call_inclusive(path: Path, suffix: str) -> list[int]:
    with gzip.open(path, "rt") as f:
        events = json.load(f, parse_float=Decimal)["traceEvents"]
    calls = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in events
             if e.get("ph") == "X" and e.get("cat") == "user_annotation"
             and e["name"].startswith("call_")]
    spans = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in events
             if e.get("ph") == "X" and e.get("name", "").endswith(suffix)]
    out = []
    for a, b in calls:
        total, cur = 0, None
        for s, t in sorted((max(a, s), min(b, t)) for s, t in spans if s < b and t > a):
            if cur is None or s > cur[1]:
                total += 0 if cur is None else cur[1] - cur[0]
                cur = [s, t]
            else:
                cur[1] = max(cur[1], t)
        total += 0 if cur is None else cur[1] - cur[0]
        if total:
            out.append(total)
    assert len(calls) == 30
    return sorted(out)


def test_the_removed_helper_is_a_gone_code_path_change_with_its_exact_figure():
    before = per_call_inclusive(BEFORE, ": elementwise_dtypes")
    assert len(before) == 30 and per_call_inclusive(AFTER, ": elementwise_dtypes") == []
    r = CliRunner().invoke(app, ["diff", str(BEFORE), str(AFTER), "--ab", str(AB),
                                 "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    rows = {row["function"]: row for row in doc["code_path"]["functions"]}
    key = "torch/_prims_common/__init__.py: elementwise_dtypes"
    # diff reads every function of a trace it analyses: the lists are complete (no "*"),
    # and what went first is gone code (type_promotion, the caller, can lead)
    assert doc["code_path"]["functions"][0]["status"] == "gone"
    row = rows[key]
    assert row["status"] == "gone"
    assert row["before_inclusive_ns_per_call"] == before[(len(before) - 1) // 2]
    assert row["after_inclusive_ns_per_call"] is None
    new = rows["sitecustomize.py: cached_type_promotion"]
    assert new["status"] == "new" and new["before_inclusive_ns_per_call"] is None
    # the speed verdict rests on the unprofiled rounds, which cannot tell here
    assert doc["verdict"].startswith("cannot tell")
    assert "do not judge speed" in doc["verdict"]
    # the document reads back through its typed layout, to the same JSON
    typed = read_diff(doc)
    assert typed.calls.before == 30 and typed.comparisons[0].metric == "calls.api_ns.p50"
    assert builtins(typed) == doc
    with pytest.raises(UsageError, match="comparisons"):
        read_diff({**doc, "comparisons": [{"metric": 1}]})
    with pytest.raises(UsageError, match="schema_version 2"):
        read_diff({**doc, "schema_version": 2})


SAME = FIX / "ab_h200_flaggems_add_same_process.json"
SAME_2 = FIX / "ab_h200_flaggems_add_same_process_2.json"
SAME_AA = FIX / "ab_h200_flaggems_add_same_process_aa.json"
LOOP_SAME = FIX / "loop_h200_flaggems_add_same_process.json"


def _brute_force(diffs: list[int]) -> tuple[Fraction, Fraction, Fraction]:
    """(Hodges-Lehmann, low, high) from the definitions: every Walsh average, and the
    signed-rank null distribution by enumerating all 2**n sign patterns."""
    n = len(diffs)
    walsh = sorted(Fraction(diffs[i] + diffs[j], 2) for i in range(n) for j in range(i, n))
    m = len(walsh)
    hl = walsh[m // 2] if m % 2 else (walsh[m // 2 - 1] + walsh[m // 2]) / 2
    sums = sorted(sum(r + 1 for r in range(n) if mask >> r & 1) for mask in range(2 ** n))
    # k: the largest count with P(W <= k - 1) <= 2.5%
    k = max(k for k in range(n * (n + 1) // 2 + 1)
            if Fraction(sum(1 for w in sums if w <= k - 1), 2 ** n) <= Fraction(1, 40))
    return hl, walsh[k - 1], walsh[m - k]


def _rounds(doc: dict) -> tuple[list[int], list[int]]:
    a = [p["full_api_ns_p50"] for p in sorted(doc["sides"]["A"]["processes"],
                                              key=lambda p: p["round"])]
    b = [p["full_api_ns_p50"] for p in sorted(doc["sides"]["B"]["processes"],
                                              key=lambda p: p["round"])]
    return a, b


def test_same_process_ab_on_the_h200_agrees_with_the_plain_loop_and_excludes_zero():
    """The H200 run of ``ab --same-process`` (16 rounds): B faster, the 95% interval
    excludes zero, and the plain loop with no traceview code (4 processes) agrees in
    sign in every process. Figures recomputed here from the per-process medians."""
    doc = json.loads(SAME.read_text())
    a, b = _rounds(doc)
    assert len(a) == 16 and doc["protocol"]["blocks"] == 10
    hl, low, high = _brute_force([y - x for x, y in zip(a, b, strict=True)])
    c = doc["comparisons"]["full_api_ns_p50"]
    assert (c["a_ns"], c["b_ns"]) == (a, b)
    assert (Fraction(c["estimate_ns"]), Fraction(c["ci_low_ns"]), Fraction(c["ci_high_ns"])) \
        == (hl, low, high)
    assert high < 0 and doc["verdict"].startswith("B (patched) faster")
    # about a tenth of the call: the "real ~10% change" of the issue
    assert Fraction(9, 100) < -hl / sorted(a)[(len(a) - 1) // 2] < Fraction(11, 100)
    loop = json.loads(LOOP_SAME.read_text())
    assert loop["processes"] == 4 and loop["b_faster_processes"] == 4
    assert all(r["b_minus_a_ns"] == r["b_ns"] - r["a_ns"] < 0 for r in loop["same_process_loop"])
    # diff --ab leads with the same verdict, recomputed from the saved rounds
    r = CliRunner().invoke(app, ["diff", str(BEFORE), str(AFTER), "--ab", str(SAME),
                                 "--format", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    fig = out["unprofiled"]["figures"][0]
    assert fig["figure"] == "full_api_ns_p50" and fig["verdict"] == "after faster"
    assert (Fraction(fig["ci_low_ns"]), Fraction(fig["ci_high_ns"])) == (low, high)
    assert out["verdict"].startswith("after faster by 11.2 us")


def test_same_process_a_a_cannot_tell_and_the_device_figures_agree():
    """A/A (one callable under two names, 6 rounds) covers zero; and after the device
    figure was interleaved (the second H200 run), A's and B's graph replays agree,
    where the first run, one side's graph after the other, read B 14% slower."""
    aa = json.loads(SAME_AA.read_text())
    a, b = _rounds(aa)
    _, low, high = _brute_force([y - x for x, y in zip(a, b, strict=True)])
    assert low < 0 < high and aa["verdict"].startswith("cannot tell")
    for path in (SAME_AA, SAME_2):
        dev = json.loads(path.read_text())["comparisons"]["device_ns"]
        assert dev["ci_low_ns"] <= 0 <= dev["ci_high_ns"], path.name
    first = json.loads(SAME.read_text())["comparisons"]["device_ns"]
    assert first["ci_low_ns"] > 0  # the artifact that device_per_op_interleaved removed
    second = json.loads(SAME_2.read_text())
    assert second["comparisons"]["full_api_ns_p50"]["ci_high_ns"] < 0
