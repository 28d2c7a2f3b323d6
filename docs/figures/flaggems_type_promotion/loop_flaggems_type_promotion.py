"""The known before/after's independent check: a plain perf_counter_ns + synchronize loop, no traceview.

``python3 loop_flaggems_type_promotion.py PAIRS PATCH_DIR`` runs PAIRS pairs of fresh processes in
alternating order (AB BA AB ...); side B has PATCH_DIR first on PYTHONPATH and
TV13_PATCH=1 (the cached FlagGems type promotion). Each child: FlagGems ``add`` of two
16x4096 bf16 CUDA tensors through ``flag_gems.use_gems()``, 30 warm-up calls, then the
median of 300 calls each timed as perf_counter_ns around call + torch.cuda.synchronize.
Prints one JSON line: per pair A, B and B - A (ns), and how many pairs had B faster.
"""

import json
import os
import statistics
import subprocess
import sys
import time


def child() -> None:
    import importlib

    import flag_gems
    import torch

    # the module: flag_gems.utils re-exports a *function* named pointwise_dynamic
    pointwise_dynamic = importlib.import_module("flag_gems.utils.pointwise_dynamic")

    a = torch.randn(16, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn_like(a)
    with flag_gems.use_gems():
        for _ in range(30):
            torch.add(a, b)
            torch.cuda.synchronize()
        samples = []
        for _ in range(300):
            t0 = time.perf_counter_ns()
            torch.add(a, b)
            torch.cuda.synchronize()
            samples.append(time.perf_counter_ns() - t0)
    print(json.dumps({"p50_ns": int(statistics.median_low(samples)),
                      "patched": pointwise_dynamic.type_promotion.__name__
                      == "cached_type_promotion"}))


def run(side: str, patch_dir: str) -> dict:
    env = dict(os.environ)
    if side == "B":
        env["PYTHONPATH"] = patch_dir + os.pathsep + env.get("PYTHONPATH", "")
        env["TV13_PATCH"] = "1"
    out = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    return json.loads([ln for ln in out.splitlines() if ln.startswith("{")][-1])


def main() -> None:
    pairs, patch_dir = int(sys.argv[1]), sys.argv[2]
    rows = []
    for i in range(pairs):
        order = ("A", "B") if i % 2 == 0 else ("B", "A")
        got = {s: run(s, patch_dir) for s in order}
        rows.append({"pair": i + 1, "order": "".join(order), "a_ns": got["A"]["p50_ns"],
                     "b_ns": got["B"]["p50_ns"], "b_minus_a_ns": got["B"]["p50_ns"]
                     - got["A"]["p50_ns"], "b_patched": got["B"]["patched"],
                     "a_patched": got["A"]["patched"]})
    faster = sum(r["b_minus_a_ns"] < 0 for r in rows)
    print(json.dumps({"plain_loop": rows, "b_faster_pairs": faster, "pairs": pairs,
                      "median_b_minus_a_ns": statistics.median(r["b_minus_a_ns"] for r in rows)}))


if __name__ == "__main__":
    child() if sys.argv[1:] == ["--child"] else main()
