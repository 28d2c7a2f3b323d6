"""The calibration table of docs/ab.md from tools/calibrate_ab_planted_delays_on_gpu.sh's output.

    python tools/summarize_ab_calibration.py OUT_FOLDER... [--fixture fixtures/ab_h200_planted_delays.json]
        [--serve-json cold.json --serve-wall-s 151.2]

Besides the table it prints the acceptance lines: per 10-round run of the planted +1 us,
whether it was resolved (B slower) and whether its interval holds the delay's measured
cost (``truth.jsonl``, tools/planted_delay_truth.py: a plain loop, no traceview; the
truth is the median over its processes' estimates), per run of the A/A whether it was
quiet ("cannot tell"), and, with ``--serve-json``, the cold serve A/B's wall time against
its bound (180 s) with its stages. Each acceptance line ends PASS or FAIL (at least 9 of
10 runs; fewer than 10 runs count the missing ones as failed).

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
from traceview.stats import median

STEPS = {"same_1us": 1000, "same_aa": 0, "fresh_3us": 3000, "fresh_aa": 0}
#: The callable of tools/planted_delay_add.py whose cost tools/planted_delay_truth.py
#: measured, per step.
TRUTH_OF = {"same_1us": "plus_1us", "fresh_3us": "plus_3us"}
RUN = 10
#: Acceptance: runs out of RUN-round runs that must pass, and the cold serve bound.
NEED = 0.9
SERVE_COLD_S = 180


def truths(folders: list[Path]) -> dict[str, dict[str, Any]]:
    """Per delayed callable, its measured cost: the median of the processes' estimates
    (``truth.jsonl``, one line per process), with every process's estimate and interval."""
    seen: dict[str, list[dict[str, Any]]] = {}
    for folder in folders:
        path = folder / "truth.jsonl"
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            if line.startswith("{"):
                row = json.loads(line)
                seen.setdefault(row["b"], []).append(row)
    out = {}
    for b, rows in seen.items():
        est = sorted(r["estimate_ns"] for r in rows)
        mid = len(est) // 2
        out[b] = {"estimate_ns": est[mid] if len(est) % 2 else (est[mid - 1] + est[mid]) / 2,
                  "processes": [{"estimate_ns": r["estimate_ns"], "ci_ns": r["ci_ns"],
                                 "pairs": r["pairs"], "block_calls": r["block_calls"],
                                 "device_name": r.get("device_name")} for r in rows]}
    return out


def accuracy(runs: list[dict[str, Any]], planted_ns: int,
             truth_ns: float | None) -> list[dict[str, Any]]:
    """Per run: ``resolved`` (the planted delay: B slower), ``quiet`` (an A/A: cannot
    tell), ``covers_truth`` (the interval holds the measured cost; None without one)."""
    out = []
    for r in runs:
        lo, hi = r["ci_ns"]
        out.append({"resolved": r["verdict"] == "B slower" if planted_ns else None,
                    "quiet": r["verdict"] == "cannot tell" if not planted_ns else None,
                    "covers_truth": None if truth_ns is None or lo is None or hi is None
                    else lo <= truth_ns <= hi})
    return out


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
                        "recorded_ns": pb["pair_estimate_ns"],
                        "built_first": pa.get("built_first")})
    return out


def round_diff(r: dict[str, Any]) -> int:
    """The round's B - A, recomputed from its blocks."""
    if "a_ref" in r:
        return (block_pairs.estimate(r["b_ref"], r["b"]).estimate_ns
                - block_pairs.estimate(r["a_ref"], r["a"]).estimate_ns)
    return block_pairs.estimate(r["a"], r["b"]).estimate_ns


def build_order_lean(rounds: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The rounds' B - A by which side their process built first: the median over the
    A-first rounds, over the B-first ones, and half their difference (the lean that
    building a side first gives it; alternating by round cancels it in the estimate).
    None for results recorded before the build order alternated."""
    by: dict[str, list[int]] = {"A": [], "B": []}
    for r in rounds:
        if r.get("built_first") in by:
            by[r["built_first"]].append(round_diff(r))
    if not by["A"] or not by["B"]:
        return None
    a_first, b_first = (int(median(by[x])) for x in ("A", "B"))
    return {"a_first_ns": a_first, "b_first_ns": b_first,
            "rounds": [len(by["A"]), len(by["B"])], "lean_ns": round((b_first - a_first) / 2)}


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
                    "block_calls": proto.get("baseline_n")
                    or _chosen(proto.get("block_calls")),
                    "seconds": sum(p["seconds"] or 0 for p in parts), "parts": parts,
                    "rounds": rounds, "build_order": build_order_lean(rounds),
                    "runs": [judge(diffs[i:i + RUN]) for i in range(0, len(diffs), RUN)]}
        truth = truths(folders).get(TRUTH_OF.get(name, ""))
        if truth is not None:
            step["truth"] = truth
        if "runs" in step:
            step["accuracy"] = accuracy(step["runs"], planted,
                                        truth["estimate_ns"] if truth else None)
        out[name] = step
    return out


def _chosen(block_calls: dict[str, Any] | None) -> str | None:
    """The calls per block the processes chose (``protocol.block_calls``), as a range."""
    chosen = [n for n in (block_calls or {}).get("chosen", []) if n is not None]
    if not chosen:
        return None
    return f"{min(chosen)}" if min(chosen) == max(chosen) else f"{min(chosen)}-{max(chosen)}"


def _verdict(passed: int, runs: int) -> str:
    return "PASS" if runs and passed >= NEED * max(runs, RUN) else "FAIL"


def acceptance(summary: dict[str, Any], serve: dict[str, Any] | None = None) -> list[str]:
    """The acceptance lines: per step its runs' counts, each run's row, then serve's."""
    lines = []
    for name, s in summary.items():
        if "accuracy" not in s:
            continue
        acc, runs = s["accuracy"], s["runs"]
        rows = "; ".join(
            f"run {i + 1}: {_us(r['estimate_ns'])} [{_us(r['ci_ns'][0])}, {_us(r['ci_ns'][1])}]"
            + (f" resolved {'yes' if a['resolved'] else 'NO'}" if s["planted_ns"] else
               f" quiet {'yes' if a['quiet'] else 'NO'}")
            + ("" if a["covers_truth"] is None else
               f", covers truth {'yes' if a['covers_truth'] else 'NO'}")
            for i, (r, a) in enumerate(zip(runs, acc, strict=True)))
        n = len(runs)
        if s["planted_ns"]:
            resolved = sum(bool(a["resolved"]) for a in acc)
            lines.append(f"{name}: planted +{s['planted_ns'] / 1e3:g} us resolved in "
                         f"{resolved} of {n} runs of {RUN} rounds: {_verdict(resolved, n)}")
            truth = s.get("truth")
            if truth is None:
                lines.append(f"{name}: no truth measured (truth.jsonl): accuracy not checked: FAIL")
            else:
                covered = sum(bool(a["covers_truth"]) for a in acc)
                each = ", ".join(_us(p["estimate_ns"]) for p in truth["processes"])
                lines.append(f"{name}: interval holds the delay's measured cost "
                             f"{_us(truth['estimate_ns'])} us (plain loop, median of "
                             f"{len(truth['processes'])} processes: {each}) in {covered} of "
                             f"{n} runs: {_verdict(covered, n)}")
        else:
            quiet = sum(bool(a["quiet"]) for a in acc)
            lines.append(f"{name}: A/A cannot tell in {quiet} of {n} runs of {RUN} rounds: "
                         f"{_verdict(quiet, n)}")
        if rows:
            lines.append(f"  {rows}")
        lean = s.get("build_order")
        if lean is not None:
            lines.append(f"  by build order: B - A {_us(lean['a_first_ns'])} us over "
                         f"{lean['rounds'][0]} rounds building A first, "
                         f"{_us(lean['b_first_ns'])} us over {lean['rounds'][1]} building B "
                         f"first: the side built first reads {_lean_words(lean['lean_ns'])} "
                         "(the alternation cancels it)")
    if serve is not None:
        lines.append(f"serve cold: {serve['wall_s']:.1f} s (bound {SERVE_COLD_S} s), "
                     f"complete {serve['complete']}: "
                     + ("PASS" if serve["complete"] and serve["wall_s"] <= SERVE_COLD_S
                        else "FAIL"))
        stages = serve.get("stages_ns") or {}
        if stages:
            lines.append("  stages (s): " + ", ".join(
                f"{k} {v / 1e9:.1f}" for k, v in stages.items() if isinstance(v, int)))
    return lines


def _lean_words(ns: int) -> str:
    """The build-order lean as a size and a direction: a negative lean is the side built
    first reading faster, which "-0.03 us slower" said backwards."""
    return f"{abs(ns) / 1e3:.2f} us {'faster' if ns < 0 else 'slower'}"


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
    ap.add_argument("--serve-json", type=Path, help="the cold serve run's --out")
    ap.add_argument("--serve-wall-s", type=float, help="the cold serve run's wall time")
    args = ap.parse_args(argv)
    summary = summarize(args.folders)
    serve = None
    if args.serve_json is not None:
        try:
            doc = json.loads(args.serve_json.read_text())
        except (OSError, ValueError) as exc:
            print(f"{args.serve_json}: cannot read the serve document: {exc}", file=sys.stderr)
            return 2
        serve = {"wall_s": args.serve_wall_s if args.serve_wall_s is not None else float("inf"),
                 "complete": bool(doc.get("complete")),
                 "stages_ns": (doc.get("protocol") or {}).get("stages_ns")}
    if not summary and serve is None:
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
    if summary:
        print(table(summary))
    print("\n".join(acceptance(summary, serve)))
    return 0


def compact(text: str) -> str:
    """Lists of numbers on one line each (the block medians: a fixture of 100 rounds x 2
    sides x 200 blocks stays readable and a fifth of its indented size)."""
    return re.sub(r"\[[-\d.,\s]*\]", lambda m: re.sub(r"\s+", "", m.group(0)), text)


if __name__ == "__main__":
    sys.exit(main())
