"""Profiler artifacts handled, never believed: Python frames that outlive their parent.

PyTorch's Python tracer records a frame's end when it sees the frame return; on threads
it joins late (the autograd engine's thread) or around ``record_function`` context
managers it can record a child frame ending after its parent frame ended (seen on real
compiled training steps: ``__exit__`` frames 50-91 ms past their parent). Believed, such a
frame makes a child larger than its parent in a call tree, a self time above its
inclusive time, and idle thread time charged to a category. A Python frame cannot
outlive the frame that called it, so each such frame is clipped to its parent's end, and
the clipped frames are listed (names and how far they overhung) in the
``python-frame-overhang`` diagnostic.

Only Python frames against Python frames are judged: a ``record_function`` range (a
``cpu_op`` or ``user_annotation``) may legitimately open inside one frame and close
inside another, and is left as recorded.

Clipping runs once per trace (idempotent, like ``causality.drop_implausible_device_work``)
before any attribution: a thread whose frames all nest costs one array pass; the others
one plain loop over their frames.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from traceview import native
from traceview.analyses.calltree import parents
from traceview.diagnostics import Diagnostic
from traceview.model import Trace
from traceview.units import fmt_ns

LISTED = 5  # frames named in the diagnostic


_NATIVE_CLIP = native.load("clip")


def _clip_to_callers(st: np.ndarray, en: np.ndarray, *, general: bool = False) -> np.ndarray:
    """One pass in start order with a stack of open frames (clipped ends nest, so the top
    open frame is the caller); each frame ends at most where its caller ends. Compiled
    (``_host_sweep.c``: ``tv_clip_frames``) when built; this loop is the reference
    (``general``) and the fallback. It runs only on threads where some frame does not nest."""
    if _NATIVE_CLIP is not None and not general:
        s64 = np.ascontiguousarray(st, np.int64)
        out64 = np.array(en, np.int64, copy=True)
        scratch = np.empty(max(out64.size, 1), np.int64)
        _NATIVE_CLIP(out64.size, s64.ctypes.data, out64.ctypes.data, scratch.ctypes.data)
        return out64
    out = en.tolist()
    stack: list[int] = []  # clipped ends of the open frames, innermost last
    pop, push = stack.pop, stack.append
    for i, a in enumerate(st.tolist()):
        while stack and stack[-1] <= a:
            pop()
        if stack and out[i] > stack[-1]:
            out[i] = stack[-1]
        push(out[i])
    return np.asarray(out, np.int64)


def clip_overhanging_frames(trace: Trace) -> Diagnostic | None:
    """Clip every Python frame to its enclosing Python frame on the same thread; the
    diagnostic names the worst ones (None when every frame nests)."""
    if trace.__dict__.get("_frames_clipped"):
        return None
    trace.__dict__["_frames_clipped"] = True
    py = trace.cat_code("python_function")
    if py < 0:
        return None
    s = trace.slices
    rows = np.flatnonzero(s.cat == py)
    if rows.size == 0:
        return None
    over: dict[int, int] = defaultdict(int)  # name code -> largest overhang
    clipped = 0
    rows = rows[np.lexsort((-s.end[rows], s.start[rows], s.lane[rows]))]  # by lane, start
    lanes = s.lane[rows]
    cut = np.flatnonzero(np.diff(lanes)) + 1
    for mine in np.split(rows, cut):
        st = s.start[mine]
        original = s.end[mine]
        if _NATIVE_CLIP is None:  # the loop is slow in Python: skip threads that nest
            _, par = parents(st, original)  # exact when the frames nest
            if not ((par >= 0) & (original > original[np.maximum(par, 0)])).any():
                continue
        en = _clip_to_callers(st, original)
        hit = np.flatnonzero(en != original)
        if hit.size == 0:
            continue
        clipped += int(hit.size)
        for r, amount in zip(mine[hit].tolist(), (original[hit] - en[hit]).tolist(), strict=True):
            code = int(s.name[r])
            over[code] = max(over[code], int(amount))
        s.end[mine[hit]] = en[hit]
    if not clipped:
        return None
    worst = sorted(over.items(), key=lambda kv: (-kv[1], trace.names[kv[0]]))[:LISTED]
    named = "; ".join(f"{trace.names[c]} by up to {fmt_ns(ns)}" for c, ns in worst)
    return Diagnostic(
        "python-frame-overhang", "warning", clipped,
        f"Python frames recorded as ending after the frame that called them (a profiler "
        f"artifact) clipped to their caller's end: {named}")
