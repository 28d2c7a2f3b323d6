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

from traceview.version import __version__

# Not ``typing.TYPE_CHECKING``: importing ``typing`` and ``dataclasses`` (``Options``) cost
# ``import traceview`` over 10 ms, all before the CLI can install its signal handlers
# (``cli/entry.py``), and a Ctrl-C then printed the interpreter's traceback.
TYPE_CHECKING = False

# ``Options`` and the report's types are part of the API (annotate with them, match on
# them); they are imported on first use, like everything else here, so ``import
# traceview`` stays cheap.
_TYPES = {
    "Options": "traceview.options",
    "Report": "traceview.report.model", "TraceInfo": "traceview.report.model",
    "WindowInfo": "traceview.report.model", "DeviceInfo": "traceview.report.model",
    "HostInfo": "traceview.report.model", "LaunchesInfo": "traceview.report.model",
    "CallsInfo": "traceview.report.model", "CallRow": "traceview.report.model",
    "Finding": "traceview.report.model", "TypicalCall": "traceview.report.model",
    "StepsInfo": "traceview.report.model", "ThreadRow": "traceview.report.model",
    "Cell": "traceview.analyses.breakdown", "Stats": "traceview.stats",
    "Diagnostic": "traceview.diagnostics", "Trace": "traceview.model",
    "RanksReport": "traceview.multi.ranks",
    "ProtonTraceReport": "traceview.report.proton", "ProtonTreeReport": "traceview.report.proton",
}
__all__ = ["__version__", "analyze", "analyze_ranks", "capture", "capture_steps",
           "explain", "load",
           "proton", *_TYPES]

if TYPE_CHECKING:
    from collections.abc import Callable
    from os import PathLike

    from traceview.analyses.breakdown import Cell as Cell
    from traceview.diagnostics import Diagnostic as Diagnostic
    from traceview.model import Trace as Trace
    from traceview.multi.ranks import RanksReport as RanksReport
    from traceview.opcapture.api import capture as capture
    from traceview.options import Options as Options
    from traceview.report.model import CallRow as CallRow
    from traceview.report.model import CallsInfo as CallsInfo
    from traceview.report.model import DeviceInfo as DeviceInfo
    from traceview.report.model import Finding as Finding
    from traceview.report.model import HostInfo as HostInfo
    from traceview.report.model import LaunchesInfo as LaunchesInfo
    from traceview.report.model import Report as Report
    from traceview.report.model import StepsInfo as StepsInfo
    from traceview.report.model import ThreadRow as ThreadRow
    from traceview.report.model import TraceInfo as TraceInfo
    from traceview.report.model import TypicalCall as TypicalCall
    from traceview.report.model import WindowInfo as WindowInfo
    from traceview.report.proton import ProtonTraceReport as ProtonTraceReport
    from traceview.report.proton import ProtonTreeReport as ProtonTreeReport
    from traceview.stats import Stats as Stats
    from traceview.unprofiled.steps import capture_steps as capture_steps


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
    """``Options``, the report's types, and ``traceview.opcapture``: the capture package,
    which is also callable as ``traceview.capture(fn, *inputs, reference=...)`` (typed as
    ``traceview.opcapture.api.capture``, which it calls). Imported on first use (the
    package itself is torch-free)."""
    import importlib

    if name == "capture":
        return importlib.import_module("traceview.opcapture")
    if name == "capture_steps":  # a user's training loop: unprofiled step times recorded
        return importlib.import_module("traceview.unprofiled.steps").capture_steps
    if name in _TYPES:
        return getattr(importlib.import_module(_TYPES[name]), name)
    raise AttributeError(f"module 'traceview' has no attribute {name!r}")
