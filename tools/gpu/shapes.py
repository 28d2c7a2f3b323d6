"""Real trace shapes for call finding, each a small script run as __main__.

Run on the GPU machine: ``python3 tools/gpu/shapes.py SHAPE OUTFILE``. Every shape is a
pattern users have: the profiler context sits at module level like in a user's script,
so Python frames (with_stack) show ``shapes.py(N): <module>`` as the outermost frame.
"""
import os
import sys
import time

import torch
import triton
import triton.language as tl
from torch.profiler import ProfilerActivity, profile, record_function, schedule

SHAPE, OUT = sys.argv[1], sys.argv[2]
ACT = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
dev = "cuda"


@triton.jit
def mul_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * tl.load(y_ptr + offs, mask=m), mask=m)


def triton_mul(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    mul_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out


x = torch.randn(1, 4096, device=dev)
y = torch.randn(1, 4096, device=dev)

if SHAPE == "loop_sync":  # for i in range(20): f(); sync  -- no ranges, with_stack
    for _ in range(3):
        triton_mul(x, y)
    torch.cuda.synchronize()
    with profile(activities=ACT, with_stack=True) as prof:
        for _i in range(20):
            triton_mul(x, y)
            torch.cuda.synchronize()
    prof.export_chrome_trace(OUT)
elif SHAPE == "loop_two_ops":  # two ops per iteration, no sync, no ranges, with_stack
    for _ in range(3):
        triton_mul(x, y)
        torch.mul(x, y)
    torch.cuda.synchronize()
    with profile(activities=ACT, with_stack=True) as prof:
        for _i in range(40):
            triton_mul(x, y)
            torch.mul(x, y)
        torch.cuda.synchronize()
    prof.export_chrome_trace(OUT)
elif SHAPE == "loop_cold":  # cold Triton compile inside the loop: 11 calls, with_stack
    with profile(activities=ACT, with_stack=True) as prof:
        for _i in range(11):
            triton_mul(x, y)
            torch.cuda.synchronize()
    prof.export_chrome_trace(OUT)
elif SHAPE in ("user_inductor", "user_inductor_stack"):  # user ranges + Inductor ranges
    f = torch.compile(lambda a, b: (a * b).sin() + 1.0)
    for _ in range(5):
        f(x, y)
    torch.cuda.synchronize()
    with profile(activities=ACT, with_stack=SHAPE.endswith("stack")) as prof:
        for i in range(30):
            with record_function(f"call_{i}"):
                f(x, y)
                torch.cuda.synchronize()
    prof.export_chrome_trace(OUT)
elif SHAPE == "compile_cold":  # torch.compile cold start, no user ranges
    f = torch.compile(lambda a, b: torch.nn.functional.gelu(a * b) + a)
    with profile(activities=ACT, with_stack=False) as prof:
        for _i in range(5):
            f(x, y)
            torch.cuda.synchronize()
    prof.export_chrome_trace(OUT)
elif SHAPE in ("model_schedule", "model_schedule_cold"):  # compiled model, ProfilerStep
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(),
                                torch.nn.Linear(1024, 256)).to(dev)
    cm = torch.compile(model)
    inp = torch.randn(64, 256, device=dev)
    cold = SHAPE.endswith("cold")
    if not cold:
        for _ in range(3):
            cm(inp)
        torch.cuda.synchronize()
    # repeat=1: with the default repeat=0 a new cycle starts after the last step and, on
    # exit, its empty export overwrites the trace (seen for the cold run)
    sched = (schedule(wait=0, warmup=0, active=4, repeat=1) if cold
             else schedule(wait=1, warmup=1, active=5, repeat=1))
    with profile(activities=ACT, schedule=sched, with_stack=False,
                 on_trace_ready=lambda p: p.export_chrome_trace(OUT)) as prof:
        for _step in range(4 if cold else 7):
            cm(inp)
            torch.cuda.synchronize()
            prof.step()
elif SHAPE == "compile_big":  # a real torch.compile cold start, with_stack
    # BIG_K distinct functions, each compiled cold inside the profiled region.
    k = int(os.environ.get("BIG_K", "1"))
    fns = []
    for j in range(k):
        def body(a, b, j=j):
            h = a
            for _ in range(4):
                h = torch.nn.functional.gelu(h * b + j) - h.sin()
            return h.softmax(-1)
        fns.append(torch.compile(body))
    with profile(activities=ACT, with_stack=True) as prof:
        for fn in fns:
            fn(x, y)
            torch.cuda.synchronize()
    t0 = time.time()
    prof.export_chrome_trace(OUT)
    print("export s", round(time.time() - t0, 1), "bytes", os.path.getsize(OUT))
elif SHAPE == "gems_mul":  # FlagGems broadcast mul vs float64
    import flag_gems
    torch.manual_seed(0)
    cases = {
        "contig": ((8, 16, 128, 64), (8, 16, 128, 64), False),
        "bcast": ((8, 16, 128, 64), (8, 1, 128, 64), False),
        "bcast_T": ((8, 16, 128, 64), (8, 1, 128, 64), True),
    }
    for name, (sa, sb, tr) in cases.items():
        a = torch.randn(*sa, device=dev, dtype=torch.bfloat16)
        if tr:
            a = torch.randn(8, 16, 64, 128, device=dev, dtype=torch.bfloat16).transpose(-1, -2)
        b = torch.randn(*sb, device=dev, dtype=torch.bfloat16)
        ref = a.double() * b.double()
        with flag_gems.use_gems():
            got = a * b
        torch.cuda.synchronize()
        err = (got.double() - ref).abs()
        print(name, "stride", a.stride(), b.stride(), "max err", err.max().item(),
              "wrong", int((err > 0.02 + 0.016 * ref.abs()).sum()), "of", err.numel(), flush=True)
else:
    raise SystemExit(f"unknown shape {SHAPE}")
