"""The calibration table of docs/ab.md from tools/calibrate_ab_planted_delays_on_gpu.sh's output.

    python tools/summarize_ab_calibration.py OUT_FOLDER... [--fixture fixtures/ab_h200_planted_delays.json]

Reads ``same_1us.json``, ``same_aa.json``, ``fresh_3us.json`` and ``fresh_aa.json`` (``ab
--out``) and the seconds each step took (the last line of its ``.txt``) from each folder.
The same-process runs are read as consecutive 10-round runs within each folder's ``ab``
invocation (a run never spans two invocations; rounds left over are dropped), the
folders' runs one after the other; each run's rounds are recomputed from the recorded
block medians (``traceview.multi.block_pairs``) and judged with
``traceview.paired.compare``. A fresh-process step is read from the first folder that
has it. ``--fixture`` keeps what the test needs to recompute every verdict: per round,
each side's block medians (and the reference's); steps already in the fixture that
these folders do not have are kept (earlier calibrations), and the table is printed
for all of them.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from traceview.multi import block_pairs
from traceview.paired import compare

STEPS = {"same_1us": 1000, "same_aa": 0, "fresh_3us": 3000, "fresh_aa": 0}
RUN = 10


def _seconds(folder: Path, name: str) -> int | None:
    text = (folder / f"{name}.txt").read_text() if (folder / f"{name}.txt").exists() else ""
    m = re.findall(r"exit (\d+) seconds (\d+)", text)
    return int(m[-1][1]) if m else None


def rounds_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Per round what the estimator needs: block medians per side (and reference)."""
    a, b = (doc["sides"][x]["processes"] for x in ("A", "B"))
    out = []
    for pa, pb in zip(a, b, strict=True):
        if "reference" in pa:
            out.append({"a": pa["blocks_full_ns"], "a_ref": pa["reference"]["blocks_full_ns"],
                        "b": pb["blocks_full_ns"], "b_ref": pb["reference"]["blocks_full_ns"],
                        "recorded_ns": pb["vs_reference_ns"] - pa["vs_reference_ns"]})
        else:
            out.append({"a": pa["blocks_full_ns"], "b": pb["blocks_full_ns"],
                        "recorded_ns": pb["pair_estimate_ns"]})
    return out


def round_diff(r: dict[str, Any]) -> int:
    """The round's B - A, recomputed from its blocks."""
    if "a_ref" in r:
        return (block_pairs.estimate(r["b_ref"], r["b"]).estimate_ns
                - block_pairs.estimate(r["a_ref"], r["a"]).estimate_ns)
    return block_pairs.estimate(r["a"], r["b"]).estimate_ns


def judge(diffs: list[int], alpha: float = 0.05) -> dict[str, Any]:
    c = compare([0] * len(diffs), list(diffs), alpha=alpha, diffs=diffs)
    return {"rounds": c.rounds, "verdict": c.verdict, "estimate_ns": c.estimate_ns,
            "ci_ns": [c.ci_low_ns, c.ci_high_ns], "confidence": c.confidence}


def summarize(folders: list[Path]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, planted in STEPS.items():
        found = [(f, json.loads((f / f"{name}.json").read_text())) for f in folders
                 if (f / f"{name}.json").exists()]
        if not found:
            continue
        until = found[0][1]["protocol"].get("until")
        if until:
            folder, doc = found[0]
            rounds = rounds_of(doc)
            step: dict[str, Any] = {"planted_ns": planted, "seconds": _seconds(folder, name),
                                    "rounds": rounds, "verdict_line": doc["verdict"],
                                    "until": until,
                                    "judged": judge([round_diff(r) for r in rounds],
                                                    until["per_look_alpha"])}
        else:
            proto = found[0][1]["protocol"]
            rounds, parts = [], []
            for folder, doc in found:
                kept = rounds_of(doc)
                kept = kept[:len(kept) - len(kept) % RUN]
                rounds += kept
                parts.append({"rounds": len(kept), "recorded_rounds": len(rounds_of(doc)),
                              "seconds": _seconds(folder, name),
                              "verdict_line": doc["verdict"]})
            diffs = [round_diff(r) for r in rounds]
            step = {"planted_ns": planted, "blocks": proto.get("blocks"),
                    "block_calls": proto.get("baseline_n"),
                    "seconds": sum(p["seconds"] or 0 for p in parts), "parts": parts,
                    "rounds": rounds,
                    "runs": [judge(diffs[i:i + RUN]) for i in range(0, len(diffs), RUN)]}
        out[name] = step
    return out


def _us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e3:+.2f}"


def table(summary: dict[str, Any]) -> str:
    lines = ["| planted delay | mode | rounds | time | verdict | B - A, interval (us) |",
             "|---|---|---:|---:|---|---|"]
    for s in summary.values():
        planted = f"+{s['planted_ns'] / 1e3:g} us" if s["planted_ns"] else "none (A/A)"
        if "runs" in s:
            runs = s["runs"]
            told = sum(r["verdict"] != "cannot tell" for r in runs)
            verdicts = (f"{len(runs) - told} of {len(runs)} cannot tell" if not s["planted_ns"]
                        else f"{sum(r['verdict'] == 'B slower' for r in runs)} of {len(runs)} "
                             "B slower")
            ivs = "; ".join(f"{_us(r['estimate_ns'])} [{_us(r['ci_ns'][0])}, "
                            f"{_us(r['ci_ns'][1])}]" for r in runs)
            calls = f", blocks of {s['block_calls']} calls" if s.get("block_calls") else ""
            invocations = len(s.get("parts") or [None])
            lines.append(f"| {planted} | same process{calls}, {len(runs)} runs of {RUN} "
                         f"rounds ({invocations} invocation{'s' * (invocations > 1)}) "
                         f"| {len(runs) * RUN} | {s['seconds']} s | {verdicts} | {ivs} |")
        else:
            j = s["judged"]
            lines.append(f"| {planted} | fresh processes, --reference torch, --until "
                         f"{s['until']['until']['seconds']:g}s | {j['rounds']} | "
                         f"{s['seconds']} s | {j['verdict']} | {_us(j['estimate_ns'])} "
                         f"[{_us(j['ci_ns'][0])}, {_us(j['ci_ns'][1])}] "
                         f"({j['confidence']:.1%} per look) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", type=Path, nargs="+")
    ap.add_argument("--fixture", type=Path)
    args = ap.parse_args(argv)
    summary = summarize(args.folders)
    if not summary:
        print(f"{', '.join(map(str, args.folders))}: no step results (same_1us.json ...)",
              file=sys.stderr)
        return 2
    if args.fixture:
        kept = {}
        if args.fixture.exists():
            kept = json.loads(args.fixture.read_text())["steps"]
        summary = {**kept, **summary}
        args.fixture.write_text(compact(json.dumps({
            "source": "tools/calibrate_ab_planted_delays_on_gpu.sh on the H200; "
                      "tools/summarize_ab_calibration.py", "steps": summary}, indent=1)) + "\n")
    print(table(summary))
    return 0


def compact(text: str) -> str:
    """Lists of numbers on one line each (the block medians: a fixture of 100 rounds x 2
    sides x 200 blocks stays readable and a fifth of its indented size)."""
    return re.sub(r"\[[-\d.,\s]*\]", lambda m: re.sub(r"\s+", "", m.group(0)), text)


if __name__ == "__main__":
    sys.exit(main())
