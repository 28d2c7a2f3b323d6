"""Each side's unprofiled split for ``traceview ab`` (``--split``, the default).

The rounds judge speed; the split says where each side's call goes without the
profiler, so a difference can be placed in a stage. Per side, after the rounds (never
beside a timed process) and one side after the other: one profiled ``traceview capture``
in the side's own setting (``harness.profiled_trace``: interpreter, environment, import
path), whose protocol names the heaviest functions from its profiled call and times them
one per run in a fresh unprofiled process (``traceview.unprofiled``). The side's
``SideSplit`` is then what ``explain`` reads from that trace (its ``unprofiled`` key):
functions with intervals, categories summing to the unprofiled call, the method.
With ``--trace-dir`` the captures are the saved traces and cost nothing more; without,
they go to a temporary folder, and the seconds they took are recorded.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from traceview.errors import TraceviewError
from traceview.multi.ab_result import SideSplit, SplitFunction


def side_splits(configs: Mapping[str, Any], made: Mapping[str, Any],
                traces: Mapping[str, str],
                profiled_trace: Callable[[Any, Any, Path], Path]) -> dict[str, SideSplit]:
    """Per label, the split of the side's profiled capture (``traces[label]`` where
    ``--trace-dir`` made one, else ``profiled_trace(side, config, path)`` made here)."""
    out: dict[str, SideSplit] = {}
    with tempfile.TemporaryDirectory(prefix="traceview-ab-split-") as tmp:
        for label, config in configs.items():
            t0 = time.monotonic()
            try:
                out[label] = _one_side(label, config, made, traces, profiled_trace, Path(tmp))
            except KeyboardInterrupt:
                # the rounds are done and judged: a Ctrl-C (or SIGTERM) here stops the
                # splits, never the result the user waited for
                for rest in configs:
                    out.setdefault(rest, failed(INTERRUPTED, None))
                break
            except Exception as exc:  # one side's split must not lose the rounds
                out[label] = failed(f"{type(exc).__name__}: {exc}",
                                    round(time.monotonic() - t0, 1))
    return out


INTERRUPTED = "interrupted: the split was left out (the rounds' verdict stands)"


def _one_side(label: str, config: Any, made: Mapping[str, Any], traces: Mapping[str, str],
              profiled_trace: Callable[[Any, Any, Path], Path], tmp: Path) -> SideSplit:
    if label in traces:
        return split_of_trace(traces[label], trace=traces[label], seconds=None)
    t0 = time.monotonic()
    try:
        path = profiled_trace(made[label], config, tmp / f"{label}.json.gz")
    except TraceviewError as exc:
        return failed(str(exc), round(time.monotonic() - t0, 1))
    return split_of_trace(path, trace=None, seconds=round(time.monotonic() - t0, 1))


def failed(error: str, seconds: float | None) -> SideSplit:
    return SideSplit(method=None, call_ns=None, low_ns=None, high_ns=None,
                     profiled_call_ns=None, categories={}, profiled_categories={},
                     functions=[], measuring="", note="no split: " + error, trace=None,
                     seconds=seconds, error=error)


def split_of_trace(path: str | Path, *, trace: str | None,
                   seconds: float | None) -> SideSplit:
    """What ``explain`` says of a capture trace's call without the profiler."""
    from traceview.options import Options
    from traceview.report.build import unprofiled_info
    from traceview.report.explanation import analyze_trace
    from traceview.report.pipeline import load

    try:
        a = analyze_trace(load(path), Options())
    except TraceviewError as exc:
        return failed(f"{path}: {exc}", seconds)
    info = unprofiled_info(a)
    cap = a.trace.capture
    block = cap.baseline.split if cap is not None and cap.baseline is not None else None
    error = block.get("error") if isinstance(block, dict) else None
    if info is None:
        return failed(error or "the capture has no warm call", seconds)
    return SideSplit(
        method=info.method, call_ns=info.call_ns, low_ns=info.low_ns, high_ns=info.high_ns,
        profiled_call_ns=info.profiled_call_ns, categories=dict(info.categories),
        profiled_categories=dict(info.profiled_categories or {}),
        functions=[SplitFunction(name=f.name, inclusive_ns=f.inclusive_ns, low_ns=f.low_ns,
                                 high_ns=f.high_ns, profiled_ns=f.profiled_ns,
                                 method=f.method,
                                 invocations_per_call=f.invocations_per_call)
                   for f in info.functions],
        measuring=info.measuring, note=info.note, trace=trace, seconds=seconds,
        error=str(error) if error else None)
