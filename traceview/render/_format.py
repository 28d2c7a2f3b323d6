"""Number formatting shared by the text renderers."""

from __future__ import annotations


def fmt_ns(ns: int | None) -> str:
    """A duration in the unit that keeps 3-4 significant digits: 863 ns, 25.5 us, 11.27 ms."""
    if ns is None:
        return "-"
    a = abs(ns)
    if a < 1_000:
        return f"{ns} ns"
    if a < 1_000_000:
        return f"{ns / 1e3:.3g} us" if a < 100_000 else f"{ns / 1e3:.0f} us"
    if a < 1_000_000_000:
        return f"{ns / 1e6:.3g} ms" if a < 100_000_000 else f"{ns / 1e6:.0f} ms"
    return f"{ns / 1e9:.3g} s"


def printable(name: str) -> str:
    """A name fit for one line of text: control and zero-width characters shown as '?'."""
    return "".join(ch if ch.isprintable() else "?" for ch in name)


def fmt_share(part: int, whole: int) -> str:
    if whole <= 0:
        return "-"
    share = 100 * part / whole
    if part and share < 0.1:
        return "<0.1%"
    return f"{share:.1f}%"


# Human labels for per-call metrics, in display order.
METRIC_LABELS = {
    "api_ns": "full API call (wall)",
    "pre_launch_ns": "host before launch",
    "launch_api_ns": "launch API",
    "launch_latency_ns": "launch latency",
    "kernel_ns": "device kernel",
    "sync_ns": "sync wait",
    "host_overhead_ns": "host overhead (device idle)",
}
