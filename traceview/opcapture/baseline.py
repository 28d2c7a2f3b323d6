"""The unprofiled baseline: the protocol's three figures taken with no profiler attached.

Profiling perturbs what it measures, so every capture also times the same call
without it, in a fresh process that never starts the profiler (``baseline_child``). Three figures, each
answering a different question (a launch returns before the kernel ends, and a
kernel's time is not the call's):

* ``full_api_ns_p50`` -- one warmed call, synchronised after each call, timed with
  ``time.perf_counter_ns``; median of ``n``. The cost of the complete invocation.
* ``amortized_submit_ns`` -- ``n`` calls back to back, one sync at the end; host time to
  *submit* one call (``amortized_ns`` adds the drain, so it is completion per call).
* ``device_ns`` -- the op inside a CUDA graph, replayed and timed with CUDA events;
  device time per op with launch overhead removed. Not an eager figure.

All values are integer nanoseconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from traceview.errors import CaptureError
from traceview.stats import median
from traceview.workload.device import Device
from traceview.workload.graphs import capture_graph

#: Graph replays timed for ``device_ns`` (after one untimed replay).
DEVICE_REPLAYS = 10
#: Ops recorded into the graph for ``device_ns``: enough to make event resolution (about
#: 0.5 us) negligible per op, few enough to stay quick for large ops.
DEVICE_OPS_MIN, DEVICE_OPS_MAX = 10, 100
#: Target device time of one timed replay, used to choose the number of ops.
DEVICE_REPLAY_TARGET_NS = 5_000_000

TIMER = (
    "host: time.perf_counter_ns around call+synchronize (full API) or a batch "
    "(amortized); device: torch.cuda.Event elapsed_time over CUDA graph replays; "
    "trace: torch.profiler (Kineto/CUPTI)"
)


def full_api_samples(device: Device, call: Callable[[], Any], n: int) -> list[int]:
    """``n`` timings of one synchronised call, in ns."""
    perf, sync = time.perf_counter_ns, device.sync
    samples = []
    for _ in range(n):
        t0 = perf()
        call()
        sync()
        samples.append(perf() - t0)
    return samples


def amortized(device: Device, call: Callable[[], Any], n: int) -> tuple[int, int]:
    """(submit ns per call, completion ns per call) for ``n`` calls and one sync."""
    perf, sync = time.perf_counter_ns, device.sync
    sync()
    t0 = perf()
    for _ in range(n):
        call()
    t1 = perf()
    sync()
    t2 = perf()
    return (t1 - t0) // n, (t2 - t0) // n


def device_per_op(device: Device, call: Callable[[], Any], full_api_ns: int,
                  out_bytes: int, what: str) -> dict[str, Any]:
    """Device time per op from CUDA graph replays timed with CUDA events.

    Returns ``{device_ns, device_ns_samples, device_graph_ops, device_replays}`` or, when
    the implementation cannot be captured, ``device_ns: None`` with ``device_error``.
    """
    return device_per_op_interleaved(device, {"": (call, out_bytes, what)}, full_api_ns)[""]


def device_per_op_interleaved(device: Device,
                              sides: dict[str, tuple[Callable[[], Any], int, str]],
                              full_api_ns: int) -> dict[str, dict[str, Any]]:
    """:func:`device_per_op` for several calls in one process, measured alike.

    ``sides`` maps a label to ``(call, out_bytes, what)``. Every side's graph records the
    same number of ops (chosen from ``full_api_ns``, the fastest side's figure), all graphs
    are captured before any is timed, and the timed replays alternate (A B, B A, ...).
    Why: measured one side after the other in ``ab --same-process`` on the H200, the second
    side's graph read 164 ns (14%) slower per op in 16 of 16 processes for the same kernel,
    which fresh processes (one side each) did not show.
    """
    torch = device.torch
    ops = max(DEVICE_OPS_MIN, min(DEVICE_OPS_MAX, DEVICE_REPLAY_TARGET_NS // max(full_api_ns, 1)))
    free = device.free_bytes() or 0
    out_total = sum(out_bytes for _, out_bytes, _ in sides.values())
    if out_total:
        ops = max(1, min(ops, free // 4 // out_total))
    result: dict[str, dict[str, Any]] = {}
    graphs = {}
    for label, (call, _, what) in sides.items():
        try:
            graphs[label] = capture_graph(torch, call, ops, what)
        except CaptureError as exc:
            result[label] = {"device_ns": None, "device_error": str(exc)}
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for graph in graphs.values():
        graph.replay()
    torch.cuda.synchronize()
    samples: dict[str, list[int]] = {label: [] for label in graphs}
    order = list(graphs)
    for i in range(DEVICE_REPLAYS):
        for label in (order if i % 2 == 0 else order[::-1]):
            start.record()
            graphs[label].replay()
            end.record()
            end.synchronize()
            samples[label].append(round(start.elapsed_time(end) * 1e6 / ops))
    graphs.clear()
    for label, got in samples.items():
        result[label] = {
            "device_ns": int(median(got)),
            "device_ns_samples": got,
            "device_graph_ops": ops,
            "device_replays": DEVICE_REPLAYS,
        }
    return result


def measure(device: Device, call: Callable[[], Any], n: int, out_bytes: int,
            what: str, replay: Callable[[], None] | None = None) -> dict[str, Any]:
    """The ``baseline`` metadata block. ``replay`` (graph mode) adds ``replay_ns_p50``:
    one synchronised graph replay, the graph-mode analogue of the full-API figure."""
    samples = full_api_samples(device, call, n)
    p50 = int(median(samples))
    submit_ns, amortized_ns = amortized(device, call, n)
    block: dict[str, Any] = {
        "n": n,
        "full_api_ns_p50": p50,
        "full_api_ns_samples": samples,
        "amortized_submit_ns": submit_ns,
        "amortized_ns": amortized_ns,
    }
    if device.is_cuda:
        block.update(device_per_op(device, call, p50, out_bytes, what))
    else:
        block.update({"device_ns": None, "device_error": "no CUDA device: no graph replay"})
    if replay is not None:
        replays = full_api_samples(device, replay, n)
        block["replay_ns_p50"] = int(median(replays))
        block["replay_ns_samples"] = replays
    return block
