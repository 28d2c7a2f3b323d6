"""A planted library whose stages the profiler perturbs very differently.

``op`` runs three stages: a 50 us busy-wait (two frames: the profiler adds almost
nothing), 400 tiny Python calls (about 20 us unprofiled, several times that profiled)
and a C call (``zlib.crc32`` over 64 KiB, one builtin frame).
"""

from __future__ import annotations

import time
import zlib

BUSY_NS = 50_000
TINY_CALLS = 400
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


def op() -> int:
    busy_stage()
    tiny_stage()
    return crc_stage()


STAGES = (busy_stage, tiny_stage, crc_stage)
