"""Where per-trace work runs: this process, a local process pool, or Ray tasks.

:func:`each` runs ``fn`` over the items and yields ``(position, result)`` as results
arrive, so the caller reduces them one at a time (the ranks view keeps a rank's compact
report, never its trace). The engines:

* ``local`` — the default. The pool starts only when it pays: a process pool costs
  about a second to start (a fresh interpreter importing numpy and polars per worker,
  measured in ``docs/fleet.md``), so fewer than two items, ``jobs=1``, or local files
  totalling under :data:`POOL_MIN_BYTES` stored bytes (URLs too: their sizes are asked
  for) run here, in order. The pool is ``runner.pool`` (every child process goes through
  ``runner``); its workers come from the
  ``forkserver`` start method where there is one (forking a process that already runs
  threads can deadlock the child).
* ``ray`` — one Ray task per item (``num_cpus=1``), scheduled wherever the cluster
  puts it; ``address`` as ``ray.init`` takes it (``"auto"``: the running cluster; none:
  the running one if any, else a new one on this machine). The driver's traceview
  package travels with the tasks (``runtime_env`` ``py_modules``), so the workers run
  the driver's code. Ray is the ``traceview[ray]`` extra and is imported only here,
  only for this engine.

**Failures.** ``fn`` turns a trace's own problems into its result (a one-line error).
A worker that dies (killed for memory, a crash in native code) is ``crashed(item)``: in
the local pool, where a dead worker breaks the whole pool and the items in flight
cannot tell which one did it, those items are run again one at a time in fresh
processes first; a Ray task is retried once (:data:`RAY_RETRIES`) by Ray itself.

**Ctrl-C and SIGTERM.** Only the driver sees the interrupt. Local workers are started
with SIGINT and SIGTERM blocked (the terminal sends Ctrl-C to the whole process group; a
worker interrupted in its bootstrap or mid-task would print its own traceback), and they
ignore SIGINT; a signal that arrives while the pool starts waits until the pool exists,
so that the driver always has a pool to stop. On interrupt the driver terminates the
workers (SIGKILL) and waits for them, a second signal held meanwhile (``interrupts.deferred``);
Ray tasks are cancelled (``force=True``). Then the interrupt goes on to the CLI: exit 130
(143 for SIGTERM).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from traceview.errors import UsageError
from traceview.runner.pool import pool_each

T = TypeVar("T")
R = TypeVar("R")

Engine = Literal["local", "ray"]
ENGINES = ("local", "ray")
# Local files smaller than this in all run in this process: below it, starting the pool
# costs more than it saves (measured: benchmarks/fleet.py, docs/fleet.md). The variable
# lets the fault tests start a pool on small traces.
POOL_MIN_BYTES = int(os.environ.get("TRACEVIEW_POOL_MIN_BYTES") or 32 << 20)
# Ray retries a task whose worker died this many times before the item is ``crashed``.
RAY_RETRIES = 1
# How long the driver waits for results before it looks again (progress, Ctrl-C), in s.
POLL_S = 0.2


@dataclass
class Tally:
    """What the progress bar shows: items done, failed (counted in ``done`` too), and
    running (submitted, not finished: in the local pool at most one per worker)."""

    total: int
    done: int = 0
    failed: int = 0
    running: int = 0


Progress = Callable[[Tally], None]


def worker_count(n_items: int, jobs: int | None = None) -> int:
    if n_items <= 0:
        return 0
    limit = jobs if jobs and jobs > 0 else (os.cpu_count() or 1)
    return max(1, min(n_items, limit))


def pool_pays(sizes: Sequence[int | None], jobs: int | None = None) -> bool:
    """Whether a process pool is worth starting for items of these sizes (``None``: a
    URL or unknown size, counted as large)."""
    if worker_count(len(sizes), jobs) <= 1:
        return False
    if jobs is not None and jobs > 1:
        return True  # asked for by name
    known = [s for s in sizes if s is not None]
    return len(known) < len(sizes) or sum(known) >= POOL_MIN_BYTES


def each(fn: Callable[[T], R], items: Sequence[T], *, engine: str = "local",
         jobs: int | None = None, address: str | None = None,
         sizes: Callable[[], Sequence[int | None]] | None = None,
         crashed: Callable[[T, str | None], R] | None = None,
         failed: Callable[[R], bool] | None = None,
         progress: Progress | None = None) -> Iterator[tuple[int, R]]:
    """``(i, fn(items[i]))`` for every item, in the order results arrive.

    ``sizes()``: each item's bytes, for the local engine's pool decision (asked only
    there; ``None`` or no ``sizes``: large).
    ``crashed(item, detail)``: the result for an item whose worker died. ``failed(r)``:
    whether a result counts as failed on the progress bar.
    """
    if engine not in ENGINES:
        raise UsageError(f"--engine {engine}: expected one of {', '.join(ENGINES)}")
    if engine == "local" and address is not None:
        raise UsageError("--address needs --engine ray")
    tally = Tally(len(items))
    failed = failed or (lambda _r: False)

    def arrived(i: int, r: R) -> tuple[int, R]:
        tally.done += 1
        tally.failed += bool(failed(r))
        tally.running = max(0, min(tally.running, tally.total - tally.done))
        if progress is not None:
            progress(tally)
        return i, r

    if progress is not None:
        progress(tally)
    if engine == "ray":
        for i, r in _ray_each(fn, items, address, crashed, tally, progress):
            yield arrived(i, r)
        return
    if worker_count(len(items), jobs) <= 1 or (jobs or 0) > 1:
        known: Sequence[int | None] = [None] * len(items)  # the decision needs no sizes
    else:
        known = sizes() if sizes is not None else [None] * len(items)
    if not pool_pays(known, jobs):
        for i, x in enumerate(items):
            tally.running = 1
            if progress is not None:
                progress(tally)
            yield arrived(i, fn(x))
        return
    tally.running = worker_count(len(items), jobs)
    if progress is not None:
        progress(tally)
    for i, r in pool_each(fn, items, worker_count(len(items), jobs), crashed,
                         initializer=_worker_init):
        yield arrived(i, r)


def in_order(pairs: Iterator[tuple[int, R]], n: int) -> list[R]:
    got: dict[int, R] = dict(pairs)
    return [got[i] for i in range(n)]


def _worker_init() -> None:
    from traceview.io.allocator import keep_freed_memory

    keep_freed_memory()  # pool processes are traceview's own: keep freed memory for reuse



# ------------------------------------------------------------------------ Ray


def import_ray():
    """``ray``, or one line naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise UsageError("--engine ray needs Ray: pip install 'traceview[ray]'") from None
    return ray


def _connect(ray, address: str | None) -> bool:
    """Join (or start) the cluster; whether this call did (then :func:`_ray_each`
    disconnects at the end; a session the caller opened stays theirs)."""
    import logging

    if ray.is_initialized():
        return False
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # traceview/
    try:
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False,
                 include_dashboard=False if address is None else None,
                 runtime_env={"py_modules": [package],
                              "excludes": ["__pycache__", "*.pyc", "*.c"]})
    except ConnectionError as exc:
        raise UsageError(f"--address {address}: cannot reach a Ray cluster ({exc})") from None
    except (ValueError, RuntimeError) as exc:
        first = str(exc).strip().splitlines()
        raise UsageError(f"ray: {first[0] if first else type(exc).__name__}") from None
    return True


def _call(fn, x, cwd: str):
    """A Ray task's body: the item's own problems are already its result. Relative local
    paths mean what they meant on the driver where the driver's folder exists (this
    machine, a shared file system)."""
    if os.path.isdir(cwd):
        os.chdir(cwd)
    return fn(x)


def _died(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _ray_each(fn, items, address: str | None, crashed, tally: Tally,
              progress: Progress | None) -> Iterator[tuple[int, Any]]:
    """Ray's driver prints the raylet's messages ("A worker died ...") on stdout from a
    thread of its own, which would break a JSON document there: while connected here,
    that thread's ``sys.stdout`` is a null sink (``TRACEVIEW_DEBUG=1``: stderr), and the
    connection made here is closed at the end. A rank whose worker died says so in its
    own line."""
    import contextlib
    import sys

    ray = import_ray()
    sink = sys.stderr if os.environ.get("TRACEVIEW_DEBUG") else open(os.devnull, "w")  # noqa: SIM115
    try:
        # held across the yields: the caller prints nothing on stdout until the end
        with contextlib.redirect_stdout(sink):
            own = _connect(ray, address)
            try:
                yield from _ray_tasks(ray, fn, items, crashed, tally, progress)
            finally:
                if own:
                    ray.shutdown()
    finally:
        if sink is not sys.stderr:
            sink.close()


def _ray_tasks(ray, fn, items, crashed, tally: Tally,
               progress: Progress | None) -> Iterator[tuple[int, Any]]:
    import contextlib

    task = ray.remote(num_cpus=1, max_retries=RAY_RETRIES)(_call)
    fn_ref = ray.put(fn)  # the options, once, not once per task
    cwd = os.getcwd()
    refs = {task.remote(fn_ref, x, cwd): i for i, x in enumerate(items)}
    pending = list(refs)
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=len(pending), timeout=POLL_S,
                                     fetch_local=True)
            tally.running = len(pending)
            if not done and progress is not None:
                progress(tally)
            for ref in done:
                i = refs.pop(ref)
                try:
                    r = ray.get(ref)
                except (ray.exceptions.RayError, OSError) as exc:
                    if crashed is None:
                        raise
                    r = crashed(items[i], _died(exc))
                yield i, r
    except BaseException:
        for ref in pending:
            with contextlib.suppress(Exception):  # the task may have finished meanwhile
                ray.cancel(ref, force=True)
        with contextlib.suppress(Exception):
            ray.wait(pending, num_returns=len(pending), timeout=5)  # let them go first
        raise
