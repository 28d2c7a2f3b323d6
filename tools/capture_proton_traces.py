"""Capture real Triton Proton profiles (trace and tree) of a Triton mul on a GPU.

Usage, on the GPU machine::

    python3 tools/capture_proton_traces.py OUTDIR

Each capture runs in its own ``proton.start(...)``/``proton.finalize()`` session, in one
process, after the kernels are compiled and warmed up (so no compile lands in a profile):

- ``proton_mul_20_calls.chrome_trace``: ``data="trace"``; 20 calls of a Triton mul
  (1x4096 fp32), each inside ``proton.scope("call_i")``.
- ``proton_nested.chrome_trace``: ``data="trace"``; 4 steps, each
  ``step_j > forward (mul, add) , backward > grad (mul, mul), add``: nested scopes and
  several kernels per scope.
- ``proton_mul_20_calls.hatchet``: the default tree, ``hook="triton"``: the kernels'
  ``launch_metadata`` gives ``flops32`` and ``bytes`` per launch.
- ``proton_nested.hatchet``: the nested program as a tree, ``hook="triton"``, plus
  ``proton.scope(name, {"flops": ..., "bytes": ...})`` on the backward scope (Proton's
  metrics API on a scope).
- ``capture_info.json``: what the script knows without the profiler: versions, device,
  the program (scope names, kernels launched per scope, element counts), and which
  captures succeeded or why not.

Each capture is tried on its own; a failure is printed with its reason and recorded in
``capture_info.json``, and the others still run. Without a GPU (or with
``PROTON_CAPTURE_DRY=1``) the script checks its imports and prints the plan only: Proton
needs a real device (Triton's interpreter does not profile).
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback

NUMEL = 4096
CALLS = 20
STEPS = 4


def plan() -> dict:
    """The program each capture runs, written down independently of the profiler."""
    nested_step = {"forward": ["mul_kernel", "add_kernel"],
                   "backward": ["add_kernel"], "backward/grad": ["mul_kernel", "mul_kernel"]}
    return {
        "numel": NUMEL, "dtype": "float32",
        "mul_20_calls": {"scopes": [f"call_{i}" for i in range(CALLS)],
                         "kernels_per_scope": ["mul_kernel"]},
        "nested": {"steps": [f"step_{j}" for j in range(STEPS)], "per_step": nested_step},
        "flops_per_mul": NUMEL, "bytes_per_mul": 3 * NUMEL * 4,
        "flops_per_add": NUMEL, "bytes_per_add": 3 * NUMEL * 4,
        "backward_scope_metrics": {"flops": 3 * NUMEL, "bytes": 9 * NUMEL * 4},
    }


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    info: dict = {"plan": plan(), "captures": {}}
    try:
        import torch
        import triton
        import triton.language as tl
        import triton.profiler as proton
    except Exception as exc:  # noqa: BLE001 - the reason is the output
        print(f"capture_proton_traces: cannot import torch/triton/proton: {exc!r}")
        return 1
    info["versions"] = {"torch": torch.__version__, "triton": triton.__version__,
                        "python": sys.version.split()[0]}
    gpu = torch.cuda.is_available() and not os.environ.get("PROTON_CAPTURE_DRY")
    info["device"] = torch.cuda.get_device_name() if gpu else "none"
    print(f"capture_proton_traces: torch {torch.__version__}, triton {triton.__version__},"
          f" device {info['device']}")
    interpret = os.environ.get("TRITON_INTERPRET") == "1"
    if not gpu and not interpret:
        print("capture_proton_traces: no GPU (or PROTON_CAPTURE_DRY): plan only")
        print(json.dumps(info["plan"], indent=1))
        _write_info(outdir, info)
        return 0
    dev = "cuda" if gpu else "cpu"

    def _meta(grid, kernel, args):
        n = args["n"]
        return {"flops32": n, "bytes": 3 * n * 4}

    @triton.jit(launch_metadata=_meta)
    def mul_kernel(x, y, out, n, BLOCK: tl.constexpr):
        off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = off < n
        tl.store(out + off, tl.load(x + off, mask=m) * tl.load(y + off, mask=m), mask=m)

    @triton.jit(launch_metadata=_meta)
    def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
        off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = off < n
        tl.store(out + off, tl.load(x + off, mask=m) + tl.load(y + off, mask=m), mask=m)

    x = torch.randn(1, NUMEL, device=dev)
    y = torch.randn(1, NUMEL, device=dev)
    out = torch.empty_like(x)
    grid = (triton.cdiv(NUMEL, 1024),)

    def mul():
        mul_kernel[grid](x, y, out, NUMEL, BLOCK=1024)

    def add():
        add_kernel[grid](x, y, out, NUMEL, BLOCK=1024)

    # compile and warm both kernels before any session, and check the result once
    def sync():
        if gpu:
            torch.cuda.synchronize()

    for _ in range(3):
        mul()
        add()
    sync()
    mul()
    sync()
    if not torch.equal(out, x * y):
        print("capture_proton_traces: the Triton mul is wrong; stopping")
        return 1

    def mul_20_calls():
        for i in range(CALLS):
            with proton.scope(f"call_{i}"):
                mul()
        sync()

    def nested(*, scope_metrics: bool):
        p = info["plan"]["backward_scope_metrics"]
        for j in range(STEPS):
            with proton.scope(f"step_{j}"):
                with proton.scope("forward"):
                    mul()
                    add()
                with proton.scope("backward", dict(p) if scope_metrics else None):
                    with proton.scope("grad"):
                        mul()
                        mul()
                    add()
        sync()

    if not gpu:
        # the interpreter runs the kernels but Proton does not profile them: check the
        # program and stop
        mul_20_calls()
        nested(scope_metrics=True)
        print("capture_proton_traces: interpreter run of both programs ok; no profiles")
        _write_info(outdir, info)
        return 0

    captures = [
        ("proton_mul_20_calls", "trace", None, mul_20_calls),
        ("proton_nested", "trace", None, lambda: nested(scope_metrics=False)),
        ("proton_mul_20_calls", "tree", "triton", mul_20_calls),
        ("proton_nested", "tree", "triton", lambda: nested(scope_metrics=True)),
    ]
    for name, data, hook, body in captures:
        ext = "chrome_trace" if data == "trace" else "hatchet"
        key = f"{name}.{ext}"
        base = os.path.join(outdir, name)
        t0 = time.perf_counter_ns()
        try:
            proton.start(base, data=data, hook=hook)
            body()
            proton.finalize()
        except Exception as exc:  # noqa: BLE001 - recorded, the next capture still runs
            info["captures"][key] = {"ok": False, "error": repr(exc)}
            print(f"capture_proton_traces: {key}: FAILED {exc!r}")
            traceback.print_exc()
            try:
                proton.finalize()
            except Exception:  # noqa: BLE001
                pass
            continue
        written = [f for f in os.listdir(outdir) if f.startswith(name + ".")]
        path = os.path.join(outdir, key)
        ok = os.path.exists(path)
        info["captures"][key] = {"ok": ok, "data": data, "hook": hook, "files": sorted(written),
                                 "wall_ns": time.perf_counter_ns() - t0,
                                 "bytes": os.path.getsize(path) if ok else 0}
        print(f"capture_proton_traces: {key}: {'ok' if ok else 'MISSING'}"
              f" ({info['captures'][key]['bytes']} bytes; files {written})")
        if ok:
            with open(path, "rb") as f:
                print("  head:", f.read(300))
    _write_info(outdir, info)
    return 0 if all(c["ok"] for c in info["captures"].values()) else 1


def _write_info(outdir: str, info: dict) -> None:
    with open(os.path.join(outdir, "capture_info.json"), "w") as f:
        json.dump(info, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
