"""Time one chosen Python function per call of an op, without the profiler.

The profiler perturbs every frame of a call (an event per frame, its stack kept); a
staged timing perturbs only the stage it wraps. This timer does what a staged timing
does, for any function named by the trace: it watches exactly one code object, so the
only cost added to the call is that function's own two timer events, which
``calibrate`` measures and subtracts.

Two mechanisms, the same interface:

* Python 3.12+: ``sys.monitoring`` local ``PY_START``/``PY_RETURN`` events on that code
  object alone (no other code pays anything; closures made afresh per call are covered,
  since the code object is what is watched).
* Python 3.10/3.11: a code-object stand-in. The function object's ``__code__`` is
  replaced by a trampoline that reads the clock, calls a clone of the original function
  and reads the clock again; every reference to the function object (class attributes,
  ``from x import f``, registries) reaches the trampoline. The original code is put back
  on exit. Only live function objects can be timed this way.

Recursion counts once: only the outermost invocation adds to the inclusive time; the
nested ones are counted apart (their timer cost lies inside the outer span).
"""

from __future__ import annotations

import sys
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

MONITORING = sys.version_info >= (3, 12)
METHOD = ("sys.monitoring PY_START/PY_RETURN local events on one code object per run"
          if MONITORING else
          "code-object stand-in (a timing trampoline as the function's __code__) on one "
          "function per run")


@dataclass(frozen=True)
class Reading:
    """What one timed call held: inclusive ns of the outermost invocations, how many
    outermost and nested invocations, and invocations left open (an exception)."""

    ns: int
    outer: int
    nested: int
    open: int


class _Clock:
    """The shared bookkeeping of both mechanisms: a stack of start times."""

    def __init__(self) -> None:
        self.stack: list[int] = []
        self.total = 0
        self.outer = 0
        self.nested = 0

    def reset(self) -> None:
        self.stack.clear()
        self.total = self.outer = self.nested = 0

    def reading(self) -> Reading:
        r = Reading(self.total, self.outer, self.nested, len(self.stack))
        self.reset()
        return r


def _hooks(clock: _Clock, *, monitoring: bool = False) -> tuple[Callable[..., None],
                                                            Callable[..., None]]:
    """The start and stop hooks; with ``monitoring``, in sys.monitoring's callback
    signatures (code, offset) and (code, offset, value), so no adapter sits between."""
    perf = time.perf_counter_ns
    stack = clock.stack
    push, pop = stack.append, stack.pop

    def stop_now(t: int) -> None:
        if not stack:
            return
        t0 = pop()
        if stack:
            clock.nested += 1
        else:
            clock.total += t - t0
            clock.outer += 1

    if monitoring:
        def m_start(code: object, off: int) -> None:
            push(perf())

        def m_stop(code: object, off: int, value: object) -> None:
            stop_now(perf())

        return m_start, m_stop

    def start() -> None:
        push(perf())

    def stop() -> None:
        stop_now(perf())

    return start, stop


Timeable = types.FunctionType | types.CodeType


class FunctionTimer:
    """A context manager timing one Python function while it is entered.

    ``funcs`` is one function, several function objects sharing one code object
    (closures made by one ``def``), or (Python 3.12+) the code object alone;
    ``reading()`` returns what was timed since the last reading and starts afresh.
    """

    def __init__(self, funcs: Timeable | Sequence[Timeable]) -> None:
        items = [funcs] if isinstance(funcs, (types.FunctionType, types.CodeType)) else list(funcs)
        if not items:
            raise TypeError("nothing to time")
        first = items[0]
        code = first if isinstance(first, types.CodeType) else first.__code__
        if code.co_flags & (0x20 | 0x80 | 0x200):  # generator, coroutine, async generator
            raise TypeError(f"a generator or coroutine cannot be timed per call: {code.co_name}")
        self.funcs = [f for f in items if isinstance(f, types.FunctionType)]
        if not MONITORING and not self.funcs:
            raise TypeError(f"no live function holds {code.co_name}: before Python 3.12 "
                            "only a live function can be timed")
        self.code = code
        self.clock = _Clock()
        self._undo: list[Callable[[], None]] = []

    def reading(self) -> Reading:
        return self.clock.reading()

    def __enter__(self) -> FunctionTimer:
        self.clock.reset()
        if MONITORING:
            self._undo = [_monitor(self.code, self.clock)]
        else:
            start, stop = _hooks(self.clock)
            self._undo = [_swap(f, start, stop) for f in self.funcs]
        return self

    def __exit__(self, *exc: object) -> None:
        while self._undo:
            self._undo.pop()()


def _free_tool_id() -> int:
    mon = sys.monitoring  # type: ignore[attr-defined]
    for tool in (4, 3, 1, 0, 5, 2):  # the ids the standard tools take, last
        if mon.get_tool(tool) is None:
            return tool
    raise RuntimeError("no free sys.monitoring tool id")


def _monitor(code: types.CodeType, clock: _Clock) -> Callable[[], None]:
    mon = sys.monitoring  # type: ignore[attr-defined]
    tool = _free_tool_id()
    mon.use_tool_id(tool, "traceview.unprofiled")
    start, stop = _hooks(clock, monitoring=True)
    ev = mon.events
    mon.register_callback(tool, ev.PY_START, start)
    mon.register_callback(tool, ev.PY_RETURN, stop)
    mon.set_local_events(tool, code, ev.PY_START | ev.PY_RETURN)

    def undo() -> None:
        mon.set_local_events(tool, code, 0)
        mon.register_callback(tool, ev.PY_START, None)
        mon.register_callback(tool, ev.PY_RETURN, None)
        mon.free_tool_id(tool)

    return undo


_TRAMPOLINE = """
def _factory({free}):
    def {name}(*_tv_args_, **_tv_kwargs_):
        _tv_ = {slot}
        if _tv_ is None:
            return ({free_tuple})
        _tv_[1]()
        try:
            return _tv_[0](*_tv_args_, **_tv_kwargs_)
        finally:
            _tv_[2]()
    return {name}
"""


def _swap(func: types.FunctionType, start: Callable[..., None],
          stop: Callable[..., None]) -> Callable[[], None]:
    """Install the trampoline as ``func.__code__``; the returned function undoes it."""
    code = func.__code__
    clone = types.FunctionType(code, func.__globals__, func.__name__, func.__defaults__,
                               func.__closure__)
    clone.__kwdefaults__ = func.__kwdefaults__
    slot = f"__traceview_timer_{id(func):x}"
    free = code.co_freevars
    if {"_tv_", "_tv_args_", "_tv_kwargs_"} & set(free):
        raise TypeError(f"cannot time {code.co_name}: a free variable shadows the stand-in's")
    name = code.co_name if code.co_name.isidentifier() else "f"
    src = _TRAMPOLINE.format(free=", ".join(free), name=name, slot=slot,
                             free_tuple="".join(f"{v}, " for v in free))
    ns: dict[str, Any] = {}
    exec(compile(src, f"<traceview timer for {code.co_name}>", "exec"), ns)  # noqa: S102
    inner = next(c for c in ns["_factory"].__code__.co_consts if isinstance(c, types.CodeType))
    if len(inner.co_freevars) != len(free):  # the stand-in must take the same closure
        raise TypeError(f"cannot time {code.co_name}: its closure does not fit a stand-in")
    func.__globals__[slot] = (clone, start, stop)
    func.__code__ = inner

    def undo() -> None:
        func.__code__ = code
        func.__globals__.pop(slot, None)

    return undo
