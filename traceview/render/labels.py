"""Display labels shared by the text renderers."""

from __future__ import annotations

import re

# Human labels for per-call metrics, in display order.
METRIC_LABELS = {
    "api_ns": "full API call (wall)",
    "pre_launch_ns": "host before launch",
    "launch_api_ns": "launch API",
    "launch_latency_ns": "launch latency",
    "kernel_ns": "device work (kernel+copy)",
    "sync_ns": "sync wait",
    "host_overhead_ns": "host overhead (device idle)",
}


def display_pattern(pattern: str | None) -> str | None:
    """The numbered-name pattern calls were found by, as a reader writes it. Each run of
    digits is a ``#`` in the pattern, so ``ProfilerStep#12`` gives ``ProfilerStep##``;
    shown ``ProfilerStep#N`` (and ``call_#`` as ``call_N``)."""
    if pattern is None:
        return None
    return re.sub("#(?!#)", "N", pattern)
