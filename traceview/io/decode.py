"""Read a Chrome/Kineto trace file into columns of raw events plus its metadata.

Accepts what ``torch.profiler`` writes (``export_chrome_trace``,
``tensorboard_trace_handler``), plain or gzipped (by content, not by name), as a JSON
object with ``traceEvents`` and metadata keys, or a bare array of events. Like
Perfetto's JSON tokenizer, every top-level key other than ``traceEvents`` is kept as
metadata (``deviceProperties``, ``baseTimeNanoseconds``, capture's ``traceview``, ...).

**Streaming.** The file is read (and gunzipped) in pieces (``io/pieces.py``); the event
array is cut at event boundaries into chunks of about a piece each (``io/splitter.py``);
each chunk is read by the compiled
scanner when it is built (``io/fastscan.py``: columns with no Python object per event),
else, or when the scanner declines the chunk, decoded by msgspec into typed structs and
turned into columns at once, then dropped. So neither the whole decompressed text nor
one Python object per event is ever held: a real 450 MB trace decodes in about 1.5 CPU s
with the scanner, 2.7 s without (``docs/json-decoder.md``, ``docs/performance.md``).

**Exact time.** ``ts``/``dur`` are microseconds with three decimals. Below 2**43 us
(101 days of clock) the float split ``floor(x)*1000 + rint((x - floor(x))*1000)`` recovers
the exact ns (``round(x*1000)`` does not everywhere: between 2**42 us and 2**52 ns the
product lands on a half-integer grid). A chunk with a timestamp at or above 2**43 us is
decoded again with ``ts`` as raw text and parsed as a decimal, exactly.

**Damage.** A file cut short (a killed writer; a gzip stream cut short too) keeps every
complete event before the cut and records a ``truncated`` problem. A chunk whose fields
have unexpected types is decoded again permissively, one event at a time, so one odd
event never costs the whole file. Only input with nothing usable raises
``TraceLoadError``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal

import msgspec
import msgspec.structs
import numpy as np

from traceview.errors import TraceLoadError
from traceview.io import fastscan
from traceview.io.pieces import pieces
from traceview.io.splitter import Splitter

EXACT_FLOAT_LIMIT_US = float(2**43)
MISSING = np.iinfo(np.int64).min  # "no usable ts/dur"
NAN = float("nan")
# Event categories whose args the model reads (kept as raw bytes, decoded on access).
ARGS_KEPT_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "cpu_op", "cuda_runtime",
                            "cuda_driver", "user_annotation", "gpu_user_annotation"})


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


# Kineto's phases and categories (libkineto's activity type names, PyTorch's flow and
# trace events). msgspec hands out one shared str per Literal value instead of a new str
# per event, and those hash once: on the real 450 MB trace's chunks (1.7 M events) the
# chunk step took 1.62 s against 1.83 s (medians of 4 alternating rounds; the fastest
# rounds 1.61 / 1.64 s: a small gain on a noisy machine, docs/performance.md). A chunk
# with any other value fails validation and is decoded as before, and so is the rest of
# that file (``_Collector``).
KnownPhase = Literal["X", "i", "I", "f", "s", "t", "M", "B", "E", "b", "e", "n", "C", "P",
                     "O", "N", "D", "R", ""]
KnownCat = Literal[
    "python_function", "cpu_op", "user_annotation", "gpu_user_annotation", "gpu_memcpy",
    "gpu_memset", "kernel", "cuda_runtime", "cuda_driver", "cuda_sync", "external_correlation",
    "cpu_instant_event", "overhead", "cuda_profiler_range", "glow_runtime", "xpu_runtime",
    "xpu_driver", "mtia_runtime", "mtia_ccp_events", "mtia_insight", "hpu_op",
    "privateuse1_runtime", "privateuse1_driver", "collective_comm", "ac2g", "fwdbwd",
    "Trace", "python", "",
]


class KnownEvent(FastEvent, gc=False):
    """``FastEvent`` whose ``ph`` and ``cat`` are Kineto's (shared str objects)."""

    ph: KnownPhase = ""  # type: ignore[assignment]
    cat: KnownCat = ""  # type: ignore[assignment]


class ExactEvent(FastEvent, gc=False):
    """The same, with ``ts`` as its JSON number text (for clocks past 2**43 us)."""

    ts: msgspec.Raw = msgspec.Raw(b"")  # type: ignore[assignment]


class LooseEvent(msgspec.Struct, gc=False):
    """Permissive fallback: numbers may be strings or null."""

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


_KEY = attrgetter("ph", "cat", "pid", "tid")
_NAME = attrgetter("name")
_TS = attrgetter("ts")
_DUR = attrgetter("dur")
_FAST = msgspec.json.Decoder(list[FastEvent])
_ONE = msgspec.json.Decoder(FastEvent)
_KNOWN = msgspec.json.Decoder(list[KnownEvent])
_EXACT = msgspec.json.Decoder(list[ExactEvent])
_LOOSE = msgspec.json.Decoder(list[LooseEvent])
_LINK = msgspec.json.Decoder(LinkArgs)
_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])
_ANY = msgspec.json.Decoder()


class LazyArgs(Mapping):
    """Row -> decoded ``args`` dict, decoded on first access from the kept raw bytes."""

    def __init__(self, raw: dict[int, bytes] | None = None) -> None:
        self._raw: dict[int, bytes] = raw or {}
        self._cache: dict[int, dict[str, Any]] = {}

    def __getitem__(self, row: int) -> dict[str, Any]:
        hit = self._cache.get(row)
        if hit is None:
            hit = self._cache[row] = decode_args(self._raw[row])
        return hit

    def __iter__(self) -> Iterator[int]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def subset(self, rows: dict[int, int]) -> LazyArgs:
        """Renumbered copy: ``rows`` maps old row -> new row (dropped rows absent)."""
        return LazyArgs({rows[r]: b for r, b in self._raw.items() if r in rows})

    def with_items(self, extra: dict[int, bytes]) -> LazyArgs:
        out = LazyArgs(dict(self._raw))
        out._raw.update(extra)
        return out


@dataclass
class Columns:
    """Complete ('X') events as columns, in file order. ``key`` codes index ``keys``,
    tuples ``(ph, cat, pid, tid)``; ``name`` codes index ``names``."""

    key: np.ndarray
    name: np.ndarray
    ts: np.ndarray  # int64 ns, MISSING where absent or unusable
    dur: np.ndarray  # int64 ns, MISSING where absent
    corr: np.ndarray  # int64, -1 when absent
    stream: np.ndarray  # int64, -1 when absent
    device: np.ndarray  # int64, -1 when absent
    args: LazyArgs


@dataclass
class Decoded:
    """What the file held: X events as columns, the rarer phases as events, metadata,
    and problems met while decoding (turned into diagnostics by the model)."""

    path: str
    keys: list[tuple[str, str, int | str, int | str]]
    names: list[str]
    x: Columns
    others: list[tuple[LooseEvent, int | None]]  # (event, ts ns) for every non-X event
    metadata: dict[str, Any]
    problems: list[tuple[str, int, str]] = field(default_factory=list)
    compressed_bytes: int = 0
    decoded_bytes: int = 0


# ------------------------------------------------------------------------ columns


def _split_ns(x: np.ndarray) -> np.ndarray:
    """Float us -> exact int64 ns below 2**43 us; MISSING where NaN/inf."""
    ok = np.isfinite(x)
    safe = np.where(ok, x, 0.0)
    w = np.floor(safe)
    ns = w.astype(np.int64) * 1000 + np.rint((safe - w) * 1000.0).astype(np.int64)
    return np.where(ok, ns, MISSING)


def text_to_ns(text: bytes | str) -> int | None:
    """A JSON number text in us -> exact int ns (None if not a finite number)."""
    try:
        d = Decimal(text.decode() if isinstance(text, bytes) else text.strip())
        if not d.is_finite() or abs(d) >= 2**62 // 1000:
            return None
        return int((d * 1000).to_integral_value())
    except (ArithmeticError, ValueError, UnicodeDecodeError):  # InvalidOperation, Overflow
        return None


def value_to_ns(value: float | str | bytes | None) -> int | None:
    """One loosely typed us value -> int ns (exact for text; float split for floats)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (str, bytes)):
        return text_to_ns(value)
    if value != value or value in (float("inf"), float("-inf")):
        return None
    if abs(value) >= 2**62 / 1000:
        return None
    return int(_split_ns(np.asarray([float(value)]))[0])


class _Codes(dict):
    """value -> dense code, assigned on first sight (``map(codes.__getitem__, values)``
    runs in C; only new values call back into Python)."""

    def __missing__(self, key: Any) -> int:
        code = self[key] = len(self)
        return code


class _Collector:
    """Turns decoded chunks into columns as they arrive."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.keys: dict[tuple, int] = _Codes()
        self.names: dict[str, int] = _Codes()
        self.key_parts: list[np.ndarray] = []
        self.name_parts: list[np.ndarray] = []
        self.ts_parts: list[np.ndarray] = []
        self.dur_parts: list[np.ndarray] = []
        self.link_rows: list[int] = []
        self.link_vals: list[tuple[int, int, int]] = []
        self.args_raw: dict[int, bytes] = {}
        self.others: list[tuple[LooseEvent, int | None]] = []
        self.rows = 0
        self.malformed = 0
        self.known = True  # Kineto's phases and categories so far (``KnownEvent``)

    def chunk(self, text: bytes) -> None:
        scanned = fastscan.scan(text)
        if scanned is not None and self._add_scanned(text, scanned):
            return
        events = None
        if self.known:
            try:
                events = _KNOWN.decode(text)
            except msgspec.ValidationError:  # another phase or category, or a loose field
                self.known = False
        if events is None:
            try:
                events = _FAST.decode(text)
            except msgspec.ValidationError:
                self._loose(bytes(text))  # a copy: the events kept must not pin the buffer
                return
        if not events:
            return
        ts = np.fromiter(map(_TS, events), np.float64, len(events))
        if np.nanmax(np.abs(ts), initial=0.0) >= EXACT_FLOAT_LIMIT_US:
            exact = _EXACT.decode(text)
            ts_ns = np.asarray([_or_missing(text_to_ns(bytes(e.ts)) if e.ts else None)
                                for e in exact], dtype=np.int64)
        else:
            ts_ns = _split_ns(ts)
        dur = np.fromiter(map(_DUR, events), np.float64, len(events))
        self._add(events, ts_ns, _split_ns(np.clip(dur, -2**61 / 1000, 2**61 / 1000)))

    def _add(self, events: list, ts_ns: np.ndarray, dur_ns: np.ndarray) -> None:
        n = len(events)
        kc = np.fromiter(map(self.keys.__getitem__, map(_KEY, events)), np.int32, n)
        is_x_lut = np.fromiter((k[0] == "X" for k in self.keys), np.bool_, len(self.keys))
        is_x = is_x_lut[kc]
        for i in np.flatnonzero(~is_x).tolist():
            e = events[i]
            v = int(ts_ns[i])
            self.others.append((_loose_of(e), None if v == MISSING else v))
        xi = np.flatnonzero(is_x)
        if xi.size == 0:
            return
        nc = np.fromiter(map(self.names.__getitem__, map(_NAME, events)), np.int32, n)
        self._append_x(kc, nc, ts_ns, dur_ns, xi, lambda j: bytes(events[j].args))

    def _append_x(self, kc: np.ndarray, nc: np.ndarray, ts_ns: np.ndarray, dur_ns: np.ndarray,
                  xi: np.ndarray, raw_args) -> None:
        """Append a chunk's X events (``xi``: their places in the chunk; the columns are
        the whole chunk's) and keep the args of those whose category the model reads;
        ``raw_args(j)`` is chunk event ``j``'s raw args (empty when absent). Both decode
        paths end here."""
        if xi.size != kc.size:  # filter the columns, not the events (a new list costs more)
            kc, nc, ts_ns, dur_ns = kc[xi], nc[xi], ts_ns[xi], dur_ns[xi]
        self.key_parts.append(kc)
        self.name_parts.append(nc)
        self.ts_parts.append(ts_ns)
        self.dur_parts.append(dur_ns)
        keep_lut = np.fromiter((k[0] == "X" and k[1] in ARGS_KEPT_CATS for k in self.keys),
                               np.bool_, len(self.keys))
        base = self.rows
        for i in np.flatnonzero(keep_lut[kc]).tolist():
            raw = raw_args(int(xi[i]))
            if raw:
                self._link(base + i, raw)
        self.rows += xi.size

    def _add_scanned(self, text: bytes, s: fastscan.Scanned) -> bool:
        """``_add`` for a chunk the compiled scanner read: the same codes, columns, kept
        args and other-phase events, in the same order. False (nothing changed) when a
        distinct key, name or other-phase event does not decode, so the caller decodes
        the chunk the msgspec way."""
        n = s.key.size
        if n == 0:
            return True
        view = memoryview(text)
        ts_ns, dur_ns = s.ts, s.dur
        try:  # everything that can fail, before anything changes
            keys = [(_token_str(view, a, b), _token_str(view, c, d), _token_id(view, e, f),
                     _token_id(view, g, h)) for a, b, c, d, e, f, g, h in s.key_spans.tolist()]
            names = [_token_str(view, a, b) for a, b in s.name_spans.tolist()]
            is_x = np.fromiter((k[0] == "X" for k in keys), np.bool_, len(keys))[s.key]
            others = []
            for i in np.flatnonzero(~is_x).tolist():
                a, b = s.ev[i].tolist()
                v = int(ts_ns[i])
                others.append((_loose_of(_ONE.decode(view[a:b])), None if v == MISSING else v))
        except (msgspec.DecodeError, ValueError):
            return False
        self.others.extend(others)
        key_lut = np.fromiter(map(self.keys.__getitem__, keys), np.int32, len(keys))
        kc = key_lut[s.key]
        xi = np.flatnonzero(is_x)
        if xi.size == 0:
            return True
        name_lut = np.fromiter(map(self.names.__getitem__, names), np.int32, len(names))

        def raw_args(j: int) -> bytes:
            a, b = s.args[j].tolist()
            return bytes(view[a:b]) if a >= 0 else b""

        self._append_x(kc, name_lut[s.name], ts_ns, dur_ns, xi, raw_args)
        return True

    def _link(self, row: int, b: bytes) -> None:
        """Keep one row's raw args, and its correlation, stream and device if any."""
        self.args_raw[row] = b
        try:
            la = _LINK.decode(b)
            vals = (la.correlation, la.stream, la.device)
        except msgspec.ValidationError:
            d = decode_args(b)
            vals = tuple(int_or_none(d.get(k)) for k in ("correlation", "stream", "device"))
        except msgspec.DecodeError:
            return
        if vals != (None, None, None):
            self.link_rows.append(row)
            self.link_vals.append(tuple(-1 if v is None or not -2**63 <= v < 2**63 else v
                                        for v in vals))

    def _loose(self, text: bytes) -> None:
        """A chunk with unexpected field types: permissive structs, then event by event."""
        try:
            events = _LOOSE.decode(text)
        except msgspec.ValidationError:
            items = _ANY.decode(text)
            events = []
            for item in items if isinstance(items, list) else []:
                ev = _coerce(item)
                if ev is None:
                    self.malformed += 1
                else:
                    events.append(ev)
        if not events:
            return
        ts_ns = np.asarray([_or_missing(value_to_ns(e.ts)) for e in events], dtype=np.int64)
        dur_ns = np.asarray([_or_missing(value_to_ns(e.dur)) for e in events], dtype=np.int64)
        self._add(events, ts_ns, dur_ns)

    def columns(self) -> Columns:
        def cat(parts: list[np.ndarray], dtype) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, dtype)

        n = self.rows
        corr = np.full(n, -1, np.int64)
        stream = np.full(n, -1, np.int64)
        device = np.full(n, -1, np.int64)
        if self.link_rows:
            rows = np.asarray(self.link_rows, np.int64)
            vals = np.asarray(self.link_vals, np.int64)
            corr[rows], stream[rows], device[rows] = vals[:, 0], vals[:, 1], vals[:, 2]
        return Columns(cat(self.key_parts, np.int32), cat(self.name_parts, np.int32),
                       cat(self.ts_parts, np.int64), cat(self.dur_parts, np.int64),
                       corr, stream, device, LazyArgs(self.args_raw))


def _token_str(view: memoryview, a: int, b: int) -> str:
    """A string token of a scanned chunk (with its quotes; ``a < 0``: absent, "")."""
    if a < 0:
        return ""
    raw = bytes(view[a:b])
    if b"\\" not in raw:
        return str(raw[1:-1], "ascii")  # the scanner passes ASCII only
    value = _ANY.decode(raw)
    if not isinstance(value, str):
        raise ValueError("not a string")
    return value


def _token_id(view: memoryview, a: int, b: int) -> int | str:
    """A pid/tid token: a string, or an integer (absent: 0, as ``FastEvent``'s default)."""
    if a < 0:
        return 0
    if view[a] == 0x22:  # '"'
        return _token_str(view, a, b)
    return int(str(view[a:b], "ascii"))


def _or_missing(v: int | None) -> int:
    return MISSING if v is None or abs(v) > 2**62 else v


def int_or_none(v: Any) -> int | None:
    """An id or count as an int within int64 (integral floats and integer text too);
    None for anything else. The one place ids are coerced."""
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
        return v if -2**63 <= v < 2**63 else None
    return None


def _loose_of(e: Any) -> LooseEvent:
    """A kept (non-X) event, detached from the decode buffer."""
    if isinstance(e, LooseEvent):
        return msgspec.structs.replace(e, args=msgspec.Raw(bytes(e.args)))
    ts = e.ts if not isinstance(e.ts, msgspec.Raw) else bytes(e.ts).decode()
    return LooseEvent(ph=e.ph, cat=e.cat, name=e.name, pid=e.pid, tid=e.tid,
                      ts=None if ts != ts else ts, dur=None if e.dur != e.dur else e.dur,
                      id=e.id, bp=e.bp, args=msgspec.Raw(bytes(e.args)))


def _coerce(item: Any) -> LooseEvent | None:
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
        return v if isinstance(v, str) else None

    args = item.get("args")
    fid = item.get("id")
    return LooseEvent(
        ph=text(item.get("ph")), cat=text(item.get("cat")), name=text(item.get("name")),
        pid=ident(item.get("pid", 0)), tid=ident(item.get("tid", 0)),
        ts=num(item.get("ts")), dur=num(item.get("dur")),
        id=ident(fid) if fid is not None else None, bp=text(item.get("bp")),
        args=msgspec.Raw(msgspec.json.encode(args)) if isinstance(args, dict) else msgspec.Raw(b""),
    )


def decode_args(raw: bytes | msgspec.Raw) -> dict[str, Any]:
    """Decode an event's ``args``; ``{}`` when absent or unusable."""
    if not raw:
        return {}
    try:
        value = _ANY.decode(raw)
    except msgspec.DecodeError:
        return {}
    return value if isinstance(value, dict) else {}


# ------------------------------------------------------------------------ entry point


def decode(path: str | os.PathLike[str], progress=None) -> Decoded:
    """Decode a trace file; raise ``TraceLoadError`` only when nothing usable is there.

    ``progress``, if given, is called with the count of decompressed bytes so far.
    """
    p = Path(path)
    try:
        compressed = p.stat().st_size
    except FileNotFoundError:
        raise TraceLoadError(p, "no such file") from None
    except OSError as exc:
        raise TraceLoadError(p, f"cannot read: {exc.strerror or exc}") from None
    if p.is_dir():
        raise TraceLoadError(p, "is a directory, not a trace file")
    from traceview.io.memory import check_memory

    check_memory(p, compressed)
    counter = [0]
    cut: list[int] = []
    collector = _Collector(p)
    splitter = Splitter(p, collector.chunk)
    text = pieces(p, counter, cut)
    for piece in text:
        splitter.push(piece)
        if progress is not None:
            progress(counter[0])
    splitter.finish()

    problems: list[tuple[str, int, str]] = []
    if cut:  # the damage as it is: the compressed stream is cut; the JSON only follows
        where = (f"all {cut[0]} of the file's bytes" if cut[0] == compressed
                 else f"{cut[0]} of the file's {compressed} bytes")
        whole = "" if splitter.truncated else "; the text ends where an event ends"
        problems.append(("compressed-stream-cut", 1,
                         f"the compressed stream ends after {where} before its end (the "
                         "file was cut short: a killed writer or an incomplete copy?): "
                         f"{counter[0]} bytes of text read from it{whole}; what the rest "
                         "held is unknown, so nothing is concluded from what is missing"))
    if splitter.truncated:
        problems.append(("truncated", 1, ("the text read ends mid-JSON" if cut else
                                          "the file ends mid-JSON (a killed writer?)")
                         + ": kept every complete event before the cut, dropped the last "
                         f"{splitter.truncated_bytes} of {counter[0]} bytes"))
    if collector.malformed:
        problems.append(("event-malformed", collector.malformed,
                         "events that are not objects or have unusable fields"))
    metadata: dict[str, Any] = {}
    for raw in splitter.meta_raw:
        try:
            top = _TOP.decode(raw)
        except msgspec.DecodeError:
            continue
        for key, value in top.items():
            if key == "traceEvents":
                continue
            try:
                metadata[key] = _ANY.decode(value)
            except msgspec.DecodeError:
                problems.append(("metadata-undecodable", 1, f"top-level key {key!r}"))
    x = collector.columns()
    if x.key.size == 0 and not collector.others and not metadata:
        if splitter.truncated:
            raise TraceLoadError(p, "truncated before the first complete event")
        raise TraceLoadError(p, "the trace holds no events")
    keys = [None] * len(collector.keys)
    for k, v in collector.keys.items():
        keys[v] = k
    names = [""] * len(collector.names)
    for k, v in collector.names.items():
        names[v] = k
    return Decoded(path=str(p), keys=keys, names=names, x=x, others=collector.others,
                   metadata=metadata, problems=problems, compressed_bytes=compressed,
                   decoded_bytes=counter[0])
