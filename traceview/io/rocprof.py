"""rocprof (v1) Chrome JSON traces, read as what they record.

``rocprof --hip-trace`` (and ``--hsa-trace``, ``--roctx-trace``) writes ``results.json``,
a Chrome trace of its own, not Kineto's:

* no event has a ``cat``: what an event is, is said by the lane it is on, a process named
  by ``process_name`` metadata: ``GPU0``, ``GPU1``, ... (kernels dispatched to that agent),
  ``COPY`` (copies of every device), ``CPU HIP API`` (HIP calls), ``CPU HSA API`` (HSA
  calls), ``CPU KFD API``, ``Markers and Ranges`` (roctx ranges), ``GPU Barriers<N>`` (barrier
  packets: waits in a device queue, no work; left out, counted in the diagnostic);
* ``ts`` and ``dur`` are whole microseconds written as text; the exact nanoseconds are in
  args ``BeginNs``/``EndNs`` (text too). Two calls in one microsecond share ``ts`` and
  ``dur`` and are two calls all the same;
* device work carries its agent and stream in args ``dev-id`` and ``stream-id``; a call
  or roctx range lies on its API's lane (pid) and its thread's tid, and names its own
  process and thread in args ``pid``/``tid``;
* a flow (``s`` in the HIP call, its step ``t`` at the start of the kernel or copy; no
  ``f``) links each launch or copy call to the work it made. The ``s`` is in the middle
  of the call, not at its start, so the arrow is bound as Chrome binds it: to the slice
  of its thread that holds its time.

The trace is recognised by that evidence, never by its file name: lanes named as rocprof
names them holding events without a category whose args give ``BeginNs``/``EndNs``. Its
events then become what Kineto would have written: ``kernel`` on a GPU lane,
``gpu_memcpy`` on the COPY lane (``gpu_memset`` for a ``Fill``: rocprof files copies and
fills there by name), each on its device and stream (as Kineto puts a copy on the stream
that ran it, so a stream's kernels and copies are one lane); ``cuda_runtime`` for a HIP call and ``cuda_driver`` for an HSA or KFD call on the
host thread that made it (args ``pid``/``tid``, so its HIP and HSA calls and roctx
ranges are one thread); ``user_annotation`` for a roctx range; their times the exact ns;
each launch and its work given the flow's id as their correlation, so every analysis reads
them as it reads Kineto's.

Any other trace's events without a category lose the args kept for this reader, so
nothing else reads them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import msgspec
import numpy as np

from traceview.coerce import NO_ID, small_whole, thread_id
from traceview.io.columns import Columns, Phases

# the diagnostic that says a trace was read as rocprof's (the findings word their advice
# in rocprof's terms by it: report/findings.py, recorded_by)
DIAGNOSTIC = "rocprof-json"
_GPU = re.compile(r"^GPU(\d+)$")
_BARRIERS = re.compile(r"^GPU Barriers(\d+)$")
# rocprof files an operation on the COPY lane by its name (Memcpy, Copy or Fill): a fill
# is a memset
_FILL = re.compile(r"Fill")
_HOST_CATS = {"CPU HIP API": "cuda_runtime", "CPU HSA API": "cuda_driver",
              "CPU KFD API": "cuda_driver", "Markers and Ranges": "user_annotation"}
_NONE = -1  # an absent or unusable value in the arrays below (every id here is >= 0)
_BARRIER = "barrier"  # a barrier packet: left out


class _Args(msgspec.Struct, gc=False):
    """The args of a rocprof event that say where and when it ran (rocprof writes text)."""

    BeginNs: str | int | None = None
    EndNs: str | int | None = None
    dev_id: str | int | None = msgspec.field(default=None, name="dev-id")
    stream_id: str | int | None = msgspec.field(default=None, name="stream-id")
    pid: str | int | None = None  # the process and thread that made a call
    tid: str | int | None = None


_ONE = msgspec.json.Decoder(_Args)


def _whole(value: str | int | None) -> int:
    """A non-negative whole number of rocprof's args (text or int), else ``_NONE``."""
    v = small_whole(value)
    return _NONE if v is None else v


def _decode(blobs: list[bytes]) -> dict[str, np.ndarray]:
    """The rows' args as int64 arrays (``_NONE`` where absent or unusable), each row read
    alone: one odd row must not cost the others their exact times."""
    cols: dict[str, list[int]] = {f: [] for f in _Args.__struct_fields__}
    for b in blobs:
        try:
            a = _ONE.decode(b or b"{}")
        except (msgspec.DecodeError, msgspec.ValidationError):
            a = _Args()
        for f, out in cols.items():
            out.append(_whole(getattr(a, f)))
    return {f: np.asarray(v, np.int64) for f, v in cols.items()}


def _lanes(thread_names: Mapping[tuple[str, int | str, int | str], str]
           ) -> dict[int | str, tuple[str, int]]:
    """pid -> the category of the events on it and the lane's device (``_NONE`` where
    its name gives none), for the processes rocprof names."""
    out: dict[int | str, tuple[str, int]] = {}
    for (kind, pid, _), name in thread_names.items():
        if kind != "process_name":
            continue
        gpu, barriers = _GPU.match(name), _BARRIERS.match(name)
        if gpu:
            out[pid] = ("kernel", _whole(gpu.group(1)))
        elif barriers:
            out[pid] = (_BARRIER, _whole(barriers.group(1)))
        elif name == "COPY":
            out[pid] = ("gpu_memcpy", _NONE)
        elif name in _HOST_CATS:
            out[pid] = (_HOST_CATS[name], _NONE)
    return out


def read(x: Columns, keys: list[tuple[str, str, int | str, int | str]], names: list[str],
         phases: Phases) -> tuple[Columns, list[tuple[str, int, str]]]:
    """The columns of a rocprof trace as Kineto's (``keys`` grows in place), and the
    diagnostic saying so; any other trace's columns with the args of its events without a
    category let go, and no diagnostic."""
    bare = [i for i, k in enumerate(keys) if k[0] == "X" and k[1] == ""]
    if not bare:
        return x, []
    lanes = _lanes(phases.thread_names)
    ours = [k for k in bare if thread_id(keys[k][2]) in lanes]
    rows = np.flatnonzero(np.isin(x.key, ours)) if ours else np.zeros(0, np.int64)
    if not rows.size:
        return _let_go(x, bare), []
    a = _decode(x.args.raw(rows.tolist()))
    exact = (a["BeginNs"] != _NONE) & (a["EndNs"] >= a["BeginNs"])
    if not exact.any():
        return _let_go(x, bare), []
    out = _Rewrite(x, keys, names)
    row_key = x.key[rows]
    for k in ours:
        at = np.flatnonzero(row_key == k)
        cat, device = lanes[thread_id(keys[k][2])]
        out.group(k, cat, device, rows[at], {f: v[at] for f, v in a.items()}, exact[at])
    out.link(phases)
    x = _let_go(out.columns(), [k for k in bare if k not in ours])
    left_out = (f"; {_n(out.barriers, 'barrier packet')} (its GPU Barriers lanes: waits "
                "in a device queue, no work) left out" if out.barriers else "")
    return x, [(DIAGNOSTIC, int(rows.size),
                f"events read from a rocprof Chrome trace: {_n(out.kernels, 'kernel')} "
                f"(its GPU lanes) and {_n(out.copies, 'copy', 'copies')} (its COPY lane) on "
                f"their devices' streams, {_n(out.calls, 'API call')} on their host "
                f"threads, {out.linked} of them linked to their work by rocprof's flow "
                f"arrows, times exact from args BeginNs/EndNs{left_out}")]


def _n(n: int, one: str, many: str = "") -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _let_go(x: Columns, bare: list[int]) -> Columns:
    """The columns with the args (and ids read from them) of the ``bare`` keys' rows let
    go: kept only for this reader, they are no other trace's to read."""
    if not bare or not len(x.args):
        return x
    drop = np.flatnonzero(np.isin(x.key, bare))
    held = np.fromiter(x.args, np.int64, len(x.args))
    if not np.isin(held, drop).any():
        return x
    keep = held[~np.isin(held, drop)].tolist()
    none = np.full(drop.size, NO_ID, np.int64)
    return Columns(x.key, x.name, x.ts, x.dur, x.corr.with_ids(drop, none),
                   x.stream.with_ids(drop, none), x.device.with_ids(drop, none),
                   x.args.subset(dict(zip(keep, keep, strict=True))))


class _Rewrite:
    """The rewritten columns, a key's rows at a time."""

    def __init__(self, x: Columns, keys: list[tuple[str, str, int | str, int | str]],
                 names: list[str]) -> None:
        self.x, self.keys, self.names = x, keys, names
        self.key_index = {k: i for i, k in enumerate(keys)}
        self.key, self.ts, self.dur = x.key.copy(), x.ts.copy(), x.dur.copy()
        self.ids: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {
            "corr": [], "stream": [], "device": []}
        self.host: list[np.ndarray] = []  # rows of calls, to bind flow starts to
        self.device: list[np.ndarray] = []  # rows of device work, to bind flow ends to
        self.kernels = self.copies = self.calls = self.linked = self.barriers = 0
        self.keep = np.ones(x.key.size, bool)

    def _key(self, key: tuple[str, str, int | str, int | str]) -> int:
        code = self.key_index.get(key)
        if code is None:
            code = self.key_index[key] = len(self.keys)
            self.keys.append(key)
        return code

    def group(self, k: int, cat: str, device: int, rows: np.ndarray,
              a: dict[str, np.ndarray], exact: np.ndarray) -> None:
        """The rows of key ``k``, on a lane whose events are ``cat`` (of ``device``, from
        the lane's name): their args ``a``, and whether their exact times are there."""
        _, _, pid, tid = self.keys[k]
        if cat == _BARRIER:
            self.keep[rows] = False
            self.barriers += int(rows.size)
            return
        self.ts[rows[exact]] = a["BeginNs"][exact]
        self.dur[rows[exact]] = a["EndNs"][exact] - a["BeginNs"][exact]
        if cat not in ("kernel", "gpu_memcpy"):
            # on the thread its args name: the lane is the API's (HIP calls on one pid,
            # HSA calls on another, roctx ranges on a third), so one thread's HIP and HSA
            # calls and roctx ranges become one host thread
            own = (a["pid"] != _NONE) & (a["tid"] != _NONE)
            self.key[rows[~own]] = self._key(("X", cat, pid, tid))
            if own.any():
                threads, inverse = np.unique(np.stack([a["pid"][own], a["tid"][own]]), axis=1,
                                             return_inverse=True)
                codes = [self._key(("X", cat, p, t)) for p, t in threads.T.tolist()]
                self.key[rows[own]] = np.asarray(codes, self.key.dtype)[inverse.ravel()]
            self.host.append(rows)
            self.calls += int(rows.size) if cat != "user_annotation" else 0
            return
        names = self.x.name[rows]
        fills = np.isin(names, [c for c in np.unique(names).tolist() if _FILL.search(self.names[c])])
        self.key[rows] = self._key(("X", cat, pid, tid))
        if cat == "gpu_memcpy" and fills.any():
            self.key[rows[fills]] = self._key(("X", "gpu_memset", pid, tid))
        # the agent's own id, else the number of the GPU lane's name
        self._id("device", rows, np.where(a["dev_id"] != _NONE, a["dev_id"], device))
        self._id("stream", rows, a["stream_id"])
        self.device.append(rows)
        if cat == "kernel":
            self.kernels += int(rows.size)
        else:
            self.copies += int(rows.size)

    def _id(self, what: str, rows: np.ndarray, values: np.ndarray) -> None:
        ok = values != _NONE
        if ok.any():
            self.ids[what].append((rows[ok], values[ok]))

    def link(self, phases: Phases) -> None:
        """Each flow's id as the correlation of the call holding its start and of the
        device work at its end (its step), where both are found and neither has one."""
        if not phases.has_flows() or not self.host or not self.device:
            return
        x = self.x
        # bound on the lanes as the file drew them, as its flows were (x.key, not self.key)
        starts = _binder(self.keys, x.key, x.ts, x.dur, np.concatenate(self.host))
        ends = _binder(self.keys, x.key, x.ts, x.dur, np.concatenate(self.device))
        at_start = {fid: starts(key) for key, fid in phases.flow_start.items()}
        pairs = [(at_start[fid], ends(key), fid) for key, fid in phases.flow_end.items()
                 if at_start.get(fid) is not None]
        pairs = [(s, e, fid) for s, e, fid in pairs if e is not None and fid >= 0]
        has = x.corr != NO_ID
        pairs = [(s, e, fid) for s, e, fid in pairs if not has[s] and not has[e]]
        if pairs:
            rows = np.asarray([r for s, e, _ in pairs for r in (s, e)], np.int64)
            ids = np.asarray([fid for _, _, fid in pairs for _ in (0, 1)], np.int64)
            self.ids["corr"].append((rows, ids))
        self.linked = len(pairs)

    def columns(self) -> Columns:
        return self.x.rewritten(self.key, self.x.name, self.ts, self.dur, self.ids,
                                self.keep)


def _binder(keys: list[tuple[str, str, int | str, int | str]], key_of_row: np.ndarray,
            ts: np.ndarray, dur: np.ndarray, rows: np.ndarray):
    """``(pid, tid, t) -> row``: the row among ``rows`` on that thread whose time as the
    file wrote it (whole microseconds, as the flow's) holds ``t``, the latest to start
    where several do (the innermost), else None."""
    by_thread: dict[tuple[int | str, int | str], tuple[np.ndarray, ...]] = {}
    thread = [(thread_id(k[2]), thread_id(k[3])) for k in keys]
    groups: dict[tuple[int | str, int | str], list[int]] = {}
    for r, k in zip(rows.tolist(), key_of_row[rows].tolist(), strict=True):
        groups.setdefault(thread[k], []).append(r)
    for t, rs in groups.items():
        r = np.asarray(rs, np.int64)
        r = r[np.argsort(ts[r], kind="stable")]
        end = ts[r] + np.maximum(dur[r], 0)
        by_thread[t] = (r, ts[r], end, np.maximum.accumulate(end))

    def find(key: tuple[int | str, int | str, int]) -> int | None:
        got = by_thread.get((key[0], key[1]))
        if got is None:
            return None
        r, start, end, reach = got
        i = int(np.searchsorted(start, key[2], side="right")) - 1
        while i >= 0 and reach[i] >= key[2]:  # a slice at or before i may still hold t
            if end[i] >= key[2]:
                return int(r[i])
            i -= 1
        return None

    return find
