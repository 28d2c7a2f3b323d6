"""What every command shares: known errors become one line on stderr and an exit code.

Set ``TRACEVIEW_DEBUG=1`` to see the traceback instead. Unknown exceptions are bugs and
are re-raised.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traceview.errors import TraceviewError

if TYPE_CHECKING:
    from traceview.options import Options
    from traceview.render.registry import Subject


def run_guarded(body: Callable[[], None], *, reads_traces: bool = False) -> None:
    """Run a command's body. ``reads_traces``: keep freed memory for reuse while it runs
    (``traceview.io.allocator``: fewer page faults on big traces) and collect cyclic
    garbage less often (fewer walks over a big trace's millions of objects)."""
    if reads_traces:
        from traceview.io.allocator import collect_less, keep_freed_memory

        keep_freed_memory()
        collect_less()
    try:
        body()
        sys.stdout.flush()  # a closed pipe shows here, not at exit (where it would be rc 1)
    except TraceviewError as exc:
        if os.environ.get("TRACEVIEW_DEBUG"):
            raise
        print(f"traceview: error: {exc}", file=sys.stderr)
        raise _exit(exc.exit_code) from None
    except MemoryError:
        print("traceview: error: out of memory while reading the trace", file=sys.stderr)
        raise _exit(2) from None
    except KeyboardInterrupt as exc:  # Ctrl-C 130, SIGTERM 143 (cli/_signals.py)
        from traceview.cli import _signals

        old = _signals.ignore()  # a second signal would cut the message short
        try:
            print(_signals.message(exc), file=sys.stderr)
            stop = _exit(_signals.exit_code(exc))  # typer's import, with them ignored too
        finally:  # the console entry point ignores them for the exit itself
            _signals.restore(old)
        raise stop from None
    except BrokenPipeError:  # `traceview explain ... | head`: the reader has what it wanted
        # the interpreter flushes stdout again at exit; point it at /dev/null first
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise _exit(0) from None
    except OSError as exc:  # a full disk, an unwritable file: one line naming it
        if os.environ.get("TRACEVIEW_DEBUG"):
            raise
        print(os_error_line(exc), file=sys.stderr)
        if exc.filename is None:  # standard output's: the exit's own flush would fail too
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise _exit(2) from None


def _exit(code: int) -> BaseException:
    """typer's ``Exit`` with ``code``, which typer (and the console entry point) turn into
    the process's exit code. typer is imported here, when a command ends this way: the
    plain ``explain`` run never imports it (``explain_body``)."""
    import typer

    return typer.Exit(code)


def os_error_line(exc: OSError) -> str:
    """One line for an operating-system error. Writers of named files raise with the name
    (``atomic.py``, the export); an error without one came from standard output."""
    why = exc.strerror or str(exc)
    if exc.filename is None:
        return f"traceview: error: cannot write to standard output: {why}"
    return f"traceview: error: {exc.filename}: {why}"


def stdout_console(width: int | None):
    """The terminal report's console. A closed pipe (``| head``) reaches ``run_guarded``,
    which exits 0, instead of rich's own handler, which exits 1."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    return _Console(width=width, highlight=False)


def write_document(fmt: str, kind: Subject, doc: Any, width: int | None = None) -> None:
    """``doc`` rendered by ``kind``'s renderer in ``fmt`` on standard output: at ``width``
    (default: the terminal's), in colour for text only."""
    from traceview.cli._output import as_text
    from traceview.render.registry import RenderOptions, renderer

    console = stdout_console(None)
    sys.stdout.write(as_text(renderer(fmt, kind).render(doc, RenderOptions(
        width=width or console.width,
        color=console.color_system if fmt == "text" else None))))


def analysis_options(window: str | None, calls: str | None, rules: Path | None,
                     thread: str | None, **more: Any) -> Options:
    """The ``Options`` the shared flags (``_flags.py``) stand for (``more``: further
    ``Options`` fields, by name)."""
    from traceview.options import Options

    return Options(window=window, calls=calls, rules=str(rules) if rules else None,
                   thread=thread, **more)


# The narrowest terminal a report is laid out for: below it the tables' columns shrink to
# a few letters each and the report says nothing readable; the widest: what any screen has.
MIN_WIDTH = 40
MAX_WIDTH = 1000


def check_output_file(path: Path | None, flag: str, *,
                      suffixes: tuple[str, ...] | None = None, creates: bool = False) -> None:
    """Refuse an output file that cannot be written, before any work is done: a report that
    took minutes is not lost to a missing folder at the end. ``suffixes``: the only name
    endings that flag honours (``--figure``: ``.svg`` and ``.png``); ``creates``: the
    writer makes missing folders above the file."""
    from traceview.errors import UsageError

    if path is None:
        return
    if suffixes is not None and path.suffix.lower() not in suffixes:
        raise UsageError(f"{flag} {path}: the name must end in {' or '.join(suffixes)} "
                         f"(it picks the format), not {path.suffix or 'nothing'!r}")
    if path.is_dir():
        raise UsageError(f"{flag} {path} is a folder; give a file name")
    from traceview.atomic import special_file

    what = special_file(path)
    if what is not None:
        raise UsageError(f"{flag} {path} is {what}: traceview writes only regular files "
                         "(or standard output)")
    try:
        path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UsageError(f"{flag} {path}: {exc.strerror} (a symlink loop)") from None
    _check_writable_parent(path, flag, creates=creates)


def check_output_dir(path: Path | None, flag: str) -> None:
    """Refuse an output folder that cannot be made or written, before any work is done."""
    from traceview.errors import UsageError

    if path is None:
        return
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {path} is a file, not a directory; give a folder (it is "
                         "created)")
    if path.is_dir():
        if not os.access(path, os.W_OK | os.X_OK):
            raise UsageError(f"{flag} {path}: the folder is not writable")
        return
    _check_writable_parent(path, flag, creates=True)


def _check_writable_parent(path: Path, flag: str, *, creates: bool = False) -> None:
    """The nearest existing folder above ``path`` must be a writable folder (with
    ``creates``, folders in between are made; otherwise the parent must exist)."""
    from traceview.errors import UsageError

    parent = path.absolute().parent
    if not creates:
        if not parent.exists():
            raise UsageError(f"{flag} {path}: the folder {parent} does not exist")
    else:
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
    if not parent.is_dir():
        raise UsageError(f"{flag} {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: the folder {parent} is not writable")
