"""traceview beside Holistic Trace Analysis (HTA) on a trace of each shape, one run each.

    PYTHONPATH=. python benchmarks/hta_shapes.py --hta-python /work/venv-hta/bin/python \
        --work /tmp/hta_shapes [--big-mb 450] [--calls 12000] [--cpu 1] \
        [--trace LABEL=PATH ...] [--only LABEL]

The traces (results and method: docs/performance.md):

* real fixtures of each shape: op calls (``torch_mul_1x4096_f32_stack``: 30 captured
  calls, with stacks), many calls (``shape_loop_two_ops``: 80 calls from Python frames),
  training steps (``train_llama_eager``: ProfilerStep ranges, forward and backward
  threads), a cold compile (``fixtures/large/compiled_fn_cold_then_warm``, when present),
  12,000 calls (``fixtures/large/many_calls_torch_triton_mul_h200``: 6,000 torch and
  6,000 Triton mul calls captured on an H200 with stacks by
  ``tools/capture_many_calls_trace.py``, 303 MB of JSON);
* a synthetic trace of ``--calls`` calls (``synth_calls.py``: a numbered range, an op,
  a launch, its kernel and a synchronize per call);
* the big compile trace: ``make_large_trace.py --mb BIG`` (a real H200 ``with_stack``
  cold compile repeated; 2.2 million events at 450 MB).

Each trace is first re-laid out the way Kineto writes one, with a rank
(``bench_hta.kineto_layout``: HTA reads the file line by line to find the rank), and
both tools read that same file. Each tool runs once per trace in a fresh process,
pinned to one core (``taskset -c CPU``), traceview then HTA, under ``/usr/bin/time``:
CPU time (user + sys), wall time and peak RSS. traceview runs ``explain TRACE --format json``; HTA runs its
load and three analyses (``bench_hta.HTA_DRIVER``: temporal breakdown, idle time
breakdown, kernel launch statistics). HTA lives in its own venv (``--hta-python``,
``python3 -m venv`` + ``pip install HolisticTraceAnalysis 'pandas<3'``), never in
traceview's. The table gives each tool's CPU and wall time and peak, and HTA's CPU
time over traceview's (higher is better for traceview); ``WORK/results.json`` has every figure.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_hta  # (same directory)
import synth_calls  # (same directory)

FIXTURES = [
    ("op calls", ROOT / "fixtures" / "torch_mul_1x4096_f32_stack.json.gz"),
    ("many calls", ROOT / "fixtures" / "shape_loop_two_ops.json.gz"),
    ("training steps", ROOT / "fixtures" / "train_llama_eager.json.gz"),
    ("cold compile", ROOT / "fixtures" / "large" / "compiled_fn_cold_then_warm.json.gz"),
    ("12,000 calls (H200)", ROOT / "fixtures" / "large" / "many_calls_torch_triton_mul_h200.json.gz"),
]


def inputs(work: Path, calls: int, big_mb: float,
           extra: list[str] | None = None) -> list[tuple[str, Path]]:
    """(label, source trace) for every shape, making the synthetic ones once; ``extra``:
    more traces, each ``LABEL=PATH``."""
    out = [(label, p) for label, p in FIXTURES if p.exists()]
    for item in extra or []:
        label, _, path = item.partition("=")
        out.append((label, Path(path)))
    synth = work / f"synth_{calls}.json.gz"
    if not synth.exists():
        synth_calls.write(synth, calls)
    out.append((f"{calls:,} calls (synthetic)", synth))
    if big_mb:
        big = work / f"big_{big_mb:g}.json.gz"
        if not big.exists():
            bench_hta.make_large_trace.main(["--mb", str(big_mb), "--out", str(big)])
        out.append((f"compile, {big_mb:g} MB", big))
    return out


def laid_out(src: Path, work: Path) -> Path:
    """The trace in Kineto's layout, alone in a directory (HTA takes a directory)."""
    d = work / "traces" / src.name.removesuffix(".json.gz").removesuffix(".json")
    trace = d / "trace.json.gz"
    if not trace.exists():
        d.mkdir(parents=True, exist_ok=True)
        bench_hta.kineto_layout(src, trace)
    return trace


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hta-python", type=Path, required=True, help="python of HTA's own venv")
    ap.add_argument("--work", type=Path, default=Path("/tmp/hta_shapes"))
    ap.add_argument("--calls", type=int, default=12_000)
    ap.add_argument("--big-mb", type=float, default=450, help="0: leave the big trace out")
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--only", help="run only the shapes whose label contains this")
    ap.add_argument("--trace", action="append", metavar="LABEL=PATH",
                    help="one more trace to run (repeatable)")
    a = ap.parse_args(argv)
    a.work.mkdir(parents=True, exist_ok=True)
    driver = a.work / "hta_driver.py"
    driver.write_text(bench_hta.HTA_DRIVER)
    logs = a.work / "logs"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir()
    rows = []
    for k, (label, src) in enumerate(inputs(a.work, a.calls, a.big_mb, a.trace)):
        if a.only and a.only not in label:
            continue
        trace = laid_out(src, a.work)
        tv = bench_hta.run_one("traceview", [*bench_hta.traceview_cmd(), "explain", str(trace),
                                             "--format", "json"], logs / f"{k}_tv", a.cpu)
        hta = bench_hta.run_one("hta", [str(a.hta_python), str(driver), str(trace.parent)],
                                logs / f"{k}_hta", a.cpu)
        doc = json.loads((logs / f"{k}_tv.out").read_text()) if tv["rc"] == 0 else {}
        failed = [n for n, p in hta.get("hta", {}).get("phases", {}).items() if not p.get("ok")]
        rows.append({"shape": label, "trace": str(src.relative_to(ROOT) if src.is_relative_to(ROOT)
                                                  else src.name),
                     "mb": round(trace.stat().st_size / 1e6, 1),
                     "slices": doc.get("trace", {}).get("slices"),
                     "calls": doc.get("calls", {}).get("count"),
                     "traceview": tv, "hta": hta, "hta_failed": failed,
                     "ok": tv["rc"] == 0 and hta["rc"] == 0})
        (a.work / "results.json").write_text(json.dumps(rows, indent=1, default=str))
        print(_row(rows[-1]), flush=True)
    print("\n| shape | slices | calls | traceview CPU s (wall) | MiB | HTA CPU s (wall) | MiB "
          "| HTA / traceview, CPU |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(_row(r))
    return 0


def _cpu(r: dict) -> float:
    return r["user_s"] + r["sys_s"]


def _row(r: dict) -> str:
    """CPU seconds (user + sys) are the figure compared: on a shared machine other
    processes stretch wall time far more than the CPU time of the run itself."""
    tv, hta = r["traceview"], r["hta"]
    ratio = _cpu(hta) / _cpu(tv) if _cpu(tv) else float("nan")
    note = "" if r["ok"] else " (a run failed: see results.json)"
    if r["hta_failed"]:  # HTA's own exceptions on the trace, recorded by its driver
        note += f" (HTA raised in {', '.join(r['hta_failed'])})"
    return (f"| {r['shape']} | {r['slices'] or 0:,} | {r['calls'] or 0:,} | "
            f"{_cpu(tv):.2f} ({tv['wall_s']:.2f}) | {tv['peak_mb']:.0f} | "
            f"{_cpu(hta):.2f} ({hta['wall_s']:.2f}) | {hta['peak_mb']:.0f} | {ratio:.1f}x{note} |")


if __name__ == "__main__":
    sys.exit(main())
