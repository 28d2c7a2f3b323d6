"""SIGTERM as an exception, and clean-up that a second signal cannot cut short.

``Terminated`` is a ``KeyboardInterrupt``: every clean-up written for Ctrl-C runs for a
plain ``kill`` too (the CLI installs the handler: ``cli/_signals.py``). ``deferred()``
holds both signals while a clean-up runs (deleting a temporary file, stopping workers):
a second Ctrl-C there used to interrupt the clean-up itself and leave the file behind.
The signal held is delivered to the handler in place when the block ends, unless an
interrupt is already on its way out. Standard library only: any layer may use it.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType, TracebackType


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C's ``KeyboardInterrupt`` would be."""


def in_main_thread() -> bool:
    """Only the main thread may set signal handlers."""
    return threading.current_thread() is threading.main_thread()


class deferred:  # noqa: N801 - used as a context manager, like contextlib's
    """``with deferred(): ...``: SIGINT and SIGTERM that arrive inside are held until the
    block ends, then delivered to the handlers the block found (``KeyboardInterrupt``,
    ``Terminated``, or whatever the program has set: an ignored signal stays ignored),
    unless the block runs while an interrupt is already being handled: that one is on
    its way out, and a second would only cut its clean-up short."""

    def __init__(self) -> None:
        self.pending: list[int] = []
        self.old: dict[int, object] = {}

    def _hold(self, signum: int, frame: FrameType | None) -> None:
        self.pending.append(signum)

    def __enter__(self) -> deferred:
        if in_main_thread():
            try:
                for s in (signal.SIGINT, signal.SIGTERM):
                    self.old[s] = signal.signal(s, self._hold)
            except BaseException:  # a signal before both were held: as if never entered
                self._put_back()
                raise
        return self

    def _put_back(self) -> None:
        for s, handler in self.old.items():
            if handler is not None:  # None: set outside Python, which cannot be put back
                signal.signal(s, handler)  # type: ignore[arg-type]

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._put_back()
        if not self.pending or exc is not None:
            return
        if isinstance(sys.exc_info()[1], KeyboardInterrupt):
            return
        # through the handler, as if it had come now: the CLI's counts it as its one
        # interrupt (``cli/_signals.py``), an ignored one changes nothing
        signal.raise_signal(self.pending[-1])
