"""Kineto's own log lines, kept out of the user's terminal where they say nothing.

libkineto prints to stderr around every profiled run: ``USDT: ... profiler_start`` and
``profiler_stop`` always, and on a machine without a GPU ``ERROR: ... gpuGetDeviceCount
failed`` as it looks for one. On a run without the CUDA activity (``--device cpu``, a
serving step on the CPU) these are the profiler's bookkeeping, about nothing the user did,
and an ERROR line beside a good result reads as a failure. With the CUDA activity its
lines can be about the trace itself (activity buffers lost, CUPTI refused), so they stay.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

#: libkineto's levels run VERBOSE 0 .. USDT 5; a level above the last prints nothing
QUIET_LEVEL = "6"
KINETO_LOG_LEVEL = "KINETO_LOG_LEVEL"


@contextmanager
def quiet_profiler_log(*, cuda: bool) -> Iterator[None]:
    """Around a ``torch.profiler.profile`` block: without ``cuda``, Kineto prints nothing
    (it reads its level as the profiler starts and stops). A level the user set is kept,
    and the environment is put back after."""
    if cuda or KINETO_LOG_LEVEL in os.environ:
        yield
        return
    os.environ[KINETO_LOG_LEVEL] = QUIET_LEVEL
    try:
        yield
    finally:
        os.environ.pop(KINETO_LOG_LEVEL, None)
