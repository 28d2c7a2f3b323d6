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
    """Regex selecting the user ranges that are calls; default: the most repeated
    numbered range name (``call_0..call_N``), else calls are inferred from launches."""
    rules: str | None = None
    """A JSON rules file matched before the default category rules."""
    thread: str | None = None
    """``PID/TID`` of the host thread to attribute; default: the thread that launched the
    most device work."""
    top: int = 10
    """Rows in the top-kernels and hot-function tables of the terminal output."""
    functions_limit: int = 50
    """Rows of ``host.functions`` in the JSON output (biggest self time first)."""
