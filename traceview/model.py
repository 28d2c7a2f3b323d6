"""The trace model: lanes, slices and links, in integer nanoseconds.

``build(decoded)`` turns raw events into:

* **lanes** — one per host thread ``(pid, tid)`` and one per device stream
  ``(device, stream)``;
* **slices** — every duration event (``X``, and ``B``/``E`` pairs), stored as columns
  (numpy arrays) with interned category and name codes;
* **links** — launch API slice -> device work slices, by ``args.correlation``, falling
  back to ``ac2g`` flow ids when a side lacks the correlation argument.

Columns arrive finished from the decoder (``traceview.io.columns``: times in integer ns,
``B``/``E`` pairs already among the X events, flows and thread names read; ``io/decode.py``
explains how Kineto's microsecond floats convert exactly). Here slices that cannot be
placed on a timeline are dropped and counted: no start, negative or absurd durations,
exact duplicates.

The model is what the trace means, so the profiler's known damage is repaired here, once,
and never by an analysis (``explain`` is a pure function of the ``Trace``): metadata of
the wrong type is set aside (``metadata.clean_metadata``), device work the host's own
timeline rules out is dropped (``_drop_implausible_device_work``), and Python frames
recorded as outliving their caller are clipped to it (``_clip_python_frames``). Each
leaves a diagnostic.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import ItemsView, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from itertools import chain
from types import MappingProxyType
from typing import Any, Literal, Protocol, TypeVar, overload

import numpy as np

from traceview import intervals, native
from traceview.codes import DIAGNOSTICS, Severity
from traceview.coerce import NO_ID, id_or_no_id, thread_id
from traceview.diagnostics import Diagnostic
from traceview.io.columns import (
    ANNOTATION_CAT,
    LEGACY_CATS,
    MISSING,
    Columns,
    Decoded,
    IdColumn,
    Phases,
)
from traceview.metadata import CaptureMeta, capture_meta, clean_metadata
from traceview.units import fmt_ns

# Event categories that are device work (busy time). gpu_user_annotation is a label;
# cuda_sync is CUPTI's record of a stream or event synchronization as the device saw it
# (pid = the device, tid = the stream, or the stream + 1000000 on its own "stream N
# (sync)" row): a device-side lane, never a host thread, and no busy time.
DEVICE_WORK_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
DEVICE_CATS = DEVICE_WORK_CATS | {"gpu_user_annotation", "cuda_sync"}
# Slices of these categories never widen the default window: profiler spans, profiler
# overhead, device labels. Every other slice, unknown categories included, is activity.
NON_ACTIVITY_CATS = frozenset({"Trace", "overhead", "gpu_user_annotation", "ac2g", "cuda_sync"})
ACTIVITY_CATS = frozenset({
    "cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver",
    "kernel", "gpu_memcpy", "gpu_memset",
})
KNOWN_CATS = ACTIVITY_CATS | {"gpu_user_annotation", "ac2g", "Trace", "overhead",
                              "python_function", "cuda_sync", ""}
# No profiler trace spans an hour (it would be tens of GB): a longer slice is a corrupt
# record (CUPTI has written kernels of "236 years"). Dropped, with a diagnostic, so it
# cannot poison totals.
ABSURD_DUR_NS = 3_600 * 10**9
# rows taken at a time by the build's passes that need no row-sized temporary
ROW_BLOCK = 1 << 20


LaneKind = Literal["host", "device"]
_THREAD_LABEL = re.compile(r"^thread \d+ \((.*)\)$")


@dataclass(frozen=True)
class Lane:
    """A row of the timeline: a host thread or a device stream."""

    index: int
    kind: LaneKind
    pid: int | str
    tid: int | str
    device: int | None = None
    stream: int | None = None
    name: str = ""

    @property
    def thread_name(self) -> str:
        """The thread's own name: ``pt_autograd_0`` of ``thread 543 (pt_autograd_0)``."""
        m = _THREAD_LABEL.match(self.name)
        return m.group(1) if m else self.name

    @property
    def label(self) -> str:
        if self.kind == "device":
            return f"device {self.device} stream {self.stream}"
        base = f"{self.pid}/{self.tid}"
        return f"{self.name} [{base}]" if self.name else f"thread {base}"


_T = TypeVar("_T")


class RowArgs(Protocol):
    """Row -> the slice's decoded ``args`` (io hands the model one: ``io.columns.LazyArgs``)."""

    def __getitem__(self, row: int) -> dict[str, Any]: ...
    def __iter__(self) -> Iterator[int]: ...
    def __len__(self) -> int: ...
    def __contains__(self, row: object) -> bool: ...
    @overload
    def get(self, row: int, /) -> dict[str, Any] | None: ...
    @overload
    def get(self, row: int, default: dict[str, Any], /) -> dict[str, Any]: ...
    @overload
    def get(self, row: int, default: _T, /) -> dict[str, Any] | _T: ...
    def items(self) -> ItemsView[int, dict[str, Any]]: ...
    def keys_present(self, rows: list[int], keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` the args of any of ``rows`` have (without decoding them all)."""
        ...
    def subset(self, rows: dict[int, int]) -> RowArgs:
        """Renumbered copy: ``rows`` maps old row -> new row (dropped rows absent)."""
        ...
    def whole_numbers(self, rows: list[int], key: str) -> np.ndarray:
        """The non-negative integer values of ``key`` in the args of ``rows``."""
        ...


@dataclass(frozen=True)
class Slices:
    """Duration events as columns. Row ``i`` is one slice; ``end = start + dur``.

    Frozen, and its columns read-only once the trace is built (``flags.writeable`` is
    off): an analysis that wrote to one would change what the next explain of the
    same trace reads, so a write raises instead."""

    cat: np.ndarray  # code into Trace.cat_names (int8 while they fit: narrow_codes)
    name: np.ndarray  # code into Trace.names (int16 while they fit: narrow_codes)
    lane: np.ndarray  # index into Trace.lanes (int8 or int16 while they fit: narrow_codes)
    start: np.ndarray  # int64 ns
    end: np.ndarray  # int64 ns
    # correlation id, NO_ID when absent (int32 when every id fits: narrow_ids), held as the
    # rows that have one (io.columns.IdColumn): a cold compile's tens of millions of Python
    # frames have none, and a dense column of them was 4 bytes a row of explain's peak
    corr: IdColumn
    args: RowArgs  # row -> decoded args (on access), for io's ARGS_KEPT_CATS only

    def __len__(self) -> int:
        return int(self.start.shape[0])

    @property
    def dur(self) -> np.ndarray:
        return self.end - self.start


@dataclass(frozen=True)
class Trace:
    """A loaded trace: what the analyses read. Build with ``traceview.load``.

    Frozen, with read-only columns, tuples and read-only mappings: ``explain`` is a pure
    function of it (``tests/test_explain_pure.py``), so an analysis returns what it finds
    (its diagnostics included, ``Analysis.diagnostics``) and never writes here; an
    attempt raises instead of changing what the next explain of the same trace reads.
    The one thing added after the build is a cache of derived data (``name_rank``,
    ``launch_work``).
    ``metadata``'s top level is read-only; the values under it are the file's JSON as
    decoded (the report copies what it shows of them)."""

    path: str
    metadata: Mapping[str, Any]
    cat_names: tuple[str, ...]
    names: tuple[str, ...]
    lanes: tuple[Lane, ...]
    slices: Slices
    # launch slice row -> device work slice rows, and the reverse
    launch_to_work: Mapping[int, tuple[int, ...]]
    work_to_launch: Mapping[int, int]
    diagnostics: tuple[Diagnostic, ...] = ()
    instant_count: int = 0
    decoded_bytes: int = 0
    # where the file's event array closes in its text (None: cut short), and every pid
    # its events use: what ``--annotate`` needs to add events without a second parse
    events_end: int | None = None
    pids: frozenset[int | str] = frozenset()

    def __post_init__(self) -> None:
        """Whatever sequences and mappings it is given, it holds frozen ones: tuples, and
        read-only views of mappings copied here (so that the caller's dict cannot change
        it either). What is frozen already (``build``'s, ``replace``'s) is kept as is:
        no copy of millions of names or links per ``replace``."""
        for key in ("cat_names", "names", "lanes"):
            value = getattr(self, key)
            if type(value) is not tuple:
                object.__setattr__(self, key, tuple(value))
        for key in ("metadata", "work_to_launch"):
            value = getattr(self, key)
            if type(value) is not MappingProxyType:
                object.__setattr__(self, key, MappingProxyType(dict(value)))
        if type(self.launch_to_work) is not MappingProxyType:
            object.__setattr__(self, "launch_to_work", MappingProxyType(
                {k: tuple(v) for k, v in self.launch_to_work.items()}))

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its fields with plain dicts (a read-only mapping view cannot be
        pickled); frozen again when rebuilt."""
        fields = {f: getattr(self, f) for f in self.__dataclass_fields__}
        for key in ("metadata", "launch_to_work", "work_to_launch"):
            fields[key] = dict(fields[key])
        return (_rebuild_trace, (fields,))

    def cat_code(self, cat: str) -> int:
        try:
            return self.cat_names.index(cat)
        except ValueError:
            return -1

    def rows_of_cats(self, cats: frozenset[str] | set[str]) -> np.ndarray:
        codes = [i for i, c in enumerate(self.cat_names) if c in cats]
        return np.flatnonzero(codes_in(self.slices.cat, codes, len(self.cat_names)))

    def has_cat(self, cats: frozenset[str] | set[str]) -> np.ndarray:
        """Per row: whether its category is one of ``cats`` (``codes_in``)."""
        codes = [i for i, c in enumerate(self.cat_names) if c in cats]
        return codes_in(self.slices.cat, codes, len(self.cat_names))

    def has_name(self, codes) -> np.ndarray:
        """Per row: whether its name code is one of ``codes`` (``codes_in``)."""
        return codes_in(self.slices.name, codes, len(self.names))

    def launch_work(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For launch rows ``rows``: how many device work rows each launched
        (``len(launch_to_work.get(r, ()))``), and those work rows, launch after launch,
        each launch's in its tuple's order. Arrays from a table made once (a cache of
        derived data, as ``name_rank``): a Python step per launch, in three analyses,
        cost 3 ms per 20,000 launches each time."""
        table = self.__dict__.get("_launch_table")
        if table is None:
            ltw = self.launch_to_work
            keys = np.fromiter(ltw, np.int64, len(ltw))
            count = np.fromiter(map(len, ltw.values()), np.int64, len(ltw))
            flat = np.fromiter(chain.from_iterable(ltw.values()), np.int64, int(count.sum()))
            first = np.cumsum(count) - count
            order = np.argsort(keys, kind="stable")
            table = (keys[order], first[order], count[order], flat)
            self.__dict__["_launch_table"] = table
        keys, first, count, flat = table
        rows = np.asarray(rows, np.int64).reshape(-1)
        if keys.size == 0 or rows.size == 0:
            return np.zeros(rows.size, np.int64), np.zeros(0, np.int64)
        at = np.minimum(np.searchsorted(keys, rows), keys.size - 1)
        hit = keys[at] == rows
        n = np.where(hit, count[at], 0)
        starts = np.where(hit, first[at], 0)
        idx = np.arange(int(n.sum()), dtype=np.int64) + np.repeat(starts - (np.cumsum(n) - n), n)
        return n, flat[idx]

    @property
    def name_rank(self) -> np.ndarray:
        """Alphabetical rank of each name code: a tie-break independent of file order."""
        rank = self.__dict__.get("_name_rank")
        if rank is None:
            rank = np.empty(len(self.names), dtype=np.int64)
            rank[np.argsort(np.asarray(self.names, dtype=object), kind="stable")] = np.arange(len(self.names))
            self.__dict__["_name_rank"] = rank
        return rank

    @property
    def cat_rank(self) -> np.ndarray:
        rank = np.empty(len(self.cat_names), dtype=np.int64)
        rank[np.argsort(np.asarray(self.cat_names, dtype=object), kind="stable")] = np.arange(len(self.cat_names))
        return rank

    @property
    def capture(self) -> CaptureMeta | None:
        """Capture's metadata block (the ``traceview`` key), typed; None when the trace
        was not made by capture."""
        return capture_meta(self.metadata.get("traceview"))

    @property
    def device_lanes(self) -> list[Lane]:
        return [lane for lane in self.lanes if lane.kind == "device"]

    @property
    def host_lanes(self) -> list[Lane]:
        return [lane for lane in self.lanes if lane.kind == "host"]


def codes_in(col: np.ndarray, codes, size: int) -> np.ndarray:
    """``np.isin(col, codes)`` for a column of codes in ``range(size)`` (categories, names,
    lanes), through a table of ``size`` flags: numpy's isin copies the column's matching
    codes to 64-bit integers first, 8 bytes a row of a cold compile's tens of millions
    (hundreds of MB at explain's peak)."""
    table = np.zeros(size + 1, bool)
    codes = np.asarray(list(codes), np.int64)
    table[codes[(codes >= 0) & (codes < size)]] = True
    return table[col]


def _rebuild_trace(fields: dict[str, Any]) -> Trace:
    return Trace(**fields)


_MESSAGES: dict[str, tuple[Severity, str]] = {
    "missing-ts": ("warning", "duration events without a usable 'ts' were dropped"),
    "missing-dur": ("warning", "'X' events without 'dur' were kept as zero-length"),
    "negative-dur": ("warning", "events with a negative duration were dropped"),
    "absurd-dur": ("warning", "events lasting over an hour (corrupt records) were dropped"),
    "duplicate": ("warning", "exact duplicate events were dropped"),
    "unclosed-begin": ("warning", "'B' events without a matching 'E' were dropped"),
    "unmatched-end": ("warning", "'E' events without an open 'B' on their thread were ignored"),
    "unknown-phase": ("warning", "events with an unknown 'ph' were ignored"),
    "other-phase": ("info", "counter/async/object events were ignored"),
}


def build(decoded: Decoded) -> Trace:
    """Turn decoded columns into lanes, slices and links (vectorised over X events).
    ``decoded`` is used up: the columns the slices do not share are released from it."""
    x = decoded.x
    counts: dict[str, int] = defaultdict(int, decoded.phases.counts)
    dur, keep = _placeable(x.ts, x.dur, counts)
    added = [i for i, k in enumerate(decoded.keys) if k[1] == ANNOTATION_CAT]
    if added:  # traceview's own tracks (explain --annotate) are not the trace's events
        keep = keep & ~np.isin(x.key, added)
    cat_names, key_device, cat_of_row, unknown = _categories(decoded.keys, x.key, keep)
    _legacy_annotations(decoded.keys, x, decoded.names, cat_names, cat_of_row)
    lanes, lane_of_row = _lanes(decoded.keys, x, key_device, decoded.phases.thread_names)
    _release_lane_columns(x)
    slices = _kept_slices(x, dur, keep, cat_of_row, lane_of_row)
    del dur, keep, cat_of_row, lane_of_row
    _release_columns(x)
    slices, dups = _dedupe(slices)
    if dups:
        counts["duplicate"] += dups
    slices = _fill_corr_from_flows(decoded.phases, slices, lanes, cat_names)
    launch_to_work, work_to_launch = _link(slices, cat_names)
    metadata, malformed = clean_metadata(decoded.metadata)
    trace = Trace(
        path=decoded.path,
        metadata=metadata,
        cat_names=tuple(cat_names),
        names=tuple(decoded.names),
        lanes=tuple(lanes),
        slices=slices,
        launch_to_work=launch_to_work,
        work_to_launch=work_to_launch,
        diagnostics=tuple(_diagnostics(decoded.problems, counts, unknown)),
        instant_count=decoded.phases.instants,
        decoded_bytes=decoded.decoded_bytes,
        events_end=decoded.events_end,
        pids=frozenset(k[2] for k in decoded.keys),
    )
    if malformed is not None:
        trace = replace(trace, diagnostics=(*trace.diagnostics, malformed))
    trace = _drop_implausible_device_work(trace)
    trace = _tell_work_before_launch(trace)
    trace = _clip_python_frames(trace)
    _read_only(trace.slices)
    return trace


def _read_only(slices: Slices) -> None:
    """The built columns can no longer be written (an analysis that tried would change
    what the next explain of the same trace reads)."""
    for col in (slices.cat, slices.name, slices.lane, slices.start, slices.end, slices.corr):
        col.flags.writeable = False


def _release_lane_columns(x: Columns) -> None:
    """Drop the key codes and the device and stream ids once the lanes are made (nothing
    after reads them): on a cold compile's tens of millions of rows, three row-sized
    columns alive while the slices' columns are made were the load's peak."""
    empty = np.zeros(0, np.int64)
    x.stream = x.device = IdColumn(0, empty, empty)
    x.key = empty.astype(np.int32)


def _release_columns(x: Columns) -> None:
    """Drop the decoder's columns the slices do not share (durations, and the name codes
    and correlation ids the slices hold narrowed) once the slices are made: ``build``
    owns what it was given, and on a big trace they would otherwise stay alive through
    the rest of the build, the load's peak."""
    empty = np.zeros(0, np.int64)
    x.dur = empty
    x.corr = IdColumn(0, empty, empty)
    x.name = empty.astype(np.int32)


def _placeable(start: np.ndarray, dur: np.ndarray,
               counts: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """Validity: which rows can be placed on a timeline (each reason counted in
    ``counts``), and the durations with a missing one read as zero-length."""
    missing_ts = start == MISSING
    no_dur = dur == MISSING
    missing_dur = no_dur & ~missing_ts
    if no_dur.any():
        dur = np.where(no_dur, 0, dur)
    negative = (dur < 0) & ~missing_ts
    absurd = (dur > ABSURD_DUR_NS) & ~missing_ts
    huge = ((start > 2**62) | (start < -2**62)) & ~missing_ts
    for code, m in (("missing-ts", missing_ts), ("missing-dur", missing_dur),
                    ("negative-dur", negative), ("absurd-dur", absurd | huge)):
        if m.any():
            counts[code] += int(m.sum())
    return dur, ~(missing_ts | negative | absurd | huge)


def _categories(keys: list[tuple[str, str, int | str, int | str]], key_of_row: np.ndarray,
                keep: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray, dict[str, int]]:
    """Category codes, per key and then per row (codes in order of first sight), which
    keys are device work, and the kept events of each unknown category. A legacy Kineto
    category (``io.columns.LEGACY_CATS``) is read as its modern name."""
    cat_names: list[str] = []
    cat_index: dict[str, int] = {}
    key_cat = np.empty(len(keys), np.int32)
    key_device = np.zeros(len(keys), bool)
    unknown: dict[str, int] = defaultdict(int)
    for i, (_, raw_cat, _, _) in enumerate(keys):
        cat = LEGACY_CATS.get(raw_cat, raw_cat)
        if cat not in cat_index:
            cat_index[cat] = len(cat_names)
            cat_names.append(cat)
        key_cat[i] = cat_index[cat]
        key_device[i] = cat in DEVICE_CATS
    # int8 while the categories fit with room for one more (_legacy_annotations): a code
    # per row, and a cold compile has tens of millions of rows
    cat_of_row = key_cat.astype(np.int8 if len(cat_names) < 127 else np.int32)[key_of_row]
    # the kept rows of each category, counted a block at a time: np.unique sorted a copy
    # of every kept row's code, the load's peak on a cold compile
    kept = np.zeros(len(cat_names), np.int64)
    for lo in range(0, cat_of_row.size, ROW_BLOCK):
        kept += np.bincount(cat_of_row[lo:lo + ROW_BLOCK][keep[lo:lo + ROW_BLOCK]],
                            minlength=len(cat_names))
    for c in np.flatnonzero(kept).tolist():
        if cat_names[c] not in KNOWN_CATS:
            unknown[cat_names[c]] += int(kept[c])
    return cat_names, key_device, cat_of_row, unknown


# The ranges PyTorch's profiler writes itself (``record_function`` in the profiler, the
# DataLoader and the optimizer): a modern trace files them as ``user_annotation``; the
# legacy ``Operator`` category held them among the ops.
_LEGACY_ANNOTATION = re.compile(r"^ProfilerStep#\d+$|^enumerate\(DataLoader\)#|^Optimizer\.\w+#")


def _legacy_annotations(keys: list[tuple[str, str, int | str, int | str]], x: Columns,
                        names: list[str], cat_names: list[str], cat_of_row: np.ndarray) -> None:
    """Rows of a legacy ``Operator`` key named as a profiler range (``ProfilerStep#N``,
    ``enumerate(DataLoader)#...``, ``Optimizer.step#...``) become ``user_annotation``, as
    a modern profiler files them: steps, phases and call ranges are found by that
    category. Changes ``cat_of_row`` (and ``cat_names``) in place."""
    legacy = [i for i, k in enumerate(keys) if k[1] == "Operator"]
    if not legacy:
        return
    named = [i for i, n in enumerate(names) if _LEGACY_ANNOTATION.search(n)]
    if not named:
        return
    rows = np.flatnonzero(np.isin(x.key, legacy) & np.isin(x.name, named))
    if not rows.size:
        return
    if "user_annotation" not in cat_names:
        cat_names.append("user_annotation")
    cat_of_row[rows] = cat_names.index("user_annotation")


def _lanes(keys: list[tuple[str, str, int | str, int | str]], x: Columns, key_device: np.ndarray,
           thread_names: dict[tuple[str, int | str, int | str], str]
           ) -> tuple[list[Lane], np.ndarray]:
    """The lanes and each row's lane: per key for host threads (pid, tid), per row for
    device work (its device and stream args, else the key's pid and tid)."""
    key_of_row = x.key
    lanes: list[Lane] = []
    lane_index: dict[tuple, int] = {}

    def lane_for(key: tuple) -> int:
        idx = lane_index.get(key)
        if idx is None:
            idx = lane_index[key] = len(lanes)
            if key[0] == "device":
                lanes.append(Lane(idx, "device", key[3], key[4], key[1], key[2]))
            else:
                nm = thread_names.get(("thread_name", key[1], key[2]), "")
                lanes.append(Lane(idx, "host", key[1], key[2], name=nm))
        return idx

    # int16 while the keys fit (a lane per row, of tens of millions on a cold compile);
    # widened below if the device streams take the lanes past it
    host_lut = np.full(len(keys), -1, np.int16 if len(keys) < 2**14 else np.int32)
    for i, (_, _, pid, tid) in enumerate(keys):
        if not key_device[i]:
            host_lut[i] = lane_for(("host", thread_id(pid), thread_id(tid)))
    # every row through the host table (device rows read -1 there and are set below):
    # no row-sized mask and masked gathers, which on a cold compile were the load's peak
    lane_of_row = host_lut[key_of_row]
    dev_rows = np.flatnonzero(key_device[key_of_row])
    if dev_rows.size:
        key_pid = np.asarray([id_or_no_id(k[2]) for k in keys], np.int64)
        key_tid = np.asarray([id_or_no_id(k[3]) for k in keys], np.int64)
        kr = key_of_row[dev_rows]
        d = np.where(x.device[dev_rows] >= 0, x.device[dev_rows], key_pid[kr])
        s = np.where(x.stream[dev_rows] >= 0, x.stream[dev_rows], key_tid[kr])
        pairs, inverse = np.unique(np.stack([d, s]), axis=1, return_inverse=True)
        codes = np.asarray([lane_for(("device", a, b, a, b)) for a, b in pairs.T.tolist()],
                           np.int32)
        if codes.max() > np.iinfo(lane_of_row.dtype).max:
            lane_of_row = lane_of_row.astype(np.int32)
        lane_of_row[dev_rows] = codes[inverse.ravel()]
    return lanes, lane_of_row


def _kept_slices(x: Columns, dur: np.ndarray, keep: np.ndarray, cat_of_row: np.ndarray,
                 lane_of_row: np.ndarray) -> Slices:
    """The placeable rows as slices: the columns themselves when every row is kept."""
    start, args = x.ts, x.args
    corr = x.corr.narrowed(narrow_ids)
    if keep.all():  # the usual case: no copies
        return Slices(cat=narrow_codes(cat_of_row), name=narrow_codes(x.name),
                      lane=narrow_codes(lane_of_row), start=start, end=start + dur, corr=corr,
                      args=args)
    rows = np.flatnonzero(keep)
    return Slices(
        cat=narrow_codes(cat_of_row[rows]),
        name=narrow_codes(x.name[rows]),
        lane=narrow_codes(lane_of_row[rows]),
        start=start[rows],
        end=start[rows] + dur[rows],
        corr=corr.take(rows),
        args=args.subset(_renumber(args, rows)),
    )


def narrow_codes(codes: np.ndarray) -> np.ndarray:
    """Category, name or lane codes (0 up) as the narrowest signed integer that holds
    them all (int8 for a trace's dozen categories, int16 for its names), else int32: a cold
    compile holds tens of millions of rows, and each byte per row is tens of MB of
    explain's peak. Signed, so that a comparison with a missing code (-1) stays false."""
    top = int(codes.max()) if codes.size else 0
    for dtype in (np.int8, np.int16):
        if top <= np.iinfo(dtype).max:
            return codes.astype(dtype, copy=False)
    return codes.astype(np.int32, copy=False)


def narrow_ids(ids: np.ndarray) -> np.ndarray:
    """An id column as int32 when every id fits (the same values, half the bytes),
    else as it is. Correlation ids count launches from one, and on a cold compile all but
    a few of the tens of millions of rows are Python frames holding ``NO_ID``: a row-sized
    int64 column of them was 8 of the ~90 bytes per event of explain's peak."""
    if ids.dtype == np.int32:
        return ids
    ids = np.asarray(ids, np.int64)
    if ids.size and int(ids.min()) >= -2**31 and int(ids.max()) < 2**31:
        return ids.astype(np.int32)
    return ids


def _diagnostics(problems: list[tuple[str, int, str]], counts: dict[str, int],
                 unknown: dict[str, int]) -> list[Diagnostic]:
    """The decoder's problems, then the model's counts in a fixed order (whatever the
    event order), then the unknown categories by name."""
    diags = [Diagnostic(code, DIAGNOSTICS[code].severity if code in DIAGNOSTICS else "warning",
                        count, desc) for code, count, desc in problems]
    for code, (sev, msg) in _MESSAGES.items():
        if counts.get(code):
            diags.append(Diagnostic(code, sev, counts[code], msg))
    for cat, count in sorted(unknown.items()):
        diags.append(Diagnostic("unknown-category", "info", count,
                                f"events of unknown category {cat!r} kept as host work ('other')"))
    return diags


def _renumber(args: RowArgs, kept: np.ndarray) -> dict[int, int]:
    """Old row -> new row for the rows with args, given the sorted kept old rows."""
    if not len(args):
        return {}
    old = np.fromiter(args, np.int64, len(args))
    pos = np.searchsorted(kept, old)
    ok = pos < kept.size
    ok[ok] = kept[pos[ok]] == old[ok]
    return dict(zip(old[ok].tolist(), pos[ok].tolist(), strict=True))


def _dedupe(slices: Slices) -> tuple[Slices, int]:
    """Drop exact duplicates (same category, name, lane, start, end and correlation)."""
    n = len(slices)
    if n < 2:
        return slices, 0
    # Cheapest screen: a duplicate shares its start with another row, and events
    # rarely do (a stable sort is adaptive: they arrive nearly sorted by start)
    by_start = np.sort(slices.start, kind="stable")
    if not (by_start[1:] == by_start[:-1]).any():
        return slices, 0
    del by_start
    # Cheap screen: a duplicate shares (start, end) with the row sorted next to it.
    order = intervals.start_order(slices.start, lambda sub: (slices.end[sub],))
    s, e = slices.start[order], slices.end[order]
    same = (s[1:] == s[:-1]) & (e[1:] == e[:-1])
    if not same.any():
        return slices, 0
    suspects = np.unique(np.concatenate([order[1:][same], order[:-1][same]]))
    keys = np.stack([slices.cat[suspects].astype(np.int64), slices.name[suspects].astype(np.int64),
                     slices.lane[suspects].astype(np.int64), slices.start[suspects],
                     slices.end[suspects], slices.corr[suspects]], axis=1)
    _, first = np.unique(keys, axis=0, return_index=True)
    if first.size == suspects.size:
        return slices, 0
    drop = np.setdiff1d(suspects, suspects[first])
    first = np.setdiff1d(np.arange(n), drop)
    keep = np.sort(first)
    args = slices.args.subset(_renumber(slices.args, keep))
    return Slices(slices.cat[keep], slices.name[keep], slices.lane[keep], slices.start[keep],
                  slices.end[keep], slices.corr.take(keep), args), n - int(first.size)


def _fill_corr_from_flows(phases: Phases, slices: Slices, lanes: list[Lane],
                          cat_names: list[str]) -> Slices:
    """Where a launch or kernel lacks ``args.correlation``, take the ac2g flow id (the
    flow tables are made only then: ``Phases``)."""
    if not phases.has_flows():
        return slices
    linkable = [i for i, c in enumerate(cat_names) if c in DEVICE_WORK_CATS
                or c in ("cuda_runtime", "cuda_driver")]
    missing = np.flatnonzero((slices.corr == NO_ID) & codes_in(slices.cat, linkable, len(cat_names)))
    if not missing.size:
        return slices
    flow_start, flow_end = phases.flow_start, phases.flow_end
    rows, ids = [], []
    for row in missing.tolist():
        lane = lanes[int(slices.lane[row])]
        key = (lane.pid, lane.tid, int(slices.start[row]))
        fid = flow_end.get(key) if lane.kind == "device" else flow_start.get(key)
        if fid is not None:
            rows.append(row)
            ids.append(fid)
    # a new column (the old one may be shared), ids int64 (enough for any flow id), narrowed
    return replace(slices, corr=slices.corr.with_ids(np.asarray(rows, np.int64),
                                                     np.asarray(ids, np.int64)).narrowed(narrow_ids))


def _link(slices: Slices, cat_names: Sequence[str]
          ) -> tuple[Mapping[int, tuple[int, ...]], Mapping[int, int]]:
    """Launch -> device work by correlation id (one launch may own many kernels: graphs)."""
    work_codes = [i for i, c in enumerate(cat_names) if c in DEVICE_WORK_CATS]
    host_codes = [i for i, c in enumerate(cat_names) if c in ("cuda_runtime", "cuda_driver")]
    is_work = codes_in(slices.cat, work_codes, len(cat_names)) & (slices.corr != NO_ID)
    is_api = codes_in(slices.cat, host_codes, len(cat_names)) & (slices.corr != NO_ID)
    # the first launch of each correlation id (the lowest row), found for all at once
    api_rows = np.flatnonzero(is_api)
    corrs, first = np.unique(slices.corr[api_rows], return_index=True)
    apis = api_rows[first]
    work_rows = np.flatnonzero(is_work)
    wc = slices.corr[work_rows]
    at = np.minimum(np.searchsorted(corrs, wc), max(corrs.size - 1, 0))
    linked = (at < corrs.size) & (corrs[at] == wc) if corrs.size else np.zeros(wc.size, bool)
    rows, launch = work_rows[linked], apis[at[linked]]
    # in row order of the work, as a loop over it would insert them
    work_to_launch = dict(zip(rows.tolist(), launch.tolist(), strict=True))
    launch_to_work: dict[int, list[int]] = defaultdict(list)
    for row, api in work_to_launch.items():
        launch_to_work[api].append(row)
    # frozen here, where the dicts are made, so that the Trace holds them without a copy
    return (MappingProxyType({k: tuple(v) for k, v in launch_to_work.items()}),
            MappingProxyType(work_to_launch))


# ---------------------------------------------------------------- damage only causality reveals
#
# A fixed bound (``ABSURD_DUR_NS``) catches "236 years" but not a one-hour kernel inside a
# 7 ms trace, which would still poison every total. Two checks need no bound:
#
# * after a sync returned: ``cudaDeviceSynchronize`` (``cuCtxSynchronize``) returns only
#   when all work submitted before it finished. Device work whose launch (or, without one,
#   whose start) precedes a device-wide synchronize but that ends more than
#   ``SYNC_SKEW_NS`` after that synchronize returned cannot be right. (Traces of one
#   device only: the trace does not say which device a synchronize waited for.)
# * far past the host: device work ending more than ``max(host span, FAR_MIN_NS)`` after
#   the last host event would stretch the window by more than the whole host activity.
#
# Such slices are dropped (with a diagnostic) before any analysis, so the window, device
# busy time and every per-call figure stay what the host's timeline allows.

DEVICE_SYNCS = frozenset({"cudaDeviceSynchronize", "cuCtxSynchronize", "hipDeviceSynchronize",
                          "cudaThreadSynchronize"})
# CUPTI aligns device timestamps to the host clock to well under this
SYNC_SKEW_NS = 50_000
FAR_MIN_NS = 1_000_000_000


def implausible_device_rows(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """(rows ending after a later device sync returned, rows ending far past the host)."""
    s = trace.slices
    work = trace.rows_of_cats(DEVICE_WORK_CATS)
    empty = np.zeros(0, np.int64)
    if work.size == 0:
        return empty, empty
    host_cats = set(trace.cat_names) - DEVICE_WORK_CATS - NON_ACTIVITY_CATS - {"gpu_user_annotation"}
    host = trace.rows_of_cats(host_cats)
    after_sync = empty
    devices = {ln.device for ln in trace.device_lanes}
    api = trace.rows_of_cats({"cuda_runtime", "cuda_driver"})
    sync_codes = [i for i, n in enumerate(trace.names) if n in DEVICE_SYNCS]
    syncs = api[np.isin(s.name[api], sync_codes)] if sync_codes else empty
    if syncs.size and len(devices) <= 1:
        order = np.argsort(s.start[syncs], kind="stable")
        st = s.start[syncs][order]
        suffix_min_end = np.minimum.accumulate(s.end[syncs][order][::-1])[::-1]
        launch = np.asarray([trace.work_to_launch.get(int(r), -1) for r in work.tolist()],
                            np.int64)
        submitted = np.where(launch >= 0, s.start[np.maximum(launch, 0)], s.start[work])
        i = np.searchsorted(st, submitted, side="right")
        has = i < st.size
        bound = np.full(work.size, np.iinfo(np.int64).max)
        bound[has] = suffix_min_end[i[has]] + SYNC_SKEW_NS
        after_sync = work[s.end[work] > bound]
    far = empty
    if host.size:
        h0, h1 = int(s.start[host].min()), int(s.end[host].max())
        far = work[s.end[work] > h1 + max(h1 - h0, FAR_MIN_NS)]
        far = np.setdiff1d(far, after_sync)
    return after_sync, far


def _drop_implausible_device_work(trace: Trace) -> Trace:
    """The trace being built without what ``implausible_device_rows`` finds."""
    after_sync, far = implausible_device_rows(trace)
    if not (after_sync.size or far.size):
        return trace
    s = trace.slices
    keep = np.setdiff1d(np.arange(len(s)), np.concatenate([after_sync, far]))
    slices = Slices(s.cat[keep], s.name[keep], s.lane[keep], s.start[keep], s.end[keep],
                    s.corr.take(keep), s.args.subset(_renumber(s.args, keep)))
    launch_to_work, work_to_launch = _link(slices, trace.cat_names)
    found: list[Diagnostic] = []
    if after_sync.size:
        found.append(Diagnostic(
            "device-work-after-sync", "warning", int(after_sync.size),
            "device work ending after a later device synchronize had returned (impossible: "
            "the sync waits for it); dropped"))
    if far.size:
        found.append(Diagnostic(
            "device-work-past-host", "warning", int(far.size),
            "device work ending far past the last host event (more than the whole host span "
            "later); dropped"))
    return replace(trace, slices=slices, launch_to_work=launch_to_work,
                   work_to_launch=work_to_launch, diagnostics=(*trace.diagnostics, *found))


def _tell_work_before_launch(trace: Trace) -> Trace:
    """Say how many device records start before the launch they are linked to (no clock
    allows it: the host's and the device's clocks disagree, or the link is wrong). The
    records stay; the calls leave such a launch's latency out (``analyses.calls``)."""
    s = trace.slices
    early = sum(1 for work, launch in trace.work_to_launch.items()
                if s.start[work] < s.start[launch])
    if not early:
        return trace
    return replace(trace, diagnostics=(*trace.diagnostics, Diagnostic(
        "device-work-before-launch", "warning", early,
        "device work starting before its launch call (impossible: the clocks or the "
        "correlation ids are wrong); launch latency left out for those launches")))


# ---------------------------------------------------------------- Python frames outliving their caller
#
# PyTorch's Python tracer records a C function's end when it sees it return; where it
# misses the return (an exception, a function that re-enters the interpreter, the tracer
# joining a thread late) it records the frame ending much later. On the real cold-compile
# fixture, builtin ``__exit__``/``mul``/``next`` frames opened during Dynamo's tracing are
# recorded ending 1.4 s later, at the end of the trace; on real compiled training steps
# ``__exit__`` frames 50-91 ms past their caller were seen. Believed, such a frame makes a
# child larger than its parent in a call tree, a self time above its inclusive time, idle
# thread time charged to a category, and one call of a whole run. A Python frame cannot
# outlive the frame that called it, so each is clipped to its caller's end, and the
# clipped frames are listed (names, by how much) in the ``python-frame-overhang``
# diagnostic.
#
# Only Python frames against Python frames are judged: a ``record_function`` range (a
# ``cpu_op`` or ``user_annotation``) may legitimately open inside one frame and close
# inside another, and is left as recorded.

OVERHANGS_LISTED = 5  # frames named in the diagnostic
_CLIP_BLOCK = 1 << 20  # frames compared at a time for the clipped ones
_NATIVE_CLIP = native.load("clip")


def clip_to_callers(st: np.ndarray, en: np.ndarray, *, general: bool = False,
                    in_place: bool = False) -> np.ndarray:
    """Python frames in start order (longest first): each frame's end clipped to its
    caller's (the innermost open frame, whose end is already clipped). Compiled
    (``analyses/_host_sweep.c``: ``tv_clip_rows``, over every position) when built; the
    loop is the reference (``general``) and the fallback. ``in_place``: ``en`` (int64,
    contiguous) is rewritten and returned, where the compiled loop can (no second column
    of ends)."""
    if _NATIVE_CLIP is not None and not general and en.size < 2**31:
        s64 = np.ascontiguousarray(st, np.int64)
        if in_place and en.dtype == np.int64 and en.flags.c_contiguous and en.flags.writeable:
            out64 = en
        else:
            out64 = np.array(en, np.int64, copy=True)
        n = max(out64.size, 1)
        # the stack and the clipped frames' buffers: pages touched to the nesting depth
        # and to the count clipped
        scratch, hit_rows, hit_by = np.empty(n, np.int64), np.empty(n, np.int32), np.empty(n, np.int64)
        at = np.arange(out64.size, dtype=np.int32)
        _NATIVE_CLIP(out64.size, at.ctypes.data, s64.ctypes.data, out64.ctypes.data,
                     scratch.ctypes.data, hit_rows.ctypes.data, hit_by.ctypes.data)
        return out64
    out = en.tolist()
    stack: list[int] = []  # clipped ends of the open frames, innermost last
    pop, push = stack.pop, stack.append
    for i, a in enumerate(st.tolist()):
        while stack and stack[-1] <= a:
            pop()
        if stack and out[i] > stack[-1]:
            out[i] = stack[-1]
        push(out[i])
    return np.asarray(out, np.int64)


def _clip_in_place(s: Slices, part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One thread's frames (rows in start order) clipped by the compiled loop, read where
    they lie and their ends rewritten in the model's end column: (clipped rows, by how
    much each)."""
    assert _NATIVE_CLIP is not None
    stack = np.empty(part.size, np.int64)  # pages touched to the nesting depth
    hit_rows = np.empty(part.size, np.int32)  # and to the count clipped
    hit_by = np.empty(part.size, np.int64)
    k = _NATIVE_CLIP(part.size, part.ctypes.data, s.start.ctypes.data, s.end.ctypes.data,
                     stack.ctypes.data, hit_rows.ctypes.data, hit_by.ctypes.data)
    return hit_rows[:k].copy(), hit_by[:k].copy()


def _clip_gathered(s: Slices, part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``_clip_in_place`` through gathered copies of the frames' starts and ends (the
    loop, or a column the compiled loop cannot write)."""
    st = s.start[part]
    en = s.end[part]
    en = clip_to_callers(st, en, in_place=True)
    del st
    # the clipped frames, found a block at a time (no second gather of every end)
    hit = np.concatenate([np.flatnonzero(en[lo:lo + _CLIP_BLOCK]
                                         < s.end[part[lo:lo + _CLIP_BLOCK]]) + lo
                          for lo in range(0, part.size, _CLIP_BLOCK)])
    rows, new_end = part[hit], en[hit]
    by = s.end[rows] - new_end
    s.end[rows] = new_end  # the model's own column (made by _kept_slices or a drop)
    return rows, by


def _increasing_at(col: np.ndarray, idx: np.ndarray) -> bool:
    """``intervals.increasing(col[idx])``, gathered a block at a time."""
    for lo in range(0, max(idx.size - 1, 0), _CLIP_BLOCK):
        v = col[idx[lo:lo + _CLIP_BLOCK + 1]]
        if not (v[1:] > v[:-1]).all():
            return False
    return True


def _longest_first(end: np.ndarray, part: np.ndarray, sub: np.ndarray) -> tuple[np.ndarray]:
    return (-end[part[sub]],)


def _clip_python_frames(trace: Trace) -> Trace:
    """Clip every thread's Python frames to their callers in the trace being built (the
    model's own end column, rewritten in place), and name the clipped frames in a
    ``python-frame-overhang`` diagnostic. Zero-length frames call nothing (an analysis
    ignores them), so they are left out of the callers.

    One thread at a time, with one row-sized column alive at most besides the rows and
    the ends being clipped: a cold compile holds millions of frames, and the sort and
    the gathered columns of all of them at once were the load's peak memory."""
    s = trace.slices
    py = trace.cat_code("python_function")
    if py < 0:
        return trace
    rows = intervals.nonzero_rows((s.cat == py) & (s.end > s.start))
    if rows.size < 2:
        return trace
    lanes = s.lane[rows]
    if lanes.size and lanes.min() != lanes.max():  # the frames of each thread together
        rows = rows[intervals.grouped_order(lanes, len(trace.lanes))]  # no int64 order
        lanes = s.lane[rows]
    bounds = [0, *(np.flatnonzero(lanes[1:] != lanes[:-1]) + 1).tolist(), rows.size]
    del lanes
    threads = [rows] if len(bounds) == 2 else [rows[a:b] for a, b in zip(bounds[:-1], bounds[1:],
                                                                        strict=False)]
    del rows  # each thread's frames are held by ``threads`` alone, and dropped once clipped
    clip = _clip_in_place if (_NATIVE_CLIP is not None and s.end.dtype == np.int64
                              and s.start.dtype == np.int64 and s.end.flags.c_contiguous
                              and s.start.flags.c_contiguous and s.end.flags.writeable
                              and threads[0].dtype == np.int32) else _clip_gathered
    hits: list[np.ndarray] = []
    overs: list[np.ndarray] = []  # by how much each clipped frame was clipped
    while threads:
        part = threads.pop(0)
        # in start order, longest first: the innermost open frame is the caller (a
        # profiler writes a thread's frames in start order, as a rule: no sort then)
        if not _increasing_at(s.start, part):
            st = s.start[part]
            order = intervals.start_order(st, partial(_longest_first, s.end, part))
            del st
            part = part[order]
            del order
        hit, by = clip(s, part)
        hits.append(hit)
        overs.append(by)
        del part
    at = np.concatenate(hits)
    if at.size == 0:
        return trace
    by_ns = np.concatenate(overs)
    worst: dict[int, int] = {}
    for code, by in zip(s.name[at].tolist(), by_ns.tolist(), strict=True):
        worst[code] = max(worst.get(code, 0), by)
    top = sorted(worst.items(), key=lambda kv: (-kv[1], trace.names[kv[0]]))[:OVERHANGS_LISTED]
    named = "; ".join(f"{trace.names[c]} by up to {fmt_ns(ns)}" for c, ns in top)
    return replace(trace, diagnostics=(*trace.diagnostics, Diagnostic(
        "python-frame-overhang", "warning", int(at.size),
        f"Python frames recorded as ending after the frame that called them (a profiler "
        f"artifact) clipped to their caller's end: {named}")))
