"""Capture real training-step traces (and the generate()/compiled-function shapes) on a GPU.

Usage, on the GPU machine from the repository root::

    python3 tools/capture_training_steps.py SHAPE OUTDIR

writes ``OUTDIR/SHAPE.json`` (the Kineto trace, torch.profiler with a schedule,
``with_stack=True``, ``record_shapes=True``) and ``OUTDIR/SHAPE.truth.json`` (what the
script knows independently of the profiler: unprofiled step times measured in the same
process before profiling, the planted delays, the model's configuration).

Shapes (each what users profile most):

- ``train_eager``: a small Llama (transformers, random weights) trained eagerly; forward
  and AdamW on the main thread, backward on PyTorch's autograd thread.
- ``train_eager_sleep``: the same with a planted ``time.sleep`` of ``SLEEP_NS`` between
  backward and the optimizer: a known host gap on the main thread.
- ``train_compiled``: ``torch.compile(model)``, compiled before the profiler starts.
- ``train_reduce_overhead``: ``torch.compile(mode="reduce-overhead")``: CUDA-graph trees.
- ``train_dataloader``: eager, batches from a ``DataLoader`` with 2 workers and pin memory.
- ``train_two_streams``: the next batch copied host-to-device on a side stream and an
  auxiliary matmul there, the main stream waiting on it (cross-stream event waits).
- ``generate``: ``model.generate`` of 16 new tokens, greedy, KV cache, no ranges.
- ``compiled_fn_cold_warm``: a ``torch.compile``d function called three times under the
  profiler with stacks and no ranges (the first call compiles; run
  ``compiled_fn_fill_cache`` before it to keep the trace small).
"""
from __future__ import annotations

import json
import os
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile, schedule

SHAPE, OUTDIR = sys.argv[1], sys.argv[2]
DEV = os.environ.get("TRAIN_DEVICE", "cuda")  # "cpu": a smoke test of the script itself
ACT = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if DEV == "cuda" else [])
SLEEP_NS = 3_000_000
BATCH, SEQ, VOCAB = 8, 128, 1024
UNPROFILED_STEPS = 10
TRACE = os.path.join(OUTDIR, f"{SHAPE}.json")
truth: dict = {"shape": SHAPE, "torch": torch.__version__,
               "device": torch.cuda.get_device_name() if DEV == "cuda" else "cpu"}


def sync():
    if DEV == "cuda":
        torch.cuda.synchronize()


def small_llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=256, intermediate_size=512,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                      max_position_embeddings=512)
    torch.manual_seed(0)
    truth["model"] = {"hidden": 256, "layers": 2, "heads": 4, "vocab": VOCAB,
                      "batch": BATCH, "seq": SEQ}
    return LlamaForCausalLM(cfg).to(DEV)


def batch():
    return torch.randint(0, VOCAB, (BATCH, SEQ), device=DEV)


def profiled(step, n_active=3, *, wait=1, warmup=1):
    """Run ``step(i)`` under a schedule; export the active steps' trace."""
    sched = schedule(wait=wait, warmup=warmup, active=n_active, repeat=1)
    with profile(activities=ACT, schedule=sched, with_stack=True, record_shapes=True,
                 on_trace_ready=lambda p: p.export_chrome_trace(TRACE)) as prof:
        for i in range(wait + warmup + n_active):
            step(i)
            prof.step()


def unprofiled(step, n=UNPROFILED_STEPS):
    """Per-step wall time (perf_counter_ns around step + synchronize), no profiler."""
    out = []
    for i in range(n):
        t0 = time.perf_counter_ns()
        step(i)
        sync()
        out.append(time.perf_counter_ns() - t0)
    truth["unprofiled_step_ns"] = out
    truth["unprofiled_step_median_ns"] = sorted(out)[len(out) // 2]


def training(model_fn, *, sleep_ns=0, loader=None, two_streams=False, mark_step=False):
    model = small_llama()
    fwd = model_fn(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    it = iter(loader) if loader is not None else None
    side = torch.cuda.Stream() if two_streams else None
    host_next = torch.randint(0, VOCAB, (BATCH, SEQ)).pin_memory() if two_streams else None
    aux_w = torch.randn(2048, 2048, device=DEV) if two_streams else None
    x = batch()

    def step(_i):
        nonlocal x, it
        if mark_step:
            torch.compiler.cudagraph_mark_step_begin()
        if loader is not None:
            try:
                ids = next(it)[0]
            except StopIteration:
                it = iter(loader)
                ids = next(it)[0]
            ids = ids.to(DEV, non_blocking=True)
        else:
            ids = x
        if side is not None:
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                nxt = host_next.to(DEV, non_blocking=True)
                aux = (aux_w @ aux_w).sum()
        loss = fwd(input_ids=ids, labels=ids).loss
        loss.backward()
        if side is not None:
            torch.cuda.current_stream().wait_stream(side)
            loss = loss + 0 * aux
            x = nxt
        if sleep_ns:
            time.sleep(sleep_ns / 1e9)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()

    for i in range(3):  # warm-up (compiles a compiled model before any timing)
        step(i)
    sync()
    unprofiled(step)
    profiled(step)
    truth["planted_sleep_ns"] = sleep_ns


def make_loader():
    from torch.utils.data import DataLoader, TensorDataset
    data = TensorDataset(torch.randint(0, VOCAB, (BATCH * 64, SEQ)))
    truth["dataloader"] = {"num_workers": 2, "pin_memory": True}
    return DataLoader(data, batch_size=BATCH, num_workers=2, pin_memory=True,
                      persistent_workers=True, shuffle=True)


if SHAPE == "train_eager":
    training(lambda m: m)
elif SHAPE == "train_eager_sleep":
    training(lambda m: m, sleep_ns=SLEEP_NS)
elif SHAPE == "train_compiled":
    training(lambda m: torch.compile(m))
elif SHAPE == "train_reduce_overhead":
    training(lambda m: torch.compile(m, mode="reduce-overhead"), mark_step=True)
elif SHAPE == "train_dataloader":
    training(lambda m: m, loader=make_loader())
elif SHAPE == "train_two_streams":
    training(lambda m: m, two_streams=True)
elif SHAPE == "generate":
    model = small_llama().eval()
    prompt = batch()[:1, :32]
    kw = dict(max_new_tokens=16, min_new_tokens=16, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        model.generate(prompt, **kw)  # warm
        sync()
        with profile(activities=ACT, with_stack=True, record_shapes=True) as prof:
            out = model.generate(prompt, **kw)
            sync()
    prof.export_chrome_trace(TRACE)
    truth["new_tokens"] = int(out.shape[1] - prompt.shape[1])
    truth["prompt_tokens"] = int(prompt.shape[1])
elif SHAPE in ("compiled_fn_cold_warm", "compiled_fn_fill_cache"):
    # Run "compiled_fn_fill_cache" first, in its own process: it fills Inductor's on-disk
    # caches, so the profiled first call is cold (Dynamo traces, the cache is looked up, the
    # kernel loaded) without the full code generation, whose Python frames make a
    # with_stack trace of ~450 MB.
    x = torch.randn(64, 4096, device=DEV)
    f = torch.compile(lambda a: torch.nn.functional.gelu(a * 2.0).sin() + a)
    if SHAPE == "compiled_fn_fill_cache":
        f(x)
        sync()
        raise SystemExit(0)
    walls = []
    with profile(activities=ACT, with_stack=True, record_shapes=True) as prof:
        for _ in range(3):
            t0 = time.perf_counter_ns()
            f(x)
            sync()
            walls.append(time.perf_counter_ns() - t0)
    prof.export_chrome_trace(TRACE)
    truth["call_wall_ns_profiled"] = walls
else:
    raise SystemExit(f"unknown shape {SHAPE}")

with open(os.path.join(OUTDIR, f"{SHAPE}.truth.json"), "w") as fh:
    json.dump(truth, fh, indent=1)
print(SHAPE, "ok", os.path.getsize(TRACE), "bytes", flush=True)
