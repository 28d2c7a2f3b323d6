"""Starting a task in a fresh process for a variant, and reading its JSON lines.

The variant decides the process: its ``python`` (default: this interpreter) and its
``env`` on top of this environment. ``PYTHONPATH`` gets this traceview's folder first so
another interpreter runs the same code. Every line the child prints that parses as a
JSON object is kept in order; the outcome says whether a final ``result`` came, and if
not, why (an ``error`` line, or the exit status and the last stderr line: a process
killed by a CUDA fault prints no JSON).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from traceview.serve.spec import Variant

#: Default limit per child: it imports torch + transformers (+ FlagGems), builds the
#: model and may compile (torch.compile, Triton). ``--child-timeout`` changes it.
CHILD_TIMEOUT_S = 600
CHILD_MODULE = "traceview.serve.child"
#: The folder that holds the ``traceview`` package this process runs.
TRACEVIEW_ROOT = str(Path(__file__).resolve().parents[2])


@dataclass(frozen=True)
class Outcome:
    lines: list[dict[str, Any]] = field(default_factory=list)
    returncode: int | None = 0
    stderr_tail: str = ""

    @property
    def result(self) -> dict[str, Any] | None:
        last = self.lines[-1] if self.lines else None
        return last.get("result") if isinstance(last, dict) else None

    @property
    def timed_out(self) -> bool:
        """Stopped at --child-timeout with no result: slow (cold JIT, autotuning) or hung;
        not evidence that anything is wrong."""
        return self.result is None and self.returncode is None

    @property
    def failure(self) -> str | None:
        """None when a result came; else one line saying why not."""
        if self.result is not None:
            return None
        for line in reversed(self.lines):
            if "error" in line and len(line) == 1:
                return str(line["error"])
        if self.returncode is None:
            return "the process ran past its time limit (--child-timeout) and was stopped"
        tail = self.stderr_tail or "no message"
        return f"the process exited with status {self.returncode}: {tail}"


def command(variant: Variant) -> tuple[list[str], dict[str, str]]:
    """(argv, env) of a child for ``variant``."""
    env = dict(os.environ)
    env.update(variant.env)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = TRACEVIEW_ROOT + (os.pathsep + path if path else "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    return [variant.python or sys.executable, "-m", CHILD_MODULE], env


def _stderr_tail(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "Error" in ln or "error" in ln]
    return (errors[-1] if errors else lines[-1] if lines else "")[:300]


def in_subprocess(variant: Variant, task: dict[str, Any],
                  timeout_s: float = CHILD_TIMEOUT_S) -> Outcome:
    """Run ``task`` in a fresh process of ``variant``."""
    argv, env = command(variant)
    try:
        proc = subprocess.run(argv, input=json.dumps(task), capture_output=True, text=True,
                              env=env, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return Outcome(_json_lines(out), None, "")
    except OSError as exc:
        return Outcome([], 127, f"cannot start {argv[0]}: {exc}")
    return Outcome(_json_lines(proc.stdout), proc.returncode, _stderr_tail(proc.stderr))


def _json_lines(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
    return out


Launcher = Callable[[Variant, dict[str, Any]], Outcome]


def in_this_process(variant: Variant, task: dict[str, Any]) -> Outcome:
    """The same task without a new process (tests; no isolation, env applied around it).

    The task goes through JSON both ways, exactly as it would to a child.
    """
    from traceview.capture.device import environ
    from traceview.serve.child import run_task

    lines: list[dict[str, Any]] = []
    with environ(dict(variant.env)):
        run_task(json.loads(json.dumps(task)), lambda d: lines.append(json.loads(json.dumps(d))))
    return Outcome(lines, 0, "")
