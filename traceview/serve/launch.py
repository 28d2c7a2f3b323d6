"""Starting a task in a fresh process for a variant, and reading its JSON lines.

The variant decides the process: its ``python`` (default: this interpreter) and its
``env`` on top of this environment (:func:`traceview.runner.process.child_env`: this
traceview's folder first on ``PYTHONPATH``, so another interpreter runs the same code).

Two ways to start one: :func:`in_subprocess` spawns a fresh interpreter (it imports
torch and transformers itself, 10-14 s on the H200 host), and :func:`forking` forks it
from a **template** per interpreter and environment that imported torch and
transformers once, without initialising CUDA (:mod:`traceview.runner.fork_server`, as
``ab`` does). The forked process is as fresh as the protocol needs: its own CUDA
context, allocator, model, backend and compiled kernels, nothing left from an earlier
task. Variants with the same interpreter and environment (eager against flag_gems) share
one template, so both sides of an A/B start from the same parent.

Every line the child prints that parses as a JSON object is kept in order, as the
outcome's ``records``; a final ``{"result": ...}`` line is its ``value``. Without one,
the outcome says why: an ``{"error": ...}`` line (a problem the user can fix), the time
limit (``timeout``), or the exit status and the last stderr line (``crashed``: a process
killed by a CUDA fault prints no JSON).
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from traceview.runner.outcome import CHILD_TIMEOUT_S, Outcome, Status
from traceview.runner.process import SPAWNED_ENV, ChildSpec, Finished, child_env, spawn
from traceview.serve.spec import Variant

CHILD_MODULE = "traceview.serve.child"
#: The function a template's child runs on the task's JSON (it prints the task's lines).
FORK_CALL = f"{CHILD_MODULE}:forked"
#: What a serve template imports once for all its tasks. ``?``: only if importable, and
#: left to each task's process if its import initialised CUDA (the template then starts
#: once more without it); ``~``: tried in a throwaway child first, since FlagGems' import
#: queries the device. Only torch is required: without it no task can run anyway.
PRELOAD = ("torch", "?transformers", "?transformers.models.llama.modeling_llama",
           "?transformers.generation.utils", "?torch.profiler")
#: What FlagGems imports that leaves CUDA down (its own import does not: FlagGems 5
#: queries the device), so a flag_gems process imports only FlagGems itself.
FLAG_GEMS_DEPENDENCIES = ("?triton", "?triton.language", "?sqlalchemy", "?sqlalchemy.orm",
                          "?sqlalchemy.ext.automap", "?yaml")
#: torch.compile's front end, 4-5 s of a process's start (as ab's templates).
COMPILE_DEPENDENCIES = ("?triton", "?torch._dynamo")


def preload_for(variants: Sequence[Variant]) -> tuple[str, ...]:
    """A template's imports for the variants it serves: :data:`PRELOAD`, what their
    backends import, and FlagGems itself only when every variant uses it (and only if
    its import leaves CUDA down): a torch eager side never runs with it loaded."""
    backends = {v.backend for v in variants}
    extra: tuple[str, ...] = ()
    if "flag_gems" in backends:
        extra += FLAG_GEMS_DEPENDENCIES
    if "compile" in backends:
        extra += COMPILE_DEPENDENCIES
    if backends == {"flag_gems"}:
        extra += ("~flag_gems",)
    return tuple(dict.fromkeys(PRELOAD + extra))
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
    env[SPAWNED_ENV] = str(time.monotonic_ns())  # the child's start-to-task clock
    try:
        done = spawn(argv, json.dumps(task), env, timeout_s=timeout_s)
    except OSError as exc:
        return outcome([], 127, f"cannot start {argv[0]}: {exc}")
    return _finished(done)


def _finished(done: Finished) -> Outcome:
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
    from traceview.serve.child import run_task
    from traceview.workload.device import environ

    lines: list[dict[str, Any]] = []
    with environ(dict(variant.env)):
        run_task(json.loads(json.dumps(task)), lambda d: lines.append(json.loads(json.dumps(d))))
    return outcome(lines, 0, "")


def _group(variant: Variant) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    """What decides a variant's process (its template): interpreter and environment."""
    return variant.python, tuple(sorted(variant.env.items()))


class Forking:
    """A :data:`Launcher` that forks each task's process from its variant's template
    (spawning instead where the template cannot serve), and says how it went."""

    def __init__(self, started: Any, labels: dict[tuple[Any, ...], str],
                 timeout_s: float) -> None:
        self.started = started  # fork_server.Started
        self.labels = labels
        self.timeout_s = timeout_s
        self.lost: dict[str, str] = {}  # template label -> why it stopped serving
        self.waited_ns: int | None = None  # the first task's wait for the templates

    def __call__(self, variant: Variant, task: dict[str, Any]) -> Outcome:
        from traceview.runner.fork_server import TemplateFailed

        label = self.labels.get(_group(variant))
        t0 = time.perf_counter_ns()
        ready = self.started.ready()
        if self.waited_ns is None:
            self.waited_ns = time.perf_counter_ns() - t0
        template = ready.get(label) if label is not None else None
        if label is None or template is None or label in self.lost:
            return in_subprocess(variant, task, timeout_s=self.timeout_s)
        try:
            return _finished(template.task(json.dumps(task), self.timeout_s))
        except TemplateFailed as exc:
            self.lost[label] = f"{exc}; spawned a fresh interpreter per process after it"
            return in_subprocess(variant, task, timeout_s=self.timeout_s)

    def describe(self) -> dict[str, Any]:
        """``protocol.process_start``: ``mode`` (fork or spawn), ``why`` (spawning's
        reason, or null), ``waited_ns`` (how long the first task waited for the
        templates' imports), per template the variants it serves, its start and imports
        (ns, once for all its tasks), and why a template stopped serving mid-run."""
        out: dict[str, Any] = dict(self.started.describe(), waited_ns=self.waited_ns)
        for label, entry in out["templates"].items():
            entry["variants"] = label.split("+")
            if label in self.lost:
                entry["lost"] = self.lost[label]
        return out


@contextlib.contextmanager
def forking(variants: Sequence[Variant], *, timeout_s: float = CHILD_TIMEOUT_S,
            fork: bool = True) -> Iterator[Forking]:
    """Start one template per interpreter and environment among ``variants`` now (they
    import while the caller goes on: the check cache's version probe, the first task
    waits for them), and yield the launcher; every template is stopped on leaving."""
    from traceview.runner.fork_server import start_templates

    groups: dict[tuple[Any, ...], list[Variant]] = {}
    for v in variants:
        groups.setdefault(_group(v), []).append(v)
    labels = {g: "+".join(v.label for v in vs) for g, vs in groups.items()}
    sides = {labels[g]: ChildSpec(
        label=labels[g], entry=("-m", CHILD_MODULE), python=vs[0].python or sys.executable,
        env=dict(vs[0].env), call=FORK_CALL, preload=preload_for(vs))
        for g, vs in groups.items()}
    with start_templates(sides, fork=fork) as started:
        yield Forking(started, labels, timeout_s)
