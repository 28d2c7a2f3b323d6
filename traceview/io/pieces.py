"""Read a trace file's text in pieces: plain or gzip (by content, not by name).

A gzip stream cut short (a killed writer, a copy that stopped) yields what inflates and
stops, so the JSON layer can keep every complete event, and says so: ``cut`` receives
how many of the file's bytes were read before the compressed stream ended without its
end (the decoder names that damage as such); corrupt gzip data is one ``TraceLoadError``.
Several gzip members are read one after another; garbage after the last is ignored.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Generator, Iterator
from pathlib import Path
from types import ModuleType
from typing import cast

from traceview.errors import TraceLoadError
from traceview.io import sources

inflate: ModuleType
INFLATE_ERRORS: tuple[type[Exception], ...]
try:  # ISA-L inflates gzip about twice as fast as zlib (docs/json-decoder.md); the same
    # API, except that on a stream cut short it holds back the end (see _gunzip)
    from isal import isal_zlib

    inflate = isal_zlib
    INFLATE_ERRORS = (zlib.error, cast("type[Exception]", isal_zlib.error))
except ImportError:  # a platform without an isal wheel: the standard library
    inflate = zlib
    INFLATE_ERRORS = (zlib.error,)

GZIP_MAGIC = b"\x1f\x8b"
PIECE = 8 << 20  # bytes of decompressed text per piece (and so per decoded chunk)


def pieces(path: Path | str | os.PathLike[str] | sources.Source, counter: list[int],
           cut: list[int] | None = None) -> Iterator[bytes]:
    """The decompressed text in pieces of at most ``PIECE`` bytes (plain or gzip), from
    a local path, a URL or an open ``Source`` (``io/sources.py``).

    A gzip stream cut short yields what inflates and stops (the JSON layer then keeps
    every complete event) and appends to ``cut`` the count of the file's bytes read when
    the compressed stream ended unfinished; corrupt gzip data raises ``TraceLoadError``.
    """
    src = path if isinstance(path, sources.Source) else None
    if isinstance(path, sources.Source):  # opened once by its owner, who closes it
        f, path = path.binary(), path.ref
    else:
        f = sources.open_binary(path)  # a local file, or a URL through fsspec
    errors = sources.read_errors() if sources.is_url(path) else (OSError,)
    try:
        magic = f.read(2)
        f.seek(0)
        if magic != GZIP_MAGIC:
            while b := f.read(PIECE):
                counter[0] += len(b)
                yield b
            return
        whole_member = yield from _gunzip(path, f, counter, cut=cut)
        if counter[0] == 0 and not whole_member:
            raise TraceLoadError(path, "truncated or corrupt gzip data: nothing readable")
    except errors as exc:
        raise sources.load_error(path, exc) from None
    finally:
        if src is None:
            f.close()


def _gunzip(path: Path | str | os.PathLike[str], f, counter: list[int], codec=None, errors=None,
            skip: int = 0, cut: list[int] | None = None) -> Generator[bytes, None, bool]:
    """Every gzip member in turn, from ``f``'s position; garbage after the last is
    ignored; the first ``skip`` bytes of text are dropped. ``codec``: the inflate module
    (ISA-L's when installed). Returns whether a whole member was read; a member the file
    ends inside puts the file's bytes read into ``cut``."""
    codec = codec or inflate
    errors = errors or INFLATE_ERRORS
    d = codec.decompressobj(31)
    whole_member = False
    origin = f.tell()
    read = 0  # bytes read from origin
    start = 0  # where the current member starts, from origin
    inflated = 0  # text out of the current member so far
    while c := f.read(1 << 20):
        read += len(c)
        while c:
            try:
                out = d.decompress(c, PIECE)
            except errors as exc:
                raise TraceLoadError(path, f"corrupt gzip data ({exc})") from None
            inflated += len(out)
            if skip:
                drop = min(skip, len(out))
                out, skip = out[drop:], skip - drop
            if out:
                counter[0] += len(out)
                yield out
            if d.eof:  # end of one gzip member; another may follow
                whole_member = True
                c = d.unused_data
                if c and c[:2] != GZIP_MAGIC:
                    return True  # trailing garbage after the stream: ignore
                d = codec.decompressobj(31)
                start, inflated = read - len(c), 0
            else:
                c = d.unconsumed_tail
    if codec is not zlib and read > start:
        # Cut inside a member. ISA-L keeps the end of a member it has not seen the end
        # of, and a stream cut short never gets there: inflate that member again with
        # zlib, which hands out all it can, past the text already given.
        f.seek(origin + start)
        again = yield from _gunzip(path, f, counter, zlib, (zlib.error,), skip=inflated,
                                   cut=cut)
        return whole_member or again
    out = d.flush()[skip:]
    if out:
        counter[0] += len(out)
        yield out
    if read > start and not d.eof and cut is not None:
        cut.append(origin + read)  # the file ended inside a member: the stream is cut
    return whole_member


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The whole decompressed text (small files only: reports, tests)."""
    return b"".join(pieces(path if sources.is_url(path) else Path(path), [0]))
