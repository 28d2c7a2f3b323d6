"""The console entry point (``traceview``, ``python -m traceview``): signal handling and
the state of standard output first, then the CLI.

Importing the CLI takes a noticeable fraction of a second (typer, rich, numpy); a Ctrl-C
or a ``kill`` meanwhile printed an import traceback. So this module imports only the
standard library and ``cli/_signals.py`` before it installs the handlers, and an
interrupt anywhere, start-up included, ends as one line and exit 130 (143 for SIGTERM).
Once the outcome is decided both signals are ignored, for the interpreter's shutdown.
A write to standard output that fails (a full disk, ``> /dev/full``) ends as one line and
exit 2, never a report cut short with exit 0.
"""

from __future__ import annotations

import io
import os
import sys


class _WholeWrites(io.RawIOBase):
    """Standard output's file descriptor, written whole: a short write (a disk that
    fills up mid-report, a size limit) is continued, so the error that follows it is
    raised. Python's buffered writer took a short write as the end and the report was
    cut at 4 KB with exit 0."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return os.isatty(self.fd)

    def write(self, b) -> int:
        view = memoryview(b).cast("B")
        done = 0
        while done < len(view):
            done += os.write(self.fd, view[done:])
        return done


def _whole_stdout() -> None:
    """Put ``_WholeWrites`` under ``sys.stdout``, keeping its encoding and buffering."""
    old = sys.stdout
    if old is None or not hasattr(old, "buffer"):
        return
    try:
        fd = old.fileno()
    except (OSError, ValueError):
        return
    old.flush()
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(_WholeWrites(fd)), encoding=old.encoding,
                                  errors=old.errors, line_buffering=bool(old.line_buffering))


def _quiet_stdout() -> None:
    """Point fd 1 at /dev/null, so the interpreter's last flush at exit cannot fail again
    (it would print "Exception ignored" and exit 120)."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.close(fd)
    except OSError:
        pass


def _interrupt_behind(exc: BaseException) -> KeyboardInterrupt | None:
    """The interrupt an exit stands for: typer turns a ``KeyboardInterrupt`` raised
    outside a command's guard (a command module still importing) into a silent exit 130,
    for SIGTERM too."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, KeyboardInterrupt):
            return seen
        if seen.__cause__ is not None:
            seen = seen.__cause__
        else:  # ``raise ... from None``: the guard has already said it
            seen = None if seen.__suppress_context__ else seen.__context__
    return None


def _command(argv: list[str]) -> None:
    """The command: ``explain TRACE [--format F]`` called directly, without typer (see
    ``explain_body.plain_arguments``), anything else through typer's parser."""
    from traceview.cli import explain_body

    given = explain_body.plain_arguments(argv)
    if given is None:
        from traceview.cli.app import main as app_main

        app_main()
        return
    try:
        explain_body.explain(**given)
    except Exception as exc:
        # typer's Exit, as typer ends a command that raised it: only a command's guard
        # raises one (``_common.run_guarded``), and imports typer to do so
        typer = sys.modules.get("typer")
        if typer is not None and isinstance(exc, typer.Exit):
            sys.exit(exc.exit_code)
        raise


def main() -> None:
    try:
        # inside the guard: a Ctrl-C in the instant before the handlers are in place is
        # Python's own KeyboardInterrupt, and it ends the run as any other does
        from traceview.cli import _signals

        _signals.install()
        code = _run()
        # the interpreter's shutdown puts back the signals' default action, and a signal
        # then ended the process by itself (status -2/-15, no word) after the work was
        # done; ignored, it changes nothing: the outcome is decided and written
        _signals.ignore()
    except KeyboardInterrupt as exc:  # after the command's guard, before the line above
        code = _interrupted(exc)
    # CPython marks a KeyboardInterrupt that leaves code run by exec() as unhandled, even
    # when it is caught further up (a Ctrl-C while a dataclass is made, as a module is
    # imported: its methods are exec'd), and then ends the process by SIGINT after its
    # shutdown (status -2, the exit code and its message lost). Code run by exec() clears
    # the mark as it starts.
    exec("")
    sys.exit(code)


def _interrupted(exc: KeyboardInterrupt) -> int:
    from traceview.cli import _signals

    _signals.ignore()
    print(_signals.message(exc), file=sys.stderr)
    return _signals.exit_code(exc)


def _run() -> int:
    """The CLI; its outcome as an exit code."""
    code = 0
    try:
        if sys.stdout is None:  # started with fd 1 closed (`>&-`)
            print("traceview: error: standard output is closed; redirect it to a file or "
                  "/dev/null", file=sys.stderr)
            code = 2
        else:
            _whole_stdout()
            try:
                _command(sys.argv[1:])
            finally:
                sys.stdout.flush()  # a write error shows here, inside the guard
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        interrupt = _interrupt_behind(exc)
        if interrupt is not None:  # typer's own Exit(130), without a word
            code = _interrupted(interrupt)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except KeyboardInterrupt as exc:
        code = _interrupted(exc)
    except BrokenPipeError:  # `| head`: the reader has what it wanted
        _quiet_stdout()
    except OSError as exc:  # at the last flush, or outside a command's guard
        from traceview.cli._common import os_error_line

        print(os_error_line(exc), file=sys.stderr)
        _quiet_stdout()
        code = 2
    return code
