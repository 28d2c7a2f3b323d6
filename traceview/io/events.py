"""The event records msgspec decodes a chunk of Kineto text into, and the permissive
conversion of damaged events.

``FastEvent`` is what the reference decoder reads (the compiled scanner, ``io/fastscan.py``,
reads the same fields without making one); ``ExactEvent`` is the same with ``ts`` kept
as its text, for a chunk whose clock is past 2**43 us (``io/exact_time.py``). A chunk
whose fields have unexpected types is decoded generically and each event converted
alone by ``coerce`` (one odd event never costs the whole file). ``LooseEvent`` holds
every event other than complete ('X') ones, whichever way it was read.
"""

from __future__ import annotations

from typing import Any

import msgspec
import msgspec.structs

from traceview.coerce import thread_id
from traceview.io import limits

NAN = float("nan")


class FastEvent(msgspec.Struct, gc=False):
    """One event as Kineto writes it; ``args`` stays raw JSON until needed."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float = NAN
    dur: float = NAN
    id: int | str | None = None
    bp: str = ""
    args: msgspec.Raw = msgspec.Raw(b"")


class ExactEvent(FastEvent, gc=False):
    """The same, with ``ts`` as its JSON number text (for clocks past 2**43 us)."""

    ts: msgspec.Raw = msgspec.Raw(b"")  # type: ignore[assignment]


class LooseEvent(msgspec.Struct, gc=False):
    """A kept non-X event, or a damaged one: numbers may be strings or null."""

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


class LinkArgs(msgspec.Struct, gc=False):
    """The args the model needs at build time; all other keys are skipped by the parser."""

    correlation: int | None = None
    stream: int | None = None
    device: int | None = None


class LinkColumns(msgspec.Struct, gc=False):
    """``LinkArgs`` with an absent value read as the columns' -1 (a null stays None), so
    a chunk's values go into int64 columns without a pass over them in Python."""

    correlation: int | None = -1
    stream: int | None = -1
    device: int | None = -1


EVENTS = msgspec.json.Decoder(list[FastEvent])
# a scanned chunk's other-phase events straight into ``LooseEvent``: the scanner has
# checked their field types already, so they read as ``FastEvent`` then ``loose_of``
# would (a third of those events' cost on a trace of many launches, each with a flow)
LOOSE_EVENTS = msgspec.json.Decoder(list[LooseEvent])
ONE_EVENT = msgspec.json.Decoder(FastEvent)
EXACT_EVENTS = msgspec.json.Decoder(list[ExactEvent])
LINK_ARGS = msgspec.json.Decoder(LinkArgs)
# a chunk's link args in one call, straight into column values
LINK_COLUMNS = msgspec.json.Decoder(list[LinkColumns])
ANY = msgspec.json.Decoder()


def decode_args(raw: bytes | msgspec.Raw) -> dict[str, Any]:
    """Decode an event's ``args``; ``{}`` when absent or unusable. Integers past 64 bits
    become their text (``io/limits.py``: JSON output is 64-bit)."""
    if not raw:
        return {}
    try:
        value = ANY.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return {}
    if not isinstance(value, dict):
        return {}
    if limits.has_long_int(raw):
        value = limits.fit_ints(value)[0]
    return value


def loose_of(e: FastEvent | ExactEvent | LooseEvent) -> LooseEvent:
    """A kept (non-X) event, detached from the decode buffer."""
    if isinstance(e, LooseEvent):
        return msgspec.structs.replace(e, args=msgspec.Raw(bytes(e.args)))
    ts = e.ts if not isinstance(e.ts, msgspec.Raw) else bytes(e.ts).decode()
    return LooseEvent(ph=e.ph, cat=e.cat, name=e.name, pid=e.pid, tid=e.tid,
                      ts=None if ts != ts else ts, dur=None if e.dur != e.dur else e.dur,
                      id=e.id, bp=e.bp, args=msgspec.Raw(bytes(e.args)))


def _text(v: Any) -> str:
    return v if isinstance(v, str) else ("" if v is None else str(v))


def _num(v: Any) -> float | str | None:
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int) and abs(v) >= 2**53:
        return str(v)  # past a float's exact range (and 1e309 past its range at all)
    if isinstance(v, (int, float)):
        return float(v)
    return v if isinstance(v, str) else None


def coerce(item: Any) -> LooseEvent | None:
    """Best-effort conversion of one generically decoded event (None: not an object)."""
    if not isinstance(item, dict):
        return None
    args = item.get("args")
    fid = item.get("id")
    return LooseEvent(
        ph=_text(item.get("ph")), cat=_text(item.get("cat")), name=_text(item.get("name")),
        pid=thread_id(item.get("pid", 0)), tid=thread_id(item.get("tid", 0)),
        ts=_num(item.get("ts")), dur=_num(item.get("dur")),
        id=thread_id(fid) if fid is not None else None, bp=_text(item.get("bp")),
        args=msgspec.Raw(msgspec.json.encode(args)) if isinstance(args, dict) else msgspec.Raw(b""),
    )
