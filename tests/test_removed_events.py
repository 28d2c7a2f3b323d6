"""A trace that lost events after the profiler wrote it (HTA's trace filter and sampler
keep a few events of every stretch): its CPU events' numbering (Kineto's ``Ev Idx``)
skips after most of them. Device idle after a launch is then no launch latency (the
device may have waited behind work that was removed): the step's idle by cause says
``not in the trace``, and a diagnostic says why. The same trace numbered without a skip
keeps its launch latency. Every figure is counted here from the raw events (``rawcount``)."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal

import public_corpus
import pytest
from idle_count import after_launch, numbering_gaps, step_bounds

import traceview
from traceview.report.claims import check_all

US = 1000
STEP = 500 * US
OPS_PER_STEP = 30


def _steps(tb, number) -> None:
    """Three ``ProfilerStep#N`` of 500 us, each of 30 numbered ops (``number(k)``: the
    k-th op's ``Ev Idx``). In each step the second kernel is launched at 11 us, while the
    first still runs, and starts at 100 us: the device idles 80 us with it queued, as
    behind removed work. A third launch at 201 us starts its kernel at 210 us."""
    k = 0
    for s in range(3):
        t = s * 1000 * US
        tb.annotation(f"ProfilerStep#{s}", t, STEP)
        for j in range(OPS_PER_STEP):
            ev = tb.op("aten::foo", t + j * 10 * US, 5 * US)
            ev["args"]["Ev Idx"] = number(k)
            k += 1
        tb.launched_kernel("a", t + 1 * US, 2 * US, t + 5 * US, 15 * US)
        tb.launched_kernel("b", t + 11 * US, 2 * US, t + 100 * US, 10 * US)
        tb.launched_kernel("c", t + 201 * US, 2 * US, t + 210 * US, 10 * US)


def _idle(r, what: str) -> list[tuple[str, int]]:
    return [(c.resource, c.ns) for st in r.steps.steps for c in st.idle_causes if c.what == what]


def test_a_trace_that_lost_events_charges_idle_after_a_launch_to_what_it_does_not_show(
        tb, analyze_builder):
    """Numbered every third (2 of every 3 numbers missing): 89 holes among 90 ops. Each
    step's idle after the launches goes to ``not in the trace`` (no thread: ``unknown``),
    none to launch latency, with the figures of a raw count; the diagnostic counts the
    missing numbers."""
    _steps(tb, lambda k: 3 * k)
    r = analyze_builder(tb)
    events = tb.document()["traceEvents"]
    want = [after_launch(json.loads(tb.text())["traceEvents"], s * 1000 * US, s * 1000 * US + STEP)
            for s in range(3)]
    assert want == [93 * US] * 3  # 4 us before kernel a, 80 us queued b, 9 us before c
    assert _idle(r, "launch latency") == []
    assert _idle(r, "not in the trace") == [("unknown", w) for w in want]
    missing, holes = numbering_gaps(events)
    (d,) = [d for d in r.diagnostics if d.code == "events-removed"]
    assert (d.count, holes) == (missing, 89) == (2 * 89, 89)
    assert f"at {holes:,} places among {3 * OPS_PER_STEP:,} numbered events" in d.message
    assert "the trace does not show what the device waited for" in d.message
    assert check_all(r.claims, r.to_dict()) == []


def test_the_same_trace_numbered_whole_keeps_its_launch_latency(tb, analyze_builder):
    """Numbered one after another: nothing says events were lost, the same idle is launch
    latency, and no diagnostic is raised."""
    _steps(tb, lambda k: k)
    r = analyze_builder(tb)
    want = [after_launch(json.loads(tb.text())["traceEvents"], s * 1000 * US, s * 1000 * US + STEP)
            for s in range(3)]
    assert _idle(r, "launch latency") == [("device", w) for w in want]
    assert _idle(r, "not in the trace") == []
    assert "events-removed" not in {d.code for d in r.diagnostics}


def test_a_few_skips_are_no_evidence(tb, analyze_builder):
    """A profiler skips a number now and then (5 times in 884 events on a complete sglang
    trace): 10 skips among 90 ops stay launch latency."""
    _steps(tb, lambda k: k + (k // 9))
    events = json.loads(tb.text())["traceEvents"]
    assert numbering_gaps(events)[1] == 9
    r = analyze_builder(tb)
    assert _idle(r, "not in the trace") == [] and _idle(r, "launch latency")


SAMPLED = "facebookresearch__HolisticTraceAnalysis/timeline_analysis__sampled_rank-0.json.gz"


def test_htas_sampled_rank_says_its_idle_after_launches_is_not_in_the_trace():
    """HTA's sampled rank 0 (its timeline-analysis test data): 1,495 holes among its
    2,402 numbered events. Each step's idle after the launches (counted from the raw
    events, steps ending with their ranges) is ``not in the trace``, none launch latency."""
    path = public_corpus.locate(SAMPLED)
    if path is None:
        pytest.skip(f"{SAMPLED} is not in this machine's corpus copy")
    events = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)["traceEvents"]
    missing, holes = numbering_gaps(events)
    r = traceview.analyze(str(path))
    assert [(s.start_ns, s.end_ns) for s in r.steps.steps] == step_bounds(events)
    want = [after_launch(events, a, b) for a, b in step_bounds(events)]
    assert _idle(r, "launch latency") == []
    assert _idle(r, "not in the trace") == [("unknown", w) for w in want]
    assert min(want) > 100_000 * US  # over 100 ms a step
    (d,) = [d for d in r.diagnostics if d.code == "events-removed"]
    assert (d.count, holes) == (missing, 1495)
    assert check_all(r.claims, r.to_dict()) == []


def test_numbers_that_are_no_small_integers_are_no_evidence(tb, analyze_builder):
    """``Ev Idx`` as text, negative, fractional or past 64 bits (a damaged or foreign
    file) is read as no number at all: no traceback, and among the whole numbers
    (0, 1, 2, ... on every other op) nothing skips: no diagnostic, the idle stays launch
    latency."""
    odd = ["7", -3, 10**30, 2.5]
    _steps(tb, lambda k: odd[(k // 2) % 4] if k % 2 else k // 2)
    r = analyze_builder(tb)
    assert "events-removed" not in {d.code for d in r.diagnostics}
    assert _idle(r, "launch latency") and _idle(r, "not in the trace") == []


def test_the_annotated_trace_says_what_the_steps_say(tb, tmp_path):
    """``--annotate`` writes the device's idle stretches as the steps' table charges them:
    after each launch, ``not in the trace`` waited for ``unknown``, for the raw count."""
    from collections import defaultdict

    from typer.testing import CliRunner

    from traceview.cli.app import app

    _steps(tb, lambda k: 3 * k)
    path, out = tb.write(tmp_path / "t.json"), tmp_path / "t.annotated.json.gz"
    res = CliRunner().invoke(app, ["explain", str(path), "--annotate", str(out)])
    assert res.exit_code == 0, res.output
    added = [e for e in json.loads(gzip.decompress(out.read_bytes()))["traceEvents"]
             if e.get("cat") == "traceview" and e.get("ph") == "X"
             and "waited_for" in e.get("args", {})]
    events = json.loads(tb.text())["traceEvents"]
    for s in range(3):
        a, b = s * 1000 * US, s * 1000 * US + STEP
        got: dict[tuple[str, str], int] = defaultdict(int)
        for e in added:
            st = int(Decimal(str(e["ts"])) * 1000)
            if a <= st < b:
                got[(e["args"]["waited_for"], e["args"]["what"])] += int(Decimal(str(e["dur"])) * 1000)
        assert got[("unknown", "not in the trace")] == after_launch(events, a, b) == 93 * US
        assert not [k for k in got if k[1] == "launch latency"]


def _waited_step(tb, number) -> None:
    """One ``ProfilerStep#0`` of 300 us: a launch at 10 us (2 us long) of a kernel that
    starts only at 100 us and runs 50 us, the host synchronizing from 20 to 155 us, then
    30 numbered ops of 500 ns, one every 1 us from 160 us (``number(k)``: the k-th op's
    ``Ev Idx``). Walked back from the step's end, the path reaches the sync, the kernel
    through it, and the launch through the kernel: the launch's end (12 us) to the
    kernel's start (100 us), 88 us, is the launch's wait for its kernel."""
    tb.annotation("ProfilerStep#0", 0, 300 * US)
    tb.launched_kernel("k", 10 * US, 2 * US, 100 * US, 50 * US)
    tb.sync(20 * US, 135 * US)
    for j in range(30):
        ev = tb.op("aten::foo", 160 * US + j * US, 500)
        ev["args"]["Ev Idx"] = number(j)


def _path(r) -> list[tuple[str, str, str, int]]:
    return sorted((p.kind, p.resource, p.what, p.ns) for p in r.steps.steps[0].critical_path)


def test_a_launchs_wait_on_the_path_of_a_trace_that_lost_events_is_not_in_the_trace(
        tb, analyze_builder):
    """Numbered every third (29 holes among 30 ops): the 88 us from the launch's end to
    its kernel's start on the step's critical path is ``not in the trace``, waited for
    ``unknown`` (as the idle by cause says), none of it launch latency; the path still
    adds up to the step."""
    _waited_step(tb, lambda k: 3 * k)
    r = analyze_builder(tb)
    path = _path(r)
    assert ("launch_latency", "unknown", "not in the trace", 88 * US) in path
    assert not [p for p in path if p[2] == "launch latency"]
    assert [(p[0], p[2], p[3]) for p in path if p[0] == "device"] == [("device", "k", 50 * US)]
    assert sum(p[3] for p in path) == 300 * US
    assert check_all(r.claims, r.to_dict()) == []


def test_the_same_path_numbered_whole_keeps_its_launch_latency(tb, analyze_builder):
    """Numbered one after another: the same 88 us is the main thread's launch latency."""
    _waited_step(tb, lambda k: k)
    r = analyze_builder(tb)
    path = _path(r)
    (lat,) = [p for p in path if p[0] == "launch_latency"]
    assert lat[2:] == ("launch latency", 88 * US) and lat[1].startswith("main thread")
    assert not [p for p in path if p[2] == "not in the trace"]
    assert sum(p[3] for p in path) == 300 * US


RENUMBERED = "facebookresearch__HolisticTraceAnalysis/negative_queue_length_values_check__rank0.json.gz"


def test_a_real_trace_renumbered_with_holes_says_its_paths_launch_waits_are_not_in_the_trace(
        tmp_path):
    """HTA's ``negative_queue_length_values_check`` rank 0, numbered whole (no evidence of
    lost events), has launch latency on its steps' paths. The same events
    with every ``Ev Idx`` doubled (a hole after each: what a sampler leaves) are the same
    trace that evidently lost events: each step's path is the same walk, each ns once,
    its launch latency now ``not in the trace`` on ``unknown``, every other item as it
    was. The numbering and the launches' waits are counted from the raw events."""
    path = public_corpus.locate(RENUMBERED)
    if path is None:
        pytest.skip(f"{RENUMBERED} is not in this machine's corpus copy")
    doc = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)
    events = doc["traceEvents"]
    assert numbering_gaps(events)[1] < 20
    for e in events:
        if isinstance(e.get("args"), dict) and "Ev Idx" in e["args"]:
            e["args"]["Ev Idx"] *= 2
    missing, holes = numbering_gaps(events)
    assert holes == missing > 25_000
    holed = tmp_path / "holed.json"
    holed.write_text(json.dumps(doc, default=str))
    before, after = traceview.analyze(str(path)), traceview.analyze(str(holed))
    assert "events-removed" in {d.code for d in after.diagnostics}
    assert "events-removed" not in {d.code for d in before.diagnostics}
    latency_total = 0
    for b, a in zip(before.steps.steps, after.steps.steps, strict=True):
        assert (a.start_ns, a.end_ns) == (b.start_ns, b.end_ns)
        latency = sum(p.ns for p in b.critical_path if p.what == "launch latency")
        latency_total += latency
        kept = sorted((p.kind, p.resource, p.what, p.ns) for p in b.critical_path
                      if p.what != "launch latency")
        assert sorted((p.kind, p.resource, p.what, p.ns) for p in a.critical_path
                      if p.what != "not in the trace") == kept
        assert [(p.kind, p.resource, p.ns) for p in a.critical_path
                if p.what == "not in the trace"] == \
            ([("launch_latency", "unknown", latency)] if latency else [])
        assert not [p for p in a.critical_path if p.what == "launch latency"]
        assert sum(p.ns for p in a.critical_path) == a.wall_ns
        # no launch latency on the path is more than the raw launches' waits in the step
        assert latency <= _launch_waits(events, a.start_ns, a.end_ns)
    assert latency_total > 0  # the trace shows it: the test is not vacuous
    assert check_all(after.claims, after.to_dict()) == []


def _launch_waits(events: list[dict], a: int, b: int) -> int:
    """The sum, over device work starting in [a, b), of the time from its launch's end to
    its start (0 where it started before the launch ended), from the raw events."""
    def ns(x) -> int:
        return int(Decimal(str(x)) * 1000)
    launch_end = {e["args"]["correlation"]: ns(e["ts"]) + ns(e["dur"]) for e in events
                  if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
                  and "correlation" in e.get("args", {})}
    total = 0
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            st, c = ns(e["ts"]), e.get("args", {}).get("correlation")
            if a <= st < b and c in launch_end:
                total += max(0, st - launch_end[c])
    return total


def test_the_annotated_path_says_what_the_steps_path_says(tb, tmp_path):
    """``--annotate``'s critical-path track of the hand-worked step numbered every third:
    the launch's 88 us wait is one slice ``not in the trace`` on ``unknown``, none is
    launch latency, and the path's slices tile the step."""
    from typer.testing import CliRunner

    from traceview.cli.app import app

    _waited_step(tb, lambda k: 3 * k)
    path, out = tb.write(tmp_path / "t.json"), tmp_path / "t.annotated.json.gz"
    res = CliRunner().invoke(app, ["explain", str(path), "--annotate", str(out)])
    assert res.exit_code == 0, res.output
    on_path = [e for e in json.loads(gzip.decompress(out.read_bytes()))["traceEvents"]
               if e.get("cat") == "traceview" and e.get("ph") == "X"
               and "kind" in e.get("args", {}) and "resource" in e["args"]]
    assert sum(e["args"]["ns"] for e in on_path) == 300 * US
    latency = [(e["args"]["resource"], e["args"]["ns"]) for e in on_path
               if e["args"]["kind"] == "launch_latency"]
    assert latency == [("unknown", 88 * US)]
    assert not [e for e in on_path if e["name"] == "launch latency"]
    assert [e["name"] for e in on_path if e["args"]["kind"] == "launch_latency"] == \
        ["not in the trace"]
