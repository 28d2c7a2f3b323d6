"""Which of the two sides' own objects makes ``ab --same-process`` read B slower in an A/A.

    python tools/ab_aa_lean_by_inputs.py [--device cuda] [--processes 15] [--blocks 400]

On the H200 an A/A (``planted_delay_add:plain`` on both sides) read B +0.05 us slower
(median of ten 10-round runs) while the two sides' CUDA-graph device times were equal;
the block order and the estimator are ruled out (docs/ab.md). What differs between the
sides is what each builds for itself, A's first: its seeded inputs and its closure
(``workload.impls._user_impl``). This runs the same-process loop of
``ab_pair_child.measure_pair`` (pilot, blocks A B, B A, ..., neighbouring-block
estimate, amortized batches) in fresh processes, both sides built as ``ab`` builds
them, with the calls swapped per mode:

* ``sep``: each side's own call, as ``ab`` runs it;
* ``lam``: a plain ``lambda`` per side on its own inputs (closure ruled in or out);
* ``shared``: both sides on A's inputs (B's own inputs ruled in or out);
* ``cross``: A on B's inputs and B on A's (the lean should flip if the inputs carry it).

Prints one JSON line per process (``mode``, ``calls_per_block``, ``estimate_ns``, the
median per-block amortized submit B - A as ``submit_ns``), then per mode the median over
processes and how many were positive and negative. Nothing of it is a figure of ``ab``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

MODES = ("sep", "lam", "shared", "cross")
TOOLS = Path(__file__).resolve().parent


def one_process(mode: str, device: str, blocks: int) -> dict[str, Any]:
    """One process's A/A with ``mode``'s calls (module docstring)."""
    sys.path.insert(0, str(TOOLS))
    import planted_delay_add as planted

    from traceview.ab import ab_pair_child as apc
    from traceview.multi import block_pairs
    from traceview.opcapture import baseline as bm
    from traceview.stats import median
    from traceview.workload import device as device_mod
    from traceview.workload.config import CaptureConfig
    from traceview.workload.prepare import prepare

    cfg = CaptureConfig(op="add", impl="fn", fn="planted_delay_add:plain",
                        shapes=((16, 4096),), dtype="bfloat16", device=device)
    dev = device_mod.open_device(cfg)
    with contextlib.ExitStack() as stack:
        a, b = (prepare(cfg, dev, stack, check=None) for _ in range(2))
        xa, xb = a.inputs.args, b.inputs.args
        calls = {"sep": {"A": a.call, "B": b.call},
                 "lam": {"A": lambda: planted.plain(*xa), "B": lambda: planted.plain(*xb)},
                 "shared": {"A": lambda: planted.plain(*xa), "B": lambda: planted.plain(*xa)},
                 "cross": {"A": lambda: planted.plain(*xb),
                           "B": lambda: planted.plain(*xa)}}[mode]
        n = apc.block_calls(apc.pilot_call_ns(
            calls, lambda call: bm.full_api_samples(dev, call, 1)))
        medians: dict[str, list[int]] = {"A": [], "B": []}
        submit: dict[str, list[int]] = {"A": [], "B": []}
        for side in apc.block_order(blocks):
            medians[side].append(int(median(bm.full_api_samples(dev, calls[side], n))))
            submit[side].append(bm.amortized(dev, calls[side], n)[0])
        est = block_pairs.estimate(medians["A"], medians["B"])
    return {"mode": mode, "calls_per_block": n, "estimate_ns": est.estimate_ns,
            "submit_ns": int(median(submit["B"])) - int(median(submit["A"]))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--processes", type=int, default=15)
    ap.add_argument("--blocks", type=int, default=400, help="blocks per side, even")
    ap.add_argument("--one", choices=MODES, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.blocks < 2 or args.blocks % 2 or args.processes < 1:
        print("ab_aa_lean_by_inputs: --blocks takes an even number, --processes 1 or more",
              file=sys.stderr)
        return 2
    if args.one:
        print(json.dumps(one_process(args.one, args.device, args.blocks)), flush=True)
        return 0
    from traceview.stats import median

    rows: list[dict[str, Any]] = []
    for _ in range(args.processes):
        for mode in MODES:  # interleaved, so a slow spell of the host touches every mode
            done = subprocess.run([sys.executable, __file__, "--one", mode, "--device",
                                   args.device, "--blocks", str(args.blocks)],
                                  capture_output=True, text=True, env=os.environ.copy(),
                                  check=False)
            if done.returncode != 0:
                print(f"ab_aa_lean_by_inputs: {mode}: {done.stderr.strip()[-300:]}",
                      file=sys.stderr)
                return 1
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(json.dumps(rows[-1]), flush=True)
    for mode in MODES:
        for key in ("estimate_ns", "submit_ns"):
            values = [r[key] for r in rows if r["mode"] == mode]
            print(f"{mode:6} {key:11} median {median(values):+g} ns over {len(values)}: "
                  f"{sum(v > 0 for v in values)} positive, {sum(v < 0 for v in values)} negative")
    return 0


if __name__ == "__main__":
    sys.exit(main())
