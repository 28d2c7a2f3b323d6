"""Traces traceview does not read, recognised so that the error says what to do instead.

traceview reads Chrome/Kineto JSON (what ``torch.profiler`` writes). Three other formats
reach it often: Perfetto's protobuf traces, and Nsight Systems' ``.nsys-rep`` / ``.qdrep``
reports. Each gets one line naming the format and how to get a JSON trace (exit 2); an
Nsight Systems report converted to Chrome JSON by nCompass' converter is read
(``io/nsys.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from traceview.errors import TraceLoadError

if TYPE_CHECKING:
    from traceview.io.sources import Source

NSIGHT_SUFFIXES = (".nsys-rep", ".qdrep", ".qdstrm")
PERFETTO_SUFFIXES = (".pftrace", ".perfetto-trace", ".perfetto", ".pb", ".proto")
TORCH_JSON = ("profile with torch.profiler and save the trace as JSON "
              "(prof.export_chrome_trace('trace.json') or tensorboard_trace_handler)")


def _head(source: Source, n: int = 64) -> bytes:
    return source.head(n)


def _looks_like_perfetto(head: bytes) -> bool:
    """A Perfetto trace is a ``Trace`` message: field 1 (``packet``), length-delimited,
    so it starts with byte 0x0a and a varint length; JSON starts with ``{``, ``[`` or
    whitespace, never a control byte."""
    if len(head) < 4 or head[0] != 0x0A:
        return False
    if head.lstrip(b" \t\r\n")[:1] in (b"{", b"[", b""):  # JSON after a blank line
        return False
    i, length, shift = 1, 0, 0
    while i < len(head) and head[i] & 0x80:  # varint
        length |= (head[i] & 0x7F) << shift
        shift += 7
        i += 1
    return i < len(head) and i < 6


def _check_name(name: str, p: str | Path) -> None:
    if name.endswith(NSIGHT_SUFFIXES):
        raise TraceLoadError(p, "an Nsight Systems report, not a Chrome/Kineto JSON trace "
                                "(nsys export writes SQLite or its own JSON, neither of which "
                                "is Kineto's): convert it with nCompass' `ncompass convert` "
                                f"(Chrome JSON traceview reads), or {TORCH_JSON}")


def check_foreign(path: str | Path | Source) -> None:
    """Raise a ``TraceLoadError`` explaining the format when ``path`` is not JSON we read.

    ``path`` may be an open ``Source`` (``io/sources.py``): its head, read when it was
    opened, is sniffed without another open."""
    from traceview.io import sources

    if not isinstance(path, sources.Source):
        try:
            src = sources.Source.open(path)
        except (OSError, TraceLoadError):
            src = None  # the loader reports missing or unreadable files itself
        if src is None:
            _check_name(sources.basename(path).lower(), path)
            return
        with src:
            check_foreign(src)
        return
    p = path.ref
    _check_name(sources.basename(p).lower(), p)
    head = _head(path)
    name = sources.basename(p).lower()
    if name.endswith(PERFETTO_SUFFIXES) or _looks_like_perfetto(head):
        raise TraceLoadError(p, "a Perfetto protobuf trace, not a Chrome/Kineto JSON trace: "
                                "convert it with Perfetto's `traceconv json TRACE OUT.json`, "
                                f"or {TORCH_JSON}")
    from traceview.io.proton import sniff

    # a second, longer look only when the head could be Proton's (a Kineto trace starts
    # with its schemaVersion): no extra read for the traces of a fleet
    start = head.lstrip(b" \t\r\n\xef\xbb\xbf")
    kind = sniff(path) if start[:1] == b"[" or start.startswith(b'{"displayTimeUnit"') else None
    if kind is not None:
        raise TraceLoadError(p, f"a Triton Proton {kind}, not a Chrome/Kineto trace: "
                                "`traceview explain FILE` reads it on its own (docs/proton.md), "
                                "traceview.proton(FILE) in Python")
    if head.startswith(b"SQLite format 3"):
        raise TraceLoadError(p, "an SQLite database (an `nsys export` or Perfetto's trace "
                                f"processor?), not a Chrome/Kineto JSON trace: {TORCH_JSON}")
