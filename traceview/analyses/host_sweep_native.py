"""The host attribution sweep compiled (``_host_sweep.c``, loaded by ``traceview/native.py``):
the loop of ``host.attribute_host(general=True)`` in C, used whenever it is built."""

from __future__ import annotations

import numpy as np

from traceview import native

_NATIVE_SWEEP = native.load("sweep")


def compiled_sweep(starts: np.ndarray, ends: np.ndarray, own: np.ndarray, subtree: np.ndarray,
                   w0: int, w1: int, untraced: int, other: int):
    """The loop sweep compiled (``_host_sweep.c``) when it is built, else None (the
    caller runs the loop itself); both give the loop's answer (``tests/test_sweep.py``)."""
    if _NATIVE_SWEEP is not None and starts.size < 2**31 - 1:
        return _sweep_native(starts, ends, own, subtree, w0, w1, untraced, other)


def _sweep_native(starts, ends, own, subtree, w0, w1, untraced, other):
    """The loop of ``attribute_host(general=True)`` in C: one pass, a stack, no
    temporaries beyond the outputs (segments are contiguous: starts and ends are two
    views of one array of bounds, as in the array sweep)."""
    n = starts.size
    starts = np.ascontiguousarray(starts, np.int64)
    ends = np.ascontiguousarray(ends, np.int64)
    own = np.ascontiguousarray(own, np.int32)
    subtree = np.ascontiguousarray(subtree, np.uint8)
    cap = 2 * n + 1
    bounds = np.empty(cap + 1, np.int64)
    seg_cat = np.empty(cap, np.int32)
    seg_pos = np.empty(cap, np.int32)
    resolved = np.empty(n, np.int32)
    non_nested = np.zeros(1, np.int64)
    st_end = np.empty(max(n, 1), np.int64)
    st_i32 = [np.empty(max(n, 1), np.int32) for _ in range(3)]
    segs = _NATIVE_SWEEP(n, starts.ctypes.data, ends.ctypes.data, own.ctypes.data,
                         subtree.ctypes.data, w0, w1, untraced, other, bounds.ctypes.data,
                         seg_cat.ctypes.data, seg_pos.ctypes.data, cap, resolved.ctypes.data,
                         non_nested.ctypes.data, st_end.ctypes.data, st_i32[0].ctypes.data,
                         st_i32[1].ctypes.data, st_i32[2].ctypes.data)
    del st_end, st_i32
    if segs < 0:
        raise RuntimeError("host sweep: more segments than 2n + 1")  # cannot happen
    # views: the untouched tail of each buffer was never paged in
    bounds = bounds[:segs + 1] if segs else np.zeros(1, np.int64)
    return (bounds[:-1], bounds[1:], seg_cat[:segs], seg_pos[:segs], resolved,
            int(non_nested[0]))
