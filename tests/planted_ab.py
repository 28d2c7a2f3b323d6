"""A planted call for ``traceview ab --split``: the stages of ``planted_stages`` with
their costs set per side by the environment, so the two sides' splits differ by
construction (``--a-env`` / ``--b-env``):

* ``PLANTED_BUSY_NS``: the busy-wait's length (default 50 us);
* ``PLANTED_TINY_CALLS``: how many tiny Python calls the second stage makes (default 400).

The third stage is ``zlib.crc32`` over 64 KiB on both sides. ``add(a, b)`` runs the
three stages, then ``torch.add``.
"""

from __future__ import annotations

import os
import time
import zlib

import torch

BUSY_NS = int(os.environ.get("PLANTED_BUSY_NS", "50000"))
TINY_CALLS = int(os.environ.get("PLANTED_TINY_CALLS", "400"))
DATA = bytes(range(256)) * 256


def busy_stage() -> None:
    end = time.perf_counter_ns() + BUSY_NS
    while time.perf_counter_ns() < end:
        pass


def _tiny(x: int) -> int:
    return x + 1


def tiny_stage() -> int:
    s = 0
    for _ in range(TINY_CALLS):
        s = _tiny(s)
    return s


def crc_stage() -> int:
    return zlib.crc32(DATA)


def add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    busy_stage()
    tiny_stage()
    crc_stage()
    return torch.add(a, b)


STAGES = ("busy_stage", "tiny_stage", "crc_stage")
