"""Plain interval arithmetic on lists of [start, end] integer-ns pairs, for the tests'
independent counts from raw trace events (no numpy, no traceview code: a second
implementation that traceview's figures are checked against)."""

from __future__ import annotations

import gzip
import json
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any


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


def us_to_ns(us: Any) -> int:
    """A Chrome trace's microseconds (a number or a string) as integer ns, read in decimal."""
    return int((Decimal(str(us)) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def complete_slices(path: Path) -> list[dict[str, Any]]:
    """A gzipped trace's complete (``X``) events, each with its start ``s`` and end ``e`` in
    ns and its category (None where it has none)."""
    out = []
    for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]:
        if e.get("ph") == "X":
            s = us_to_ns(e["ts"])
            out.append({**e, "cat": e.get("cat"), "s": s, "e": s + us_to_ns(e.get("dur", 0))})
    return out
