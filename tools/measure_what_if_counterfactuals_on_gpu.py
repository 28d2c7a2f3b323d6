"""Measure, unprofiled, the counterfactuals traceview's what-if projections stand for, and
write a profiled trace of each shape's eager call for traceview to project from.

Why: a projection ("as one CUDA graph this call would take X") is only worth printing
if it lands near what the counterfactual really takes. This script measures, per shape,
interleaved over rounds (every variant of every shape once per round, so drift hits all
alike):

* ``eager``      — the call as written, synchronized after each call;
* ``graph``      — the call captured as one CUDA graph, one replay + synchronize;
* ``queued``     — the same graph replayed back to back, synchronized once (per replay):
                   the device-bound limit, the host out of the way;
* ``fused``      — the call's pointwise chain as one Triton kernel (where the shape has one);

and the graph launch costs (fixed and per node, synchronized and queued) from graphs of
N one-element kernels, N = 1..64, the table ``traceview/data/graph_launch_costs.json``
holds. Results go to ``$OUT/what_if_measured.json``; the traces to ``$OUT/<shape>.json.gz``.
``--device cpu`` runs the same code paths on the CPU (no graphs, no Triton) as a check.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from traceview.workload.graphs import capture_graph  # noqa: E402


def sync(dev: str) -> None:
    if dev == "cuda":
        torch.cuda.synchronize()


def t_sync(fn: Callable[[], object], reps: int, dev: str) -> int:
    """Median ns of one call + synchronize."""
    out = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn()
        sync(dev)
        out.append(time.perf_counter_ns() - t0)
    return int(statistics.median(out))


def t_queued(fn: Callable[[], object], reps: int, dev: str) -> int:
    """ns per call of ``reps`` calls queued back to back, synchronized once."""
    sync(dev)
    t0 = time.perf_counter_ns()
    for _ in range(reps):
        fn()
    sync(dev)
    return (time.perf_counter_ns() - t0) // reps


def capture(fn: Callable[[], object], dev: str) -> Callable[[], object] | None:
    """``fn`` as one CUDA graph replay (None on the CPU), captured as ``capture --mode
    graph`` captures (warm-up on a side stream, outputs kept alive)."""
    if dev != "cuda":
        return None
    return capture_graph(torch, fn, 1, "this shape").replay


# ---- the shapes -------------------------------------------------------------------------

def pointwise_ops(n: int) -> list[Callable[[torch.Tensor], torch.Tensor]]:
    base: list[Callable[[torch.Tensor], torch.Tensor]] = [
        lambda x: x * 1.0001, lambda x: x + 0.5, torch.sin, lambda x: x * 0.9,
        lambda x: x - 0.25, torch.cos, lambda x: x * 1.5, torch.neg, torch.abs,
        lambda x: x + 0.125, torch.sigmoid, lambda x: x * 2.0]
    return [base[i % len(base)] for i in range(n)]


def triton_chain(n: int):
    """A Triton kernel applying the same ``n`` pointwise ops in one pass."""
    import triton
    import triton.language as tl

    @triton.jit
    def k(x_ptr, y_ptr, numel, N_OPS: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < numel
        x = tl.load(x_ptr + offs, mask=m)
        for i in tl.static_range(N_OPS):
            j = i % 12
            if j == 0:
                x = x * 1.0001
            elif j == 1:
                x = x + 0.5
            elif j == 2:
                x = tl.sin(x)
            elif j == 3:
                x = x * 0.9
            elif j == 4:
                x = x - 0.25
            elif j == 5:
                x = tl.cos(x)
            elif j == 6:
                x = x * 1.5
            elif j == 7:
                x = -x
            elif j == 8:
                x = tl.abs(x)
            elif j == 9:
                x = x + 0.125
            elif j == 10:
                x = tl.sigmoid(x)
            else:
                x = x * 2.0
        tl.store(y_ptr + offs, x, mask=m)

    def run(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        numel = x.numel()
        k[(triton.cdiv(numel, 1024),)](x, y, numel, N_OPS=n, BLOCK=1024)
        return y

    return run


def shape_chain(n_ops: int, numel: int, dev: str) -> dict:
    x = torch.randn(numel, device=dev)
    ops = pointwise_ops(n_ops)
    out = torch.empty_like(x)

    def eager() -> torch.Tensor:
        y = x
        for op in ops:
            y = op(y)
        return y

    if dev == "cuda":
        tk = triton_chain(n_ops)

        def fused() -> torch.Tensor:
            return tk(x, out)
        ref = eager()
        torch.testing.assert_close(fused(), ref, rtol=1e-4, atol=1e-4)
    else:
        fused = eager
    return {"eager": eager, "fused": fused}


def triton_add_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(a_ptr, b_ptr, c_ptr, numel, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < numel
        tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=m) + tl.load(b_ptr + offs, mask=m),
                 mask=m)

    def add(a, b, c):
        add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, c, a.numel(), BLOCK=1024)
        return c
    return add


def triton_sigmoid_affine():
    """sigmoid(x * 0.5 + 1.0) as one Triton kernel: the three torch ops after the add, fused."""
    import triton
    import triton.language as tl

    @triton.jit
    def sig_kernel(x_ptr, y_ptr, numel, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < numel
        x = tl.load(x_ptr + offs, mask=m)
        tl.store(y_ptr + offs, tl.sigmoid(x * 0.5 + 1.0), mask=m)

    def run(x, y):
        sig_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
    return run


def shape_triton_op(dev: str) -> dict:
    """A Triton op (an add, as FlagGems writes its ops) then three torch pointwise ops."""
    a = torch.randn(16 * 4096, device=dev)
    b = torch.randn_like(a)
    c = torch.empty_like(a)
    d = torch.empty_like(a)
    add = triton_add_kernel() if dev == "cuda" else (lambda a, b, c: torch.add(a, b, out=c))

    def eager() -> torch.Tensor:
        y = add(a, b, c)
        return torch.sigmoid(y * 0.5 + 1.0)
    if dev != "cuda":
        return {"eager": eager, "fused": eager}
    sig = triton_sigmoid_affine()

    def fused() -> torch.Tensor:
        return sig(add(a, b, c), d)
    torch.testing.assert_close(fused(), eager(), rtol=1e-5, atol=1e-5)
    return {"eager": eager, "fused": fused}


def shape_flag_gems(dev: str) -> dict:
    """FlagGems' own ops (``flag_gems.ops``): an add, then the same three pointwise ops, each
    a FlagGems Triton kernel behind FlagGems' Python wrapper (its argument handling,
    specialization and launch are the host work the projections take away). Called directly
    rather than through ``use_gems()`` so the other shapes keep ATen's kernels. ``fused``
    is the chain as one op written the way FlagGems writes ops (``pointwise_dynamic``), so
    the one launch left keeps FlagGems' wrapper, as the fewer-launches scenario assumes;
    ``fused_raw`` is the same chain as raw Triton launches (the wrapper gone too)."""
    from flag_gems import ops as fg
    from flag_gems_fused_chain import add_sigmoid_affine  # why a module: its docstring

    a = torch.randn(16 * 4096, device=dev)
    b = torch.randn_like(a)
    c = torch.empty_like(a)
    d = torch.empty_like(a)

    def eager() -> torch.Tensor:
        return fg.sigmoid(fg.add(fg.mul(fg.add(a, b), 0.5), 1.0))

    def fused() -> torch.Tensor:
        return add_sigmoid_affine(a, b)
    add, sig = triton_add_kernel(), triton_sigmoid_affine()

    def fused_raw() -> torch.Tensor:
        return sig(add(a, b, c), d)
    torch.testing.assert_close(fused(), eager(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(fused_raw(), eager(), rtol=1e-5, atol=1e-5)
    return {"eager": eager, "fused": fused, "fused_raw": fused_raw}


class TinyLlama(torch.nn.Module):
    """A Llama decode step (RMSNorm, rotary, attention over a static KV cache, SwiGLU),
    written so that one step captures as a CUDA graph: the position is a device tensor."""

    def __init__(self, layers: int = 2, dim: int = 512, heads: int = 8, ctx: int = 256,
                 vocab: int = 4096):
        super().__init__()
        self.h, self.hd, self.ctx = heads, dim // heads, ctx
        self.emb = torch.nn.Embedding(vocab, dim)
        self.qkv = torch.nn.ModuleList(torch.nn.Linear(dim, 3 * dim, bias=False)
                                       for _ in range(layers))
        self.o = torch.nn.ModuleList(torch.nn.Linear(dim, dim, bias=False) for _ in range(layers))
        self.up = torch.nn.ModuleList(torch.nn.Linear(dim, 4 * dim, bias=False)
                                      for _ in range(layers))
        self.gate = torch.nn.ModuleList(torch.nn.Linear(dim, 4 * dim, bias=False)
                                        for _ in range(layers))
        self.down = torch.nn.ModuleList(torch.nn.Linear(4 * dim, dim, bias=False)
                                        for _ in range(layers))
        self.head = torch.nn.Linear(dim, vocab, bias=False)
        self.register_buffer("k", torch.zeros(layers, heads, ctx, self.hd))
        self.register_buffer("v", torch.zeros(layers, heads, ctx, self.hd))
        self.register_buffer("inv", 1.0 / 10000 ** (torch.arange(0, self.hd, 2) / self.hd))

    @staticmethod
    def rms(x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    def rope(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        ang = pos.float()[:, None] * self.inv[None, :]
        cos, sin = ang.cos(), ang.sin()
        x1, x2 = x[..., ::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), -1).flatten(-2)

    def forward(self, tok: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        x = self.emb(tok)  # (1, dim)
        mask = torch.arange(self.ctx, device=x.device)[None, :] <= pos[:, None]
        for i in range(len(self.qkv)):
            h = self.rms(x)
            q, k, v = self.qkv[i](h).view(1, 3, self.h, self.hd).unbind(1)
            q, k = self.rope(q, pos), self.rope(k, pos)
            self.k[i].index_copy_(1, pos, k.transpose(0, 1))
            self.v[i].index_copy_(1, pos, v.transpose(0, 1))
            att = (q.transpose(0, 1) @ self.k[i].transpose(1, 2)) / self.hd ** 0.5
            att = att.masked_fill(~mask[None], float("-inf")).softmax(-1)
            y = (att @ self.v[i]).transpose(0, 1).reshape(1, -1)
            x = x + self.o[i](y)
            h = self.rms(x)
            x = x + self.down[i](torch.nn.functional.silu(self.gate[i](h)) * self.up[i](h))
        return self.head(self.rms(x))


def shape_llama(dev: str) -> dict:
    torch.manual_seed(0)
    m = TinyLlama().to(dev).eval()
    tok = torch.tensor([7], device=dev)
    pos = torch.tensor([5], device=dev)

    @torch.no_grad()
    def eager() -> torch.Tensor:
        return m(tok, pos)
    return {"eager": eager}


def shape_compiled(dev: str) -> dict:
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(),
                              torch.nn.Linear(4096, 1024), torch.nn.LayerNorm(1024)).to(dev)
    fn = torch.compile(mlp)
    x = torch.randn(8, 1024, device=dev)

    @torch.no_grad()
    def eager() -> torch.Tensor:
        return fn(x)
    return {"eager": eager}


SHAPES: dict[str, Callable[[str], dict]] = {
    "pointwise12_64k": lambda d: shape_chain(12, 64 * 1024, d),
    "pointwise6_4m": lambda d: shape_chain(6, 4 * 1024 * 1024, d),
    "pointwise24_4k": lambda d: shape_chain(24, 4096, d),
    "triton_op": shape_triton_op,
    "flag_gems_op": shape_flag_gems,
    "llama_decode": shape_llama,
    "compiled_mlp": shape_compiled,
}


def graph_costs(dev: str, rounds: int, reps: int) -> dict:
    """Replay time of graphs of N one-element kernels: the fixed and per-node costs."""
    if dev != "cuda":
        return {}
    x = torch.zeros(1, device=dev)
    sizes = [1, 2, 4, 8, 16, 32, 64]
    graphs = {}
    for n in sizes:
        def body(n=n) -> None:
            for _ in range(n):
                x.add_(1.0)
        graphs[n] = capture(body, dev)
    got: dict[int, dict[str, list[int]]] = {n: {"sync": [], "queued": []} for n in sizes}
    for _ in range(rounds):
        for n in sizes:
            got[n]["sync"].append(t_sync(graphs[n], reps, dev))
            got[n]["queued"].append(t_queued(graphs[n], reps, dev))
    med = {n: {k: int(statistics.median(v)) for k, v in d.items()} for n, d in got.items()}

    def fit(key: str) -> tuple[int, int]:
        """Intercept and slope through the large graphs, where the device is the
        bottleneck (a small graph's replay is the host's floor instead)."""
        xs = [16, 32, 64]
        ys = [med[n][key] for n in xs]
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        slope = (sum((a - mx) * (b - my) for a, b in zip(xs, ys, strict=True))
                 / sum((a - mx) ** 2 for a in xs))
        return int(round(my - slope * mx)), int(round(slope))
    f, p = fit("sync")
    qf, qp = fit("queued")
    return {"fixed_ns": f, "per_node_ns": p, "floor_ns": med[1]["sync"],
            "queued_fixed_ns": qf, "queued_per_node_ns": qp,
            "queued_floor_ns": med[1]["queued"], "points": {str(n): med[n] for n in sizes}}


def profile(name: str, fn: Callable[[], object], dev: str, out: str, calls: int = 20) -> str:
    from torch.profiler import ProfilerActivity, record_function
    from torch.profiler import profile as tprofile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
    with tprofile(activities=acts) as prof:
        for _ in range(calls):
            with record_function("whatif_call"):
                fn()
                sync(dev)
    raw = os.path.join("/tmp", f"{name}.json")
    prof.export_chrome_trace(raw)
    path = os.path.join(out, f"{name}.json.gz")
    with open(raw, "rb") as src, gzip.open(path, "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/what_if_out"))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    a = ap.parse_args()
    dev = a.device
    os.makedirs(a.out, exist_ok=True)
    t_start = time.time()
    card = torch.cuda.get_device_name() if dev == "cuda" else "cpu"
    doc: dict = {"card": card, "torch": torch.__version__,
                 "date": time.strftime("%Y-%m-%d", time.gmtime()), "rounds": a.rounds,
                 "reps": a.reps, "shapes": {}, "errors": {}}
    doc["graph_costs"] = graph_costs(dev, a.rounds, 100)
    print("graph costs", doc["graph_costs"], flush=True)
    variants: dict[str, dict[str, Callable[[], object]]] = {}
    for name in a.shapes.split(","):
        try:
            v = SHAPES[name](dev)
            for _ in range(5):  # compile, autotune, first-call work
                v["eager"]()
            sync(dev)
            g = capture(v["eager"], dev)
            if g is not None:
                v["graph"] = g
                v["queued"] = g
            variants[name] = v
        except Exception as exc:  # one broken shape must not cost the others' figures
            doc["errors"][name] = f"{type(exc).__name__}: {exc}"[:400]
            print("shape failed", name, doc["errors"][name], flush=True)
    samples: dict[str, dict[str, list[int]]] = {n: {} for n in variants}
    for _ in range(a.rounds):  # interleaved: every variant of every shape once per round
        for name, v in variants.items():
            for kind, fn in v.items():
                t = t_queued(fn, a.reps, dev) if kind == "queued" else t_sync(fn, a.reps, dev)
                samples[name].setdefault(kind, []).append(t)
    for name, per in samples.items():
        doc["shapes"][name] = {k: int(statistics.median(v)) for k, v in per.items()}
        doc["shapes"][name]["samples"] = per
        print(name, {k: v for k, v in doc["shapes"][name].items() if k != "samples"}, flush=True)
    for name, v in variants.items():
        try:
            profile(name, v["eager"], dev, a.out)
        except Exception as exc:
            doc["errors"][f"profile {name}"] = f"{type(exc).__name__}: {exc}"[:400]
    doc["seconds"] = round(time.time() - t_start, 1)
    with open(os.path.join(a.out, "what_if_measured.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print("done in", doc["seconds"], "s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
