"""The autograd (backward) thread is known by the work it runs, not by its name.

PyTorch names its engine thread ``pt_autograd_0`` today; older profilers wrote
``thread 59977 (python3)`` for it (PARAM's DLRM traces). The thread holding most of its
process's autograd engine events (``autograd::engine::evaluate_function: ...``, or the
backward nodes themselves where the profiler wrote no such range) and not the step thread
is the backward thread whatever its name. Each expected role is counted here from the
raw events, never from traceview's output.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from public_corpus import locate

import traceview
from tracebuilder import TraceBuilder

MS = 1_000_000
US = 1_000
STEP = re.compile(r"^ProfilerStep#\d+$")
ENGINE = "autograd::engine::evaluate_function: "
NODE = re.compile(r"^[A-Z][A-Za-z0-9_]*Backward\d*$|^torch::autograd::AccumulateGrad$")


def raw_events(path: Path) -> list[dict]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    doc = json.loads(data)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return [e for e in events if e.get("ph") == "X"]


def expected_backward_threads(events: list[dict]) -> set[tuple]:
    """Counted from the raw events: per process, the thread holding more than half of
    its engine events (the evaluate_function ranges where any exist, else the backward
    nodes), unless it holds the step ranges."""
    ops = [e for e in events if e.get("cat") in ("cpu_op", "Operator")]
    engine = [e for e in ops if e["name"].startswith(ENGINE)] or \
        [e for e in ops if NODE.search(e["name"])]
    per = Counter((e["pid"], e["tid"]) for e in engine)
    per_pid = Counter(e["pid"] for e in engine)
    steps = Counter((e["pid"], e["tid"]) for e in events
                    if e.get("cat") == "user_annotation" and STEP.match(e["name"]))
    main = {max(steps, key=lambda k: steps[k])} if steps else set()
    return {k for k, n in per.items() if 2 * n > per_pid[k[0]] and k not in main}


def training(*, engine_tid: int, legacy: bool = False) -> TraceBuilder:
    """Two training steps on 100/555: forward ops and launches, then backward, whose
    engine work (three nodes a step, each launching a kernel) runs on ``engine_tid``,
    named as older profilers name it. ``legacy``: the nodes alone, no evaluate_function
    ranges (PyTorch 1.8-1.9)."""
    tb = TraceBuilder(pid=100, tid=555)
    for n in range(2):
        o = n * 10 * MS
        tb.annotation(f"ProfilerStep#{n + 1}", o, 9 * MS)
        tb.op("aten::mm", o + 100 * US, 300 * US)
        tb.launched_kernel("gemm_fwd", o + 150 * US, 10 * US, o + 200 * US, 1 * MS)
        tb.py("torch/_tensor.py(522): backward", o + 2 * MS, 5 * MS)
        for k, node in enumerate(("MmBackward0", "AddBackward0", "torch::autograd::AccumulateGrad")):
            t = o + 2 * MS + 100 * US + k * MS
            if not legacy:
                tb.op(ENGINE + node, t, 800 * US, tid=engine_tid)
            tb.op(node, t + 10 * US, 700 * US, tid=engine_tid)
            tb.launched_kernel(f"bwd_{k}", t + 50 * US, 10 * US, t + 100 * US, 500 * US,
                               tid=engine_tid)
        tb.sync(o + 7 * MS + 500 * US, 1 * MS)
    tb.raw({"ph": "M", "name": "thread_name", "pid": 100, "tid": engine_tid,
            "args": {"name": f"thread {engine_tid} (python3)"}})
    tb.raw({"ph": "M", "name": "thread_name", "pid": 100, "tid": 555,
            "args": {"name": "thread 555 (python3)"}})
    return tb


@pytest.mark.parametrize("legacy", [False, True], ids=["evaluate_function", "nodes_only"])
def test_unnamed_engine_thread_is_autograd(tmp_path, legacy):
    path = training(engine_tid=777, legacy=legacy).write(tmp_path / "t.json")
    events = raw_events(path)
    expected = expected_backward_threads(events)
    assert expected == {(100, 777)}
    assert not any("pt_autograd" in str(e.get("args", {})) for e in events)
    r = traceview.analyze(path)
    roles = {(t.pid, t.tid): t.role for t in r.threads}
    assert roles[(100, 777)] == "autograd"
    assert roles[(100, 555)] == "main"
    assert {k for k, v in roles.items() if v == "autograd"} == expected


def test_engine_work_on_the_main_thread_keeps_it_main(tmp_path):
    """On the CPU the engine runs the backward on the thread that called it: that thread
    holds the steps too, and stays main; no other thread becomes the backward one."""
    path = training(engine_tid=555).write(tmp_path / "t.json")
    events = raw_events(path)
    assert expected_backward_threads(events) == set()
    r = traceview.analyze(path)
    assert [t.role for t in r.threads] == ["main"]


def test_engine_work_split_evenly_names_no_backward_thread(tmp_path):
    """Two threads each running one step's backward: neither runs most of it."""
    tb = training(engine_tid=777)
    for e in tb.events:  # the second step's engine work on another thread
        if e.get("tid") == 777 and e.get("ph") == "X" and e["ts"] >= 10_000:
            e["tid"] = 778
    path = tb.write(tmp_path / "t.json")
    events = raw_events(path)
    per = Counter(e["tid"] for e in events if e["name"].startswith(ENGINE))
    assert per[777] == per[778] > 0  # an even split, counted here
    assert expected_backward_threads(events) == set()
    r = traceview.analyze(path)
    assert not [t for t in r.threads if t.role == "autograd"]


def test_dlrm_backward_thread_is_autograd():
    """PARAM's DLRM trace (PyTorch 2.1, rank 1 of 8): the engine thread is named
    ``thread 59977 (python3)`` and runs all but one of the evaluate_function ranges."""
    name = "facebookresearch__param/chakra_traces__dlrm_kineto__worker1_step_12.json.gz"
    path = locate(name)
    if path is None:
        pytest.skip(f"public corpus trace {name} not present")
    events = raw_events(path)
    expected = expected_backward_threads(events)
    assert len(expected) == 1
    (pid, tid), = expected
    names = [e for e in events if e["name"].startswith(ENGINE)]
    mine = sum(1 for e in names if (e["pid"], e["tid"]) == (pid, tid))
    assert 2 * mine > len(names)
    r = traceview.analyze(path)
    roles = {(t.pid, t.tid): t.role for t in r.threads}
    assert roles[(pid, tid)] == "autograd"
    assert {k for k, v in roles.items() if v == "autograd"} == expected
    steps = {(e["pid"], e["tid"]) for e in events if STEP.match(e["name"])}
    assert {k for k, v in roles.items() if v == "main"} == steps
    row = next(t for t in r.threads if (t.pid, t.tid) == (pid, tid))
    assert "pt_autograd" not in row.name
