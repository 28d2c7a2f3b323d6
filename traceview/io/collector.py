"""Chunks of whole events -> the columns of ``io/columns.py``, as the chunks arrive.

One fast path and one reference give the same columns (``tests/test_fastscan.py``):
the compiled scanner (``io/fastscan.py``: no Python object per event), used when it is
built and accepts the chunk, and msgspec's typed decode into ``FastEvent`` structs (the
reference, and the path of every chunk the scanner declines: non-ASCII text, a number it
cannot convert exactly, an odd type). A chunk whose fields have unexpected types is
damaged input, not a third decoder: it is decoded generically and each event converted
alone (``events.coerce``), so one odd event never costs the whole file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from traceview.coerce import INT64, NO_ID, id_or_no_id, int_or_none, thread_id
from traceview.io import fastscan, limits, nsys
from traceview.io.annotations import ANNOTATION_CAT
from traceview.io.columns import ARGS_KEPT_CATS, Columns, IdColumn, LazyArgs, Phases
from traceview.io.events import (
    ANY,
    EVENTS,
    EXACT_EVENTS,
    LINK_ARGS,
    LINK_COLUMNS,
    LOOSE_EVENTS,
    ONE_EVENT,
    ExactEvent,
    FastEvent,
    LooseEvent,
    coerce,
    decode_args,
    loose_of,
)
from traceview.io.exact_time import (
    EXACT_FLOAT_LIMIT_US,
    MISSING,
    or_missing,
    split_ns,
    text_to_ns,
    value_to_ns,
)

Key = tuple[str, str, int | str, int | str]
# a chunk's column this large gets a memory map of its own (``_own_map``)
PART_MAP_BYTES = 1 << 16
_KEY = attrgetter("ph", "cat", "pid", "tid")
_NAME = attrgetter("name")
_TS = attrgetter("ts")
_DUR = attrgetter("dur")
_CORR = attrgetter("correlation")


def _int64_id(v: int | None) -> int:
    """An id as an int64 column value: newer Kineto writes uint64 ids, and one past int64
    is folded to its two's-complement value (equal ids stay equal, which is all a
    link needs); -1 for none or anything else out of range."""
    if v is None or not -2**63 <= v < 2**64:
        return -1
    return v - 2**64 if v >= 2**63 else v
_STREAM = attrgetter("stream")
_DEVICE = attrgetter("device")

# What a non-X event is to the model, from its (ph, cat) alone. Flows and instants are
# most of a trace's non-X events (a flow per launch) and need no object each: flows are
# folded into the (pid, tid, ts) -> id tables as their chunk arrives, instants and the
# ignored phases are counted. Only B/E pairs and M events are kept as ``LooseEvent``
# for ``io/phases.py``, which must read them in time order.
SKIP, FLOW_START, FLOW_END, KEPT, INSTANT, OTHER_PHASE, UNKNOWN_PHASE = range(7)
_COUNTED = {OTHER_PHASE: "other-phase", UNKNOWN_PHASE: "unknown-phase"}


def _kind(ph: str, cat: str) -> int:
    if cat == ANNOTATION_CAT:  # traceview's own tracks (--annotate): not the trace's
        return SKIP
    if ph == "s":
        return FLOW_START
    if ph in ("f", "t"):  # an arrow lands at a step too: rocprof ends its flows with one
        return FLOW_END
    if ph in ("B", "E", "M"):
        return KEPT
    if ph in ("i", "I", "R", "n"):
        return INSTANT
    if ph in ("C", "b", "e", "N", "O", "D"):
        return OTHER_PHASE
    if ph == "X":
        return SKIP
    return UNKNOWN_PHASE


# rocprof writes no category; every event's args say when exactly it ran (``BeginNs``),
# and ``io/rocprof.py`` reads what they are. The args of events without a category are
# kept only where the first chunk holding such events holds that key (a search of that
# one chunk's text, no copy): a Kineto trace has no such events and searches nothing,
# another trace's uncategorised events keep no args.
_EXACT_NS = re.compile(rb'"BeginNs"')


def _flow_id(fid: Any) -> int:
    """A flow's id as the tables hold it (an int in range, as Kineto writes it, is its own)."""
    if type(fid) is not int or not -INT64 <= fid < INT64:
        fid = id_or_no_id(fid)
    return fid


class _FlowId(msgspec.Struct, gc=False):
    """The one field of a flow event the key does not give (the scanner checked its type)."""

    id: int | str | None = None


_FLOW_IDS = msgspec.json.Decoder(list[_FlowId])


class _FlowIntId(msgspec.Struct, gc=False):
    """The same, for the usual chunk: every flow's id an integer (absent: no id)."""

    id: int = NO_ID


_FLOW_INT_IDS = msgspec.json.Decoder(list[_FlowIntId])
_ID = attrgetter("id")


def _slices(blob: bytes, spans: np.ndarray) -> list[bytes]:
    """``blob[a:b]`` for each (a, b) row of ``spans``: a comprehension's slice syntax,
    a fifth cheaper than ``map`` over ``slice`` objects (no slice object per event),
    on the 188,000 args and flows of a 200,000-event trace."""
    return [blob[a:b] for a, b in zip(spans[:, 0].tolist(), spans[:, 1].tolist(), strict=True)]


def _flow_ids(blob: bytes, spans: np.ndarray) -> np.ndarray:
    """The ids of the flow events at ``spans`` as the tables hold them (``_flow_id``), in
    one decode; an id that is not an int64 (text, null, past int64) takes ``_flow_id``
    one by one."""
    joined = b"[" + b",".join(_slices(blob, spans)) + b"]"
    try:
        return np.fromiter(map(_ID, _FLOW_INT_IDS.decode(joined)), np.int64, spans.shape[0])
    except (msgspec.ValidationError, OverflowError):
        ids = _FLOW_IDS.decode(joined)
        return np.fromiter((_flow_id(f.id) for f in ids), np.int64, len(ids))


class _Codes(dict):
    """value -> dense code, assigned on first sight (``map(codes.__getitem__, values)``
    runs in C; only new values call back into Python)."""

    def __missing__(self, key: Any) -> int:
        code = self[key] = len(self)
        return code


class Collector:
    """Turns decoded chunks into columns as they arrive."""

    def __init__(self, path: Path | str) -> None:
        self.path = path
        self.keys: dict[Key, int] = _Codes()
        self.names: dict[str, int] = _Codes()
        self.key_parts: list[np.ndarray] = []
        self.name_parts: list[np.ndarray] = []
        self.ts_parts: list[np.ndarray] = []
        self.dur_parts: list[np.ndarray] = []
        self.link_rows: list[int] = []
        self.link_vals: list[tuple[int, ...]] = []
        self.link_parts: list[tuple[np.ndarray, np.ndarray]] = []  # (rows, (n, 3) values)
        self.args_raw: dict[int, bytes] = {}
        # B/E and M events; flows, instants and ignored phases are folded into ``phases``
        self.others: list[tuple[LooseEvent, int | None]] = []
        self.phases = Phases()
        self.non_x = 0  # every non-X event, kept or folded
        self._thread_ids: dict[int | str, int | str] = {}
        self.rows = 0
        self.malformed = 0
        self.too_deep = 0  # values nested past ``limits.MAX_DEPTH``, replaced by null
        self._bare_args: bool | None = None  # uncategorised events keep args (undecided)
        self._text: bytes | None = None  # the chunk being added

    def chunk(self, text: bytes) -> None:
        """One chunk ``[{...}, ...]``. Nesting deep enough to exhaust the decoder's
        recursion is capped first (``io/limits.py``); a chunk cut inside such a value is
        reported as a cut (``DecodeError``), as any other cut chunk is."""
        try:
            self._chunk(text)
        except RecursionError:
            capped, n = limits.cap_nesting(text, 2)
            if not n:
                raise msgspec.DecodeError("nesting too deep, and cut short") from None
            self._chunk(capped)
            self.too_deep += n

    def _chunk(self, text: bytes) -> None:
        """The scanner's columns, else the reference's."""
        self._text = text  # for ``_keeps_bare_args`` only, while the chunk is added
        try:
            scanned = fastscan.scan(text)
            if scanned is not None and self._add_scanned(text, scanned):
                return
            self._reference(text)
        finally:
            self._text = None

    def _keeps_bare_args(self) -> bool:
        """Whether events without a category keep their args (``_EXACT_NS``): decided at
        the first chunk that holds such events."""
        if self._bare_args is None and any(k[0] == "X" and not k[1] for k in self.keys):
            self._bare_args = self._text is not None and _EXACT_NS.search(self._text) is not None
        return bool(self._bare_args)

    def _reference(self, text: bytes) -> None:
        try:
            events = EVENTS.decode(text)
        except msgspec.ValidationError:
            self._damaged(bytes(text))  # a copy: the events kept must not pin the buffer
            return
        if not events:
            return
        ts = np.fromiter(map(_TS, events), np.float64, len(events))
        if np.nanmax(np.abs(ts), initial=0.0) >= EXACT_FLOAT_LIMIT_US:
            exact = EXACT_EVENTS.decode(text)
            ts_ns = np.asarray([or_missing(text_to_ns(bytes(e.ts)) if e.ts else None)
                                for e in exact], dtype=np.int64)
        else:
            ts_ns = split_ns(ts)
        dur = np.fromiter(map(_DUR, events), np.float64, len(events))
        self._add(events, ts_ns, split_ns(np.clip(dur, -2**61 / 1000, 2**61 / 1000)))

    def _damaged(self, text: bytes) -> None:
        """A chunk with unexpected field types: decoded generically, event by event."""
        items = ANY.decode(text)
        events = []
        for item in items if isinstance(items, list) else []:
            ev = coerce(item)
            if ev is None:
                self.malformed += 1
            else:
                events.append(ev)
        if not events:
            return
        ts_ns = np.asarray([or_missing(value_to_ns(e.ts)) for e in events], dtype=np.int64)
        dur_ns = np.asarray([or_missing(value_to_ns(e.dur)) for e in events], dtype=np.int64)
        self._add(events, ts_ns, dur_ns)

    def _add(self, events: list, ts_ns: np.ndarray, dur_ns: np.ndarray) -> None:
        n = len(events)
        kc = np.fromiter(map(self.keys.__getitem__, map(_KEY, events)), np.int32, n)
        is_x_lut = np.fromiter((k[0] == "X" for k in self.keys), np.bool_, len(self.keys))
        is_x = is_x_lut[kc]
        for i in np.flatnonzero(~is_x).tolist():
            e = events[i]
            v = int(ts_ns[i])
            self._other(e, None if v == MISSING else v)
        xi = np.flatnonzero(is_x)
        if xi.size == 0:
            return
        nc = np.fromiter(map(self.names.__getitem__, map(_NAME, events)), np.int32, n)
        def raw_args(js: np.ndarray) -> tuple[np.ndarray, list[bytes]]:
            every = [bytes(events[j].args) for j in js.tolist()]
            return (np.fromiter(map(bool, every), np.bool_, len(every)),
                    [b for b in every if b])

        self._append_x(kc, nc, ts_ns, dur_ns, xi, raw_args)

    def _thread(self, value: int | str) -> int | str:
        tid = self._thread_ids.get(value)
        if tid is None:
            tid = self._thread_ids[value] = thread_id(value)
        return tid

    def _other(self, e: FastEvent | ExactEvent | LooseEvent, ts: int | None) -> None:
        """One non-X event of the msgspec paths: folded, counted or kept, as ``_add_scanned``
        does a chunk's at once."""
        self.non_x += 1
        kind = _kind(e.ph, e.cat)
        if kind == KEPT:
            self.others.append((loose_of(e), ts))
        elif kind in (FLOW_START, FLOW_END):
            fid = _flow_id(e.id)
            if ts is not None and fid != NO_ID:
                table = self.phases.flow_start if kind == FLOW_START else self.phases.flow_end
                table[(self._thread(e.pid), self._thread(e.tid), ts)] = fid
        elif kind == INSTANT:
            self.phases.instants += 1
        elif kind in _COUNTED:
            counts = self.phases.counts
            counts[_COUNTED[kind]] = counts.get(_COUNTED[kind], 0) + 1

    def _append_x(self, kc: np.ndarray, nc: np.ndarray, ts_ns: np.ndarray, dur_ns: np.ndarray,
                  xi: np.ndarray,
                  raw_args: Callable[[np.ndarray], tuple[np.ndarray, list[bytes]]]) -> None:
        """Append a chunk's X events (``xi``: their places in the chunk; the columns are
        the whole chunk's) and keep the args of those whose category the model reads;
        ``raw_args(js)`` says which of chunk events ``js`` have args, and gives those args'
        raw bytes. Both decode paths end here."""
        if xi.size != kc.size:  # filter the columns, not the events (a new list costs more)
            kc, nc, ts_ns, dur_ns = kc[xi], nc[xi], ts_ns[xi], dur_ns[xi]
        self.key_parts.append(_own_map(kc))
        self.name_parts.append(_own_map(nc))
        self.ts_parts.append(_own_map(ts_ns))
        self.dur_parts.append(_own_map(dur_ns))
        bare = self._keeps_bare_args()
        keep_lut = np.fromiter((k[0] == "X" and (k[1] in ARGS_KEPT_CATS or k[1] in nsys.ARGS_CATS
                                                 or bare and not k[1])
                                for k in self.keys), np.bool_, len(self.keys))
        kept = np.flatnonzero(keep_lut[kc])
        has, blobs = raw_args(xi[kept])
        rows = (kept + self.rows)[has].tolist()
        self.rows += xi.size
        if not rows:
            return
        self.args_raw.update(zip(rows, blobs, strict=True))
        try:  # the whole chunk's links in one decode; an odd one sends it event by event
            links = LINK_COLUMNS.decode(b"[" + b",".join(blobs) + b"]")
        except (msgspec.ValidationError, msgspec.DecodeError):
            for row, b in zip(rows, blobs, strict=True):
                self._link(row, b)
            return
        try:  # absent is -1 already; a null (None) or a value past int64 fails here
            cols = [np.fromiter(map(get, links), np.int64, len(links))
                    for get in (_CORR, _STREAM, _DEVICE)]
        except (TypeError, OverflowError):
            cols = [np.asarray([-1 if v is None else v for v in map(get, links)])
                    for get in (_CORR, _STREAM, _DEVICE)]
        if any(c.dtype != np.int64 for c in cols):  # a value past int64: one by one
            for row, la in zip(rows, links, strict=True):
                vals = (la.correlation, la.stream, la.device)
                if vals != (None, None, None):
                    self._add_link(row, vals)
            return
        # a row whose three values are absent is written -1, the columns' default, too
        self.link_parts.append((np.asarray(rows, np.int64), np.stack(cols, 1)))

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
        # one copy of the chunk, then a bytes slice of it per event (``_slices``): a
        # tenth of the cost of a memoryview slice turned into bytes, and a chunk keeps
        # the args of a hundred thousand events
        blob = text if isinstance(text, bytes) else bytes(text)
        try:  # everything that can fail, before anything changes
            keys = [(fastscan.token_str(view, a, b), fastscan.token_str(view, c, d),
                     fastscan.token_id(view, e, f), fastscan.token_id(view, g, h))
                    for a, b, c, d, e, f, g, h in s.key_spans.tolist()]
            names = fastscan.token_strs(view, s.name_spans.tolist())
            is_x = np.fromiter((k[0] == "X" for k in keys), np.bool_, len(keys))[s.key]
            other = np.flatnonzero(~is_x)
            kinds = np.fromiter((_kind(k[0], k[1]) for k in keys), np.int8, len(keys))
            okind = kinds[s.key[other]]
            kept = other[okind == KEPT]
            spans = s.ev[kept].tolist()
            try:  # the chunk's B/E and M events in one decode
                loose = LOOSE_EVENTS.decode(b"[" + b",".join([view[a:b] for a, b in spans]) + b"]")
            except (msgspec.DecodeError, msgspec.ValidationError):  # each alone, to say which
                loose = [loose_of(ONE_EVENT.decode(view[a:b])) for a, b in spans]
            for e in loose:  # args detached from the joined text
                if e.args:
                    e.args = msgspec.Raw(bytes(e.args))
            others = [(e, None if v == MISSING else v)
                      for e, v in zip(loose, ts_ns[kept].tolist(), strict=True)]
            flows = other[(okind == FLOW_START) | (okind == FLOW_END)]
            fids = _flow_ids(blob, s.ev[flows])
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError):
            return False
        self.others.extend(others)
        self.non_x += other.size
        flowing = (okind == FLOW_START) | (okind == FLOW_END)
        self._fold_flows(keys, s.key[flows], okind[flowing], ts_ns[flows], fids,
                         okind[okind != KEPT])
        key_lut = np.fromiter(map(self.keys.__getitem__, keys), np.int32, len(keys))
        kc = key_lut[s.key]
        xi = np.flatnonzero(is_x)
        if xi.size == 0:
            return True
        name_lut = np.fromiter(map(self.names.__getitem__, names), np.int32, len(names))

        def raw_args(js: np.ndarray) -> tuple[np.ndarray, list[bytes]]:
            spans = s.args[js]
            has = spans[:, 0] >= 0
            return has, _slices(blob, spans[has])

        self._append_x(kc, name_lut[s.name], ts_ns, dur_ns, xi, raw_args)
        return True

    def _fold_flows(self, keys: list[Key], codes: np.ndarray, fk: np.ndarray, ts: np.ndarray,
                    fids: np.ndarray, folded: np.ndarray) -> None:
        """A scanned chunk's flows handed to the tables (``Phases.add_flows``, in file
        order: a later flow at one (pid, tid, ts) replaces an earlier one, as the
        event-by-event fold does), and its instants and ignored phases counted."""
        pids = [self._thread(k[2]) for k in keys]
        tids = [self._thread(k[3]) for k in keys]
        ok = (ts != MISSING) & (fids != NO_ID)
        for kind in (FLOW_START, FLOW_END):
            sel = ok & (fk == kind)
            self.phases.add_flows(pids, tids, codes[sel], ts[sel], fids[sel],
                                  start=kind == FLOW_START)
        self.phases.instants += int(np.count_nonzero(folded == INSTANT))
        counts = self.phases.counts
        firsts = sorted((int(np.argmax(folded == kind)), kind) for kind in _COUNTED
                        if np.any(folded == kind))
        for _, kind in firsts:  # in order of first sight, as the event-by-event fold does
            counts[_COUNTED[kind]] = counts.get(_COUNTED[kind], 0) + int(
                np.count_nonzero(folded == kind))

    def _link(self, row: int, b: bytes) -> None:
        """Keep one row's raw args, and its correlation, stream and device if any."""
        if limits.may_be_deep(b):
            b, n = limits.cap_nesting(b, 0)
            self.too_deep += n
        self.args_raw[row] = b
        vals: tuple[int | None, ...]
        try:
            la = LINK_ARGS.decode(b)
            vals = (la.correlation, la.stream, la.device)
        except msgspec.ValidationError:
            d = decode_args(b)
            vals = tuple(int_or_none(d.get(k)) for k in ("correlation", "stream", "device"))
        except msgspec.DecodeError:
            return
        if vals != (None, None, None):
            self._add_link(row, vals)

    def _add_link(self, row: int, vals: tuple[int | None, ...]) -> None:
        self.link_rows.append(row)
        self.link_vals.append(tuple(_int64_id(v) for v in vals))

    def columns(self) -> Columns:
        """The columns, once: each column's parts are freed as they are copied into it,
        so a column and all of its parts are never alive together (on a 450 MB trace
        that doubling was the load's peak), and the link columns are made after them."""
        n = self.rows
        key = _joined(self.key_parts, n, np.int32)
        name = _joined(self.name_parts, n, np.int32)
        ts = _joined(self.ts_parts, n, np.int64)
        dur = _joined(self.dur_parts, n, np.int64)
        parts = self.link_parts
        if self.link_rows:
            parts.append((np.asarray(self.link_rows, np.int64),
                          np.asarray(self.link_vals, np.int64)))
        # int32 when every id fits: on a cold compile nearly every row is a Python frame
        # with none, and three row-sized int64 columns of -1 were most of the load's peak
        narrow = all(vals.size == 0 or (int(vals.min()) >= -2**31 and int(vals.max()) < 2**31)
                     for _, vals in parts)
        dtype = np.int32 if narrow else np.int64
        # each id column as the rows that have an id (sparse: row-sized columns of -1 for
        # every Python frame were most of the load's peak), rows in order
        rows = np.concatenate([r for r, _ in parts]) if parts else np.zeros(0, np.int64)
        vals = np.concatenate([v for _, v in parts]) if parts else np.zeros((0, 3), np.int64)
        self.link_parts, self.link_rows, self.link_vals = [], [], []
        order = np.argsort(rows, kind="stable")
        rows, vals = rows[order], vals[order].astype(dtype)
        last = np.append(rows[1:] != rows[:-1], True) if rows.size else np.zeros(0, bool)
        rows, vals = rows[last], vals[last]  # a row's last ids, as a dense write kept them
        ids = []
        for k in range(3):
            has = vals[:, k] != -1
            ids.append(IdColumn(n, rows[has], np.ascontiguousarray(vals[has, k]), -1))
        corr, stream, device = ids
        return Columns(key, name, ts, dur, corr, stream, device, LazyArgs(self.args_raw))


def _own_map(a: np.ndarray) -> np.ndarray:
    """A copy of a chunk's column in an anonymous memory map of its own, returned to the
    system when ``columns`` drops it. In the heap (where glibc puts blocks under 32 MB,
    ``io/allocator.py``) the chunks' columns, freed once joined, left holes between the
    args kept meanwhile that the analyses' row-sized arrays could not use: on a 450 MB
    trace the process peaked 40 MiB higher (docs/performance.md)."""
    if a.nbytes < PART_MAP_BYTES:
        return a
    import mmap

    out: np.ndarray = np.frombuffer(mmap.mmap(-1, a.nbytes), a.dtype, a.size)
    out[:] = a
    return out


def _joined(parts: list[np.ndarray], n: int, dtype: type) -> np.ndarray:
    """The parts end to end in one new array, each part dropped from ``parts`` (emptied)
    as soon as it is copied."""
    out: np.ndarray = np.empty(n, dtype)
    parts.reverse()
    at = 0
    while parts:
        part = parts.pop()
        out[at:at + part.size] = part
        at += part.size
    return out
