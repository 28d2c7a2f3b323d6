"""Independent staged timing of one FlagGems op call, no profiler: the reference figures.

The way a kernel author times stages by hand: each FlagGems stage is wrapped alone (its
class attribute, or its entry in the overload table, replaced by a wrapper holding a
``time.perf_counter_ns`` accumulator), the call is run, the wrapper removed. One stage
per run, runs of the bare call interleaved beside them, in blocks of shuffled order.
Nothing here uses traceview's timer: this is what ``traceview.unprofiled`` is checked
against. The wrapper's own cost is not subtracted (it is a few hundred ns per wrapped
invocation; the output states the cost of an empty wrapper).

    python tools/staged_timing_flaggems.py --op sigmoid --shape 65536 --dtype float32 \
        --out staged.json

Prints and writes ``{"call_ns", "stages": [{"stage", "frame", "ns", "low_ns",
"high_ns", "share"}], ...}`` (medians over blocks of the per-call median; the interval is
the signed-rank one over blocks). ``frame`` is the stage's code spelled as a trace's
Python frame (``file.py(first line): name``), for matching against a split.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from typing import Any

from traceview.paired import signed_rank_interval
from traceview.stats import median

perf = time.perf_counter_ns


def frame_of(fn: Any) -> str | None:
    code = getattr(fn, "__code__", None)
    return None if code is None else f"{code.co_filename}({code.co_firstlineno}): {code.co_name}"


class Acc:
    """A perf_counter_ns accumulator that counts the outermost invocation only."""

    def __init__(self) -> None:
        self.ns = 0
        self.depth = 0

    def wrap(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        acc = self

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if acc.depth:
                return orig(*args, **kwargs)
            acc.depth = 1
            t0 = perf()
            try:
                return orig(*args, **kwargs)
            finally:
                acc.ns += perf() - t0
                acc.depth = 0

        return wrapper


def attr_stage(owner: Any, name: str) -> tuple[str | None, Callable[[Acc], Callable[[], None]]]:
    orig = owner.__dict__[name]

    def install(acc: Acc) -> Callable[[], None]:
        setattr(owner, name, acc.wrap(orig))
        return lambda: setattr(owner, name, orig)

    return frame_of(orig), install


def overload_stage(pdf: Any) -> tuple[str | None, Callable[[Acc], Callable[[], None]]]:
    """The generated wrapper that the op's PointwiseDynamicFunction dispatches to."""
    key, orig = next(iter(pdf.overloads.items()))

    def install(acc: Acc) -> Callable[[], None]:
        pdf.overloads[key] = acc.wrap(orig)
        return lambda: pdf.overloads.__setitem__(key, orig)

    return frame_of(orig), install


def runner_stage(ck: Any) -> tuple[str | None, Callable[[Acc], Callable[[], None]]]:
    """Triton's launcher: ``CompiledKernel[grid]`` returns a fresh ``runner`` closure per
    launch (launch metadata, then the C launch); the wrapper times each runner call."""
    orig = ck.__dict__["__getitem__"]
    inner = next((c for c in orig.__code__.co_consts if hasattr(c, "co_name")
                  and c.co_name == "runner"), None)
    frame = (None if inner is None else
             f"{inner.co_filename}({inner.co_firstlineno}): {inner.co_name}")

    def install(acc: Acc) -> Callable[[], None]:
        def getitem(self: Any, grid: Any) -> Any:
            return acc.wrap(orig(self, grid))

        ck.__getitem__ = getitem
        return lambda: setattr(ck, "__getitem__", orig)

    return frame, install


def stages_for(op_fn: Any) -> dict[str, tuple[str | None, Callable[[Acc], Callable[[], None]]]]:
    import importlib

    # ``flag_gems.utils.pointwise_dynamic`` is also the name of the decorator the
    # package exports: take the modules themselves.
    pointwise_dynamic = importlib.import_module("flag_gems.utils.pointwise_dynamic")
    libentry = importlib.import_module("flag_gems.utils.libentry")
    tensor_wrapper = importlib.import_module("flag_gems.utils.tensor_wrapper")
    pdf_cls = pointwise_dynamic.PointwiseDynamicFunction
    out = {
        "PointwiseDynamicFunction.__call__": attr_stage(pdf_cls, "__call__"),
        "PointwiseDynamicFunction._call_real_impl": attr_stage(pdf_cls, "_call_real_impl"),
        "PointwiseDynamicFunction.prepare_args": attr_stage(pdf_cls, "prepare_args"),
        "PointwiseDynamicFunction.instantiate": attr_stage(pdf_cls, "instantiate"),
        "generated overload wrapper": overload_stage(op_fn),
        "LibEntry.run": attr_stage(libentry.LibEntry, "run"),
        "LibEntry.key": attr_stage(libentry.LibEntry, "key"),
        "StridedBuffer.__init__": attr_stage(tensor_wrapper.StridedBuffer, "__init__"),
    }
    try:
        from triton.compiler.compiler import CompiledKernel

        out["triton launch (CompiledKernel runner)"] = runner_stage(CompiledKernel)
        out["CompiledKernel.launch_metadata"] = attr_stage(CompiledKernel, "launch_metadata")
    except (ImportError, KeyError):
        pass
    return out


def setup(op: str, shape: int, dtype: str) -> tuple[Callable[[], Any], Callable[[], Any], Any]:
    import flag_gems
    import torch

    torch.manual_seed(0)
    dt = getattr(torch, dtype)
    x = torch.randn(shape, device="cuda", dtype=dt)
    y = torch.randn(shape, device="cuda", dtype=dt)
    flag_gems.enable()
    if op == "sigmoid":
        from flag_gems.ops.sigmoid import sigmoid_forward as pdf

        return (lambda: torch.sigmoid(x)), torch.cuda.synchronize, pdf
    from flag_gems.ops.add import add_func as pdf

    return (lambda: torch.add(x, y)), torch.cuda.synchronize, pdf


def _runs(call: Callable[[], Any], sync: Callable[[], Any], n: int,
          acc: Acc | None) -> list[int]:
    """Per call: the wall ns (no acc) or the accumulated stage ns (acc)."""
    out = []
    for _ in range(n):
        before = acc.ns if acc else 0
        t0 = perf()
        call()
        sync()
        t1 = perf()
        out.append(acc.ns - before if acc else t1 - t0)
    return out


def measure(call: Callable[[], Any], sync: Callable[[], Any], pdf: Any, blocks: int,
            n: int, seed: int = 1) -> dict[str, Any]:
    for _ in range(50):
        call()
        sync()
    stages = {k: v for k, v in stages_for(pdf).items() if v[0] is not None}
    rng = random.Random(seed)
    per: dict[str, list[float]] = {k: [] for k in stages}
    sync_per: list[float] = []
    calls: list[float] = []
    for _ in range(blocks):
        order = list(stages)
        rng.shuffle(order)
        walls: list[int] = []
        for name in order:
            walls += _runs(call, sync, n, None)
            acc = Acc()
            undo = stages[name][1](acc)
            try:
                per[name].append(median(_runs(call, sync, n, acc)))
            finally:
                undo()
        sync_acc = Acc()
        per_sync = _runs(call, sync_acc.wrap(sync), n, sync_acc)
        sync_per.append(median(per_sync))
        calls.append(median(walls))
    call_ns = round(median(calls))
    rows = []
    for name, vals in per.items():
        ci = signed_rank_interval(vals)
        ns = round(median(vals))
        rows.append({"stage": name, "frame": stages[name][0], "ns": ns,
                     "low_ns": round(ci[0]) if ci else None,
                     "high_ns": round(ci[1]) if ci else None,
                     "share": round(ns / max(call_ns, 1), 4)})
    rows.append({"stage": "torch.cuda.synchronize (the harness's)", "frame": frame_of(sync),
                 "ns": round(median(sync_per)), "low_ns": None, "high_ns": None,
                 "share": round(median(sync_per) / max(call_ns, 1), 4)})
    rows.sort(key=lambda r: -r["ns"])
    return {"call_ns": call_ns, "blocks": blocks, "calls_per_run": n, "stages": rows,
            "wrapper_cost_ns": empty_wrapper_cost()}


def empty_wrapper_cost(loops: int = 20000) -> int:
    def empty(a: Any) -> None:
        return None

    acc = Acc()
    wrapped = acc.wrap(empty)
    t0 = perf()
    for _ in range(loops):
        empty(1)
    t1 = perf()
    for _ in range(loops):
        wrapped(1)
    t2 = perf()
    return round(((t2 - t1) - (t1 - t0)) / loops)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--op", choices=("sigmoid", "add"), default="sigmoid")
    p.add_argument("--shape", type=int, default=65536)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--blocks", type=int, default=10)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--out")
    a = p.parse_args()
    call, sync, pdf = setup(a.op, a.shape, a.dtype)
    result = measure(call, sync, pdf, a.blocks, a.calls)
    result.update({"op": a.op, "shape": a.shape, "dtype": a.dtype})
    text = json.dumps(result, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
