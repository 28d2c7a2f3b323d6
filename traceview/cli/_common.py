"""What every command shares: known errors become one line on stderr and an exit code.

Set ``TRACEVIEW_DEBUG=1`` to see the traceback instead. Unknown exceptions are bugs and
are re-raised.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import typer

from traceview.errors import TraceviewError


def run_guarded(body: Callable[[], None]) -> None:
    try:
        body()
    except TraceviewError as exc:
        if os.environ.get("TRACEVIEW_DEBUG"):
            raise
        print(f"traceview: error: {exc}", file=sys.stderr)
        raise typer.Exit(exc.exit_code) from None
    except MemoryError:
        print("traceview: error: out of memory while reading the trace", file=sys.stderr)
        raise typer.Exit(2) from None
    except BrokenPipeError:  # `traceview explain ... | head`
        raise typer.Exit(0) from None
