"""Every analysis option with its default, in one place (the CLI and the API share it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Options:
    window: str | None = None
    """Narrow the window: a regex over user-annotation names (span of the matches), or
    a time range ``START:END`` relative to the default window start (``250us:1.5ms``;
    either side may be empty; units ns, us, ms, s; bare numbers are ns)."""
    calls: str | None = None
    """Regex selecting the calls: user ranges whose name matches, else Python frames,
    else host ops (``aten::mul``) on the launching thread. Default: the rule in
    ``traceview.analyses.callfind`` (numbered user ranges, Python frames, launches)."""
    calls_depth: int = 1
    """With calls found from Python frames: how many levels below the frame that
    encloses every launch the calls are (1: what the loop body calls)."""
    rules: str | None = None
    """A JSON rules file matched before the default category rules."""
    thread: str | None = None
    """``PID/TID`` of the host thread to attribute; default: the thread that launched the
    most device work."""
    top: int = 10
    """Rows in the top-kernels and hot-function tables of the terminal output."""
    functions_limit: int = 50
    """Rows of ``host.functions`` in the JSON output (biggest self time first)."""
    unprofiled_call: int | None = None
    """The call's unprofiled time in ns, for a trace that does not carry one (capture's
    baseline): explain then estimates the unprofiled split with the profiled-shares model."""
