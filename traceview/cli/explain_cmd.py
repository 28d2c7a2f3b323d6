"""``traceview explain TRACE``: the breakdown of one trace, as text, JSON or markdown."""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from typing import Annotated

import typer

from traceview.cli._common import run_guarded


class Format(str, enum.Enum):
    text = "text"
    json = "json"
    md = "md"


def explain(
    trace: Annotated[Path, typer.Argument(help="Chrome/Kineto trace (.json or .json.gz)",
                                          show_default=False)],
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
    window: Annotated[str | None, typer.Option(
        help="Narrow the window: a regex over record_function names, or START:END "
             "(e.g. 1ms:5ms) from the first event.")] = None,
    calls: Annotated[str | None, typer.Option(
        help="Regex selecting the record_function ranges that are calls "
             "(default: the most repeated numbered name).")] = None,
    rules: Annotated[Path | None, typer.Option(
        help="JSON file of category rules matched before the defaults.")] = None,
    thread: Annotated[str | None, typer.Option(
        help="PID/TID of the host thread to attribute (default: the launching thread).")] = None,
    top: Annotated[int, typer.Option(help="Rows in the kernel and function tables.")] = 10,
    width: Annotated[int | None, typer.Option(help="Terminal width for text output.")] = None,
    figure: Annotated[Path | None, typer.Option(
        help="With --format md: also write an SVG picture of a typical call here and "
             "reference it from the markdown.")] = None,
) -> None:
    """Attribute every nanosecond of a profiler trace: host categories x device busy/idle."""

    def body() -> None:
        from traceview import analyze
        from traceview.options import Options

        ex = analyze(trace, Options(window=window, calls=calls,
                                    rules=str(rules) if rules else None,
                                    thread=thread, top=top))
        if format is Format.json:
            from traceview.render.json_report import render_json

            sys.stdout.buffer.write(render_json(ex))
        elif format is Format.md:
            from traceview.render.markdown import render_markdown

            ref = None
            if figure is not None:
                from traceview.render.figure import write_figure

                write_figure(ex, figure)
                ref = figure.name
            sys.stdout.write(render_markdown(ex, figure=ref))
        else:
            from rich.console import Console

            from traceview.render.console import render_console

            render_console(ex, Console(width=width, highlight=False))

    run_guarded(body)
