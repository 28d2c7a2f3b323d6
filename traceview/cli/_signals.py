"""The CLI's signal handling: SIGTERM handled like Ctrl-C.

A plain ``kill`` (SIGTERM) used to end the process at once: no ``finally`` ran, so a
staged Parquet file or a pool of workers outlived it. Here it raises
``traceview.interrupts.Terminated``, a ``KeyboardInterrupt``, so every clean-up written
for Ctrl-C runs for it too; the CLI exits 143 for it (128 + SIGTERM) and 130 for Ctrl-C,
the shell's convention. Standard library only: the console entry point
(``cli/entry.py``) installs it before anything heavy is imported, so a signal during
start-up is handled too.
"""

from __future__ import annotations

import signal
from types import FrameType
from typing import Any

from traceview.interrupts import Terminated, in_main_thread

INTERRUPT_EXIT = 130  # 128 + SIGINT
TERMINATE_EXIT = 143  # 128 + SIGTERM


def _on_term(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


def install() -> None:
    """SIGTERM raises ``Terminated``; Ctrl-C keeps Python's ``KeyboardInterrupt``. Only
    the main thread may set handlers; elsewhere (an embedding program) nothing changes."""
    if not in_main_thread():
        return
    signal.signal(signal.SIGTERM, _on_term)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # started with Ctrl-C ignored
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)


def ignore() -> dict[int, Any]:
    """Ignore SIGINT and SIGTERM from here on: the process is on its way out after the
    first one, and a second one raised in the exit path printed a traceback. Returns
    the handlers it replaced, for :func:`restore` where the process goes on (a command
    run inside another program, or a test): an ignored signal is inherited by every
    process started later, which would then never stop on Ctrl-C."""
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
