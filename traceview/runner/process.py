"""A fresh interpreter that reads a config on stdin and prints one JSON result line.

Most children of the measuring half are this simple: the baseline's processes, ``ab``'s
sides (spawned, or forked by :mod:`traceview.runner.fork_server`), serve's tasks. A
:class:`ChildSpec` says how to start one; :func:`spawn` runs it under a time limit and
hands back what it printed; :func:`run_process` reads the result line for the
parent, raising the one-line :class:`~traceview.errors.TraceviewError` that names the
process when there is none. :func:`answer` is the child's side of that exchange.

A child is ``[spec.python, *spec.entry]``, with ``spec.config`` as JSON on stdin, the
environment of this process plus ``spec.env``, and ``PYTHONPATH`` = ``spec.path``
entries, then the folder holding this ``traceview`` package (so another interpreter
without traceview installed still finds the child), then the inherited ``PYTHONPATH``.
It prints its result as one JSON object on the last stdout line that starts with ``{``;
``{"error": "...", "exit_code": N}`` is a problem the user can fix (exit code N,
default 2). The parent side imports only the standard library and ``errors``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from traceview.errors import CaptureError, CorrectnessError
from traceview.runner.outcome import CHILD_TIMEOUT_S, QUERY_S

#: The environment variable that tells a child when (``time.monotonic_ns()``, one clock
#: for every process of the machine) its parent started it: the child's phases begin there.
SPAWNED_ENV = "TRACEVIEW_SPAWNED_NS"
#: The folder that holds the ``traceview`` package this process runs: on every child's
#: PYTHONPATH.
TRACEVIEW_ROOT = str(Path(__file__).resolve().parents[2])
#: How one process of a side starts for a round (spawned, or forked from a template):
#: ``(round, timeout_s) -> (wall ns, JSON result)``.
Starter = Callable[[int, float], tuple[int, dict[str, Any]]]


@dataclass(frozen=True)
class ChildSpec:
    """How to start one child: interpreter, entry, JSON config, environment, import path."""

    label: str
    entry: tuple[str, ...]
    config: Any = None
    python: str = sys.executable
    env: Mapping[str, str] = field(default_factory=dict)
    path: tuple[str, ...] = ()
    cwd: str | None = None
    #: CPUs the process is pinned to (``os.sched_setaffinity`` before it starts); empty:
    #: wherever the OS puts it. Both sides of an A/B comparison get the same set, so
    #: which core a process lands on is not a difference between them.
    cpus: tuple[int, ...] = ()
    #: ``"module:function"``: the same work as ``entry`` as a function of the config's
    #: JSON text, returning the result dict (raising TraceviewError for a problem the
    #: user can fix). Only with it can a child be forked from a preloaded template
    #: (:mod:`traceview.runner.fork_server`); None: always spawned fresh.
    call: str | None = None
    #: Modules the template imports before it forks (``"?name"``: only if importable).
    preload: tuple[str, ...] = ()
    #: When set, each round's config (a JSON object) also carries the round's number
    #: (from 0) under this key, so a child can counterbalance by round what it must do in
    #: some order (``ab --same-process`` builds the two sides in alternating order).
    round_key: str | None = None

    def config_text(self, round_: int) -> str:
        """The JSON text round ``round_``'s child reads on stdin."""
        if self.round_key is None:
            return json.dumps(self.config)
        return json.dumps({**self.config, self.round_key: round_})

    def describe(self) -> dict[str, Any]:
        return {"label": self.label, "python": self.python, "env": dict(self.env),
                "path": list(self.path), "entry": list(self.entry), "cpus": list(self.cpus)}


def child_env(spec: ChildSpec) -> dict[str, str]:
    """This process's environment, ``spec.env`` over it, and the child's PYTHONPATH."""
    env = dict(os.environ)
    env.update(spec.env)
    parts = [*spec.path, TRACEVIEW_ROOT]
    if env.get("PYTHONPATH"):
        parts.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


@dataclass(frozen=True)
class Finished:
    """What a spawned child left: its exit code (None: stopped at its time limit), what
    it printed, and its wall time in ns."""

    returncode: int | None
    stdout: str
    stderr: str
    wall_ns: int


def spawn(argv: list[str], stdin: str, env: Mapping[str, str], *,
          timeout_s: float = CHILD_TIMEOUT_S, cwd: str | None = None,
          cpus: tuple[int, ...] = ()) -> Finished:
    """Run ``argv`` with ``stdin``; a child still running after ``timeout_s`` is killed
    and comes back with ``returncode`` None and what it had printed. OSError when it
    cannot start."""
    pinned = frozenset(cpus)
    pin = (lambda: os.sched_setaffinity(0, pinned)) if pinned else None
    t0 = time.perf_counter_ns()
    try:
        proc = subprocess.run(argv, input=stdin, capture_output=True, text=True,
                              env=dict(env), cwd=cwd, timeout=timeout_s, check=False,
                              preexec_fn=pin)  # noqa: PLW1509 (no threads started here)
    except subprocess.TimeoutExpired as exc:
        return Finished(None, _text(exc.stdout), _text(exc.stderr),
                        time.perf_counter_ns() - t0)
    return Finished(proc.returncode, proc.stdout, proc.stderr, time.perf_counter_ns() - t0)


def query(argv: list[str], env: Mapping[str, str] | None = None) -> str | None:
    """What a quick query of a tool prints on stdout (a version, the driver's), or None
    when it cannot start, fails or runs past :data:`QUERY_S`: a query is a convenience
    recorded beside a measurement, never a reason to stop one."""
    try:
        done = spawn(argv, "", os.environ if env is None else env, timeout_s=QUERY_S)
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


def _text(out: str | bytes | None) -> str:
    return out.decode(errors="replace") if isinstance(out, bytes) else (out or "")


def run_process(spec: ChildSpec, round_: int = 0, timeout_s: float = CHILD_TIMEOUT_S
                ) -> tuple[int, dict[str, Any]]:
    """Run one fresh process of ``spec``: (wall ns, its JSON result), or TraceviewError
    naming ``spec.label`` and the round."""
    where = f"side {spec.label}, round {round_ + 1}"
    env = child_env(spec)
    env[SPAWNED_ENV] = str(time.monotonic_ns())  # the child's start-to-ready clock
    try:
        done = spawn([spec.python, *spec.entry], spec.config_text(round_), env,
                     timeout_s=timeout_s, cwd=spec.cwd, cpus=spec.cpus)
    except OSError as exc:
        raise CaptureError(f"{where}: cannot start {spec.python!r}: {exc.strerror}") from None
    if done.returncode is None:
        raise CaptureError(f"{where}: the process took over {timeout_s:g} s")
    return done.wall_ns, read_result(where, done.returncode, done.stdout, done.stderr)


def result_line(stdout: str) -> dict[str, Any] | None:
    """The last stdout line that starts with ``{``, parsed; None if there is none or it
    is not a JSON object."""
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return None
    try:
        result = json.loads(lines[-1])
    except json.JSONDecodeError:
        return None
    return result if isinstance(result, dict) else None


def last_stderr_line(stderr: str) -> str | None:
    """The last line of a child's stderr that is not the tracing library's chatter."""
    lines = [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith("USDT")]
    return lines[-1] if lines else None


def read_result(where: str, returncode: int | None, stdout: str, stderr: str
                ) -> dict[str, Any]:
    """A finished process's JSON result (its last ``{``-line), or the TraceviewError
    that names ``where`` and what went wrong: its own error line, else the last line of
    stderr or the exit code."""
    result = result_line(stdout)
    if result is not None and "error" in result:
        err = CorrectnessError if result.get("exit_code") == 3 else CaptureError
        raise err(f"{where}: {result['error']}")
    if returncode != 0 or result is None:
        has_line = any(ln.startswith("{") for ln in stdout.splitlines())
        last = last_stderr_line(stderr)
        raise CaptureError(f"{where}: the process failed: "
                           + (last if last else f"exit code {returncode}"
                              + ("" if has_line else ", no JSON result line")))
    return result


# -- the child ----------------------------------------------------------------------------
def measure_in_module(module: str, stdin: str, cache_root: Path, what: str
                      ) -> dict[str, Any]:
    """Run ``python -m module`` once in a fresh interpreter, compile caches under
    ``cache_root``, and return the one result line it prints; its failure (``what``:
    "the unprofiled baseline", ...) is a one-line ``CaptureError``."""
    env = dict(os.environ)
    env["TRITON_CACHE_DIR"] = str(cache_root / "triton")
    env["TORCHINDUCTOR_CACHE_DIR"] = str(cache_root / "inductor")
    done = spawn([sys.executable, "-m", module], stdin, env, timeout_s=CHILD_TIMEOUT_S)
    if done.returncode is None:
        raise CaptureError(f"{what} took over {CHILD_TIMEOUT_S} s")
    block = result_line(done.stdout)
    if block is not None and "error" in block:
        raise CaptureError(block["error"])
    if done.returncode != 0 or block is None:
        raise CaptureError(f"{what} process failed: "
                           + (last_stderr_line(done.stderr) or f"exit code {done.returncode}"))
    return block


def where_it_ran() -> dict[str, object]:
    """The CPUs this process may run on and the one it last ran on (``/proc/self/stat``
    field 39), so per-process figures can be read against core placement."""
    out: dict[str, object] = {}
    try:
        out["affinity"] = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        pass
    try:
        with open("/proc/self/stat") as f:
            stat = f.read()
        out["last"] = int(stat[stat.rindex(")") + 2:].split()[36])
    except (OSError, ValueError, IndexError):
        pass
    if "last" in out:  # the NUMA node of that CPU (a suspect for per-process clusters)
        try:
            nodes = [n for n in os.listdir(f"/sys/devices/system/cpu/cpu{out['last']}")
                     if n.startswith("node") and n[4:].isdigit()]
            if nodes:
                out["numa_node"] = int(nodes[0][4:])
        except OSError:
            pass
    out.update(gpu_clocks())
    return out


def gpu_clocks() -> dict[str, int]:
    """The GPU's SM and memory clocks as this process ends (NVML, where installed): a
    suspect for per-process clusters, read, never set."""
    try:
        import pynvml  # type: ignore[import-not-found]

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        return {"gpu_sm_mhz": int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
                "gpu_mem_mhz": int(pynvml.nvmlDeviceGetClockInfo(handle,
                                                                 pynvml.NVML_CLOCK_MEM))}
    except Exception:  # noqa: BLE001  (no NVML, no GPU: nothing to record)
        return {}


def answer(measure: Callable[[str], dict[str, Any]], text: str | None = None, *,
           exit: bool = True) -> int:
    """The child's side: the config (``text``, else stdin) -> ``measure`` -> one JSON
    line with where the process ran, or ``{"error", "exit_code"}`` and that exit code
    (returned instead when not ``exit``)."""
    from traceview.errors import TraceviewError

    try:
        result = measure(sys.stdin.read() if text is None else text)
    except TraceviewError as exc:
        print(json.dumps({"error": str(exc), "exit_code": exc.exit_code}), flush=True)
        if exit:
            sys.exit(exc.exit_code)
        return exc.exit_code
    result["cpu"] = where_it_ran()
    print(json.dumps(result), flush=True)
    return 0
