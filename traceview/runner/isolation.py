"""Run a piece of capture work in a fresh child process and say plainly how it ended.

Why a child: a kernel that reads out of bounds can raise an illegal memory access that
leaves the CUDA context unusable for the rest of the process, a device-side assert does
the same, and a kernel that never returns hangs whoever launched it. None of that may
take the tool down, and none of it may leak into later measurements, so the first
run of anything untrusted happens in a process of its own, under a timeout.

API (torch-free on the parent side)::

    outcome = run_child("traceview.checks.check_child:check", payload, timeout_s=120)

``entry`` is ``"package.module:function"``, imported in the child. The child calls
``function(payload, emit)``: ``payload`` is the JSON-able dict given here, ``emit(record)``
hands a JSON-able dict back to the parent at once (written to a file, flushed, so the
records emitted before a crash survive it), and the return value (a dict or None) is the
result. Everything the parent sees is an :class:`Outcome`:

* ``ok``: the function returned; ``value`` is what it returned.
* ``wrong``: it returned a dict with ``"status": "wrong"`` (the work ran, the answer is
  wrong; what is wrong is in ``value``).
* ``error``: it raised a :class:`~traceview.errors.TraceviewError`, a problem the user can
  fix (no GPU, a missing package): ``error`` is its one line, ``exit_code`` its code.
* ``crashed``: it raised anything else (``error`` is ``Type: message``, ``frame`` the
  Python frame that raised it), or the process died (a signal, an abort, ``exit()``):
  ``error`` says how, ``frame`` comes from :mod:`faulthandler`'s dump of the Python stack.
* ``timeout``: nothing came back for ``timeout_s`` seconds, counted from every ``emit``
  (so a long sequence of quick steps is not a hang); before the first ``emit`` the
  child has ``startup_s`` instead (default: ``timeout_s``), so that importing torch on a
  busy machine is not mistaken for a hung kernel when the entry emits once it is ready.
  The child is sent SIGUSR1 first, so ``frame``/``stack`` say where it was stuck, then
  killed with its whole process group.

``locate=True`` (for CUDA work) re-runs a crashed child once with
``CUDA_LAUNCH_BLOCKING=1``: kernel launches become synchronous, so an asynchronous CUDA
error surfaces at the launch that caused it instead of at some later synchronize. The
re-run's outcome is returned with ``located=True`` and the first run's error in
``first_error``. ``records`` always holds what was emitted, in order.

The child runs as ``python -m traceview.runner.isolation ENTRY RESULT_FILE`` with the
payload on stdin, the parent's environment plus ``env``, the same working directory.
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import os
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any

from traceview.runner.outcome import Outcome, Status

#: Grace period after SIGUSR1 for faulthandler to write the stack, before SIGKILL.
DUMP_GRACE_S = 2.0
#: Poll interval of the parent while the child runs.
POLL_S = 0.05
#: Lines of the child's stderr kept in the outcome.
STDERR_TAIL = 20
#: Path prefixes of frames that are the machinery, not the code that went wrong: the
#: frame reported is the innermost one outside them (the innermost of all if none is).
_MACHINERY = ("/torch/", "/triton/", "/traceview/runner/isolation.py",
              sysconfig.get_paths()["stdlib"] + "/")


def run_child(entry: str, payload: dict[str, Any], timeout_s: float, *,
              env: dict[str, str] | None = None, locate: bool = False,
              startup_s: float | None = None, python: str | None = None) -> Outcome:
    """Run ``entry(payload, emit)`` in a fresh interpreter (``python``, default this one;
    ``env`` is laid over this process's environment); see the module docstring."""
    startup = timeout_s if startup_s is None else startup_s
    python = python or sys.executable
    outcome = _run_once(entry, payload, timeout_s, env, startup, python)
    if not (locate and outcome.status == "crashed"):
        return outcome
    blocking = {**(env or {}), "CUDA_LAUNCH_BLOCKING": "1"}
    again = _run_once(entry, payload, timeout_s, blocking, startup, python)
    if again.status != "crashed":  # did not crash again synchronously: keep the first
        return outcome
    return replace(again, located=True, first_error=outcome.error)


def _run_once(entry: str, payload: dict[str, Any], timeout_s: float,
              env: dict[str, str] | None, startup_s: float, python: str) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="traceview-child-") as tmp:
        result = Path(tmp) / "result.jsonl"
        stack_file = Path(tmp) / "stack.txt"
        result.touch()
        child_env = {**os.environ, **(env or {}), "TRACEVIEW_CHILD_STACK": str(stack_file)}
        with open(Path(tmp) / "stderr.txt", "w+") as err:
            t0 = time.monotonic_ns()
            proc = subprocess.Popen(
                [python, "-m", "traceview.runner.isolation", entry, str(result)],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err, env=child_env,
                start_new_session=True, text=True,
            )
            try:
                proc.stdin.write(json.dumps(payload))  # type: ignore[union-attr]
                proc.stdin.close()  # type: ignore[union-attr]
            except BrokenPipeError:  # died before reading: reported as a crash below
                pass
            try:
                timed_out = _wait(proc, result, timeout_s, startup_s, stack_file)
            except BaseException:  # Ctrl-C or the tool itself killed: take the child along
                _kill_group(proc)
                raise
            wall = time.monotonic_ns() - t0
            err.seek(0)
            stderr = [ln.rstrip() for ln in err.read().splitlines() if ln.strip()]
        lines = _records(result)
        stack_text = stack_file.read_text(errors="replace") if stack_file.exists() else ""
    records = tuple(r["record"] for r in lines if "record" in r)
    final = next((r for r in reversed(lines) if "return" in r or "raised" in r), None)
    common: dict[str, Any] = {
        "records": records, "returncode": proc.returncode, "wall_ns": wall,
        "stderr_tail": tuple(stderr[-STDERR_TAIL:]), "timeout_s": timeout_s}
    if timed_out:
        stack = _faulthandler_stack(stack_text)
        return Outcome("timeout", error=f"no answer within {timeout_s:g} s",
                       frame=culprit(stack), stack=tuple(stack), **common)
    if final is not None and "return" in final:
        value = final["return"]
        status: Status = ("wrong" if isinstance(value, dict) and value.get("status") == "wrong"
                          else "ok")
        return Outcome(status, value=value, **common)
    if final is not None and final.get("usage"):
        return Outcome("error", error=final["raised"], exit_code=final.get("exit_code", 2),
                       **common)
    if final is not None:
        stack = final.get("stack") or []
        return Outcome("crashed", error=final["raised"], frame=culprit(stack),
                       stack=tuple(stack), **common)
    # Died without a word: a signal, an abort, or os._exit.
    stack = _faulthandler_stack(stack_text)
    sig = None
    if proc.returncode is not None and proc.returncode < 0:
        sig = signal.Signals(-proc.returncode).name
    how = f"the process was killed by {sig}" if sig else f"the process exited with code {proc.returncode}"
    last = _last_error_line(stderr)
    return Outcome("crashed", error=f"{how}{': ' + last if last else ''}", signal=sig,
                   frame=culprit(stack), stack=tuple(stack), **common)


def _wait(proc: subprocess.Popen, result: Path, timeout_s: float, startup_s: float,
          stack_file: Path) -> bool:
    """Wait for the child; True when it was killed for giving no sign of life in time."""
    deadline = time.monotonic() + startup_s
    size = 0
    while proc.poll() is None:
        now_size = result.stat().st_size
        if now_size != size:  # a record arrived: the clock starts again
            size, deadline = now_size, time.monotonic() + timeout_s
        if time.monotonic() >= deadline:
            _stop(proc, stack_file)
            return True
        time.sleep(POLL_S)
    return False


def _stop(proc: subprocess.Popen, stack_file: Path) -> None:
    """SIGUSR1 (faulthandler writes the stack), until the dump stops growing (at most
    DUMP_GRACE_S), then SIGKILL the child's process group."""
    try:
        proc.send_signal(signal.SIGUSR1)
        end, size = time.monotonic() + DUMP_GRACE_S, -1
        while time.monotonic() < end and proc.poll() is None:
            time.sleep(0.1)
            now = stack_file.stat().st_size if stack_file.exists() else 0
            if now and now == size:
                break
            size = now
    finally:
        _kill_group(proc)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the child's own session: only its processes
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _records(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:  # a line cut by the crash
            continue
    return out


def _faulthandler_stack(text: str) -> list[str]:
    """faulthandler's dump (``File "x.py", line 3 in f``, innermost first) as
    ``x.py:3 in f`` lines, innermost last, for the thread that was current."""
    frames: list[str] = []
    for block in text.split("\n\n"):
        lines = [ln.strip() for ln in block.splitlines()]
        if not any(ln.startswith(("Current thread", "Thread")) for ln in lines):
            continue
        got = []
        for ln in lines:
            if ln.startswith("File "):
                path, _, rest = ln[5:].partition(", line ")
                lineno, _, func = rest.partition(" in ")
                got.append(f"{path.strip(chr(34))}:{lineno.strip()} in {func.strip()}")
        frames = list(reversed(got))
        if any(ln.startswith("Current thread") for ln in lines):
            break
    return frames


def culprit(stack: list[str]) -> str | None:
    """The innermost frame that is not torch, triton, the stdlib or this module."""
    for frame in reversed(stack):
        if not any(m in frame for m in _MACHINERY):
            return frame
    return stack[-1] if stack else None


def short_frame(frame: str) -> str:
    """``.../flag_gems/ops/mul.py:40 in mul`` for ``/long/path/flag_gems/ops/mul.py:40 in
    mul``: the last three path components, enough to find the file."""
    path, sep, rest = frame.partition(":")
    parts = path.split("/")
    return ("/".join(["..."] + parts[-3:]) if len(parts) > 4 else path) + sep + rest


def _last_error_line(stderr: list[str]) -> str | None:
    noise = ("USDT", "Fatal Python error", "Current thread", "Thread 0x", "File ", "  File",
             "Extension modules")
    for line in reversed(stderr):
        if not line.strip().startswith(noise):
            return line.strip()
    return None


# -- the child ----------------------------------------------------------------------------
def _die_with_parent() -> None:
    """Linux: be killed when the parent dies, so that a hung child never outlives a tool
    that was itself interrupted or killed (the child runs in its own session)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _child(entry: str, result_path: str) -> None:
    _die_with_parent()
    stack_path = os.environ.get("TRACEVIEW_CHILD_STACK")
    if stack_path:
        stack_file = open(stack_path, "w")  # noqa: SIM115 (kept open for faulthandler)
        faulthandler.enable(file=stack_file, all_threads=True)
        faulthandler.register(signal.SIGUSR1, file=stack_file, all_threads=True)
    out = open(result_path, "a")  # noqa: SIM115

    def write(obj: dict[str, Any]) -> None:  # flushed and synced: survives a crash after it
        out.write(json.dumps(obj, default=str) + "\n")
        out.flush()
        os.fsync(out.fileno())

    def emit(record: dict[str, Any]) -> None:
        write({"record": record})

    from traceview.errors import TraceviewError

    try:
        payload = json.loads(sys.stdin.read())
        module, _, name = entry.partition(":")
        fn = getattr(importlib.import_module(module), name)
        value = fn(payload, emit)
    except TraceviewError as exc:
        write({"raised": str(exc), "usage": True, "exit_code": exc.exit_code})
        _exit(exc.exit_code)
    except BaseException as exc:  # noqa: BLE001 (everything else is the crash to report)
        frames = [f"{f.filename}:{f.lineno} in {f.name}"
                  for f in traceback.extract_tb(exc.__traceback__)]
        message = str(exc).strip().splitlines()
        write({"raised": f"{type(exc).__name__}: {message[0] if message else ''}".rstrip(": "),
               "stack": frames})
        _exit(1)
    write({"return": value})
    _exit(0)


def _exit(code: int) -> None:
    """Leave without interpreter teardown: the answer is on disk, and tearing down a CUDA
    context after an illegal memory access can itself hang or abort."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2])
