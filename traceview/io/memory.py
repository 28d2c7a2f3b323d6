"""Fail early, with a clear message, when a trace cannot fit in memory.

Better one line now than the kernel's OOM killer in a minute. The need is estimated from
the decompressed size (``Source.text_size``: the gzip trailer's ISIZE, or the file size) with
``BYTES_PER_TEXT_BYTE``, measured on large traces (``docs/performance.md``); what is
available is ``MemAvailable`` from ``/proc/meminfo``, lowered to the cgroup limit when
there is one. ``TRACEVIEW_MEMORY_LIMIT_BYTES`` overrides the detected figure.
"""

from __future__ import annotations

import os
from pathlib import Path

from traceview.errors import TraceLoadError
from traceview.io import sources

# Peak resident memory per byte of decompressed trace text, plus a fixed base (Python,
# numpy, msgspec). Measured: ~0.6 B/B on a 450 MB with_stack trace; 1.0 leaves margin.
BYTES_PER_TEXT_BYTE = 1.0
BASE_BYTES = 150 << 20


def available_bytes() -> int | None:
    override = os.environ.get("TRACEVIEW_MEMORY_LIMIT_BYTES")
    if override:
        try:
            return int(override)
        except ValueError:
            return None
    avail = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
                break
    except (OSError, ValueError, IndexError):
        return None
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        if limit != "max":
            room = int(limit) - used
            avail = room if avail is None else min(avail, room)
    except (OSError, ValueError):
        pass
    return avail


def check_memory(source: sources.Source) -> None:
    """``TraceLoadError`` when the open ``source``'s text cannot fit in memory."""
    avail = available_bytes()
    if avail is None:
        return
    text = source.text_size()
    if text is None:
        return
    path = source.ref
    need = int(text * BYTES_PER_TEXT_BYTE) + BASE_BYTES
    if need > avail:
        raise TraceLoadError(
            path, f"needs about {need / 2**30:.1f} GiB of memory to analyse "
            f"({text / 2**30:.1f} GiB of trace text), but only {avail / 2**30:.1f} GiB is "
            "available; use a machine with more memory or split the trace")
