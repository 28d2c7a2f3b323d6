"""Profiled steps corrected by their unprofiled time (``traceview.capture_steps``).

The profiler slows the host, not the device: a kernel runs as long profiled as not, while
every recorded host event costs the host time. So the model removes the step's excess
(profiled p50 - unprofiled p50 over the warm steps) from where the device waited for the
host:

* **phases**: each phase of the typical warm step loses a part of the excess in
  proportion to its device-idle time (never below its device-busy time);
* **critical path**: the device items stay; the other items (host work, launch latency,
  queueing) are scaled by one factor so that the path sums to the unprofiled step.

The output states the model. It cannot say which host work the profiler slowed most;
``capture``'s split does that for a single call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from traceview.stats import median

MODEL = ("the profiler's excess (profiled - unprofiled step) removed from each phase in "
         "proportion to its device-idle time; on the critical path, device items kept and "
         "the other items scaled to sum to the unprofiled step")


@dataclass(frozen=True)
class CorrectedPath:
    kind: str
    resource: str
    what: str
    profiled_ns: int
    ns: int


@dataclass(frozen=True)
class UnprofiledSteps:
    profiled_step_ns: int
    unprofiled_step_ns: int
    n: int
    step_index: int  # the typical warm step the phases and path are from
    phases: dict[str, int]  # phase -> corrected ns
    profiled_phases: dict[str, int]
    critical_path: tuple[CorrectedPath, ...]
    model: str = MODEL
    timer: str = ""


def step_block(metadata: Mapping[str, Any]) -> dict[str, Any] | None:
    b = metadata.get("traceview_steps")
    if not isinstance(b, dict) or not isinstance(b.get("step_ns_p50"), int) or b["step_ns_p50"] <= 0:
        return None
    return b


def correct(steps: Any, metadata: Mapping[str, Any]) -> UnprofiledSteps | None:
    """``steps``: the report's ``StepsInfo``; None without unprofiled step times."""
    b = step_block(metadata)
    if b is None or steps is None or not steps.steps:
        return None
    warm = [s for s in steps.steps if not s.cold] or list(steps.steps)
    profiled = int(median([s.wall_ns for s in warm]))
    typical = min(warm, key=lambda s: (abs(s.wall_ns - profiled), s.index))
    u = b["step_ns_p50"]
    excess = max(0, typical.wall_ns - u)
    idle = sum(p.device_idle_ns for p in typical.phases)
    phases = {}
    for p in typical.phases:
        cut = excess * p.device_idle_ns / idle if idle else excess * p.wall_ns / max(typical.wall_ns, 1)
        phases[p.phase] = max(p.device_busy_ns, round(p.wall_ns - cut))
    dev = sum(i.ns for i in typical.critical_path if i.kind == "device")
    rest = sum(i.ns for i in typical.critical_path if i.kind != "device")
    # never scaled up: an unprofiled step longer than the profiled one is noise (or another
    # machine's figure), not a profiler that sped the host up
    k = min(1.0, max(0.0, (u - dev) / rest)) if rest else 0.0
    path = tuple(CorrectedPath(i.kind, i.resource, i.what, i.ns,
                               i.ns if i.kind == "device" else round(i.ns * k))
                 for i in typical.critical_path)
    return UnprofiledSteps(profiled, u, int(b.get("n", 0)), typical.index, phases,
                           {p.phase: p.wall_ns for p in typical.phases}, path,
                           timer=str(b.get("timer", "")))
