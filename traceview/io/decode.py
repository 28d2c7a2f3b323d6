"""Read a Chrome/Kineto trace file into raw events plus its top-level metadata.

Accepts what ``torch.profiler`` writes (``export_chrome_trace``,
``tensorboard_trace_handler``), plain or gzipped: a JSON object with ``traceEvents``
and metadata keys, or a bare array of events. Like Perfetto's JSON tokenizer, every
top-level key other than ``traceEvents`` is kept as metadata (``deviceProperties``,
``baseTimeNanoseconds``, ``distributedInfo``, capture's ``traceview`` key, ...).

The fast path decodes events into typed ``msgspec`` structs and leaves ``args`` as raw
JSON bytes, decoded later only for the few events whose arguments matter (kernels,
launches, ops). Events whose fields have unexpected types fall back to a generic
decode, one event at a time, so one odd event never costs the whole file.
See ``docs/json-decoder.md`` for the measurement behind the choice of msgspec.
"""

from __future__ import annotations

import gzip
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from traceview.errors import TraceLoadError

GZIP_MAGIC = b"\x1f\x8b"


class RawEvent(msgspec.Struct, gc=False):
    """One trace event as written; ``args`` stays undecoded JSON until needed."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float | str | None = None
    dur: float | str | None = None
    id: int | str | None = None
    bp: str = ""
    args: msgspec.Raw = msgspec.Raw(b"")


@dataclass
class Decoded:
    """What the file held: events, metadata, and problems met while decoding."""

    path: str
    events: list[RawEvent]
    metadata: dict[str, Any]
    problems: list[tuple[str, int, str]] = field(default_factory=list)
    # (code, count, description) — turned into diagnostics by the model builder.
    compressed_bytes: int = 0
    decoded_bytes: int = 0


_EVENTS_DECODER = msgspec.json.Decoder(list[RawEvent])
_TOP_DECODER = msgspec.json.Decoder(dict[str, msgspec.Raw])
_ANY_DECODER = msgspec.json.Decoder()


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The file's bytes, gunzipped when it is gzip (by content, not by name)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise TraceLoadError(p, "no such file") from None
    except IsADirectoryError:
        raise TraceLoadError(p, "is a directory, not a trace file") from None
    except OSError as exc:
        raise TraceLoadError(p, f"cannot read: {exc.strerror or exc}") from None
    if raw[:2] == GZIP_MAGIC:
        try:
            return gzip.decompress(raw)
        except EOFError:
            # a gzip stream cut short (killed writer): keep what inflates; the JSON
            # recovery below then keeps every complete event
            try:
                partial = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw)
            except zlib.error as exc:
                raise TraceLoadError(p, f"corrupt gzip data ({exc})") from None
            if not partial:
                raise TraceLoadError(p, "truncated gzip data with nothing readable") from None
            return partial
        except (OSError, zlib.error) as exc:
            raise TraceLoadError(p, f"corrupt gzip data ({exc})") from None
    return raw


def decode(path: str | os.PathLike[str]) -> Decoded:
    """Decode a trace file; raise ``TraceLoadError`` only when nothing usable is there."""
    p = Path(path)
    data = read_bytes(p)
    compressed = p.stat().st_size
    body = data.lstrip()
    if not body:
        raise TraceLoadError(p, "empty file")
    if body[:1] not in (b"{", b"["):
        raise TraceLoadError(p, "not a JSON trace (expected '{' or '[' at the start)")
    problems: list[tuple[str, int, str]] = []
    metadata: dict[str, Any] = {}
    if not _complete(body):
        recovered = _recover_truncated(body)
        if recovered is None:
            raise TraceLoadError(p, "not valid JSON, and no complete event could be recovered")
        body, lost = recovered
        problems.append(("truncated", 1, f"the file ends mid-JSON (a killed writer?): kept every "
                         f"complete event before the cut, dropped the last {lost} of "
                         f"{len(data)} bytes"))
    if body[:1] == b"[":
        events_raw: bytes | msgspec.Raw = body
    else:
        try:
            top = _TOP_DECODER.decode(body)
        except msgspec.DecodeError as exc:
            raise TraceLoadError(p, f"not valid JSON ({exc})") from None
        if "traceEvents" not in top:
            raise TraceLoadError(p, "JSON object has no 'traceEvents' list: not a Chrome trace")
        events_raw = top.pop("traceEvents")
        for key, value in top.items():
            try:
                metadata[key] = _ANY_DECODER.decode(value)
            except msgspec.DecodeError:  # pragma: no cover - already validated above
                problems.append(("metadata-undecodable", 1, f"top-level key {key!r}"))
    events = _decode_events(p, events_raw, problems)
    if not events and not metadata:
        if problems and problems[0][0] == "truncated":
            raise TraceLoadError(p, "truncated before the first complete event")
        raise TraceLoadError(p, "the trace holds no events")
    return Decoded(
        path=str(p),
        events=events,
        metadata=metadata,
        problems=problems,
        compressed_bytes=compressed,
        decoded_bytes=len(data),
    )


_RAW_DECODER = msgspec.json.Decoder(msgspec.Raw)
MAX_RECOVERY_ATTEMPTS = 64


def _complete(body: bytes) -> bool:
    """Whether the text is one whole JSON value (cheap: no objects are built)."""
    try:
        _RAW_DECODER.decode(body)
    except msgspec.DecodeError as exc:
        return "truncated" not in str(exc)  # other errors are reported by the real decode
    return True


def _recover_truncated(body: bytes) -> tuple[bytes, int] | None:
    """Cut a truncated trace after its last complete event and close the brackets.

    Try the last ``}`` before the cut, then the one before it (a ``}`` may close a nested
    ``args`` object of the half-written event), until the text decodes.
    """
    if body[:1] == b"[":
        start, closer = 0, b"]"
    else:
        key = body.find(b'"traceEvents"')
        start = body.find(b"[", key) if key >= 0 else -1
        closer = b"]}"
        if start < 0:
            return None
    end = len(body)
    for _ in range(MAX_RECOVERY_ATTEMPTS):
        pos = body.rfind(b"}", start, end)
        if pos < 0:
            candidate = body[: start + 1] + closer
            return (candidate, len(body) - start - 1) if _complete_ok(candidate) else None
        candidate = body[: pos + 1] + closer
        if _complete_ok(candidate):
            return candidate, len(body) - pos - 1
        end = pos
    return None


def _complete_ok(text: bytes) -> bool:
    try:
        _RAW_DECODER.decode(text)
    except msgspec.DecodeError:
        return False
    return True


def _decode_events(
    p: Path, raw: bytes | msgspec.Raw, problems: list[tuple[str, int, str]]
) -> list[RawEvent]:
    try:
        return _EVENTS_DECODER.decode(raw)
    except msgspec.ValidationError:
        pass  # valid JSON, but some event has unexpected field types: go one by one
    except msgspec.DecodeError as exc:
        raise TraceLoadError(p, f"not valid JSON ({exc})") from None
    try:
        items = _ANY_DECODER.decode(raw)
    except msgspec.DecodeError as exc:  # pragma: no cover - same text decoded above
        raise TraceLoadError(p, f"not valid JSON ({exc})") from None
    if not isinstance(items, list):
        raise TraceLoadError(p, "'traceEvents' is not a list")
    events: list[RawEvent] = []
    bad = 0
    for item in items:
        ev = _coerce(item)
        if ev is None:
            bad += 1
        else:
            events.append(ev)
    if bad:
        problems.append(("event-malformed", bad, "events that are not objects or have unusable fields"))
    return events


def _coerce(item: Any) -> RawEvent | None:
    """Best-effort conversion of one generically decoded event."""
    if not isinstance(item, dict):
        return None

    def text(v: Any) -> str:
        return v if isinstance(v, str) else ("" if v is None else str(v))

    def ident(v: Any) -> int | str:
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, (int, str)):
            return v
        if isinstance(v, float) and v.is_integer():
            return int(v)
        return text(v)

    def num(v: Any) -> float | str | None:
        if v is None or isinstance(v, bool):
            return None
        if isinstance(v, (int, float)):
            return float(v)
        if isinstance(v, str):
            return v
        return None

    args = item.get("args")
    fid = item.get("id")
    return RawEvent(
        ph=text(item.get("ph")),
        cat=text(item.get("cat")),
        name=text(item.get("name")),
        pid=ident(item.get("pid", 0)),
        tid=ident(item.get("tid", 0)),
        ts=num(item.get("ts")),
        dur=num(item.get("dur")),
        id=ident(fid) if fid is not None else None,
        bp=text(item.get("bp")),
        args=msgspec.Raw(msgspec.json.encode(args)) if isinstance(args, dict) else msgspec.Raw(b""),
    )


def decode_args(raw: msgspec.Raw) -> dict[str, Any]:
    """Decode an event's ``args`` when it is needed; ``{}`` when absent or unusable."""
    if not raw:
        return {}
    try:
        value = _ANY_DECODER.decode(raw)
    except msgspec.DecodeError:
        return {}
    return value if isinstance(value, dict) else {}
