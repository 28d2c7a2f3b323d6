"""Read a trace file's text in pieces: plain or gzip (by content, not by name).

A gzip stream cut short (a killed writer) yields what inflates and stops, so the JSON
layer can keep every complete event; corrupt gzip data is one ``TraceLoadError``.
Several gzip members are read one after another; garbage after the last is ignored.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from pathlib import Path

from traceview.errors import TraceLoadError

try:  # ISA-L inflates gzip about twice as fast as zlib (docs/performance.md); the same
    # API, except that on a stream cut short it holds back the end (see _gunzip)
    from isal import isal_zlib as inflate

    INFLATE_ERRORS: tuple[type[Exception], ...] = (zlib.error, inflate.error)
except ImportError:  # a platform without an isal wheel: the standard library
    inflate = zlib
    INFLATE_ERRORS = (zlib.error,)

GZIP_MAGIC = b"\x1f\x8b"
PIECE = 8 << 20  # bytes of decompressed text per piece (and so per decoded chunk)


def pieces(path: Path, counter: list[int]) -> Iterator[bytes]:
    """The decompressed text in pieces of at most ``PIECE`` bytes (plain or gzip).

    A gzip stream cut short yields what inflates and stops (the JSON layer then keeps
    every complete event); corrupt gzip data raises ``TraceLoadError``.
    """
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed in finally; a generator owns it
    except FileNotFoundError:
        raise TraceLoadError(path, "no such file") from None
    except IsADirectoryError:
        raise TraceLoadError(path, "is a directory, not a trace file") from None
    except OSError as exc:
        raise TraceLoadError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        magic = f.read(2)
        f.seek(0)
        if magic != GZIP_MAGIC:
            while b := f.read(PIECE):
                counter[0] += len(b)
                yield b
            return
        yield from _gunzip(path, f, counter)
    except OSError as exc:
        raise TraceLoadError(path, f"cannot read: {exc.strerror or exc}") from None
    finally:
        f.close()


def _inflate_member(path: Path, f, start: int, skip: int, counter: list[int]) -> Iterator[bytes]:
    """A cut stream's last member again, with zlib, from file offset ``start``: the text
    past its first ``skip`` bytes. ISA-L keeps the end of a member it has not seen the end
    of, and a stream cut short never gets there; zlib hands out all it can inflate."""
    f.seek(start)
    d = zlib.decompressobj(31)
    flushed = False
    while not flushed:
        c = b"" if d.eof else f.read(1 << 20)
        if not c:  # the end of the file: what zlib still holds
            c, flushed = None, True
        while c is None or c:
            try:
                out = d.flush() if c is None else d.decompress(c, PIECE)
            except zlib.error as exc:
                raise TraceLoadError(path, f"corrupt gzip data ({exc})") from None
            if skip:
                drop = min(skip, len(out))
                out, skip = out[drop:], skip - drop
            if out:
                counter[0] += len(out)
                yield out
            c = b"" if c is None or d.eof else d.unconsumed_tail


def _gunzip(path: Path, f, counter: list[int]) -> Iterator[bytes]:
    """Every gzip member in turn; garbage after the last is ignored."""
    d = inflate.decompressobj(31)
    whole_member = False
    read = 0  # file offset after the last read
    start = 0  # file offset of the current member
    inflated = 0  # text out of the current member so far
    while c := f.read(1 << 20):
        read += len(c)
        while c:
            try:
                out = d.decompress(c, PIECE)
            except INFLATE_ERRORS as exc:
                raise TraceLoadError(path, f"corrupt gzip data ({exc})") from None
            if out:
                counter[0] += len(out)
                inflated += len(out)
                yield out
            if d.eof:  # end of one gzip member; another may follow
                whole_member = True
                c = d.unused_data
                if c and c[:2] != GZIP_MAGIC:
                    return  # trailing garbage after the stream: ignore
                d = inflate.decompressobj(31)
                start, inflated = read - len(c), 0
            else:
                c = d.unconsumed_tail
    if inflate is not zlib and read > start:  # cut inside a member: what ISA-L held back
        yield from _inflate_member(path, f, start, inflated, counter)
    else:
        out = d.flush()
        if out:
            counter[0] += len(out)
            yield out
    if counter[0] == 0 and not whole_member:
        raise TraceLoadError(path, "truncated or corrupt gzip data: nothing readable")


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The whole decompressed text (small files only: reports, tests)."""
    return b"".join(pieces(Path(path), [0]))
