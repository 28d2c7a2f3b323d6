"""A Triton ``add`` with a planted host delay of known size: the ground truth that
calibrates ``traceview ab`` (``tools/calibrate_ab_planted_delays_on_gpu.sh``).

Each callable is the same hand-written Triton add (``handwritten_triton_add.add``; on a
machine without CUDA, ``torch.add``) preceded by a busy-wait on ``perf_counter_ns`` of a
fixed length, so B - A is known: ``plus_1us`` - ``plain`` = +1 us per call, and so on.
A busy-wait, not a sleep: a sleep gives the core away and returns late by tens of
microseconds. ``from_env`` waits ``PLANTED_DELAY_NS`` (read once, at import), for
variants that differ by environment (``--b-env PLANTED_DELAY_NS=3000``).

    traceview ab --op add --shape 16x4096 --dtype bf16 --same-process \\
        --a-path tools --b-path tools --a-fn planted_delay_add:plain --b-fn planted_delay_add:plus_1us
"""

import os
import time

import torch

try:
    if not torch.cuda.is_available():
        raise ImportError("no CUDA")
    from handwritten_triton_add import add as _add
except ImportError:
    _add = torch.add

_clock = time.perf_counter_ns
_ENV_NS = int(os.environ.get("PLANTED_DELAY_NS", "0"))


def _wait(ns):
    end = _clock() + ns
    while _clock() < end:
        pass


def plain(x, y):
    _wait(0)
    return _add(x, y)


def plus_1us(x, y):
    _wait(1_000)
    return _add(x, y)


def plus_3us(x, y):
    _wait(3_000)
    return _add(x, y)


def from_env(x, y):
    _wait(_ENV_NS)
    return _add(x, y)
