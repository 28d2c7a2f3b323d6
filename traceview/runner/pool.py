"""The local process pool: run a function over items in worker processes, as results
arrive, surviving a worker that dies and the terminal's Ctrl-C.

The reading half's multi-trace engine (``multi/engine.py``) runs its local engine here,
so that every child process traceview starts goes through ``runner``. Workers come
from the ``forkserver`` start method where there is one (forking a process that
already runs threads can deadlock the child).

**Ctrl-C and SIGTERM.** Only the driver sees the interrupt. Workers are started with
SIGINT and SIGTERM blocked (the terminal sends Ctrl-C to the whole process group; a
worker interrupted in its bootstrap or mid-task would print its own traceback), and they
ignore SIGINT; a signal that arrives while the pool starts waits until the pool exists,
so that the driver always has a pool to stop. On interrupt the driver kills the workers
and waits for them, a second signal held meanwhile (``interrupts.deferred``).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

#: How long the driver waits for results before it looks again (Ctrl-C), in s.
POLL_S = 0.2


@contextmanager
def _sigint_blocked() -> Iterator[None]:
    """Block SIGINT and SIGTERM in this thread while worker processes start: a child
    inherits the mask (through fork and exec alike), so the pool's workers, and the
    forkserver they fork from, never receive the terminal's Ctrl-C. A signal meanwhile
    stays pending and is delivered here when the mask is restored."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _worker_start(initializer: Callable[[], None] | None) -> None:
    # the second guard: a worker forked from a forkserver some earlier code started
    # (without the blocked mask) ignores Ctrl-C from here on; SIGTERM keeps its default
    # (the driver's way of stopping a worker, silent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    if initializer is not None:
        initializer()


def _pool(workers: int, initializer: Callable[[], None] | None):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else None)
    if "forkserver" in methods:
        _quiet_forkserver()
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_start,
                               initargs=(initializer,))


def _quiet_forkserver() -> None:
    """Start the forkserver (if it is not running) with standard error on /dev/null, so
    that its workers inherit that: a worker still unpickling its start-up data when the
    driver is interrupted finds the driver's semaphores gone and printed a traceback
    (1 run in 10). A worker's own errors travel back with its result, never on stderr.
    ``TRACEVIEW_DEBUG=1`` keeps stderr."""
    from multiprocessing import forkserver

    if os.environ.get("TRACEVIEW_DEBUG"):
        forkserver.ensure_running()
        return
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        forkserver.ensure_running()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _stop(pool) -> None:
    """Kill the pool's workers now and wait for them (Ctrl-C, or an error here); a second
    Ctrl-C meanwhile is held, so that no worker outlives the driver. SIGKILL, not
    SIGTERM: a worker still in its bootstrap has SIGTERM blocked (``_sigint_blocked``)
    and would go on to print a traceback once the driver's semaphores are gone; the
    workers hold nothing to clean up (a staged part is removed with its staging
    folder)."""
    from traceview.interrupts import deferred

    with deferred():
        procs = list((getattr(pool, "_processes", None) or {}).values())
        for p in procs:
            try:
                p.kill()
            except (OSError, ValueError):
                pass
        # shutdown() (and, at exit, the interpreter) joins the pool's threads, and two of
        # them can wait forever on a killed worker: the manager thread reading a result
        # the worker was killed in the middle of writing (the driver holds the result
        # pipe's write end, so the read never sees its end: the CPython pool hung here
        # after Ctrl-C about 1 run in 30 on a loaded machine), and the feeder thread
        # writing work that no worker will read. Closing the driver's write end makes
        # that read end once the workers are gone; nothing queued matters any more.
        results = getattr(pool, "_result_queue", None)
        writer = getattr(results, "_writer", None)
        if writer is not None:
            writer.close()
        calls = getattr(pool, "_call_queue", None)
        if calls is not None:
            calls.cancel_join_thread()
        pool.shutdown(wait=True, cancel_futures=True)
        for p in procs:
            p.join(5)


def pool_each(fn: Callable[[Any], Any], items: Sequence[Any], workers: int,
              crashed: Callable[[Any, str | None], Any] | None, *,
              initializer: Callable[[], None] | None = None) -> Iterator[tuple[int, Any]]:
    """``(i, fn(items[i]))`` from a pool of ``workers`` processes, as results arrive.

    Items whose worker died (which breaks the whole pool, and the items in flight cannot
    tell which one did it) are run again one at a time in fresh single-worker pools;
    one that kills that worker too is ``crashed(item, None)`` (re-raised without
    ``crashed``). ``initializer`` runs in each worker as it starts (a picklable
    top-level function)."""
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool

    from traceview.interrupts import deferred

    broken: list[int] = []
    pool = None
    try:
        # the mask keeps the signals from the workers; deferred() keeps the handler from
        # raising here (another thread may take the signal while this one has it masked):
        # raised inside submit(), it left the pool's manager thread half started, which
        # shutdown() cannot join ("cannot join thread before it is started")
        with deferred(), _sigint_blocked():  # a signal meanwhile is raised as they end
            pool = _pool(workers, initializer)
            futures = {pool.submit(fn, x): i for i, x in enumerate(items)}
        pending = set(futures)
        while pending:
            # a timeout, so that this thread wakes to take a Ctrl-C even when the kernel
            # delivered it to another thread (fsspec's, say) while no result arrives
            done, pending = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=futures.__getitem__):
                i = futures[fut]
                try:
                    r = fut.result()
                except BrokenProcessPool:
                    broken.append(i)
                    continue
                yield i, r
        pool.shutdown(wait=True)
    except BaseException:
        if pool is not None:
            _stop(pool)
        raise
    for i in broken:
        one = None
        try:
            with deferred(), _sigint_blocked():
                one = _pool(1, initializer)
                fut = one.submit(fn, items[i])
            while not fut.done():
                wait([fut], timeout=POLL_S)
            r = fut.result()
            one.shutdown(wait=True)
        except BrokenProcessPool:
            if one is not None:
                one.shutdown(wait=True)
            if crashed is None:
                raise
            r = crashed(items[i], None)
        except BaseException:
            if one is not None:
                _stop(one)
            raise
        yield i, r
