"""``traceview export TRACE... --parquet OUT``: normalised tables for SQL and dataframes.

Exit 0 when at least one trace was exported (the others are listed on stderr), 2 when
none was (nothing is written then). Schema: ``docs/export.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from traceview.cli._common import (
    CallsOpt,
    JobsOpt,
    RecursiveOpt,
    RulesOpt,
    ThreadOpt,
    WindowOpt,
    analysis_options,
    check_output_dir,
    run_guarded,
)


def export(
    *,  # typer passes every parameter by name: flags are keyword-only
    traces: Annotated[list[Path], typer.Argument(
        help="Trace files, or directories (their *.json and *.json.gz files); each is a rank.",
        show_default=False, metavar="TRACE")],
    parquet: Annotated[Path, typer.Option(
        "--parquet", help="Output directory (created): slices.parquet, calls.parquet, "
                          "summary.parquet.", show_default=False)],
    window: WindowOpt = None,
    calls: CallsOpt = None,
    rules: RulesOpt = None,
    thread: ThreadOpt = None,
    jobs: JobsOpt = None,
    recursive: RecursiveOpt = True,
) -> None:
    """Write the normalised tables (slices, calls, summary) of traces as Parquet files."""

    def body() -> None:
        from traceview.errors import UsageError
        from traceview.multi.export import TABLES, export_parquet

        if jobs is not None and jobs < 1:
            raise UsageError("--jobs must be at least 1")
        check_output_dir(parquet, "--parquet")
        result = export_parquet(traces, parquet, analysis_options(window, calls, rules, thread),
                                jobs=jobs, recursive=recursive)
        for t in result.failed:
            print(f"traceview: error: rank {t.rank}: {t.error}", file=sys.stderr)
        if not result.ok:
            raise typer.Exit(2)
        for name in TABLES:
            print(f"{parquet / (name + '.parquet')}: {result.rows[name]} rows")

    run_guarded(body, reads_traces=True)
