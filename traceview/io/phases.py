"""The rarer phases, read once into what the model takes as finished: ``B``/``E`` pairs
become complete events appended to the X columns (with their link args decoded), ``ac2g``
flow starts and ends become ``(pid, tid, ts) -> flow id`` tables, ``M`` events name the
threads, instants and ignored phases are counted.

Kineto writes almost only X events, so this is a loop over few events; the X columns pass
through untouched unless there are ``B``/``E`` pairs to append.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import numpy as np

from traceview.coerce import INT64, NO_ID, id_or_no_id
from traceview.coerce import thread_id as coerce_thread_id
from traceview.io.annotations import ANNOTATION_CAT
from traceview.io.collector import Key
from traceview.io.columns import ARGS_KEPT_CATS, Columns, Phases
from traceview.io.events import LooseEvent, decode_args

_GENERIC_THREAD = re.compile(r"^thread \d+ \((python\d*(\.\d+)*|[^()]*\.py)\)$|^thread \d+$")


def _meaningful(seen: str | None, new: str) -> str:
    """The name to keep when a trace names one thread twice: Kineto writes
    ``thread 543 (pt_autograd_0)`` and then ``thread 543 (python3)`` for PyTorch's
    autograd thread; the process's generic name never replaces a specific one."""
    if seen is None or seen == new:
        return new
    if _GENERIC_THREAD.match(new) and not _GENERIC_THREAD.match(seen):
        return seen
    return new


def fold_phases(x: Columns, keys: list[Key], names: list[str],
                others: list[tuple[LooseEvent, int | None]],
                phases: Phases | None = None) -> tuple[Columns, Phases]:
    """The X columns with the ``B``/``E`` slices appended (``keys`` and ``names`` grow in
    place with their codes), and what the other phases said: ``phases`` holds what the
    collector folded as the chunks arrived (flows, instants, ignored phases); ``others``
    the events it kept, which must be read in time order (``B``/``E`` pairs, ``M``)."""
    phases = phases if phases is not None else Phases()
    counts: dict[str, int] = defaultdict(int, phases.counts)
    extra = _pair_and_collect(others, phases, counts)
    phases.counts = dict(counts)
    if extra:
        x = _append_slices(x, keys, names, extra)
    return x, phases


def _time(o: tuple[LooseEvent, int | None]) -> int:
    return o[1] if o[1] is not None else 0


def _pair_and_collect(others: list[tuple[LooseEvent, int | None]], phases: Phases,
                      counts: dict[str, int]) -> list[tuple[str, str, Any, Any, int, int, bytes]]:
    """One pass over the non-X events in time order: ``B``/``E`` pairs as
    (cat, name, pid, tid, start, end, args), the rest into ``phases`` and ``counts``
    (added to what they hold: the collector folds a trace's flows and instants itself and
    passes on only its ``B``/``E`` and ``M`` events; this pass still reads any phase)."""
    extra: list[tuple[str, str, Any, Any, int, int, bytes]] = []  # cat, name, pid, tid, s, e, args
    open_b: dict[tuple, list[tuple[Any, int]]] = defaultdict(list)
    thread_names = phases.thread_names  # (the flow tables read only for a flow here)
    instants = 0
    thread_ids: dict[int | str, int | str] = {}  # a trace has few distinct pids and tids

    def thread_id(value: int | str) -> int | str:
        tid = thread_ids.get(value)
        if tid is None:
            tid = thread_ids[value] = coerce_thread_id(value)
        return tid

    # Flows and instants in file order, without a sort: two flow ends at one (pid, tid,
    # ts) have one time, so time order and file order agree on which is kept. Names and
    # B/E pairs in time order, events at one instant in file order (a zero-length B/E
    # pair inside an open slice must not close its parent).
    paired: list[tuple[LooseEvent, int | None]] = []
    named: list[tuple[LooseEvent, int | None]] = []
    for o in others:
        ev, ts = o
        if ev.cat == ANNOTATION_CAT:  # traceview's own tracks (--annotate): not the trace's
            continue
        ph = ev.ph
        if ph in ("s", "t", "f"):
            fid = ev.id  # an int in range, as Kineto writes it, is its own id
            if type(fid) is not int or not -INT64 <= fid < INT64:
                fid = id_or_no_id(fid)
            if ts is not None and fid != NO_ID:
                pid, tid = thread_ids.get(ev.pid), thread_ids.get(ev.tid)
                key = (thread_id(ev.pid) if pid is None else pid,
                       thread_id(ev.tid) if tid is None else tid, ts)
                if ph == "s":
                    phases.flow_start[key] = fid
                else:  # 'f', or a step 't' (where rocprof's arrows land)
                    phases.flow_end[key] = fid
        elif ph in ("B", "E"):
            paired.append(o)
        elif ph == "M":
            named.append(o)
        elif ph in ("i", "I", "R", "n"):
            instants += 1
        elif ph in ("C", "b", "e", "N", "O", "D"):
            counts["other-phase"] += 1
        elif ph != "X":
            counts["unknown-phase"] += 1
    for ev, _ in sorted(named, key=_time):
        if ev.name in ("thread_name", "process_name"):
            nm = decode_args(ev.args).get("name")
            if isinstance(nm, str):
                thread_names[(ev.name, thread_id(ev.pid), thread_id(ev.tid))] = _meaningful(
                    thread_names.get((ev.name, thread_id(ev.pid), thread_id(ev.tid))), nm)
    for ev, ts in sorted(paired, key=_time):
        if ev.ph == "B":
            if ts is not None:
                open_b[(thread_id(ev.pid), thread_id(ev.tid))].append((ev, ts))
        else:
            stack = open_b.get((thread_id(ev.pid), thread_id(ev.tid)))
            if ts is not None and stack:
                bev, bts = stack.pop()
                if ts >= bts:
                    extra.append((bev.cat, bev.name, bev.pid, bev.tid, bts, ts, bytes(bev.args)))
            elif ts is not None:
                counts["unmatched-end"] += 1
    phases.instants += instants
    unclosed = sum(len(v) for v in open_b.values())
    if unclosed:
        counts["unclosed-begin"] += unclosed
    return extra


def _append_slices(x: Columns, keys: list[Key], names: list[str],
                   extra: list[tuple[str, str, Any, Any, int, int, bytes]]) -> Columns:
    """The X columns with the paired ``B``/``E`` slices after them, as X events."""
    name_code = {n: i for i, n in enumerate(names)}
    key_index = {k: i for i, k in enumerate(keys)}
    ek, en, es, ed = [], [], [], []
    extra_args: dict[int, bytes] = {}
    base = x.key.size
    for i, (cat, nm, pid, tid, s, e, a) in enumerate(extra):
        k = ("X", cat, pid, tid)
        if k not in key_index:
            key_index[k] = len(keys)
            keys.append(k)
        if nm not in name_code:
            name_code[nm] = len(names)
            names.append(nm)
        ek.append(key_index[k])
        en.append(name_code[nm])
        es.append(s)
        ed.append(e - s)
        if a and cat in ARGS_KEPT_CATS:
            extra_args[base + i] = a
    link = [decode_args(extra_args.get(base + i, b"")) for i in range(len(extra))]
    return Columns(
        key=np.concatenate([x.key, np.asarray(ek, np.int32)]),
        name=np.concatenate([x.name, np.asarray(en, np.int32)]),
        ts=np.concatenate([x.ts, np.asarray(es, np.int64)]),
        dur=np.concatenate([x.dur, np.asarray(ed, np.int64)]),
        corr=x.corr.extended(np.asarray([id_or_no_id(d.get("correlation")) for d in link], np.int64)),
        stream=x.stream.extended(np.asarray([id_or_no_id(d.get("stream")) for d in link], np.int64)),
        device=x.device.extended(np.asarray([id_or_no_id(d.get("device")) for d in link], np.int64)),
        args=x.args.with_items(extra_args),
    )
