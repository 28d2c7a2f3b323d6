"""The options several commands share, declared once as typer ``Annotated`` aliases.

Only the typer-declared commands (``*_cmd.py``) import this module, and with it typer:
the plain ``explain`` run (``explain_body``) imports neither.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from traceview.cli._common import MAX_WIDTH, MIN_WIDTH

WidthOpt = Annotated[int | None, typer.Option(
    "--width", min=MIN_WIDTH, max=MAX_WIDTH, metavar="COLUMNS", help="Terminal width for text output.")]
TopOpt = Annotated[int, typer.Option(
    "--top", min=1, metavar="N", help="Rows in the kernel and function tables.")]

# Analysis options
WindowOpt = Annotated[str | None, typer.Option(
    "--window", help="Narrow the window: a regex over record_function names, or START:END "
                     "(e.g. 1ms:5ms) from the first event, widened to whole profiler steps "
                     "where it cuts one.")]
CallsOpt = Annotated[str | None, typer.Option(
    "--calls", help="Regex selecting the calls: record_function ranges, else Python "
                    "functions, else aten ops (default: numbered ranges, else Python "
                    "frames, else launches; the output says which).")]
CallsDepthOpt = Annotated[int, typer.Option(
    "--calls-depth", min=1, metavar="N", help="Calls from Python frames: levels below the frame enclosing "
                          "every launch (1: what the loop body calls).")]


def _rules_file(value: Path | None) -> Path | None:
    """``--rules``: read and check the file before any work (``rules.load_rules`` names
    the file and the field at fault, or says the file holds no rule)."""
    from traceview.errors import UsageError
    from traceview.rules import load_rules

    if value is not None:
        try:
            load_rules(value)
        except UsageError as exc:
            raise typer.BadParameter(str(exc)) from None
    return value


RulesOpt = Annotated[Path | None, typer.Option(
    "--rules", callback=_rules_file, help="JSON file of category rules matched before the defaults.")]
ThreadOpt = Annotated[str | None, typer.Option(
    "--thread", help="The host thread to attribute: a TID, a name (pt_autograd_0), main, "
                     "or PID/TID (default: the launching thread).")]
JobsOpt = Annotated[int | None, typer.Option(
    "--jobs", "-j", min=1, metavar="N", help="With several traces: worker processes (default: one per trace, "
                         "at most one per CPU).")]
RecursiveOpt = Annotated[bool, typer.Option(
    "--recursive/--no-recursive", help="Search directories' subfolders for traces too.")]
# rich reads '[ray]' in help as a style tag and drops it: the bracket is escaped
EngineOpt = Annotated[str, typer.Option(
    "--engine", help="With several traces: where they are analysed. local: this process, "
                     "or a process pool when the traces are big enough to pay for it; ray: "
                     "one Ray task per trace (pip install 'traceview\\[ray]').")]
AddressOpt = Annotated[str | None, typer.Option(
    "--address", help="--engine ray: the cluster to join (auto: the running one; "
                      "host:port, ray://host:10001). Default: the running one, else a new "
                      "local one.")]
