"""What the decoder hands the model, finished: complete events as columns (``X`` events
and the ``B``/``E`` pairs, ids already coerced, times in integer ns with ``MISSING`` where
unusable), their args kept as raw bytes and decoded only when read, what the other
phases said (flows, thread names, counts), the metadata and the problems met.

This is the whole io -> model interface: the model reads these fields and never calls
io's decode helpers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from traceview.intervals import OneDimensional, positions
from traceview.io.events import decode_args
from traceview.io.exact_time import MISSING

__all__ = ["ARGS_KEPT_CATS", "LEGACY_CATS", "MISSING", "Columns", "Decoded", "IdColumn", "LazyArgs",
           "Phases"]

# The category of every event ``explain --annotate`` adds to a trace (io/annotations.py
# says why the loader and the model leave them out).
ANNOTATION_CAT = "traceview"

# PyTorch 1.8-1.9 (the first Kineto releases) wrote capitalised categories for the same
# events the later profiler writes in lower case: a kernel on stream 7 was ``Kernel``
# under pid 0 and tid ``"stream 7"``. The model reads them as their modern names, so such
# a trace has device work, launches and ops (HTA reads them the same way).
LEGACY_CATS = {"Kernel": "kernel", "Memcpy": "gpu_memcpy", "Memset": "gpu_memset",
               "Runtime": "cuda_runtime", "Operator": "cpu_op"}

# Event categories whose args the model reads (kept as raw bytes, decoded on access).
ARGS_KEPT_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "cpu_op", "cuda_runtime",
                            "cuda_driver", "user_annotation", "gpu_user_annotation", "cuda_sync",
                            *LEGACY_CATS})


class LazyArgs(Mapping[int, dict[str, Any]]):
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

    def raw(self, rows: list[int]) -> list[bytes]:
        """Each row's args as the file wrote them (``b""`` for a row without), for a
        reader that decodes many rows' args in one call."""
        raw = self._raw
        return [raw.get(r, b"") for r in rows]

    def keys_present(self, rows: list[int], keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` the args of any of ``rows`` have at the top level. The rows'
        raw bytes are joined once for all the keys and searched in C; only rows whose
        bytes hold a key's text are decoded (asking this of every op of a big trace must
        not decode them all, nor gather their bytes once per key)."""
        raw = self._raw
        blob = b"\n".join(filter(None, map(raw.get, rows)))
        found = set()
        for key in keys:
            needle = key.encode()
            if needle in blob and any(needle in raw[r] and key in self[r]
                                      for r in rows if r in raw):
                found.add(key)
        return found

    def subset(self, rows: dict[int, int]) -> LazyArgs:
        """Renumbered copy: ``rows`` maps old row -> new row (dropped rows absent)."""
        return LazyArgs({rows[r]: b for r, b in self._raw.items() if r in rows})

    def whole_numbers(self, rows: list[int], key: str) -> np.ndarray:
        """The non-negative integer values of ``key`` in the args of ``rows`` (the rows
        without it, or with a value that is no integer of at most 18 digits, left out),
        read from the raw bytes without decoding them: a profiler numbers every one of a
        big trace's CPU events."""
        raw = self._raw
        blob = b"\n".join(filter(None, map(raw.get, rows)))
        found = re.findall(b'"' + re.escape(key.encode()) + rb'"\s*:\s*(\d{1,18})\s*[,}]', blob)
        return np.array(found, dtype=bytes).astype(np.int64) if found else np.zeros(0, np.int64)

    def with_items(self, extra: dict[int, bytes]) -> LazyArgs:
        out = LazyArgs(dict(self._raw))
        out._raw.update(extra)
        return out


class _Flags:
    """``flags.writeable`` of an ``IdColumn``: the model makes its columns read-only."""

    def __init__(self, owner: IdColumn) -> None:
        self._owner = owner

    @property
    def writeable(self) -> bool:
        return bool(self._owner.vals.flags.writeable)

    @writeable.setter
    def writeable(self, value: bool) -> None:
        self._owner.rows.flags.writeable = value
        self._owner.vals.flags.writeable = value


class IdColumn(OneDimensional):
    """A row-sized id column that holds ids on few rows (correlation ids: a cold compile
    has tens of millions of Python frames and a few hundred launches), kept as the rows
    that have one (sorted) and their ids; every other row reads ``absent`` (-1). Read as
    the dense column it stands for: an index (a numpy integer back), a slice, an index
    array or mask (arrays back), ``==``/``!=`` a value (a row-sized bool array), and
    ``np.asarray``/``astype``/``tolist`` for all of it. ``take`` keeps it sparse where
    rows are dropped."""

    __slots__ = ("n", "rows", "vals", "absent")

    def __init__(self, n: int, rows: np.ndarray, vals: np.ndarray, absent: int = -1) -> None:
        self.n = n
        self.rows = rows
        self.vals = vals
        self.absent = absent

    @staticmethod
    def of(dense: np.ndarray, absent: int = -1, block: int = 1 << 20) -> IdColumn:
        """The sparse form of a dense column (its present rows found a block at a time)."""
        parts = []
        for lo in range(0, dense.size, block):
            found = np.flatnonzero(dense[lo:lo + block] != absent)
            if found.size:
                parts.append(found + lo)
        rows = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        return IdColumn(int(dense.size), rows, dense[rows], absent)

    @property
    def dtype(self) -> np.dtype:
        return self.vals.dtype

    @property
    def flags(self) -> _Flags:
        return _Flags(self)

    def _at(self, idx: np.ndarray) -> np.ndarray:
        out = np.full(idx.shape, self.absent, self.vals.dtype)
        if self.rows.size and idx.size:
            at = np.minimum(np.searchsorted(self.rows, idx), self.rows.size - 1)
            hit = self.rows[at] == idx
            out[hit] = self.vals[at[hit]]
        return out

    def __getitem__(self, key):
        if isinstance(key, slice):
            return self._at(np.arange(self.n)[key])
        if isinstance(key, (int, np.integer)):
            i = int(key) + (self.n if int(key) < 0 else 0)
            if not 0 <= i < self.n:
                raise IndexError(f"index {int(key)} is out of bounds for size {self.n}")
            return self._at(np.asarray([i]))[0]
        return self._at(positions(key, self.n))

    def __setitem__(self, key, value) -> None:
        """Never written in place (as a read-only numpy column, ValueError): ``with_ids``
        makes a changed copy."""
        raise ValueError("an id column is read-only: with_ids makes a changed copy")

    def take(self, keep: np.ndarray) -> IdColumn:
        """The column of rows ``keep`` (sorted, distinct), renumbered: still sparse."""
        keep = np.asarray(keep)
        if not self.rows.size:
            return IdColumn(int(keep.size), self.rows[:0], self.vals[:0], self.absent)
        at = np.searchsorted(keep, self.rows)
        ok = at < keep.size
        ok[ok] = keep[at[ok]] == self.rows[ok]
        return IdColumn(int(keep.size), at[ok], self.vals[ok], self.absent)

    def with_ids(self, rows: np.ndarray, ids: np.ndarray) -> IdColumn:
        """A copy with ``ids`` set at ``rows`` (int64 values: any id fits)."""
        dense_rows = np.concatenate([self.rows.astype(np.int64), np.asarray(rows, np.int64)])
        vals = np.concatenate([self.vals.astype(np.int64), np.asarray(ids, np.int64)])
        keep = np.unique(dense_rows[::-1], return_index=True)[1]  # the last one set wins
        keep = dense_rows.size - 1 - keep
        order = np.argsort(dense_rows[keep], kind="stable")
        keep = keep[order]
        rows_, vals_ = dense_rows[keep], vals[keep]
        present = vals_ != self.absent
        return IdColumn(self.n, rows_[present], vals_[present], self.absent)

    def extended(self, tail: np.ndarray) -> IdColumn:
        """This column followed by the dense ``tail`` (ids of rows appended after it)."""
        tail = np.asarray(tail, np.int64)
        at = np.flatnonzero(tail != self.absent)
        return IdColumn(self.n + int(tail.size),
                        np.concatenate([self.rows.astype(np.int64), at + self.n]),
                        np.concatenate([self.vals, tail[at]]), self.absent)

    def narrowed(self, narrow) -> IdColumn:
        """The same column with its ids passed through ``narrow`` (a dtype choice)."""
        return IdColumn(self.n, self.rows, narrow(self.vals), self.absent)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = np.full(self.n, self.absent, self.vals.dtype if dtype is None else dtype)
        out[self.rows] = self.vals
        return out

    def astype(self, dtype, *, copy: bool = True) -> np.ndarray:
        """The dense column as ``dtype`` (always a new array)."""
        return self.__array__(dtype)

    def copy(self) -> IdColumn:
        return IdColumn(self.n, self.rows.copy(), self.vals.copy(), self.absent)

    def tolist(self) -> list[int]:
        return np.asarray(self).tolist()

    def __eq__(self, other) -> np.ndarray:  # type: ignore[override]
        if np.ndim(other) != 0:
            return np.asarray(self) == other
        out = np.full(self.n, self.absent == other, bool)
        out[self.rows] = self.vals == other
        return out

    def __ne__(self, other) -> np.ndarray:  # type: ignore[override]
        return ~(self == other)

    __hash__ = None  # type: ignore[assignment]


@dataclass
class Columns:
    """Complete ('X') events as columns, in file order. ``key`` codes index ``keys``,
    tuples ``(ph, cat, pid, tid)``; ``name`` codes index ``names``."""

    key: np.ndarray
    name: np.ndarray
    ts: np.ndarray  # int64 ns, MISSING where absent or unusable
    dur: np.ndarray  # int64 ns, MISSING where absent
    # the link ids, -1 when absent (int32 when every one of them fits, else int64), held
    # as the rows that have one: a cold compile's Python frames have none
    corr: IdColumn
    stream: IdColumn
    device: IdColumn
    args: LazyArgs

    def rewritten(self, key: np.ndarray, name: np.ndarray, ts: np.ndarray, dur: np.ndarray,
                  ids: Mapping[str, list[tuple[np.ndarray, np.ndarray]]],
                  keep: np.ndarray) -> Columns:
        """These columns as a foreign format's reader rewrites them into Kineto's
        (``io/nsys.py``, ``io/rocprof.py``): new keys, names and exact times, the link ids
        it found (``ids``: ``corr``, ``stream``, ``device`` -> (rows, values) parts) laid
        over the file's own, and only the rows ``keep`` marks, renumbered with their args."""
        cols = {}
        for what, col in (("corr", self.corr), ("stream", self.stream), ("device", self.device)):
            parts = ids.get(what)
            cols[what] = col if not parts else col.with_ids(
                np.concatenate([r for r, _ in parts]), np.concatenate([v for _, v in parts]))
        if keep.all():
            return Columns(key, name, ts, dur, cols["corr"], cols["stream"], cols["device"],
                           self.args)
        rows = np.flatnonzero(keep)
        old = np.fromiter(self.args, np.int64, len(self.args))
        at = np.searchsorted(rows, old)
        ok = at < rows.size
        ok[ok] = rows[at[ok]] == old[ok]
        renumber = dict(zip(old[ok].tolist(), at[ok].tolist(), strict=True))
        return Columns(key[rows], name[rows], ts[rows], dur[rows], cols["corr"].take(rows),
                       cols["stream"].take(rows), cols["device"].take(rows),
                       self.args.subset(renumber))


FlowKey = tuple[int | str, int | str, int]  # (pid, tid, ts ns) of a flow event


@dataclass(eq=False)
class Phases:
    """What the non-X events said, besides the slices they added to the columns.

    The flows, (pid, tid, ts ns) -> flow id of the ``s`` events (``flow_start``) and of
    the ``f`` events (``flow_end``), a later one at a key replacing an earlier one: the
    collector hands each chunk's flows over as columns (``add_flows``), and they become
    the tables when the tables are first read. A trace whose launches and kernels all
    carry their correlation never reads them (the model reads them only for those that
    do not), and a dict entry per flow was a twentieth of explaining a 200,000-event
    trace."""

    # ("thread_name" | "process_name", pid, tid) -> name
    thread_names: dict[tuple[str, int | str, int | str], str] = field(default_factory=dict)
    instants: int = 0
    # diagnostic code -> events: unmatched-end, unclosed-begin, other-phase, unknown-phase
    counts: dict[str, int] = field(default_factory=dict)
    _tables: tuple[dict[FlowKey, int], dict[FlowKey, int]] = field(
        default_factory=lambda: ({}, {}), repr=False)
    # (start?, pids, tids, key codes, ts, ids) per chunk, in file order, not yet in _tables
    _pending: list[tuple[bool, list, list, np.ndarray, np.ndarray, np.ndarray]] = field(
        default_factory=list, repr=False)

    @property
    def flow_start(self) -> dict[FlowKey, int]:
        """The ``s`` events' table (written to in place by the event-by-event folds)."""
        if self._pending:
            self._flush()
        return self._tables[0]

    @property
    def flow_end(self) -> dict[FlowKey, int]:
        """The ``f`` events' table."""
        if self._pending:
            self._flush()
        return self._tables[1]

    def has_flows(self) -> bool:
        return bool(self._pending) or any(self._tables)

    def add_flows(self, pids: list, tids: list, codes: np.ndarray, ts: np.ndarray,
                  ids: np.ndarray, *, start: bool) -> None:
        """A chunk's flows of one kind, after every flow before them in the file: flow k
        is (pids[codes[k]], tids[codes[k]], ts[k]) -> ids[k]."""
        if codes.size:
            self._pending.append((start, pids, tids, codes, ts, ids))

    def _flush(self) -> None:
        for start, pids, tids, codes, ts, ids in self._pending:
            c = codes.tolist()
            self._tables[0 if start else 1].update(zip(
                zip(map(pids.__getitem__, c), map(tids.__getitem__, c), ts.tolist(),
                    strict=True), ids.tolist(), strict=True))
        self._pending.clear()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Phases):
            return NotImplemented
        return (self.flow_start, self.flow_end, self.thread_names, self.instants,
                self.counts) == (other.flow_start, other.flow_end, other.thread_names,
                                 other.instants, other.counts)

    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass with eq is


@dataclass
class Decoded:
    """What the file held: X events and ``B``/``E`` pairs as columns, what the other
    phases said, metadata, and problems met while decoding (turned into diagnostics by
    the model)."""

    path: str
    keys: list[tuple[str, str, int | str, int | str]]  # (ph, cat, pid, tid) per key code
    names: list[str]
    x: Columns
    phases: Phases
    metadata: dict[str, Any]
    problems: list[tuple[str, int, str]] = field(default_factory=list)
    compressed_bytes: int = 0
    decoded_bytes: int = 0
    # where the event array's closing ']' is in the text (from its first byte; None for
    # a text cut short): ``--annotate`` streams the text through and adds its events there
    events_end: int | None = None
