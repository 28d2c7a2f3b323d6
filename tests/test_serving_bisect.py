"""The bisect's parent loop over child processes, with scripted children (no torch).

Each scripted child prints what a real one would: the candidate list (first child only),
then ``testing``/result lines, stopping at a crash; one dies mid-op without a word.
"""

from __future__ import annotations

import sys

from traceview.serve.bisect import bisect
from traceview.serve.launch import outcome
from traceview.serve.spec import Variant

OPS = ["add", "mul", "rms_norm", "silu", "softmax"]


def scripted(behaviour):
    """behaviour[op] in ok / wrong / crash / die; returns (launcher, tasks seen)."""
    tasks = []

    def launch(variant, task):
        tasks.append(task)
        lines = []
        if task["candidates"] is None:
            lines.append({"candidates": OPS, "called": OPS, "not_called": 7, "aten_ops": []})
        tested = []
        for op in OPS[task["start"]:]:
            lines.append({"testing": op})
            b = behaviour.get(op, "ok")
            if b == "die":
                return outcome(lines, -11, "Segmentation fault")
            if b == "slow":  # stopped at --child-timeout (returncode None), no result
                return outcome(lines, None, "")
            row = {"op": op, "crashed": b == "crash"}
            if b == "crash":
                row.update(phase="greedy decode", error="RuntimeError: CUDA error: an "
                                                        "illegal memory access was encountered")
            else:
                row.update(logits_ratio=0.5 if b == "wrong" else 0.001, passed=b == "ok",
                           earliest_divergence=None)
            lines.append(row)
            tested.append(row)
            if b == "crash":
                break
        lines.append({"result": {"tested": tested}})
        return outcome(lines, 0, "")

    return launch, tasks


def test_crashes_restart_a_child_after_the_culprit_and_name_it():
    launch, tasks = scripted({"mul": "crash", "silu": "wrong", "softmax": "die"})
    r = bisect(Variant("B", backend="flag_gems"), {"x": 1}, launch)
    assert [t["start"] for t in tasks] == [0, 2]  # resumes after the crash; wrong goes on
    assert tasks[1]["candidates"] == OPS  # later children get the list, do not redo it
    assert {row["op"]: row["verdict"] for row in r.rows} == {
        "add": "ok", "mul": "crashed", "rms_norm": "ok", "silu": "wrong", "softmax": "crashed"}
    assert r.culprits == ["mul", "silu", "softmax"]
    died = r.rows[-1]
    assert died["phase"] == "process died" and "status -11: Segmentation fault" in died["error"]
    assert r.children == 2 and r.incomplete is None and r.not_called == 7


def test_a_clean_backend_gives_no_culprit_in_one_child():
    launch, _tasks = scripted({})
    r = bisect(Variant("B", backend="flag_gems"), {}, launch)
    assert r.culprits == [] and r.children == 1 and len(r.rows) == len(OPS)


def test_a_child_that_cannot_list_ops_is_reported_not_looped():
    def launch(variant, task):
        return outcome([{"error": "the flag_gems backend needs FlagGems"}], 0, "")

    r = bisect(Variant("B", backend="flag_gems"), {}, launch)
    assert r.children == 1 and r.culprits == []
    assert "could not be made: the flag_gems backend needs FlagGems" in r.incomplete


def test_a_variant_decides_its_interpreter_and_environment(monkeypatch):
    from traceview.runner.process import TRACEVIEW_ROOT
    from traceview.serve.launch import command

    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    argv, env = command(Variant("B", env={"FOO": "1"}, python="/opt/py/bin/python3"))
    assert argv == ["/opt/py/bin/python3", "-m", "traceview.serve.child"]
    assert env["FOO"] == "1" and env["PYTHONPATH"].split(":") == [TRACEVIEW_ROOT, "/elsewhere"]
    argv, env = command(Variant("A", env={"PYTHONPATH": "/fake"}))
    assert argv[0] == sys.executable and env["PYTHONPATH"].split(":") == [TRACEVIEW_ROOT, "/fake"]
    assert "FOO" not in env


def test_an_op_that_runs_past_the_timeout_is_no_culprit():
    """Seen on the H200: FlagGems mm autotunes past a 60 s --child-timeout when cold; a
    slow op is reported as timed out and the bisect goes on, never named as broken."""
    launch, tasks = scripted({"mul": "slow", "silu": "wrong"})
    r = bisect(Variant("B", backend="flag_gems"), {"x": 1}, launch)
    assert [t["start"] for t in tasks] == [0, 2]
    assert {row["op"]: row["verdict"] for row in r.rows} == {
        "add": "ok", "mul": "timeout", "rms_norm": "ok", "silu": "wrong", "softmax": "ok"}
    assert r.culprits == ["silu"] and r.timed_out == ["mul"]
    assert "time limit" in r.rows[1]["error"] and r.to_dict()["timed_out"] == ["mul"]
