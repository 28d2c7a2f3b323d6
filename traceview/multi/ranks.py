"""Many traces at once: one per rank, analysed in parallel, then compared.

``traceview explain DIR`` or ``traceview explain A B C`` lands here (one plain file keeps
the single-trace path). The steps, none of which print:

* :func:`expand_paths` — a directory stands for its trace files (``*.json``,
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
* :func:`combine` — medians across ranks and the straggler rule (below).

**Stragglers.** For each metric in :data:`STRAGGLER_METRICS` over the ranks that have a
value, with ``m`` the median and ``MAD`` the median absolute deviation from ``m`` (both
the project's one median, ``stats.median``: the nearest-rank p50, so for an even count
the lower of the two middle values, a value one rank measured), a rank
stands out when ``|x - m| > STRAGGLER_MAD_K * MAD`` **and** ``|x - m| >=
STRAGGLER_MIN_RELATIVE * |m|``. The MAD test is robust: one or two slow ranks cannot drag
the median or the MAD toward themselves, as they would a mean and a standard deviation.
The relative floor keeps out differences too small to matter when the ranks agree very
closely (with identical ranks the MAD is 0, and any difference at all would pass the
first test). Fewer than :data:`STRAGGLER_MIN_RANKS` ranks with a value: no rule applies
(with two ranks, neither is "the odd one"). A straggler is in a minority: when the two
tests pick out half the ranks (they cannot pick more), the ranks have split into two
halves, and which half is odd is arbitrary (the lower median sits in the lower half);
none is named on that metric, and a warning says so. The per-call API p50 counts only when it is
*above* the median (a straggler is slow; an unusually fast rank is not one); the device
busy share counts both ways (a starved device and an overloaded one both mark a rank
that does not do what the others do). ``docs/ranks.md`` has the reasoning.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from traceview.errors import TraceviewError, UsageError
from traceview.options import Options
from traceview.stats import median

if TYPE_CHECKING:
    from traceview.multi.engine import Progress
    from traceview.report.model import Report

# A directory stands for the files in it whose names end so (not recursive).
TRACE_SUFFIXES = (".json", ".json.gz")
# A rank stands out when it is more than this many median absolute deviations from the
# median across ranks ...
STRAGGLER_MAD_K = 3.0
# ... and at least this far from the median, relative to it.
STRAGGLER_MIN_RELATIVE = 0.10
# The rule needs this many ranks with a value.
STRAGGLER_MIN_RANKS = 3
# metric -> which side counts: "above", "below" or "both".
STRAGGLER_METRICS = {
    "device_busy_share": "both",
    "api_p50_ns": "above",
}
# Rounding of the shares written to JSON.
SHARE_DIGITS = 6
INF = float("inf")

T = TypeVar("T")
R = TypeVar("R")


def _natural_key(name: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def is_trace_name(name: str) -> bool:
    return name.endswith(TRACE_SUFFIXES)


def expand_paths(paths: Iterable[str | os.PathLike[str]], *,
                 recursive: bool = True) -> list[Path | str]:
    """Files, directories, globs and URLs -> the list of trace files, in rank order.

    A directory (local, or a folder of an object store: ``s3://bucket/job/``) is
    searched with its subfolders (``recursive=False``: only its own files), in natural
    order of the path below it; a glob (``'traces/*.json.gz'``,
    ``s3://bucket/job/rank*.json.gz``) stands for what it matches, in natural order. A
    directory or glob with no trace file is a usage error (it is almost always a wrong
    path). Local files come back as ``Path``, URLs as the ``str`` given
    (``io/sources.py``).
    """
    from traceview.io import sources

    out: list[Path | str] = []
    seen: set[str] = set()
    for raw in paths:
        raw = os.fspath(raw)
        files: list[Path | str]
        if sources.is_url(raw):
            found = sources.expand(raw, recursive=recursive)
            if found is None:
                files = [raw]
            else:
                base = raw.split("*", 1)[0].rsplit("/", 1)[0] if sources.is_glob(raw) else raw
                urls = sorted((f for f in found if is_trace_name(f) or sources.is_glob(raw)),
                              key=lambda f: _natural_key(f[len(base):]))
                files = list(urls)
                if not files:
                    raise UsageError(f"{raw}: no trace files there "
                                     f"({', '.join('*' + s for s in TRACE_SUFFIXES)})")
        elif sources.is_glob(raw) and not Path(raw).exists():
            import glob

            files = sorted((Path(f) for f in glob.glob(raw, recursive=True)
                            if Path(f).is_file()), key=lambda c: _natural_key(str(c)))
            if not files:
                raise UsageError(f"{raw}: no file matches")
        elif (p := Path(raw)).is_dir():
            entries = p.rglob("*") if recursive else p.iterdir()
            local = sorted((c for c in entries if c.is_file() and is_trace_name(c.name)),
                           key=lambda c: [_natural_key(part) for part in c.relative_to(p).parts])
            files = list(local)
            if not files:
                where = "this directory or its subfolders" if recursive else "this directory"
                raise UsageError(f"{p}: no trace files in {where} "
                                 f"({', '.join('*' + s for s in TRACE_SUFFIXES)})")
        else:
            files = [p]
        for f in files:
            key = f if isinstance(f, str) else os.path.realpath(f)
            if key not in seen:
                seen.add(key)
                out.append(f)
    return out


def file_sizes(files: Sequence[Path | str]) -> Callable[[], list[int | None]]:
    """Each trace's stored size, asked for only by the local engine, which decides from
    them whether a pool pays (it is about to read every byte anyway; Ray never asks)."""

    def sizes() -> list[int | None]:
        from traceview.errors import TraceLoadError
        from traceview.io.sources import size

        out: list[int | None] = []
        for f in files:
            try:
                out.append(size(f))
            except (OSError, TraceLoadError):
                out.append(0)  # the worker reports it; it costs nothing to read
        return out

    return sizes


def metadata_rank(metadata: dict[str, Any] | None) -> int | None:
    """``distributedInfo.rank`` when it is a non-negative integer (or integer string)."""
    info = (metadata or {}).get("distributedInfo")
    if not isinstance(info, dict):
        return None
    r = info.get("rank")
    if isinstance(r, bool):
        return None
    if isinstance(r, int):
        return r if r >= 0 else None
    if isinstance(r, float) and r.is_integer() and r >= 0:
        return int(r)
    if isinstance(r, str) and r.strip().isdigit():
        return int(r.strip())
    return None


def raise_if_interrupted(exc: BaseException) -> None:
    """Ctrl-C while a trace was being read can surface as another error raised while the
    interrupt unwound (``BufferError: memoryview has N exported buffers``): that is the
    user's interrupt, not a failed trace, so it goes on as ``KeyboardInterrupt``."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            raise KeyboardInterrupt from None
        seen = seen.__context__


def error_line(exc: BaseException) -> str:
    """The one line the CLI would print for this exception (without the prefix)."""
    if isinstance(exc, TraceviewError):
        return str(exc)
    if isinstance(exc, MemoryError):
        return "out of memory while reading the trace"
    return f"internal error (a traceview bug): {type(exc).__name__}: {exc}"


def _explain_report(path: str, options: Options) -> bytes | str:
    """Worker: analyse one file into its compact report (``Report.to_dict()`` as
    compact JSON: kilobytes, plain data, the same bytes from every engine); an error
    becomes its one line."""
    try:
        import orjson

        from traceview import analyze

        return orjson.dumps(analyze(path, options).to_dict(), option=orjson.OPT_NON_STR_KEYS)
    except Exception as exc:  # one rank's failure must not stop the others
        if os.environ.get("TRACEVIEW_DEBUG") and not isinstance(exc, TraceviewError):
            raise
        raise_if_interrupted(exc)
        return error_line(exc)


def parallel_map(fn: Callable[[T], R], items: Sequence[T], jobs: int | None = None,
                 crashed: Callable[[T], R] | None = None) -> list[R]:
    """``[fn(x) for x in items]`` in local worker processes (``multi/engine.py``),
    results in input order; ``crashed(item)`` for an item whose own process died."""
    from traceview.multi.engine import each, in_order

    return in_order(each(fn, items, jobs=jobs,
                         crashed=None if crashed is None else lambda x, _d: crashed(x)),
                    len(items))


def worker_died_line(path: str, detail: str | None = None) -> str:
    why = f" ({detail})" if detail else " (killed, most likely for memory)"
    return f"{path}: the worker process analysing it died{why}"


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
class Outlier:
    metric: str
    value: float | int
    median: float
    mad: float
    relative: float  # (value - median) / |median|; inf when the median is 0
    direction: Literal["above", "below"]

    def as_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "value": self.value, "median": _num(self.median),
                "mad": _num(self.mad),
                "relative": None if self.relative in (INF, -INF) else _round(self.relative),
                "direction": self.direction}


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

    def to_dict(self) -> dict[str, Any]:
        from traceview.report.schema import SCHEMA_VERSION

        ranks = []
        for r in self.ranks:
            if r.report is not None:
                ranks.append({**r.report.to_dict(), "rank": r.rank, "rank_source": r.rank_source})
            else:
                ranks.append({"rank": r.rank, "rank_source": r.rank_source,
                              "trace": {"path": r.path}, "error": r.error})
        return {
            "schema_version": SCHEMA_VERSION,
            "ranks": ranks,
            "combined": {
                "count": len(self.ranks),
                "ok": len(self.ok),
                "failed": [{"rank": r.rank, "path": r.path, "error": r.error}
                           for r in self.failed],
                "rule": {"mad_k": STRAGGLER_MAD_K, "min_relative": STRAGGLER_MIN_RELATIVE,
                         "min_ranks": STRAGGLER_MIN_RANKS, "metrics": dict(STRAGGLER_METRICS)},
                "metrics": self.metrics,
                "stragglers": [
                    {"rank": self.ranks[i].rank, "path": self.ranks[i].path,
                     "reasons": [o.as_dict() for o in why]}
                    for i, why in sorted(self.stragglers.items())
                ],
                "warnings": self.warnings,
            },
        }


def _round(x: float) -> float:
    return x if x in (INF, -INF) else round(x, SHARE_DIGITS)


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else _round(x)


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
        "device_busy_share": None if share is None else _round(share),
        "calls": calls.count,
        "api_p50_ns": calls.stats["api_ns"].p50,
        "kernel_p50_ns": calls.stats["kernel_ns"].p50,  # device work: kernels and copies
        "kernel_only_p50_ns": _p50(calls.stats, "kernel_only_ns"),
        "copy_p50_ns": _p50(calls.stats, "copy_ns"),
        "copies": calls.has_copies,
        "host_overhead_p50_ns": calls.stats["host_overhead_ns"].p50,
        "verdict": None if verdict is None else verdict.id,
    }


def outliers(values: Sequence[float],
             side: str = "both") -> tuple[dict[str, Any], dict[int, Outlier], bool]:
    """The straggler rule over one metric: summary, position -> outlier, and whether the
    values split into two halves (then no position is an outlier)."""
    if not values:
        return {"n": 0, "median": None, "mad": None, "min": None, "max": None}, {}, False
    m = median(values)
    mad = median([abs(x - m) for x in values])
    summary = {"n": len(values), "median": _num(m), "mad": _num(mad),
               "min": min(values), "max": max(values)}
    if len(values) < STRAGGLER_MIN_RANKS:
        return summary, {}, False
    apart = [i for i, x in enumerate(values)
             if abs(x - m) > STRAGGLER_MAD_K * mad and abs(x - m) >= STRAGGLER_MIN_RELATIVE * abs(m)]
    if 2 * len(apart) >= len(values):  # half the ranks against the other half
        return summary, {}, True
    found: dict[int, Outlier] = {}
    for i in apart:
        x = values[i]
        dev = x - m
        direction: Literal["above", "below"] = "above" if dev > 0 else "below"
        if side != "both" and direction != side:
            continue
        rel = dev / abs(m) if m else (INF if dev > 0 else -INF)
        found[i] = Outlier("", x, m, mad, rel, direction)
    return summary, found, False


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
    results = []
    for i, rep in each(partial(_explain_report, options=options), names, engine=engine,
                       jobs=jobs, address=address, sizes=file_sizes(files),
                       crashed=_worker_died, failed=lambda r: isinstance(r, str),
                       progress=progress):
        if isinstance(rep, str):
            results.append(RankResult(i, names[i], i, "order", None, rep))
            continue
        import orjson

        report = from_dict(orjson.loads(rep))
        r = metadata_rank(report.trace.metadata)
        results.append(RankResult(i, names[i], i if r is None else r,
                                  "order" if r is None else "distributedInfo", report))
    results.sort(key=lambda r: (r.rank, r.index))
    return combine(results)
