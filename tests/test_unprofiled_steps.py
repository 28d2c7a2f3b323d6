"""Unprofiled step times beside profiled steps: ``traceview.capture_steps`` and the
correction explain states (``report/unprofiled_steps.py``)."""

from __future__ import annotations

import dataclasses
import gzip
import json
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import traceview
from traceview.cli.app import app
from traceview.stats import median

FIX = Path(__file__).resolve().parents[1] / "fixtures"
TRAIN = FIX / "train_llama_eager.json.gz"


def _with_steps(share: float = 0.6):
    """The eager training fixture with unprofiled step times written by hand (the
    recipe of docs/training.md): ``share`` of its profiled warm step."""
    trace = traceview.load(str(TRAIN))
    walls = [s.wall_ns for s in traceview.explain(trace).steps.steps if not s.cold]
    trace = traceview.load(str(TRAIN))
    u = int(median(walls) * share)
    # a Trace is frozen: the recipe's metadata goes into a new one
    trace = dataclasses.replace(trace, metadata={
        **trace.metadata, "traceview_steps": {"n": 10, "step_ns_p50": u, "timer": "by hand"}})
    return trace, int(median(walls)), u


def test_explain_shows_profiled_and_unprofiled_steps_and_corrects_phases_and_path():
    trace, profiled, u = _with_steps()
    r = traceview.explain(trace)
    st = r.unprofiled.steps
    assert (st.profiled_step_ns, st.unprofiled_step_ns) == (profiled, u)
    typical = next(s for s in r.steps.steps if s.index == st.step_index)
    for p in typical.phases:  # each phase keeps its device work and loses host time only
        assert p.device_busy_ns <= st.phases[p.phase] <= p.wall_ns
    assert abs(sum(st.phases.values()) - u) <= len(st.phases)
    assert abs(sum(i.ns for i in st.critical_path) - u) <= len(st.critical_path)
    assert all(i.ns == i.profiled_ns for i in st.critical_path if i.kind == "device")
    assert "device-idle" in st.model
    # the calls are the steps: their unprofiled figure is the step's
    assert r.unprofiled.call_ns == u


def test_text_says_profiled_step_x_unprofiled_y_and_the_model():
    trace, profiled, u = _with_steps()
    from traceview.render.registry import RenderOptions, renderer

    out = renderer("text").render(traceview.explain(trace), RenderOptions(width=160))
    text = out if isinstance(out, str) else out.decode()
    assert "profiled step " in text and "unprofiled" in text
    assert "correction model:" in text


def test_a_step_time_above_the_profiled_one_corrects_nothing():
    trace, profiled, _ = _with_steps(share=1.5)
    st = traceview.explain(trace).unprofiled.steps
    assert all(i.ns == i.profiled_ns for i in st.critical_path)
    assert st.phases == st.profiled_phases


def _tiny_training_step(torch):
    """One SGD step of a seeded two-layer MLP on a fixed batch: a training step on the CPU."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x, y = torch.randn(32, 64), torch.randn(32, 8)

    def step():
        opt.zero_grad()
        torch.nn.functional.mse_loss(m(x), y).backward()
        opt.step()

    return step


def test_capture_steps_records_unprofiled_step_times(tmp_path):
    torch = pytest.importorskip("torch")
    step = _tiny_training_step(torch)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the test machine is shared: no thread pool to wait on
    try:
        out = traceview.capture_steps(step, tmp_path / "steps.json.gz", steps=4, unprofiled=10)
        mine = []
        for _ in range(10):  # independently: the same step timed here, no profiler near
            t0 = time.perf_counter_ns()
            step()
            mine.append(time.perf_counter_ns() - t0)
    finally:
        torch.set_num_threads(threads)
    doc = json.loads(gzip.decompress(out.read_bytes()))
    b = doc["traceview_steps"]
    assert b["n"] == 10 and len(b["step_ns_samples"]) == 10
    assert b["step_ns_p50"] == int(median(b["step_ns_samples"])) == b["before_ns_p50"]
    # the steps timed after the profiler ran are kept apart, never in the step figure
    assert len(b["after_ns_samples"]) == 5 and b["after_ns_p50"] == int(median(b["after_ns_samples"]))
    names = {e.get("name") for e in doc["traceEvents"]}
    assert {f"ProfilerStep#{i}" for i in range(4)} <= names
    assert median(mine) / 3 <= b["step_ns_p50"] <= 3 * median(mine)


def test_the_json_key_carries_the_steps():
    trace, _, u = _with_steps()
    from traceview.report.schema import from_json, to_json

    r = traceview.explain(trace)
    d = json.loads(to_json(r))["unprofiled"]["steps"]
    assert d["unprofiled_step_ns"] == u and d["critical_path"] and d["model"]
    assert from_json(to_json(r)).unprofiled == r.unprofiled


def test_no_step_times_no_steps_section():
    r = CliRunner().invoke(app, ["explain", str(TRAIN), "-f", "json"])
    assert r.exit_code == 0
    assert json.loads(r.output)["unprofiled"]["steps"] is None


# ------------------------------------------------------------- steps in a CPU-only trace


def _cpu_steps(tb, walls, gap=2_000, ops_per_step=3):
    """A CPU-only training loop: ``ProfilerStep#i`` ranges holding host ops, no launch."""
    t = 1_000
    for i, w in enumerate(walls):
        tb.annotation(f"ProfilerStep#{i}", t, w)
        part = w // (ops_per_step + 1)
        for k in range(ops_per_step):
            tb.op("aten::mm", t + k * part + 10, part - 20)
        t += w + gap
    return tb


def _raw_steps(doc):
    """(name, wall ns) of every ProfilerStep range in a trace document, from its events."""
    from decimal import Decimal

    return [(e["name"], int(Decimal(str(e["dur"])) * 1000)) for e in doc["traceEvents"]
            if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith(
                "ProfilerStep#")]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(walls=st.lists(st.integers(20_000, 5_000_000), min_size=1, max_size=7))
def test_profiler_steps_are_steps_in_a_cpu_only_trace(tmp_path, walls):
    from tracebuilder import TraceBuilder

    tb = _cpu_steps(TraceBuilder(), walls)
    path = tb.write(tmp_path / "cpu_steps.json")
    raw = _raw_steps(json.loads(path.read_text()))
    r = traceview.analyze(path)
    assert r.calls.source == "profiler_steps"
    assert r.steps is not None and r.steps.count == len(raw)
    assert [(s.name, s.wall_ns) for s in r.steps.steps] == raw
    for s in r.steps.steps:  # no device: every ns of a step is device idle, on the host path
        assert s.device_busy_ns == 0 and s.device_idle_ns == s.wall_ns
        assert sum(i.ns for i in s.critical_path) == s.wall_ns


def test_steps_without_launches_in_a_trace_that_launches_are_still_not_steps(tb, analysis_builder):
    _cpu_steps(tb, [100_000, 100_000, 100_000])
    tb.launched_kernel("k", 400_000, 5_000, 406_000, 3_000)  # launching, outside the steps
    assert analysis_builder(tb).calls.source != "profiler_steps"


def test_capture_steps_on_the_cpu_shows_profiled_and_unprofiled_steps(tmp_path):
    torch = pytest.importorskip("torch")
    step = _tiny_training_step(torch)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        out = traceview.capture_steps(step, tmp_path / "steps.json.gz", steps=4, unprofiled=6)
    finally:
        torch.set_num_threads(threads)
    doc = json.loads(gzip.decompress(out.read_bytes()))
    raw = _raw_steps(doc)
    assert len(raw) == 4
    r = traceview.analyze(out)
    assert r.steps is not None and r.steps.count == 4
    # the steps' walls are the ranges' own durations (within the loader's rounding to ns)
    for s, (name, wall) in zip(r.steps.steps, raw, strict=True):
        assert s.name == name and abs(s.wall_ns - wall) <= 1
    warm = [w for (_, w), s in zip(raw, r.steps.steps, strict=True) if not s.cold]
    st_ = r.unprofiled.steps
    assert st_ is not None and st_.unprofiled_step_ns == doc["traceview_steps"]["step_ns_p50"]
    assert abs(st_.profiled_step_ns - median(warm)) <= 1
    from traceview.render.registry import RenderOptions, renderer

    text = renderer("text").render(r, RenderOptions(width=160))
    text = text if isinstance(text, str) else text.decode()
    assert "profiled step " in text and "correction model:" in text
    # no device stream: nothing waited, so no device-idle table
    assert "no device in this trace (CPU only)" in text and "waited for" not in text
