"""Which JSON decoder should traceview's loader use? Measure it.

    # make the inputs (see make_large_trace.py)
    python benchmarks/make_large_trace.py --mb 450 --out /tmp/tv/big450.json
    python benchmarks/make_large_trace.py --mb 450 --out /tmp/tv/big450.json.gz
    # time every method, each run in a fresh subprocess, order alternating, medians
    python benchmarks/json_decoders.py bench /tmp/tv/big450.json /tmp/tv/big450.json.gz --reps 3
    # columns identical across methods (exact int ns) + decimal-text exactness of ts/dur
    python benchmarks/json_decoders.py verify fixtures/*.json.gz

Every method goes from the file on disk (plain or gzip) to the same columns:
ph, cat, name, pid, tid, ts_ns, dur_ns (int64 ns, with a has-dur mask) and, for
kernel / cuda_runtime / cuda_driver / cpu_op events, args.correlation, args.stream,
args.device and args["External id"] (int64, -1 when absent) with the event index.
Wall time is measured inside the child from before the file is opened to the last
column built; peak RSS is the child's ``ru_maxrss`` (so it includes the interpreter and
numpy/msgspec/orjson imports: see the ``baseline`` row). A digest of the columns,
computed after the clock stops, must be the same for every method.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import queue
import re
import resource
import statistics
import subprocess
import sys
import threading
import time
import zlib
from functools import partial
from operator import attrgetter, methodcaller
from pathlib import Path

import msgspec
import numpy as np
import orjson

ARG_CATS = ("kernel", "cuda_runtime", "cuda_driver", "cpu_op")
ARG_CATS_SET = frozenset(ARG_CATS)
NAN = float("nan")


# --------------------------------------------------------------------------- input


def read_doc(path: Path) -> bytes:
    """Whole decompressed document. gzip: one zlib call sized by the gzip trailer.

    ``zlib.decompress(data, 31, ISIZE)`` is ~3.5x faster than ``gzip.decompress`` and
    does not double the peak (gzip.decompress builds the output in pieces and joins).
    ISIZE is the size mod 2**32, only a hint: zlib grows the buffer when it is short.
    (It reads only the first gzip member; a loader must check ``unused_data``.)
    """
    data = path.read_bytes()
    if data[:2] != b"\x1f\x8b":
        return data
    return zlib.decompress(data, 31, int.from_bytes(data[-4:], "little"))


PIECE = 8 << 20  # bytes per decompressed piece in the streaming methods


def iter_pieces(path: Path, piece: int = 0):
    """Yield the decompressed document in pieces of at most ``piece`` bytes (plain or gzip)."""
    piece = piece or PIECE
    with open(path, "rb") as f:
        magic = f.read(2)
        f.seek(0)
        if magic != b"\x1f\x8b":
            while b := f.read(piece):
                yield b
            return
        d = zlib.decompressobj(31)
        while c := f.read(min(piece, 1 << 20)):
            while c:
                out = d.decompress(c, piece)
                if out:
                    yield out
                if d.eof:  # end of a gzip member: the rest may be another member
                    c = d.unused_data
                    d = zlib.decompressobj(31)
                else:
                    c = d.unconsumed_tail
        out = d.flush()
        if out:
            yield out


def threaded(gen, depth: int = 2):
    """Run a piece generator on a thread (zlib and file reads release the GIL)."""
    q: queue.Queue = queue.Queue(depth)
    END = object()
    error: list[BaseException] = []

    def run():
        try:
            for x in gen:
                q.put(x)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the consumer, never a silent truncation
            error.append(exc)
        finally:
            q.put(END)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    while True:
        x = q.get()
        if x is END:
            if error:
                raise error[0]
            return
        yield x


# --------------------------------------------------------------------------- msgspec types


class Event(msgspec.Struct):
    """(b) as specified: args kept raw and decoded lazily."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float | str | None = None
    dur: float | str | None = None
    id: int | str | None = None
    bp: str = ""
    args: msgspec.Raw = msgspec.Raw(b"")  # `msgspec.Raw | None` is accepted but never matches


class FastEvent(msgspec.Struct, gc=False):
    """(c): NaN defaults so ts/dur go straight into float64 arrays."""

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


class Args(msgspec.Struct, gc=False):
    """The few args the model needs; all other keys are skipped by the parser."""

    correlation: int = -1
    stream: int = -1
    device: int = -1
    external_id: int = msgspec.field(name="External id", default=-1)


TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])
EVENTS = msgspec.json.Decoder(list[Event])


class ExactTsEvent(msgspec.Struct, gc=False):
    """FastEvent with ``ts`` kept as its JSON number text, for exact ns at any magnitude."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: msgspec.Raw = msgspec.Raw(b"")
    dur: float = NAN
    id: int | str | None = None
    bp: str = ""
    args: msgspec.Raw = msgspec.Raw(b"")


FAST_EVENTS = msgspec.json.Decoder(list[FastEvent])
EXACT_EVENTS = msgspec.json.Decoder(list[ExactTsEvent])
MISSING_NS = np.iinfo(np.int64).min
ARGS = msgspec.json.Decoder(Args)
ANY = msgspec.json.Decoder()
ATTR = {k: attrgetter(k) for k in ("ph", "cat", "name", "pid", "tid")}


# --------------------------------------------------------------------------- helpers


def to_ns(values) -> tuple[np.ndarray, np.ndarray]:
    """float us (None/NaN = absent) -> (int64 ns, present mask)."""
    x = np.array(values, dtype=np.float64)  # None -> nan
    has = ~np.isnan(x)
    x[~has] = 0.0
    return np.rint(x * 1000.0).astype(np.int64), has


def to_ns_split(x: np.ndarray) -> np.ndarray:
    """Exact ns for every float us below 2**43 (rint(x*1000) is not, in [2**42, 2**52/1000)).

    x = fl(d/1000) is within 2**-11 us of d/1000 there; floor(x) and x - floor(x) are
    exact, and the fractional part times 1000 is within 0.49 of the ns remainder.
    """
    w = np.floor(x)
    return w.astype(np.int64) * 1000 + np.rint((x - w) * 1000.0).astype(np.int64)


def raw_ts_ns(raws) -> np.ndarray:
    """Exact int64 ns from JSON number texts (``msgspec.Raw``); MISSING_NS where absent.

    Fast path: every value has exactly 3 decimals (what Kineto writes): drop the dots and
    let numpy parse integers. Otherwise each value goes through ``Decimal``.
    """
    txt = b",".join(raws)
    parts = txt.split(b",")
    if all(len(x) > 4 and x[-4] == 46 for x in parts):  # 46 == ord(".")
        try:
            return np.array(txt.replace(b".", b"").split(b","), dtype=np.int64)
        except ValueError:
            pass
    from decimal import Decimal

    return np.array(
        [int((Decimal(x.decode()) * 1000).to_integral_value()) if x else MISSING_NS for x in parts],
        dtype=np.int64,
    )


def arg_arrays(idx, corr, stream, dev, ext) -> dict:
    return {
        "arg_idx": np.array(idx, dtype=np.int64),
        "correlation": np.array(corr, dtype=np.int64),
        "stream": np.array(stream, dtype=np.int64),
        "device": np.array(dev, dtype=np.int64),
        "external_id": np.array(ext, dtype=np.int64),
    }


def dict_args(a: dict | None) -> tuple[int, int, int, int]:
    if not a:
        return -1, -1, -1, -1
    return (
        a.get("correlation", -1),
        a.get("stream", -1),
        a.get("device", -1),
        a.get("External id", -1),
    )


def struct_args(raw) -> tuple[int, int, int, int]:
    if not raw:
        return -1, -1, -1, -1
    try:
        a = ARGS.decode(raw)
    except msgspec.ValidationError:  # odd types: generic decode, same result
        return dict_args(ANY.decode(raw))
    return a.correlation, a.stream, a.device, a.external_id


def finish_lists(ph, cat, name, pid, tid, ts, dur, args) -> dict:
    ts_ns, has_ts = to_ns(ts)
    dur_ns, has_dur = to_ns(dur)
    return {
        "ph": ph,
        "cat": cat,
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts_ns": ts_ns,
        "has_ts": has_ts,
        "dur_ns": dur_ns,
        "has_dur": has_dur,
        **args,
    }


# --------------------------------------------------------------------------- methods


def m_baseline(path: Path) -> dict:
    return {}


def m_read(path: Path) -> dict:
    doc = read_doc(path)
    return {"bytes": len(doc)}


def m_gzip_module(path: Path) -> dict:
    import gzip

    data = path.read_bytes()
    doc = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    return {"bytes": len(doc)}


def _orjson_loop(events: list) -> dict:
    ph, cat, name, pid, tid, ts, dur = [], [], [], [], [], [], []
    idx, corr, stream, dev, ext = [], [], [], [], []
    for i, e in enumerate(events):
        c = e.get("cat", "")
        ph.append(e.get("ph", ""))
        cat.append(c)
        name.append(e.get("name", ""))
        pid.append(e.get("pid", 0))
        tid.append(e.get("tid", 0))
        ts.append(e.get("ts"))
        dur.append(e.get("dur"))
        if c in ARG_CATS_SET:
            a, b, d, x = dict_args(e.get("args"))
            idx.append(i), corr.append(a), stream.append(b), dev.append(d), ext.append(x)
    return finish_lists(ph, cat, name, pid, tid, ts, dur, arg_arrays(idx, corr, stream, dev, ext))


def m_orjson(path: Path) -> dict:
    """(a) orjson.loads of the whole document, then one Python loop."""
    doc = read_doc(path)
    top = orjson.loads(doc)
    del doc
    return _orjson_loop(top["traceEvents"])


def m_orjson_gcoff(path: Path) -> dict:
    """(a) with the cyclic GC off during decode + extraction."""
    gc.disable()
    try:
        return m_orjson(path)
    finally:
        gc.enable()


def m_orjson_fast(path: Path) -> dict:
    """(c) orjson, GC off, columns by C-level map(methodcaller(get)) instead of a loop."""
    gc.disable()
    try:
        doc = read_doc(path)
        top = orjson.loads(doc)
        del doc
        events = top["traceEvents"]
        cols = {
            k: list(map(methodcaller("get", k, dflt), events))
            for k, dflt in (("ph", ""), ("cat", ""), ("name", ""), ("pid", 0), ("tid", 0))
        }
        ts = list(map(methodcaller("get", "ts"), events))
        dur = list(map(methodcaller("get", "dur"), events))
        idx, corr, stream, dev, ext = [], [], [], [], []
        for i, c in enumerate(cols["cat"]):
            if c in ARG_CATS_SET:
                a, b, d, x = dict_args(events[i].get("args"))
                idx.append(i), corr.append(a), stream.append(b), dev.append(d), ext.append(x)
        return finish_lists(
            cols["ph"],
            cols["cat"],
            cols["name"],
            cols["pid"],
            cols["tid"],
            ts,
            dur,
            arg_arrays(idx, corr, stream, dev, ext),
        )
    finally:
        gc.enable()


def m_msgspec(path: Path) -> dict:
    """(b) top as dict[str, Raw], traceEvents as list[Event], args lazily to dict, loop."""
    doc = read_doc(path)
    top = msgspec.json.decode(doc, type=dict[str, msgspec.Raw])
    events = msgspec.json.decode(top.pop("traceEvents"), type=list[Event])
    meta = {k: msgspec.json.decode(v) for k, v in top.items()}
    del top, doc
    ph, cat, name, pid, tid, ts, dur = [], [], [], [], [], [], []
    idx, corr, stream, dev, ext = [], [], [], [], []
    for i, e in enumerate(events):
        c = e.cat
        ph.append(e.ph)
        cat.append(c)
        name.append(e.name)
        pid.append(e.pid)
        tid.append(e.tid)
        ts.append(e.ts)
        dur.append(e.dur)
        if c in ARG_CATS_SET:
            a, b, d, x = dict_args(msgspec.json.decode(e.args) if e.args else None)
            idx.append(i), corr.append(a), stream.append(b), dev.append(d), ext.append(x)
    out = finish_lists(ph, cat, name, pid, tid, ts, dur, arg_arrays(idx, corr, stream, dev, ext))
    out["meta_keys"] = len(meta)
    return out


def m_msgspec_fast(path: Path) -> dict:
    """(c) reused Decoders, gc=False struct with NaN defaults, Args struct for the
    lazily decoded args, columns by list comprehensions + np.fromiter."""
    doc = read_doc(path)
    top = TOP.decode(doc)
    events = FAST_EVENTS.decode(top.pop("traceEvents"))
    meta = {k: ANY.decode(v) for k, v in top.items()}
    del top, doc
    n = len(events)
    ph = [e.ph for e in events]
    cat = [e.cat for e in events]
    name = [e.name for e in events]
    pid = [e.pid for e in events]
    tid = [e.tid for e in events]
    ts = np.fromiter(map(attrgetter("ts"), events), np.float64, n)
    dur = np.fromiter(map(attrgetter("dur"), events), np.float64, n)
    idx, corr, stream, dev, ext = [], [], [], [], []
    for i, c in enumerate(cat):
        if c in ARG_CATS_SET:
            a, b, d, x = struct_args(events[i].args)
            idx.append(i), corr.append(a), stream.append(b), dev.append(d), ext.append(x)
    out = finish_lists(ph, cat, name, pid, tid, ts, dur, arg_arrays(idx, corr, stream, dev, ext))
    out["meta_keys"] = len(meta)
    return out


# ---- streaming: bounded memory, dictionary-encoded string columns ----------------------

_TE_RE = re.compile(rb'"traceEvents"\s*:\s*\[')
_WS = b" \t\r\n"


class Codes(dict):
    """value -> dense code, assigning new codes on first sight (map(d.__getitem__, xs))."""

    def __missing__(self, key):
        code = self[key] = len(self)
        return code


def iter_event_lists(
    pieces,
    decode,
    meta_raw: list[bytes],
    loads_any=ANY.decode,
    bad=msgspec.DecodeError,
    fatal=msgspec.ValidationError,
):
    """Decode a stream of document pieces into lists of events, one piece at a time.

    The buffer always starts with ``[``. After each piece is appended, the last
    ``}`` followed by ``,`` is turned into ``}]`` and the buffer up to there is decoded
    as one JSON array. A cut that falls inside a string or a nested object leaves the
    array invalid (an unterminated string or object), msgspec rejects it, the comma is
    put back and the previous candidate is tried; so the split is always at an event
    boundary, whatever the layout. Top-level keys around ``traceEvents`` are appended
    to ``meta_raw`` as small JSON objects. ``decode`` turns a buffer holding a JSON
    array into a list of events; ``bad`` is its syntax error, ``fatal`` (a subclass
    raised for valid JSON of the wrong shape) is passed through.
    """
    pieces = iter(pieces)
    buf = bytearray()
    # Header: up to the traceEvents array (or a bare array).
    for p in pieces:
        buf += p
        s = buf.lstrip(_WS)
        if s[:1] == b"[":
            buf = bytearray(s)
            break
        start = 0
        found = False
        while (m := _TE_RE.search(buf, start)) is not None:
            head = bytes(buf[: m.start()]) + b'"traceEvents":0}'
            try:  # top-level key iff the header closes into a valid object
                loads_any(head)
            except bad:
                start = m.end()
                continue
            meta_raw.append(head)
            buf = bytearray(b"[") + buf[m.end() :]
            found = True
            break
        if found:
            break
    else:
        raise ValueError("no traceEvents array found")
    # Events.
    for p in pieces:
        buf += p
        hi = len(buf)
        while True:
            j = buf.rfind(b"}", 0, hi)
            if j < 0:
                break  # no whole event yet: read more
            k = j + 1
            n = len(buf)
            while k < n and buf[k] in _WS:
                k += 1
            if k >= n or buf[k] != 44:  # not followed by ','
                hi = j
                continue
            buf[k] = 93  # ',' -> ']'
            try:
                events = decode(memoryview(buf)[: k + 1])
            except fatal:
                raise
            except bad:
                buf[k] = 44
                hi = j
                continue
            yield events
            del events  # the caller is done with it: free it now, not at the next decode
            buf = bytearray(b"[") + buf[k + 1 :]
            break
    # End of input: the buffer holds the last events, ']' and the trailer.
    hi = len(buf)
    while True:
        j = buf.rfind(b"]", 0, hi)
        if j < 0:
            raise ValueError("traceEvents array not closed")
        trailer = bytes(buf[j + 1 :]).strip(_WS)
        tail_meta = None
        if trailer[:1] == b",":
            tail_meta = b"{" + trailer[1:]
            try:
                loads_any(tail_meta)
            except bad:
                hi = j
                continue
        elif trailer not in (b"", b"}"):
            hi = j
            continue
        try:
            events = decode(memoryview(buf)[: j + 1])
        except fatal:
            raise
        except bad:
            hi = j
            continue
        if tail_meta:
            meta_raw.append(tail_meta)
        yield events
        return


def m_msgspec_stream(
    path: Path, thread: bool = False, piece: int = 0, exact_ts: bool = False
) -> dict:
    """(c) streaming: decompress/read in 8 MB pieces, decode ~8 MB chunks of whole
    events with list[FastEvent], turn each chunk into columns at once and drop it.
    Strings become dictionary codes: ``name`` on its own, and (ph, cat, pid, tid) as one
    composite key (one dict lookup instead of four; split into per-column codes at the
    end with small lookup tables). Memory: columns + a few chunks, not the document."""
    pieces = iter_pieces(path, piece)
    if thread:
        pieces = threaded(pieces)
    meta_raw: list[bytes] = []
    names, keys = Codes(), Codes()
    get_name, get_key = names.__getitem__, keys.__getitem__
    key_of = attrgetter("ph", "cat", "pid", "tid")
    name_of, ts_of, dur_of = attrgetter("name"), attrgetter("ts"), attrgetter("dur")
    name_parts, key_parts, ts_parts, dur_parts = [], [], [], []
    idx, corr, stream, dev, ext = [], [], [], [], []
    base = 0
    decoder = EXACT_EVENTS if exact_ts else FAST_EVENTS
    for events in iter_event_lists(pieces, decoder.decode, meta_raw):
        n = len(events)
        if not n:
            continue
        kc = np.fromiter(map(get_key, map(key_of, events)), np.int32, n)
        key_parts.append(kc)
        name_parts.append(np.fromiter(map(get_name, map(name_of, events)), np.int32, n))
        if exact_ts:
            ts_parts.append(raw_ts_ns(map(ts_of, events)))
        else:
            ts_parts.append(np.fromiter(map(ts_of, events), np.float64, n))
        dur_parts.append(np.fromiter(map(dur_of, events), np.float64, n))
        wants_args = np.fromiter((k[1] in ARG_CATS_SET for k in keys), np.bool_, len(keys))
        for i in np.flatnonzero(wants_args[kc]).tolist():
            a, b, d, x = struct_args(events[i].args)
            idx.append(base + i), corr.append(a), stream.append(b), dev.append(d), ext.append(x)
        base += n
        del events
    meta = {}
    for raw in meta_raw:
        for k, v in TOP.decode(raw).items():
            if k != "traceEvents":
                meta[k] = ANY.decode(v)
    out = {}
    kc = np.concatenate(key_parts) if key_parts else np.zeros(0, np.int32)
    for pos, col in enumerate(("ph", "cat", "pid", "tid")):
        values = Codes()
        lut = np.array([values[k[pos]] for k in keys], dtype=np.int32)
        out[col + "_codes"] = lut[kc] if len(lut) else kc
        out[col + "_values"] = list(values)
    out["name_codes"] = np.concatenate(name_parts) if name_parts else np.zeros(0, np.int32)
    out["name_values"] = list(names)
    ts = np.concatenate(ts_parts) if ts_parts else np.zeros(0)
    dur = np.concatenate(dur_parts) if dur_parts else np.zeros(0)
    if exact_ts:
        out["ts_ns"], out["has_ts"] = ts.astype(np.int64), ts != MISSING_NS
    else:
        out["ts_ns"], out["has_ts"] = to_ns(ts)
    out["dur_ns"], out["has_dur"] = to_ns(dur)
    out.update(arg_arrays(idx, corr, stream, dev, ext))
    out["meta_keys"] = len(meta)
    return out


def m_msgspec_stream_exact(path: Path) -> dict:
    """(c) msgspec_stream with ts decoded as msgspec.Raw and parsed from its decimal text:
    exact ns at any magnitude (floats are not, from 2**43 us on)."""
    return m_msgspec_stream(path, exact_ts=True)


def m_msgspec_stream_thread(path: Path) -> dict:
    """(c) as msgspec_stream, with reading + zlib on a second thread (2 cores)."""
    return m_msgspec_stream(path, thread=True)


class _NoError(Exception):
    pass


def m_orjson_stream(path: Path, thread: bool = False, piece: int = 0) -> dict:
    """(c) the same streaming splitter and columns as msgspec_stream, with orjson.loads
    per chunk (GC off while decoding: orjson's dicts are GC-tracked)."""
    pieces = iter_pieces(path, piece)
    if thread:
        pieces = threaded(pieces)
    meta_raw: list[bytes] = []
    names, keys = Codes(), Codes()
    get_name, get_key = names.__getitem__, keys.__getitem__
    name_parts, key_parts, ts_parts, dur_parts = [], [], [], []
    idx, corr, stream, dev, ext = [], [], [], [], []
    base = 0
    gc.disable()
    try:
        for events in iter_event_lists(
            pieces,
            orjson.loads,
            meta_raw,
            loads_any=orjson.loads,
            bad=orjson.JSONDecodeError,
            fatal=_NoError,
        ):
            n = len(events)
            if not n:
                continue
            kc = np.fromiter(
                map(
                    get_key,
                    (
                        (e.get("ph", ""), e.get("cat", ""), e.get("pid", 0), e.get("tid", 0))
                        for e in events
                    ),
                ),
                np.int32,
                n,
            )
            key_parts.append(kc)
            name_parts.append(
                np.fromiter(
                    map(get_name, map(methodcaller("get", "name", ""), events)), np.int32, n
                )
            )
            ts_parts.append(
                np.array(list(map(methodcaller("get", "ts"), events)), dtype=np.float64)
            )
            dur_parts.append(
                np.array(list(map(methodcaller("get", "dur"), events)), dtype=np.float64)
            )
            wants_args = np.fromiter((k[1] in ARG_CATS_SET for k in keys), np.bool_, len(keys))
            for i in np.flatnonzero(wants_args[kc]).tolist():
                a, b, d, x = dict_args(events[i].get("args"))
                idx.append(base + i), corr.append(a), stream.append(b), dev.append(d), ext.append(x)
            base += n
            del events
    finally:
        gc.enable()
    meta = {}
    for raw in meta_raw:
        meta.update({k: v for k, v in orjson.loads(raw).items() if k != "traceEvents"})
    out = {}
    kc = np.concatenate(key_parts) if key_parts else np.zeros(0, np.int32)
    for pos, col in enumerate(("ph", "cat", "pid", "tid")):
        values = Codes()
        lut = np.array([values[k[pos]] for k in keys], dtype=np.int32)
        out[col + "_codes"] = lut[kc] if len(lut) else kc
        out[col + "_values"] = list(values)
    out["name_codes"] = np.concatenate(name_parts) if name_parts else np.zeros(0, np.int32)
    out["name_values"] = list(names)
    out["ts_ns"], out["has_ts"] = to_ns(np.concatenate(ts_parts) if ts_parts else np.zeros(0))
    out["dur_ns"], out["has_dur"] = to_ns(np.concatenate(dur_parts) if dur_parts else np.zeros(0))
    out.update(arg_arrays(idx, corr, stream, dev, ext))
    out["meta_keys"] = len(meta)
    return out


def m_orjson_stream_thread(path: Path) -> dict:
    """(c) orjson_stream + read/zlib on a thread."""
    return m_orjson_stream(path, thread=True)


METHODS = {
    "baseline": m_baseline,
    "read": m_read,
    "gzip_module": m_gzip_module,
    "orjson": m_orjson,
    "orjson_gcoff": m_orjson_gcoff,
    "orjson_fast": m_orjson_fast,
    "msgspec": m_msgspec,
    "msgspec_fast": m_msgspec_fast,
    "orjson_stream": m_orjson_stream,
    "orjson_stream_thread": m_orjson_stream_thread,
    "msgspec_stream": m_msgspec_stream,
    "msgspec_stream_thread": m_msgspec_stream_thread,
    "msgspec_stream_exact": m_msgspec_stream_exact,
}
FLOORS = {"baseline", "read", "gzip_module"}
DESCRIPTIONS = {
    "baseline": "python + imports, nothing read",
    "read": "floor: read file (+ zlib.decompress(data, 31, ISIZE) for .gz)",
    "gzip_module": "floor: read + gzip.decompress",
    "orjson": "(a) orjson.loads + Python loop",
    "orjson_gcoff": "(a) + gc.disable()",
    "orjson_fast": "(c) orjson + gc off + map(methodcaller) columns",
    "msgspec": "(b) dict[str,Raw] + list[Event] + lazy args dict, loop",
    "msgspec_fast": "(c) reused Decoders + NaN-default struct + Args struct + comprehension columns",
    "orjson_stream": "(c) streamed 8 MB event chunks, orjson per chunk, dict-coded strings",
    "orjson_stream_thread": "(c) orjson_stream + read/zlib on a thread",
    "msgspec_stream": "(c) streamed 8 MB event chunks, msgspec per chunk, dict-coded strings",
    "msgspec_stream_thread": "(c) msgspec_stream + read/zlib on a thread",
    "msgspec_stream_exact": "(c) msgspec_stream, ts as Raw -> exact int ns from the text",
}


# --------------------------------------------------------------------------- digest


def normalize(cols: dict) -> dict:
    """Columns in one representation (lists of values), for comparison."""
    out = {}
    for k in ("ph", "cat", "name", "pid", "tid"):
        if k in cols:
            out[k] = cols[k]
        else:
            values = cols[k + "_values"]
            out[k] = [values[c] for c in cols[k + "_codes"].tolist()]
    for k in (
        "ts_ns",
        "has_ts",
        "dur_ns",
        "has_dur",
        "arg_idx",
        "correlation",
        "stream",
        "device",
        "external_id",
    ):
        out[k] = cols[k]
    # ts/dur are only meaningful where present
    out["ts_ns"] = np.where(cols["has_ts"], cols["ts_ns"], 0)
    out["dur_ns"] = np.where(cols["has_dur"], cols["dur_ns"], 0)
    return out


def digest(cols: dict) -> str:
    if "ts_ns" not in cols:
        return "-"
    norm = normalize(cols)
    h = hashlib.sha256()
    for k in sorted(norm):
        v = norm[k]
        h.update(k.encode())
        if isinstance(v, np.ndarray):
            h.update(np.ascontiguousarray(v).astype(np.int64).tobytes())
        else:
            h.update("\x00".join(map(repr, v)).encode())
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------- worker/driver


def worker(method: str, path: str) -> None:
    gc.collect()
    t0 = time.perf_counter()
    cols = METHODS[method](Path(path))
    dt = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    n = len(cols["ts_ns"]) if "ts_ns" in cols else 0
    print(
        json.dumps(
            {
                "method": method,
                "seconds": dt,
                "peak_mb": peak_mb,
                "events": n,
                "digest": digest(cols),
            }
        )
    )


def run_child(method: str, path: str) -> dict:
    r = subprocess.run(
        [sys.executable, __file__, "worker", method, path],
        capture_output=True,
        text=True,
        check=False,
    )
    if r.returncode != 0:
        raise SystemExit(f"{method} on {path} failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def bench(paths: list[str], methods: list[str], reps: int, out_json: str | None) -> None:
    results = []
    for path in paths:
        size = os.path.getsize(path)
        runs: dict[str, list[dict]] = {m: [] for m in methods}
        for rep in range(reps):
            order = methods if rep % 2 == 0 else methods[::-1]
            for m in order:
                r = run_child(m, path)
                runs[m].append(r)
                print(
                    f"  rep {rep} {m:24s} {r['seconds']:7.2f} s {r['peak_mb']:7.0f} MB  {r['digest']}",
                    file=sys.stderr,
                    flush=True,
                )
        rows = []
        for m in methods:
            rs = runs[m]
            rows.append(
                {
                    "method": m,
                    "seconds": statistics.median(x["seconds"] for x in rs),
                    "peak_mb": statistics.median(x["peak_mb"] for x in rs),
                    "events": rs[0]["events"],
                    "digests": sorted({x["digest"] for x in rs}),
                    "all_seconds": [round(x["seconds"], 3) for x in rs],
                }
            )
        decoders = [r for r in rows if r["method"] not in FLOORS]
        fastest = min(r["seconds"] for r in decoders) if decoders else 1.0
        dig = {d for r in decoders for d in r["digests"]}
        print(
            f"\n{path}: {size / 1e6:.1f} MB on disk, {reps} reps, medians; ratio to the fastest decoder"
        )
        print("| method | seconds | peak MB | x fastest | what |")
        print("|---|---:|---:|---:|---|")
        for r in rows:
            ratio = "" if r["method"] in FLOORS else f"{r['seconds'] / fastest:.2f}"
            print(
                f"| {r['method']} | {r['seconds']:.2f} | {r['peak_mb']:.0f} | {ratio} | {DESCRIPTIONS[r['method']]} |"
            )
        print(
            f"events: {decoders[0]['events'] if decoders else 0:,}; column digests identical across "
            f"decoders: {'yes' if len(dig) == 1 else 'NO ' + str(dig)}"
        )
        results.append({"path": path, "bytes_on_disk": size, "rows": rows})
    if out_json:
        Path(out_json).write_text(json.dumps(results, indent=1))


# --------------------------------------------------------------------------- verify

_DEC_RE = re.compile(rb'"(ts|dur)"\s*:\s*(-?)(\d+)(?:\.(\d+))?(?=[\s,}\]])')


def verify(paths: list[str]) -> int:
    bad = 0
    # 1. every decoder gives identical columns (exact int ns) on each file
    for p in paths:
        digs = {}
        for m, fn in METHODS.items():
            if m in FLOORS:
                continue
            cols = fn(Path(p))
            digs[m] = (digest(cols), normalize(cols))
        ref_name, (ref_d, ref) = next(iter(digs.items()))
        for m, (d, norm) in digs.items():
            same = d == ref_d
            if not same:
                bad += 1
                diff = [
                    k
                    for k in ref
                    if not (
                        np.array_equal(ref[k], norm[k])
                        if isinstance(ref[k], np.ndarray)
                        else ref[k] == norm[k]
                    )
                ]
                print(f"MISMATCH {p}: {m} vs {ref_name}: {diff}")
        print(
            f"{Path(p).name}: {len(ref['ts_ns']):,} events, {len(ref['arg_idx'])} arg events, "
            f"{len(digs)} decoders agree: {len({d for d, _ in digs.values()}) == 1}"
        )
    # 2. the streaming splitter cuts only at event boundaries, whatever the layout
    bad += verify_splitter(paths)
    # 3. round(float(text) * 1000) == integer ns parsed from the decimal text
    checked = mism = 0
    maxv = 0
    decimals = set()
    for p in paths:
        doc = read_doc(Path(p))
        for m in _DEC_RE.finditer(doc):
            sign, whole, frac = m.group(2), m.group(3), m.group(4) or b""
            decimals.add(len(frac))
            if len(frac) > 3:
                continue  # not ns-exact text; counted under decimals
            ns = int(whole) * 1000 + int(frac.ljust(3, b"0") or b"0")
            if sign:
                ns = -ns
            text = m.group(0).split(b":", 1)[1].strip()
            checked += 1
            maxv = max(maxv, abs(ns))
            if round(float(text) * 1000) != ns:
                mism += 1
    print(
        f"decimal text vs round(float*1000): {checked:,} ts/dur values checked, {mism} mismatches, "
        f"decimals seen {sorted(decimals)}, largest |value| {maxv / 1000:.3f} us "
        f"(2**43 us = {2**43:.0f}; 2**53/1000 us = {2**53 / 1000:.0f})"
    )
    bad += mism
    # 4. where the float route stops being exact: scan ns values near the edges
    rng = np.random.default_rng(0)
    for lo_us, hi_us, label in (
        (0, 2**42, "[0, 2**42) us"),
        (2**42, 2**52 / 1000, "[2**42, 2**52/1000) us"),
        (2**52 / 1000, 2**43, "[2**52/1000, 2**43) us"),
        (2**43, 2**53 / 1000, "[2**43, 2**53/1000) us"),
    ):
        ns = rng.integers(int(lo_us * 1000), int(hi_us * 1000), 2_000_000, dtype=np.int64)
        x = ns.astype(np.float64) / 1000.0  # == float(decimal text): both correctly rounded
        back = np.rint(x * 1000.0).astype(np.int64)
        split = to_ns_split(x)
        print(
            f"  random ns in {label:26s}: rint(x*1000) {int((back != ns).sum()):>9,} of {len(ns):,} "
            f"not exact; floor split {int((split != ns).sum()):>9,} not exact"
        )
    # 5. a trace whose clock is past 2**43 us (~101.8 days): only the text route is exact
    import tempfile

    rng = np.random.default_rng(1)
    ns = rng.integers(2**43 * 1000, 2**43 * 1000 + 10**12, 20_000, dtype=np.int64)
    body = ",\n".join(
        f'{{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, '
        f'"ts": {v // 1000}.{v % 1000:03d}, "dur": 1.000}}'
        for v in ns.tolist()
    )
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "bigclock.json"
        big.write_text('{"traceEvents": [\n' + body + "\n]}")
        floats = m_msgspec_stream(big)["ts_ns"]
        exact = m_msgspec_stream_exact(big)["ts_ns"]
    print(
        f"clock past 2**43 us, {len(ns):,} ts: float route {int((floats != ns).sum()):,} wrong, "
        f"msgspec Raw text route {int((exact != ns).sum())} wrong"
    )
    bad += int((exact != ns).sum())
    return 1 if bad else 0


TRICKY_EVENT = (
    b'{"ph":"X","cat":"cpu_op","name":"a}, {\\"ts\\": 1},\\n {b","pid":1,"tid":1,"ts":1.5,"dur":2.25,'
    b'"args":{"External id":3,"correlation":7,"nested":[{"a":1}, {"b":"},\\"}]"}]}},\n'
    b'  {"ph":"i","name":"q\\"},","pid":"p","tid":"","ts":3.000,"s":"g"}'
)


def verify_splitter(paths: list[str]) -> int:
    """Streamed columns == whole-document columns with tiny and odd piece sizes, on the
    fixtures, re-encoded compactly, as a bare array, and on an adversarial document
    (strings holding '},', '"traceEvents": [', nested objects, keys after the array)."""
    import tempfile

    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        cases = []
        for p in paths[:3] + paths[-2:]:
            doc = read_doc(Path(p))
            top = orjson.loads(doc)
            compact = Path(tmp) / (Path(p).stem + ".compact.json")
            compact.write_bytes(orjson.dumps(top))
            bare = Path(tmp) / (Path(p).stem + ".bare.json")
            bare.write_bytes(orjson.dumps(top["traceEvents"], option=orjson.OPT_INDENT_2))
            cases += [Path(p), compact, bare]
        tricky = Path(tmp) / "tricky.json"
        tricky.write_bytes(
            b'{"before": {"x": "}, {\\"traceEvents\\": [", "y": [1, {"traceEvents": []}]},\n'
            b' "traceEvents" : [\n  ' + b",\n  ".join([TRICKY_EVENT] * 300) + b"\n ],\n"
            b' "after": [1, {"z": "]"}], "traceName": "x]"}\n'
        )
        cases.append(tricky)
        for case in cases:
            top = orjson.loads(read_doc(case))
            ref = digest(_orjson_loop(top if isinstance(top, list) else top["traceEvents"]))
            for piece in (1, 7, 64, 1000, 4096):
                for name, fn in (
                    ("msgspec_stream", m_msgspec_stream),
                    ("orjson_stream", m_orjson_stream),
                    ("msgspec_stream_exact", partial(m_msgspec_stream, exact_ts=True)),
                ):
                    got = digest(fn(case, piece=piece))
                    if got != ref:
                        bad += 1
                        print(f"SPLITTER MISMATCH {case.name} piece={piece} {name}")
        print(
            f"splitter: {len(cases)} documents x 5 piece sizes x 3 streaming methods, "
            f"{'all equal to the whole-document decode' if not bad else f'{bad} MISMATCHES'}"
        )
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bench")
    b.add_argument("paths", nargs="+")
    b.add_argument("--reps", type=int, default=3)
    b.add_argument("--methods", default=",".join(METHODS))
    b.add_argument("--json", help="also write the results here")
    v = sub.add_parser("verify")
    v.add_argument("paths", nargs="+")
    w = sub.add_parser("worker")
    w.add_argument("method")
    w.add_argument("path")
    a = ap.parse_args()
    if a.cmd == "worker":
        worker(a.method, a.path)
        return 0
    if a.cmd == "verify":
        return verify(a.paths)
    bench(a.paths, a.methods.split(","), a.reps, a.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
