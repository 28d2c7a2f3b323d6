"""A fresh process per round without paying interpreter start and imports each time.

Why: on the H200 a fresh ``ab`` process spends 10-11 s before it measures anything
(13-22 s with FlagGems): the interpreter, ``import torch``/``triton`` (and flag_gems),
CUDA's context, the kernels loaded from the compile cache. Only the last two belong to
"a fresh process" in the sense the protocol needs (its own CUDA context, allocator and
in-memory caches, nothing left over from an earlier round). So each side gets one
**template**: a process with exactly the side's interpreter, environment and import path
that imports torch, triton, traceview's capture modules (and what the side preloads)
**without initialising CUDA**, then forks one child per round; a library whose import
initialises CUDA (FlagGems) is found in a throwaway child first and left to each round's
child. The child is the fresh process that measures: it creates its own CUDA context,
builds its inputs and implementation, compiles or loads its kernels, warms up, measures,
exits.

Guards: the template's environment has ``PYTORCH_NVML_BASED_CUDA_CHECK=1`` (so a
``torch.cuda.is_available()`` during an import asks NVML, not the driver); after its
imports it checks ``torch.cuda.is_initialized()``. A CUDA context does not survive a
fork, so if the imports initialised CUDA, or this platform has no ``os.fork``, or the
template does not start, :func:`start_templates` says why and the caller spawns fresh
processes instead (``protocol.process`` says which happened).

Parent side (torch-free)::

    with start_templates({"A": side_a, "B": side_b}) as started:
        ...                  # the templates import meanwhile
        runs = run_interleaved(a, b, rounds, starters=started.starters)
        started.describe()   # {"mode": "fork" | "spawn", "why": ..., "templates": ...}

Wire protocol, one JSON object per line: the parent writes ``{"preload": [...], "call":
"module:function"}`` then one ``{"config": text, "stdout": path, "stderr": path}`` per
round on the template's stdin; the template answers ``{"ready": ...}`` once, then
``{"forked": pid}`` and ``{"done": pid, "code": exit code}`` per round. The child writes
its result line to ``stdout`` (as a spawned child prints it) and its errors to
``stderr``, so :func:`~traceview.runner.process.read_result` reads both kinds
alike. With ``"prints": true`` in a round's line the function prints its own lines and
returns the exit code (:meth:`Template.task`: serve's tasks, whose progress lines come
before the result). Ctrl-C: the template and its children run in a session of their own with SIGINT
ignored; the parent's interrupt kills the whole group (and the template dies with its
parent, ``PR_SET_PDEATHSIG``), so no process prints a traceback.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from traceview.errors import CaptureError
from traceview.runner.process import (
    SPAWNED_ENV,
    ChildSpec,
    Finished,
    Starter,
    answer,
    child_env,
    read_result,
)

#: Seconds a template may take to import everything (FlagGems on a busy host: ~20 s).
TEMPLATE_START_S = 300
#: Seconds a template may take to reap a child it was told to kill.
KILLED_REAP_S = 30
#: Set in every template's environment (see the module docstring).
NVML_CHECK = {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"}


class TemplateFailed(Exception):
    """The template cannot serve: why, in words (the caller falls back to spawning).
    ``culprit``: the preloaded module whose import initialised CUDA, if that was why."""

    def __init__(self, why: str, culprit: str | None = None) -> None:
        super().__init__(why)
        self.culprit = culprit


class _TimedOut(TemplateFailed):
    """No answer within the time allowed (the template may still be sound)."""


@dataclass
class Template:
    """One side's running template: :meth:`run` is that side's :data:`Starter`."""

    side: ChildSpec
    proc: subprocess.Popen[bytes]
    folder: Path
    ready: dict[str, Any]
    _buffer: bytes = b""
    rounds: list[dict[str, Any]] = field(default_factory=list)
    tasks: int = 0

    @classmethod
    def launch(cls, side: ChildSpec, folder: Path) -> Template:
        """Start the template and send it its imports; :meth:`wait_ready` waits for them
        (in between the caller can do other work: ``ab``'s checks)."""
        if side.call is None:
            raise TemplateFailed(f"side {side.label} has no function to fork")
        if not hasattr(os, "fork"):
            raise TemplateFailed("this platform has no os.fork")
        env = {**child_env(side), **NVML_CHECK, SPAWNED_ENV: str(time.monotonic_ns())}
        cpus = frozenset(side.cpus)
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "template.stderr", "wb") as err:
            try:
                proc = subprocess.Popen(  # noqa: PLW1509 (no threads started here)
                    [side.python, "-m", "traceview.runner.fork_server"],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env,
                    cwd=side.cwd, start_new_session=True,
                    preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
            except OSError as exc:
                raise TemplateFailed(f"cannot start {side.python!r}: {exc.strerror}") from None
        me = cls(side=side, proc=proc, folder=folder, ready={})
        try:
            me._send({"preload": list(side.preload), "call": side.call})
        except TemplateFailed:
            me.close()
            raise
        return me

    def wait_ready(self, timeout_s: float = TEMPLATE_START_S) -> Template:
        """Its ``ready`` line; TemplateFailed (the template closed) if it did not come
        or its imports initialised CUDA."""
        try:
            self.ready = self._reply(timeout_s, "ready")
        except TemplateFailed:
            self.close()
            raise
        if self.ready.get("cuda_initialized"):
            self.close()
            raise TemplateFailed(f"importing {self.ready['cuda_initialized']} initialised "
                                 "CUDA in the template, and a fork cannot carry a CUDA "
                                 "context", culprit=self.ready["cuda_initialized"])
        return self

    def run(self, round_: int, timeout_s: float) -> tuple[int, dict[str, Any]]:
        """One round: fork a child, wait for it (``timeout_s``), read its result."""
        where = f"side {self.side.label}, round {round_ + 1}"
        out, err = (self.folder / f"round{round_ + 1}.{x}" for x in ("stdout", "stderr"))
        t0 = time.perf_counter_ns()
        try:
            self._send({"config": self.side.config_text(round_), "stdout": str(out),
                        "stderr": str(err)})
            self._reply(timeout_s, "forked")
            done = self._reply(timeout_s, "done")
        except TemplateFailed as exc:
            self.close()
            raise CaptureError(f"{where}: {exc}") from None
        wall = time.perf_counter_ns() - t0
        self.rounds.append({"round": round_ + 1, "wall_ns": wall})
        return wall, read_result(where, done.get("code"), _text(out), _text(err))

    def task(self, config: str, timeout_s: float) -> Finished:
        """One child on ``config`` (JSON text) whose function prints its own lines and
        returns its exit code (serve's tasks print progress lines before the result).
        A child still running after ``timeout_s`` is killed alone and comes back with
        ``returncode`` None, as a spawned one would: the template goes on serving (a
        timed-out op in serve's bisect is a verdict, not the end of the run).
        TemplateFailed when the template itself stops answering (it is closed then)."""
        self.tasks += 1
        out, err = (self.folder / f"task{self.tasks}.{x}" for x in ("stdout", "stderr"))
        t0 = time.perf_counter_ns()
        try:
            self._send({"config": config, "stdout": str(out), "stderr": str(err),
                        "prints": True})
            pid = int(self._reply(TEMPLATE_START_S, "forked")["forked"])
            try:
                code: int | None = self._reply(timeout_s, "done").get("code")
            except _TimedOut:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                self._reply(KILLED_REAP_S, "done")
                code = None
        except TemplateFailed:
            self.close()
            raise
        return Finished(code, _text(out), _text(err), time.perf_counter_ns() - t0)

    def close(self) -> None:
        """Stop the template and anything it forked (its own session: only those)."""
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def _send(self, obj: dict[str, Any]) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps(obj) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise TemplateFailed(self._died()) from None

    def _reply(self, timeout_s: float, key: str) -> dict[str, Any]:
        """The next line from the template that holds ``key``, within ``timeout_s``."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while True:
            line, sep, rest = self._buffer.partition(b"\n")
            if sep:
                self._buffer = rest
                with contextlib.suppress(ValueError):
                    msg = json.loads(line)
                    if isinstance(msg, dict) and key in msg:
                        return msg
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                raise _TimedOut(f"the process took over {timeout_s:g} s")
            readable, _, _ = select.select([fd], [], [], min(left, 1.0))
            if readable:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise TemplateFailed(self._died())
                self._buffer += chunk

    def _died(self) -> str:
        self.proc.poll()
        tail = [ln for ln in _text(self.folder / "template.stderr").splitlines()
                if ln.strip() and not ln.startswith("USDT")]
        return "the template process ended" + (f": {tail[-1]}" if tail else
                                               f" (exit code {self.proc.returncode})")


@dataclass
class Started:
    """The templates :func:`start_templates` launched: :attr:`starters` (waiting for
    them the first time) to give the runner, and :meth:`describe`, how it went."""

    sides: Mapping[str, ChildSpec]
    folder: Path
    launched: dict[str, Template]
    why: str | None
    templates: dict[str, Template] = field(default_factory=dict)
    _waited: bool = False

    @property
    def mode(self) -> str:
        return "fork" if self.templates else "spawn"

    @property
    def starters(self) -> dict[str, Starter]:
        return {label: t.run for label, t in self.ready().items()}

    def ready(self) -> dict[str, Template]:
        """The templates that serve, by label, waiting for them the first time (empty
        when they cannot: ``why`` says so)."""
        if not self._waited:
            self._wait()
        return dict(self.templates)

    def _wait(self) -> None:
        self._waited = True
        try:
            for label, template in self.launched.items():
                self.templates[label] = _ready(template, self.folder / f"{label}-again")
        except TemplateFailed as exc:
            self.close()
            self.why = f"{exc}; spawned a fresh interpreter per process"

    def close(self) -> None:
        for t in (*self.launched.values(), *self.templates.values()):
            t.close()
        self.templates = {}

    def describe(self) -> dict[str, Any]:
        """For ``protocol``: the mode, the fallback's reason, and per side the template's
        start (interpreter to first line) and imports, in ns, once for all rounds."""
        return {"mode": self.mode, "why": self.why, "templates": {
            label: {"start_ns": t.ready.get("start_ns"), "imports_ns": t.ready.get("imports_ns"),
                    "preloaded": t.ready.get("preloaded"), "skipped": t.ready.get("skipped"),
                    "left_out": t.ready.get("left_out")}
            for label, t in self.templates.items()}}


@contextlib.contextmanager
def start_templates(sides: Mapping[str, ChildSpec], *, fork: bool = True) -> Iterator[Started]:
    """Launch a template per side (when ``fork``) at once, so their imports overlap what
    the caller does next; the first use of ``starters`` waits for them. If one cannot
    serve, none is used and ``why`` says so. Every template is stopped on leaving."""
    with tempfile.TemporaryDirectory(prefix="traceview-template-") as tmp:
        started = Started(sides, Path(tmp), {}, None if fork else "asked for spawned "
                          "processes (--spawn)")
        try:
            if fork:
                try:
                    for label, side in sides.items():
                        started.launched[label] = Template.launch(side, Path(tmp) / label)
                except TemplateFailed as exc:
                    started.close()
                    started.launched = {}
                    started.why = f"{exc}; spawned a fresh interpreter per process"
            yield started
        finally:
            started.close()


def _ready(template: Template, folder: Path) -> Template:
    """:meth:`Template.wait_ready`; when an optional preload (``"?x"`` or ``"~x"``)
    initialised CUDA at import in the template itself, once more without it and without
    the optional preloads inside it (``x.y`` imports ``x`` first; each child then
    imports them)."""
    try:
        return template.wait_ready()
    except TemplateFailed as exc:
        side = template.side
        culprit = exc.culprit
        names = {f"?{culprit}", f"~{culprit}"}
        if culprit is None or not names & set(side.preload):
            raise

        def inside(p: str) -> bool:
            return p[:1] in "?~" and (p[1:] == culprit or p[1:].startswith(f"{culprit}."))

        dropped = [p[1:] for p in side.preload if inside(p)]
        lighter = replace(side, preload=tuple(p for p in side.preload if not inside(p)))
        again = Template.launch(lighter, folder).wait_ready()
        said = again.ready.get("left_out")
        again.ready["left_out"] = ", ".join(filter(None, (said, left_out_text(dropped))))
        return again


def left_out_text(names: list[str]) -> str | None:
    """``protocol.process_start.templates.X.left_out``: the preloads each round's child
    imports itself, and why; None when there are none."""
    return ", ".join(f"{n} (its import initialises CUDA)" for n in names) or None


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


# -- the template process ------------------------------------------------------------------
def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def cuda_initialized() -> bool:
    """Whether this process has a CUDA context a fork cannot carry: torch's own lazy
    init, or the driver's ``cuInit`` by anyone (Triton's driver utilities, a library's
    device query): with libcuda loaded, ``cuDeviceGetCount`` succeeds only after it."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return True
    try:
        with open("/proc/self/maps") as f:
            lib = next((ln.split()[-1] for ln in f if "libcuda.so" in ln), None)
    except OSError:
        return False
    if lib is None:
        return False
    import ctypes

    try:
        cuda = ctypes.CDLL(lib, mode=os.RTLD_NOLOAD)
        count = ctypes.c_int()
        return int(cuda.cuDeviceGetCount(ctypes.byref(count))) == 0
    except (OSError, AttributeError):
        return False


#: Seconds a throwaway child may take to import one ``~`` preload before it is killed.
TRY_IMPORT_S = 120
#: What the throwaway child's one byte means.
_TRIED = {b"k": "ok", b"c": "cuda", b"m": "not importable", b"e": "its import raised"}


def _preload(names: list[str]) -> tuple[list[str], list[str], list[str], str | None]:
    """Import ``names`` in order, checking after each that CUDA is still uninitialised:
    (imported, skipped with why, left out as initialising CUDA, the first import that
    initialised it here). ``"?x"``: only if importable. ``"~x"``: optional, and known to
    be able to initialise CUDA at import (FlagGems queries the device at import): tried
    first in a forked child, and imported here only if CUDA stayed down there; otherwise
    each round's child imports it. That costs one import in a throwaway child, where
    finding out here would cost a second template."""
    done: list[str] = []
    skipped: list[str] = []
    left_out: list[str] = []
    for name in names:
        optional = name[:1] in "?~"
        bare = name.lstrip("?~")
        tried = _try_import(bare) if name.startswith("~") else "ok"
        if tried == "cuda":
            left_out.append(bare)
            continue
        if tried != "ok":
            skipped.append(f"{bare} ({tried})")
            continue
        try:
            importlib.import_module(bare)
        except ImportError:
            if not optional:
                raise
            skipped.append(bare)
            continue
        done.append(bare)
        if cuda_initialized():
            return done, skipped, left_out, bare
    return done, skipped, left_out, None


def _try_import(name: str, timeout_s: float = TRY_IMPORT_S) -> str:
    """Import ``name`` in a forked child (this process imports nothing): ``"ok"``,
    ``"cuda"`` (the import initialised CUDA), or why not: a value of :data:`_TRIED`,
    ``"the import took over N s"``, ``"the child died"``, ``"cannot fork"``."""
    try:
        read, write = os.pipe()
        pid = os.fork()
    except OSError:
        return "cannot fork"
    if pid == 0:  # the forked child: one byte on the pipe, then out, whatever happens
        try:
            os.close(read)
            _die_with_parent()
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)  # the template's stdin is its command pipe,
            os.dup2(null, 1)  # its stdout the reply pipe
            said = b"e"
            try:
                importlib.import_module(name)
                said = b"c" if cuda_initialized() else b"k"
            except ImportError:
                said = b"m"
            except BaseException:  # noqa: BLE001 (a SystemExit from a patch, anything)
                said = b"e"
            os.write(write, said)
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        ready, _, _ = select.select([pipe], [], [], timeout_s)
        answer: bytes | None = pipe.read(1) if ready else None
    if answer is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    if answer is None:
        return f"the import took over {timeout_s:g} s"
    return _TRIED.get(answer, "the child died")


def _say(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()  # before any fork: a child must not inherit a full buffer


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent owns Ctrl-C
    _die_with_parent()
    t0 = time.monotonic_ns()
    spawned = int(os.environ.get(SPAWNED_ENV) or t0)
    hello = json.loads(sys.stdin.readline())
    module, _, name = hello["call"].partition(":")
    done: list[str] = []
    skipped: list[str] = []
    left_out: list[str] = []
    culprit: str | None = ("the interpreter's start-up (sitecustomize, .pth files)"
                           if cuda_initialized() else None)
    if culprit is None:
        done, skipped, left_out, culprit = _preload([*(hello.get("preload") or ()), module])
    call = getattr(importlib.import_module(module), name) if culprit is None else None
    _say({"ready": True, "cuda_initialized": culprit, "start_ns": t0 - spawned,
          "imports_ns": time.monotonic_ns() - t0, "preloaded": done, "skipped": skipped,
          "left_out": left_out_text(left_out)})
    if culprit:
        return
    for line in sys.stdin:
        request = json.loads(line)
        forked = time.monotonic_ns()
        pid = os.fork()
        if pid == 0:
            _child(call, request, forked)
        _say({"forked": pid})
        _, status = os.waitpid(pid, 0)
        _say({"done": pid, "code": os.waitstatus_to_exitcode(status)})


def _child(call: Any, request: dict[str, Any], forked: int) -> None:
    """In the forked child: stdin from /dev/null, stdout/stderr to the round's files,
    then the side's function on the config; never returns (``os._exit``)."""
    code = 1
    try:
        _die_with_parent()
        os.environ[SPAWNED_ENV] = str(forked)  # the child's phases start at the fork
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(target, fd)
        if request.get("prints"):  # the function prints its own lines
            code = int(call(request["config"]) or 0)
        else:
            code = answer(call, request["config"], exit=False)
    except BaseException:  # noqa: BLE001 (reported on the round's stderr, then exit 1)
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    main()
