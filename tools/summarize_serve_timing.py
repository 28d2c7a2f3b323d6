"""Where a ``traceview serve`` run's wall time went, and its A/B verdicts, from its JSON.

    python tools/summarize_serve_timing.py serve.json [--wall-s 171.4]

Prints one table per stage, in seconds: the template's imports (once for all
processes), each correctness check (its process's wall time, its start to the task, and
the check's phases: model, eager reference, the backend's first calls with their
compiles and autotuning, the bisect, the check again), the repetitions per side (each
process's wall time, start to task, model build and backend entry, warm-up, the measured
pass), the profiled runs, then the A/B rows (estimate, interval, verdict). ``--wall-s``:
the whole command's wall time as the caller measured it, for the share the stages leave
unaccounted (the parent's own start-up, the check cache's version probe, explaining the
profiled traces). Reads only the document: ``tools/measure_serve_default_on_gpu.sh``
runs it on the H200's output.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any


def s(ns: Any) -> str:
    return "-" if ns is None else f"{ns / 1e9:.2f}"


def spread(values: list[int]) -> str:
    if not values:
        return "-"
    return (f"{s(min(values))} / {s(int(statistics.median(values)))} / {s(max(values))}"
            f" (sum {s(sum(values))})")


def lines(doc: dict[str, Any], wall_s: float | None) -> list[str]:
    out: list[str] = []
    accounted = 0
    start = doc["protocol"].get("process_start") or {}
    out.append(f"processes: {start.get('mode', 'not recorded')}"
               + (f" ({start['why']})" if start.get("why") else "")
               + (f"; the first process waited {s(start['waited_ns'])} s for the templates "
                  "(in its wall time below)" if start.get("waited_ns") is not None else ""))
    for label, t in (start.get("templates") or {}).items():
        out.append(f"  template {label}: start {s(t.get('start_ns'))} s, imports "
                   f"{s(t.get('imports_ns'))} s (once), left to each process: "
                   f"{t.get('left_out') or 'nothing'}")
    out.append("correctness (s): process wall | start to task | phases")
    for v in doc["variants"]:
        c = v["correctness"]
        for name in ("check", "recheck"):
            block = c.get(name)
            if not block or "process_wall_ns" not in block:
                if name == "check" and c.get("cached"):
                    out.append(f"  {v['label']}: kept from an earlier run ({c['cached']['path']})")
                continue
            accounted += block["process_wall_ns"]
            phases = ", ".join(f"{k} {s(x)}" for k, x in (block.get("phases_ns") or {}).items())
            out.append(f"  {v['label']} {name} ({block['status']}): "
                       f"{s(block['process_wall_ns'])} | "
                       f"{s((block.get('process_ns') or {}).get('start_to_task'))} | {phases}")
            par = block.get("parallel_compile")
            if par:
                out.append(f"    configs compiled at once: {par.get('configs')} for "
                           f"{par.get('keys')} autotuner keys in {s(par.get('ns'))} s, "
                           f"{par.get('failed')} left to the autotuner"
                           + (f" ({par['why']})" if par.get("why") else ""))
                if par.get("benchmarks") is not None:
                    ms = par.get("bench_ms")
                    out.append(f"    configs benchmarked: {par['benchmarks']} in "
                               f"{s(par.get('bench_ns'))} s ("
                               + (f"{ms[0]} ms warm-up + {ms[1]} ms each" if ms else
                                  "the autotuner's own benchmarker") + ")")
        bis = c.get("bisect")
        if bis:
            out.append(f"  {v['label']} bisect: {len(bis.get('tested') or [])} ops tested, "
                       f"culprits {bis.get('culprits')}, {bis.get('children')} process(es)")
    out.append("repetitions (s), min / median / max: process wall | start to task | "
               "setup | warm-up | measured wall")
    for v in doc["variants"]:
        reps = v["repetitions"]
        walls = [r["process_wall_ns"] for r in reps if r.get("process_wall_ns") is not None]
        accounted += sum(walls)
        out.append(f"  {v['label']} x{len(reps)}: {spread(walls)} | "
                   f"{spread([r['process_ns']['start_to_task'] for r in reps if r.get('process_ns') and r['process_ns'].get('start_to_task') is not None])} | "  # noqa: E501
                   f"{spread([r['setup_ns'] for r in reps])} | "
                   f"{spread([r['warmup_ns'] for r in reps])} | "
                   f"{spread([r['figures']['wall_ns'] for r in reps])}")
    for v in doc["variants"]:
        d = v.get("diagnosis") or {}
        if d.get("process_wall_ns") is not None:
            accounted += d["process_wall_ns"]
            out.append(f"  {v['label']} profiled run: {s(d['process_wall_ns'])} s")
    if wall_s is not None:
        out.append(f"whole command: {wall_s:.1f} s; in the processes above: "
                   f"{accounted / 1e9:.1f} s; elsewhere (parent, template wait, explain): "
                   f"{wall_s - accounted / 1e9:.1f} s")
    ab = doc.get("ab")
    if ab:
        out.append(f"A/B over {ab['rounds']} rounds (B - A, ms): estimate [interval] verdict")
        for name, row in ab["figures"].items():
            out.append(f"  {name}: {row['estimate_ns'] / 1e6:+.2f} "
                       f"[{row['ci_low_ns'] / 1e6:+.2f}, {row['ci_high_ns'] / 1e6:+.2f}] "
                       f"({row['confidence']:.1%}) {row['verdict']}")
    stages = doc["protocol"].get("stages_ns") or {}
    if stages:
        out.append("stages (s, as the parent waited): " + ", ".join(
            f"{k} {s(v)}" for k, v in stages.items()))
    out.append(f"complete: {doc['complete']}, measured: {doc['measured']}, stopped: "
               f"{doc['stopped']}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("document")
    ap.add_argument("--wall-s", type=float, default=None)
    args = ap.parse_args(argv)
    try:
        with open(args.document) as f:
            doc = json.load(f)
    except (OSError, ValueError) as exc:
        print(f"{args.document}: cannot read the serve document: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines(doc, args.wall_s)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
