"""Normalised tables of one or many traces, for SQL and dataframes (``traceview export``).

Three tables, each one Parquet file in the output directory (schema: ``docs/export.md``):

* ``slices`` — one row per duration event of each trace (every slice of the model, not
  only those in the window), with its lane, times in ns, correlation id and, for host
  slices overlapping the window, the host category that owns its time;
* ``calls`` — one row per call, every per-call metric and one ``host_<category>_ns``
  column per host category (the numbers of ``calls.per_call`` in the explain JSON);
* ``summary`` — one row per trace: window, device busy/idle, launches, calls, the warm
  p50 of each per-call metric, the verdict; a file that could not be analysed has a row
  with only ``path``, ``rank`` and ``error``.

Every table has ``path`` (the file as given) and ``rank`` (``distributedInfo.rank`` when
the trace has it, else the file's position: ``traceview.multi.ranks``). Traces are analysed in
worker processes like ``traceview explain DIR``; each worker sends back polars frames.
Files are written to a temporary name in the output directory and renamed over the
target, so a reader never sees half a file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from traceview.analyses.calls import METRICS
from traceview.coerce import int_or_none
from traceview.errors import OutputError, TraceviewError, UsageError
from traceview.model import NO_ID
from traceview.multi.engine import each, in_order
from traceview.multi.ranks import metadata_rank
from traceview.multi.trace_files import expand_paths, file_sizes
from traceview.multi.workers import error_line, raise_if_interrupted, worker_died_line
from traceview.options import Options
from traceview.printable import printable_path

if TYPE_CHECKING:
    from traceview.multi.engine import Progress
    from traceview.report.explanation import Analysis
    from traceview.report.model import Report

TABLES = ("slices", "calls", "summary")

SLICES_SCHEMA: dict[str, Any] = {
    "path": pl.String, "rank": pl.Int64, "slice": pl.Int64, "lane_kind": pl.String,
    "pid": pl.Int64, "tid": pl.Int64, "thread": pl.String, "device": pl.Int64,
    "stream": pl.Int64, "category": pl.String, "name": pl.String, "start_ns": pl.Int64,
    "end_ns": pl.Int64, "dur_ns": pl.Int64, "correlation": pl.Int64,
    "host_category": pl.String, "host_self_ns": pl.Int64,
}
CALLS_SCHEMA: dict[str, Any] = {
    "path": pl.String, "rank": pl.Int64, "index": pl.Int64, "name": pl.String,
    "start_ns": pl.Int64, "end_ns": pl.Int64, "cold": pl.Boolean, "outlier": pl.Boolean,
    "launches": pl.Int64, "kernels": pl.Int64, **{m: pl.Int64 for m in METRICS},
}
SUMMARY_SCHEMA: dict[str, Any] = {
    "path": pl.String, "rank": pl.Int64, "rank_source": pl.String, "error": pl.String,
    "slices": pl.Int64, "window_start_ns": pl.Int64, "window_end_ns": pl.Int64,
    "window_ns": pl.Int64, "window_source": pl.String, "busy_ns": pl.Int64,
    "idle_ns": pl.Int64, "busy_share": pl.Float64, "kernel_count": pl.Int64,
    "kernel_sum_ns": pl.Int64, "launches": pl.Int64, "launches_linked": pl.Int64,
    "calls": pl.Int64, "warm_calls": pl.Int64,
    **{f"{m}_p50": pl.Int64 for m in METRICS},
    "verdict": pl.String, "host_pid": pl.Int64, "host_tid": pl.Int64,
    "host_thread": pl.String, "findings": pl.List(pl.String),
}


def category_column(category: str) -> str:
    return f"host_{category}_ns"


def _nullable(values: np.ndarray, missing: int) -> pl.Series:
    """An Int64 series with ``missing`` as null."""
    s = pl.Series(values.astype(np.int64, copy=False))
    return s.set(pl.Series(values == missing), None) if (values == missing).any() else s


def slices_frame(ex: Analysis, path: str, rank: int) -> pl.DataFrame:
    """One row per slice of the trace; host categories from each host thread's sweep."""
    from traceview.analyses.host import attribute_host, host_rows_by_lane

    trace = ex.trace
    s = trace.slices
    n = len(s)
    lanes = trace.lanes
    # host category code (index into the timeline's categories) and owned ns, per slice
    host_cat = np.full(n, -1, dtype=np.int64)
    host_self = np.full(n, -1, dtype=np.int64)
    categories = list(ex.timeline.categories)
    attributed = ex.timeline.lane.index if ex.timeline.lane is not None else None
    by_lane = host_rows_by_lane(trace, ex.window)
    for lane in lanes:
        if lane.kind != "host":
            continue
        if lane.index == attributed:
            tl = ex.timeline
        elif by_lane[lane.index].size == 0:
            continue
        else:
            tl = attribute_host(trace, lane, ex.window, ex.rules, rows=by_lane[lane.index])
        if tl.rows.size == 0:
            continue
        if list(tl.categories) != categories:  # same rules: never; kept honest anyway
            remap = np.asarray([categories.index(c) if c in categories else -1
                                for c in tl.categories], dtype=np.int64)
        else:
            remap = None
        own = s.lane[tl.rows] == lane.index  # overlaid profiler slices belong to their lane
        rows = tl.rows[own]
        codes = tl.row_cat[own].astype(np.int64)
        host_cat[rows] = remap[codes] if remap is not None else codes
        host_self[rows] = tl.self_ns[own]

    def lane_col(values: list[Any], dtype: Any) -> pl.Series:
        return pl.Series(values, dtype=dtype).gather(s.lane)

    cat_names = pl.Series(list(trace.cat_names), dtype=pl.String)
    names = pl.Series(list(trace.names), dtype=pl.String)
    host_names = pl.Series([*categories, None], dtype=pl.String)
    df = pl.DataFrame({
        "path": pl.repeat(path, n, dtype=pl.String, eager=True),
        "rank": pl.repeat(rank, n, dtype=pl.Int64, eager=True),
        "slice": np.arange(n, dtype=np.int64),
        "lane_kind": lane_col([ln.kind for ln in lanes], pl.String),
        "pid": lane_col([int_or_none(ln.pid) for ln in lanes], pl.Int64),
        "tid": lane_col([int_or_none(ln.tid) for ln in lanes], pl.Int64),
        "thread": lane_col([ln.label for ln in lanes], pl.String),
        "device": lane_col([ln.device for ln in lanes], pl.Int64),
        "stream": lane_col([ln.stream for ln in lanes], pl.Int64),
        "category": cat_names.gather(s.cat),
        "name": names.gather(s.name),
        "start_ns": s.start.astype(np.int64, copy=False),
        "end_ns": s.end.astype(np.int64, copy=False),
        "dur_ns": (s.end - s.start).astype(np.int64, copy=False),
        "correlation": _nullable(np.asarray(s.corr), NO_ID),
        "host_category": host_names.gather(np.where(host_cat < 0, len(categories), host_cat)),
        "host_self_ns": _nullable(host_self, -1),
    }, schema=SLICES_SCHEMA)
    return df


def calls_frame(report: Report, path: str, rank: int,
                categories: Sequence[str]) -> pl.DataFrame:
    """One row per call, from the report's ``calls.per_call``."""
    schema = {**CALLS_SCHEMA, **{category_column(c): pl.Int64 for c in categories}}
    rows = []
    for c in report.calls.per_call:
        fields = {"index": c.index, "name": c.name, "start_ns": c.start_ns, "end_ns": c.end_ns,
                  "cold": c.cold, "outlier": c.outlier, "launches": c.launches, "kernels": c.kernels, **c.metrics}
        row = {k: fields.get(k) for k in CALLS_SCHEMA if k not in ("path", "rank")}
        row.update({category_column(k): c.categories.get(k, 0) for k in categories})
        rows.append({"path": path, "rank": rank, **row})
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def summary_row(report: Report, path: str, rank: int, rank_source: str) -> dict[str, Any]:
    w, d, ln, c = report.window, report.device, report.launches, report.calls
    thread = report.host.thread
    verdict = report.verdict
    return {
        "path": path, "rank": rank, "rank_source": rank_source, "error": None,
        "slices": report.trace.slices,
        "window_start_ns": w.start_ns, "window_end_ns": w.end_ns, "window_ns": w.dur_ns,
        "window_source": w.source, "busy_ns": d.busy_ns, "idle_ns": d.idle_ns,
        "busy_share": report.busy_share,
        "kernel_count": d.kernel_count, "kernel_sum_ns": d.kernel_sum_ns,
        "launches": ln.count, "launches_linked": ln.linked,
        "calls": c.count, "warm_calls": c.warm_count,
        **{f"{m}_p50": c.stats[m].p50 for m in METRICS},
        "verdict": None if verdict is None else verdict.id,
        "host_pid": None if thread is None else int_or_none(thread.pid),
        "host_tid": None if thread is None else int_or_none(thread.tid),
        "host_thread": None if thread is None else thread.label,
        "findings": [f.id for f in report.findings],
    }


def _failed_row(path: str, rank: int, error: str) -> dict[str, Any]:
    row: dict[str, Any] = {k: None for k in SUMMARY_SCHEMA}
    row.update(path=path, rank=rank, rank_source="order", error=error)
    return row


@dataclass
class TraceTables:
    path: str
    rank: int
    rank_source: str
    summary: dict[str, Any]
    slices: pl.DataFrame | None = None
    calls: pl.DataFrame | None = None
    error: str | None = None
    rows: dict[str, int] = field(default_factory=dict)  # per-rank parts: table -> rows


def trace_tables(item: tuple[int, str], options: Options) -> TraceTables:
    """Worker: load, explain and tabulate one trace; an error becomes its summary row."""
    index, given = item
    path = printable_path(given)  # the tables' name for it: a Parquet string is UTF-8
    try:
        from traceview.report.build import build_report
        from traceview.report.explanation import analyze_trace
        from traceview.report.pipeline import load

        ex = analyze_trace(load(given), options)
        report = build_report(ex)
        r = metadata_rank(report.trace.metadata)
        rank, source = (index, "order") if r is None else (r, "distributedInfo")
        return TraceTables(
            path, rank, source, summary_row(report, path, rank, source),
            slices=slices_frame(ex, path, rank),
            calls=calls_frame(report, path, rank, ex.timeline.categories),
        )
    except Exception as exc:  # one trace's failure must not stop the others
        if os.environ.get("TRACEVIEW_DEBUG") and not isinstance(exc, TraceviewError):
            raise
        raise_if_interrupted(exc)
        line = error_line(exc)
        return TraceTables(path, index, "order", _failed_row(path, index, line), error=line)


def _worker_died(item: tuple[int, str], detail: str | None = None) -> TraceTables:
    index, given = item
    path = printable_path(given)
    line = worker_died_line(path, detail)
    return TraceTables(path, index, "order", _failed_row(path, index, line), error=line)


@dataclass
class ExportResult:
    out: Path | str  # a local directory, or a URL
    traces: list[TraceTables]
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows written

    @property
    def failed(self) -> list[TraceTables]:
        return [t for t in self.traces if t.error is not None]

    @property
    def ok(self) -> list[TraceTables]:
        return [t for t in self.traces if t.error is None]


def build_tables(paths: Sequence[str | os.PathLike[str]], options: Options | None = None,
                 jobs: int | None = None, *, recursive: bool = True,
                 progress: Progress | None = None,
                 ) -> tuple[list[TraceTables], dict[str, pl.DataFrame]]:
    """Analyse every trace (in parallel) and concatenate the tables, in file order."""
    from traceview.rules import load_rules

    options = options or Options()
    load_rules(options.rules)  # a bad rules file is one usage error, not one per trace
    files = expand_paths(paths, recursive=recursive)
    if not files:
        raise UsageError("no trace files given")
    items = [(i, str(f)) for i, f in enumerate(files)]
    traces = in_order(each(partial(trace_tables, options=options), items, jobs=jobs,
                           sizes=file_sizes(files), crashed=_worker_died,
                           failed=lambda t: t.error is not None, progress=progress), len(items))
    ok = [t for t in traces if t.error is None]
    tables = {
        "slices": pl.concat([t.slices for t in ok if t.slices is not None], how="vertical")
        if ok else pl.DataFrame(schema=SLICES_SCHEMA),
        "calls": pl.concat([t.calls for t in ok if t.calls is not None], how="diagonal")
        if ok else pl.DataFrame(schema=CALLS_SCHEMA),
        "summary": pl.DataFrame([t.summary for t in traces], schema=SUMMARY_SCHEMA,
                                orient="row"),
    }
    return traces, tables


def export_parquet(paths: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str],
                   options: Options | None = None, jobs: int | None = None, *,
                   recursive: bool = True, engine: str = "local", address: str | None = None,
                   progress: Progress | None = None) -> ExportResult:
    """Write ``slices.parquet``, ``calls.parquet`` and ``summary.parquet`` into ``out``;
    with ``engine="ray"`` or an output URL, each rank's own parts where it is analysed
    (:func:`export_parts`).

    Nothing is written when no trace could be analysed.
    """
    from traceview.io.sources import is_url

    if engine != "local" or is_url(os.fspath(out)):
        return export_parts(paths, os.fspath(out), options, jobs, recursive=recursive,
                            engine=engine, address=address, progress=progress)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a directory")
    traces, tables = build_tables(paths, options, jobs, recursive=recursive, progress=progress)
    result = ExportResult(out, traces)
    if not result.ok:
        return result
    _write_tables(out, tables, result)
    return result


def _write_tables(out: Path, tables: dict[str, pl.DataFrame], result: ExportResult) -> None:
    """Every table to a temporary file of its own (a unique name: two runs into one
    folder never share one), then all renamed at once, under a lock on the folder: two
    runs into one folder write one after the other, never a mix of both. An interrupt
    leaves the previous tables (or no folder), never half a file; the clean-up holds a
    second Ctrl-C or SIGTERM until it is done."""
    from traceview.atomic import folder_lock, refuse_special, staged_name
    from traceview.interrupts import deferred

    for name in TABLES:
        target = out / f"{name}.parquet"
        if target.is_dir() and not target.is_symlink():
            raise OutputError(f"{target} is a folder; the table cannot be written there "
                              "(remove it or export into another folder)")
        refuse_special(target)  # a FIFO or a device is never replaced by a table
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{out}: cannot create the folder: {exc.strerror or exc}") from None
    staged: list[Path] = []
    try:
        with folder_lock(out):
            for name in TABLES:
                with deferred():  # made and listed for the clean-up, or neither
                    staged.append(staged_name(out / f"{name}.parquet"))
                tmp = staged[-1]
                try:
                    tables[name].write_parquet(tmp)
                except (OSError, pl.exceptions.PolarsError) as exc:
                    raise OutputError(f"{out / f'{name}.parquet'}: cannot write: "
                                      f"{_why_not_written(tmp, exc)}") from None
                result.rows[name] = tables[name].height
            with deferred():  # the three renames together, or none
                for name, tmp in zip(TABLES, staged, strict=True):
                    os.replace(tmp, out / f"{name}.parquet")
                staged = []
    except BaseException:
        with deferred():
            for tmp in staged:
                tmp.unlink(missing_ok=True)
            if created:
                try:
                    out.rmdir()  # only if empty: another run may be writing there
                except OSError:
                    pass
        raise


def _first_line(exc: BaseException) -> str:
    """An exception's message, one line (polars: "No space left on device (os error 28)")."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _why_not_written(tmp: Path, exc: BaseException) -> str:
    """The operating system's reason a table's write failed. Polars loses it where the
    disk fills (or the file-size limit hits) inside the footer ("Invalid thrift:
    transport error"); one more byte appended to the abandoned file asks again."""
    said = _first_line(exc)
    if "os error" in said:
        return said
    try:
        with open(tmp, "ab") as f:
            f.write(b"\0")
            f.flush()
    except OSError as probe:
        return probe.strerror or said
    return said


# ------------------------------------------------------------------ per-rank parts

PARTS = ("slices", "calls")  # a file per rank: <out>/<table>/part-<position>.parquet
SUMMARY = "summary.parquet"  # one file, written by the driver last


def part_name(table: str, index: int) -> str:
    return f"{table}/part-{index:05d}.parquet"


def rank_parts(item: tuple[int, str], options: Options, staging: str) -> TraceTables:
    """Worker (a Ray task, or a local one): tabulate one trace and write its ``slices``
    and ``calls`` parts under ``staging`` (a local path or URL), from where the task
    runs; only the summary row and the row counts go back to the driver."""
    tables = trace_tables(item, options)
    if tables.error is None:
        from fsspec.core import url_to_fs

        from traceview.io.sources import read_errors

        errors: tuple[type[BaseException], ...] = (*read_errors(), ImportError)
        try:
            fs, root = url_to_fs(staging)
            for name in PARTS:
                frame = getattr(tables, name)
                path = f"{root}/{part_name(name, item[0])}"
                fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
                with fs.open(path, "wb") as f:
                    frame.write_parquet(f)
                tables.rows[name] = frame.height
        except errors as exc:
            from traceview.io.sources import load_error

            line = f"{tables.path}: cannot write its tables: {load_error(staging, exc).problem}"
            index, path = item[0], printable_path(item[1])
            tables = TraceTables(path, index, "order", _failed_row(path, index, line),
                                 error=line)
    tables.slices = tables.calls = None
    return tables


def export_parts(paths: Sequence[str | os.PathLike[str]], out: str,
                 options: Options | None = None, jobs: int | None = None, *,
                 recursive: bool = True, engine: str = "local", address: str | None = None,
                 progress: Progress | None = None) -> ExportResult:
    """Every rank's ``slices`` and ``calls`` as its own Parquet file, written by the
    task that analysed it, plus one ``summary.parquet`` from the driver: ``out`` (a
    directory or a URL: ``s3://bucket/job/tables``) gets ``slices/part-NNNNN.parquet``,
    ``calls/part-NNNNN.parquet`` (NNNNN: the trace's position) and ``summary.parquet``.

    The parts go to a staging folder inside ``out`` first; only when every rank has
    finished are the previous tables replaced by the new ones, so an interrupt (Ctrl-C)
    or a run with no usable trace leaves the previous tables, never a mix.
    """
    import uuid

    from fsspec.core import url_to_fs

    from traceview.io.sources import is_url
    from traceview.rules import load_rules

    options = options or Options()
    load_rules(options.rules)
    if not is_url(out) and Path(out).exists() and not Path(out).is_dir():
        raise UsageError(f"{out}: exists and is not a directory")
    files = expand_paths(paths, recursive=recursive)
    if not files:
        raise UsageError("no trace files given")
    try:
        fs, root = url_to_fs(out)
    except ImportError as exc:
        raise UsageError(f"{out}: {exc}") from None
    root = root.rstrip("/")
    created = _is_new(fs, root, out)
    staging_root = f"{root}/.staging-{uuid.uuid4().hex[:12]}"
    staging = staging_root if not is_url(out) else f"{out.split('://', 1)[0]}://{staging_root}"
    items = [(i, str(f)) for i, f in enumerate(files)]
    try:
        traces = in_order(each(partial(rank_parts, options=options, staging=staging), items,
                               engine=engine, jobs=jobs, address=address,
                               sizes=file_sizes(files), crashed=_worker_died,
                               failed=lambda t: t.error is not None, progress=progress),
                          len(items))
        result = ExportResult(Path(out) if not is_url(out) else out, traces)
        if not result.ok:
            _remove(fs, staging_root)
            if created:
                _remove(fs, root)
            return result
        summary = pl.DataFrame([t.summary for t in result.traces], schema=SUMMARY_SCHEMA,
                               orient="row")
        with fs.open(f"{staging_root}/{SUMMARY}", "wb") as f:
            summary.write_parquet(f)
        # commit: the old tables out, the new ones in, file by file (an object store
        # has no folders to rename)
        for name in PARTS:
            _remove(fs, f"{root}/{name}")
        for (index, _), t in zip(items, result.traces, strict=True):
            if t.error is not None:
                continue
            for name in PARTS:
                target = f"{root}/{part_name(name, index)}"
                fs.makedirs(target.rsplit("/", 1)[0], exist_ok=True)
                fs.mv(f"{staging_root}/{part_name(name, index)}", target)
        fs.mv(f"{staging_root}/{SUMMARY}", f"{root}/{SUMMARY}")
        _remove(fs, staging_root)
    except BaseException as exc:
        _remove(fs, staging_root)
        if created:
            _remove(fs, root)
        from traceview.io.sources import read_errors

        if isinstance(exc, read_errors()):
            raise OutputError(f"{out}: cannot write: {_store_problem(out, exc)}") from None
        raise
    result.rows = {name: sum(t.rows.get(name, 0) for t in result.ok) for name in PARTS}
    result.rows["summary"] = summary.height
    return result


def _store_problem(out: str, exc: BaseException) -> str:
    """A store's failure in the loader's words ("cannot connect: ...", "Unable to locate
    credentials"), without its "cannot read" (this is a write)."""
    from traceview.io.sources import load_error

    problem = load_error(out, exc).problem
    return problem.removeprefix("cannot read: ")


def _is_new(fs, root: str, out: str) -> bool:
    """Whether the output folder is new (``not fs.exists``); a store that cannot be
    reached (no credentials, a refused endpoint) is one line naming it."""
    from traceview.io.sources import read_errors

    try:
        return not fs.exists(root)
    except read_errors() as exc:
        raise OutputError(f"{out}: cannot write: {_store_problem(out, exc)}") from None


def _remove(fs, path: str) -> None:
    from traceview.io.sources import read_errors

    try:
        if fs.exists(path):
            fs.rm(path, recursive=True)
    except read_errors():
        pass
