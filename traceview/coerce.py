"""Ids and counts as the trace wrote them -> the values the rest of the package compares.

Kineto writes ids as JSON numbers, but other writers (and damaged files) give integral
floats, integer text or booleans. These are the one definition of how such a value
becomes an id: io uses them while decoding, the model when it builds lanes and links,
multi when it exports and ranks. A bottom-level module: it imports nothing of
traceview's.
"""

from __future__ import annotations

from typing import Any

# The id of a slice without one (no correlation, no stream, no device).
NO_ID = -1
INT64 = 2**63


def int_or_none(v: Any) -> int | None:
    """An id or count as an int within int64 (integral floats and integer text too);
    None for anything else (booleans included)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    elif isinstance(v, str):
        try:
            v = int(v.strip())
        except ValueError:
            return None
    if isinstance(v, int):
        return v if -INT64 <= v < INT64 else None
    return None


def small_whole(value: Any) -> int | None:
    """A non-negative whole number below 2**62 (integer text too), None otherwise: what a
    reader takes from a foreign format's args or track names ("GPU3", "Device 0") as an
    id or an exact time, with room left for int64 arithmetic on it."""
    v = int_or_none(value)
    return v if v is not None and 0 <= v < 2**62 else None


def id_or_no_id(value: Any) -> int:
    """An id as an int64 column value: ``NO_ID`` when absent, not integral, or out of range."""
    v = int_or_none(value)
    return NO_ID if v is None else v


def thread_id(value: Any) -> int | str:
    """A pid/tid (or a flow id) as written, made comparable and JSON-safe: integers (or integer text)
    within int64 become ints, anything else its text. So "100" and 100 are one thread."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            return value
    if isinstance(value, int):
        return value if -INT64 <= value < INT64 else str(value)
    return str(value)


def rank_or_none(value: Any) -> int | None:
    """A rank (``distributedInfo.rank``): a non-negative id, else None."""
    v = int_or_none(value)
    return v if v is not None and v >= 0 else None
