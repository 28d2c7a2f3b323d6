"""diff on a real H200 before/after whose answer is known from the code (issue #13).

Side B caches FlagGems' per-call type promotion, so ``torch/_prims_common`` ``elementwise_dtypes``
is gone from its calls. The per-call figure is counted here from the raw events (Decimal
microseconds to integer ns, the union of the function's intervals inside each ``call_N``
range, lower median over the calls that contain it) and must equal diff's.
"""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path

from typer.testing import CliRunner

from traceview.cli.app import app

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


def test_the_removed_helper_is_the_top_code_path_change_with_its_exact_figure():
    before = per_call_inclusive(BEFORE, ": elementwise_dtypes")
    assert len(before) == 30 and per_call_inclusive(AFTER, ": elementwise_dtypes") == []
    r = CliRunner().invoke(app, ["diff", str(BEFORE), str(AFTER), "--ab", str(AB),
                                 "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    rows = {row["function"]: row for row in doc["code_path"]["functions"]}
    key = "torch/_prims_common/__init__.py: elementwise_dtypes"
    row = doc["code_path"]["functions"][0]
    assert row["function"] == key and row["status"].startswith("gone")
    assert row["before_inclusive_ns_per_call"] == before[(len(before) - 1) // 2]
    assert row["after_inclusive_ns_per_call"] is None
    new = rows["sitecustomize.py: cached_type_promotion"]
    assert new["status"].startswith("new") and new["before_inclusive_ns_per_call"] is None
    # the speed verdict rests on the unprofiled rounds, which cannot tell here
    assert doc["verdict"].startswith("cannot tell")
    assert "do not judge speed" in doc["verdict"]
