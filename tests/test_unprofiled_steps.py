"""Unprofiled step times beside profiled steps: ``traceview.capture_steps`` and the
correction explain states (``report/unprofiled_steps.py``)."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest
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
    trace.metadata["traceview_steps"] = {"n": 10, "step_ns_p50": u, "timer": "by hand"}
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


def test_capture_steps_records_unprofiled_step_times(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the test machine is shared: no thread pool to wait on
    m = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x, y = torch.randn(32, 64), torch.randn(32, 8)

    def step():
        opt.zero_grad()
        torch.nn.functional.mse_loss(m(x), y).backward()
        opt.step()

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
    assert b["step_ns_p50"] == int(median(b["step_ns_samples"]))
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
