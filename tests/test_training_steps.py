"""Training steps on real H200 traces (fixtures/train_llama_*): threads, phases, device
idle and the critical path, each checked against a count written here from the raw JSON
events (plain json and integers, from the definitions in docs/training.md), never against
traceview's own earlier output."""

from __future__ import annotations

import gzip
import json
import re
from functools import cache
from pathlib import Path

import pytest

import traceview
from conftest import FIXTURES
from rawcount import clip, length, minus, union
from tracebuilder import TraceBuilder
from traceview.errors import UsageError

EAGER = "train_llama_eager.json.gz"
TRAINING = ["train_llama_eager.json.gz", "train_llama_compiled.json.gz",
            "train_llama_dataloader.json.gz", "train_llama_side_stream.json.gz",
            "train_llama_eager_sleep.json.gz", "train_llama_reduce_overhead.json.gz"]
DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
LAUNCHES = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
            "cudaMemcpyAsync", "cudaMemsetAsync", "cudaGraphLaunch"}


def ns(x) -> int:
    return round(float(x) * 1000)


@cache
def raw(name: str) -> list[dict]:
    doc = json.loads(gzip.decompress((FIXTURES / name).read_bytes()))
    return [e for e in doc["traceEvents"] if e.get("ph") == "X"]


@cache
def report(name: str, **opts):
    return traceview.analyze(FIXTURES / name, traceview.Options(**dict(opts)))










def main_tid(events) -> int:
    return next(e["tid"] for e in events if e["name"].startswith("ProfilerStep#")
                and e.get("cat") == "user_annotation")


def steps(events):
    tid = main_tid(events)
    return sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"]) for e in events
                  if e.get("cat") == "user_annotation" and e["tid"] == tid
                  and re.match(r"^ProfilerStep#\d+$", e["name"]))


def phases_by_definition(events, a, b):
    """docs/training.md's phase rules, written again: data loading, optimizer, backward
    (main-thread backward frame; envelope of each run of evaluate_function on any
    thread), forward (top nn.Module frames, else the time before each backward
    segment), other; first claim wins."""
    tid = main_tid(events)

    def rows(pred):
        return [[max(ns(e["ts"]), a), min(ns(e["ts"]) + ns(e["dur"]), b)] for e in events
                if pred(e) and ns(e["ts"]) < b and ns(e["ts"]) + ns(e["dur"]) > a]

    data = union(rows(lambda e: e["tid"] == tid and e["name"].startswith("enumerate(DataLoader)#")
                      and e.get("cat") == "user_annotation"))
    opt = union(rows(lambda e: e["tid"] == tid and e.get("cat") == "user_annotation"
                     and re.match(r"^Optimizer\.(step|zero_grad)#", e["name"])))
    bw_frame = union(rows(lambda e: e["tid"] == tid and e.get("cat") == "python_function" and (
        re.match(r"^torch/_tensor\.py\(\d+\): backward$", e["name"])
        or re.match(r"^torch/autograd/__init__\.py\(\d+\): backward$", e["name"]))))
    ev = union(rows(lambda e: e.get("cat") == "cpu_op"
                    and e["name"].startswith("autograd::engine::evaluate_function: ")))
    # one envelope per run of that work: a run ends where the step thread does work of
    # its own wholly between two pieces (a second micro-batch's forward)
    own = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events
           if e["tid"] == tid and e.get("cat") not in ("user_annotation", "Trace")
           and a <= ns(e["ts"]) and ns(e["ts"]) + ns(e["dur"]) <= b]
    bw_env: list = []
    for x in ev:
        if bw_env and not any(bw_env[-1][1] <= s0 and s1 <= x[0] for s0, s1 in own):
            bw_env[-1][1] = x[1]
        else:
            bw_env.append(list(x))
    fw = union(rows(lambda e: e["tid"] == tid and e.get("cat") == "python_function"
                    and e["name"].startswith("nn.Module: ")))
    claimed: list = []
    out = {}
    for name, iv in (("data_loading", data), ("optimizer", opt), ("backward", bw_frame),
                     ("backward", bw_env), ("forward", fw)):
        mine = minus(iv, claimed)
        if length(mine):
            out[name] = union(out.get(name, []) + mine)
            claimed = union(claimed + mine)
    if "forward" not in out and "backward" in out:  # before each backward segment
        bw = out["backward"]
        heads = [[a if i == 0 else bw[i - 1][1], seg[0]] for i, seg in enumerate(bw)]
        mine = minus(heads, claimed)
        if length(mine):
            out["forward"] = mine
            claimed = union(claimed + mine)
    out = dict(sorted(out.items(), key=lambda kv: kv[1][0][0]))  # in the order they run
    rest = minus([[a, b]], claimed)
    if length(rest):
        out["other"] = rest
    return out


@pytest.mark.parametrize("name", TRAINING)
def test_phases_and_device_idle_match_an_independent_count(name):
    events = raw(name)
    r = report(name)
    assert r.steps is not None and r.steps.count == 3
    dev = [[ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])] for e in events
           if e.get("cat") in DEVICE_CATS]
    for (a, b, step_name), row in zip(steps(events), r.steps.steps, strict=True):
        assert (row.name, row.start_ns, row.end_ns) == (step_name, a, b)
        busy = length(clip(union(dev), a, b))
        assert row.device_busy_ns == busy
        assert row.device_idle_ns == b - a - busy
        want = phases_by_definition(events, a, b)
        got = {p.phase: p for p in row.phases}
        assert list(got) == list(want)
        for phase, iv in want.items():
            assert got[phase].wall_ns == length(iv), phase
            on = length([[max(x[0], y[0]), min(x[1], y[1])] for x in iv for y in union(dev)
                         if min(x[1], y[1]) > max(x[0], y[0])])
            assert got[phase].device_busy_ns == on, phase
        assert sum(p.wall_ns for p in row.phases) == b - a
        # every thread's categories inside a phase add up to the phase (each thread alone)
        for p in row.phases:
            for cats in p.host.values():
                assert sum(cats.values()) == p.wall_ns


@pytest.mark.parametrize("name", TRAINING)
def test_critical_path_and_idle_causes_add_up_and_name_both_threads(name):
    r = report(name)
    for row in r.steps.steps:
        assert sum(p.ns for p in row.critical_path) == row.wall_ns
        assert sum(c.ns for c in row.idle_causes) == row.device_idle_ns
        on_path = {p.resource for p in row.critical_path if p.kind == "host"}
        assert any("pt_autograd_0" in x for x in on_path), on_path
        assert any(x.startswith("main thread") for x in on_path), on_path
        assert all(p.ns > 0 for p in row.critical_path)


def test_both_threads_are_lanes_with_their_own_launches():
    events = raw(EAGER)
    r = report(EAGER)
    names = {t.name for t in r.threads}
    assert "pt_autograd_0" in names  # the name Kineto gives before the generic 'python3'
    a, b = r.window.start_ns, r.window.end_ns
    for t in r.threads:
        want = sum(1 for e in events if e["tid"] == t.tid and e["name"] in LAUNCHES
                   and a <= ns(e["ts"]) < b)
        assert t.launches == want, t.label
        assert sum(t.categories.values()) == r.window.dur_ns
    main = next(t for t in r.threads if t.role == "main")
    assert main.attributed and main.syncs >= 3  # cudaDeviceSynchronize every step
    # the main thread's Python is traced throughout: untraced <= 10% of the window
    assert main.categories.get("untraced", 0) <= 0.10 * r.window.dur_ns
    assert r.host.categories.get("untraced", 0) <= 0.10 * r.window.dur_ns


def test_planted_host_delay_is_on_the_critical_path():
    name = "train_llama_eager_sleep.json.gz"
    truth = json.loads((FIXTURES / "train_llama_eager_sleep.truth.json").read_text())
    events = raw(name)
    sleeps = [(ns(e["ts"]), ns(e["dur"])) for e in events if e["name"] == "<built-in function sleep>"]
    r = report(name)
    for row in r.steps.steps:
        slept = sum(d for s, d in sleeps if row.start_ns <= s < row.end_ns)
        assert slept >= truth["planted_sleep_ns"]  # the frame the profiler recorded
        waits = sum(p.ns for p in row.critical_path
                    if p.kind == "host" and p.what == "wait" and p.resource.startswith("main"))
        assert slept <= waits <= slept + 0.05 * row.wall_ns
        other = next(p for p in row.phases if p.phase == "other")
        assert other.wall_ns >= slept  # between backward and the optimizer: no phase's


def test_compiled_steps_are_warm_and_the_trees_are_consistent():
    r = report("train_llama_compiled.json.gz")
    assert r.calls.count == 3 and r.calls.warm_count == 3
    helper = [t for t in r.threads if t.role == "helper"]
    assert helper and all(t.categories.get("compile", 0) == 0 for t in helper)

    def walk(nodes, parent_incl):
        for n in nodes:
            assert n.self_ns <= n.inclusive_ns
            assert n.inclusive_ns <= parent_incl
            walk(n.children, n.inclusive_ns)
    walk(r.calls.tree, r.calls.stats["api_ns"].p50)


def test_thread_and_calls_options_on_the_autograd_thread():
    r = report(EAGER, thread="pt_autograd_0")
    assert r.host.thread.label.startswith("pt_autograd_0")
    assert report(EAGER, thread="543").host.thread.tid == 543
    r = report(EAGER, calls="Optimizer.step#AdamW.step", thread="pt_autograd_0")
    assert r.calls.count == 3  # ranges on another thread than the attributed one
    r = report(EAGER, calls="MmBackward0")  # host ops on the autograd thread
    assert r.host.thread.label.startswith("pt_autograd_0") and r.calls.count == 45
    with pytest.raises(UsageError, match="no such host thread"):
        report(EAGER, thread="pt_nothing")


def test_generate_gives_its_forward_passes():
    name = "generate_llama_16_tokens.json.gz"
    truth = json.loads((FIXTURES / "generate_llama_16_tokens.truth.json").read_text())
    events = raw(name)
    top = [e for e in events if e["name"].startswith("nn.Module: LlamaForCausalLM")]
    r = report(name)
    assert r.calls.source == "forward_passes"
    assert r.calls.count == len(top) == truth["new_tokens"]  # the last token needs no pass
    assert [c.kind for c in r.calls.per_call] == ["prefill"] + ["decode"] * (len(top) - 1)
    assert [c.start_ns for c in r.calls.per_call] == sorted(ns(e["ts"]) for e in top)


def test_cold_compile_then_warm_calls_and_the_overhang_diagnostic():
    path = Path(FIXTURES) / "large" / "compiled_fn_cold_then_warm.json.gz"
    r = traceview.analyze(path)
    assert r.calls.count == 3
    assert [c.cold for c in r.calls.per_call] == [True, False, False]
    d = next(g for g in r.diagnostics if g.code == "python-frame-overhang")
    assert "__exit__" in d.message and d.count > 0
    # the clipped frames no longer outlive their caller: the first call ends where its
    # Python frame ends, before the warm calls
    assert r.calls.per_call[0].end_ns < r.calls.per_call[1].start_ns


def test_the_time_order_line_adds_up_to_the_step(tmp_path):
    """Pieces of ``other`` under 1% of the step are no stretch of the time-order line; a
    DLRM rank's step listed "other 213 us" beside its table's "other 307 us" and the
    stretches summed to 19.81 of 19.90 ms. The line now says how much it leaves out,
    counted here: a 5 us gap between the micro-batches and 5 us after the optimizer."""
    us = 1_000
    tb = TraceBuilder()
    tb.annotation("ProfilerStep#0", 0, 1_000 * us)
    for fwd, bwd in ((0, 300), (505, 700)):  # two micro-batches, 5 us apart
        tb.py("nn.Module: Net_0", fwd * us, (bwd - fwd) * us)
        tb.launched_kernel("k", (fwd + 10) * us, 5 * us, (fwd + 20) * us, 50 * us)
        tb.py("torch/_tensor.py(625): backward", bwd * us, 200 * us)
    tb.annotation("Optimizer.step#SGD.step", 900 * us, 95 * us)
    path = tb.write(tmp_path / "two_micro_batches.json")
    r = traceview.analyze(path)
    step = r.steps.steps[0]
    listed = sum(g.end_ns - g.start_ns for g in step.segments)
    assert step.wall_ns == 1_000 * us and step.wall_ns - listed == 10 * us
    said = next(c.text for c in r.claims if c.id == "step-segments")
    assert said.endswith("; and other pieces under 1% of the step, 10 us in all")
