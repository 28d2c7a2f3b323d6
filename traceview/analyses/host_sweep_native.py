"""The host attribution sweep compiled (``_host_sweep.c``, loaded by ``traceview/native.py``):
the loop of ``host.attribute_host(general=True)`` in C, used whenever it is built."""

from __future__ import annotations

import numpy as np

from traceview import native
from traceview.intervals import PACK_SHIFT, PackedTimes

_NATIVE_SWEEP = native.load("sweep")
# category codes travel as int8 (-1: inherit); more categories than this take the loop
MAX_CODES = 127


def compiled_sweep(rows: np.ndarray, start: np.ndarray, end: np.ndarray, own: np.ndarray,
                   subtree: np.ndarray, w0: int, w1: int, untraced: int, other: int,
                   n_codes: int):
    """The loop sweep compiled (``_host_sweep.c``) when it is built, else None (the
    caller runs the loop itself); both give the loop's answer (``tests/test_sweep.py``).
    ``rows`` are in sweep order; ``start`` and ``end`` are the trace's whole columns (the
    C clips each row's span to the window as it reads it)."""
    if (_NATIVE_SWEEP is not None and rows.size < 2**31 - 1 and start.size < 2**31
            and n_codes <= MAX_CODES):  # rows travel as int32
        return _sweep_native(rows, start, end, own, subtree, w0, w1, untraced, other)


def _sweep_native(rows, start, end, own, subtree, w0, w1, untraced, other):
    """The loop of ``attribute_host(general=True)`` in C: one pass, a stack, no
    temporaries beyond the outputs (segments are contiguous: starts and ends are two
    views of one column of bounds; no segment categories: each is its owner's,
    ``HostTimeline.seg_cat``). The bounds are packed (``intervals.PackedTimes``:
    4 bytes each, exactly) where every one fits its block's base, else the sweep runs
    again into int64 bounds."""
    n = rows.size
    rows = np.ascontiguousarray(rows, np.int32)
    start = np.ascontiguousarray(start, np.int64)
    end = np.ascontiguousarray(end, np.int64)
    own = np.ascontiguousarray(own, np.int8)
    subtree = np.ascontiguousarray(subtree, np.uint8)
    cap = 2 * n + 1
    seg_pos = np.empty(cap, np.int32)
    resolved = np.empty(n, np.int8)
    non_nested = np.zeros(1, np.int64)
    base = np.empty(((cap + 1) >> PACK_SHIFT) + 1, np.int64)
    off = np.empty(cap + 1, np.uint32)
    none = np.zeros(1, np.int64)  # the unused output (its pointer is never written)
    segs = _NATIVE_SWEEP(n, rows.ctypes.data, start.ctypes.data, end.ctypes.data,
                         own.ctypes.data, subtree.ctypes.data, w0, w1, untraced, other,
                         none.ctypes.data, base.ctypes.data, off.ctypes.data,
                         None, seg_pos.ctypes.data, cap,
                         resolved.ctypes.data, non_nested.ctypes.data)
    bounds: np.ndarray | PackedTimes
    if segs == -4:  # a bound too far from its block's base: plain int64 bounds
        del base, off
        bounds = np.empty(cap + 1, np.int64)
        segs = _NATIVE_SWEEP(n, rows.ctypes.data, start.ctypes.data, end.ctypes.data,
                             own.ctypes.data, subtree.ctypes.data, w0, w1, untraced, other,
                             bounds.ctypes.data, None, None, None,
                             seg_pos.ctypes.data, cap, resolved.ctypes.data,
                             non_nested.ctypes.data)
    elif segs >= 0:  # only the bounds written (the rest of the buffers was never paged in)
        bounds = PackedTimes(base[:(segs >> PACK_SHIFT) + 1], off[:segs + 1])
    if segs == -3:
        raise MemoryError("host sweep: the stack of open slices could not grow")
    if segs < 0:
        raise RuntimeError("host sweep: more segments than 2n + 1")  # cannot happen
    # views: the untouched tail of each buffer was never paged in
    if not segs:
        bounds = np.zeros(1, np.int64)
    elif isinstance(bounds, PackedTimes):
        return (bounds.view(0, segs), bounds.view(1, segs), None, seg_pos[:segs],
                resolved, int(non_nested[0]))
    return (bounds[:segs], bounds[1:segs + 1], None, seg_pos[:segs], resolved,
            int(non_nested[0]))
