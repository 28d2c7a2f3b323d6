"""Profiled and unprofiled step times of a small Llama training loop, through
``traceview.capture_steps``, with the step also timed independently.

Usage, from the repository root (a GPU machine; ``TRAIN_DEVICE=cpu`` runs the script
itself as a smoke test)::

    python3 tools/capture_steps_llama.py OUTDIR

Each step is two micro-batches (forward and backward each, gradients accumulated) and
one AdamW step, as ``tools/capture_training_steps.py`` builds the model (transformers,
random weights). Writes ``OUTDIR/steps.json.gz`` (capture_steps: profiled steps with
stacks and shapes, the unprofiled step times under ``traceview_steps``) and
``OUTDIR/steps.truth.json``: the same step timed by this script alone (``perf_counter_ns``
around the step and a synchronize, no profiler and no traceview code in the loop), before
and after capture_steps, to check capture_steps' unprofiled figure against.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import traceview  # noqa: E402

OUTDIR = Path(sys.argv[1])
DEV = os.environ.get("TRAIN_DEVICE", "cuda")
BATCH, SEQ, VOCAB, MICRO = 8, 128, 1024, 2
INDEPENDENT = 10


def sync() -> None:
    if DEV == "cuda":
        torch.cuda.synchronize()


def small_llama() -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=256, intermediate_size=512,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                      max_position_embeddings=512)
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).to(DEV)


def main() -> None:
    OUTDIR.mkdir(parents=True, exist_ok=True)
    model = small_llama()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batches = [torch.randint(0, VOCAB, (BATCH, SEQ), device=DEV) for _ in range(MICRO)]

    def step() -> None:
        for ids in batches:
            (model(input_ids=ids, labels=ids).loss / MICRO).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def independent(n: int) -> list[int]:
        out = []
        for _ in range(n):
            t0 = time.perf_counter_ns()
            step()
            sync()
            out.append(time.perf_counter_ns() - t0)
        return out

    for _ in range(3):
        step()
    sync()
    before = independent(INDEPENDENT)
    t0 = time.monotonic()
    traceview.capture_steps(step, OUTDIR / "steps.json.gz", steps=6, warmup=2,
                            unprofiled=10, with_stack=True, record_shapes=True)
    took = time.monotonic() - t0
    after = independent(INDEPENDENT)
    both = sorted(before + after)
    truth = {"device": torch.cuda.get_device_name() if DEV == "cuda" else "cpu",
             "torch": torch.__version__, "micro_batches": MICRO,
             "model": {"hidden": 256, "layers": 2, "heads": 4, "vocab": VOCAB,
                       "batch": BATCH, "seq": SEQ},
             "timer": "perf_counter_ns around step() and a synchronize, this script's own "
                      "loop, no profiler",
             "independent_before_ns": before, "independent_after_ns": after,
             "independent_median_ns": (both[len(both) // 2 - 1] + both[len(both) // 2]) // 2,
             "capture_steps_s": round(took, 1)}
    (OUTDIR / "steps.truth.json").write_text(json.dumps(truth, indent=1))
    print("capture_steps ok", round(took, 1), "s; independent median",
          truth["independent_median_ns"] / 1e6, "ms", flush=True)


if __name__ == "__main__":
    main()
