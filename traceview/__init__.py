"""traceview: where a GPU operator's time goes.

Python API::

    import traceview
    trace = traceview.load("trace.json.gz")          # lanes, slices, links
    r = traceview.explain(trace)                     # every analysis: one frozen Report
    r = traceview.analyze("trace.json.gz")           # both steps
    r.calls.stats["api_ns"].p50                      # typed attributes
    r.to_dict()["calls"]["stats"]["api_ns"]["p50"]   # the JSON (docs/json.md)
    ranks = traceview.analyze_ranks(["s3://bucket/job/"], engine="ray")  # many traces
    ranks.table()                                    # a polars row per rank

The data flows one way: ``io`` (decode) -> ``model`` -> ``analyses`` -> ``report``
(findings, schema) -> ``render`` -> ``cli``; ``multi`` (ranks, diff, export) builds on
``report``.
``capture`` stands apart and is the only part that imports torch or triton.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

__version__ = "0.1.0"
__all__ = ["Options", "__version__", "analyze", "analyze_ranks", "capture", "explain", "load",
           "proton"]

from traceview.options import Options

if TYPE_CHECKING:
    from collections.abc import Callable
    from os import PathLike

    from traceview.model import Trace
    from traceview.multi.ranks import RanksReport
    from traceview.report.model import Report
    from traceview.report.proton import ProtonTraceReport, ProtonTreeReport


def load(path: str | PathLike[str], progress: Callable[[int], None] | None = None) -> Trace:
    """Read a Chrome/Kineto trace (plain or gzipped) into the trace model.

    ``progress``, if given, is called with the count of decompressed bytes read so far.
    """
    from traceview.report.pipeline import load as _load

    return _load(path, progress)


def proton(path: str | PathLike[str]) -> ProtonTraceReport | ProtonTreeReport:
    """The report of a Triton Proton profile (a ``.chrome_trace`` or a ``.hatchet`` tree,
    recognised by content; ``docs/proton.md``). ``TraceLoadError`` for anything else."""
    from traceview.errors import TraceLoadError
    from traceview.io import proton as p
    from traceview.report.proton import trace_report, tree_report

    kind = p.sniff(path)
    if kind == "trace":
        return trace_report(p.read_trace(path))
    if kind == "tree":
        return tree_report(p.read_tree(path))
    raise TraceLoadError(path, "not a Triton Proton trace or tree")


def explain(trace: Trace, options: Options | None = None) -> Report:
    """Run every analysis over a loaded trace: the one typed ``Report``."""
    from traceview.report.build import explain as _explain

    return _explain(trace, options)


def analyze(path: str | PathLike[str], options: Options | None = None) -> Report:
    """``explain(load(path))``."""
    from traceview.report.pipeline import analyze as _analyze

    return _analyze(path, options)


def analyze_ranks(paths: str | PathLike[str] | list[str | PathLike[str]],
                  options: Options | None = None, *, engine: str = "local",
                  address: str | None = None, jobs: int | None = None) -> RanksReport:
    """Many traces as ranks: paths, directories, globs or URLs (``s3://``, ``gs://``,
    ``http(s)://``, ``file://``). ``engine="ray"`` runs one Ray task per rank
    (``address`` as ``ray.init`` takes it; ``pip install 'traceview[ray]'``). The result
    has each rank's ``Report`` (``.ranks[i].report``), the stragglers, ``.to_dict()``
    (the ranks JSON) and ``.table()`` (a polars row per rank)."""

    from traceview.multi.ranks import analyze_ranks as _analyze_ranks

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return _analyze_ranks(paths, options, jobs, engine=engine, address=address)



def __getattr__(name: str) -> object:
    """``traceview.capture`` is the capture package, which is also callable:
    ``traceview.capture(fn, *inputs, reference=...)`` (see ``traceview.capture.api``).
    Imported on first use (the package itself is torch-free)."""
    if name == "capture":
        import importlib

        return importlib.import_module("traceview.capture")
    raise AttributeError(f"module 'traceview' has no attribute {name!r}")
