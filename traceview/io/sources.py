"""Where trace bytes come from: a local path, or a URL read through fsspec.

Every place that opens a trace goes through :func:`open_binary`, :func:`size` and
:func:`is_dir` here, so local files and URLs (``file://``, ``http(s)://``, ``s3://``,
``gs://``, any protocol fsspec knows) are read the same way: in pieces, by the same
chunked reader (``io/pieces.py``), never downloaded whole. A URL is opened with a block
of :data:`BLOCK_BYTES` (ranged reads where the server allows them; a plain HTTP server
without ``Range`` support is read as one stream). Local paths keep the plain ``open``:
no fsspec import, no extra layer.

Errors are the loader's: a missing object is ``no such file``, anything else the store
says is ``cannot read: ...``, one line each (``TraceLoadError``, exit 2). A protocol
whose fsspec driver is not installed names the extra to install (``traceview[s3]``,
``traceview[gcs]``, ``traceview[http]``).

A URL is kept as the user wrote it (``str``); a local path is normalised as
``pathlib.Path`` does, as before. fsspec's own configuration applies: credentials from
the environment, and ``FSSPEC_S3_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL``) for an
S3-compatible store.
"""

from __future__ import annotations

import functools
import os
import re
import stat
import sys
from pathlib import Path
from typing import IO, Any

from traceview.errors import TraceLoadError

# A URL: a scheme of two or more letters then ``://`` (one letter would be a Windows drive).
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")
# fsspec protocol -> the traceview extra that installs its driver
EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "http": "http", "https": "http"}
# bytes per ranged read of a remote object (the decoder's piece is 8 MiB of text)
BLOCK_BYTES = 8 << 20
# bytes of a trace's start read when it is opened, to tell its format (gzip, Proton,
# Perfetto, Nsight) without a second open
HEAD_BYTES = 64 * 1024
GLOB_CHARS = ("*", "?", "[")


def is_url(path: str | os.PathLike[str]) -> bool:
    return isinstance(path, str) and bool(_URL.match(path))


#: the reference that names standard input
STDIN = "-"


def is_stdin(path: str | os.PathLike[str]) -> bool:
    return isinstance(path, str) and path == STDIN


def is_glob(path: str | os.PathLike[str]) -> bool:
    s = os.fspath(path)
    if is_url(s) and s.split("://", 1)[0] in ("http", "https"):
        return False  # a query string's ? is not a pattern
    return any(c in s for c in GLOB_CHARS)


def name(path: str | os.PathLike[str]) -> str:
    """The path as reports show it: a URL as given, a local path as ``Path`` prints it."""
    return os.fspath(path) if is_url(path) else str(Path(path))


def basename(path: str | os.PathLike[str]) -> str:
    s = os.fspath(path)
    return s.rstrip("/").rsplit("/", 1)[-1] if is_url(s) else Path(s).name


def protocol(url: str) -> str:
    return url.split("://", 1)[0].lower()


def filesystem(url: str) -> tuple[Any, str]:
    """(fsspec filesystem, path inside it) for a URL; a missing driver names the extra."""
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise TraceLoadError(url, "reading URLs needs fsspec: pip install 'traceview[http]'"
                             ) from None
    try:
        return url_to_fs(url)
    except ImportError:
        extra = EXTRAS.get(protocol(url))
        hint = f"pip install 'traceview[{extra}]'" if extra else "install its fsspec driver"
        raise TraceLoadError(url, f"reading {protocol(url)}:// URLs needs a driver: {hint}"
                             ) from None
    except ValueError as exc:  # an unknown protocol
        raise TraceLoadError(url, f"cannot read: {exc}") from None


def _cause(exc: BaseException) -> BaseException | None:
    """What a "file not found" from fsspec's HTTP driver really was: it reports every
    failed request as ``FileNotFoundError`` with the client's error as the cause, so a
    refused connection read "no such file". ``None`` unless the cause was a network
    failure (a 404, a missing bucket: the file is missing indeed)."""
    cause = exc.__cause__
    return cause if cause is not None and _network_problem(cause) is not None else None


def _problem(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError):
        cause = _cause(exc)
        if cause is None:
            return "no such file"
        exc = cause
    network = _network_problem(exc)
    if network is not None:
        text = str(exc).strip().splitlines()
        return f"{network}: {text[0] if text else type(exc).__name__}"
    if isinstance(exc, IsADirectoryError):
        return "is a directory, not a trace file"
    if isinstance(exc, PermissionError):
        return "cannot read: permission denied"
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot read: {exc.strerror}"
    text = str(exc).strip().splitlines()
    return f"cannot read: {text[0] if text else type(exc).__name__}"


def _network_problem(exc: BaseException) -> str | None:
    """The words for a network failure, not a missing file: a transfer cut short (the
    server died or closed mid-transfer), or a refused, reset or unreachable connection.
    By class name, so that no client library is imported to ask."""
    names = {t.__name__ for t in type(exc).__mro__}
    if names & {"ClientPayloadError", "ServerDisconnectedError", "IncompleteReadError",
                "ResponseStreamingError", "ConnectionResetError"}:
        return "the connection was lost mid-transfer"
    if names & {"ClientConnectionError", "EndpointConnectionError", "ConnectTimeoutError",
                "ReadTimeoutError", "ConnectionError", "TimeoutError"}:
        return "cannot connect"
    return None


def load_error(path: str | os.PathLike[str], exc: BaseException) -> TraceLoadError:
    """The one line for a failure to reach ``path`` (missing, refused, network)."""
    return TraceLoadError(name(path), _problem(exc))


@functools.cache
def _remote_errors() -> tuple[type[BaseException], ...]:
    """What a store's client raises for a failed request (beside ``OSError``;
    ``ValueError``: fsspec's word for a server that refuses a ranged read)."""
    found: list[type[BaseException]] = [OSError, ValueError]
    try:
        import aiohttp

        found.append(aiohttp.ClientError)
    except ImportError:
        pass
    try:
        import botocore.exceptions

        found.append(botocore.exceptions.BotoCoreError)
        found.append(botocore.exceptions.ClientError)
    except ImportError:
        pass
    return tuple(found)


def size(path: str | os.PathLike[str]) -> int:
    """Bytes stored (compressed size for gzip); ``TraceLoadError`` when unreachable."""
    if not is_url(path):
        try:
            if stat.S_ISFIFO(os.stat(path).st_mode):
                with open_binary(path) as f:  # its size is that of what it sent
                    return os.fstat(f.fileno()).st_size
            return Path(path).stat().st_size
        except OSError as exc:
            raise load_error(path, exc) from None
    fs, inner = filesystem(os.fspath(path))
    try:
        info = fs.info(inner)
    except _remote_errors() as exc:
        raise load_error(path, exc) from None
    if info.get("type") == "directory":
        raise TraceLoadError(path, "is a directory, not a trace file")
    return int(info.get("size") or 0)


def is_dir(path: str | os.PathLike[str]) -> bool:
    if not is_url(path):
        return Path(path).is_dir()
    if protocol(os.fspath(path)) in ("http", "https"):
        return False  # an HTTP URL names one object; listings are HTML, not folders
    try:
        fs, inner = filesystem(os.fspath(path))
        return bool(fs.isdir(inner))
    except (TraceLoadError, *_remote_errors()):  # type: ignore[misc]
        return False  # the open reports the problem in its own words


def random_access(path: str | os.PathLike[str]) -> bool:
    """Whether seeking is cheap: local files and object stores (ranged reads); an
    ``http(s)://`` object is streamed, read from the start (many servers, Python's own
    among them, ignore ``Range``) and standard input is read once, in order."""
    if is_stdin(path):
        return False
    return not (is_url(path) and protocol(os.fspath(path)) in ("http", "https"))


class _Forward:
    """A file read in order (one streamed GET) that can still seek: forward by reading
    on, backward by opening the object again. Its first :data:`HEAD_BYTES` are kept, so
    that the sniff of a :class:`Source` and the decode after it share one GET; the
    reader seeks further back only to re-inflate a gzip stream cut short, which is rare."""

    def __init__(self, reopen) -> None:
        self._reopen = reopen
        self._f = reopen()
        self._pos = 0  # where the next read starts
        self._under = 0  # where the open stream is
        self._head = bytearray()  # the stream's first bytes, while the stream is near them

    def read(self, n: int = -1) -> bytes:
        out = b""
        if self._pos < self._under:  # inside the kept head (seek moved back into it)
            out = bytes(self._head[self._pos: self._under if n < 0 else
                                   min(self._under, self._pos + n)])
            self._pos += len(out)
            if n >= 0:
                n -= len(out)
                if n == 0:
                    return out
        b = self._f.read(n)
        if self._under < HEAD_BYTES:
            self._head += b[: HEAD_BYTES - self._under]
        self._under += len(b)
        self._pos += len(b)
        return out + b

    def tell(self) -> int:
        return self._pos

    def seekable(self) -> bool:
        return True

    def seek(self, pos: int, whence: int = os.SEEK_SET) -> int:
        if whence == os.SEEK_CUR:
            pos += self._pos
        elif whence != os.SEEK_SET:
            raise OSError("a streamed object cannot seek from its end")
        if pos < self._pos:
            if self._under <= len(self._head):  # back into the kept head: no new GET
                self._pos = pos
                return pos
            self._f.close()
            self._f, self._pos, self._under = self._reopen(), 0, 0
            self._head = bytearray()
        while self._pos < pos:
            if not self.read(min(pos - self._pos, BLOCK_BYTES)):
                break
        return self._pos

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> _Forward:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_binary(path: str | os.PathLike[str]) -> IO[bytes]:
    """The object's bytes as a binary file (the caller closes it). Raises
    ``TraceLoadError`` for a missing or unreadable object."""
    if not is_url(path):
        try:
            if stat.S_ISFIFO(os.stat(path).st_mode):
                return _open_fifo(path)
            return open(path, "rb")  # noqa: SIM115 - the caller owns it
        except OSError as exc:
            raise load_error(path, exc) from None
    fs, inner = filesystem(os.fspath(path))
    try:
        if not random_access(path):  # one streamed GET, read in order
            return _Forward(lambda: fs.open(inner, "rb", block_size=0))  # type: ignore[return-value]
        return fs.open(inner, "rb", block_size=BLOCK_BYTES, cache_type="readahead")
    except _remote_errors() as exc:
        raise load_error(path, exc) from None


def fifo_wait_s() -> float:
    """How long a named pipe is given to have a writer (``TRACEVIEW_FIFO_WAIT_S``, 10 s)."""
    try:
        return max(0.0, float(os.environ.get("TRACEVIEW_FIFO_WAIT_S", "10")))
    except ValueError:
        return 10.0


# a named pipe's bytes, read once into a file of their own (or the one line that said no
# writer came): (device, inode) -> (its change time when read, the file or the refusal).
# A pipe made anew under a reused inode has another change time, so it is read anew.
_SPOOLED: dict[tuple[int, int], tuple[int, str | TraceLoadError]] = {}


def _open_fifo(path: str | os.PathLike[str]) -> IO[bytes]:
    """A named pipe, opened without waiting for ever: a plain ``open`` blocks until some
    process opens it for writing, which may never happen. Opened non-blocking, it is
    polled until a writer has written (or come and gone); none within ``fifo_wait_s`` is
    one line. What the writer sends is kept in a temporary file (removed at exit), since
    the loader opens its input more than once (the format sniffed, then decoded)."""
    st = os.stat(path)
    key = (st.st_dev, st.st_ino)
    if key not in _SPOOLED or _SPOOLED[key][0] != st.st_ctime_ns:
        try:
            got: str | TraceLoadError = _spool(path)
        except TraceLoadError as exc:
            got = exc
        _SPOOLED[key] = (os.stat(path).st_ctime_ns, got)
    known = _SPOOLED[key][1]
    if isinstance(known, TraceLoadError):
        raise known
    return open(known, "rb")  # noqa: SIM115 - the caller owns it


def _spool(path: str | os.PathLike[str]) -> str:
    """The name of a temporary file holding what a writer sent down the pipe."""
    import atexit
    import select
    import shutil
    import tempfile

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as pipe:
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP)
        wait = fifo_wait_s()
        if not poller.poll(int(wait * 1000)):
            raise TraceLoadError(name(path), "a named pipe (FIFO) with no writer: nothing "
                                             f"came in {wait:g} s")
        os.set_blocking(fd, True)
        with tempfile.NamedTemporaryFile(prefix="traceview-fifo-", delete=False) as spool:
            atexit.register(_unlink, spool.name)
            shutil.copyfileobj(pipe, spool, 1 << 20)
    return spool.name


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def read_errors() -> tuple[type[BaseException], ...]:
    """Exceptions a read from an open file may raise (local: ``OSError``)."""
    return _remote_errors()


def expand(pattern_or_dir: str, *, recursive: bool) -> list[str] | None:
    """The trace URLs a URL glob or URL folder stands for (unsorted), or ``None`` when it
    names one object."""
    fs, inner = filesystem(pattern_or_dir)
    proto = protocol(pattern_or_dir)

    def full(p: str) -> str:
        return p if is_url(p) else f"{proto}://{p.lstrip('/') if proto != 'file' else p}"

    try:
        if is_glob(pattern_or_dir):
            return [full(p) for p in fs.glob(inner) if not fs.isdir(p)]
        if is_dir(pattern_or_dir):
            found = fs.find(inner) if recursive else fs.ls(inner, detail=False)
            return [full(p) for p in found if not fs.isdir(p)]
    except _remote_errors() as exc:
        raise load_error(pattern_or_dir, exc) from None
    return None


def read_head(path: str | os.PathLike[str], n: int) -> bytes:
    """The first ``n`` bytes of a local file or URL, inflated when it is gzipped; empty
    for a damaged gzip (the loader names that itself). For sniffing a file's format."""
    import gzip
    import zlib

    with open_binary(path) as f:
        try:
            head = f.read(n)
        except _remote_errors() as exc:  # a server that dies mid-transfer
            raise load_error(path, exc) from None
        if head[:2] != b"\x1f\x8b":
            return head
        try:
            f.seek(0)
            with gzip.GzipFile(fileobj=f, mode="rb") as g:
                return g.read(n)
        except (OSError, EOFError, zlib.error):
            return b""


class _Unclosed:
    """Standard input, read through; closing the trace leaves the process's stdin open."""

    def __init__(self, f: IO[bytes]) -> None:
        self.read = f.read

    def close(self) -> None:
        pass


def _stdin() -> IO[bytes]:
    """Standard input as a file read once: its first :data:`HEAD_BYTES` are kept, so the
    sniff and the decode share them; reading it from the start a second time (past its
    head) is refused in words."""
    opened: list[bool] = []

    def once() -> IO[bytes]:
        if opened:
            raise OSError("standard input cannot be read a second time")
        opened.append(True)
        return _Unclosed(sys.stdin.buffer)  # type: ignore[return-value]

    return _Forward(once)  # type: ignore[return-value]


class Source:
    """One trace reference, resolved, opened, sniffed and sized once.

    Everything that reads a trace for ``explain`` (the format sniffs of ``foreign`` and
    ``proton``, the memory check, the progress bar's size, the decoder, ``--annotate``'s
    copy) reads it through one ``Source``: the file is opened once, its first
    :data:`HEAD_BYTES` read once, and each reader after the first gets the same open
    file rewound (:meth:`binary`). A local file's size comes from the open descriptor.
    Use as a context manager (:meth:`open`), which closes the file.
    """

    def __init__(self, ref: str | os.PathLike[str]) -> None:
        self.ref: str | Path = os.fspath(ref) if is_url(ref) or is_stdin(ref) else Path(ref)
        self.name = name(ref)
        self._f: IO[bytes] | None = None
        self._raw_head = b""
        self._text_head: bytes | None = None
        self._size: int | None = None
        self.opens = 0  # how many times the object was opened (tests count them)

    @classmethod
    def open(cls, ref: str | os.PathLike[str] | Source) -> Source:
        """The reference opened (a ``Source`` already open is returned as it is);
        ``TraceLoadError`` when it is missing, a folder or unreadable."""
        if isinstance(ref, Source):
            return ref
        src = cls(ref)
        src._open()
        return src

    def _open(self) -> None:
        if is_url(self.ref) and is_dir(self.ref):
            raise TraceLoadError(self.ref, "is a directory, not a trace file")
        f = _stdin() if is_stdin(self.ref) else open_binary(self.ref)
        self.opens += 1
        try:
            self._raw_head = f.read(HEAD_BYTES)
        except _remote_errors() as exc:
            f.close()
            raise load_error(self.ref, exc) from None
        self._f = f

    @property
    def is_gzip(self) -> bool:
        return self._raw_head[:2] == b"\x1f\x8b"

    @property
    def random_access(self) -> bool:
        return random_access(self.ref)

    def size(self) -> int:
        """Bytes stored (compressed size for gzip)."""
        if self._size is None:
            f = self._file()
            if is_stdin(self.ref):  # a pipe's is 0; a redirected file's, its own
                try:
                    self._size = os.fstat(sys.stdin.fileno()).st_size
                except (OSError, ValueError, AttributeError):
                    self._size = 0
            elif not is_url(self.ref):
                self._size = os.fstat(f.fileno()).st_size
            else:
                self._size = size(self.ref)
        return self._size

    def head(self, n: int = HEAD_BYTES) -> bytes:
        """The first ``n`` (at most :data:`HEAD_BYTES`) bytes of text, inflated when the
        file is gzipped; empty for a damaged gzip (the decoder names that itself)."""
        if not self.is_gzip:
            return self._raw_head[:n]
        if self._text_head is None:
            import zlib

            try:
                self._text_head = zlib.decompressobj(31).decompress(self._raw_head,
                                                                    HEAD_BYTES)
            except zlib.error:
                self._text_head = b""
        return self._text_head[:n]

    def text_size(self) -> int | None:
        """The text's size: the file's, or for gzip the trailer's ISIZE (mod 2**32,
        unwrapped so it is at least the compressed size); ``None`` for a streamed URL,
        whose end cannot be read without reading it all."""
        stored = self.size()
        if not self.random_access:
            return None
        if not self.is_gzip or stored < 18:
            return stored
        f = self._file()
        f.seek(-4, os.SEEK_END)
        isize = int.from_bytes(f.read(4), "little")
        while isize < stored:
            isize += 1 << 32
        return isize

    def binary(self) -> IO[bytes]:
        """The open file, rewound to its start (the caller reads it; the ``Source``
        closes it)."""
        f = self._file()
        f.seek(0)
        return f

    def _file(self) -> IO[bytes]:
        if self._f is None:
            raise ValueError(f"{self.name}: the source is not open")
        return self._f

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
