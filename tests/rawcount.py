"""Plain interval arithmetic on lists of [start, end] integer-ns pairs, for the tests'
independent counts from raw trace events (no numpy, no traceview code: a second
implementation that traceview's figures are checked against)."""

from __future__ import annotations


def union(iv):
    """The union of intervals as sorted, disjoint [start, end] pairs."""
    out = []
    for a, b in sorted(iv):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def length(iv) -> int:
    return sum(b - a for a, b in iv)


def clip(iv, lo, hi):
    return [[max(a, lo), min(b, hi)] for a, b in iv if min(b, hi) > max(a, lo)]


def covered(iv, lo, hi) -> int:
    """The ns of [lo, hi) that any of ``iv`` covers."""
    return length(union(clip(iv, lo, hi)))


def minus(iv, sub):
    """iv minus sub, both unions."""
    out = []
    for a, b in iv:
        cur = a
        for c, d in sub:
            if d <= cur or c >= b:
                continue
            if c > cur:
                out.append([cur, c])
            cur = max(cur, d)
        if cur < b:
            out.append([cur, b])
    return out
