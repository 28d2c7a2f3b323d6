"""The serving loop: requests arrive on a schedule, batches run through ``generate``.

Static batching: when the engine is free it takes up to ``batch_size`` requests that
have arrived (waiting for the next arrival if none has) and runs one ``generate`` call
to completion. transformers' continuous-batching manager (``generate_batch``,
``init_continuous_batching``) exists in 5.17 and 5.24 but runs its own paged-attention
path in a background thread; it is not used here (docs/serving.md, "Limits").

Token times come from transformers itself: ``generate`` hands every step's tokens to a
streamer as ``tokens.cpu()`` (the host waits for the device there, as a server must
before it can send a token), and :class:`StepClock` stamps ``time.perf_counter_ns`` at
each ``put``. The first ``put`` is the prompt (before prefill); put ``k`` is token ``k``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

from traceview.serve.arrivals import arrival_offsets_ns, prompts
from traceview.serve.spec import Workload


class StepClock:
    """A transformers streamer (``put``/``end``) that only stamps the clock."""

    def __init__(self, on_put: Callable[[int], None] | None = None) -> None:
        self.stamps: list[int] = []
        self.on_put = on_put

    def put(self, value: Any) -> None:
        self.stamps.append(time.perf_counter_ns())
        if self.on_put is not None:
            self.on_put(len(self.stamps) - 1)

    def end(self) -> None:
        pass


def generate(torch: Any, model: Any, batch: list[list[int]], gen_config: Any,
             streamer: Any = None) -> list[list[int]]:
    """One ``generate`` call; the new tokens per request."""
    ids = torch.tensor(batch, device=model.device)
    with torch.inference_mode():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                             generation_config=gen_config, streamer=streamer)
    new = out[:, ids.shape[1]:].tolist()
    want = gen_config.max_new_tokens
    if any(len(row) != want for row in new):
        raise RuntimeError(f"generate returned {len(new[0])} new tokens, expected {want}")
    return new


def warm_up(torch: Any, model: Any, workload: Workload, gen_config: Any, vocab: int) -> int:
    """Untimed batches on their own prompts (plus a batch of one under Poisson arrivals,
    where partial batches occur). Returns how many generate calls ran."""
    warm = prompts(workload, vocab, warmup=True)
    b = workload.batch_size
    calls = 0
    for k in range(workload.warmup_batches):
        generate(torch, model, warm[k * b:(k + 1) * b], gen_config)
        calls += 1
    if workload.arrival == "poisson" and workload.warmup_batches and b > 1:
        generate(torch, model, warm[:1], gen_config)
        calls += 1
    return calls


def tokens_digest(tokens: list[list[int]]) -> str:
    """sha256 of the generated tokens, in request order: equal digests, equal outputs."""
    return hashlib.sha256(json.dumps(tokens).encode()).hexdigest()


def run_workload(torch: Any, model: Any, workload: Workload, gen_config: Any,
                 vocab: int) -> dict[str, Any]:
    """The measured pass: raw per-request timestamps (ns from the first arrival)."""
    offsets = arrival_offsets_ns(workload)
    reqs = prompts(workload, vocab)
    n, b = workload.requests, workload.batch_size
    perf = time.perf_counter_ns
    records: list[dict[str, int]] = []
    outputs: list[list[int]] = []
    batches: list[dict[str, int]] = []
    if model.device.type == "cuda":
        torch.cuda.synchronize()
    t0 = perf()
    i = 0
    while i < n:
        now = perf() - t0
        if offsets[i] > now:
            time.sleep((offsets[i] - now) / 1e9)
            now = perf() - t0
        j = i
        while j < n and j - i < b and offsets[j] <= now:
            j += 1
        clock = StepClock()
        new = generate(torch, model, reqs[i:j], gen_config, streamer=clock)
        stamps = [s - t0 for s in clock.stamps]
        tokens = len(stamps) - 1
        if tokens != gen_config.max_new_tokens:
            raise RuntimeError(f"the streamer saw {tokens} token steps, expected "
                               f"{gen_config.max_new_tokens}")
        batch_no = len(batches)
        batches.append({"batch": batch_no, "first": i, "size": j - i, "start_ns": now,
                        "prompt_put_ns": stamps[0], "end_ns": stamps[-1]})
        for k in range(i, j):
            records.append({"index": k, "batch": batch_no, "arrival_ns": offsets[k],
                            "first_token_ns": stamps[1], "last_token_ns": stamps[-1],
                            "tokens": tokens})
        outputs += new
        i = j
    return {"requests": records, "batches": batches, "tokens_sha256": tokens_digest(outputs),
            "clock": "time.perf_counter_ns at each streamer put (tokens.cpu() done)"}
