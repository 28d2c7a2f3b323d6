"""Compare traceview's unprofiled split with an independent staged timing, per stage.

Inputs: ``traceview explain --format json`` of a capture trace (its ``unprofiled`` key,
measured by capture's split child) and the JSON of ``tools/staged_timing_flaggems.py``
for the same op, shape and dtype on the same machine. Stages are matched by code (the
file, first line and name of the frame). Writes (or adds a case to) a fixture:

    python tools/unprofiled_vs_staged.py --case sigmoid_f32 --explain explain.json \
        --staged staged.json --fixture fixtures/unprofiled_h200_flaggems.json

Every figure is integer ns per call. The acceptance rules are checked by
``tests/test_unprofiled_h200.py`` against the fixture; this script prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from traceview.unprofiled.find import _same_file, parse  # noqa: E402


def _key(frame: str) -> tuple[str, int, str] | None:
    p = parse(frame)
    return p


def match(functions: list[dict[str, Any]], stages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for st in stages:
        if not st.get("frame"):
            continue
        want = _key(st["frame"])
        if want is None:
            continue
        hit = None
        for f in functions:
            got = _key(f["name"])
            if got and got[1:] == want[1:] and _same_file(got[0], want[0]):
                hit = f
                break
        rows.append({
            "stage": st["stage"], "frame": hit["name"] if hit else st["frame"],
            "staged_ns": st["ns"], "staged_low_ns": st.get("low_ns"),
            "staged_high_ns": st.get("high_ns"),
            "split_ns": hit["inclusive_ns"] if hit else None,
            "split_low_ns": hit.get("low_ns") if hit else None,
            "split_high_ns": hit.get("high_ns") if hit else None,
            "profiled_ns": hit.get("profiled_ns") if hit else None,
        })
    return rows


def case(explain: dict[str, Any], staged: dict[str, Any]) -> dict[str, Any]:
    u = explain["unprofiled"]
    cap = explain["trace"].get("capture") or {}
    split = (cap.get("baseline") or {}).get("split") or {}
    return {
        "op": staged["op"], "shape": staged["shape"], "dtype": staged["dtype"],
        "method": u["method"], "call_ns": u["call_ns"], "call_low_ns": u["low_ns"],
        "call_high_ns": u["high_ns"], "staged_call_ns": staged["call_ns"],
        "baseline_full_api_ns_p50": (cap.get("baseline") or {}).get("full_api_ns_p50"),
        "profiled_call_ns": u["profiled_call_ns"],
        "categories": u["categories"], "categories_raw_sum_ns": u["categories_raw_sum_ns"],
        "profiled_categories": u["profiled_categories"],
        "calibration": split.get("calibration"), "measuring": u["measuring"],
        "split_measuring_cost_ns": {f["name"]: f.get("measuring_cost_ns")
                                    for f in split.get("functions", [])},
        "wrapper_cost_ns": staged.get("wrapper_cost_ns"),
        "stages": match(u["functions"], staged["stages"]),
        "versions": cap.get("versions"), "device": (cap.get("device") or {}).get("name"),
    }


def table(name: str, c: dict[str, Any]) -> str:
    lines = [f"{name}: call unprofiled {c['call_ns']} ns (split child), staged run "
             f"{c['staged_call_ns']} ns, profiled {c['profiled_call_ns']} ns",
             f"{'stage':44} {'staged':>9} {'split':>9} {'ratio':>6} {'profiled':>9}"]
    for r in c["stages"]:
        ratio = "" if not r["split_ns"] or not r["staged_ns"] else f"{r['split_ns'] / r['staged_ns']:.2f}"
        lines.append(f"{r['stage'][:44]:44} {r['staged_ns']:>9} {r['split_ns'] or '-':>9} "
                     f"{ratio:>6} {r['profiled_ns'] or '-':>9}")
    lines.append(f"categories {c['categories']} (raw sum {c['categories_raw_sum_ns']})")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--case", required=True)
    p.add_argument("--explain", required=True)
    p.add_argument("--staged", required=True)
    p.add_argument("--fixture", required=True)
    a = p.parse_args()
    c = case(json.loads(Path(a.explain).read_text()), json.loads(Path(a.staged).read_text()))
    fx = Path(a.fixture)
    doc = json.loads(fx.read_text()) if fx.exists() else {
        "what": "FlagGems on the H200: traceview's unprofiled split (capture) against an "
                "independent staged timing (tools/staged_timing_flaggems.py)",
        "command": "tools/run_unprofiled_h200.sh", "cases": {}}
    doc["cases"][a.case] = c
    tmp = fx.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, fx)
    print(table(a.case, c))


if __name__ == "__main__":
    main()
