"""The reading half end to end: a trace file to its ``Report``.

The package facade (``traceview.load``, ``traceview.analyze``) and the modules that read
many traces (``multi``: ranks, diff, export) call these, so that no module inside the
package imports the facade, which imports them in turn.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from os import PathLike

    from traceview.io.sources import Source
    from traceview.model import Trace
    from traceview.options import Options
    from traceview.report.model import Report


def load(path: str | PathLike[str] | Source,
         progress: Callable[[int], None] | None = None) -> Trace:
    """Read a Chrome/Kineto trace (plain or gzipped) into the trace model.

    ``path`` may be a ``Source`` the caller opened (``io/sources.py``): the file is then
    sniffed and decoded without being opened again. ``progress``, if given, is called
    with the count of decompressed bytes read so far.
    """
    from traceview.errors import TraceLoadError
    from traceview.io.foreign import check_foreign
    from traceview.io.sources import Source

    if isinstance(path, Source):
        return _load(path, progress)
    try:
        src = Source.open(path)
    except TraceLoadError:
        check_foreign(os.fspath(path))  # a format known by its name says so first
        raise
    with src:
        return _load(src, progress)


def _load(src: Source, progress: Callable[[int], None] | None) -> Trace:
    from traceview.io.decode import decode
    from traceview.io.foreign import check_foreign
    from traceview.model import build

    check_foreign(src)  # Perfetto protobuf, Nsight reports: one line saying what to do
    return build(decode(src, progress=progress))


def analyze(path: str | PathLike[str], options: Options | None = None) -> Report:
    """``explain(load(path))``."""
    from traceview.report.build import explain

    return explain(load(path), options)
