"""Reads ``tools/attribute_serve_on_gpu.sh``'s three ``serve --attribute`` documents and
prints what its acceptance asks: each run's whole TPOT effect and top parts, whether the
two repeated runs agree on the top three ops, and whether the planted slowdown is found.

    python tools/attribution_verdicts.py FOLDER PLANTED_OP PLANTED_NS

The planted truth: PLANTED_NS x the op's calls per decode step (from the planted run's
profiled B side; 1 when the profile does not list the op) on TPOT, over what the op
costs unplanted: run1's contribution for it when run1 isolated it; when run1 kept it in
a group, the truth is a range, from the wait alone (the op free unplanted) to the wait
plus the whole group's contribution (every other op of the group free), and the planted
op must be within 25% of both ends.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def load(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text()).get("attribution")
    except (OSError, ValueError) as exc:
        print(f"{path.name}: no document ({exc})")
        return None


def top(att: dict, n: int = 3) -> list[str]:
    return [p["name"] for p in att["parts"]][:n]


def tpot(part: dict) -> dict:
    return part["figures"]["tpot_p50"]


def show(name: str, att: dict) -> None:
    w = att["whole"]["tpot_p50"]
    print(f"{name}: whole TPOT effect {w['estimate_ns'] / 1e6:+.2f} ms "
          f"[{(w['ci_low_ns'] or 0) / 1e6:+.2f}, {(w['ci_high_ns'] or 0) / 1e6:+.2f}], "
          f"interaction {att['interaction']['tpot_p50']['estimate_ns'] / 1e6:+.2f} ms, "
          f"{len(att['parts'])} parts; screening ended: {att['screening_ended']}")
    for p in att["parts"][:6]:
        e = tpot(p)
        print(f"  {p['name'][:60]:60} {e['estimate_ns'] / 1e6:+8.2f} ms "
              f"[{(e['ci_low_ns'] or 0) / 1e6:+.2f}, {(e['ci_high_ns'] or 0) / 1e6:+.2f}]"
              f"{' *' if e['excludes_zero'] else ''} host/step B {p['host_ns_per_step_b']}")


def calls_per_step(folder: Path, op: str) -> float:
    """From the planted run's profiled B side, or CALLS_PER_STEP. The profile counts
    every ``aten::op`` event: a backend op that calls its own ATen overload inside (the
    CPU check's tests/planted_gems computes through ``op.out``) is counted twice."""
    if os.environ.get("CALLS_PER_STEP"):
        return float(os.environ["CALLS_PER_STEP"])
    try:
        doc = json.loads((folder / "planted.json").read_text())
        ops = doc["variants"][1]["diagnosis"]["decode"]["host_ops_per_step"]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return 1.0
    return next((o["calls_per_step"] for o in ops if o["name"] == f"aten::{op}"), 1.0)


def main() -> int:
    folder, op, ns = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    runs = {n: load(folder / f"{n}.json") for n in ("run1", "run2", "planted")}
    for n, att in runs.items():
        if att:
            show(n, att)
    r1, r2, pl = runs["run1"], runs["run2"], runs["planted"]
    if r1 and r2:
        same = set(top(r1)) == set(top(r2))
        print(f"top three parts agree between run1 and run2: {same} "
              f"({top(r1)} vs {top(r2)})")
    if not pl:
        return 1
    parts = {p["name"]: p for p in pl["parts"]}
    if op not in parts:
        print(f"planted: {op} is not a part of its own ({list(parts)})")
        return 1
    wait = ns * calls_per_step(folder, op)
    alone = next((p for p in (r1 or {}).get("parts", []) if p["ops"] == [op]), None)
    group = next((p for p in (r1 or {}).get("parts", []) if op in p["ops"]), None)
    got = tpot(parts[op])["estimate_ns"]
    others = [n for n, p in parts.items() if n != op and tpot(p)["excludes_zero"]]
    if alone is not None or group is None:
        before = tpot(alone)["estimate_ns"] if alone is not None else 0
        truth = wait + before
        within = abs(got - truth) <= 0.25 * truth
        print(f"planted: {op} {got / 1e6:+.2f} ms against truth {truth / 1e6:+.2f} ms "
              f"(busy-wait x calls per step + unplanted {before / 1e6:+.2f} ms"
              f"{'' if alone is not None else ', run1 has no part holding it'}): "
              f"within 25%: {within}; other parts whose interval excludes zero: "
              f"{others or 'none'}")
    else:
        high = wait + max(tpot(group)["estimate_ns"], 0)
        within = abs(got - wait) <= 0.25 * wait and abs(got - high) <= 0.25 * high
        print(f"planted: {op} {got / 1e6:+.2f} ms against truth {wait / 1e6:+.2f}.."
              f"{high / 1e6:+.2f} ms (busy-wait x calls per step, plus at most run1's "
              f"{len(group['ops'])}-op group holding it, {group['name'][:40]}): within 25% "
              f"of both ends: {within}; other parts whose interval excludes zero: "
              f"{others or 'none'}")
    # an op with a real cost of its own excludes zero planted or not: what the plant must
    # not do is move it, so each is set beside its unplanted part (run1's, where run1
    # isolated it): disjoint intervals would show the plant leaking into it
    unplanted = {p["name"]: tpot(p) for p in (r1 or {}).get("parts", [])}
    moved, unknown = [], []
    for n in others:
        if n not in unplanted:
            unknown.append(n)
        elif not _overlap(tpot(parts[n]), unplanted[n]):
            moved.append(n)
    print(f"planted: of those, moved by the plant (interval disjoint from run1's): "
          f"{moved or 'none'}; without an unplanted figure to compare: {unknown or 'none'}")
    return 0 if within and not moved else 1


def _overlap(a: dict, b: dict) -> bool:
    """Whether two parts' TPOT intervals share a point (a missing bound is open)."""
    lo_a, hi_a = a["ci_low_ns"], a["ci_high_ns"]
    lo_b, hi_b = b["ci_low_ns"], b["ci_high_ns"]
    if None in (lo_a, hi_a, lo_b, hi_b):
        return True
    return max(lo_a, lo_b) <= min(hi_a, hi_b)


if __name__ == "__main__":
    sys.exit(main())
