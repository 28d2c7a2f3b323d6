"""A training step is one thing whatever the view: ``--thread`` and ``--window`` choose
what is shown, never a step's phases, critical path or idle causes. And ``--thread``
offers and accepts host threads only (real H200 traces, fixtures/train_llama_*)."""

from __future__ import annotations

import gzip
import json
from functools import cache

import pytest
from typer.testing import CliRunner

import traceview
from conftest import FIXTURES
from traceview.cli.app import app
from traceview.errors import UsageError
from traceview.report.build import build_report
from traceview.report.explanation import analyze_trace

TRAINING = ["train_llama_eager.json.gz", "train_llama_compiled.json.gz",
            "train_llama_dataloader.json.gz", "train_llama_side_stream.json.gz",
            "train_llama_eager_sleep.json.gz", "train_llama_reduce_overhead.json.gz"]


@cache
def trace(name: str):
    return traceview.load(FIXTURES / name)


def report(name: str, **opts):
    return build_report(analyze_trace(trace(name), traceview.Options(**opts)))


def facts(step) -> tuple:
    """What a step is: its span, phases (with every thread's categories in them), its
    critical path and its device idle by cause."""
    return (step.name, step.start_ns, step.end_ns, step.device_busy_ns, step.phases,
            step.critical_path, step.idle_causes, step.communication_ns,
            step.exposed_communication_ns)


@cache
def default_steps(name: str) -> dict[int, tuple]:
    r = report(name)
    assert r.steps is not None and r.steps.steps, name
    return {s.start_ns: facts(s) for s in r.steps.steps}


def raw_threads(name: str) -> dict[tuple[str, str], str]:
    """(pid, tid) -> thread name, for every host thread with an op or frame of its own,
    counted from the raw events."""
    doc = json.loads(gzip.decompress((FIXTURES / name).read_bytes()))
    ev = doc["traceEvents"]
    names = {(str(e["pid"]), str(e["tid"])): e["args"].get("name", "") for e in ev
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    busy = {(str(e["pid"]), str(e["tid"])) for e in ev if e.get("ph") == "X"
            and e.get("cat") in ("cpu_op", "python_function", "cuda_runtime", "cuda_driver",
                                 "user_annotation")}
    return {k: names.get(k, "") for k in busy}


@pytest.mark.parametrize("name", TRAINING)
def test_every_host_thread_shows_the_same_steps(name):
    want = default_steps(name)
    for (pid, tid), _ in sorted(raw_threads(name).items()):
        r = report(name, thread=f"{pid}/{tid}")
        got = {s.start_ns: facts(s) for s in r.steps.steps}
        assert got == want, (name, pid, tid)


@pytest.mark.parametrize("name", TRAINING)
def test_a_window_on_one_step_shows_that_step_unchanged(name):
    want = default_steps(name)
    r = report(name)
    step = r.steps.steps[-1]
    got = report(name, window=f"^{step.name}$")
    assert got.steps is not None and len(got.steps.steps) == 1
    assert facts(got.steps.steps[0]) == want[step.start_ns]


@pytest.mark.parametrize("name", TRAINING)
def test_a_time_window_cutting_steps_keeps_whole_steps(name):
    """A window from a quarter to three quarters of the trace cuts the steps at its
    ends; the steps it shows are the whole steps (this used to end in an IdentityError:
    the critical path walked a clipped thread)."""
    want = default_steps(name)
    r = report(name)
    q = r.window.dur_ns // 4
    got = report(name, window=f"{q}ns:{3 * q}ns")
    assert got.steps is not None
    for s in got.steps.steps:
        assert facts(s) == want[s.start_ns]


def test_thread_names_main_and_pid_tid_are_accepted():
    name = "train_llama_eager.json.gz"
    main = report(name, thread="main").host.thread
    assert (main.pid, main.tid) == (502, 502)
    for spec in ("main thread", "Main", "502", "502/502", "python3"):
        t = report(name, thread=spec).host.thread
        assert (t.pid, t.tid) == (502, 502), spec
    for spec in ("pt_autograd_0", "543", "502/543"):
        t = report(name, thread=spec).host.thread
        assert (t.pid, t.tid) == (502, 543), spec
    dl = "train_llama_dataloader.json.gz"
    pin = next(f"{p}/{t}" for (p, t), n in raw_threads(dl).items() if n.endswith("(pt_data_pin)"))
    phases = {p.phase for p in report(dl, thread=pin).steps.steps[0].phases}
    assert "data_loading" in phases


@pytest.mark.parametrize("spec", ["0/7", "0/0", "/", "Spans/0"])
def test_device_and_empty_lanes_are_refused_in_one_line(spec):
    """The device stream's name row, Kineto's process rows and the empty lane are no
    threads: refused with one line that lists the host threads (exit 2)."""
    for name in ("train_llama_eager.json.gz", "shape_model_schedule.json.gz"):
        with pytest.raises(UsageError) as err:
            report(name, thread=spec)
        msg = str(err.value)
        assert "\n" not in msg and "no such host thread" in msg
        listed = msg.split("host threads:")[1]
        assert "main thread [" in listed and "stream" not in listed and "Spans" not in listed
    res = CliRunner().invoke(app, ["explain", str(FIXTURES / "shape_model_schedule.json.gz"),
                                   "--thread", "/"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "host threads: main thread [1175/1175]" in " ".join(res.output.split())


def test_a_range_window_inside_steps_holds_the_whole_steps(tb, analyze_builder):
    """``--window attn``, a record_function inside each of three steps, spans the middle
    of the first step to the middle of the last: like a time range, it is widened to the
    whole steps it cuts, and says so. Unwidened, the last step was a call reaching past
    the window and the first none at all (a real tutorial trace's 'Self-Attention')."""
    steps = []
    for i in range(3):
        a = 1_000 + 100_000 * i
        tb.annotation(f"ProfilerStep#{i + 1}", a, 90_000)
        tb.annotation("attn", a + 20_000, 30_000)
        tb.launched_kernel("k", a + 25_000, 5_000, a + 31_000, 10_000)
        steps.append((a, a + 90_000))
    events = json.loads(tb.text())["traceEvents"]
    attn = [(round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000))
            for e in events if e["name"] == "attn"]
    lo, hi = min(a for a, _ in attn), max(b for _, b in attn)
    cut = [f"ProfilerStep#{k + 1}" for k, (a, b) in enumerate(steps)
           if a < hi and b > lo and (a < lo or b > hi)]
    assert cut == ["ProfilerStep#1", "ProfilerStep#3"]
    r = analyze_builder(tb, window="attn")
    assert (r.window.start_ns, r.window.end_ns) == (steps[0][0], steps[-1][1])
    assert r.window.description == ("span of 3 user range(s) matching 'attn', widened to the "
                                    "whole steps it cut: ProfilerStep#1, ProfilerStep#3")
    assert [(c.start_ns, c.end_ns) for c in r.calls.per_call] == steps


def test_a_window_ending_where_a_step_s_range_ends_holds_its_device_work(tb, analyze_builder):
    """Three steps; the last launches work that runs 200 us past its range (no step
    after it to stop at). A time window ending at that range's end cuts the step as
    much as one ending inside it: the step's extent runs to its device work's end, so
    the window is widened to it, and the window's device busy is the steps' (a real
    trace's window ended at the range, its last step reaching 89 ms past the window)."""
    steps = []
    for i in range(3):
        a = 100_000 * i
        tail = 200_000 if i == 2 else 0
        tb.annotation(f"ProfilerStep#{i + 1}", a, 90_000)
        tb.launched_kernel("k", a + 10_000, 5_000, a + 20_000, 60_000 + tail)
        steps.append((a, a + 90_000, a + 80_000 + tail))
    events = json.loads(tb.text())["traceEvents"]
    kernels = sorted((round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000))
                     for e in events if e["cat"] == "kernel")
    # the last step's extent: its range, then its kernel running on to 280 us past its start
    last_end = kernels[-1][1]
    assert last_end == 200_000 + 280_000 > steps[-1][1]
    r = analyze_builder(tb, window=f"{50_000}ns:{steps[-1][1]}ns")
    assert (r.window.start_ns, r.window.end_ns) == (0, last_end)
    assert r.window.description.endswith("widened to the whole steps it cut: "
                                         "ProfilerStep#1, ProfilerStep#3")
    assert r.steps is not None and [s.end_ns for s in r.steps.steps] == [90_000, 190_000, last_end]
    busy = sum(b - a for a, b in kernels)  # the kernels do not overlap
    assert r.device.busy_ns == busy == sum(s.device_busy_ns for s in r.steps.steps)


TUTORIAL = ("Quentin-Anthony__torch-profiling-tutorial/"
            "log__transformer__dc3b0e7228dd_851.1752215573993169006.pt.trace.json.gz")


def test_the_tutorial_s_attention_window_holds_whole_steps():
    """The real trace: 'Self-Attention' ranges inside ProfilerStep#1-#3; the window is the
    first cut step's start to the last's end, every step a whole call inside it."""
    from decimal import Decimal

    import public_corpus

    path = public_corpus.locate(TUTORIAL)
    if path is None:
        pytest.skip(f"public corpus trace {TUTORIAL} absent")
    with gzip.open(path, "rt") as f:
        events = json.load(f, parse_float=Decimal)["traceEvents"]

    def span(e):
        a = int(Decimal(e["ts"]) * 1000)
        return a, a + int(Decimal(e["dur"]) * 1000)

    host = [e for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"]
    attn = [span(e) for e in host if e["name"] == "Self-Attention"]
    steps = sorted(span(e) for e in host if e["name"].startswith("ProfilerStep#"))
    lo, hi = min(a for a, _ in attn), max(b for _, b in attn)
    inside = [(a, b) for a, b in steps if a < hi and b > lo]
    r = traceview.analyze(path, traceview.Options(window="Self-Attention"))
    assert (r.window.start_ns, r.window.end_ns) == (min(a for a, _ in inside),
                                                   max(b for _, b in inside))
    assert [(c.start_ns, c.end_ns) for c in r.calls.per_call] == inside
