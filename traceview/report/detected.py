"""What a detector found, before it is phrased: its own module, so that the detectors
(``report.findings``) and the phrasing (``report.messages``) both import it and neither
imports the other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from traceview.codes import Severity
from traceview.report.claims import Figure, Relation, Value

# A figure path that starts here is the finding's own evidence (``/findings/<i>/evidence``):
# a finding's index is known only once the findings are sorted (``findings.detect``).
EVIDENCE = "@evidence/"
# A host category a verdict names for the calls' thread's wait for another thread while
# it held a range (``findings._held_categories``): this, then that thread.
HELD_WAIT = "waiting for "


@dataclass(frozen=True)
class Detected:
    """What a detector found: the id, the JSON evidence, the figures the message shows
    (with where the report holds each) and what it asserts between them (``claims``), and
    the words that are not figures (``terms``: names, reasons, lists)."""

    id: str
    evidence: dict[str, Any]
    figures: tuple[Figure, ...] = ()
    relations: tuple[Relation, ...] = ()
    terms: dict[str, Any] = field(default_factory=dict)
    severity: Severity | None = None  # None: the table's severity

    def value(self, name: str) -> Value:
        for f in self.figures:
            if f.name == name:
                return f.value
        raise KeyError(f"{self.id} cites no figure {name!r}")

    def has(self, name: str) -> bool:
        return any(f.name == name for f in self.figures)

    def cat_figures(self, prefix: str) -> list[tuple[str, int]]:
        """The (category, ns) figures named ``prefix:category``, in the order cited."""
        return [(f.name[len(prefix) + 1:], f.value) for f in self.figures  # type: ignore[misc]
                if f.name.startswith(prefix + ":")]


def evidence(key: str) -> str:
    return EVIDENCE + key
