"""Profiler artifacts handled, never believed: Python frames that outlive their caller.

PyTorch's Python tracer records a C function's end when it sees it return; where it
misses the return (an exception, a function that re-enters the interpreter, the tracer
joining a thread late) it records the frame ending much later. On the real cold-compile
fixture, builtin ``__exit__``/``mul``/``next`` frames opened during Dynamo's tracing are
recorded ending 1.4 s later, at the end of the trace; on real compiled training steps
``__exit__`` frames 50-91 ms past their caller were seen. Believed, such a frame makes a
child larger than its parent in a call tree, a self time above its inclusive time, idle
thread time charged to a category, and one call of a whole run. A Python frame cannot
outlive the frame that called it, so each is clipped to its caller's end, and the clipped
frames are listed (names, by how much) in the ``python-frame-overhang`` diagnostic.

Only Python frames against Python frames are judged: a ``record_function`` range (a
``cpu_op`` or ``user_annotation``) may legitimately open inside one frame and close
inside another, and is left as recorded.

The clip is done by the host attribution (``host.attribute_host``), on each thread's rows
already in sweep order (start, longest first), so it costs one pass and no sort: the
caller of a frame is the innermost open frame, whose end is already clipped. The clipped
ends are written back into the trace, so every later analysis sees them.
"""

from __future__ import annotations

import numpy as np

from traceview import native
from traceview.diagnostics import Diagnostic
from traceview.model import Trace
from traceview.units import fmt_ns

LISTED = 5  # frames named in the diagnostic
_NATIVE_CLIP = native.load("clip")


def clip_to_callers(st: np.ndarray, en: np.ndarray, *, general: bool = False) -> np.ndarray:
    """Python frames in start order (longest first): each frame's end clipped to its
    caller's (the innermost open frame, whose end is already clipped). Compiled
    (``_host_sweep.c``: ``tv_clip_frames``) when built; the loop is the reference
    (``general``) and the fallback."""
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


def clip_frames(trace: Trace, rows: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bool:
    """Clip the Python frames among one thread's ``rows`` (sweep order; ``starts`` and
    ``ends`` clipped to the window, updated in place) and write the clipped ends back into
    the trace, noting what was clipped for ``overhang_diagnostic``. True when something
    was clipped (the rows' sweep order may then change: the caller sorts again)."""
    s = trace.slices
    py = trace.cat_code("python_function")
    if py < 0 or rows.size == 0:
        return False
    pos = np.flatnonzero(s.cat[rows] == py)
    if pos.size == 0:
        return False
    clipped = clip_to_callers(starts[pos], ends[pos])
    hit = np.flatnonzero(clipped < ends[pos])
    if hit.size == 0:
        return False
    at = pos[hit]
    worst: dict[int, int] = trace.__dict__.setdefault("_frame_overhangs", {})
    done: set[int] = trace.__dict__.setdefault("_frames_clipped", set())
    for r, was, now in zip(rows[at].tolist(), s.end[rows[at]].tolist(), clipped[hit].tolist(),
                           strict=True):
        code = int(s.name[r])
        worst[code] = max(worst.get(code, 0), was - now)
        done.add(r)
    ends[at] = clipped[hit]
    s.end[rows[at]] = clipped[hit]
    return True


def overhang_diagnostic(trace: Trace) -> Diagnostic | None:
    """The ``python-frame-overhang`` diagnostic for what ``clip_frames`` clipped (once)."""
    worst: dict[int, int] = trace.__dict__.get("_frame_overhangs") or {}
    if not worst or any(d.code == "python-frame-overhang" for d in trace.diagnostics):
        return None
    top = sorted(worst.items(), key=lambda kv: (-kv[1], trace.names[kv[0]]))[:LISTED]
    named = "; ".join(f"{trace.names[c]} by up to {fmt_ns(ns)}" for c, ns in top)
    return Diagnostic(
        "python-frame-overhang", "warning", len(trace.__dict__["_frames_clipped"]),
        f"Python frames recorded as ending after the frame that called them (a profiler "
        f"artifact) clipped to their caller's end: {named}")
