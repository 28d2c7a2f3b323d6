"""The fleet figures of docs/fleet.md: many rank traces through each engine.

Builds a rank set (a real fixture trace copied N times with ``distributedInfo.rank``
set), then, each in a fresh process:

* ``pool``   — where a local process pool starts paying: in-process (``-j 1``) against a
  two-worker pool (``-j 2``) over growing rank sets, by total stored bytes;
* ``engines`` — N ranks on the local engine (in process, and a pool) and on a local Ray
  cluster with 1 and 2 worker CPUs (``ray start --head --num-cpus K``, stopped after):
  wall time and the driver's peak RSS;
* ``per-rank`` — what one rank costs: a worker's peak RSS analysing one trace, its
  compact report's bytes (what a task sends to the driver), and the straggler rule's
  time on the driver for 1,024 and 10,000 ranks (the measured reports replicated).

Usage: ``python benchmarks/fleet.py [--ranks 16] [--trace fixtures/X.json.gz]
[--skip-ray] [--out results.json]``. Prints a JSON document (and writes it to --out).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TRACE = ROOT / "fixtures" / "flag_gems_add_16x4096_bf16.cold.json.gz"

DRIVER = """
import json, resource, sys, time
import traceview
t0 = time.perf_counter()
r = traceview.analyze_ranks(sys.argv[3:], engine=sys.argv[1], jobs=int(sys.argv[2]) or None,
                            address='auto' if sys.argv[1] == 'ray' else None)
wall = time.perf_counter() - t0
print(json.dumps({"wall_s": wall, "ok": len(r.ok), "failed": len(r.failed),
                  "driver_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

ONE_RANK = """
import json, resource, sys, time
from traceview.multi.ranks import _explain_report
from traceview.options import Options
t0 = time.perf_counter()
b = _explain_report(sys.argv[1], Options())
print(json.dumps({"wall_s": time.perf_counter() - t0, "report_bytes": len(b),
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

RULE = """
import json, sys, time
from traceview.multi.ranks import RankResult, _explain_report, combine
from traceview.options import Options
from traceview.report.model import from_dict
import orjson
reports = [from_dict(orjson.loads(_explain_report(p, Options()))) for p in sys.argv[2:]]
out = {}
for n in map(int, sys.argv[1].split(",")):
    ranks = [RankResult(i, f"r{i}", i, "order", reports[i % len(reports)]) for i in range(n)]
    t0 = time.perf_counter()
    combine(ranks)
    out[n] = time.perf_counter() - t0
print(json.dumps(out))
"""


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def python(code: str, *args: str, extra: dict[str, str] | None = None) -> dict:
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                       env={**env(), **(extra or {})}, cwd=ROOT, timeout=1800)
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-2000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def make_rankset(trace: Path, n: int, where: Path) -> list[str]:
    doc = json.loads(gzip.decompress(trace.read_bytes()))
    out = []
    for r in range(n):
        doc["distributedInfo"] = {"backend": "nccl", "rank": r, "world_size": n}
        p = where / f"rank{r}.json.gz"
        p.write_bytes(gzip.compress(json.dumps(doc).encode(), compresslevel=6))
        out.append(str(p))
    return out


def pool_threshold(files: list[str], counts: list[int], reps: int) -> list[dict]:
    rows = []
    for n in counts:
        subset = files[:n]
        size = sum(os.path.getsize(f) for f in subset)
        best = {}
        for jobs in (1, 2):
            best[jobs] = min(python(DRIVER, "local", str(jobs), *subset)["wall_s"]
                             for _ in range(reps))
        rows.append({"ranks": n, "stored_bytes": size, "in_process_s": round(best[1], 3),
                     "pool_s": round(best[2], 3)})
    return rows


def ray_run(files: list[str], cpus: int, tmp: Path) -> dict:
    ray = shutil.which("ray", path=str(Path(sys.executable).parent)) or "ray"
    port = 26000 + cpus
    proc = subprocess.Popen([ray, "start", "--head", "--block", "--num-cpus", str(cpus),
                             "--port", str(port), "--include-dashboard=false",
                             "--disable-usage-stats", "--temp-dir", str(tmp / f"ray{cpus}")],
                            env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        end = time.monotonic() + 180
        while not any((tmp / f"ray{cpus}").glob("session_*/sockets/raylet")):
            if time.monotonic() > end or proc.poll() is not None:
                raise RuntimeError("ray did not start")
            time.sleep(0.5)
        time.sleep(2)
        extra = {"RAY_ADDRESS": f"127.0.0.1:{port}"}
        python(DRIVER, "ray", "0", *files[:2], extra=extra)  # warm: ships the code once
        return python(DRIVER, "ray", "0", *files, extra=extra)
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
                proc.wait(10)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=16)
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--pool-counts", default="2,4,8,16")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--skip-ray", action="store_true")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="fleet-bench-"))
    try:
        files = make_rankset(args.trace, max(args.ranks, *map(int, args.pool_counts.split(","))),
                             tmp)
        doc: dict = {"trace": str(args.trace.relative_to(ROOT)) if args.trace.is_relative_to(ROOT)
                     else str(args.trace), "trace_bytes": os.path.getsize(files[0]),
                     "cpus": os.cpu_count()}
        doc["per_rank"] = python(ONE_RANK, files[0])
        doc["straggler_rule_s"] = python(RULE, "1024,10000", *files[:4])
        doc["pool"] = pool_threshold(files, [int(c) for c in args.pool_counts.split(",")],
                                     args.reps)
        ranks = files[:args.ranks]
        doc["engines"] = {"ranks": len(ranks),
                          "local_in_process": python(DRIVER, "local", "1", *ranks),
                          "local_pool": python(DRIVER, "local", "2", *ranks)}
        if not args.skip_ray:
            for cpus in (1, 2):
                doc["engines"][f"ray_{cpus}_cpu"] = ray_run(ranks, cpus, tmp)
        text = json.dumps(doc, indent=2)
        print(text)
        if args.out:
            args.out.write_text(text + "\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
