"""Check capture's unprofiled baseline against an independent measurement.

For each case: run ``traceview capture`` as a user would (a subprocess), read the
full-API median it recorded (``baseline.full_api_ns_p50``, taken in its own fresh
process), then time the same call in another fresh process with a loop written here:
``time.perf_counter_ns()``, the call, ``torch.cuda.synchronize()``, median of N, median
over three processes like capture (one process's median can sit far from another's). Prints both medians and their ratio and
exits 1 if a case differs by more than the tolerance.

    PYTHONPATH=. python3 tools/check_baseline.py                 # GPU, default cases
    PYTHONPATH=. python3 tools/check_baseline.py --device cpu --case torch:mul:1x4096:float32
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

DEFAULT_CASES = (
    "triton:mul:1x4096:float32",
    "torch:mul:1x4096:float32",
    "triton:mul:4096x4096:float16",
    "torch:mul:4096x4096:float16",
)


def independent_child(case: str, device: str, n: int) -> None:
    """The reference: build the op's call, warm up, then nothing but the loop."""
    from traceview.workload import config as cfg
    from traceview.workload import device as devmod
    from traceview.workload.impls import build_impl
    from traceview.workload.inputs import make_inputs

    impl_name, op, shape, dtype = case.split(":")
    config = cfg.CaptureConfig(op=op, impl=impl_name, shapes=cfg.parse_shapes(shape), dtype=dtype,
                               device=device).validate()
    with devmod.fresh_compile_caches(config), contextlib.ExitStack() as stack:
        dev = devmod.open_device(config)
        torch = dev.torch
        call = build_impl(config, dev, make_inputs(torch, config, dev.torch_device), stack).call
        sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        for _ in range(20):
            call()
            sync()
        samples = []
        for _ in range(n):
            t0 = time.perf_counter_ns()
            call()
            sync()
            samples.append(time.perf_counter_ns() - t0)
    print(json.dumps({"p50": int(statistics.median_low(samples))}), flush=True)


def captured_p50(case: str, device: str, n: int, work: str) -> tuple[int, list[int]]:
    impl_name, op, shape, dtype = case.split(":")
    out = os.path.join(work, "c.json.gz")
    subprocess.run([sys.executable, "-m", "traceview", "capture", "--op", op, "--impl", impl_name,
                    "--shape", shape, "--dtype", dtype, "--device", device, "--iters", "5",
                    "--no-with-stack", "--baseline-n", str(n), "--out", out],
                   check=True, capture_output=True)
    base = json.loads(gzip.decompress(open(out, "rb").read()))["traceview"]["baseline"]
    return int(base["full_api_ns_p50"]), [p["full_api_ns_p50"] for p in base.get("per_process", [])]


def independent_p50(case: str, device: str, n: int, procs: int = 3) -> tuple[int, list[int]]:
    """Median over ``procs`` fresh processes (as capture does: process medians vary)."""
    values = []
    for _ in range(procs):
        proc = subprocess.run([sys.executable, __file__, "--child", case, "--device", device,
                               "--n", str(n)], check=True, capture_output=True, text=True)
        values.append(json.loads([ln for ln in proc.stdout.splitlines()
                                  if ln.startswith("{")][-1])["p50"])
    return int(statistics.median_low(values)), values


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", help="impl:op:shape:dtype (repeatable)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        independent_child(args.child, args.device, args.n)
        return 0
    failed = False
    print(f"{'case':34} {'capture p50':>12} {'plain p50':>12} {'ratio':>7}")
    with tempfile.TemporaryDirectory() as work:
        for case in args.case or DEFAULT_CASES:
            cap, ind, cap_procs, ind_procs = [], [], [], []
            for r in range(args.rounds):  # alternate which goes first: no order effect
                if r % 2 == 0:
                    c1, cp = captured_p50(case, args.device, args.n, work)
                    i1, ip = independent_p50(case, args.device, args.n)
                else:
                    i1, ip = independent_p50(case, args.device, args.n)
                    c1, cp = captured_p50(case, args.device, args.n, work)
                cap.append(c1), ind.append(i1), cap_procs.extend(cp), ind_procs.extend(ip)
            c, i = statistics.median(cap), statistics.median(ind)
            ratio = c / i
            ok = abs(ratio - 1) <= args.tolerance
            failed |= not ok
            print(f"{case:34} {c:>9.0f} ns {i:>9.0f} ns {ratio:7.3f} {'ok' if ok else 'FAIL'}"
                  f"   (rounds: capture {cap}, plain {ind}; per process: capture {cap_procs}, "
                  f"plain {ind_procs})", flush=True)
    print("all within" if not failed else "NOT all within",
          f"{args.tolerance:.0%} (capture's recorded baseline vs a plain perf_counter_ns + "
          "synchronize loop in a fresh process)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
