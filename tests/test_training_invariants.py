"""Invariants of the step analysis on generated two-thread training steps (hypothesis;
the main thread waits in ``run_backward`` or holds only a ``## backward ##`` range):
the critical path and the device idle causes add up to the step exactly, the phases tile
it, every thread's categories sum to the window, and frames that overhang their caller are
clipped so that no call tree has a child above its parent or self above inclusive."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import traceview
from tracebuilder import TraceBuilder

AUTOGRAD = 200


@st.composite
def training_step(draw):
    tb = TraceBuilder()
    tb.raw({"ph": "M", "name": "thread_name", "pid": tb.pid, "tid": AUTOGRAD,
            "args": {"name": f"thread {AUTOGRAD} (pt_autograd_0)"}})
    tb.raw({"ph": "M", "name": "thread_name", "pid": tb.pid, "tid": AUTOGRAD,
            "args": {"name": f"thread {AUTOGRAD} (python3)"}})
    t = 0
    n_steps = draw(st.integers(2, 3))
    for i in range(n_steps):
        step0 = t
        t += draw(st.integers(100, 3_000))
        fw0 = t
        for _ in range(draw(st.integers(1, 4))):  # forward launches on the main thread
            t += draw(st.integers(200, 2_000))
            k0 = t + draw(st.integers(500, 5_000))
            tb.launched_kernel("fw", t, 300, k0, draw(st.integers(100, 8_000)), stream=7)
            t += 400
        tb.py("nn.Module: Net_0", fw0, t - fw0)
        t += draw(st.integers(50, 500))
        bw0 = t
        bt = t + 100
        for _ in range(draw(st.integers(1, 4))):  # backward on the autograd thread
            d = draw(st.integers(300, 3_000))
            tb.op("autograd::engine::evaluate_function: MulBackward0", bt, d, tid=AUTOGRAD)
            k0 = bt + draw(st.integers(500, 5_000))
            stream = draw(st.sampled_from([7, 7, 13]))
            tb.launched_kernel("bw", bt + 50, 200, k0, draw(st.integers(100, 8_000)),
                               tid=AUTOGRAD, stream=stream)
            bt += d + draw(st.integers(0, 2_000))
        t = bt + 100
        if draw(st.booleans()):
            tb.py("torch/_tensor.py(1): backward", bw0, t - bw0)
            tb.py("<built-in method run_backward of torch._C._EngineBase object>", bw0 + 10,
                  t - bw0 - 20)
            if draw(st.booleans()):  # a frame the profiler recorded ending after its caller
                tb.py("<built-in method __exit__ of X>", bw0 + 20,
                      t - bw0 + draw(st.integers(1, 9_000)))
        else:  # the main thread holds only a range while the autograd thread works
            tb.annotation("## backward ##", bw0, t - bw0)
            if draw(st.booleans()):  # but runs a node itself, as the engine's caller may
                at = bw0 + draw(st.integers(0, t - bw0 - 100))
                tb.op("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
                      at, draw(st.integers(1, min(500, bw0 + (t - bw0) - at))))
        t += draw(st.integers(50, 500))
        o0 = t
        t += draw(st.integers(200, 3_000))
        tb.launched_kernel("adam", t, 300, t + 600, draw(st.integers(100, 4_000)), stream=7)
        t += 400
        tb.annotation("Optimizer.step#AdamW.step", o0, t - o0)
        s0 = t + 10
        tb.sync(s0, 20_000)
        t = s0 + 20_000 + 10
        tb.annotation(f"ProfilerStep#{i + 1}", step0, t - step0)
        t += draw(st.integers(100, 1_000))
    return tb


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tb=training_step())
def test_step_figures_add_up(tmp_path_factory, tb):
    path = tb.write(tmp_path_factory.mktemp("steps") / "t.json")
    r = traceview.analyze(path)
    assert r.steps is not None and r.steps.count >= 2
    assert {t.name for t in r.threads} >= {"pt_autograd_0"}
    for t in r.threads:
        assert sum(t.categories.values()) == r.window.dur_ns
    for s in r.steps.steps:
        assert sum(p.ns for p in s.critical_path) == s.wall_ns
        assert sum(c.ns for c in s.idle_causes) == s.device_idle_ns
        assert sum(p.wall_ns for p in s.phases) == s.wall_ns
        assert [p.phase for p in s.phases][:3] == ["forward", "backward", "optimizer"]
        for p in s.phases:
            assert p.device_busy_ns + p.device_idle_ns == p.wall_ns
            for cats in p.host.values():
                assert sum(cats.values()) == p.wall_ns

    def walk(nodes, parent):
        for n in nodes:
            assert n.self_ns <= n.inclusive_ns <= parent
            walk(n.children, n.inclusive_ns)
    walk(r.calls.tree, r.calls.stats["api_ns"].max)
