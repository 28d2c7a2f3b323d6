"""The typer application. This module only registers commands.

Each command lives in its own module; known errors become one line on stderr and an
exit code in ``_run`` (set ``TRACEVIEW_DEBUG=1`` for the traceback).
"""

from __future__ import annotations

from typing import Annotated

import typer

from traceview import native
from traceview.cli import ab_cmd, capture_cmd, diff_cmd, explain_cmd, export_cmd, serve_cmd
from traceview.cli._parsing import PlainCommand, PlainGroup
from traceview.version import __version__

app = typer.Typer(
    name="traceview",
    help="Where a GPU operator's time goes: host categories, device busy/idle, per-call statistics.",
    cls=PlainGroup,
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def version_line() -> str:
    """``traceview 0.1.0 (compiled helpers: scan in use, sweep in use)``: the version and
    whether the compiled helpers (``traceview/native.py``) are used, and why not."""
    helpers = ", ".join(f"{name} {state}" for name, state in native.status().items())
    return f"traceview {__version__} (compiled helpers: {helpers})"


def _version(value: object) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit()


VersionOpt = Annotated[bool, typer.Option(
    "--version", callback=_version, is_eager=True,
    help="Print the version and which compiled helpers are in use.")]


@app.callback()
def _options(ctx: typer.Context, *, version: VersionOpt = False) -> None:
    """Where a GPU operator's time goes: host categories, device busy/idle, per-call statistics."""
    if ctx.invoked_subcommand is None:  # `traceview` alone asks what it can do: no misuse
        typer.echo(ctx.get_help(), nl=False)
        raise typer.Exit(0)


def _summary(command: object) -> str:
    """A command's line in ``traceview --help``: its docstring's first paragraph on one
    line (typer kept the docstring's line breaks there, mid-sentence)."""
    doc = getattr(command, "__doc__", None) or ""
    return " ".join(doc.split("\n\n")[0].split())


for _name, _command in (("explain", explain_cmd.explain), ("diff", diff_cmd.diff),
                        ("capture", capture_cmd.capture), ("export", export_cmd.export),
                        ("serve", serve_cmd.serve), ("ab", ab_cmd.ab)):
    app.command(_name, cls=PlainCommand, short_help=_summary(_command))(_command)

def main() -> None:
    app()
