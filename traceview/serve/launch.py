"""Starting a task in a fresh process for a variant, and reading its JSON lines.

The variant decides the process: its ``python`` (default: this interpreter) and its
``env`` on top of this environment (:func:`traceview.runner.process.child_env`: this
traceview's folder first on ``PYTHONPATH``, so another interpreter runs the same code).
Every line the child prints that parses as a JSON object is kept in order, as the
outcome's ``records``; a final ``{"result": ...}`` line is its ``value``. Without one,
the outcome says why: an ``{"error": ...}`` line (a problem the user can fix), the time
limit (``timeout``), or the exit status and the last stderr line (``crashed``: a process
killed by a CUDA fault prints no JSON).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from traceview.runner.outcome import CHILD_TIMEOUT_S, Outcome, Status
from traceview.runner.process import ChildSpec, child_env, spawn
from traceview.serve.spec import Variant

CHILD_MODULE = "traceview.serve.child"
#: What a task that ran past its time limit says (``--child-timeout`` changes the limit).
TIMED_OUT = "the process ran past its time limit (--child-timeout) and was stopped"


def outcome(lines: list[dict[str, Any]], returncode: int | None,
            stderr_tail: str = "") -> Outcome:
    """A task's outcome from the JSON lines it printed, its exit code (None: stopped at
    its time limit) and the line of stderr that says most."""
    last = lines[-1] if lines else None
    value = last.get("result") if isinstance(last, dict) else None
    said = next((str(ln["error"]) for ln in reversed(lines)
                 if "error" in ln and len(ln) == 1), None)
    status: Status
    if value is not None:
        status, error = "ok", None
    elif returncode is None:
        status, error = "timeout", said or TIMED_OUT
    elif said is not None:
        status, error = "error", said
    else:
        status, error = "crashed", (f"the process exited with status {returncode}: "
                                    f"{stderr_tail or 'no message'}")
    return Outcome(status, value=value, records=tuple(lines), error=error,
                   returncode=returncode, stderr_tail=(stderr_tail,) if stderr_tail else ())


def command(variant: Variant) -> tuple[list[str], dict[str, str]]:
    """(argv, env) of a child for ``variant``."""
    spec = ChildSpec(label=variant.label, entry=("-m", CHILD_MODULE),
                     python=variant.python or sys.executable, env=dict(variant.env))
    env = child_env(spec)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return [spec.python, *spec.entry], env


def _stderr_tail(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "Error" in ln or "error" in ln]
    return (errors[-1] if errors else lines[-1] if lines else "")[:300]


def in_subprocess(variant: Variant, task: dict[str, Any],
                  timeout_s: float = CHILD_TIMEOUT_S) -> Outcome:
    """Run ``task`` in a fresh process of ``variant``."""
    argv, env = command(variant)
    try:
        done = spawn(argv, json.dumps(task), env, timeout_s=timeout_s)
    except OSError as exc:
        return outcome([], 127, f"cannot start {argv[0]}: {exc}")
    if done.returncode is None:
        return outcome(_json_lines(done.stdout), None, "")
    return outcome(_json_lines(done.stdout), done.returncode, _stderr_tail(done.stderr))


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
    return outcome(lines, 0, "")
