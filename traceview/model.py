"""The trace model: lanes, slices and links, in integer nanoseconds.

``build(decoded)`` turns raw events into:

* **lanes** — one per host thread ``(pid, tid)`` and one per device stream
  ``(device, stream)``;
* **slices** — every duration event (``X``, and ``B``/``E`` pairs), stored as columns
  (numpy arrays) with interned category and name codes;
* **links** — launch API slice -> device work slices, by ``args.correlation``, falling
  back to ``ac2g`` flow ids when a side lacks the correlation argument.

Timestamps become integer ns once, here: Kineto writes microseconds as floats with
three decimals, and ``round(us * 1000)`` recovers the exact ns for every timestamp below
2**53 ns (104 days): the float's error is under half a ns and the product rounds to the
integer. String timestamps are parsed as decimals, exactly.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np

from traceview.diagnostics import Diagnostic
from traceview.io.decode import Decoded, RawEvent, decode_args

# Event categories that are device work (busy time). gpu_user_annotation is a label.
DEVICE_WORK_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
DEVICE_CATS = DEVICE_WORK_CATS | {"gpu_user_annotation"}
# Slices of these categories never widen the default window: profiler spans, profiler
# overhead, device labels. Every other slice, unknown categories included, is activity.
NON_ACTIVITY_CATS = frozenset({"Trace", "overhead", "gpu_user_annotation", "ac2g"})
ACTIVITY_CATS = frozenset({
    "cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver",
    "kernel", "gpu_memcpy", "gpu_memset",
})
KNOWN_CATS = ACTIVITY_CATS | {"gpu_user_annotation", "ac2g", "Trace", "overhead",
                              "python_function", ""}
# Slices whose args are decoded and kept (the rest are dropped after decoding ts/dur).
ARGS_KEPT_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "cpu_op", "cuda_runtime",
                            "cuda_driver", "user_annotation", "gpu_user_annotation"})
NO_ID = -1
# No profiler trace spans an hour (it would be tens of GB): a longer slice is a corrupt
# record (CUPTI has written kernels of "236 years"). Dropped, with a diagnostic, so it
# cannot poison totals.
ABSURD_DUR_NS = 3_600 * 10**9


@dataclass(frozen=True)
class Lane:
    """A row of the timeline: a host thread or a device stream."""

    index: int
    kind: str  # "host" | "device"
    pid: int | str
    tid: int | str
    device: int | None = None
    stream: int | None = None
    name: str = ""

    @property
    def label(self) -> str:
        if self.kind == "device":
            return f"device {self.device} stream {self.stream}"
        base = f"{self.pid}/{self.tid}"
        return f"{self.name} [{base}]" if self.name else f"thread {base}"


@dataclass
class Slices:
    """Duration events as columns. Row ``i`` is one slice; ``end = start + dur``."""

    cat: np.ndarray  # int32 code into Trace.cat_names
    name: np.ndarray  # int32 code into Trace.names
    lane: np.ndarray  # int32 index into Trace.lanes
    start: np.ndarray  # int64 ns
    end: np.ndarray  # int64 ns
    corr: np.ndarray  # int64 correlation id, NO_ID when absent
    args: dict[int, dict[str, Any]]  # row -> decoded args, for ARGS_KEPT_CATS only

    def __len__(self) -> int:
        return int(self.start.shape[0])

    @property
    def dur(self) -> np.ndarray:
        return self.end - self.start


@dataclass
class Trace:
    """A loaded trace: what the analyses read. Build with ``traceview.load``."""

    path: str
    metadata: dict[str, Any]
    cat_names: list[str]
    names: list[str]
    lanes: list[Lane]
    slices: Slices
    # launch slice row -> device work slice rows, and the reverse
    launch_to_work: dict[int, list[int]]
    work_to_launch: dict[int, int]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    instant_count: int = 0
    decoded_bytes: int = 0

    def cat_code(self, cat: str) -> int:
        try:
            return self.cat_names.index(cat)
        except ValueError:
            return -1

    def rows_of_cats(self, cats: frozenset[str] | set[str]) -> np.ndarray:
        codes = [i for i, c in enumerate(self.cat_names) if c in cats]
        return np.flatnonzero(np.isin(self.slices.cat, codes))

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
    def device_lanes(self) -> list[Lane]:
        return [lane for lane in self.lanes if lane.kind == "device"]

    @property
    def host_lanes(self) -> list[Lane]:
        return [lane for lane in self.lanes if lane.kind == "host"]


def _to_ns(value: float | str | None) -> int | None:
    """Microseconds (float, int or decimal string) to integer ns; None if unusable."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            d = Decimal(value.strip())
        except InvalidOperation:
            return None
        if not d.is_finite():
            return None
        return int((d * 1000).to_integral_value())
    if value != value or value in (float("inf"), float("-inf")):
        return None
    return round(value * 1000)


def _as_int(value: Any) -> int:
    if isinstance(value, bool):
        return NO_ID
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return NO_ID
    return NO_ID


class _Builder:
    def __init__(self) -> None:
        self.cat_codes: dict[str, int] = {}
        self.name_codes: dict[str, int] = {}
        self.lane_codes: dict[tuple, int] = {}
        self.lanes: list[Lane] = []
        self.cat: list[int] = []
        self.name: list[int] = []
        self.lane: list[int] = []
        self.start: list[int] = []
        self.end: list[int] = []
        self.corr: list[int] = []
        self.args: dict[int, dict[str, Any]] = {}
        self.counts: dict[str, int] = defaultdict(int)
        self.thread_names: dict[tuple, str] = {}
        # flow id by (lane key, ts ns, phase) for the correlation fallback
        self.flow_start: dict[tuple, int] = {}
        self.flow_end: dict[tuple, int] = {}
        self.unknown_cats: dict[str, int] = defaultdict(int)

    def code(self, table: dict[str, int], key: str) -> int:
        c = table.get(key)
        if c is None:
            c = table[key] = len(table)
        return c

    def lane_for(self, ev: RawEvent, args: dict[str, Any] | None) -> int:
        if ev.cat in DEVICE_CATS:
            dev = _as_int(args.get("device")) if args else NO_ID
            stream = _as_int(args.get("stream")) if args else NO_ID
            dev = dev if dev != NO_ID else _as_int(ev.pid)
            stream = stream if stream != NO_ID else _as_int(ev.tid)
            key: tuple = ("device", dev, stream)
        else:
            key = ("host", ev.pid, ev.tid)
        idx = self.lane_codes.get(key)
        if idx is None:
            idx = self.lane_codes[key] = len(self.lanes)
            if key[0] == "device":
                self.lanes.append(Lane(idx, "device", ev.pid, ev.tid, key[1], key[2]))
            else:
                self.lanes.append(Lane(idx, "host", ev.pid, ev.tid))
        return idx

    def add(self, ev: RawEvent, start: int, end: int) -> None:
        keep_args = ev.cat in ARGS_KEPT_CATS
        args = decode_args(ev.args) if keep_args else None
        row = len(self.start)
        self.cat.append(self.code(self.cat_codes, ev.cat))
        self.name.append(self.code(self.name_codes, ev.name))
        self.lane.append(self.lane_for(ev, args))
        self.start.append(start)
        self.end.append(end)
        self.corr.append(_as_int(args.get("correlation", NO_ID)) if args else NO_ID)
        if args:
            self.args[row] = args
        if ev.cat not in KNOWN_CATS:
            self.unknown_cats[ev.cat] += 1


def build(decoded: Decoded) -> Trace:
    """Turn decoded events into lanes, slices and links."""
    b = _Builder()
    diags: list[Diagnostic] = [
        Diagnostic(code, "warning", count, desc) for code, count, desc in decoded.problems
    ]
    open_b: dict[tuple, list[tuple[RawEvent, int]]] = defaultdict(list)
    instants = 0
    for ev in decoded.events:
        ph = ev.ph
        if ph == "X":
            start = _to_ns(ev.ts)
            if start is None:
                b.counts["missing-ts"] += 1
                continue
            dur = _to_ns(ev.dur)
            if dur is None:
                b.counts["missing-dur"] += 1
                dur = 0
            if dur < 0:
                b.counts["negative-dur"] += 1
                continue
            if dur > ABSURD_DUR_NS or abs(start) > 2**62:
                b.counts["absurd-dur"] += 1
                continue
            b.add(ev, start, start + dur)
        elif ph in ("s", "t", "f"):
            ts = _to_ns(ev.ts)
            fid = _as_int(ev.id)
            if ts is None or fid == NO_ID:
                continue
            if ph == "s":
                b.flow_start[(ev.pid, ev.tid, ts)] = fid
            elif ph == "f":
                b.flow_end[(ev.pid, ev.tid, ts)] = fid
        elif ph == "B":
            ts = _to_ns(ev.ts)
            if ts is not None:
                open_b[(ev.pid, ev.tid)].append((ev, ts))
        elif ph == "E":
            ts = _to_ns(ev.ts)
            stack = open_b.get((ev.pid, ev.tid))
            if ts is not None and stack:
                bev, bts = stack.pop()
                if ts >= bts:
                    b.add(bev, bts, ts)
        elif ph == "M":
            if ev.name in ("thread_name", "process_name"):
                nm = decode_args(ev.args).get("name")
                if isinstance(nm, str):
                    b.thread_names[(ev.name, ev.pid, ev.tid)] = nm
        elif ph in ("i", "I", "R", "n"):
            instants += 1
        elif ph in ("C", "b", "e", "N", "O", "D"):
            b.counts["other-phase"] += 1
        else:
            b.counts["unknown-phase"] += 1
    unclosed = sum(len(v) for v in open_b.values())
    if unclosed:
        b.counts["unclosed-begin"] += unclosed

    cat_names = [""] * len(b.cat_codes)
    for k, v in b.cat_codes.items():
        cat_names[v] = k
    names = [""] * len(b.name_codes)
    for k, v in b.name_codes.items():
        names[v] = k
    lanes = []
    for lane in b.lanes:
        if lane.kind == "host":
            nm = b.thread_names.get(("thread_name", lane.pid, lane.tid), "")
            lanes.append(Lane(lane.index, lane.kind, lane.pid, lane.tid, name=nm))
        else:
            lanes.append(lane)
    slices = Slices(
        cat=np.asarray(b.cat, dtype=np.int32),
        name=np.asarray(b.name, dtype=np.int32),
        lane=np.asarray(b.lane, dtype=np.int32),
        start=np.asarray(b.start, dtype=np.int64),
        end=np.asarray(b.end, dtype=np.int64),
        corr=np.asarray(b.corr, dtype=np.int64),
        args=b.args,
    )
    slices, dups = _dedupe(slices)
    if dups:
        b.counts["duplicate"] += dups
    _fill_corr_from_flows(b, slices, lanes)
    launch_to_work, work_to_launch = _link(slices, cat_names, names)

    messages = {
        "missing-ts": ("warning", "duration events without a usable 'ts' were dropped"),
        "missing-dur": ("warning", "'X' events without 'dur' were kept as zero-length"),
        "negative-dur": ("warning", "events with a negative duration were dropped"),
        "absurd-dur": ("warning", "events lasting over an hour (corrupt records) were dropped"),
        "duplicate": ("warning", "exact duplicate events were dropped"),
        "unclosed-begin": ("warning", "'B' events without a matching 'E' were dropped"),
        "unknown-phase": ("warning", "events with an unknown 'ph' were ignored"),
        "other-phase": ("info", "counter/async/object events were ignored"),
    }
    for code, count in b.counts.items():
        sev, msg = messages[code]
        diags.append(Diagnostic(code, sev, count, msg))
    for cat, count in sorted(b.unknown_cats.items()):
        diags.append(Diagnostic("unknown-category", "info", count,
                                f"events of unknown category {cat!r} kept as host work ('other')"))
    return Trace(
        path=decoded.path,
        metadata=decoded.metadata,
        cat_names=cat_names,
        names=names,
        lanes=lanes,
        slices=slices,
        launch_to_work=launch_to_work,
        work_to_launch=work_to_launch,
        diagnostics=diags,
        instant_count=instants,
        decoded_bytes=decoded.decoded_bytes,
    )


def _dedupe(slices: Slices) -> tuple[Slices, int]:
    """Drop exact duplicates (same category, name, lane, start, end and correlation)."""
    n = len(slices)
    if n < 2:
        return slices, 0
    keys = np.stack([slices.cat.astype(np.int64), slices.name.astype(np.int64),
                     slices.lane.astype(np.int64), slices.start, slices.end, slices.corr], axis=1)
    _, first = np.unique(keys, axis=0, return_index=True)
    if first.size == n:
        return slices, 0
    keep = np.sort(first)
    remap = {int(old): new for new, old in enumerate(keep.tolist())}
    args = {remap[r]: a for r, a in slices.args.items() if r in remap}
    return Slices(slices.cat[keep], slices.name[keep], slices.lane[keep], slices.start[keep],
                  slices.end[keep], slices.corr[keep], args), n - int(first.size)


def _fill_corr_from_flows(b: _Builder, slices: Slices, lanes: list[Lane]) -> None:
    """Where a launch or kernel lacks ``args.correlation``, take the ac2g flow id."""
    if not (b.flow_start or b.flow_end):
        return
    missing = np.flatnonzero(slices.corr == NO_ID)
    for row in missing.tolist():
        lane = lanes[int(slices.lane[row])]
        key = (lane.pid, lane.tid, int(slices.start[row]))
        fid = b.flow_end.get(key) if lane.kind == "device" else b.flow_start.get(key)
        if fid is not None:
            slices.corr[row] = fid


def _link(slices: Slices, cat_names: list[str], names: list[str]) -> tuple[dict, dict]:
    """Launch -> device work by correlation id (one launch may own many kernels: graphs)."""
    work_codes = [i for i, c in enumerate(cat_names) if c in DEVICE_WORK_CATS]
    host_codes = [i for i, c in enumerate(cat_names) if c in ("cuda_runtime", "cuda_driver")]
    is_work = np.isin(slices.cat, work_codes) & (slices.corr != NO_ID)
    is_api = np.isin(slices.cat, host_codes) & (slices.corr != NO_ID)
    api_by_corr: dict[int, int] = {}
    for row, corr in zip(np.flatnonzero(is_api).tolist(), slices.corr[is_api].tolist()):
        api_by_corr.setdefault(corr, row)
    launch_to_work: dict[int, list[int]] = defaultdict(list)
    work_to_launch: dict[int, int] = {}
    for row, corr in zip(np.flatnonzero(is_work).tolist(), slices.corr[is_work].tolist()):
        api = api_by_corr.get(corr)
        if api is not None:
            launch_to_work[api].append(row)
            work_to_launch[row] = api
    return dict(launch_to_work), work_to_launch
