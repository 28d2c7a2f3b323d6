"""Writing traces: embed capture's metadata, then publish all files at once or none.

The metadata is one extra top-level key (``"traceview"``) in the Chrome trace JSON
object, beside ``traceEvents``. Perfetto and chrome://tracing ignore unknown top-level
keys, so the file still opens there, and the trace carries its own reproducer.

Files are written to hidden temporary names in the destination folder and renamed with
``os.replace`` only when every file of the capture is complete, so an interrupted or
failed capture never leaves a partial or half-matching trace behind.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from traceview.errors import CaptureError

# the output path's rules live with the config, which checks ``--out`` before a run
from traceview.workload.config import SUFFIXES, check_out_path  # noqa: F401

META_KEY = "traceview"


def stem(path: Path) -> str:
    """``a/b.json.gz`` -> ``b``."""
    name = path.name
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def cold_path(path: Path) -> Path:
    """``<stem>.cold.json.gz`` next to the main trace (``.cold.json`` for ``.json``)."""
    suffix = ".json" if path.name.endswith(".json") else ".json.gz"
    return path.with_name(stem(path) + ".cold" + suffix)


def embed(raw_trace: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """Read a profiler export and return it with ``meta`` as its first top-level key."""
    try:
        with open(raw_trace, "rb") as f:
            trace = json.loads(f.read())
    except (OSError, ValueError) as exc:
        raise CaptureError(f"the profiler wrote an unreadable trace ({raw_trace}): {exc}") from None
    if isinstance(trace, list):  # the JSON array form has no room for metadata
        trace = {"traceEvents": trace}
    trace.pop(META_KEY, None)
    return {META_KEY: meta, **trace}


def encode(trace: dict[str, Any], path: Path) -> bytes:
    data = json.dumps(trace, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if path.name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=6, mtime=0)
    return data


class Publisher:
    """Stage files, then :meth:`commit` them all; leaving the ``with`` block without a
    commit (an exception, Ctrl-C) deletes everything staged."""

    def __init__(self) -> None:
        self._staged: list[tuple[Path, Path]] = []
        self._done = False

    def __enter__(self) -> Publisher:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._done:
            self.abort()

    def stage(self, path: Path, data: bytes) -> None:
        """Write ``data`` to a hidden temp file beside ``path``."""
        from traceview.atomic import refuse_special

        refuse_special(path)  # a FIFO or a device is never replaced by a file
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        self._staged.append((Path(tmp), path))
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a trace is for sharing

    def stage_trace(self, path: Path, trace: dict[str, Any]) -> None:
        self.stage(path, encode(trace, path))

    def commit(self) -> None:
        for tmp, final in self._staged:
            os.replace(tmp, final)
        self._done = True

    def abort(self) -> None:
        for tmp, _final in self._staged:
            try:
                tmp.unlink()
            except FileNotFoundError:
                pass
        self._staged.clear()
        self._done = True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
