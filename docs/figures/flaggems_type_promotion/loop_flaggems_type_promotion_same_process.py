"""The known before/after's independent check for ``ab --same-process``: a plain loop, no traceview code.

``python3 loop_flaggems_type_promotion_same_process.py PROCS`` runs PROCS fresh processes. Each child imports
``flaggems_type_promotion_fns`` (FlagGems ``add`` under ``use_gems()``, unpatched and patched callables in
one interpreter), builds two 16x4096 bf16 CUDA tensors, warms each side up with 30 calls,
then runs 10 blocks per side in the order A B, B A, A B, ...; a block is 200 calls, each
timed as perf_counter_ns around call + torch.cuda.synchronize. Per process: the median of
each side's 2000 samples and B - A. Prints one JSON line: per process A, B, B - A (ns) and
how many processes had B faster. Written from the issue's definition, apart from
traceview's pair child (ab/ab_pair_child.py), so the two can disagree.
"""

import json
import os
import statistics
import subprocess
import sys
import time

BLOCKS, CALLS, WARMUP = 10, 200, 30


def child() -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import flaggems_type_promotion_fns
    import torch

    a = torch.randn(16, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn_like(a)
    fns = {"A": flaggems_type_promotion_fns.unpatched, "B": flaggems_type_promotion_fns.patched}
    ref = (a.double() + b.double())
    for side, fn in fns.items():
        err = (fn(a, b).double() - ref).abs().max().item()
        assert err < 0.1, (side, err)
        for _ in range(WARMUP):
            fn(a, b)
            torch.cuda.synchronize()
    samples = {"A": [], "B": []}
    for i in range(BLOCKS):
        for side in (("A", "B") if i % 2 == 0 else ("B", "A")):
            fn = fns[side]
            for _ in range(CALLS):
                t0 = time.perf_counter_ns()
                fn(a, b)
                torch.cuda.synchronize()
                samples[side].append(time.perf_counter_ns() - t0)
    med = {s: int(statistics.median_low(v)) for s, v in samples.items()}
    print(json.dumps({"a_ns": med["A"], "b_ns": med["B"], "b_minus_a_ns": med["B"] - med["A"],
                      "hits": flaggems_type_promotion_fns._hits[0]}))


def main() -> None:
    procs = int(sys.argv[1])
    rows = []
    for i in range(procs):
        t0 = time.time()
        out = subprocess.run([sys.executable, __file__, "--child"], capture_output=True,
                             text=True, timeout=150, check=False)
        line = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
        if not line:
            print(out.stderr[-2000:], file=sys.stderr)
            continue
        row = json.loads(line[-1])
        row.update(process=i + 1, wall_s=round(time.time() - t0, 1))
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    diffs = sorted(r["b_minus_a_ns"] for r in rows)
    print(json.dumps({"same_process_loop": rows, "b_faster_processes": sum(d < 0 for d in diffs),
                      "processes": len(rows),
                      "median_b_minus_a_ns": statistics.median(diffs) if diffs else None,
                      "min_max_b_minus_a_ns": [diffs[0], diffs[-1]] if diffs else None}))


if __name__ == "__main__":
    child() if sys.argv[1:] == ["--child"] else main()
