"""The reports of Triton Proton profiles (``traceview.io.proton`` reads the files).

**A Proton trace** holds device kernels only, each with the Proton scopes it ran in. The
calls are its top-level scopes (``proton.scope("call_i")``: one call each; Proton's
context tree merges scopes of one name, so a loop that reuses one name is one call).
Per call: kernels, their summed time, the device busy time (the union of its kernels),
the span from its first kernel's start to its last kernel's end, and the device idle
before the next call. Nested scopes are a tree of scope paths below the call
(``backward/grad``), aggregated over the calls that have them. What such a trace
cannot answer is stated, not guessed (``CANNOT_ANSWER``).

**A Proton tree** holds, per calling context, kernel time and invocations, and the
metrics Proton recorded: ``flops8/16/32/64`` and ``flops`` (summed as flops), ``bytes``,
from ``hook="triton"``'s ``launch_metadata`` on kernel nodes, or from
``proton.scope(name, metrics)`` on a scope. A scope's figures are inclusive (its own
plus its subtree's kernels); the achieved rates are metric / inclusive kernel time.
Metrics recorded on a scope itself are kept apart from its kernels' (the two describe
the same work in different words; adding them would count it twice).
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

import msgspec
import numpy as np

from traceview import intervals
from traceview.analyses.calls import OUTLIER_RATIO
from traceview.io.proton import (
    COUNT_KEY,
    TIME_KEY,
    ProtonNode,
    ProtonTraceFile,
    ProtonTreeFile,
)
from traceview.report.proton_words import bad_nodes_claim, outlier_claim, overlap_claim
from traceview.stats import Stats, median, summarize

CANNOT_ANSWER = (
    "host time: a Proton trace records device kernels only, so the host side of each "
    "call (Python dispatch, launch calls, synchronization) is not in it",
    "launches: no launch records, so the time from a call to its kernel's start (launch "
    "latency) and which host thread launched it are unknown",
    "device idle causes: the gaps between kernels are device idle whose cause (host, "
    "sync, data) a kernel-only trace cannot tell",
    "absolute time: Proton writes each kernel's start relative to the first kernel",
)
NO_SCOPE = "(no scope)"
_FLOPS = re.compile(r"^flops\d*$")
MAX_NS = 2**62
MAX_DEPTH = 64  # rows shown; deeper scopes fold into their ancestor's figures


@dataclass(frozen=True)
class ProtonCall:
    index: int
    name: str
    start_ns: int
    end_ns: int
    kernels: int
    kernel_ns: int  # sum of its kernels' durations
    busy_ns: int  # union of its kernels on the device
    span_ns: int  # first kernel start -> last kernel end
    idle_after_ns: int | None  # device idle from its end to the next call's first kernel
    outlier_reason: str | None = None  # span far above the other calls' median


@dataclass(frozen=True)
class ProtonScopeRow:
    """A scope path below the call (``forward``, ``backward/grad``), over the calls."""

    name: str
    path: str
    calls_with: int
    kernels: int
    kernel_sum_ns: int
    per_call: Stats  # kernel time inside this scope per call that has it (inclusive)
    children: tuple[ProtonScopeRow, ...] = ()


@dataclass(frozen=True)
class ProtonKernelRow:
    name: str
    count: int
    sum_ns: int
    stats: Stats


@dataclass(frozen=True)
class ProtonTraceReport:
    path: str
    format: str  # "proton-trace"
    kernel_count: int
    streams: tuple[str, ...]
    window_ns: int  # first kernel start -> last kernel end
    device_busy_ns: int
    kernel_sum_ns: int
    calls_source: str
    calls: tuple[ProtonCall, ...]
    call_stats: dict[str, Stats]  # kernel_ns, busy_ns, span_ns, idle_after_ns
    call_kinds: dict[str, int]  # numbered names folded (call_#) -> calls
    scopes: tuple[ProtonScopeRow, ...]
    kernels: tuple[ProtonKernelRow, ...]
    unscoped_kernels: int
    dropped_events: int
    cannot_answer: tuple[str, ...]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)


@dataclass(frozen=True)
class ProtonDevice:
    type: str
    id: str
    arch: str
    num_sms: int | None
    clock_khz: int | None
    memory_clock_khz: int | None
    bus_width_bits: int | None
    peak_gb_per_s: float | None  # bus width x memory clock x 2 (double data rate)


@dataclass(frozen=True)
class ProtonTreeRow:
    name: str
    kind: str  # scope | kernel
    depth: int
    time_ns: int  # inclusive kernel time
    count: int  # inclusive kernel invocations
    flops: int | float | None  # inclusive, recorded on kernels
    bytes: int | float | None
    tflop_per_s: float | None
    gb_per_s: float | None
    scope_metrics: dict[str, int | float] = field(default_factory=dict)  # on the scope itself
    scope_tflop_per_s: float | None = None
    scope_gb_per_s: float | None = None
    children: tuple[ProtonTreeRow, ...] = ()


@dataclass(frozen=True)
class ProtonTreeReport:
    path: str
    format: str  # "proton-tree"
    time_ns: int
    count: int
    flops: int | float | None
    bytes: int | float | None
    tflop_per_s: float | None
    gb_per_s: float | None
    metrics: tuple[str, ...]  # every metric name seen on a node
    devices: tuple[ProtonDevice, ...]
    rows: tuple[ProtonTreeRow, ...]  # the root's children
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)


# ------------------------------------------------------------------------------ trace


def _fold(name: str) -> str:
    return re.sub(r"\d+", "#", name)


def trace_report(f: ProtonTraceFile) -> ProtonTraceReport:
    ks = f.kernels
    st = np.asarray([k.start_ns for k in ks], np.int64)
    en = np.asarray([k.end_ns for k in ks], np.int64)
    busy = intervals.length(intervals.union(st, en))
    by_call: dict[str, list[int]] = defaultdict(list)
    unscoped = 0
    for i, k in enumerate(ks):
        if k.scopes:
            by_call[k.scopes[0]].append(i)
        else:
            unscoped += 1
    order = sorted(by_call, key=lambda c: (min(ks[i].start_ns for i in by_call[c]), c))
    bounds = []
    for name in order:
        rows = by_call[name]
        bounds.append((name, rows, int(st[rows].min()), int(en[rows].max())))
    calls = []
    for ci, (name, rows, a, b) in enumerate(bounds):
        nxt = bounds[ci + 1][2] if ci + 1 < len(bounds) else None
        calls.append(ProtonCall(
            index=ci, name=name, start_ns=a, end_ns=b, kernels=len(rows),
            kernel_ns=int((en[rows] - st[rows]).sum()),
            busy_ns=intervals.length(intervals.union(st[rows], en[rows])),
            span_ns=b - a, idle_after_ns=None if nxt is None else max(0, nxt - b)))
    calls = _mark_outliers(calls)
    stats = {m: summarize([getattr(c, m) for c in calls])
             for m in ("kernel_ns", "busy_ns", "span_ns", "idle_after_ns")}
    kinds: dict[str, int] = defaultdict(int)
    for c in calls:
        kinds[_fold(c.name)] += 1
    notes = []
    overlapping = [c.name for c, (_, _, a, b) in zip(calls, bounds, strict=True)
                   if any(x[2] < b and a < x[3] for x in bounds if x[0] != c.name)]
    if overlapping:
        notes.append(overlap_claim(len(overlapping), len(calls)).text)
    elif len(calls) == 1 and calls[0].kernels > 1:
        notes.append("one top-level scope holds every kernel: Proton merges scopes of one "
                     "name, so name each call's scope uniquely (call_{i}) to see calls")
    return ProtonTraceReport(
        path=f.path, format="proton-trace", kernel_count=len(ks),
        streams=tuple(sorted({str(k.stream) for k in ks})),
        window_ns=int(en.max() - st.min()), device_busy_ns=busy,
        kernel_sum_ns=int((en - st).sum()),
        calls_source="top-level Proton scopes (proton.scope)",
        calls=tuple(calls), call_stats=stats, call_kinds=dict(kinds),
        scopes=_scope_tree(ks, by_call), kernels=_kernel_rows(ks),
        unscoped_kernels=unscoped, dropped_events=f.dropped,
        cannot_answer=CANNOT_ANSWER, notes=tuple(notes))


def _mark_outliers(calls: list[ProtonCall]) -> list[ProtonCall]:
    """A call whose span is over OUTLIER_RATIO x the median of the other calls' spans:
    the same rule as Kineto calls' (``analyses/calls.py``), on what a kernel-only trace
    has. Its stats stay in (the trace cannot say why it was slow)."""
    if len(calls) < 3:
        return calls
    spans = [c.span_ns for c in calls]
    out = []
    for j, c in enumerate(calls):
        med = int(median(spans[:j] + spans[j + 1:]))
        if med > 0 and c.span_ns > OUTLIER_RATIO * med:
            c = replace(c, outlier_reason=outlier_claim(j, c.span_ns, med, OUTLIER_RATIO).text)
        out.append(c)
    return out


def _scope_tree(ks, by_call: dict[str, list[int]]) -> tuple[ProtonScopeRow, ...]:
    # (path below the call) -> call -> [kernel count, kernel ns], inclusive of sub-scopes
    per: dict[tuple[str, ...], dict[str, list[int]]] = defaultdict(dict)
    for call, rows in by_call.items():
        for i in rows:
            k = ks[i]
            inner = k.scopes[1:1 + MAX_DEPTH]
            for d in range(1, len(inner) + 1):
                acc = per[inner[:d]].setdefault(call, [0, 0])
                acc[0] += 1
                acc[1] += k.end_ns - k.start_ns

    def row(path: tuple[str, ...]) -> ProtonScopeRow:
        got = per[path]
        kids = sorted((p for p in per if len(p) == len(path) + 1 and p[:-1] == path),
                      key=lambda p: (-sum(v[1] for v in per[p].values()), p))
        return ProtonScopeRow(
            name=path[-1], path="/".join(path), calls_with=len(got),
            kernels=sum(v[0] for v in got.values()), kernel_sum_ns=sum(v[1] for v in got.values()),
            per_call=summarize([v[1] for v in got.values()]),
            children=tuple(row(p) for p in kids))

    tops = sorted((p for p in per if len(p) == 1),
                  key=lambda p: (-sum(v[1] for v in per[p].values()), p))
    return tuple(row(p) for p in tops)


def _kernel_rows(ks) -> tuple[ProtonKernelRow, ...]:
    by: dict[str, list[int]] = defaultdict(list)
    for k in ks:
        by[k.name].append(k.end_ns - k.start_ns)
    rows = [ProtonKernelRow(n, len(v), sum(v), summarize(v)) for n, v in by.items()]
    return tuple(sorted(rows, key=lambda r: (-r.sum_ns, r.name)))


# ------------------------------------------------------------------------------- tree


def _num(v: int | float | None) -> int | float | None:
    if v is None:
        return None
    return int(v) if isinstance(v, float) and v.is_integer() and abs(v) < MAX_NS else v


def _time(metrics: dict[str, int | float]) -> int:
    t = metrics.get(TIME_KEY)
    return int(t) if isinstance(t, (int, float)) and 0 <= t < MAX_NS else 0


def _count(metrics: dict[str, int | float]) -> int:
    c = metrics.get(COUNT_KEY)
    return int(c) if isinstance(c, (int, float)) and 0 <= c < MAX_NS else 0


def _in_range(metrics: dict[str, int | float]) -> bool:
    return all(0 <= metrics[k] < MAX_NS for k in (TIME_KEY, COUNT_KEY) if k in metrics)


def _flops(metrics: dict[str, int | float]) -> int | float | None:
    vals = [v for k, v in metrics.items() if _FLOPS.match(k)]
    return sum(vals) if vals else None


def _add(a: int | float | None, b: int | float | None) -> int | float | None:
    if a is None:
        return b
    return a if b is None else a + b


def _rate(work: int | float | None, ns: int, scale: float) -> float | None:
    """work per ns, over ``scale`` (flop/ns = GFLOP/s; /1000 -> TFLOP/s; byte/ns = GB/s)."""
    if work is None or ns <= 0:
        return None
    return work / ns / scale


def _is_kernel(n: ProtonNode) -> bool:
    return TIME_KEY in n.metrics or COUNT_KEY in n.metrics


def tree_report(f: ProtonTreeFile) -> ProtonTreeReport:
    seen: set[str] = set()
    bad = 0  # kernel nodes whose time or count is not a count of ns / invocations
    # post-order without recursion: inclusive figures per node id
    incl: dict[int, tuple[int, int, int | float | None, int | float | None]] = {}
    stack: list[tuple[ProtonNode, bool]] = [(f.root, False)]
    while stack:
        n, done = stack.pop()
        if not done:
            stack.append((n, True))
            stack.extend((c, False) for c in n.children)
            continue
        if n is not f.root:
            seen.update(n.metrics)
        kernel = _is_kernel(n) and n is not f.root  # Proton writes zeros on the root
        if kernel and not _in_range(n.metrics):
            kernel = False
            bad += 1
        t = _time(n.metrics) if kernel else 0
        c = _count(n.metrics) if kernel else 0
        fl = _flops(n.metrics) if kernel else None
        by = n.metrics.get("bytes") if kernel else None
        for ch in n.children:
            ct, cc, cf, cb = incl[id(ch)]
            t, c, fl, by = t + ct, c + cc, _add(fl, cf), _add(by, cb)
        incl[id(n)] = (t, c, fl, by)

    # rows bottom-up without recursion; below MAX_DEPTH a row keeps its inclusive
    # figures and folds its subtree
    folded = 0
    built: dict[int, ProtonTreeRow] = {}
    stack2: list[tuple[ProtonNode, int, bool]] = [(c, 0, False) for c in f.root.children]
    while stack2:
        n, depth, done = stack2.pop()
        if not done:
            stack2.append((n, depth, True))
            if depth < MAX_DEPTH:
                stack2.extend((c, depth + 1, False) for c in n.children)
            else:
                folded += len(n.children)
            continue
        t, c, fl, by = incl[id(n)]
        kernel = _is_kernel(n)
        own = {} if kernel else dict(n.metrics)
        sf, sb = _flops(own), own.get("bytes")
        kids = [built.pop(id(ch)) for ch in n.children if id(ch) in built]
        built[id(n)] = ProtonTreeRow(
            name=n.name, kind="kernel" if kernel else "scope", depth=depth, time_ns=t,
            count=c, flops=_num(fl), bytes=_num(by), tflop_per_s=_rate(fl, t, 1000.0),
            gb_per_s=_rate(by, t, 1.0), scope_metrics=own,
            scope_tflop_per_s=_rate(sf, t, 1000.0), scope_gb_per_s=_rate(sb, t, 1.0),
            children=tuple(sorted(kids, key=lambda r: (-r.time_ns, r.name))))
    rows = tuple(sorted((built[id(c)] for c in f.root.children),
                        key=lambda r: (-r.time_ns, r.name)))
    t, c, fl, by = incl[id(f.root)]
    devices = tuple(_device(dt, did, p) for dt, ids in f.devices.items()
                    for did, p in ids.items() if isinstance(p, dict))
    notes = []
    if bad:
        notes.append(bad_nodes_claim(bad).text)
    if folded:
        notes.append(f"scopes deeper than {MAX_DEPTH} levels are folded into their "
                     "ancestors' inclusive figures")
    if c == 0:
        notes.append("no node carries kernel time: was the session finalized "
                     "(proton.finalize()) after the kernels ran?")
    return ProtonTreeReport(
        path=f.path, format="proton-tree", time_ns=t, count=c, flops=_num(fl), bytes=_num(by),
        tflop_per_s=_rate(fl, t, 1000.0), gb_per_s=_rate(by, t, 1.0),
        metrics=tuple(sorted(seen)), devices=devices, rows=rows, notes=tuple(notes))


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < MAX_NS \
        else None


def _device(dtype: str, did: str, p: dict[str, Any]) -> ProtonDevice:
    bus, mem = _int(p.get("bus_width")), _int(p.get("memory_clock_rate"))
    peak = bus / 8 * mem * 1e3 * 2 / 1e9 if bus and mem else None
    return ProtonDevice(type=dtype, id=str(did), arch=str(p.get("arch", "")),
                        num_sms=_int(p.get("num_sms")), clock_khz=_int(p.get("clock_rate")),
                        memory_clock_khz=mem, bus_width_bits=bus, peak_gb_per_s=peak)


# ------------------------------------------------------------------------------ layout


def document_layout() -> type[msgspec.Struct]:
    """The Proton report's JSON (``render.proton.to_json``) as a msgspec Struct:
    ``schema_version``, then the report's own fields, built from the two report types so
    that a field added to either changes this layout, its JSON Schema
    (``docs/schemas/proton.json``) and its hash (``documents.SCHEMA_HASHES``) with it.

    A document is one of two shapes, named by ``format``: a trace's fields or a tree's
    (``path``, ``format`` and ``notes`` are both's). msgspec writes a tagged union's tag
    first, where this document has ``path`` before ``format``, so the layout is one
    Struct in which each shape's own fields are optional (``UNSET``: absent, not
    written); ``tests/test_document_schemas.py`` decodes each golden strictly and
    encodes it back to the same bytes."""
    return _document_layout()


@functools.cache
def _document_layout() -> type[msgspec.Struct]:
    import dataclasses
    import typing
    from typing import Literal

    shared = ("path", "format", "notes")
    out: list[tuple[Any, ...]] = [("schema_version", int), ("path", str),
                                  ("format", Literal["proton-trace", "proton-tree"])]
    for cls in (ProtonTraceReport, ProtonTreeReport):
        hints = typing.get_type_hints(cls)
        out += [(f.name, hints[f.name] | msgspec.UnsetType, msgspec.UNSET)
                for f in dataclasses.fields(cls) if f.name not in shared]
    out.append(("notes", tuple[str, ...]))
    return msgspec.defstruct("ProtonDocument", out, forbid_unknown_fields=True,
                             kw_only=True, module=__name__)
