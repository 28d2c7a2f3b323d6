"""Names made safe to print: control characters escaped, very long names cut.

A kernel or range name is whatever the program passed to the profiler. Raw ESC, BEL or
NUL in one reached the terminal (an ESC sequence can recolour, move the cursor or retitle
the window) and the markdown; a name of 20 MB took minutes to lay out. So the text and
markdown renderers print names through ``printable_name``: C0 and C1 control characters
(newline and tab aside) and DEL as visible escapes (``\\x1b``), and names longer than
``MAX_NAME_CHARS`` cut with a note saying how long they were. JSON output keeps names
exactly (JSON escapes control characters itself).
"""

from __future__ import annotations

MAX_NAME_CHARS = 10_000
# the text layer's break that prints nothing (whitespace to rich, zero cells wide); here, so
# that the net for markdown drops leftover ones without importing rich
SOFT = "\x1f"

_CONTROLS = [*range(0x00, 0x20), *range(0x7F, 0xA0)]
_ESCAPES = {c: f"\\x{c:02x}" for c in _CONTROLS if chr(c) not in "\n\t"}
_ESCAPES_ALL = {c: f"\\x{c:02x}" for c in _CONTROLS}
_ESCAPES_KEEP_ESC = {c: e for c, e in _ESCAPES.items() if c != 0x1B}


def escape_controls(s: str, *, keep_lines: bool = True, keep_esc: bool = False) -> str:
    """``s`` with control characters as ``\\xNN``. ``keep_lines``: newline and tab stay
    (a whole document); ``keep_esc``: ESC stays (a document a terminal colours itself)."""
    if s.isprintable():
        return s
    table = _ESCAPES_KEEP_ESC if keep_esc else (_ESCAPES if keep_lines else _ESCAPES_ALL)
    return s.translate(table)


def cut(s: str, limit: int = MAX_NAME_CHARS) -> str:
    """``s``, or its first ``limit`` characters and a note of its length."""
    if len(s) <= limit:
        return s
    return f"{s[:limit]}... (name cut: {len(s):,} characters)"


def printable_name(s: str) -> str:
    """A name as the text and markdown outputs print it (one line, no control codes)."""
    return escape_controls(cut(s), keep_lines=False)


def _surrogate(c: str) -> str:
    code = ord(c)
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte of a file name (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if 0xD800 <= code <= 0xDFFF:
        return f"\\u{code:04x}"
    return c


def printable_path(path: object) -> str:
    """A file name as every output writes it: valid UTF-8. POSIX names are bytes; Python
    carries a byte that is not UTF-8 as a lone surrogate, which no encoder writes (JSON,
    Parquet and the terminal all refused it), so such a byte becomes ``\\xNN``."""
    import os

    s = os.fsdecode(path) if isinstance(path, (bytes, os.PathLike)) else str(path)
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(_surrogate(c) for c in s)
    return s
