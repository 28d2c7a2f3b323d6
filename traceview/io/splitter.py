"""Cut a trace's event array into chunks of whole events as its text arrives.

The chunks are decoded by the caller; this module only finds event boundaries, keeps
the top-level keys around ``traceEvents`` as metadata text, and, at the end, recovers a
text that was cut short (keeping every complete event) or reports it as invalid JSON.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from traceview.errors import TraceLoadError
from traceview.io import limits

MAX_UNSPLIT = 256 << 20  # a buffer this large with no decodable event boundary is not JSON
MAX_SPLIT_TRIES = 16  # event-boundary candidates tried per piece before reading more
MAX_RECOVERY_ATTEMPTS = 64
_WS = b" \t\r\n"
_TE_RE = re.compile(rb'"traceEvents"\s*:\s*\[')
_RAW = msgspec.json.Decoder(msgspec.Raw)


def _raw(text: bytes | bytearray | memoryview, outer: int) -> bytes | bytearray | memoryview:
    """Check that ``text`` is one JSON value (``DecodeError`` if not) and return it, with
    nesting too deep for the decoder's recursion capped (``io/limits.py``; ``outer`` as
    there)."""
    try:
        _RAW.decode(text)
        return text
    except RecursionError:
        capped, n = limits.cap_nesting(text, outer)
        if not n:
            raise msgspec.DecodeError("JSON is truncated: nesting too deep, and cut short") from None
        _RAW.decode(capped)
        return capped


def _complete(text: bytes | bytearray | memoryview) -> bool:
    try:
        _raw(text, 0)
    except msgspec.DecodeError:
        return False
    return True


_BYTE = re.compile(r"\(byte (\d+)\)")


def _is_cut(message: str, text: bytes | bytearray) -> bool:
    """Whether a decode error means the text stops early. msgspec says "truncated",
    except for a number cut after its '.', 'e' or '-', which it reports as malformed at
    the text's last byte."""
    if "truncated" in message:
        return True
    m = _BYTE.search(message)
    return (m is not None and int(m.group(1)) >= len(text) - 1
            and text[-1:] in (b"-", b".", b"e", b"E", b"+"))


class Splitter:
    """Cuts the event array into chunks of whole events as text arrives.

    The buffer always starts with ``[``. After each piece, the last ``}`` followed by
    ``,`` becomes ``}]`` and the buffer up to there must decode as a JSON array; a cut
    inside a string or a nested object leaves it invalid, so the previous candidate is
    tried. The split is therefore always at an event boundary, whatever the layout.
    """

    def __init__(self, path: Path | str, decode_chunk) -> None:
        self.path = path
        self.decode_chunk = decode_chunk  # bytes-like '[...]' -> None (consumes events)
        self.buf = bytearray()  # the text not yet decoded (see ``feed`` once started)
        self.used = 0  # once started: bytes of ``buf`` in use (the rest is spare room)
        self.meta_raw: list[bytes] = []
        self.truncated = False
        self.truncated_bytes = 0
        self.offset = 0  # file bytes before the text that follows buf's leading '['
        self.first_error: str | None = None
        self.started = False  # the event array has been found
        self.skipped = 0  # bytes dropped before the text the offsets count (a UTF-8 BOM)
        # where the event array's closing ']' is in the file's text (set by ``finish``)
        self.events_end: int | None = None

    def push(self, piece: bytes) -> None:
        """The next piece of text: header until the event array starts, then events."""
        if self.started:
            self.feed(piece)
        elif self.header(piece):
            self.started = True
            self.used = len(self.buf)
            self.feed(b"")

    def header(self, piece: bytes) -> bool:
        """Accumulate until the start of the event array; True once found."""
        self.buf += piece
        if self.buf[:3] == b"\xef\xbb\xbf":  # a UTF-8 byte order mark
            del self.buf[:3]
            self.skipped += 3
        s = bytes(self.buf[:64]).lstrip(_WS)
        if not s:
            return False
        if s[:1] == b"[":
            stripped = self.buf.lstrip(_WS)
            self.offset = len(self.buf) - len(stripped) + 1
            self.buf = bytearray(stripped)
            return True
        if s[:1] != b"{":
            raise TraceLoadError(self.path, "not a JSON trace (expected '{' or '[' at the start)")
        start = 0
        while (m := _TE_RE.search(self.buf, start)) is not None:
            head = bytes(self.buf[: m.start()]) + b'"traceEvents":0}'
            if _complete(head):  # a top-level key iff the header closes into an object
                self.meta_raw.append(head)  # deep nesting is capped where it is decoded
                self.offset = m.end()
                # the header dropped in place, keeping the array's '[': the first piece
                # is megabytes, and a copy of it a fresh buffer's page faults
                del self.buf[:m.end() - 1]
                return True
            start = m.end()
        return False

    def _append(self, piece: bytes) -> None:
        """Copy ``piece`` after the text in use. The buffer is reused from chunk to chunk
        and grows only when a piece does not fit: fresh memory costs a page fault per
        4 KB (about 8 us each on the benchmark VM), so a new buffer per chunk is slow."""
        need = self.used + len(piece)
        if need > len(self.buf):
            grown = bytearray(max(need, 2 * len(self.buf)))
            grown[: self.used] = memoryview(self.buf)[: self.used]
            self.buf = grown
        self.buf[self.used:need] = piece
        self.used = need

    def feed(self, piece: bytes) -> None:
        """Append a piece; decode everything up to the last event boundary in it."""
        self._append(piece)
        buf = self.buf
        n = hi = self.used
        for _ in range(MAX_SPLIT_TRIES):
            j = buf.rfind(b"}", 0, hi)
            if j < 0:
                break
            k = j + 1
            while k < n and buf[k] in _WS:
                k += 1
            if k >= n or buf[k] != 44:  # not followed by ','
                hi = j
                continue
            buf[k] = 93  # ',' -> ']'
            view = memoryview(buf)[: k + 1]
            try:
                self.decode_chunk(view)
            except msgspec.DecodeError:  # cut inside a string or nested object
                buf[k] = 44
                hi = j
                continue
            finally:
                view.release()
            self.offset += k
            tail = bytes(buf[k + 1:n])  # the start of the next event: usually short
            buf[0] = 91  # '['
            buf[1:1 + len(tail)] = tail
            self.used = 1 + len(tail)
            return
        if n > MAX_UNSPLIT:
            raise TraceLoadError(self.path, "not valid JSON: no event boundary in "
                                 f"{MAX_UNSPLIT >> 20} MB of the event array")

    def finish(self) -> None:
        """The end of input: the last events, ``]`` and the trailer (or a cut).

        NUL bytes at the end (a killed writer on a file the filesystem had already
        zero-filled) are dropped first. Text that never reached an event array is not a
        trace: say why in one line.
        """
        if not self.started:
            self._no_event_array()
        self.buf = self.buf[: self.used]
        while self.buf[-1:] in (b"\x00", b" ", b"\n", b"\r", b"\t"):
            del self.buf[-1:]
        buf = self.buf
        hi = len(buf)
        for _ in range(MAX_RECOVERY_ATTEMPTS):
            j = buf.rfind(b"]", 0, hi)
            if j < 0:
                break
            trailer = bytes(buf[j + 1:]).strip(_WS)
            tail_meta = None
            cut_tail = False
            if trailer[:1] == b",":
                tail_meta = b"{" + trailer[1:]
                try:
                    _raw(tail_meta, 0)
                except msgspec.DecodeError as exc:
                    if not _is_cut(str(exc), tail_meta):
                        hi = j
                        continue
                    cut_tail = True  # the file stops inside the metadata after the events
            elif trailer not in (b"", b"}"):
                hi = j
                continue
            try:
                self.decode_chunk(bytes(buf[: j + 1]))
            except msgspec.DecodeError as exc:
                self.first_error = self.first_error or self._where(exc)
                hi = j
                continue
            if cut_tail:
                self.truncated = True
                self.truncated_bytes = len(trailer)
            elif tail_meta:
                self.meta_raw.append(tail_meta)
            # buf[1:] starts at text offset ``offset`` (``feed``, ``header``)
            self.events_end = self.skipped + self.offset + j - 1
            return
        self._recover()

    def _no_event_array(self) -> None:
        head = bytes(self.buf).strip(_WS)
        if not head:
            raise TraceLoadError(self.path, "empty file")
        if head[:1] not in (b"{", b"["):
            raise TraceLoadError(self.path, "not a JSON trace (expected '{' or '[' at the start)")
        if _complete(head):
            raise TraceLoadError(self.path,
                                 "JSON object has no 'traceEvents' list: not a Chrome trace")
        if b'"traceEvents"' not in head:
            raise TraceLoadError(self.path,
                                 "not valid JSON, and no 'traceEvents' list before the end")
        raise TraceLoadError(self.path, "not valid JSON")

    def _where(self, exc: Exception) -> str:
        """msgspec's message with its byte offset made relative to the file's text."""
        msg = str(exc)
        m = _BYTE.search(msg)
        if m is None:
            return msg
        return msg.replace(m.group(0), f"(near byte {self.offset + int(m.group(1)) - 1} "
                                        "of the decompressed text)")

    def _recover(self) -> None:
        """The text stops mid-event: keep every complete event before the cut.

        Only a cut counts: text that is wrong before its end is not valid JSON.
        """
        buf = self.buf
        try:
            _raw(bytes(buf), 2)
        except msgspec.DecodeError as exc:
            if not _is_cut(str(exc), buf):
                why = self.first_error or self._where(exc)
                raise TraceLoadError(self.path, f"not valid JSON ({why})") from None
        end = len(buf)
        for _ in range(MAX_RECOVERY_ATTEMPTS):
            pos = buf.rfind(b"}", 0, end)
            candidate = bytes(buf[: pos + 1]) + b"]" if pos >= 0 else b"[]"
            try:
                self.decode_chunk(candidate)
            except msgspec.DecodeError:
                pass
            else:
                self.truncated = True
                self.truncated_bytes = len(buf) - (pos + 1 if pos >= 0 else 1)
                return
            if pos < 0:
                break
            end = pos
        raise TraceLoadError(self.path, "not valid JSON, and no complete event could be recovered")
