"""A progress bar on stderr while a big trace loads, only when stderr is a terminal.

Piped or redirected output stays clean (no bar, no escape codes). "Big" is
``PROGRESS_MIN_BYTES`` of trace text; smaller traces load in well under a second.
"""

from __future__ import annotations

import sys
from typing import Any

from traceview.io.sources import Source, basename
from traceview.model import Trace

PROGRESS_MIN_BYTES = 64 << 20


def load_with_progress(source: Source) -> Trace:
    """The trace model of the open ``source``, with a bar on stderr while it loads."""
    from traceview.report.pipeline import load

    total = _text_size(source)
    if total is None or total < PROGRESS_MIN_BYTES or not sys.stderr.isatty():
        return load(source)
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                  TimeRemainingColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(f"reading {basename(source.ref)}", total=total)
        trace = load(source, progress=lambda n: bar.update(task, completed=min(n, total)))
        bar.update(task, description="analysing", completed=total)
    return trace


def _text_size(source: Source) -> int | None:
    from traceview.errors import TraceLoadError

    try:
        return source.text_size()
    except (OSError, TraceLoadError):
        return None  # the loader reports the problem in its own words


class RanksProgress:
    """A bar on stderr while ranks are analysed (only when stderr is a terminal): ranks
    done of the total, with failed and running beside it. Use as a context manager; the
    instance is the ``progress`` callback the engines call (``multi/engine.py``)."""

    def __init__(self, what: str = "ranks") -> None:
        self.what = what
        self._bar: Any = None
        self._task = None

    def __enter__(self) -> RanksProgress | None:
        if not sys.stderr.isatty():
            return None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        self._bar = Progress("[progress.description]{task.description}", BarColumn(),
                             MofNCompleteColumn(), "{task.fields[state]}", TimeElapsedColumn(),
                             console=Console(stderr=True), transient=True)
        self._bar.__enter__()
        self._task = self._bar.add_task(self.what, total=None, state="")
        return self

    def __call__(self, tally) -> None:
        if self._bar is not None:
            self._bar.update(self._task, total=tally.total, completed=tally.done,
                             state=f"failed {tally.failed} · running {tally.running}")

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
