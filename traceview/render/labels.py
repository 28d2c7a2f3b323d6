"""Display labels shared by the text renderers."""

from __future__ import annotations

import re

from traceview.analyses.calls import DEVICE_ONLY_METRICS

# Human labels for per-call metrics, in display order.
METRIC_LABELS = {
    "api_ns": "full API call (wall)",
    "pre_launch_ns": "host before launch",
    "launch_api_ns": "launch API",
    "launch_latency_ns": "launch latency",
    "kernel_ns": "device work (kernel+copy)",
    "kernel_only_ns": "  kernels alone",
    "copy_ns": "  memcpy/memset alone",
    "sync_ns": "sync wait",
    "host_overhead_ns": "host overhead (device idle)",
}
# Shown only where some call launched copies (``CallsInfo.has_copies``); otherwise the
# device work is the kernels alone and these rows would repeat it.
COPY_SPLIT = ("kernel_only_ns", "copy_ns")


def shown_metrics(*, copies: bool, device: bool = True) -> dict[str, str]:
    """``METRIC_LABELS`` less the kernel/copy split when no call launched copies, and
    less the sync wait and host overhead when the window holds no device work."""
    return {m: label for m, label in METRIC_LABELS.items()
            if (copies or m not in COPY_SPLIT) and (device or m not in DEVICE_ONLY_METRICS)}


def display_pattern(pattern: str | None) -> str | None:
    """The numbered-name pattern calls were found by, as a reader writes it. Each run of
    digits is a ``#`` in the pattern, so ``ProfilerStep#12`` gives ``ProfilerStep##``;
    shown ``ProfilerStep#N`` (and ``call_#`` as ``call_N``)."""
    if pattern is None:
        return None
    return re.sub("#(?!#)", "N", pattern)


def unit(r) -> str:
    """What one call is called: ``step`` where the calls are training steps (a step runs
    forward, backward and the optimizer on several threads; it is no op), else ``call``."""
    return "step" if getattr(r, "steps", None) is not None else "call"
