"""The bandwidth curve of a pointwise op on this GPU: bytes, device time, GB/s and the share of
the measured copy rates for numel 2^10 .. 2^26, in ONE warm process.

Why a script beside ``traceview capture --sweep``: the sweep runs capture's whole protocol
per size (an isolated correctness process, three baseline processes, a profiled run), about
a minute per size with FlagGems, whose import alone takes 10-20 s per process. This script
asks the same questions of the same code -- ``baseline_child.prepare`` (seeded inputs, the
implementation, the first output checked against the float64 reference), ``baseline.measure``
(full API, amortized, device time per op from CUDA-graph replays timed with events) and
``probe.bandwidth_block`` (bytes moved from the tensors' shapes, strides and dtypes, GB/s, a
device-to-device copy of the same bytes and a 512 MB copy: the device's streaming limit) --
for every size in one process, so the dense curve costs seconds. Each size's row says which
implementation ran and is checked before it is timed; the figures are the sweep's columns
(``traceview.sweep.sweep.DEFINITIONS``), and ``bandwidth_bound_numel`` is the sweep's rule.

Run on the GPU machine from the repository root::

    PYTHONPATH=. python3 tools/measure_bandwidth_curve_on_gpu.py --impl flag_gems torch \\
        --op add --dtype bfloat16 --out $OUT/curve.json

Prints a markdown table per implementation and writes every figure to ``--out``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time


def measure_size(config, dev) -> dict:
    from traceview.opcapture import baseline, probe
    from traceview.opcapture.baseline_child import prepare

    with contextlib.ExitStack() as stack:
        ready = prepare(config, dev, stack, check=True)
        what = f"--impl {config.impl} {config.op}"
        block = baseline.measure(dev, ready.call, config.baseline_n, ready.out_bytes, what)
        out = ready.impl_call()
        dev.sync()
        bw = probe.bandwidth_block(dev, ready.inputs.tensors, out, block.get("device_ns"))
    peak = ((bw.get("copy") or {}).get("peak") or {})
    same = ((bw.get("copy") or {}).get("same_bytes") or {})
    return {
        "numel": config.shapes[0][0],
        "correct": (ready.checked or {}).get("passed", ready.checked),
        "full_api_ns_p50": block["full_api_ns_p50"],
        "amortized_submit_ns": block["amortized_submit_ns"],
        "device_ns": block.get("device_ns"),
        "bytes": (bw.get("bytes") or {}).get("total"),
        "gb_per_s": bw.get("gb_per_s"),
        "copy_same_bytes_gb_per_s": same.get("gb_per_s"),
        "copy_peak_gb_per_s": peak.get("gb_per_s"),
        "share_of_copy_same_bytes": bw.get("share_of_copy_same_bytes"),
        "share_of_copy_peak": bw.get("share_of_copy_peak"),
    }


def table(impl: str, rows: list[dict]) -> str:
    lines = [f"### {impl}", "",
             "| numel | bytes | device per op | full API p50 | GB/s | copy, same bytes | "
             "% of same-bytes copy | % of copy peak |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['numel']:,} | {r['error']} |||||||")
            continue

        def pct(x):
            return "-" if x is None else f"{100 * x:.1f}%"

        def num(x, scale=1.0, unit=""):
            return "-" if x is None else f"{x / scale:,.2f}{unit}"

        lines.append(
            f"| {r['numel']:,} | {r['bytes']:,} | {num(r['device_ns'], 1e3, ' us')} | "
            f"{num(r['full_api_ns_p50'], 1e3, ' us')} | {num(r['gb_per_s'])} | "
            f"{num(r['copy_same_bytes_gb_per_s'])} | {pct(r['share_of_copy_same_bytes'])}"
            f" | {pct(r['share_of_copy_peak'])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--op", default="add")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--impl", nargs="+", default=["flag_gems", "torch"])
    p.add_argument("--lo", type=int, default=10, help="smallest size: 2**LO elements")
    p.add_argument("--hi", type=int, default=26, help="largest size: 2**HI elements")
    p.add_argument("--baseline-n", type=int, default=50)
    p.add_argument("--device", default="cuda", help="cpu: a smoke test of this script")
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)

    from traceview.opcapture.metadata import versions
    from traceview.sweep.sweep import DEFINITIONS, bandwidth_bound
    from traceview.workload import device as device_mod
    from traceview.workload.config import CaptureConfig

    doc: dict = {"op": a.op, "dtype": a.dtype, "definitions": DEFINITIONS, "curves": {}}
    t0 = time.monotonic()
    for impl in a.impl:
        rows: list[dict] = []
        for k in range(a.lo, a.hi + 1):
            n = 2 ** k
            cfg = CaptureConfig(op=a.op, impl=impl, dtype=a.dtype, shapes=((n,), (n,)),
                                baseline_n=a.baseline_n, warmup=5, device=a.device)
            dev = device_mod.open_device(cfg)
            try:
                rows.append(measure_size(cfg, dev))
            except Exception as exc:  # noqa: BLE001 -- a size that cannot run is a row
                rows.append({"numel": n, "error": f"{type(exc).__name__}: {exc}"[:300]})
            print(f"{impl} 2^{k}: {json.dumps(rows[-1])}", file=sys.stderr, flush=True)
        from traceview.sweep.sweep import SweepRow

        bound = bandwidth_bound([SweepRow(r["numel"], share_of_copy_peak=r.get(
            "share_of_copy_peak")) for r in rows if "error" not in r])
        doc["curves"][impl] = {"rows": rows, "bandwidth_bound_numel": bound}
        print(table(impl, rows))
        print(f"\nbandwidth-bound (>= 50% of the copy peak) from numel {bound}\n", flush=True)
    import torch

    doc["versions"] = versions(torch)
    doc["device"] = device_mod.open_device(CaptureConfig(op=a.op, device=a.device)).info()
    doc["seconds"] = round(time.monotonic() - t0, 1)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
