"""One round of ``traceview ab --same-process``: both variants in one fresh process.

Why: on a noisy host a whole process can land in a fast or a slow state and keep it
(measured on the H200: per-process medians of the same FlagGems call in two modes, ~85 us
and ~140 us, on both sides; the paired difference of two fresh processes then swings by
+-50 us and a 12 us change needs over 100 rounds). Two variants that can live in one
interpreter -- two implementations, or two user callables -- share that state when
measured in the same process, so it cancels in their difference.

Reads ``{"a": config, "b": config, "blocks": K}`` (``runner.wire`` configs) on
stdin. Builds each side's seeded inputs and implementation, checks each first output
against the float64 reference, warms both up, then runs ``K`` blocks per side (``K``
even, 2K in all) in the order A B, B A, A B, ... (:func:`block_order`: each side goes
first in half of the pairs); a block is one side's ``baseline_n`` synchronized calls and
one amortized batch. Per side: the median of
all its synchronized calls, the median of its blocks' amortized figures, and (CUDA) the
CUDA-graph device time at the end, both sides' graphs replayed alternately
(``baseline.device_per_op_interleaved``). Prints one JSON line ``{"A": block, "B": block,
"cpu": ...}`` or ``{"error": ..., "exit_code": N}``.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from traceview.stats import median


def block_order(blocks: int) -> list[str]:
    """The sides' blocks in run order: A B, B A, A B, ... (``blocks`` per side)."""
    return [side for i in range(blocks) for side in (("A", "B") if i % 2 == 0 else ("B", "A"))]


def measure_pair(config_a: Any, config_b: Any, blocks: int, phases: Any = None
                 ) -> dict[str, Any]:
    from traceview.capture import baseline as baseline_mod
    from traceview.capture import device as device_mod
    from traceview.capture.baseline_child import prepare
    from traceview.capture.metadata import versions

    mark = phases.mark if phases is not None else (lambda _name: None)
    dev = device_mod.open_device(config_a)
    device_mod.check_memory(dev, config_a)
    device_mod.check_memory(dev, config_b)
    mark("cuda_init")
    out: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        sides = {label: prepare(cfg, dev, stack, check=True)
                 for label, cfg in (("A", config_a), ("B", config_b))}
        mark("build_compile_warmup")
        n = config_a.baseline_n
        samples: dict[str, list[int]] = {"A": [], "B": []}
        submit: dict[str, list[int]] = {"A": [], "B": []}
        complete: dict[str, list[int]] = {"A": [], "B": []}
        for label in block_order(blocks):
            call = sides[label].call
            samples[label].extend(baseline_mod.full_api_samples(dev, call, n))
            s, c = baseline_mod.amortized(dev, call, n)
            submit[label].append(s)
            complete[label].append(c)
        configs = {"A": config_a, "B": config_b}
        p50s = {label: int(median(samples[label])) for label in configs}
        for label in configs:
            out[label] = {
                "n": n, "blocks": blocks, "full_api_ns_p50": p50s[label],
                "amortized_submit_ns": int(median(submit[label])),
                "amortized_ns": int(median(complete[label])),
                "correctness": sides[label].checked,
            }
        if dev.is_cuda:
            device = baseline_mod.device_per_op_interleaved(
                dev, {label: (sides[label].call, sides[label].out_bytes,
                              f"--impl {cfg.impl} {cfg.op}")
                      for label, cfg in configs.items()}, min(p50s.values()))
            for label in configs:
                out[label].update(device[label])
        else:
            for label in configs:
                out[label]["device_ns"] = None
    mark("measure")
    out["versions"] = versions(dev.torch)
    out["device"] = dev.info()
    return out


def measure_both(text: str) -> dict[str, Any]:
    """One round's process (``ChildSpec.call``): both sides in blocks, with the process's
    phases (``phases_ns``, ``ab_child.Phases``)."""
    from traceview.ab.ab_child import Phases, import_libraries
    from traceview.runner.wire import decode_config

    phases = Phases()
    doc = json.loads(text)
    config_a, config_b = (decode_config(json.dumps(doc[x])) for x in ("a", "b"))
    import_libraries(phases, triton="triton" in (config_a.impl, config_b.impl))
    out = measure_pair(config_a, config_b, int(doc["blocks"]), phases)
    out["phases_ns"] = phases.ns
    return out


def main() -> None:
    from traceview.runner.process import answer

    answer(measure_both)


if __name__ == "__main__":
    main()
