"""What a slow call's reason says of threads, read back against the raw events: an op or
frame said to hold a call's excess ran on the call's own thread inside the call, and work
named as another thread's ("meanwhile worker [1/2] ran aten::copy_, 30 us more than during
nearby calls") ran on that other thread inside the call, for at least that long. Counted
from the trace's JSON events with ``rawcount`` (no traceview code)."""

from __future__ import annotations

import re
from decimal import Decimal

from rawcount import clip, length, union

OPS = ("cpu_op", "Operator", "python_function")
HELD = re.compile(r"; (?P<what>(?:(?!; ).)+?) (?:holds|took) [\d.]+ [a-z]+ ")
BESIDE = re.compile(r"; meanwhile .*?\[(?P<pid>[^/\]]+)/(?P<tid>[^\]]+)\] ran (?P<what>.+), "
                    r"(?P<amount>[\d.]+) (?P<unit>ns|us|ms|s) more than during nearby calls")
UNIT = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9}


def _ns(x) -> int:
    return int(Decimal(str(x)) * 1000)


def op_spans(events: list[dict]) -> dict[tuple[str, str, str], list[list[int]]]:
    """(name, pid, tid) -> the [start, end] of every op or frame of that name there."""
    out: dict[tuple[str, str, str], list[list[int]]] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in OPS and "dur" in e:
            st = _ns(e["ts"])
            out.setdefault((e["name"], str(e["pid"]), str(e["tid"])), []).append(
                [st, st + _ns(e["dur"])])
    return out


def thread_words(events: list[dict], report) -> tuple[int, int, list[str]]:
    """(reasons naming a holder op, reasons naming another thread's work, problems)."""
    spans = op_spans(events)
    me = (str(report.host.thread.pid), str(report.host.thread.tid))
    held = beside = 0
    problems = []
    for c in report.calls.per_call:
        for why in (c.cold_reason, c.outlier_reason):
            if not why:
                continue
            for m in HELD.finditer(why):
                what = m["what"]
                if what.startswith("host: ") or what.startswith("meanwhile "):
                    continue
                held += 1
                mine = length(clip(union(spans.get((what, *me), [])), c.start_ns, c.end_ns))
                if mine == 0:
                    problems.append(f"call {c.index}: {what} said to hold its excess, but "
                                    f"it never ran on the call's thread {me} inside the call")
            m = BESIDE.search(why)
            if m is None:
                continue
            beside += 1
            there = (m["pid"], m["tid"])
            ns = int(Decimal(m["amount"]) * UNIT[m["unit"]])
            ran = length(clip(union(spans.get((m["what"], *there), [])), c.start_ns, c.end_ns))
            if there == me:
                problems.append(f"call {c.index}: the call's own thread named as another's")
            if ran < ns * 0.99:  # the words round to three figures
                problems.append(f"call {c.index}: {m['what']} ran {ran} ns on {there} inside "
                                f"the call, the words say {ns} more than usual")
    return held, beside, problems
