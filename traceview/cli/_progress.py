"""A progress bar on stderr while a big trace loads, only when stderr is a terminal.

Piped or redirected output stays clean (no bar, no escape codes). "Big" is
``PROGRESS_MIN_BYTES`` of trace text; smaller traces load in well under a second.
"""

from __future__ import annotations

import sys
from pathlib import Path

from traceview.model import Trace

PROGRESS_MIN_BYTES = 64 << 20


def load_with_progress(path: Path) -> Trace:
    from traceview import load

    total = _text_size(path)
    if total is None or total < PROGRESS_MIN_BYTES or not sys.stderr.isatty():
        return load(path)
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                  TimeRemainingColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(f"reading {path.name}", total=total)
        trace = load(path, progress=lambda n: bar.update(task, completed=min(n, total)))
        bar.update(task, description="analysing", completed=total)
    return trace


def _text_size(path: Path) -> int | None:
    from traceview.io.memory import decompressed_size

    try:
        return decompressed_size(path, path.stat().st_size)
    except OSError:
        return None  # the loader reports the problem in its own words
