"""One implementation made ready to time: seeded inputs, the implementation, its first
call (checked when asked), the warm-up calls.

Every measuring child does this same preparation before it times anything (capture's
baseline, the unprofiled split, ``ab``'s sides, the kernel probe), so that the figures of
the products describe the same prepared call.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any

from traceview.workload.config import CaptureConfig


@dataclasses.dataclass(frozen=True)
class Prepared:
    """One implementation ready to time: its call (on ``--streams`` streams), the raw
    call, the inputs, the output's size, and the correctness block (when checked)."""

    call: Any
    impl_call: Any
    inputs: Any
    out_bytes: int
    checked: dict[str, Any] | None


#: What checks a first output: ``(torch, config, inputs, output) -> correctness block``.
#: The caller passes ``checks.correctness.check``; the workload sits beneath the checks
#: and never imports them.
Checker = Callable[[Any, CaptureConfig, Any, Any], dict[str, Any]]


def prepare(config: CaptureConfig, dev: Any, stack: contextlib.ExitStack, *,
            check: Checker | None) -> Prepared:
    """Seeded inputs, the implementation, its first call (given to ``check``, when one is
    given), then ``config.warmup`` synchronized calls."""
    from traceview.workload.impls import build_impl, on_streams
    from traceview.workload.inputs import make_inputs

    inputs = make_inputs(dev.torch, config, dev.torch_device)
    impl = build_impl(config, dev, inputs, stack)
    first = impl.call()
    dev.sync()
    checked = None if check is None else check(dev.torch, config, inputs, first)
    out_bytes = first.numel() * first.element_size()
    del first
    call = impl.call if config.streams == 1 else on_streams(dev, impl.call, config.streams)
    for _ in range(config.warmup):
        call()
        dev.sync()
    return Prepared(call, impl.call, inputs, out_bytes, checked)
