"""Keep freed memory in the process for reuse (glibc only; traceview's own processes opt in).

Analysing a big trace allocates and frees many arrays of tens of MB. By default glibc
returns such blocks to the kernel when they are freed (they are ``mmap``-ed, and its
adaptive threshold still trims the heap often), so the next array of that size is
fresh memory again, and the kernel zero-fills it page by page on first touch. On the
benchmark VM that costs about 8 us per 4 KB page (before this and the other memory
changes: 206,000 faults and 1.6-1.9 s of system time in a 6.5 s run on a 450 MB trace).
Two ``mallopt`` settings keep freed blocks up to 32 MB in the heap and stop the heap
from shrinking, so later arrays reuse pages already mapped: on that trace, 49,000
faults against 73,000 and 3.91 s against 4.34 s (medians of 5 alternating runs), for
3 MB more peak RSS (docs/performance.md). Only traceview's own processes opt in (the CLI, and the pool
processes that analyse ranks), never a library caller's; they end when the command
does, so nothing is held for long. ``TRACEVIEW_KEEP_FREED_MEMORY=0`` turns it off (to
measure the difference).
"""

from __future__ import annotations

import os
import sys

M_TRIM_THRESHOLD = -1  # from glibc's malloc.h
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's largest allowed value (HEAP_MAX_SIZE / 2 on 64-bit)
TRIM_THRESHOLD = 1 << 30

_done = False


def keep_freed_memory() -> bool:
    """Apply the settings once per process; True when they took effect."""
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux") or os.environ.get("TRACEVIEW_KEEP_FREED_MEMORY") == "0":
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    # glibc returns 1 on success; musl's mallopt is a stub that returns 0
    _done = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _done


# Young-generation allocations between two cyclic collections (Python's default is 700).
# A young collection walks every young container and what it holds: at 50,000, explaining
# a 200,000-event trace (whose net young count peaks just past 50,000) collected twice,
# each walk over the decode's 188,000-entry args table and the report's JSON form, 3-8% of
# the run; 200,000 spares a trace of that size any, and a bigger one collects a fourth as
# often, over four times as many objects.
GC_THRESHOLD = (200_000, 20, 100)


def collect_less() -> None:
    """Fewer cyclic garbage collections in traceview's own processes. A collection of
    the oldest generation walks every live object, and a trace of 100,000 calls holds
    millions (the calls, their metrics, the report and its JSON form), so with Python's
    default thresholds the collector's passes grow with the trace: 12-19% of a
    100,000-call explain (docs/performance.md). traceview makes few reference cycles, so
    collecting less often keeps little garbage longer. The objects of the imports are
    frozen (never walked again). Same opt-in as ``keep_freed_memory``; the same
    ``TRACEVIEW_KEEP_FREED_MEMORY=0`` turns it off."""
    if os.environ.get("TRACEVIEW_KEEP_FREED_MEMORY") == "0":
        return
    import gc

    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)
