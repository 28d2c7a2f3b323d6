"""An independent count of a Chrome/Kineto trace's headline figures, written from the
documentation, not from traceview's code: the public corpus test (``test_public_corpus.py``)
checks traceview's figures against these. Standard library only (``json``, ``gzip``,
``decimal``) plus ``tests/rawcount.py``'s plain interval arithmetic.

What is counted, and the rule each follows (README "How it counts", docs/json.md,
docs/robustness.md, docs/training.md):

* **Events.** Complete events (``ph`` ``X``) and ``B``/``E`` pairs (paired per thread in
  time order, ties in file order). ``ts``/``dur`` are microseconds given as integers,
  floats or strings; each becomes integer nanoseconds exactly (the number's decimal text
  times 1000, rounded half-even). An event without a usable ``ts`` is dropped; without
  ``dur`` it is zero-length; a negative ``dur`` or one over an hour is dropped. Exact
  duplicates (same category, name, thread, start, end and correlation id) count once.
* **rocprof (v1) Chrome traces** (``rocprof --hip-trace``'s ``results.json``, as its
  documentation and the file show it): events without ``cat``, on processes that
  ``process_name`` metadata names ``GPU<N>`` (kernels), ``COPY`` (copies), ``CPU HIP API``
  (HIP calls); ``ts``/``dur`` whole microseconds, the exact time in args
  ``BeginNs``/``EndNs`` (text). Recognised by an event on such a process with both of
  those args. Then: an event on a GPU process is a kernel, on COPY a memcpy (a memset
  where its name says ``Fill``: rocprof's tblextr.py files copies and fills there by
  name), on CPU HIP API a runtime call (``cuda_runtime``); an event on a ``GPU
  Barriers<N>`` process (a barrier packet: a wait in a device queue) is not counted; each
  time is ``BeginNs`` to ``EndNs`` where both are there.
* **Categories.** PyTorch 1.8/1.9 Kineto wrote ``Kernel``, ``Memcpy``, ``Memset``,
  ``Runtime``, ``Operator`` where later releases write ``kernel``, ``gpu_memcpy``,
  ``gpu_memset``, ``cuda_runtime``, ``cpu_op``. The reference reads both spellings as the
  same thing: the device work of a 1.8 trace is device work. Its ``Operator`` slices named
  as the profiler's own ranges (``ProfilerStep#N``, ``enumerate(DataLoader)#...``,
  ``Optimizer.*``) are user ranges, as later releases file them.
* **Nsight Systems captures converted to Chrome JSON** (nCompass' converter, documented in
  its ``ncompass/trace/converters``: a bare list of events, every time also given exactly
  in args ``start_ns``/``end_ns``). Recognised by a ``cuda`` or ``cuda_api`` event (or a
  ``kernel`` on a ``"Device N"`` pid) with integer ``start_ns``/``end_ns`` and a
  ``correlationId``. Then: ``cuda`` (and such ``kernel``) events are kernels (a copy or a
  set where named as nsys names them, ``[CUDA memcpy ...]``, ``[CUDA memset]``), on device
  ``deviceId`` and stream ``streamId``, their correlation ``correlationId``; ``cuda_api``
  events are CUDA runtime calls of the host thread ``raw_pid``/``raw_tid``, named without
  the API version nsys appends (``cudaLaunchKernel_v7000`` is ``cudaLaunchKernel``);
  ``nvtx`` ranges are user ranges of that host thread; ``nvtx-kernel`` ranges (NVTX
  ranges projected onto the kernels) are device labels, never activity; ``osrt`` (OS
  runtime calls) are not counted (traceview leaves them out, saying so); each time is
  ``start_ns`` to ``end_ns`` where both are there.
* **Window** (``window.source`` ``activity``): from the earliest start to the latest end
  of every slice except profiler spans (``Trace``), profiler ``overhead``, device labels
  (``gpu_user_annotation``) and flow records (``ac2g``). Host ops, Python frames,
  runtime/driver calls, device work and slices of unknown categories all widen it.
* **Device busy**: the length of the union of kernel, memcpy and memset intervals across
  every stream and device, clipped to the window. Counts: the kernels, memcpys and memsets.
* **Launches**: runtime/driver API slices (``cuda_runtime``, ``cuda_driver``) whose name is
  a launch API of ``traceview/data/default_rules.json``'s ``launch_apis`` (that list is the
  documented definition; it is read as data), starting inside the window; counted by name.
* **Steps**: the host ``ProfilerStep#N`` ranges of one thread, the one holding the most
  (ties to the lowest PID/TID text, docs/training.md: ranks fused into one file hold a
  series each), each extended to the end of the device
  work launched inside it (a launch API slice in the range, linked to its work by
  ``args.correlation``) where that work outlasts the range, never past the next step's
  start (docs/training.md "A step's extent"); each with the union of device work clipped
  to that extent. Where host threads of several processes launched device work (ranks
  fused into one file), the launches are the step thread's process's and the device work
  that on the devices they ran on.
* **Phases** inside a step, where the trace's frames show them (docs/training.md):
  ``data_loading`` is the union of ``enumerate(DataLoader)#`` ranges (user ranges or
  Python frames on the step thread); ``optimizer`` the union of ``Optimizer.step#`` /
  ``Optimizer.zero_grad#`` user ranges on the step thread, less what ``data_loading`` took;
  ``backward`` the step thread's ``torch/_tensor.py: backward`` /
  ``torch/autograd/__init__.py: backward`` frames plus the envelope (first start to last
  end) of the ``autograd::engine::evaluate_function:`` ops and of the autograd nodes
  (``*Backward``, ``torch::autograd::AccumulateGrad``) on any thread of the step thread's
  process (docs/training.md: a rank fused into the same file is another process), one
  envelope per run of that work (a run ends where the step thread does work of its own,
  any event but a user range, wholly between two pieces of it: a step of ten iterations
  holds ten runs), less the two before; ``forward`` the step thread's ``nn.Module:``
  frames (their union is the union of the top ones), or, in a trace without Python
  frames, the time before each backward segment back to the previous one (or the step's
  start), less the phases before it. ``other`` is the rest (not
  counted). A step without frames and without backward has no forward figure here.
"""

from __future__ import annotations

import gzip
import json
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, NamedTuple

from rawcount import clip, length, minus, union

RULES = Path(__file__).resolve().parent.parent / "traceview" / "data" / "default_rules.json"

LEGACY = {"Kernel": "kernel", "Memcpy": "gpu_memcpy", "Memset": "gpu_memset",
          "Runtime": "cuda_runtime", "Operator": "cpu_op"}
DEVICE_WORK = {"kernel", "gpu_memcpy", "gpu_memset"}
NOT_ACTIVITY = {"Trace", "overhead", "gpu_user_annotation", "ac2g"}
HOUR_NS = 3_600 * 10**9
STEP = re.compile(r"^ProfilerStep#\d+$")
DATALOADER = re.compile(r"^enumerate\(DataLoader\)#")
OPTIMIZER = re.compile(r"^Optimizer\.(step|zero_grad)#")
BACKWARD_FRAME = re.compile(r"^torch/_tensor\.py\(\d+\): backward$|^torch/autograd/__init__\.py\(\d+\): backward$")
AUTOGRAD_OP = "autograd::engine::evaluate_function: "
AUTOGRAD_NODE = re.compile(r"^[A-Z][A-Za-z0-9_]*Backward\d*$|^torch::autograd::AccumulateGrad$")
MODULE = "nn.Module: "
PROFILER_RANGE = re.compile(r"^ProfilerStep#\d+$|^enumerate\(DataLoader\)#|^Optimizer\.")


class Slice(NamedTuple):
    cat: str
    name: str
    pid: Any
    tid: Any
    start: int
    end: int
    corr: Any = None  # args.correlation: links a launch to its device work


@dataclass
class Step:
    name: str
    start: int
    end: int
    busy_ns: int
    phases: dict[str, int] = field(default_factory=dict)


@dataclass
class Figures:
    window_start: int
    window_end: int
    busy_ns: int
    kernels: int
    memcpys: int
    memsets: int
    launches: int
    launches_by_api: dict[str, int]
    steps: list[Step]
    has_frames: bool

    @property
    def window_ns(self) -> int:
        return self.window_end - self.window_start


def _ns(value: Any) -> int | None:
    """Microseconds (int, float read as its decimal text, or a numeric string) -> ns."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        d = value if isinstance(value, Decimal) else Decimal(str(value).strip())
    except InvalidOperation:
        return None
    if not d.is_finite():
        return None
    return int((d * 1000).to_integral_value())


def _id(value: Any) -> Any:
    """``"100"``, ``100.0`` and ``100`` name one thread."""
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)
    if isinstance(value, str):
        try:
            d = Decimal(value.strip())
            if d.is_finite() and d == d.to_integral_value():
                return int(d)
        except InvalidOperation:
            pass
    return value


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (int, str, type(None))) else repr(value)


def load_events(path: Path) -> list[dict]:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw, parse_float=Decimal)
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise ValueError(f"{path}: no traceEvents list")
    events = [e for e in events if isinstance(e, dict)]
    return rocprof_as_kineto(events) if is_rocprof(events) else events


ROCPROF_LANES = {"COPY": "gpu_memcpy", "CPU HIP API": "cuda_runtime"}


def _rocprof_lanes(events: list[dict]) -> dict[Any, str]:
    """pid -> the category of its events, for the processes a rocprof trace names."""
    out = {}
    for ev in events:
        if ev.get("ph") == "M" and ev.get("name") == "process_name" and isinstance(ev.get("args"), dict):
            name = ev["args"].get("name")
            cat = "kernel" if isinstance(name, str) and re.fullmatch(r"GPU\d+", name) \
                else ROCPROF_LANES.get(name) if isinstance(name, str) else None
            if isinstance(name, str) and re.fullmatch(r"GPU Barriers\d+", name):
                cat = "barrier"
            if cat:
                out[_id(ev.get("pid"))] = cat
    return out


def _rocprof_exact(ev: dict) -> tuple[int, int] | None:
    args = ev.get("args")
    if not isinstance(args, dict):
        return None
    try:
        begin, end = int(str(args.get("BeginNs"))), int(str(args.get("EndNs")))
    except ValueError:
        return None
    return (begin, end) if 0 <= begin <= end else None


def is_rocprof(events: list[dict]) -> bool:
    """Whether the events are rocprof's own Chrome trace."""
    lanes = _rocprof_lanes(events)
    return any(ev.get("ph") == "X" and "cat" not in ev and _id(ev.get("pid")) in lanes
               and _rocprof_exact(ev) is not None for ev in events)


def rocprof_as_kineto(events: list[dict]) -> list[dict]:
    """A rocprof trace's events as Kineto would have written them (what they are by the
    process they are on; their exact times)."""
    lanes = _rocprof_lanes(events)
    out = []
    for ev in events:
        cat = lanes.get(_id(ev.get("pid"))) if ev.get("ph") == "X" and "cat" not in ev else None
        if cat is None:
            out.append(ev)
            continue
        if cat == "barrier":
            continue
        ev = dict(ev)
        name = ev.get("name")
        ev["cat"] = "gpu_memset" if cat == "gpu_memcpy" and isinstance(name, str) \
            and "Fill" in name else cat
        exact = _rocprof_exact(ev)
        if exact is not None:
            ev["ts"] = Decimal(exact[0]) / 1000
            ev["dur"] = Decimal(exact[1] - exact[0]) / 1000
        ev["args"] = {}  # rocprof's args hold no Kineto link
        out.append(ev)
    return out


NSYS_VERSION = re.compile(r"^(cu[A-Za-z0-9]*?)_v\d+$")


def _nsys_exact(ev: dict) -> bool:
    args = ev.get("args")
    return isinstance(args, dict) and all(
        isinstance(args.get(k), int) and not isinstance(args.get(k), bool)
        for k in ("start_ns", "end_ns", "correlationId"))


def is_nsys(events: list[dict]) -> bool:
    """Whether the events are an Nsight Systems capture converted by nCompass' converter."""
    return any(ev.get("ph") == "X" and _nsys_exact(ev) and (
        ev.get("cat") in ("cuda", "cuda_api") or (
            ev.get("cat") == "kernel" and str(ev.get("pid", "")).startswith("Device ")))
        for ev in events)


def _nsys_event(ev: dict) -> dict | None:
    """One converted event as Kineto would have written it (None: not counted)."""
    cat, args = ev.get("cat"), ev.get("args") if isinstance(ev.get("args"), dict) else {}
    if cat == "osrt":
        return None
    out = dict(ev)
    if isinstance(args.get("start_ns"), int) and isinstance(args.get("end_ns"), int):
        out["ts"] = Decimal(args["start_ns"]) / 1000
        out["dur"] = Decimal(args["end_ns"] - args["start_ns"]) / 1000
    if cat in ("cuda", "kernel"):
        name = str(ev.get("name", ""))
        out["cat"] = ("gpu_memcpy" if name.startswith("[CUDA memcpy") else
                      "gpu_memset" if name.startswith("[CUDA memset") else "kernel")
        out["pid"], out["tid"] = args.get("deviceId", ev.get("pid")), args.get("streamId", ev.get("tid"))
        out["args"] = {"correlation": args.get("correlationId")}
    elif cat == "nvtx-kernel":
        out["cat"] = "gpu_user_annotation"
    elif cat in ("cuda_api", "nvtx"):
        out["cat"] = "cuda_runtime" if cat == "cuda_api" else "user_annotation"
        if "raw_pid" in args and "raw_tid" in args:
            out["pid"], out["tid"] = args["raw_pid"], args["raw_tid"]
        m = NSYS_VERSION.match(str(ev.get("name", "")))
        if cat == "cuda_api" and m:
            out["name"] = m.group(1)
        out["args"] = {"correlation": args.get("correlationId")} if cat == "cuda_api" else {}
    return out


def slices(events: list[dict]) -> list[Slice]:
    if is_nsys(events):
        events = [e for e in map(_nsys_event, events) if e is not None]
    out: list[Slice] = []
    seen: set[tuple] = set()
    begins: list[tuple[int, int, dict]] = []  # (ts, file order, event) of B and E
    for order, ev in enumerate(events):
        ph = ev.get("ph")
        if ph in ("B", "E"):
            ts = _ns(ev.get("ts"))
            if ts is not None:
                begins.append((ts, order, ev))
            continue
        if ph != "X":
            continue
        start = _ns(ev.get("ts"))
        if start is None:
            continue
        dur = _ns(ev.get("dur")) if "dur" in ev else 0
        if dur is None:
            dur = 0
        if dur < 0 or dur > HOUR_NS:
            continue
        _add(out, seen, ev, start, start + dur)
    open_: dict[tuple, list[tuple[int, dict]]] = {}
    for ts, _, ev in sorted(begins, key=lambda t: (t[0], t[1])):
        key = (_id(ev.get("pid")), _id(ev.get("tid")))
        if ev["ph"] == "B":
            open_.setdefault(key, []).append((ts, ev))
        elif open_.get(key):
            b_ts, b_ev = open_[key].pop()
            if ts - b_ts <= HOUR_NS:
                _add(out, seen, b_ev, b_ts, ts)
    return out


def _add(out: list[Slice], seen: set[tuple], ev: dict, start: int, end: int) -> None:
    cat = ev.get("cat")
    cat = cat if isinstance(cat, str) else ""
    name = ev.get("name")
    name = name if isinstance(name, str) else ""
    # PyTorch 1.8/1.9 filed the profiler's own ranges (steps, the data loader, the
    # optimizer) among the Operators; they are the user ranges of later releases
    cat = "user_annotation" if cat == "Operator" and PROFILER_RANGE.search(name) \
        else LEGACY.get(cat, cat)
    raw_args = ev.get("args")
    args: dict = raw_args if isinstance(raw_args, dict) else {}
    pid, tid = _id(ev.get("pid")), _id(ev.get("tid"))
    key = (cat, name, _hashable(pid), _hashable(tid), start, end, _hashable(args.get("correlation")))
    if key in seen:
        return
    seen.add(key)
    out.append(Slice(cat, name, pid, tid, start, end, _hashable(args.get("correlation"))))


def launch_apis() -> set[str]:
    doc = json.loads(RULES.read_text())
    return {name for names in doc["launch_apis"].values() for name in names}


def count(path: Path | str) -> Figures:
    sl = slices(load_events(Path(path)))
    activity = [s for s in sl if s.cat not in NOT_ACTIVITY]
    lo = min((s.start for s in activity), default=0)
    hi = max((s.end for s in activity), default=0)
    work = [s for s in sl if s.cat in DEVICE_WORK]
    busy_iv = union(clip([[s.start, s.end] for s in work], lo, hi))
    # device work counts where it overlaps the window; a zero-length item counts where it
    # lies inside it (json.md: "device work items overlapping the window")
    in_window = [s for s in work if s.start <= hi and s.end >= lo]
    apis = launch_apis()
    by_api: dict[str, int] = {}
    for s in sl:
        if s.cat in ("cuda_runtime", "cuda_driver") and s.name in apis and lo <= s.start <= hi:
            by_api[s.name] = by_api.get(s.name, 0) + 1
    steps = _steps(sl, work, apis)
    return Figures(
        window_start=lo, window_end=hi, busy_ns=length(busy_iv),
        kernels=sum(1 for s in in_window if s.cat == "kernel"),
        memcpys=sum(1 for s in in_window if s.cat == "gpu_memcpy"),
        memsets=sum(1 for s in in_window if s.cat == "gpu_memset"),
        launches=sum(by_api.values()), launches_by_api=by_api, steps=steps,
        has_frames=any(s.cat == "python_function" for s in sl))


def _runs(pieces: list[list[int]], on_thread: list[Slice]) -> list[list[int]]:
    """The envelope of each run of autograd work (docs/training.md): ``pieces`` is the
    work's union in time order; a run ends where the step thread does work of its own
    (any of its events but a user range) wholly between two pieces, as the next
    micro-batch's forward or the next iteration's optimizer between two backward passes."""
    own = sorted((s.start, s.end) for s in on_thread if s.cat != "user_annotation")
    starts = [s for s, _ in own]
    runs: list[list[int]] = []
    for a, b in pieces:
        # the thread's events starting in the gap, any of them ending in it too
        gap = own[bisect_left(starts, runs[-1][1]):bisect_right(starts, a)] if runs else []
        if runs and not any(e <= a for _, e in gap):
            runs[-1][1] = b
        else:
            runs.append([a, b])
    return runs


def _steps(sl: list[Slice], work: list[Slice], apis: set[str]) -> list[Step]:
    marks = [s for s in sl if s.cat in ("user_annotation", "cpu_op") and STEP.match(s.name)]
    if not marks:
        return []
    # the step thread: the one holding the step ranges (the most of them; ties to the
    # lowest PID/TID text, docs/training.md)
    threads: dict[tuple, int] = {}
    for s in marks:
        threads[(s.pid, s.tid)] = threads.get((s.pid, s.tid), 0) + 1
    thread = min(threads, key=lambda k: (-threads[k], str(k[0]), str(k[1])))
    on_thread = [s for s in sl if (s.pid, s.tid) == thread]
    work_iv = union([[w.start, w.end] for w in work])
    evaluate = [s for s in sl if s.cat == "cpu_op" and s.pid == thread[0]
                and (s.name.startswith(AUTOGRAD_OP) or AUTOGRAD_NODE.search(s.name))]
    ends_of: dict[Any, int] = {}  # correlation id -> the end of the device work it launched
    for w in work:
        if w.corr is not None:
            ends_of[w.corr] = max(ends_of.get(w.corr, w.end), w.end)
    launches = [s for s in sl if s.cat in ("cuda_runtime", "cuda_driver") and s.name in apis
                and s.corr in ends_of]
    # several processes launched device work (ranks fused into one file): a step's device
    # work is its own process's launches and the devices they ran on (docs/training.md)
    if len({s.pid for s in launches}) > 1:
        launches = [s for s in launches if s.pid == thread[0]]
        mine = {s.corr for s in launches}
        devices = {w.pid for w in work if w.corr in mine}
        if devices:
            work_iv = union([[w.start, w.end] for w in work if w.pid in devices])
    frames = any(s.cat == "python_function" for s in sl)
    out = []
    ranges = sorted((s for s in marks if (s.pid, s.tid) == thread), key=lambda s: s.start)
    for k, m in enumerate(ranges):
        lo, hi = m.start, m.end
        nxt = ranges[k + 1].start if k + 1 < len(ranges) else None
        tail = max((ends_of[s.corr] for s in launches if lo <= s.start < hi), default=hi)
        if tail > hi:
            hi = tail if nxt is None else max(hi, min(tail, nxt))
        step = Step(m.name, lo, hi, length(clip(work_iv, lo, hi)))
        dl = union(clip([[s.start, s.end] for s in on_thread
                         if s.cat in ("user_annotation", "python_function") and DATALOADER.search(s.name)], lo, hi))
        opt = minus(union(clip([[s.start, s.end] for s in on_thread
                                if s.cat == "user_annotation" and OPTIMIZER.search(s.name)], lo, hi)), dl)
        bwd_iv = [[s.start, s.end] for s in on_thread if s.cat == "python_function" and BACKWARD_FRAME.search(s.name)]
        inside = [s for s in evaluate if s.start < hi and s.end > lo]
        bwd_iv += _runs(union([[s.start, s.end] for s in inside]), on_thread)
        bwd = minus(minus(union(clip(bwd_iv, lo, hi)), dl), union(opt))
        claimed = union(dl + opt + bwd)
        if frames:
            fwd_iv = union(clip([[s.start, s.end] for s in on_thread
                                 if s.cat == "python_function" and s.name.startswith(MODULE)], lo, hi))
        else:
            # before each backward segment, back to the previous one (each micro-batch's)
            fwd_iv = [[bwd[j - 1][1] if j else lo, b[0]] for j, b in enumerate(bwd)]
        fwd = minus(fwd_iv, claimed)
        step.phases = {"data_loading": length(dl), "optimizer": length(opt), "backward": length(bwd)}
        if frames or bwd:
            step.phases["forward"] = length(fwd)
        out.append(step)
    return out
