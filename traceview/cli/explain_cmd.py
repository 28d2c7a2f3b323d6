"""``traceview explain TRACE``: the breakdown of one trace, as text, JSON or markdown.

This module declares the command's options to typer; what the command does is
``explain_body.explain``, which the console entry point also calls itself for the plain
command lines, without typer (``explain_body.plain_arguments``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from traceview.cli import explain_body
from traceview.cli._flags import (
    AddressOpt,
    CallsDepthOpt,
    CallsOpt,
    EngineOpt,
    JobsOpt,
    RecursiveOpt,
    RulesOpt,
    ThreadOpt,
    TopOpt,
    WidthOpt,
    WindowOpt,
)
from traceview.cli.explain_body import Format

__all__ = ["Format", "explain"]

UnprofiledCallOpt = Annotated[str | None, typer.Option(
    "--unprofiled-call",
    help="The call's time without the profiler (e.g. 75us), for a trace that does not "
         "carry one: the unprofiled split is then estimated (profiled-shares model).")]


def explain(
    *,  # typer passes every parameter by name: flags are keyword-only
    trace: Annotated[list[str], typer.Argument(
        help="Chrome/Kineto trace (.json or .json.gz): a path, a URL (file://, "
             "http(s)://, s3://, gs://) or - for standard input. Several, a glob, or a "
             "directory (its *.json and *.json.gz files, subfolders too) are ranks: a row "
             "each and a combined view.",
        show_default=False, metavar="TRACE")],
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
    window: WindowOpt = None,
    calls: CallsOpt = None,
    calls_depth: CallsDepthOpt = 1,
    rules: RulesOpt = None,
    thread: ThreadOpt = None,
    top: TopOpt = 10,
    width: WidthOpt = None,
    figure: Annotated[Path | None, typer.Option(
        help="Also write a picture of a typical call here: a .svg or a .png name (PNG "
             "needs cairosvg); other names are refused. Markdown mentions it; text and JSON note it on stderr.")] = None,
    annotate: Annotated[Path | None, typer.Option(
        help="Also write the trace with traceview's tracks added (calls, steps and phases, "
             "the critical path with flow arrows, device idle by cause, findings) for "
             "Perfetto or chrome://tracing: a .json or .json.gz name (gzipped by name). "
             "See docs/annotate.md.")] = None,
    unprofiled_call: UnprofiledCallOpt = None,
    jobs: JobsOpt = None,
    recursive: RecursiveOpt = True,
    engine: EngineOpt = "local",
    address: AddressOpt = None,
) -> None:
    """Attribute every nanosecond of a profiler trace: host categories x device busy/idle."""
    explain_body.explain(
        trace=trace, format=format, window=window, calls=calls, calls_depth=calls_depth,
        rules=rules, thread=thread, top=top, width=width, figure=figure, annotate=annotate,
        unprofiled_call=unprofiled_call, jobs=jobs, recursive=recursive, engine=engine,
        address=address)
