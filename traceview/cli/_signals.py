"""The CLI's signal handling: SIGTERM handled like Ctrl-C, and an exit no signal can cut.

A plain ``kill`` (SIGTERM) used to end the process at once: no ``finally`` ran, so a
staged Parquet file or a pool of workers outlived it. Here it raises
``traceview.interrupts.Terminated``, a ``KeyboardInterrupt``, so every clean-up written
for Ctrl-C runs for it too; the CLI exits 143 for it (128 + SIGTERM) and 130 for Ctrl-C,
the shell's convention.

Only the first interrupt raises. Every interrupt ends the CLI's process, so a second
one could only cut short the clean-up, the message or the exit (a traceback from wherever
it landed); later signals are dropped, and so is the one polars passes on after raising
its own ``KeyboardInterrupt`` for the same Ctrl-C. For the interpreter's own shutdown both signals are
ignored (:func:`ignore`): it restores the default action of any signal with a Python
handler before it tears down its modules (tens of ms), and a signal then ended the
process by the signal itself (status -2 or -15, not a word), after the work was done.

Standard library only: the console entry point (``cli/entry.py``) installs it before
anything heavy is imported, so a signal during start-up is handled too.
"""

from __future__ import annotations

import signal
import sys

from traceview.interrupts import Terminated, in_main_thread

TYPE_CHECKING = False  # not ``typing``'s: this module is imported before the handlers
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any

INTERRUPT_EXIT = 130  # 128 + SIGINT
TERMINATE_EXIT = 143  # 128 + SIGTERM

_raised: list[int] = []  # every signal since the process was interrupted


def _on_signal(signum: int, frame: FrameType | None) -> None:
    # already on its way out: by an earlier signal, or by polars' own KeyboardInterrupt
    # (polars sets a Ctrl-C handler when imported: it stops the query it is running
    # with a KeyboardInterrupt, then passes the signal on to this one)
    on_its_way = _raised or isinstance(sys.exc_info()[1], KeyboardInterrupt)
    _raised.append(signum)
    if on_its_way:
        return
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _swallowed(unraisable: Any) -> None:
    """``sys.unraisablehook``: an interrupt raised where no exception can propagate (a
    weakref callback, such as the one on importlib's module locks, or a ``__del__``) was
    printed as "Exception ignored" and lost, and the run went on to exit 0. The signal is
    sent again a moment later, to be raised where it can."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt) and _raised:
        import threading
        import time

        signum, main = _raised[0], threading.main_thread().ident
        returned = threading.Event()

        def again() -> None:
            # only once this hook has returned: a signal handled while the main thread
            # is still in here (a loaded machine can hold it in ``start`` for longer than
            # the delay) would raise inside the hook, be printed and lost once more
            returned.wait(1.0)
            time.sleep(0.005)
            _raised.clear()  # the re-sent signal is the first again: it raises
            if main is not None:
                signal.pthread_kill(main, signum)

        threading.Thread(target=again, daemon=True).start()
        returned.set()
        return
    _previous_hook(unraisable)


_previous_hook = sys.unraisablehook


def install() -> None:
    """SIGTERM raises ``Terminated`` and Ctrl-C ``KeyboardInterrupt``, the first of them
    only. Only the main thread may set handlers; elsewhere (an embedding program)
    nothing changes."""
    global _previous_hook
    if not in_main_thread():
        return
    _previous_hook = sys.unraisablehook
    sys.unraisablehook = _swallowed
    signal.signal(signal.SIGTERM, _on_signal)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # started with Ctrl-C ignored
        return
    signal.signal(signal.SIGINT, _on_signal)


def ignore() -> dict[int, Any]:
    """Ignore SIGINT and SIGTERM from here on: the process is on its way out, and a
    signal raised in the exit path printed a traceback, or, once the interpreter had
    reset the handlers, ended it by the signal. Returns the handlers it replaced, for
    :func:`restore` where the process goes on (a command run inside another program,
    or a test): an ignored signal is inherited by every process started later, which
    would then never stop on Ctrl-C."""
    if not in_main_thread():
        return {}
    return {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}


def restore(old: dict[int, Any]) -> None:
    """Put back the handlers :func:`ignore` replaced."""
    for s, handler in old.items():
        signal.signal(s, handler)


def exit_code(exc: BaseException) -> int:
    """130 for Ctrl-C, 143 for SIGTERM."""
    return TERMINATE_EXIT if isinstance(exc, Terminated) else INTERRUPT_EXIT


def message(exc: BaseException) -> str:
    return "traceview: terminated" if isinstance(exc, Terminated) else "traceview: interrupted"
