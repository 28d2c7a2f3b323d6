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
The measuring half (``traceview.capture``, ``capture_steps``: docs/capture.md) stands
apart and is the only part that imports torch or triton, inside the calls that measure.
The public names are ``__all__``; docs/architecture.md says what may import what.
"""

from __future__ import annotations

import os

from traceview.version import __version__ as __version__

# Not ``typing.TYPE_CHECKING``: importing ``typing`` and ``dataclasses`` (``Options``) cost
# ``import traceview`` over 10 ms, all before the CLI can install its signal handlers
# (``cli/entry.py``), and a Ctrl-C then printed the interpreter's traceback.
TYPE_CHECKING = False

#: The public API, in this one list: README's Python paragraph and the ``traceview.X``
#: names in docs/ are checked against it (tests/test_public_api.py). Everything else is
#: imported from its module.
__all__ = ["Options", "RanksReport", "Report", "Trace", "analyze", "analyze_ranks",
           "capture", "capture_steps", "explain", "load", "proton"]
#: Where each type this module hands out on first use lives (``import traceview`` stays
#: cheap). The names here but not in ``__all__`` were exported once: they still resolve,
#: with a DeprecationWarning that names their module.
_HOMES = {
    "Options": "traceview.options", "Report": "traceview.report.model",
    "Trace": "traceview.model", "RanksReport": "traceview.multi.ranks",
    "TraceInfo": "traceview.report.model", "WindowInfo": "traceview.report.model",
    "DeviceInfo": "traceview.report.model", "HostInfo": "traceview.report.model",
    "LaunchesInfo": "traceview.report.model", "CallsInfo": "traceview.report.model",
    "CallRow": "traceview.report.model", "Finding": "traceview.report.model",
    "TypicalCall": "traceview.report.model", "StepsInfo": "traceview.report.model",
    "ThreadRow": "traceview.report.model", "Cell": "traceview.analyses.breakdown",
    "Stats": "traceview.stats", "Diagnostic": "traceview.diagnostics",
    "ProtonTraceReport": "traceview.report.proton",
    "ProtonTreeReport": "traceview.report.proton",
}

if TYPE_CHECKING:
    from collections.abc import Callable
    from os import PathLike
    from pathlib import Path
    from typing import Any

    from traceview.model import Trace as Trace
    from traceview.multi.ranks import RanksReport as RanksReport
    from traceview.options import Options as Options
    from traceview.report.model import Report as Report
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


def capture(fn: Callable[..., Any], *inputs: Any, reference: Callable[..., Any] | None = None,
            **options: Any) -> dict[str, Any]:
    """Run the capture protocol on a live callable, ``fn(*inputs)``, in this process; write
    its trace and return the trace's metadata block. ``reference`` (strongly advised) is
    called on the inputs upcast to float64 before anything is timed; ``options``: ``out``,
    ``warmup``, ``iters``, ``baseline_n``, ``with_stack`` (docs/capture.md, "From
    Python"). Needs torch (``pip install 'traceview[capture]'``)."""
    from traceview.opcapture.api import capture as _capture

    return _capture(fn, *inputs, reference=reference, **options)


def capture_steps(step_fn: Callable[[], Any], out: str | PathLike[str], **options: Any) -> Path:
    """Profile a few steps of a user's training loop, ``step_fn``, into ``out``, with
    unprofiled step times recorded beside them; returns ``out``'s path. ``options``:
    ``steps``, ``warmup``, ``unprofiled``, ``with_stack``, ``record_shapes``."""
    from traceview.unprofiled.steps import capture_steps as _capture_steps

    return _capture_steps(step_fn, out, **options)


def __getattr__(name: str) -> object:
    """The types of ``_HOMES``, imported on first use; a name that was exported once and
    is no longer in ``__all__`` warns, then resolves."""
    import importlib

    if name not in _HOMES:
        raise AttributeError(f"module 'traceview' has no attribute {name!r}")
    if name not in __all__:
        import warnings

        warnings.warn(f"traceview.{name} is deprecated: import it from {_HOMES[name]}",
                      DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(_HOMES[name]), name)
