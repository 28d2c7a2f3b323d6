"""The typer application. This module only registers commands.

Each command lives in its own module; known errors become one line on stderr and an
exit code in ``_run`` (set ``TRACEVIEW_DEBUG=1`` for the traceback).
"""

from __future__ import annotations

import typer

from traceview.cli import ab_cmd, capture_cmd, diff_cmd, explain_cmd, export_cmd, serve_cmd

app = typer.Typer(
    name="traceview",
    help="Where a GPU operator's time goes: host categories, device busy/idle, per-call statistics.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("explain")(explain_cmd.explain)
app.command("diff")(diff_cmd.diff)
app.command("capture")(capture_cmd.capture)
app.command("export")(export_cmd.export)
app.command("serve")(serve_cmd.serve)
app.command("ab")(ab_cmd.ab)


def main() -> None:
    app()
