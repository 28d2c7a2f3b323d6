"""Sentences that read wrong on public traces nobody here had run traceview on (a DLRM
rank of PARAM's, HTA's eager AlexNet), each checked on its trace against a count written
here from the raw events (``tests/reference_count.py``'s parser). A trace absent from this
machine's corpus copy is skipped (``python tools/copy_public_corpus.py --mirror DIR``).
"""

from __future__ import annotations

import public_corpus
import pytest
import reference_count

import traceview

DLRM = "facebookresearch__param/chakra_traces__dlrm_kineto__worker1_step_12.json.gz"
ALEXNET = ("facebookresearch__HolisticTraceAnalysis/critical_path__simple_add__"
           "benchmark_result_493459_1694039959_trace.json.gz")


def _trace(name: str):
    path = public_corpus.locate(name)
    if path is None:
        pytest.skip(f"{name} is not in this machine's corpus copy")
    return path, reference_count.slices(reference_count.load_events(path))


def test_a_dlrm_steps_recorded_events_are_every_event_on_its_thread():
    """"recorded per warm step: 1000 events" counted the host timeline's rows; the
    profiler recorded 1,288 on the step's thread inside the step (zero-length ops and
    runtime calls and the optimizer and data-loader ranges among them)."""
    path, sl = _trace(DLRM)
    step = next(s for s in sl if reference_count.STEP.match(s.name))
    inside = [s for s in sl if (s.pid, s.tid) == (step.pid, step.tid) and s is not step
              and step.start <= s.start < step.end]
    assert len(inside) == 1288
    r = traceview.analyze(str(path))
    assert r.calls.perturbation.events_per_call == len(inside)
    said = next(c.text for c in r.claims if c.id == "perturbation-recorded")
    assert said.startswith(f"recorded per warm step: {len(inside)} events")


def test_a_dlrm_steps_launchless_kernels_name_the_step():
    """64 kernels the previous step's optimizer launched before the profiler's window run
    inside the one step: the sentence names it "#0", not "steps touched: 0"."""
    path, sl = _trace(DLRM)
    launched = {s.corr for s in sl if s.cat in ("cuda_runtime", "cuda_driver")}
    step = next(s for s in sl if reference_count.STEP.match(s.name))
    orphans = [s for s in sl if s.cat in reference_count.DEVICE_WORK and s.corr not in launched]
    assert len(orphans) == 64 and all(step.start <= s.start < step.end for s in orphans)
    r = traceview.analyze(str(path))
    said = [c.text for c in r.claims if c.id == "integrity-check"]
    assert said == [f"{len(orphans)} device records have no launch record (call #0): their "
                    "launch latency is unknown; steps touched: #0"]


def test_a_dlrm_steps_time_order_line_adds_up_to_the_step():
    """The stretches in time order and the pieces of other they leave out add up to the
    step the reference counts."""
    path, _ = _trace(DLRM)
    ref = reference_count.count(path).steps[0]
    r = traceview.analyze(str(path))
    step = r.steps.steps[0]
    assert (step.start_ns, step.end_ns) == (ref.start, ref.end)
    rest = (ref.end - ref.start) - sum(g.end_ns - g.start_ns for g in step.segments)
    assert rest == 94_000  # the 94 us after the last optimizer stretch, under 1% of the step
    said = next(c.text for c in r.claims if c.id == "step-segments")
    assert said.endswith("; and other pieces under 1% of the step, 94 us in all")


def test_alexnets_linear_layers_are_calls_of_their_own():
    """No ranges or frames: the calls are the outermost ops around launches. The linear
    layers are rarer than the relu_ and conv2d ops and hold no compile work, so each is a
    call of its own kind, its bounds the op's own (they were folded into the relu_ call
    after them, read as an 8 ms relu_); no relu_ call holds one."""
    path, sl = _trace(ALEXNET)
    r = traceview.analyze(str(path))
    assert r.calls.source == "launches"
    linear = [s for s in sl if s.cat == "cpu_op" and s.name == "aten::linear"]
    calls = [(c.kind, c.start_ns, c.end_ns) for c in r.calls.per_call]
    # three per forward, two forwards, each exactly one call of its own kind
    assert len(linear) == 6
    assert all(("aten::linear", s.start, s.end) in calls for s in linear)
    assert not any(k != "aten::linear" and a <= s.start < b
                   for s in linear for k, a, b in calls)
    said = next(c.text for c in r.claims if c.id == "calls-found")
    assert "join" not in said


def test_a_dlrm_ranks_all_to_all_calls_are_one_threads_and_say_the_one_left_out():
    """``--calls '^nccl:all_to_all$'`` matched 4 ranges on the main thread and 1 on the
    autograd thread (backward's collective); the fifth was measured on the main thread,
    idle then: no launch, untraced time, and the table said every call was the main
    thread's. The calls are now the 4 main-thread ranges, each call's launch API time is
    its own thread's launches inside it, and the one left out is named with its thread."""
    path, sl = _trace(DLRM)
    ranges = [s for s in sl if s.name == "nccl:all_to_all" and s.cat == "user_annotation"]
    threads: dict = {}
    for s in ranges:
        threads.setdefault((s.pid, s.tid), []).append(s)
    (home, own), (away, other) = sorted(threads.items(), key=lambda kv: -len(kv[1]))
    assert (len(own), len(other)) == (4, 1)
    r = traceview.analyze(str(path), traceview.Options(calls="^nccl:all_to_all$"))
    assert (r.host.thread.pid, r.host.thread.tid) == home
    own.sort(key=lambda s: s.start)
    assert [(c.start_ns, c.end_ns) for c in r.calls.per_call] == [(s.start, s.end) for s in own]
    apis = reference_count.launch_apis()
    launches = [s for s in sl if s.name in apis and (s.pid, s.tid) == home]
    assert [c.metrics["launch_api_ns"] for c in r.calls.per_call] == [
        sum(la.end - la.start for la in launches if c.start <= la.start < c.end) for c in own]
    spec = f"{away[0]}/{away[1]}"
    assert [(e.thread.endswith(f"[{spec}]"), e.calls) for e in r.calls.elsewhere] == \
        [(True, len(other))]
    assert f"--thread {spec} to see it" in r.calls.description
    a = traceview.analyze(str(path), traceview.Options(calls="^nccl:all_to_all$", thread=spec))
    (only,) = a.calls.per_call
    assert (only.start_ns, only.end_ns) == (other[0].start, other[0].end)
    away_launches = [s for s in sl if s.name in apis and (s.pid, s.tid) == away]
    assert only.metrics["launch_api_ns"] == sum(
        la.end - la.start for la in away_launches if only.start_ns <= la.start < only.end_ns) > 0
