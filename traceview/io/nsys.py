"""Nsight Systems captures converted to Chrome JSON, read as what they record.

nCompass' converter (``ncompass.trace.converters``, "nsys2chrome") turns an ``nsys export``
SQLite file into a bare list of Chrome events with categories of its own, not Kineto's:

* ``cuda`` (``kernel`` in later releases): a kernel, on pid ``"Device N"`` tid
  ``"Stream M"``, args ``correlationId``, ``deviceId``, ``streamId``, ``grid``, ``block``;
* ``cuda_api``: a CUDA runtime or driver call, on pid ``"Device N"`` tid ``"CUDA API
  Thread T"``; the host process and thread that made it are only in args ``raw_pid`` and
  ``raw_tid``. Names carry the API version nsys records (``cudaLaunchKernel_v7000``);
* ``nvtx``: an NVTX push/pop range, on pid ``"Device N"`` (the process id where no device
  is known) tid ``"NVTX Thread T"``, the host thread again in ``raw_pid``/``raw_tid``;
* ``nvtx-kernel``: an NVTX range projected onto the device, from the first to the last
  kernel launched inside it (the converter then drops the host range): what Kineto calls a
  ``gpu_user_annotation``, a label on the device's timeline that is no work of its own;
* ``osrt`` (OS runtime calls), ``sched`` (thread scheduling instants), ``cuda_flow``
  (flow arrows from a call to its kernels), ``__metadata``.

Every event's ``ts``/``dur`` are nanoseconds divided by 1000.0 (a float); the exact
integers are in args ``start_ns``/``end_ns`` on kernels, calls and NVTX ranges.

The trace is recognised by that evidence, never by its file name: a ``cuda`` or
``cuda_api`` event (or a ``kernel`` on a ``"Device N"`` pid) whose args hold integer
``start_ns``/``end_ns`` and a ``correlationId``. Then its events become what Kineto would
have written (``kernel``/``gpu_memcpy``/``gpu_memset``, ``cuda_runtime``/``cuda_driver``
on the calling host thread, ``user_annotation``, ``gpu_user_annotation``), with their
correlation, device and stream, their exact ns times, and the API names as nsys shows
them (``cudaLaunchKernel``), so that every analysis reads them as it reads Kineto's.

The OS runtime calls are left out, counted in a diagnostic: nsys records only the calls
it traces, most of them blocking waits (``poll``, ``epoll_wait``, ``sem_wait``,
``pthread_cond_timedwait``) on threads that launch nothing; read as host work they would
show idle threads as busy ones, and a wait inside a CUDA call as that call's work.
Scheduling instants are instants: counted, as every trace's are, and not shown.
"""

from __future__ import annotations

import re
from operator import attrgetter

import msgspec
import numpy as np

from traceview.coerce import small_whole
from traceview.io.columns import Columns

# the converter's categories whose args say what an event is (the collector keeps them)
ARGS_CATS = frozenset({"cuda", "cuda_api", "nvtx", "nvtx-kernel"})
DEVICE_WORK = ("cuda", "kernel")
LEFT_OUT = "osrt"
# nsys names a copy and a set as its GUI and ``nsys stats`` do: "[CUDA memcpy
# Host-to-Device]", "[CUDA memset]" (the converter's releases so far export kernels only)
_MEMCPY = re.compile(r"^\[CUDA memcpy")
_MEMSET = re.compile(r"^\[CUDA memset")
# the API version nsys appends to a CUDA call's name (cudaLaunchKernel_v7000)
_VERSION = re.compile(r"^(cu[A-Za-z0-9]*?)_v\d+$")
_NUMBERED = re.compile(r"^(?:Device|Stream|Process|Thread|(?:CUDA API|NVTX|NVTX Kernel) Thread) (\d+)$")


class _Args(msgspec.Struct, gc=False):
    """The args of an event of the converter that say where and when it ran; an absent
    one reads as ``_NONE`` (every value here is an id or a time, never negative), so
    that a column of them is made in C (a null stays None)."""

    correlationId: int | None = -1
    deviceId: int | None = -1
    streamId: int | None = -1
    start_ns: int | None = -1
    end_ns: int | None = -1
    raw_pid: int | None = -1
    raw_tid: int | None = -1


_ARGS = msgspec.json.Decoder(list[_Args])
_ONE = msgspec.json.Decoder(_Args)
Key = tuple[str, str, int | str, int | str]


def _number(value: int | str) -> int | None:
    """The number of a converter's track name (``"Device 0"`` -> 0), else None."""
    if isinstance(value, int):
        return small_whole(value)
    m = _NUMBERED.match(value)
    return small_whole(m.group(1)) if m else None


def _is_candidate(key: Key) -> bool:
    ph, cat, pid, _ = key
    return ph == "X" and (cat in ARGS_CATS or cat == LEFT_OUT or (
        cat == "kernel" and isinstance(pid, str) and pid.startswith("Device ")))


def _decode(blobs: list[bytes]) -> list[_Args]:
    """Each event's args, in one decode; an event whose args do not fit is read alone
    (its fields that do not fit read as absent)."""
    try:
        return _ARGS.decode(b"[" + b",".join(b or b"{}" for b in blobs) + b"]")
    except (msgspec.DecodeError, msgspec.ValidationError):
        out = []
        for b in blobs:
            try:
                out.append(_ONE.decode(b or b"{}"))
            except (msgspec.DecodeError, msgspec.ValidationError):
                out.append(_Args())
        return out


class _Codes:
    """Code lookups that add what is new (keys, names) to the decoder's lists."""

    def __init__(self, items: list) -> None:
        self.items = items
        self.index = {v: i for i, v in enumerate(items)}

    def __call__(self, value: object) -> int:
        code = self.index.get(value)
        if code is None:
            code = self.index[value] = len(self.items)
            self.items.append(value)
        return code


_NONE = -1  # an absent or unusable value in the arrays below (every id here is >= 0)


def _arrays(args: list[_Args]) -> dict[str, np.ndarray]:
    """The args as int64 arrays, ``_NONE`` where absent, null or out of range."""
    out = {}
    for field in _Args.__struct_fields__:
        get = attrgetter(field)
        try:  # the usual column: every value an int64, absent ones -1 already
            col = np.fromiter(map(get, args), np.int64, len(args))
        except (TypeError, OverflowError):  # a null, or a value past int64
            col = np.fromiter((v if v is not None and 0 <= v < 2**62 else _NONE
                               for v in map(get, args)), np.int64, len(args))
        out[field] = np.where((col >= 0) & (col < 2**62), col, _NONE)
    return out


def read(x: Columns, keys: list[Key], names: list[str]
         ) -> tuple[Columns, list[tuple[str, int, str]]]:
    """The columns of a converted Nsight Systems capture as Kineto's (``keys`` and
    ``names`` grow in place), and the diagnostics saying so; any other trace's columns
    as they are, with none."""
    cand = [i for i, k in enumerate(keys) if _is_candidate(k)]
    if not cand:
        return x, []
    rows = np.flatnonzero(np.isin(x.key, cand))
    a = _arrays(_decode(x.args.raw(rows.tolist())))
    exact = (a["start_ns"] != _NONE) & (a["end_ns"] >= a["start_ns"])
    row_key = x.key[rows]
    evidence = [k for k in cand if keys[k][1] in ("cuda", "cuda_api", "kernel")]
    if not np.any(exact & (a["correlationId"] != _NONE) & np.isin(row_key, evidence)):
        return x, []
    out = _Rewrite(x, keys, names)
    for k in cand:
        at = np.flatnonzero(row_key == k)
        out.group(k, rows[at], {f: v[at] for f, v in a.items()}, exact[at])
    x = out.columns()
    problems = [("nsys-export", out.read,
                 "events read from an Nsight Systems capture converted to Chrome JSON "
                 "(nCompass' converter): kernels on their streams, CUDA calls on the host "
                 "threads that made them (args raw_pid/raw_tid), NVTX ranges as user ranges, "
                 "times exact from args start_ns/end_ns")]
    if out.left_out:
        problems.append(("nsys-osrt-left-out", out.left_out,
                         "OS runtime calls (osrt) left out: nsys records only the calls it "
                         "traces, most of them blocking waits (poll, epoll_wait, "
                         "pthread_cond_timedwait) on threads that launch nothing, so as "
                         "host work they would show idle threads as busy"))
    return x, problems


class _Rewrite:
    """The converted columns, made a key's rows at a time."""

    def __init__(self, x: Columns, keys: list[Key], names: list[str]) -> None:
        self.x = x
        self.keys, self.names = keys, names
        self.key_code, self.name_code = _Codes(keys), _Codes(names)
        self.key, self.name = x.key.copy(), x.name.copy()
        self.ts, self.dur = x.ts.copy(), x.dur.copy()
        self.keep = np.ones(x.key.size, bool)
        self.ids: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {
            "corr": [], "stream": [], "device": []}
        self.read = self.left_out = 0

    def group(self, k: int, rows: np.ndarray, a: dict[str, np.ndarray],
              exact: np.ndarray) -> None:
        """The rows of key ``k``: their args ``a`` and whether their exact times are there."""
        _, cat, pid, tid = self.keys[k]
        if cat == LEFT_OUT:
            self.keep[rows] = False
            self.left_out += int(rows.size)
            return
        self.read += int(rows.size)
        self.ts[rows[exact]] = a["start_ns"][exact]
        self.dur[rows[exact]] = a["end_ns"][exact] - a["start_ns"][exact]
        if cat in DEVICE_WORK or cat == "nvtx-kernel":
            self._device(rows, a, cat, pid, tid)
            return
        self._host(rows, a, cat, pid, tid)

    def _device(self, rows: np.ndarray, a: dict[str, np.ndarray], cat: str,
                pid: int | str, tid: int | str) -> None:
        """Kernels (copies and sets by name) and device labels: their device and stream
        from args, else from the track's name (``"Device 0"``, ``"Stream 7"``)."""
        codes = self.name[rows]
        for code in np.unique(codes).tolist():
            name = self.names[code]
            kind = ("gpu_user_annotation" if cat == "nvtx-kernel" else
                    "gpu_memcpy" if _MEMCPY.search(name) else
                    "gpu_memset" if _MEMSET.search(name) else "kernel")
            self.key[rows[codes == code]] = self.key_code(("X", kind, pid, tid))
        if cat in DEVICE_WORK:
            self._id("corr", rows, a["correlationId"])
            self._id("stream", rows, _or(a["streamId"], _number(tid)))
        self._id("device", rows, _or(a["deviceId"], _number(pid)))

    def _host(self, rows: np.ndarray, a: dict[str, np.ndarray], cat: str,
              pid: int | str, tid: int | str) -> None:
        """CUDA calls and NVTX ranges: on the host thread args ``raw_pid``/``raw_tid``
        name; a call's name without its API version, and its correlation id."""
        raw = (a["raw_pid"] != _NONE) & (a["raw_tid"] != _NONE)
        threads = np.stack([np.where(raw, a["raw_pid"], _NONE), np.where(raw, a["raw_tid"], _NONE)])
        pairs, inverse = np.unique(threads, axis=1, return_inverse=True)
        codes = self.name[rows]
        for j, (p, t) in enumerate(pairs.T.tolist()):
            on = inverse.ravel() == j
            thread = (p, t) if p != _NONE else (pid, tid)
            for code in np.unique(codes[on]).tolist():
                name = self.names[code]
                if cat == "nvtx":
                    kind = "user_annotation"
                else:
                    m = _VERSION.match(name)
                    name = m.group(1) if m else name
                    driver = name.startswith("cu") and not name.startswith("cuda")
                    kind = "cuda_driver" if driver else "cuda_runtime"
                these = rows[on & (codes == code)]
                self.key[these] = self.key_code(("X", kind, *thread))
                self.name[these] = self.name_code(name)
        if cat == "cuda_api":
            self._id("corr", rows, a["correlationId"])

    def _id(self, what: str, rows: np.ndarray, values: np.ndarray) -> None:
        ok = values != _NONE
        if ok.any():
            self.ids[what].append((rows[ok], values[ok]))

    def columns(self) -> Columns:
        return self.x.rewritten(self.key, self.name, self.ts, self.dur, self.ids,
                                self.keep)


def _or(values: np.ndarray, fallback: int | None) -> np.ndarray:
    return values if fallback is None else np.where(values != _NONE, values, fallback)

