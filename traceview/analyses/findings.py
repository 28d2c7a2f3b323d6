"""Findings: what a reader must know before trusting or comparing the numbers.

Each finding has a stable id (a contract: checks and diffs match on it), a severity
("error" > "warning" > "info"), a one-line message with the numbers, and evidence for
the JSON output. Detectors are small functions registered in ``DETECTORS``; each takes
the finished explanation and returns zero or more findings. Thresholds are named
constants here, explained in ``docs/findings.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from traceview.explanation import Explanation

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Finding:
    id: str
    severity: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "severity": self.severity, "message": self.message,
                "evidence": self.evidence}


def _no_python_frames(ex: Explanation) -> list[Finding]:
    if ex.has_python_frames or ex.timeline.lane is None:
        return []
    untraced = ex.host_categories.get("untraced", 0)
    return [Finding(
        "no-python-frames", "info",
        "no Python frames (with_stack off): specialize, cache_key and launch_metadata "
        f"cannot be told apart; {untraced / max(ex.window.dur_ns, 1):.0%} of the window is "
        "untraced host time. Profile with with_stack=True to split it.",
        {"untraced_ns": untraced},
    )]


DETECTORS: list[Callable[[Explanation], list[Finding]]] = [_no_python_frames]


def detect(ex: Explanation) -> list[Finding]:
    found = [f for d in DETECTORS for f in d(ex)]
    return sorted(found, key=lambda f: SEVERITY_ORDER.get(f.severity, 9))
