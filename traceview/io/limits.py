"""The input limits the reader enforces, so that odd input becomes a diagnostic, never an
exception deep in a decoder or a writer.

* **Nesting.** A value nested more than ``MAX_DEPTH`` levels deep (counted from the
  ``args`` object, or from a top-level metadata key) is replaced by ``null`` and counted
  (diagnostic ``nested-too-deep``). Kineto never nests deeper than a few levels; a
  thousand levels made msgspec's recursion guard raise ``RecursionError`` mid-chunk and
  orjson refuse the report. The compiled scanner already refuses chunks nested deeper
  than 64 (the msgspec path then reads them), so both paths agree on the limit.
* **Integers.** JSON output is 64-bit: an integer outside ``[-2**63, 2**64)`` that reaches
  the report is kept as its decimal text (diagnostic ``int-out-of-range`` for metadata;
  args are converted when decoded).

* **Names.** An event name over ``MAX_NAME_CHARS`` characters is cut, with a note of its
  length (diagnostic ``name-too-long``): a 20 MB name took minutes to lay out as text.
* **Threads.** At most ``MAX_HOST_THREADS`` host threads are attributed one by one (the
  ones with the most events in the window; the attributed thread always): a trace of
  200,000 threads of one event each took 94 s and wrote a 100 MB report. The others are
  counted (diagnostic ``threads-over-limit``); device figures and the attributed
  thread's are unchanged.

Both checks on the text cost nothing on ordinary input: the nesting scan runs only on text that
contains enough brackets to be that deep, and the integer walk only on text with a run
of 19 digits.
"""

from __future__ import annotations

import re
from typing import Any

from traceview.printable import MAX_NAME_CHARS, cut

MAX_DEPTH = 64
MAX_HOST_THREADS = 1000
INT_MIN = -(2**63)
INT_END = 2**64  # orjson writes unsigned 64-bit integers too

# a JSON string (escapes included) or one bracket: strings are skipped whole, so a
# bracket inside a name never counts
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_LONG_DIGITS = re.compile(rb"[0-9]{19}")


def may_be_deep(raw: bytes | bytearray | memoryview, depth: int = MAX_DEPTH) -> bool:
    """Cheap test: fewer brackets than ``depth`` cannot nest that deep."""
    raw = bytes(raw) if isinstance(raw, memoryview) else raw
    return raw.count(b"{") + raw.count(b"[") > depth


def cap_nesting(text: bytes | bytearray | memoryview, outer: int) -> tuple[bytes, int]:
    """``text`` with every value nested deeper than ``MAX_DEPTH`` replaced by ``null``.

    ``outer``: the levels around the object whose members are checked (0 for an ``args``
    object or a metadata object, 2 for a chunk ``[{"args": {...}}, ...]``: the array and
    the event). The member of that object (level ``outer + 2``) holding the too-deep
    part becomes ``null``. Returns the text and how many members were replaced; text
    that never closes the deep member is returned unchanged (count 0), as it came."""
    data = bytes(text)
    limit = outer + MAX_DEPTH
    member = outer + 2
    cuts: list[tuple[int, int]] = []
    depth = 0
    start = -1
    deep = False
    for m in _TOKEN.finditer(data):
        c = data[m.start()]
        if c == 0x22:  # a string
            continue
        if c in (0x7B, 0x5B):  # { [
            depth += 1
            if depth == member:
                start, deep = m.start(), False
            elif depth > limit:
                deep = True
        else:
            if depth == member and deep and start >= 0:
                cuts.append((start, m.end()))
                start, deep = -1, False
            depth -= 1
    if not cuts:
        return data, 0
    out = bytearray()
    at = 0
    for a, b in cuts:
        out += data[at:a]
        out += b"null"
        at = b
    out += data[at:]
    return bytes(out), len(cuts)


def has_long_int(raw: bytes | bytearray | memoryview) -> bool:
    """Whether the text has a run of 19 digits (the shortest integer past 64 bits has 20;
    a cheap filter before ``fit_ints`` walks anything)."""
    return _LONG_DIGITS.search(raw) is not None


def fit_ints(value: Any) -> tuple[Any, list[str]]:
    """``value`` with every integer outside 64 bits as its decimal text, and the paths of
    those replaced (``a.b[3]``). Containers are copied only where something changes."""
    found: list[str] = []

    def walk(v: Any, path: str) -> Any:
        if type(v) is int:
            if INT_MIN <= v < INT_END:
                return v
            found.append(path)
            return str(v)
        if isinstance(v, dict):
            out = {k: walk(x, f"{path}.{k}" if path else str(k)) for k, x in v.items()}
            return out
        if isinstance(v, list):
            return [walk(x, f"{path}[{i}]") for i, x in enumerate(v)]
        return v

    return walk(value, ""), found


def cut_long_names(names: list[str]) -> int:
    """Cut, in place, every name over ``MAX_NAME_CHARS``; how many were."""
    long = [i for i, n in enumerate(names) if len(n) > MAX_NAME_CHARS]
    for i in long:
        names[i] = cut(names[i])
    return len(long)
