"""Which device kernels each call launched: name, grid, block and count per call.

A faster path also needs evidence that the intended kernel ran (a review's last
question): a cache that silently falls back to another kernel, a launch that now takes
a copy first, or a grid that changed with the patch, all show here and not in a time.

:func:`kernels_per_call` reads raw Kineto events (plain dicts, as ``json.load`` gives
them): each call is a ``user_annotation`` range, each launch API event inside a range
belongs to that call, and each kernel/memcpy/memset belongs to its launch through
``args.correlation``. :func:`summarize` turns the calls into the block capture records
(``kernels_used``), and :func:`differences` says, in words, how two such blocks differ
(``ab`` and ``diff``). Torch-free: capture's probe (``traceview.opcapture.probe``) makes
the events, everything else only reads them.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

DEVICE_KINDS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")


def _dim3(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return list(value)
    return None


def kernels_per_call(events: list[dict[str, Any]], range_pattern: str) -> list[list[dict[str, Any]]]:
    """For each range whose name matches ``range_pattern`` (in time order), the device
    work its launches caused: ``[{name, kind, grid, block, count}]`` sorted by name.

    A launch belongs to the range that contains its start on the same thread; device work
    to its launch by correlation id. Device work whose launch is in no range is left out.
    """
    pat = re.compile(range_pattern)
    ranges = sorted(((e["ts"], e["ts"] + e.get("dur", 0), e.get("tid")) for e in events
                     if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                     and pat.fullmatch(str(e.get("name", "")))), key=lambda r: r[0])
    call_of: dict[Any, int] = {}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in LAUNCH_CATS:
            continue
        corr = (e.get("args") or {}).get("correlation")
        if corr is None:
            continue
        for i, (start, end, tid) in enumerate(ranges):
            if start <= e["ts"] <= end and (tid is None or e.get("tid") == tid):
                call_of[corr] = i
                break
    counts: list[Counter] = [Counter() for _ in ranges]
    for e in events:
        kind = DEVICE_KINDS.get(e.get("cat", ""))
        if kind is None or e.get("ph") != "X":
            continue
        args = e.get("args") or {}
        call = call_of.get(args.get("correlation"))
        if call is None:
            continue
        grid, block = _dim3(args.get("grid")), _dim3(args.get("block"))
        key = (str(e.get("name")), kind, tuple(grid) if grid else None,
               tuple(block) if block else None)
        counts[call][key] += 1
    return [[{"name": n, "kind": k, "grid": list(g) if g else None,
              "block": list(b) if b else None, "count": c}
             for (n, k, g, b), c in sorted(cnt.items(), key=lambda kv: (kv[0][0], str(kv[0][2])))]
            for cnt in counts]


def summarize(per_call: list[list[dict[str, Any]]], how: str) -> dict[str, Any]:
    """The ``kernels_used`` block: the first call's kernels, and whether every call
    launched the same ones (``per_call`` kept only when they differ)."""
    first = per_call[0] if per_call else []
    same = all(c == first for c in per_call)
    out: dict[str, Any] = {
        "calls": len(per_call),
        "kernels": first,
        "launches_per_call": sum(k["count"] for k in first),
        "same_every_call": same,
        "how": how,
    }
    if not same:
        out["per_call"] = per_call
    return out
