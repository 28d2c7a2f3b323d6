"""Atomic output files: write a temporary file beside the target, then rename over it.

An interrupted run leaves either the old file or the new one, never half of one.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes_atomic(path: Path, data: bytes) -> None:
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            f.write(data)

    replace_atomic(path, write)


def staged_name(path: Path) -> Path:
    """A new empty file beside ``path`` with a name no other run uses
    (``.<name>.<random>.tmp``), with the usual mode (mkstemp makes 0600)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())
    return Path(tmp)


def special_file(path: Path) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a folder (a FIFO,
    a device, a socket), symlinks followed; None otherwise. Such a target is refused:
    the rename would put a regular file in its place (``/dev/null`` replaced, as root),
    and writing into it in place is not atomic (a FIFO with no reader blocks for ever)."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None  # absent (or unreachable: the write names that itself)
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    for test, what in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return "not a regular file"


def refuse_special(path: Path, flag: str = "") -> None:
    """``OutputError`` (one line) when ``path`` is a special file (``special_file``)."""
    from traceview.errors import OutputError

    what = special_file(path)
    if what is not None:
        lead = f"{flag} {path}" if flag else str(path)
        raise OutputError(f"{lead} is {what}: traceview writes only regular files (or "
                          "standard output)")


def replace_atomic(path: Path, write: Callable[[Path], None]) -> None:
    """``write(tmp)`` fills a temporary file beside ``path``, which then replaces ``path``.

    For writers that want a file name rather than bytes (``DataFrame.write_parquet``).
    A failure to write (a full disk) is an ``OutputError`` naming ``path``; the
    temporary file is removed whatever happens, a second Ctrl-C meanwhile held.
    """
    from traceview.errors import OutputError
    from traceview.interrupts import deferred

    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        raise OutputError(f"{path} is a folder; give a file name")
    refuse_special(path)
    staged: list[Path] = []
    try:
        try:
            with deferred():  # made and listed for the clean-up, or neither
                staged.append(staged_name(path))
            write(staged[0])
            os.replace(staged[0], path)
        except OSError as exc:
            raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        with deferred():
            for tmp in staged:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
        raise


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` (``flock`` on the folder itself: no lock file
    to leave behind) while the block runs: another traceview writing into the same folder
    waits for it. Where there is no ``flock``, nothing is locked."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode())
