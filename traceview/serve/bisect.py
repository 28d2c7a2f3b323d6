"""Which backend op breaks the model? Enable them one at a time and name the culprit.

The candidates are the backend's ops that replace an ATen op this model calls (the
child lists them from a profiled and a dispatch-recorded ``generate``, :mod:`.opcalls`;
the backend's other ops are counted, not tested: the model never reaches them). One child tests them in order, each alone
(FlagGems' ``only_enable`` through ``use_gems(include=[op])``), against torch eager with
the correctness check's tolerance. A CUDA fault poisons the process, so a child stops at
the first crash and a fresh one resumes after it; a child that dies without a word is
charged to the op it announced last (``{"testing": op}``).

The verdict per op: ``timeout`` (its process ran past --child-timeout: slow or hung, not
a culprit), ``crashed`` (with the phase and the error's first line), ``wrong``
(logits outside tolerance), or ``ok``. Ops that crash or are wrong alone are the
culprits; ``--exclude-ops`` takes exactly these names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from traceview.runner.outcome import Outcome
from traceview.serve.launch import Launcher
from traceview.serve.spec import Variant

#: Fresh processes one bisect may start (each crash costs one).
MAX_CHILDREN = 8


@dataclass(frozen=True)
class BisectResult:
    candidates: list[str]
    rows: list[dict[str, Any]]
    children: int
    incomplete: str | None = None
    aten_ops: list[str] = field(default_factory=list)
    called: list[str] = field(default_factory=list)
    not_called: int | None = None

    @property
    def culprits(self) -> list[str]:
        """Ops seen crashing or wrong alone (a timeout is not evidence: see timed_out)."""
        return [r["op"] for r in self.rows if r["verdict"] in ("crashed", "wrong")]

    @property
    def timed_out(self) -> list[str]:
        """Ops whose process ran past --child-timeout: slow (cold JIT, autotuning) or hung."""
        return [r["op"] for r in self.rows if r["verdict"] == "timeout"]

    def to_dict(self) -> dict[str, Any]:
        return {"candidates": self.candidates, "tested": self.rows, "culprits": self.culprits,
                "timed_out": self.timed_out,
                "children": self.children, "incomplete": self.incomplete,
                "aten_ops": self.aten_ops, "called": self.called,
                "not_called": self.not_called}


def verdict(row: dict[str, Any]) -> str:
    if row.get("crashed"):
        return "crashed"
    return "ok" if row.get("passed") else "wrong"


def bisect(variant: Variant, base_task: dict[str, Any], launch: Launcher,
           first: Outcome | None = None) -> BisectResult:
    """``first``: the outcome of a process that already began the bisect (the check's
    own, ``bisect_on_failure``); it counts as the first child and the bisect goes on
    from where it stopped."""
    candidates: list[str] | None = None
    aten: list[str] = []
    called: list[str] = []
    not_called = None
    rows: list[dict[str, Any]] = []
    children = 0
    start = 0
    while children < MAX_CHILDREN:
        task = dict(base_task, task="bisect", start=start, candidates=candidates)
        out: Outcome = first if first is not None else launch(variant, task)
        first = None
        children += 1
        announced = None
        before = len(rows)
        for line in out.records:
            if "candidates" in line:
                candidates = list(line["candidates"])
                aten = list(line.get("aten_ops") or [])
                called = list(line.get("called") or [])
                not_called = line.get("not_called")
            elif "testing" in line:
                announced = line["testing"]
            elif "op" in line:
                rows.append(dict(line, verdict=verdict(line)))
                announced = None
        if candidates is None:
            return BisectResult([], rows, children, f"the op list could not be made: "
                                f"{out.error}", aten, called, not_called)
        if announced is not None and out.status == "timeout":  # slow or hung: no verdict on the op
            rows.append({"op": announced, "crashed": False, "timed_out": True,
                         "phase": "process stopped", "error": out.error,
                         "verdict": "timeout"})
        elif announced is not None:  # died inside this op without reporting it
            rows.append({"op": announced, "crashed": True, "phase": "process died",
                         "error": out.error or "no message", "verdict": "crashed"})
        start = len(rows)
        if start >= len(candidates):
            return BisectResult(candidates, rows, children, None, aten, called, not_called)
        if out.value is None and len(rows) == before:
            return BisectResult(candidates, rows, children,
                                f"the bisect process failed before op {start}: {out.error}",
                                aten, called, not_called)
    return BisectResult(candidates or [], rows, children,
                        f"stopped after {MAX_CHILDREN} processes", aten, called,
                        not_called)
