"""Interleaved before/after: ``explain --format json`` of one trace by two or more trees.

    python benchmarks/ab_trees.py TRACE TREE [TREE ...] [--reps 5] [--cpu 1]

Each TREE is a directory holding a ``traceview`` package (a checkout, or
``git archive COMMIT traceview | tar -x -C DIR``). Every rep runs each tree once, in
turn (the order rotated each rep, so every tree runs in every position), as a fresh
process pinned to one core, with the tree as working directory and ``PYTHONPATH`` (so
``python -m traceview`` imports that tree). Printed per run and as medians: user + sys CPU seconds of the child, wall seconds, peak RSS (``ru_maxrss``) and
minor page faults. On a shared or uneven machine only such interleaved runs separate a
10-20% change: sequential batches of one tree then the other drift with the host
(docs/performance.md). ``--check FILE`` also compares each run's
output with FILE, byte for byte (the report holds the trace's path, which is passed on
as an absolute path: make FILE the same way).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def run(tree: Path, trace: Path, cpu: int | None, out: Path | None) -> dict:
    cmd = [sys.executable, "-m", "traceview", "explain", "--format", "json", str(trace)]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu), *cmd]
    # the tree first; anything already on the path (carried wheels) after it
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(tree), os.environ.get("PYTHONPATH", "")) if p))
    with open(out or os.devnull, "wb") as sink:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=tree, env=env, stdout=sink)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
    return {"cpu": ru.ru_utime + ru.ru_stime, "user": ru.ru_utime, "sys": ru.ru_stime,
            "wall": wall, "peak_mib": ru.ru_maxrss / 1024, "minflt": ru.ru_minflt,
            "rc": os.waitstatus_to_exitcode(status)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", type=Path)
    ap.add_argument("trees", type=Path, nargs="+")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=1, help="core to pin to (-1: none)")
    ap.add_argument("--check", type=Path, help="expected output, compared byte for byte")
    args = ap.parse_args(argv)
    trees = [t.resolve() for t in args.trees]
    trace = args.trace.resolve()
    cpu = None if args.cpu < 0 else args.cpu
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"ab_trees.{os.getpid()}.json"
    runs: dict[Path, list[dict]] = {t: [] for t in trees}
    same = True
    for rep in range(args.reps):
        shift = rep % len(trees)  # each tree in each position in turn: no position bias
        for tree in trees[shift:] + trees[:shift]:
            r = run(tree, trace, cpu, out if args.check else None)
            if args.check:
                r["same"] = out.read_bytes() == args.check.read_bytes()
                same &= r["same"]
            runs[tree].append(r)
            print(f"rep {rep} {tree}: cpu {r['cpu']:.2f} (user {r['user']:.2f}, sys "
                  f"{r['sys']:.2f}) wall {r['wall']:.2f} peak {r['peak_mib']:.0f} MiB minflt "
                  f"{r['minflt']} rc {r['rc']}" + (f" same {r['same']}" if args.check else ""),
                  flush=True)
    if args.check:
        out.unlink(missing_ok=True)
    print("| tree | CPU s median (range) | user | sys | wall s | peak MiB | minor faults |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for tree, rs in runs.items():
        def med(k, rs=rs):
            return statistics.median(r[k] for r in rs)
        cpus = [r["cpu"] for r in rs]
        print(f"| {tree} | {med('cpu'):.2f} ({min(cpus):.2f}-{max(cpus):.2f}) | "
              f"{med('user'):.2f} | {med('sys'):.2f} | {med('wall'):.2f} | "
              f"{med('peak_mib'):.0f} | {med('minflt'):.0f} |")
    last = trees[-1]
    for tree in trees[:-1]:  # paired by rep: the last tree's CPU seconds over this one's
        ratios = [b["cpu"] / a["cpu"] for a, b in zip(runs[tree], runs[last], strict=True)]
        print(f"{last.name} / {tree.name} CPU per rep: "
              + " ".join(f"{r:.3f}" for r in ratios)
              + f"; median {statistics.median(ratios):.3f}")
    return 0 if same and all(r["rc"] == 0 for rs in runs.values() for r in rs) else 1


if __name__ == "__main__":
    sys.exit(main())
