"""Which functions to time: the heaviest Python frames of the profiled call tree.

The profiled tree says which functions a call goes through and, roughly, which hold
its time; it cannot say how much each holds unprofiled (that is what ``split``
measures). Every Python frame node of the typical warm call holding at least
``MIN_SHARE`` of the profiled call is a candidate, at any depth, so the chosen set
reaches down to the depth that holds most of the call; frames of the profiler's own
bookkeeping are left out. Names merge over the tree's paths (one code object is timed
once), heaviest first, at most ``MAX_FUNCTIONS`` (each costs a run per block).
"""

from __future__ import annotations

from traceview.report.unprofiled import MAX_FUNCTIONS, MIN_SHARE, choose

__all__ = ["MAX_FUNCTIONS", "MIN_SHARE", "choose", "choose_from_trace"]


def choose_from_trace(path: str, calls: str | None = None) -> list[str]:
    """:func:`choose` over a trace file's typical warm call (explain's own tree);
    ``calls`` as explain's ``--calls``."""
    import traceview
    from traceview.options import Options
    from traceview.report.explanation import analyze_trace

    a = analyze_trace(traceview.load(path), Options(calls=calls))
    pc = a.per_call
    if pc is None or not pc.tree:
        return []
    warm = [c.api_ns for c in a.calls.calls if c.warm]
    from traceview.stats import median

    return choose(pc.tree, int(median(warm)) if warm else 0)
