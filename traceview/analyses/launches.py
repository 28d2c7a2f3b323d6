"""Launches: which host calls put work on the device, and which thread made them.

A launch is a runtime or driver API slice whose name is in the rules file's
``launch_apis`` — the driver API ``cuLaunchKernel(Ex)`` that Triton uses included, which
HTA's launch statistics miss. It links to device work by correlation id (or ac2g flow).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np

from traceview.analyses.window import Window
from traceview.model import Lane, Trace, codes_in
from traceview.rules import RuleSet
from traceview.stats import Stats, summarize

# A launch API that puts no record on the device by design: never a dropped record.
NO_DEVICE_RECORD = frozenset({"cudaLaunchHostFunc", "hipLaunchHostFunc"})
# Host APIs that begin and end a graph capture (CUDA, driver and HIP spellings): a launch
# between them is recorded into the graph, not run, so it has no device record by design.
CAPTURE_BEGIN = frozenset({"cudaStreamBeginCapture", "cudaStreamBeginCaptureToGraph",
                           "cudaStreamBeginCapture_v2", "hipStreamBeginCapture",
                           "cuStreamBeginCapture", "cuStreamBeginCapture_v2"})
CAPTURE_END = frozenset({"cudaStreamEndCapture", "hipStreamEndCapture", "cuStreamEndCapture"})


def capture_spans(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of each graph capture: a begin to the next end on the same thread."""
    s = trace.slices
    b_codes = [i for i, n in enumerate(trace.names) if n in CAPTURE_BEGIN]
    e_codes = [i for i, n in enumerate(trace.names) if n in CAPTURE_END]
    if not b_codes or not e_codes:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    begins = np.flatnonzero(trace.has_name(b_codes))
    ends = np.flatnonzero(trace.has_name(e_codes))
    st, en = [], []
    for lane in np.unique(s.lane[begins]).tolist():
        b = np.sort(s.start[begins[s.lane[begins] == lane]])
        e = np.sort(s.end[ends[s.lane[ends] == lane]])
        k = np.searchsorted(e, b, side="left")
        ok = k < e.size
        st.extend(b[ok].tolist())
        en.extend(e[k[ok]].tolist())
    return np.asarray(st, np.int64), np.asarray(en, np.int64)


# The diagnostic of a trace read as an Nsight Systems capture converted to Chrome JSON
# (``io/nsys.py``): nCompass' converter exports kernels, not copies or sets.
NSYS_EXPORT = "nsys-export"


def unexported_names(trace: Trace, rules: RuleSet) -> frozenset[str]:
    """The launch APIs whose device records the file does not hold by its making: in an
    Nsight Systems conversion without a single copy (set) record, the copy (set) calls.
    Their missing records are no loss, and say nothing of records lost before them."""
    if not any(g.code == NSYS_EXPORT for g in trace.diagnostics):
        return frozenset()
    out: set[str] = set()
    for kind, cat in (("memcpy", "gpu_memcpy"), ("memset", "gpu_memset")):
        if not trace.rows_of_cats({cat}).size:
            out |= rules.launch_apis.get(kind, frozenset())
    return frozenset(out)


def no_record_due(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Which launch rows put no record on the device by design: host functions, and
    launches inside a graph capture."""
    s = trace.slices
    codes = [i for i, n in enumerate(trace.names) if n in NO_DEVICE_RECORD]
    out = np.isin(s.name[rows], codes)
    cs, ce = capture_spans(trace)
    if cs.size:
        ls = s.start[rows]
        inside = ((ls[:, None] >= cs[None, :]) & (ls[:, None] < ce[None, :])).any(axis=1)
        out |= inside
    return out


@dataclass(frozen=True)
class LaunchSummary:
    rows: np.ndarray  # launch rows starting inside the window, sorted by start
    count: int
    linked: int
    by_api: dict[str, int]
    by_kind: dict[str, int]
    unlinked_work: int  # device work in the window with no launch record
    latency: Stats  # first device start - launch start, over linked launches
    thread: Lane | None  # the launching thread
    threads: dict[int, int]  # host lane index -> launches (all threads)
    # the device work rows counted in ``unlinked_work``, by start: per-call device work
    # counts them in the call they start in (``analyses.calls``)
    unlinked_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # launch APIs whose device records the file does not hold by its making
    # (``unexported_names``)
    unexported: frozenset[str] = frozenset()


def launch_rows(trace: Trace, rules: RuleSet) -> np.ndarray:
    apis = rules.all_launch_apis
    codes = [i for i, n in enumerate(trace.names) if n in apis]
    api_cats = [i for i, c in enumerate(trace.cat_names) if c in ("cuda_runtime", "cuda_driver")]
    s = trace.slices
    m = trace.has_name(codes) & codes_in(s.cat, api_cats, len(trace.cat_names))
    return np.flatnonzero(m)


def pick_thread(trace: Trace, rules: RuleSet, window: Window, override: str | None) -> Lane | None:
    """The thread that launched the most device work; else the busiest host thread."""
    hosts = trace.host_lanes
    if override:
        for lane in hosts:
            if f"{lane.pid}/{lane.tid}" == override:
                return lane
        from traceview.errors import UsageError
        known = ", ".join(f"{ln.pid}/{ln.tid}" for ln in hosts) or "none"
        raise UsageError(f"--thread {override}: no such host thread (threads: {known})")
    rows = launch_rows(trace, rules)
    if rows.size:
        counts = Counter(trace.slices.lane[rows].tolist())
        lane = min(counts, key=lambda i: (-counts[i], str(trace.lanes[i].pid),
                                          str(trace.lanes[i].tid)))
        return trace.lanes[lane]
    s = trace.slices
    best, best_ns = None, 0
    label_cats = {"user_annotation", "Trace", "overhead"}
    skip = [i for i, c in enumerate(trace.cat_names) if c in label_cats]
    for lane in sorted(hosts, key=lambda ln: (str(ln.pid), str(ln.tid))):
        m = (s.lane == lane.index) & ~codes_in(s.cat, skip, len(trace.cat_names))
        total = int(np.clip(np.minimum(s.end[m], window.end_ns)
                            - np.maximum(s.start[m], window.start_ns), 0, None).sum())
        if total > best_ns:
            best, best_ns = lane, total
    return best


@dataclass(frozen=True)
class LaunchWork:
    """The launches' device work as a CSR table (launch position -> work rows), and when
    each launch's work began: what the launch latencies, the per-call figures and the
    first-use rule read."""

    count: np.ndarray  # work rows per launch
    rows: np.ndarray  # the work rows, launch by launch
    first: np.ndarray  # where each launch's rows begin in ``rows``
    linked: np.ndarray  # the launch has device work
    min_start: np.ndarray  # the start of its earliest work (0 where it has none)


def launch_work(trace: Trace, l_rows: np.ndarray) -> LaunchWork:
    """``LaunchWork`` of launch rows ``l_rows`` (``Trace.launch_work``'s table)."""
    s = trace.slices
    w_count, w_rows = trace.launch_work(l_rows)
    w_first = np.cumsum(w_count) - w_count
    w_min_start = np.zeros(l_rows.size, np.int64)
    linked = w_count > 0
    if w_rows.size:
        w_min_start[linked] = np.minimum.reduceat(s.start[w_rows], w_first[linked])
    return LaunchWork(w_count, w_rows, w_first, linked, w_min_start)


def analyze_launches(trace: Trace, rules: RuleSet, window: Window, thread: Lane | None,
                     work_rows: np.ndarray) -> LaunchSummary:
    s = trace.slices
    rows = launch_rows(trace, rules)
    threads = Counter(s.lane[rows].tolist())
    rows = rows[(s.start[rows] >= window.start_ns) & (s.start[rows] < window.end_ns)]
    rows = rows[np.lexsort((s.corr[rows], s.end[rows], s.start[rows]))]  # content order
    names = [trace.names[c] for c in s.name[rows].tolist()]
    per_name = Counter(names)  # (in order of first sight)
    by_api = dict(per_name.most_common())
    # each distinct name's kind once, not each launch's: kinds in order of first sight
    by_kind: Counter[str] = Counter()
    for name, n in per_name.items():
        by_kind[rules.launch_kind(name) or "other"] += n
    # each launch's first device work start, for all launches at once (a table of their
    # work rows: one numpy call per launch cost seconds at 100,000 launches)
    lw = launch_work(trace, rows)
    linked = int(lw.linked.sum())
    latencies = (lw.min_start[lw.linked] - s.start[rows[lw.linked]]).tolist()
    wtl = trace.work_to_launch
    unlinked = np.asarray([r for r in work_rows.tolist() if r not in wtl], np.int64)
    unlinked = unlinked[np.argsort(s.start[unlinked], kind="stable")]
    return LaunchSummary(
        rows=rows, count=int(rows.size), linked=linked, by_api=by_api,
        by_kind=dict(by_kind), unlinked_work=int(unlinked.size), latency=summarize(latencies),
        thread=thread, threads={int(k): int(v) for k, v in threads.items()},
        unlinked_rows=unlinked, unexported=unexported_names(trace, rules),
    )


def of_process(trace: Trace, launches: LaunchSummary, pid: int | str,
               work_rows: np.ndarray) -> LaunchSummary:
    """The launches one process's threads made, and the unlinked device work among
    ``work_rows`` (its devices' work): what a call of that process can have launched when
    several processes launched device work into one file (ranks fused into one)."""
    s = trace.slices
    pids = np.asarray([str(ln.pid) for ln in trace.lanes], dtype=object)
    rows = launches.rows[pids[s.lane[launches.rows]] == str(pid)]
    unlinked = launches.unlinked_rows[np.isin(launches.unlinked_rows, work_rows)]
    return replace(launches, rows=rows, unlinked_rows=unlinked)

