"""``traceview diff BEFORE AFTER``: what changed between two traces or explain reports."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from traceview.cli._common import run_guarded, stdout_console
from traceview.cli.explain_cmd import Format


def diff(
    before: Annotated[Path, typer.Argument(help="Trace or explain JSON (the baseline).",
                                           show_default=False)],
    after: Annotated[Path, typer.Argument(help="Trace or explain JSON (the change).",
                                          show_default=False)],
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
    width: Annotated[int | None, typer.Option(help="Terminal width for text output.")] = None,
) -> None:
    """Compare two runs: per-call medians with bootstrap confidence intervals."""

    def body() -> None:
        from traceview.multi.compare import diff_reports, load_report

        d = diff_reports(load_report(before), load_report(after), str(before), str(after))
        from traceview.render.registry import RenderOptions, renderer

        sys.stdout.write(renderer(format.value, "diff").render(
            d, RenderOptions(width=width or stdout_console(None).width,
                             color=stdout_console(None).color_system
                             if format is Format.text else None)))
        sys.stdout.flush()

    run_guarded(body, reads_traces=True)
