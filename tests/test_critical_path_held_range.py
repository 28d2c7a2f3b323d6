"""A thread that holds only a range while another thread of its process does the work
inside that range's time waited for that thread: the critical path crosses to it
(``critical_path._Walk._held``) instead of charging the holder's silence as untraced.

Each expected figure is counted here from the raw events of the trace (the union of each
thread's events that are not ``user_annotation`` labels), never from the walk: on a
generated step with controls that must not be crossed to (a helper thread's short call
inside a pause of the Python, a thread working beside the main one), and on HTA's
NCCL test trace, whose main thread holds only ``## backward ##`` while ``pt_autograd_0``
runs the backward (its ``run_backward`` was not recorded).
"""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path

import public_corpus
import pytest

import traceview
from tracebuilder import TraceBuilder
from traceview.report.claims import Relation, check_all
from traceview.units import fmt_ns

MAIN, AUTOGRAD, HELPER, BESIDE = 100, 200, 300, 400
HTA_NCCL = "facebookresearch__HolisticTraceAnalysis/nccl_parser_config__nccl_data.json.gz"


def ns(x) -> int:
    """Microseconds as written (read as decimals: a float loses the last ns of a
    13-digit timestamp) to integer ns."""
    return int((Decimal(x) * 1000).to_integral_value())


def union(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def covered(spans: list[tuple[int, int]], lo: int, hi: int) -> int:
    return sum(max(0, min(b, hi) - max(a, lo)) for a, b in union(spans))


def own(events: list[dict], tid) -> list[tuple[int, int]]:
    """A thread's own time: its events less the labels (ranges own no time)."""
    return [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events
            if e.get("ph") == "X" and e["tid"] == tid and e.get("cat") != "user_annotation"]


def held_wait(events: list[dict], main, worker, a: int, b: int) -> tuple[int, int]:
    """The stretch of the step [a, b) the worker's work stands for on the path: from the
    end of the main thread's last own event before the worker's first (the main thread
    fell silent there) to the end of the worker's last event in the step."""
    work = [(s, e) for s, e in own(events, worker) if s < b and e > a]
    first = min(s for s, _ in work)
    silent_from = max(e for s, e in own(events, main) if a <= s < first)
    return silent_from, max(e for _, e in work)


def on(row, thread: str, what: str | None = None) -> int:
    """The host time the step's path charges to the thread whose label starts with (or,
    for a name in parentheses, holds) ``thread``, of category ``what`` or all."""
    return sum(p.ns for p in row.critical_path if p.kind == "host"
               and (p.resource.startswith(thread) or f"{thread} [" in p.resource)
               and what in (None, p.what))


def held_step() -> TraceBuilder:
    """One step: forward on the main thread; ``## backward ##`` held by the main thread
    (after a short op at its start, and but for one 600 ns node of its own) while the
    autograd thread runs three nodes that launch kernels; the optimizer on the main
    thread. Kernels end well before the
    host gets to anything that waits for them: the path stays on the host. Controls: a
    helper thread's 100 ns call inside a 2 us pause of the main thread's Python, and a
    thread that works from before the backward into it (beside the main thread)."""
    tb = TraceBuilder(pid=7, tid=MAIN)
    for tid, name in ((AUTOGRAD, "pt_autograd_0"), (HELPER, "helper"), (BESIDE, "worker")):
        tb.raw({"ph": "M", "name": "thread_name", "pid": 7, "tid": tid, "args": {"name": name}})
    tb.annotation("ProfilerStep#1", 0, 100_000)
    tb.annotation("## forward ##", 500, 12_000)
    tb.op("aten::mm", 1_000, 5_000)
    tb.launched_kernel("mm_kernel", 2_000, 500, 3_000, 1_000)
    tb.launch(6_500, 100, api="cudaEventQuery", tid=HELPER)  # inside the pause [6000, 8000)
    tb.op("aten::add", 8_000, 4_000)
    tb.launched_kernel("add_kernel", 9_000, 400, 9_800, 500)
    tb.op("aten::copy_", 10_000, 10_000, tid=BESIDE)  # across the backward's start
    tb.annotation("## backward ##", 13_000, 67_000)
    tb.op("aten::ones_like", 13_500, 1_500)
    tb.launched_kernel("fill_kernel", 14_000, 300, 14_500, 200)
    for a, b in ((16_000, 30_000), (31_000, 50_000), (52_000, 77_000)):
        tb.op("autograd::engine::evaluate_function: MulBackward0", a, b - a, tid=AUTOGRAD)
        tb.launched_kernel("mul_backward_kernel", a + 1_000, 500, a + 2_000, 1_000, tid=AUTOGRAD)
    # the engine's calling thread runs a CPU node itself between two of the autograd
    # thread's: the main thread still holds the range for the rest
    tb.op("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
          50_200, 600)
    tb.annotation("## optimizer ##", 81_000, 15_000)
    tb.op("Optimizer.step#SGD.step", 82_000, 13_000)
    tb.launched_kernel("sgd_kernel", 83_000, 500, 84_000, 1_000)
    return tb


def test_main_thread_holding_backward_waits_for_the_autograd_thread(tmp_path: Path):
    path = held_step().write(tmp_path / "held.json")
    events = json.loads(path.read_text(), parse_float=Decimal)["traceEvents"]
    r = traceview.analyze(path)
    (row,) = r.steps.steps
    a, b = row.start_ns, row.end_ns
    assert (a, b) == (0, 100_000)
    g0, q = held_wait(events, MAIN, AUTOGRAD, a, b)
    assert (g0, q) == (15_000, 77_000)  # the builder's numbers, read back from the file
    # the autograd thread stands for the held stretch, each of its ns once: its own
    # events' time there, and its silence between nodes as its untraced time
    assert on(row, "pt_autograd_0") == q - g0
    assert on(row, "pt_autograd_0", "untraced") == (q - g0) - covered(own(events, AUTOGRAD), g0, q)
    # the main thread has the rest; its untraced time is its silence less its silence
    # in the stretch the autograd thread stands for (its own node there included)
    assert on(row, "main thread") == (b - a) - (q - g0)
    main_silent = (b - a) - covered(own(events, MAIN), a, b)
    silent_held = (q - g0) - covered(own(events, MAIN), g0, q)
    assert silent_held == q - g0 - 600
    assert on(row, "main thread", "untraced") == main_silent - silent_held
    # the helper's call inside a pause and the thread working beside the main one
    # are not what the main thread waited for
    assert not any("helper" in p.resource or "worker" in p.resource for p in row.critical_path)
    assert row.path_edges.get("range_to_thread") == 1
    assert sum(p.ns for p in row.critical_path) == row.wall_ns


def test_without_the_autograd_thread_the_held_range_stays_untraced(tmp_path: Path):
    """The same step with the autograd thread's events moved to another process: nothing
    of the main thread's process worked in the range, so its silence is its own."""
    tb = held_step()
    for e in tb.events:
        if e.get("tid") == AUTOGRAD:
            e["pid"] = 8
    path = tb.write(tmp_path / "alone.json")
    events = json.loads(path.read_text(), parse_float=Decimal)["traceEvents"]
    (row,) = traceview.analyze(path).steps.steps
    silent = (row.end_ns - row.start_ns) - covered(own(events, MAIN), row.start_ns, row.end_ns)
    assert on(row, "main thread", "untraced") == silent
    assert sum(p.ns for p in row.critical_path if p.what == "untraced") == silent
    assert "range_to_thread" not in row.path_edges


def test_hta_nccl_trace_crosses_to_the_autograd_thread():
    path = public_corpus.locate(HTA_NCCL)
    if path is None:
        pytest.skip(f"{HTA_NCCL} is not in this machine's corpus copy")
    events = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)["traceEvents"]
    autograd = next(e["tid"] for e in events if e.get("ph") == "M"
                    and e.get("name") == "thread_name" and "pt_autograd_0" in e["args"]["name"])
    steps = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["tid"]) for e in events
                   if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#"))
    (main,) = {tid for _, _, tid in steps}
    r = traceview.analyze(path)
    assert [(s.start_ns, s.end_ns) for s in r.steps.steps] == [(a, b) for a, b, _ in steps]
    for row in r.steps.steps:
        a, b = row.start_ns, row.end_ns
        g0, q = held_wait(events, main, autograd, a, b)
        # the main thread holds only ``## backward ##`` over the stretch
        assert covered(own(events, main), g0, q) == 0
        assert any(e["tid"] == main and e["name"] == "## backward ##"
                   and ns(e["ts"]) <= g0 and q <= ns(e["ts"]) + ns(e["dur"])
                   for e in events if e.get("ph") == "X")
        assert on(row, "pt_autograd_0") == q - g0
        main_silent = (b - a) - covered(own(events, main), a, b)
        assert on(row, "pt_main_thread", "untraced") == main_silent - (q - g0)
        # the autograd thread stands for 83.8 ms of backward and more: the untraced share
        # the main thread keeps is the Python between its own ops, under a tenth
        assert q - g0 > (b - a) // 3
        assert 10 * (main_silent - (q - g0)) < b - a
        assert row.path_edges.get("range_to_thread") == 1


def verdict_of(r):
    return next(f for f in r.findings if f.id in ("host-bound", "sync-stalled", "device-bound"))


def held_words(r, thread: str, waited: int, untraced: int) -> None:
    """The verdict names the main thread's silence while the path stood on ``thread``
    as waiting for it, and the rest of its silence as untraced: figures the claim cites,
    the two adding up to the call's untraced time as its row holds it, and every claim
    holding against the report's JSON."""
    v = verdict_of(r)
    assert v.evidence["held_range_waits"] == {thread: waited}
    assert v.evidence["untraced_not_waiting_ns"] == untraced
    assert (f"waiting for {thread} {fmt_ns(waited)} (holding a range while that thread "
            "works)") in v.message, v.message
    assert f"untraced {fmt_ns(untraced)}" in v.message, v.message
    claim = next(c for c in r.claims if c.id == v.id)
    assert claim.value(f"host:waiting for {thread}") == waited
    assert Relation("sum", ("host:untraced", f"host:waiting for {thread}", "untraced_all")) \
        in claim.relations
    assert claim.value("untraced_all") \
        == r.calls.per_call[r.typical_call.index].categories["untraced"] \
        == waited + untraced
    assert check_all(r.claims, r.to_dict()) == []


def test_the_verdict_names_the_held_range_as_a_wait_for_the_autograd_thread(tmp_path: Path):
    """The step's one call: the main thread's silence inside the stretch the autograd
    thread stands for on the path (the stretch less the main thread's own 600 ns node
    there) is its wait for that thread, the rest of its silence untraced."""
    path = held_step().write(tmp_path / "held.json")
    events = json.loads(path.read_text(), parse_float=Decimal)["traceEvents"]
    r = traceview.analyze(path)
    a, b = 0, 100_000  # the step's range, as the builder wrote it
    g0, q = held_wait(events, MAIN, AUTOGRAD, a, b)
    mine = own(events, MAIN)
    waited = (q - g0) - covered(mine, g0, q)
    untraced = (b - a) - covered(mine, a, b) - waited
    assert (waited, untraced) == (61_400, 14_500)  # the builder's numbers, read back
    assert verdict_of(r).id == "host-bound"
    held_words(r, "pt_autograd_0 [7/200]", waited, untraced)


def test_without_the_autograd_thread_the_verdict_names_no_wait(tmp_path: Path):
    """The same step with the autograd thread in another process: the path never
    crossed, and the main thread's silence is named untraced, whole, as before."""
    tb = held_step()
    for e in tb.events:
        if e.get("tid") == AUTOGRAD:
            e["pid"] = 8
    path = tb.write(tmp_path / "alone.json")
    events = json.loads(path.read_text(), parse_float=Decimal)["traceEvents"]
    r = traceview.analyze(path)
    v = verdict_of(r)
    silent = 100_000 - covered(own(events, MAIN), 0, 100_000)
    assert "held_range_waits" not in v.evidence and "waiting for" not in v.message
    assert f"untraced {fmt_ns(silent)}" in v.message, v.message
    assert check_all(r.claims, r.to_dict()) == []


def test_hta_nccl_verdict_names_the_wait_for_the_autograd_thread():
    """HTA's NCCL trace: the typical step's main thread is silent inside
    ``## backward ##`` while ``pt_autograd_0`` works; the verdict names that silence
    (counted here from the raw events) as waiting for the autograd thread, not as
    untraced host time."""
    path = public_corpus.locate(HTA_NCCL)
    if path is None:
        pytest.skip(f"{HTA_NCCL} is not in this machine's corpus copy")
    events = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)["traceEvents"]
    meta = next(e for e in events if e.get("ph") == "M"
                and e.get("name") == "thread_name" and "pt_autograd_0" in e["args"]["name"])
    autograd = meta["tid"]
    r = traceview.analyze(path)
    t = r.typical_call
    a, b = t.start_ns, t.end_ns
    # the typical step's range as the file has it, and the thread that holds it
    (main,) = {e["tid"] for e in events if e.get("ph") == "X"
               and e["name"].startswith("ProfilerStep#") and ns(e["ts"]) == a
               and ns(e["ts"]) + ns(e["dur"]) == b}
    g0, q = held_wait(events, main, autograd, a, b)
    mine = own(events, main)
    # the main thread holds only ``## backward ##`` there: all of it is silence
    assert covered(mine, g0, q) == 0
    assert any(e["tid"] == main and e["name"] == "## backward ##"
               and ns(e["ts"]) <= g0 and q <= ns(e["ts"]) + ns(e["dur"])
               for e in events if e.get("ph") == "X")
    waited = q - g0
    untraced = (b - a) - covered(mine, a, b) - waited
    assert waited > untraced  # the wait, not the untraced Python, holds most of it
    held_words(r, f"pt_autograd_0 [{meta['pid']}/{autograd}]", waited, untraced)
