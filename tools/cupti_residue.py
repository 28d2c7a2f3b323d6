"""Does a finished torch.profiler session slow later launches in the same process?

Times a synchronized torch.mul (1x4096 float32) before any profiling, then after a
profiler session with CUDA activities, then in a fresh child process. This is the
measurement behind capture's choice to take its unprofiled baseline in a fresh process.

    python3 tools/cupti_residue.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time


def p50(fn, sync, n=2000) -> int:
    for _ in range(200):
        fn()
        sync()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        fn()
        sync()
        ts.append(time.perf_counter_ns() - t0)
    return int(statistics.median_low(ts))


def main() -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile

    x, y = torch.randn(1, 4096, device="cuda"), torch.randn(1, 4096, device="cuda")
    fn, sync = (lambda: torch.mul(x, y)), torch.cuda.synchronize
    if "--child" in sys.argv:
        print(p50(fn, sync))
        return
    before = p50(fn, sync)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        for _ in range(10):
            fn()
        sync()
    after = p50(fn, sync)
    fresh = int(subprocess.run([sys.executable, __file__, "--child"], capture_output=True,
                               text=True, check=True).stdout.split()[-1])
    print(f"torch.mul 1x4096 f32, synchronized call p50: before profiling {before} ns; "
          f"after one profiler session {after} ns ({after / before:.2f}x); "
          f"fresh process {fresh} ns")


if __name__ == "__main__":
    main()
