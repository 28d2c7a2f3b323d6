"""The optional compiled scanner (``_kineto_scan.c``) of the trace decoder.

Why: msgspec's typed decode plus one Python pass per column was most of what a large
real trace cost (``docs/performance.md``); the scanner builds the same columns with no
Python object per event. It is optional (``traceview/native.py``): without it every
chunk takes the msgspec path (``io/collector.py``), and a chunk the scanner declines
(non-ASCII text, a number it cannot convert exactly, an odd type) does too. ``tests/test_fastscan.py`` checks that
both paths give identical columns.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec
import numpy as np

from traceview import native

_FULL = -2
_STRING = msgspec.json.Decoder()
_STRINGS = msgspec.json.Decoder(list[str])
#: Room for a chunk's distinct keys and names before a retry with room for one per event.
UNIQUE_CAP = 1 << 16


@dataclass(frozen=True)
class Scanned:
    """One chunk's events as columns; codes are local to the chunk (``key_spans`` and
    ``name_spans`` hold the byte spans of each distinct key and name, first sight first)."""

    key: np.ndarray  # int32, local key code
    name: np.ndarray  # int32, local name code
    ts: np.ndarray  # int64 ns (exact_time.MISSING when absent); its own array
    dur: np.ndarray  # int64 ns; its own array
    ev: np.ndarray  # (n, 2) int64: the event object's span
    args: np.ndarray  # (n, 2) int64: the args value's span, -1 when absent
    key_spans: np.ndarray  # (keys, 8): ph, cat, pid, tid tokens (start, end; -1 absent)
    name_spans: np.ndarray  # (names, 2): the name token (start, end; -1 absent)


_SCAN = native.load("scan")


def available() -> bool:
    return _SCAN is not None


def scan(text: bytes | bytearray | memoryview) -> Scanned | None:
    """The chunk's columns, or None when the scanner is absent or declines the chunk."""
    if _SCAN is None:
        return None
    try:
        return _scan(np.frombuffer(text, np.uint8))
    except MemoryError:  # the buffers below, for a huge chunk: the msgspec path then
        return None


def _scan(buf: np.ndarray) -> Scanned | None:
    fn = _SCAN
    assert fn is not None  # scan() checked
    size = buf.size
    cap = size // 16 + 16  # events; an event takes at least 2 bytes and a separator
    ucap = min(cap, UNIQUE_CAP)  # distinct keys and names (thousands per chunk)
    while True:
        key = np.empty(cap, np.int32)
        name = np.empty(cap, np.int32)
        ts = np.empty(cap, np.int64)
        dur = np.empty(cap, np.int64)
        ev = np.empty((cap, 2), np.int64)
        args = np.empty((cap, 2), np.int64)
        key_spans = np.empty((ucap, 8), np.int64)
        name_spans = np.empty((ucap, 2), np.int64)
        counts = np.zeros(2, np.int32)
        n = fn(buf.ctypes.data, size, cap, ucap, key.ctypes.data, name.ctypes.data,
                  ts.ctypes.data, dur.ctypes.data, ev.ctypes.data, args.ctypes.data,
                  key_spans.ctypes.data, name_spans.ctypes.data, counts.ctypes.data)
        if n == _FULL and (cap < size // 2 + 16 or ucap < cap):
            cap = size // 2 + 16 if cap < size // 2 + 16 else cap
            ucap = cap
            continue
        if n < 0:
            return None
        k, m = int(counts[0]), int(counts[1])
        # ts and dur may be kept as the file's columns: copies, not views of the buffers
        return Scanned(key[:n], name[:n], ts[:n].copy(), dur[:n].copy(), ev[:n], args[:n],
                       key_spans[:k], name_spans[:m])


def token_str(view: memoryview, a: int, b: int) -> str:
    """A string token of a scanned chunk (with its quotes; ``a < 0``: absent, "")."""
    if a < 0:
        return ""
    raw = bytes(view[a:b])
    if b"\\" not in raw:
        return str(raw[1:-1], "ascii")  # the scanner passes ASCII only
    value = _STRING.decode(raw)
    if not isinstance(value, str):
        raise ValueError("not a string")
    return value


def token_strs(view: memoryview, spans: list[list[int]]) -> list[str]:
    """``token_str`` of each (start, end) span, in one decode: a chunk of Python frames
    names hundreds of functions, and a call each was a tenth of the chunk's Python work."""
    try:
        return _STRINGS.decode(b"[" + b",".join([view[a:b] if a >= 0 else b'""'
                                                 for a, b in spans]) + b"]")
    except (msgspec.DecodeError, msgspec.ValidationError):  # token_str says why
        return [token_str(view, a, b) for a, b in spans]


def token_id(view: memoryview, a: int, b: int) -> int | str:
    """A pid/tid token: a string, or an integer (absent: 0, as ``FastEvent``'s default)."""
    if a < 0:
        return 0
    if view[a] == 0x22:  # '"'
        return token_str(view, a, b)
    return int(str(view[a:b], "ascii"))
