"""Two short probes beside the timed runs: which kernels a call launches, and what a
device-to-device copy of the same bytes achieves on this GPU.

* :func:`kernels_used`: :data:`PROBE_CALLS` warm calls, each synchronized inside its own
  ``traceview_probe_call_<i>`` range, under a profiler of their own; the exported events
  are read by ``traceview.analyses.kernels_used`` (kernel name, grid, block, count per
  call). A profiled run, so it is never timed: it is evidence of *which* kernels ran.
* :func:`copy_bandwidth`: ``dst.copy_(src)`` of half the op's bytes (a copy reads and
  writes, so it moves the op's bytes), recorded into a CUDA graph and replayed with CUDA
  events exactly as the baseline's ``device_ns`` is (``baseline.device_per_op``), and once
  more for a copy of :data:`PEAK_COPY_BYTES`, the device's streaming copy rate. A kernel's
  GB/s is read against the first (what any kernel moving these bytes can reach, latency
  included) and the second (the device's copy rate: not its limit, since a graph-captured
  copy is a memcpy node; on the H200 FlagGems' add moves 1.6x its bytes per second).
* :func:`probe_child`: both, in a fresh process of a ``traceview ab`` side's setting.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

from traceview.analyses.kernels_used import kernels_per_call, summarize

PROBE_CALLS = 3
PROBE_RANGE = "traceview_probe_call_{i}"
PROBE_PATTERN = r"traceview_probe_call_\d+"
#: The large copy that gives the device's streaming device-to-device rate (moved bytes:
#: twice this, read and written).
PEAK_COPY_BYTES = 256 * 2**20
CPU_NOTE = "no device kernels on the CPU"


def kernels_used(dev: Any, call: Any, calls: int = PROBE_CALLS) -> dict[str, Any]:
    """The ``kernels_used`` block for ``call`` (profiled probe, not timed)."""
    if not dev.is_cuda:
        return {"note": CPU_NOTE, "calls": 0, "kernels": [], "how": "not probed"}
    from torch.profiler import ProfilerActivity, profile, record_function

    call()
    dev.sync()
    with tempfile.TemporaryDirectory(prefix="traceview-probe-") as tmp:
        path = Path(tmp) / "probe.json"
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for i in range(calls):
                with record_function(PROBE_RANGE.format(i=i)):
                    call()
                    dev.sync()
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text()).get("traceEvents") or []
    how = (f"{calls} warm calls under a profiler of their own, each synchronized in a "
           "traceview_probe_call_<i> range; kernels from the launches in each range "
           "(correlation ids)")
    return summarize(kernels_per_call(events, PROBE_PATTERN), how)


def copy_bandwidth(dev: Any, op_bytes: int | None) -> dict[str, Any] | None:
    """Device-to-device copy rates: of the op's bytes, and of :data:`PEAK_COPY_BYTES`."""
    if not dev.is_cuda or not op_bytes:
        return None
    from traceview.opcapture.baseline import device_per_op

    torch = dev.torch
    out: dict[str, Any] = {"method": ("dst.copy_(src) of uint8 buffers, in a CUDA graph, "
                                      "replayed and timed with CUDA events (as device_ns); "
                                      "bytes moved = read + written")}
    for key, moved in (("same_bytes", op_bytes), ("peak", 2 * PEAK_COPY_BYTES)):
        half = max(1, moved // 2)
        free = dev.free_bytes() or 0
        if 4 * half > free:
            out[key] = None
            continue
        src = torch.empty(half, dtype=torch.uint8, device=dev.torch_device).random_(0, 255)
        dst = torch.empty_like(src)
        def copy(s: Any = src, d: Any = dst) -> Any:
            return d.copy_(s)

        got = device_per_op(dev, copy, 20_000, half, "a device-to-device copy")
        ns = got.get("device_ns")
        out[key] = None if not ns else {"bytes": 2 * half, "device_ns": int(ns),
                                        "gb_per_s": round(2 * half / ns, 3)}
        del src, dst
    return out


def probe_child(payload: dict[str, Any], emit: Any) -> dict[str, Any]:
    """Entry for ``isolation.run_child``: prepare the side's call as its timed processes
    do, then :func:`kernels_used` (and the copy rates for the op's bytes)."""
    from traceview.workload import device as device_mod
    from traceview.workload.prepare import prepare
    from traceview.workload.wire import decode_config

    config = decode_config(payload["config"])
    dev = device_mod.open_device(config)
    emit({"ready": True})
    with contextlib.ExitStack() as stack:
        ready = prepare(config, dev, stack, check=None)
        block = kernels_used(dev, ready.call)
    return {"status": "ok", "kernels_used": block}


def bandwidth_block(dev: Any, inputs: list[Any], output: Any,
                    device_ns: int | None) -> dict[str, Any]:
    """The ``bandwidth`` metadata block: bytes moved per call (exact, from the tensors),
    the achieved GB/s over the unprofiled ``device_ns``, and its share of each copy rate
    (:func:`copy_bandwidth`, measured here, in the capturing process)."""
    from traceview.analyses.kernel_bytes import Operand, bytes_moved, gb_per_s, share

    def operand(t: Any) -> Operand:
        return Operand(tuple(t.shape), tuple(t.stride()), t.element_size())

    moved = bytes_moved([operand(t) for t in inputs], [operand(output)])
    copy = copy_bandwidth(dev, moved["total"])
    achieved = gb_per_s(moved["total"], device_ns)
    same = (copy or {}).get("same_bytes") or {}
    peak = (copy or {}).get("peak") or {}
    return {
        "bytes": moved,
        "bytes_rule": ("distinct elements of each tensor input read once (stride-0 "
                       "dimensions count once), each output element written once"),
        "device_ns": device_ns,
        "time_source": "baseline.device_ns (unprofiled CUDA graph replay, per op)",
        "gb_per_s": achieved,
        "copy": copy,
        "share_of_copy_same_bytes": share(achieved, same.get("gb_per_s")),
        "share_of_copy_peak": share(achieved, peak.get("gb_per_s")),
    }
