"""``traceview export TRACE... --parquet OUT``: normalised tables for SQL and dataframes.

Exit 0 when at least one trace was exported (the others are listed on stderr), 2 when
none was (nothing is written then). Schema: ``docs/export.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from traceview.cli._common import analysis_options, check_output_dir, run_guarded
from traceview.cli._flags import (
    AddressOpt,
    CallsOpt,
    EngineOpt,
    JobsOpt,
    RecursiveOpt,
    RulesOpt,
    ThreadOpt,
    WindowOpt,
)


def export(
    *,  # typer passes every parameter by name: flags are keyword-only
    traces: Annotated[list[str], typer.Argument(
        help="Trace files, globs, directories (their *.json and *.json.gz files) or URLs "
             "(file://, http(s)://, s3://, gs://); each is a rank.",
        show_default=False, metavar="TRACE")],
    parquet: Annotated[str, typer.Option(
        "--parquet", help="Output directory (created): slices.parquet, calls.parquet, "
                          "summary.parquet. With --engine ray, or a URL (s3://...), each "
                          "rank's slices/part-N.parquet and calls/part-N.parquet, written "
                          "where it is analysed, and summary.parquet.", show_default=False)],
    window: WindowOpt = None,
    calls: CallsOpt = None,
    rules: RulesOpt = None,
    thread: ThreadOpt = None,
    jobs: JobsOpt = None,
    recursive: RecursiveOpt = True,
    engine: EngineOpt = "local",
    address: AddressOpt = None,
) -> None:
    """Write the normalised tables (slices, calls, summary) of traces as Parquet files."""

    def body() -> None:
        from traceview.errors import UsageError
        from traceview.io.sources import is_url
        from traceview.multi.export import TABLES, export_parquet

        parts = engine != "local" or is_url(parquet)  # the per-rank layout

        if jobs is not None and jobs < 1:
            raise UsageError("--jobs must be at least 1")
        if not is_url(parquet):
            check_output_dir(Path(parquet), "--parquet")
        from traceview.cli._progress import RanksProgress

        with RanksProgress("traces") as bar:
            result = export_parquet(traces, parquet,
                                    analysis_options(window, calls, rules, thread), jobs=jobs,
                                    recursive=recursive, engine=engine, address=address,
                                    progress=bar)
        for t in result.failed:
            print(f"traceview: error: rank {t.rank}: {t.error}", file=sys.stderr)
        if not result.ok:
            raise typer.Exit(2)
        out = parquet.rstrip("/")
        for name in TABLES:
            where = f"{name}.parquet" if name == "summary" or not parts else f"{name}/"
            print(f"{out}/{where}: {result.rows[name]} rows")

    run_guarded(body, reads_traces=True)
