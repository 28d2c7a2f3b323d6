"""Capture a real trace of many op calls: torch's mul and a Triton mul, 6,000 calls each.

The shape users meet when they profile a long loop: thousands of numbered calls of two
implementations in one trace, with Python stacks and shapes recorded. Each call is a
``record_function`` range (``torch_mul#i``, ``triton_mul#i``) around the op and a
synchronize, the same structure ``traceview capture`` writes, so explain sees two call
families of N calls each. The Triton side is a hand-written wrapper (allocate, launch
with a grid), as a kernel author writes one. benchmarks/hta_shapes.py runs traceview and
HTA on it side by side.

``--parts-mb`` cuts the gzipped file into numbered parts of at most that size (the
device machine returns files of at most 16 MiB); ``cat out.part* > out`` joins them.

Run on the GPU machine from the repository root (torch, triton):

    python3 tools/capture_many_calls_trace.py --calls 6000 --out many_calls.json.gz
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=6000, help="calls of each implementation")
    parser.add_argument("--numel", type=int, default=4096)
    parser.add_argument("--out", required=True, help="the gzipped Chrome trace to write")
    parser.add_argument("--record-shapes", action="store_true")
    parser.add_argument("--parts-mb", type=float, default=0.0,
                        help="also cut the gzipped file into parts of at most this many MB")
    args = parser.parse_args()

    import torch
    import triton
    from torch.profiler import ProfilerActivity, profile, record_function

    from traceview.workload.kernels import flat_binary_kernel

    kernel = triton.jit(flat_binary_kernel)

    def triton_mul(a, b):
        out = torch.empty_like(a)
        n = out.numel()
        kernel[(triton.cdiv(n, 1024),)](a, b, out, n, OP="mul", BLOCK=1024, num_warps=4)
        return out

    x = torch.randn(1, args.numel, device="cuda")
    y = torch.randn(1, args.numel, device="cuda")
    torch.testing.assert_close(triton_mul(x, y), torch.mul(x, y))
    for _ in range(20):  # compile and warm both before the profiler starts
        torch.mul(x, y)
        triton_mul(x, y)
    torch.cuda.synchronize()

    started = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 with_stack=True, record_shapes=args.record_shapes) as prof:
        for name, fn in (("torch_mul", torch.mul), ("triton_mul", triton_mul)):
            for i in range(args.calls):
                with record_function(f"{name}#{i}"):
                    fn(x, y)
                    torch.cuda.synchronize()
    profiled_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(raw)
        raw_bytes = os.path.getsize(raw)
        with open(raw, "rb") as src, gzip.open(args.out, "wb", compresslevel=9) as dst:
            shutil.copyfileobj(src, dst)
    if args.parts_mb > 0 and os.path.getsize(args.out) > args.parts_mb * 1e6:
        with open(args.out, "rb") as whole:
            part = 0
            while chunk := whole.read(int(args.parts_mb * 1e6)):
                with open(f"{args.out}.part{part}", "wb") as piece:
                    piece.write(chunk)
                part += 1
        os.remove(args.out)
    print(f"{2 * args.calls} calls profiled in {profiled_s:.1f} s; trace {raw_bytes / 1e6:.1f} MB, "
          f"gzipped {os.path.getsize(args.out) / 1e6:.1f} MB -> {args.out}")


if __name__ == "__main__":
    main()
