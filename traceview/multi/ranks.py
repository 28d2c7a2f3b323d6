"""Many traces at once: one per rank, analysed in parallel, then compared.

``traceview explain DIR`` or ``traceview explain A B C`` lands here (one plain file keeps
the single-trace path). The steps, none of which print:

* ``expand_paths`` (``multi/trace_files.py``) — a directory stands for its trace files (``*.json``,
  ``*.json.gz``, which covers ``*.pt.trace.json(.gz)``), a glob for its matches, sorted
  by name with numbers compared as numbers (``rank2`` before ``rank10``); files given by
  name are taken as they are; URLs (``s3://``, ``gs://``, ``http(s)://``) likewise
  (``io/sources.py``). The same file named twice is analysed once.
* :func:`analyze_ranks` — each file is analysed by ``multi/engine.py``: in this process,
  in a local pool when it pays, or as one Ray task per rank (``engine="ray"``). A worker
  sends back the compact report (``Report.to_dict()`` as compact JSON), never the
  objects, and each is reduced to its ``RankResult`` as it arrives. A file that cannot
  be analysed becomes that rank's one-line error; the others still run.
* the **rank** of a file is ``distributedInfo.rank`` from the trace's metadata when it is
  an integer, else the file's position in the list (``rank_source`` says which).
* :func:`combine` — medians across ranks and the straggler rule (``multi/stragglers.py``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from traceview.coerce import rank_or_none
from traceview.documents import VERSIONS, builtins, read
from traceview.errors import TraceviewError, UsageError
from traceview.multi.stragglers import (
    STRAGGLER_MAD_K,
    STRAGGLER_METRICS,
    STRAGGLER_MIN_RANKS,
    STRAGGLER_MIN_RELATIVE,
    Outlier,
    outliers,
    round_share,
)
from traceview.multi.trace_files import expand_paths, file_sizes
from traceview.multi.workers import error_line, raise_if_interrupted, worker_died_line
from traceview.options import Options

if TYPE_CHECKING:
    from traceview.multi.engine import Progress
    from traceview.report.model import Report


def metadata_rank(metadata: Mapping[str, Any] | None) -> int | None:
    """``distributedInfo.rank`` when it is a non-negative integer (or integer string)."""
    info = (metadata or {}).get("distributedInfo")
    if not isinstance(info, dict):
        return None
    return rank_or_none(info.get("rank"))


def _explain_report(path: str, options: Options) -> bytes | str:
    """Worker: analyse one file into its compact report (``Report.to_dict()`` as
    compact JSON: kilobytes, plain data, the same bytes from every engine); an error
    becomes its one line."""
    try:
        import orjson

        from traceview.report.pipeline import analyze

        return orjson.dumps(analyze(path, options).to_dict(), option=orjson.OPT_NON_STR_KEYS)
    except Exception as exc:  # one rank's failure must not stop the others
        if os.environ.get("TRACEVIEW_DEBUG") and not isinstance(exc, TraceviewError):
            raise
        raise_if_interrupted(exc)
        return error_line(exc)


def _worker_died(path: str, detail: str | None = None) -> str:
    return worker_died_line(path, detail)


@dataclass
class RankResult:
    index: int  # position in the file list
    path: str
    rank: int
    rank_source: Literal["distributedInfo", "order"]
    report: Report | None  # None when it failed
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.report is not None

    def metric(self, name: str) -> float | int | None:
        return rank_metrics(self.report).get(name) if self.report else None


@dataclass
class RanksReport:
    ranks: list[RankResult]
    metrics: dict[str, dict[str, Any]]  # metric -> {n, median, mad, min, max}
    stragglers: dict[int, list[Outlier]]  # index in ``ranks`` -> why it stands out
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> list[RankResult]:
        return [r for r in self.ranks if r.ok]

    @property
    def failed(self) -> list[RankResult]:
        return [r for r in self.ranks if not r.ok]

    def table(self):
        """The per-rank figures as a polars DataFrame: one row per rank (``rank``,
        ``rank_source``, ``path``, ``error``, the summary table's numbers, whether it is
        a straggler), in rank order; the Reports themselves are ``ranks[i].report``."""
        import polars as pl

        strag = {self.ranks[i].index for i in self.stragglers}
        rows = [{"rank": r.rank, "rank_source": r.rank_source, "path": r.path,
                 "error": r.error, **(rank_metrics(r.report) or dict.fromkeys(_metric_columns())),
                 "straggler": r.index in strag} for r in self.ranks]
        schema = {"rank": pl.Int64, "rank_source": pl.String, "path": pl.String,
                  "error": pl.String, **_metric_columns(), "straggler": pl.Boolean}
        return pl.DataFrame(rows, schema=schema, orient="row")

    def document(self) -> RanksDocument:
        ranks = []
        for r in self.ranks:
            if r.report is not None:
                ranks.append({**r.report.to_dict(), "rank": r.rank, "rank_source": r.rank_source})
            else:
                ranks.append({"rank": r.rank, "rank_source": r.rank_source,
                              "trace": {"path": r.path}, "error": r.error})
        rule = StragglerRule(STRAGGLER_MAD_K, STRAGGLER_MIN_RELATIVE, STRAGGLER_MIN_RANKS,
                             dict(STRAGGLER_METRICS))
        combined = Combined(
            len(self.ranks), len(self.ok),
            [FailedRank(r.rank, r.path, r.error) for r in self.failed], rule, self.metrics,
            [Straggler(self.ranks[i].rank, self.ranks[i].path, [o.as_dict() for o in why])
             for i, why in sorted(self.stragglers.items())],
            self.warnings)
        return RanksDocument(VERSIONS["ranks"], ranks, combined)

    def to_dict(self) -> dict[str, Any]:
        return builtins(self.document())


class FailedRank(msgspec.Struct, frozen=True):
    rank: int | None
    path: str
    error: str | None


class StragglerRule(msgspec.Struct, frozen=True):
    mad_k: float
    min_relative: float
    min_ranks: int
    metrics: dict[str, str]  # metric -> which side counts: above | below | both


class Straggler(msgspec.Struct, frozen=True):
    rank: int | None
    path: str
    reasons: list[dict[str, Any]]  # the rule's figures per metric (``Outlier.as_dict``)


class Combined(msgspec.Struct, frozen=True):
    count: int
    ok: int
    failed: list[FailedRank]
    rule: StragglerRule
    metrics: dict[str, dict[str, Any]]  # metric -> {n, median, mad, min, max}
    stragglers: list[Straggler]
    warnings: list[str]


class RanksDocument(msgspec.Struct, frozen=True):
    """The ranks document's layout (``explain DIR --format json``, docs/ranks.md), in its
    key order: what is written and what a saved one is read back as (``read_ranks``).
    Each of ``ranks`` is an explain report (docs/json.md) with ``rank`` and
    ``rank_source`` added, or ``{rank, rank_source, trace: {path}, error}`` for a trace
    that could not be read."""

    schema_version: int
    ranks: list[dict[str, Any]]
    combined: Combined


def read_ranks(doc: object) -> RanksDocument:
    """A saved ranks document, upgraded and checked; a ``UsageError`` of one line for
    anything else."""
    return read(doc, "ranks", RanksDocument)


def _p50(stats: dict[str, Any], metric: str) -> int | None:
    s = stats.get(metric)  # absent from a report saved before the metric existed
    return None if s is None else s.p50


def _metric_columns() -> dict[str, Any]:
    import polars as pl

    ns = pl.Int64
    return {"window_ns": ns, "busy_ns": ns, "device_busy_share": pl.Float64, "calls": ns,
            "api_p50_ns": ns, "kernel_p50_ns": ns, "kernel_only_p50_ns": ns,
            "copy_p50_ns": ns, "copies": pl.Boolean, "host_overhead_p50_ns": ns,
            "verdict": pl.String}


def rank_metrics(report: Report | None) -> dict[str, Any]:
    """The per-rank numbers of the summary table, from one report."""
    if not report:
        return {}
    calls = report.calls
    verdict = report.verdict
    share = report.busy_share
    return {
        "window_ns": report.window.dur_ns,
        "busy_ns": report.device.busy_ns,
        "device_busy_share": None if share is None else round_share(share),
        "calls": calls.count,
        "api_p50_ns": calls.stats["api_ns"].p50,
        "kernel_p50_ns": calls.stats["kernel_ns"].p50,  # device work: kernels and copies
        "kernel_only_p50_ns": _p50(calls.stats, "kernel_only_ns"),
        "copy_p50_ns": _p50(calls.stats, "copy_ns"),
        "copies": calls.has_copies,
        "host_overhead_p50_ns": calls.stats["host_overhead_ns"].p50,
        "verdict": None if verdict is None else verdict.id,
    }


def combine(ranks: list[RankResult]) -> RanksReport:
    """Medians across ranks, the straggler rule, and warnings (a metric that splits the
    ranks in two halves, duplicate ranks)."""
    metrics: dict[str, dict[str, Any]] = {}
    stragglers: dict[int, list[Outlier]] = {}
    warnings = []
    for name, side in STRAGGLER_METRICS.items():
        measured = [(i, r.metric(name)) for i, r in enumerate(ranks)]
        have = [(i, v) for i, v in measured if v is not None]
        summary, found, split = outliers([v for _, v in have], side)
        metrics[name] = summary
        if split:
            warnings.append(f"{name}: the ranks split into two halves ({summary['n'] // 2} "
                            f"of {summary['n']} apart from the median): no straggler named on it")
        for pos, o in found.items():
            o.metric = name
            stragglers.setdefault(have[pos][0], []).append(o)
    seen: dict[int, str] = {}
    for r in ranks:
        if r.rank in seen:
            warnings.append(f"rank {r.rank} appears twice ({seen[r.rank]} and {r.path})")
        else:
            seen[r.rank] = r.path
    return RanksReport(ranks, metrics, stragglers, warnings)


def analyze_ranks(paths: Sequence[str | os.PathLike[str]], options: Options | None = None,
                  jobs: int | None = None, *, recursive: bool = True, engine: str = "local",
                  address: str | None = None, progress: Progress | None = None) -> RanksReport:
    """Analyse each trace as a rank and compare them.

    ``paths`` may hold directories, globs and URLs (see :func:`expand_paths`).
    ``engine``: ``"local"`` (this process, or a local pool when it pays) or ``"ray"``
    (one Ray task per rank; ``address`` as ``ray.init`` takes it): ``multi/engine.py``.
    Results are reduced as they arrive: each rank's compact report becomes its
    ``RankResult`` at once. Bad rules files fail here, once, rather than in every worker.
    """
    from traceview.multi.engine import each
    from traceview.report.model import from_dict
    from traceview.rules import load_rules

    options = options or Options()
    load_rules(options.rules)  # a usage error for all ranks: say it once
    files = expand_paths(paths, recursive=recursive)
    if not files:
        raise UsageError("no trace files given")
    names = [str(f) for f in files]
    from traceview.printable import printable_path

    shown = [printable_path(n) for n in names]  # the name as every output can write it
    results = []
    for i, rep in each(partial(_explain_report, options=options), names, engine=engine,
                       jobs=jobs, address=address, sizes=file_sizes(files),
                       crashed=_worker_died, failed=lambda r: isinstance(r, str),
                       progress=progress):
        if isinstance(rep, str):
            results.append(RankResult(i, shown[i], i, "order", None, rep))
            continue
        import orjson

        report = from_dict(orjson.loads(rep))
        r = metadata_rank(report.trace.metadata)
        results.append(RankResult(i, shown[i], i if r is None else r,
                                  "order" if r is None else "distributedInfo", report))
    results.sort(key=lambda r: (r.rank, r.index))
    return combine(results)
