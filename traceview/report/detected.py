"""What a detector found, before it is phrased: its own module, so that the detectors
(``report.findings``) and the phrasing (``report.messages``) both import it and neither
imports the other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from traceview.codes import Severity


@dataclass(frozen=True)
class Detected:
    """What a detector found: the id, the JSON evidence, the figures of the message."""

    id: str
    evidence: dict[str, Any]
    facts: dict[str, Any] = field(default_factory=dict)
    severity: Severity | None = None  # None: the table's severity
