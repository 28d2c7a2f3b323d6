"""Which trace files a list of paths stands for: directories, globs and URLs expanded in
rank order.

A directory stands for its trace files (``*.json``, ``*.json.gz``, which covers
``*.pt.trace.json(.gz)``), a glob for its matches, sorted by name with numbers compared as
numbers (``rank2`` before ``rank10``); files given by name are taken as they are; URLs
(``s3://``, ``gs://``, ``http(s)://``) likewise (``io/sources.py``). The same file named
twice is listed once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from traceview.errors import UsageError

# A directory stands for the files in it whose names end so (not recursive).
TRACE_SUFFIXES = (".json", ".json.gz")


def _natural_key(name: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def is_trace_name(name: str) -> bool:
    return name.endswith(TRACE_SUFFIXES)


def expand_paths(paths: Iterable[str | os.PathLike[str]], *,
                 recursive: bool = True) -> list[Path | str]:
    """Files, directories, globs and URLs -> the list of trace files, in rank order.

    A directory (local, or a folder of an object store: ``s3://bucket/job/``) is
    searched with its subfolders (``recursive=False``: only its own files), in natural
    order of the path below it; a glob (``'traces/*.json.gz'``,
    ``s3://bucket/job/rank*.json.gz``) stands for what it matches, in natural order. A
    directory or glob with no trace file is a usage error (it is almost always a wrong
    path). Local files come back as ``Path``, URLs as the ``str`` given
    (``io/sources.py``).
    """
    from traceview.io import sources

    out: list[Path | str] = []
    seen: set[str] = set()
    for raw in paths:
        raw = os.fspath(raw)
        files: list[Path | str]
        if sources.is_url(raw):
            found = sources.expand(raw, recursive=recursive)
            if found is None:
                files = [raw]
            else:
                base = raw.split("*", 1)[0].rsplit("/", 1)[0] if sources.is_glob(raw) else raw
                urls = sorted((f for f in found if is_trace_name(f) or sources.is_glob(raw)),
                              key=lambda f: _natural_key(f[len(base):]))
                files = list(urls)
                if not files:
                    raise UsageError(f"{raw}: no trace files there "
                                     f"({', '.join('*' + s for s in TRACE_SUFFIXES)})")
        elif sources.is_glob(raw) and not Path(raw).exists():
            import glob

            files = sorted((Path(f) for f in glob.glob(raw, recursive=True)
                            if Path(f).is_file()), key=lambda c: _natural_key(str(c)))
            if not files:
                raise UsageError(f"{raw}: no file matches")
        elif (p := Path(raw)).is_dir():
            entries = p.rglob("*") if recursive else p.iterdir()
            local = sorted((c for c in entries if c.is_file() and is_trace_name(c.name)),
                           key=lambda c: [_natural_key(part) for part in c.relative_to(p).parts])
            files = list(local)
            if not files:
                where = "this directory or its subfolders" if recursive else "this directory"
                raise UsageError(f"{p}: no trace files in {where} "
                                 f"({', '.join('*' + s for s in TRACE_SUFFIXES)})")
        else:
            files = [p]
        for f in files:
            key = f if isinstance(f, str) else os.path.realpath(f)
            if key not in seen:
                seen.add(key)
                out.append(f)
    return out


def file_sizes(files: Sequence[Path | str]) -> Callable[[], list[int | None]]:
    """Each trace's stored size, asked for only by the local engine, which decides from
    them whether a pool pays (it is about to read every byte anyway; Ray never asks)."""

    def sizes() -> list[int | None]:
        from traceview.errors import TraceLoadError
        from traceview.io.sources import size

        out: list[int | None] = []
        for f in files:
            try:
                out.append(size(f))
            except (OSError, TraceLoadError):
                out.append(0)  # the worker reports it; it costs nothing to read
        return out

    return sizes
