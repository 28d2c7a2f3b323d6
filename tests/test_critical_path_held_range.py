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
from traceview.report.claims import from_json as claims_from_json
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


def _autograd_elsewhere(tmp_path: Path) -> Path:
    """The held step with the autograd thread's events moved to another process."""
    tb = held_step()
    for e in tb.events:
        if e.get("tid") == AUTOGRAD:
            e["pid"] = 8
    return tb.write(tmp_path / "alone.json")


def test_without_the_autograd_thread_the_held_range_stays_untraced(tmp_path: Path):
    """The same step with the autograd thread's events moved to another process: nothing
    of the main thread's process worked in the range, so its silence is its own."""
    path = _autograd_elsewhere(tmp_path)
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


def innermost_range(events: list[dict], tid, a: int, b: int) -> str:
    """The name of the shortest range (``user_annotation``) of thread ``tid`` holding all
    of [a, b): the range the thread held while it waited there."""
    return min(((ns(e["dur"]), e["name"]) for e in events
                if e.get("ph") == "X" and e["tid"] == tid and e.get("cat") == "user_annotation"
                and ns(e["ts"]) <= a and b <= ns(e["ts"]) + ns(e["dur"])))[1]


def held_words(r, thread: str, waited: int, untraced: int, held: str) -> None:
    """The verdict names the main thread's silence while the path stood on ``thread``
    as waiting for it, holding ``held``, and the rest of its silence as untraced:
    figures the claim cites (the range's name in its figure's name and path), the two
    adding up to the call's untraced time as its row holds it, and every claim holding
    against the report's JSON."""
    v = verdict_of(r)
    assert v.evidence["held_range_waits"] == {thread: waited}
    assert v.evidence["held_ranges"] == {thread: {held: waited}}
    assert v.evidence["untraced_not_waiting_ns"] == untraced
    assert (f"waiting for {thread} {fmt_ns(waited)} (holding {held} while that thread "
            "works)") in v.message, v.message
    assert f"untraced {fmt_ns(untraced)}" in v.message, v.message
    claim = next(c for c in r.claims if c.id == v.id)
    assert claim.value(f"host:waiting for {thread}") == waited
    assert claim.value(f"held:{thread}:{held}") == waited
    assert Relation("sum", (f"held:{thread}:{held}", f"host:waiting for {thread}")) \
        in claim.relations
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
    held = innermost_range(events, MAIN, g0, q)
    assert held == "## backward ##"  # not the step's own range, which holds it too
    held_words(r, "pt_autograd_0 [7/200]", waited, untraced, held)


def test_without_the_autograd_thread_the_verdict_names_no_wait(tmp_path: Path):
    """The same step with the autograd thread in another process: the path never
    crossed, and the main thread's silence is named untraced, whole, as before."""
    path = _autograd_elsewhere(tmp_path)
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
    held = innermost_range(events, main, g0, q)
    assert held == "## backward ##"
    held_words(r, f"pt_autograd_0 [{meta['pid']}/{autograd}]", waited, untraced, held)


def two_held_step() -> TraceBuilder:
    """One 300 us step whose main thread holds two ranges in turn while the autograd
    thread works inside each: ``## backward ##`` [10, 70) us (the autograd thread's
    nodes [15, 35) and [36, 60)) and ``## recompute ##`` [180, 220) us (its node
    [185, 210)), with a 98 us op of the main thread's own between them (the step's
    range holds both, but the main thread works more than the autograd thread inside
    it: it is no range the main thread waited in)."""
    tb = TraceBuilder(pid=7, tid=MAIN)
    tb.raw({"ph": "M", "name": "thread_name", "pid": 7, "tid": AUTOGRAD,
            "args": {"name": "pt_autograd_0"}})
    tb.annotation("ProfilerStep#1", 0, 300_000)
    tb.op("aten::mm", 1_000, 4_000)
    tb.launched_kernel("mm_kernel", 2_000, 500, 3_000, 1_000)
    for name, r0, r1, nodes in (("## backward ##", 10_000, 70_000,
                                 ((15_000, 35_000), (36_000, 60_000))),
                                ("## recompute ##", 180_000, 220_000, ((185_000, 210_000),))):
        tb.annotation(name, r0, r1 - r0)
        tb.op("aten::ones_like", r0 + 500, 1_000)
        for a, b in nodes:
            tb.op("autograd::engine::evaluate_function: MulBackward0", a, b - a, tid=AUTOGRAD)
            tb.launched_kernel("mul_backward_kernel", a + 1_000, 500, a + 2_000, 1_000,
                               tid=AUTOGRAD)
    tb.op("aten::add", 72_000, 98_000)
    tb.op("Optimizer.step#SGD.step", 225_000, 70_000)
    tb.launched_kernel("sgd_kernel", 226_000, 500, 227_000, 1_000)
    return tb


def test_a_wait_over_two_ranges_names_the_biggest_and_counts_the_other(tmp_path: Path):
    """The path crosses to the autograd thread once in each range; the verdict's wait is
    the main thread's silence in both stretches (counted here from the raw events, each
    stretch from the main thread's last own event before the autograd thread's first
    node in the range to the end of its last), names ``## backward ##`` (the bigger
    part) and says ``and 1 more``: both parts are cited, adding up to the wait."""
    path = two_held_step().write(tmp_path / "two.json")
    events = json.loads(path.read_text(), parse_float=Decimal)["traceEvents"]
    r = traceview.analyze(path)
    (row,) = r.steps.steps
    mine = own(events, MAIN)
    parts = {}
    for name, r0, r1 in (("## backward ##", 10_000, 70_000), ("## recompute ##", 180_000, 220_000)):
        g0, q = held_wait(events, MAIN, AUTOGRAD, r0, r1)
        parts[name] = (q - g0) - covered(mine, g0, q)
    assert parts == {"## backward ##": 48_500, "## recompute ##": 28_500}  # read back
    assert row.path_edges.get("range_to_thread") == 2
    assert on(row, "pt_autograd_0") == 48_500 + 28_500
    waited = sum(parts.values())
    thread = "pt_autograd_0 [7/200]"
    v = verdict_of(r)
    assert v.evidence["held_range_waits"] == {thread: waited}
    assert v.evidence["held_ranges"] == {thread: parts}
    assert v.evidence["held_ranges_more"] == {thread: ["## recompute ##"]}
    assert (f"waiting for {thread} {fmt_ns(waited)} (holding ## backward ## and 1 more while "
            "that thread works)") in v.message, v.message
    claim = next(c for c in r.claims if c.id == v.id)
    assert claim.value(f"held_more:{thread}") == 1
    assert Relation("sum", (f"held:{thread}:## backward ##", f"held:{thread}:## recompute ##",
                            f"host:waiting for {thread}")) in claim.relations
    assert Relation("ge", (f"held:{thread}:## backward ##",
                           f"held:{thread}:## recompute ##")) in claim.relations
    assert check_all(r.claims, r.to_dict()) == []
    # a claim counting two other ranges is caught
    doc = r.to_dict()
    (j,) = [k for k, c in enumerate(doc["claims"]) if c["id"] == v.id]
    for f in doc["claims"][j]["figures"]:
        if f["name"] == f"held_more:{thread}":
            f["value"] = 2
    assert any("held_more" in p for p in check_all([claims_from_json(doc["claims"][j])], doc))


WORKER = 500
ENGINE = "torch/autograd/graph.py(823): _engine_run_backward"


def frame_step(worker_pid: int = 7) -> TraceBuilder:
    """One 100 us step of a ``with_stack`` trace: the main thread's ``backward`` frames,
    the innermost, ``_engine_run_backward`` [8.2, 69.8) us, with nothing under it (the
    engine's own ``run_backward`` not recorded), while a thread of its process (named
    ``worker``: nothing in its name says autograd) runs two ops [12, 30) and [31, 65) us
    that launch kernels. The main thread's own ops before and after."""
    tb = TraceBuilder(pid=7, tid=MAIN)
    tb.raw({"ph": "M", "name": "thread_name", "pid": worker_pid, "tid": WORKER,
            "args": {"name": "worker"}})
    tb.annotation("ProfilerStep#1", 0, 100_000)
    tb.op("aten::mm", 1_000, 4_000)
    tb.launched_kernel("mm_kernel", 2_000, 500, 3_000, 1_000)
    tb.py("torch/_tensor.py(626): backward", 8_000, 62_000)
    tb.py("torch/autograd/__init__.py(347): backward", 8_100, 61_800)
    tb.py(ENGINE, 8_200, 61_600)
    for a, b in ((12_000, 30_000), (31_000, 65_000)):
        ev = tb.op("aten::mul", a, b - a, tid=WORKER)
        ev["pid"] = worker_pid
        tb.launched_kernel("mul_kernel", a + 1_000, 500, a + 2_000, 1_000, tid=WORKER)
        tb.events[-2]["pid"] = worker_pid  # the launch
    tb.op("aten::add", 72_000, 4_000)
    tb.launched_kernel("add_kernel", 73_000, 500, 74_000, 1_000)
    return tb


def blocked_frame(events: list[dict], main, worker) -> tuple[dict, int, int]:
    """Counted from the raw events: the main thread's Python frame with no event of its
    thread inside it that holds another thread's ops of its process, and the stretch
    that thread's work stands for on the path: from the frame's start, or the end of
    the main thread's last event inside it before the other thread's first op, to the
    end of the other thread's last op inside the frame."""
    def span(e):
        return ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])

    mine = [e for e in events if e.get("ph") == "X" and e["tid"] == main]
    for f in mine:
        if f.get("cat") != "python_function":
            continue
        f0, f1 = span(f)
        if any(e is not f and f0 <= span(e)[0] and span(e)[1] <= f1 for e in mine):
            continue  # work under the frame
        theirs = [span(e) for e in events if e.get("ph") == "X" and e["tid"] == worker
                  and e["pid"] == f["pid"] and f0 <= span(e)[0] and span(e)[1] <= f1]
        if theirs:
            first = min(a for a, _ in theirs)
            g0 = max([f0] + [span(e)[1] for e in mine if f0 <= span(e)[1] <= first
                             and not (span(e)[0] <= f0 and f1 <= span(e)[1])])
            return f, g0, max(b for _, b in theirs)
    raise AssertionError("no blocked frame")


def test_a_frame_blocked_while_another_thread_works_hands_the_path_to_it(tmp_path: Path):
    """The walk crosses from the main thread's blocked frame to the worker as from a
    held range: the worker stands for the stretch (its ops and its silence between
    them, each ns once), the main thread keeps the rest of the step (the frame's own
    time after the worker's last op, the wake-up, among it), and the verdict names the
    main thread's frame time in the stretch as its wait for the worker, in that frame."""
    path = frame_step().write(tmp_path / "frame.json")
    events = json.loads(path.read_text(), parse_float=Decimal)["traceEvents"]
    frame, g0, q = blocked_frame(events, MAIN, WORKER)
    assert (frame["name"], g0, q) == (ENGINE, 8_200, 65_000)  # the builder's, read back
    r = traceview.analyze(path)
    (row,) = r.steps.steps
    assert row.path_edges.get("range_to_thread") == 1
    assert on(row, "worker") == q - g0
    assert on(row, "worker", "untraced") == (q - g0) - covered(own(events, WORKER), g0, q)
    assert on(row, "main thread") == row.wall_ns - (q - g0)
    assert sum(p.ns for p in row.critical_path) == row.wall_ns == 100_000
    thread = "worker [7/500]"
    v = verdict_of(r)
    # the frame has nothing under it: all of the stretch is its own time
    assert v.evidence["held_range_waits"] == {thread: q - g0}
    assert v.evidence["held_ranges"] == {thread: {ENGINE: q - g0}}
    assert (f"waiting for {thread} {fmt_ns(q - g0)} (in {ENGINE} while that thread works)"
            in v.message), v.message
    # the wait comes out of the frame's category, whose rest is cited beside it
    claim = next(c for c in r.claims if c.id == v.id)
    cat = next(c for c, n in r.calls.per_call[r.typical_call.index].categories.items()
               if c not in ("untraced", "wait") and f"{c}_all" in
               {f.name for f in claim.figures})
    assert v.evidence["held_not_waiting_ns"] == {
        cat: r.calls.per_call[r.typical_call.index].categories[cat] - (q - g0)}
    assert check_all(r.claims, r.to_dict()) == []


def test_a_blocked_frame_with_no_other_thread_working_stays_the_threads(tmp_path: Path):
    """The same step with the worker in another process: nothing of the main thread's
    process worked inside the frame, so the path never crosses and the frame's time is
    the main thread's own category, as before."""
    path = frame_step(worker_pid=8).write(tmp_path / "alone.json")
    r = traceview.analyze(path)
    (row,) = r.steps.steps
    assert "range_to_thread" not in row.path_edges
    assert not any(p.resource.startswith("worker") for p in row.critical_path)
    assert "held_range_waits" not in verdict_of(r).evidence
    assert sum(p.ns for p in row.critical_path) == row.wall_ns


def test_hta_nccl_with_the_main_thread_in_a_frame_crosses_by_the_frame(tmp_path: Path):
    """HTA's NCCL trace with a Python frame written on its main thread over each step's
    held stretch (from its last own event before ``pt_autograd_0``'s first to its next
    after ``pt_autograd_0``'s last, counted from the raw events): the main thread now
    sits in a frame with nothing under it, no longer only holds ``## backward ##``, and
    the path crosses to ``pt_autograd_0`` by the frame, for the same stretch as without
    it; the main thread's wake-up (``pt_autograd_0``'s last work to the frame's end) is
    the frame's own time instead of untraced, and the verdict names the frame."""
    path = public_corpus.locate(HTA_NCCL)
    if path is None:
        pytest.skip(f"{HTA_NCCL} is not in this machine's corpus copy")
    doc = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)
    events = doc["traceEvents"]
    meta = next(e for e in events if e.get("ph") == "M"
                and e.get("name") == "thread_name" and "pt_autograd_0" in e["args"]["name"])
    steps = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["tid"]) for e in events
                   if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#"))
    (main,) = {tid for _, _, tid in steps}
    mine = own(events, main)
    stretch = {}
    for a, b, _ in steps:
        g0, q = held_wait(events, main, meta["tid"], a, b)
        h1 = min(s for s, _ in mine if s >= q)  # the main thread's next own event
        stretch[a] = (g0, q, h1)
        events.append({"ph": "X", "cat": "python_function", "name": ENGINE, "pid": meta["pid"],
                       "tid": main, "ts": Decimal(g0) / 1000, "dur": Decimal(h1 - g0) / 1000,
                       "args": {}})
    framed = tmp_path / "framed.json"
    framed.write_text(json.dumps(doc, default=str))
    before, after = traceview.analyze(path), traceview.analyze(framed)
    for b_row, a_row in zip(before.steps.steps, after.steps.steps, strict=True):
        g0, q, h1 = stretch[a_row.start_ns]
        assert a_row.path_edges.get("range_to_thread") == 1
        assert on(a_row, "pt_autograd_0") == on(b_row, "pt_autograd_0") == q - g0
        # the main thread's wake-up moved from its untraced time to the frame's category
        assert on(b_row, "pt_main_thread", "untraced") - on(a_row, "pt_main_thread", "untraced") \
            == h1 - q
        assert on(a_row, "pt_main_thread") == on(b_row, "pt_main_thread")
        assert sum(p.ns for p in a_row.critical_path) == a_row.wall_ns
    g0, q, _ = stretch[after.typical_call.start_ns]
    thread = f"pt_autograd_0 [{meta['pid']}/{meta['tid']}]"
    v = verdict_of(after)
    assert v.evidence["held_ranges"] == {thread: {ENGINE: q - g0}}
    assert f"waiting for {thread} {fmt_ns(q - g0)} (in {ENGINE} while that thread works)" \
        in v.message, v.message
    assert check_all(after.claims, after.to_dict()) == []
