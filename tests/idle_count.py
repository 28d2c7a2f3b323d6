"""Device idle after launches and the profiler's event numbering, counted from a trace's
raw JSON events (``rawcount``; no traceview code): the independent counts the tests of
traces that lost events check traceview's figures against."""

from __future__ import annotations

from decimal import Decimal

from rawcount import clip, union


def _ns(x) -> int:
    return int(Decimal(str(x)) * 1000)


def after_launch(events: list[dict], a: int, b: int) -> int:
    """Device idle in [a, b) after the launch of the work that ends each gap, counted from
    the raw events: each gap's end less the later of its start and that launch's start."""
    work = sorted((_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"]), e["args"].get("correlation"))
                  for e in events if e.get("ph") == "X"
                  and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    launch = {e["args"]["correlation"]: _ns(e["ts"]) for e in events
              if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    busy = union(clip([[s, e] for s, e, _ in work], a, b))
    gaps = [[x, y] for x, y in zip([a] + [e for _, e in busy], [s for s, _ in busy] + [b],
                                   strict=True) if y > x]
    total = 0
    for g0, g1 in gaps:
        ends = [c for s, _, c in work if s == g1]
        if g1 >= b or not ends or ends[0] not in launch:
            continue
        total += g1 - min(max(launch[ends[0]], g0), g1)
    return total


def numbering_gaps(events: list[dict]) -> tuple[int, int]:
    """(numbers missing between the first and last ``Ev Idx``, places the numbering skips)."""
    nums = sorted({e["args"]["Ev Idx"] for e in events
                   if isinstance(e.get("args"), dict) and "Ev Idx" in e["args"]})
    steps = [b - a for a, b in zip(nums, nums[1:], strict=False)]
    return sum(d - 1 for d in steps), sum(d > 1 for d in steps)


def step_bounds(events: list[dict]) -> list[tuple[int, int]]:
    """Each ``ProfilerStep#N`` range as (start, end), in time order."""
    return sorted((_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in events
                  if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
