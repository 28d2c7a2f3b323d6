"""What a worker process analysing one trace hands back when it fails (the one line the CLI
would print, an interrupt passed on as such), and a plain map over worker processes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from traceview.errors import TraceviewError

T = TypeVar("T")
R = TypeVar("R")


def raise_if_interrupted(exc: BaseException) -> None:
    """Ctrl-C while a trace was being read can surface as another error raised while the
    interrupt unwound (``BufferError: memoryview has N exported buffers``): that is the
    user's interrupt, not a failed trace, so it goes on as ``KeyboardInterrupt`` (or its
    subclass ``interrupts.Terminated`` for SIGTERM: the exit code tells them apart)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            raise type(seen)() from None
        seen = seen.__context__


def error_line(exc: BaseException) -> str:
    """The one line the CLI would print for this exception (without the prefix)."""
    if isinstance(exc, TraceviewError):
        return str(exc)
    if isinstance(exc, MemoryError):
        return "out of memory while reading the trace"
    return f"internal error (a traceview bug): {type(exc).__name__}: {exc}"


def parallel_map(fn: Callable[[T], R], items: Sequence[T], jobs: int | None = None,
                 crashed: Callable[[T], R] | None = None) -> list[R]:
    """``[fn(x) for x in items]`` in local worker processes (``multi/engine.py``),
    results in input order; ``crashed(item)`` for an item whose own process died."""
    from traceview.multi.engine import each, in_order

    return in_order(each(fn, items, jobs=jobs,
                         crashed=None if crashed is None else lambda x, _d: crashed(x)),
                    len(items))


def worker_died_line(path: str, detail: str | None = None) -> str:
    why = f" ({detail})" if detail else " (killed, most likely for memory)"
    return f"{path}: the worker process analysing it died{why}"
