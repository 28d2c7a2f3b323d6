"""``traceview diff BEFORE AFTER``: what changed between two traces or explain reports."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from traceview.cli._common import run_guarded, write_document
from traceview.cli._flags import WidthOpt
from traceview.cli.explain_cmd import Format


def diff(
    before: Annotated[str, typer.Argument(help="Trace or explain JSON (the baseline): a "
                                               "path or a URL.", show_default=False)],
    after: Annotated[str, typer.Argument(help="Trace or explain JSON (the change): a path "
                                              "or a URL.", show_default=False)],
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
    width: WidthOpt = None,
    ab: Annotated[Path | None, typer.Option(
        "--ab", help="A saved 'traceview ab --out' result (A = before, B = after): the "
                     "unprofiled, interleaved data the speed verdict rests on.",
        show_default=False)] = None,
) -> None:
    """Compare two runs: unprofiled speed first (capture metadata or --ab), then the
    profiled calls as diagnosis, then what changed in the code path."""

    def body() -> None:
        from traceview.multi.compare import diff_reports, load_report
        from traceview.multi.unprofiled import load_ab

        saved_ab = load_ab(ab) if ab is not None else None
        d = diff_reports(load_report(before), load_report(after), str(before), str(after),
                         ab=saved_ab)

        write_document(format.value, "diff", d, width)
        sys.stdout.flush()

    run_guarded(body, reads_traces=True)
