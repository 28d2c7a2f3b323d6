"""The held-out JeolKorpi VAE traces: CPU-only PyTorch on a Windows laptop, with_stack, a
scheduled profiler (two training cycles of three ``ProfilerStep#N`` each) and an evaluation
run with a multi-process (spawned) DataLoader. Counted here from the raw events:

* each step's wall (its ``ProfilerStep#N`` range);
* the wandb thread (the one running ``wandb/sdk/lib/asyncio_manager.py: _main``) is an
  asyncio event loop that spends almost all of the window blocked in
  ``asyncio/windows_events.py: _poll`` (``GetQueuedCompletionStatus`` under it where the poll
  began inside the profile). Blocked in a poll it does no work and no step waits on it
  through it: its work is at most its traced time outside ``_poll``, and its share of a
  step's critical path at most that time inside the step;
* in the evaluation run the main thread blocks in ``WaitForMultipleObjects`` (the DataLoader's
  result queue) and ``WaitForSingleObject`` (``multiprocessing`` joining the spawned workers
  at shutdown, 2.53 s): both are waits for other processes, so the thread's ``wait`` is at
  least their union;
* ``diff`` of the two training cycles: with no device work on either side there is no host
  overhead (device idle) per call to compare, as ``explain`` says ("no device work, so no
  host overhead").

They run only with ``TRACEVIEW_HELD_OUT=1`` and skip where the corpus copy lacks a trace.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import public_corpus
import pytest
from typer.testing import CliRunner

from rawcount import clip, complete_slices, length, minus, union
from traceview.cli.app import app

DIR = "JeolKorpi__dtu_mlops/"
TRAIN = [DIR + "log__vae_profile_train__LAPTOP-E0BGNU52_16984.1769416192589512600.pt.trace.json.gz",
         DIR + "log__vae_profile_train__LAPTOP-E0BGNU52_16984.1769416193098034300.pt.trace.json.gz"]
EVAL = DIR + ("s4_debugging_and_logging__exercise_files__log__vae_profile_eval__"
              "LAPTOP-E0BGNU52_1836.1769163881600203200.pt.trace.json.gz")
POLL = re.compile(r"asyncio/windows_events\.py\(\d+\): _poll")
WAIT = re.compile(r"threading\.py\(\d+\): wait")
runner = CliRunner()


def _explain(path: Path, *extra: str) -> dict[str, Any]:
    r = runner.invoke(app, ["explain", str(path), "--format", "json", *extra])
    assert r.exit_code == 0, r.output[:400]
    return json.loads(r.stdout)


@pytest.mark.parametrize("name", TRAIN, ids=["cycle1", "cycle2"])
def test_vae_step_walls_as_counted(name):
    path = public_corpus.held_out_path(name)
    want = {s["name"]: s["e"] - s["s"] for s in complete_slices(path)
            if s["cat"] == "user_annotation" and s["name"].startswith("ProfilerStep#")}
    assert len(want) == 3
    d = _explain(path)
    assert {s["name"]: s["wall_ns"] for s in d["steps"]["steps"]} == want


def _wandb_loop(path: Path) -> tuple[int, list[list[int]]]:
    """The wandb event loop's TID and the instants it is traced outside a blocking poll."""
    sl = complete_slices(path)
    (tid,) = {s["tid"] for s in sl if s["name"].startswith("wandb/sdk/lib/asyncio_manager.py(")
              and s["name"].endswith("): _main")}
    mine = [s for s in sl if s["tid"] == tid]
    traced = union([[s["s"], s["e"]] for s in mine])
    poll = union([[s["s"], s["e"]] for s in mine if POLL.fullmatch(s["name"])])
    assert length(poll) > 0.9 * length(traced)  # the count itself: mostly blocked
    return tid, minus(traced, poll)


@pytest.mark.parametrize("name", TRAIN, ids=["cycle1", "cycle2"])
def test_vae_wandb_event_loop_blocked_in_poll_is_no_work(name):
    path = public_corpus.held_out_path(name)
    tid, busy = _wandb_loop(path)
    (t,) = [t for t in _explain(path)["threads"] if t["tid"] == tid]
    assert t["work_ns"] <= length(busy), (t["label"], t["work_ns"], length(busy), t["categories"])


@pytest.mark.parametrize("name", TRAIN, ids=["cycle1", "cycle2"])
def test_vae_wandb_event_loop_blocked_in_poll_is_off_the_critical_path(name):
    path = public_corpus.held_out_path(name)
    tid, busy = _wandb_loop(path)
    d = _explain(path)
    (t,) = [t for t in d["threads"] if t["tid"] == tid]
    for st in d["steps"]["steps"]:
        on_path = sum(p["ns"] for p in st["critical_path"] if p["resource"] == t["label"])
        limit = length(clip(busy, st["start_ns"], st["end_ns"]))
        assert on_path <= limit, (st["name"], t["label"], on_path, limit)


def test_vae_eval_blocking_waits_for_workers_are_wait():
    path = public_corpus.held_out_path(EVAL)
    sl = complete_slices(path)
    waits = [s for s in sl if s["name"] in ("<built-in function WaitForSingleObject>",
                                            "<built-in function WaitForMultipleObjects>")]
    blocked = union([[s["s"], s["e"]] for s in waits])
    assert len({s["tid"] for s in sl if s["cat"] != "Trace"}) == 1
    assert length(blocked) > 15_000_000_000  # 15.0 s of the 15.4 s window: can fail
    d = _explain(path)
    cats = d["host"]["categories"]
    assert cats.get("wait", 0) >= length(blocked), (cats, length(blocked))


def test_vae_diff_of_cpu_cycles_compares_no_host_overhead():
    before, after = public_corpus.held_out_path(TRAIN[0]), public_corpus.held_out_path(TRAIN[1])
    for p in (before, after):  # no device work on either side, counted
        assert not [s for s in complete_slices(p) if s["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")]
    r = runner.invoke(app, ["diff", str(before), str(after), "--format", "json"])
    assert r.exit_code == 0, r.output[:400]
    (row,) = [c for c in json.loads(r.stdout)["comparisons"]
              if c["metric"] == "calls.host_overhead_ns.p50"]
    assert (row["before"], row["after"]) == (None, None), row


def test_vae_eval_forward_frames_of_different_functions_are_not_one_call_kind():
    """``--calls forward`` selects the outermost matching frames: the model's
    ``vae_mnist_bugs.py(73): forward`` (26.5 ms, holding the encoder's and decoder's) and a
    later stand-alone ``vae_mnist_bugs.py(59): forward`` (the decoder, 3.15 ms). A frame's
    number is its ``def`` line: two numbers are two functions, never one call kind whose p50
    is the decoder's."""
    path = public_corpus.held_out_path(EVAL)
    frames = [s for s in complete_slices(path) if s["cat"] == "python_function"
              and re.fullmatch(r"vae_mnist_bugs\.py\(\d+\): forward", s["name"])]
    outer = [f for f in frames if not any(g is not f and g["s"] <= f["s"] and f["e"] <= g["e"]
                                          for g in frames)]
    assert sorted(f["name"] for f in outer) == ["vae_mnist_bugs.py(59): forward",
                                                "vae_mnist_bugs.py(73): forward"]
    d = _explain(path, "--calls", "forward")
    names: dict[str, set[str]] = {}
    for c in d["calls"]["per_call"]:
        names.setdefault(c["kind"], set()).add(c["name"])
    assert all(len(v) == 1 for v in names.values()), names


@pytest.mark.parametrize("name", TRAIN, ids=["cycle1", "cycle2"])
def test_vae_threads_without_an_id_blocked_in_waits_are_off_the_critical_path(name):
    """Kineto writes several Python threads without an id at thread id 0 (wandb's status
    checkers, a queue feeder, an idle pool worker), their stacks overlapping: each sits
    in ``threading.py: wait`` from before the profiler started (or, the pool worker, with
    nothing recorded under its loop, inside a waiting stack that began before it). Their
    time outside the outermost wait that holds them is microseconds, and no step's
    critical path may put more than that on them."""
    path = public_corpus.held_out_path(name)
    mine = [s for s in complete_slices(path) if s["tid"] == 0 and s["cat"] == "python_function"]
    traced = union([[s["s"], s["e"]] for s in mine])
    waits = union([[s["s"], s["e"]] for s in mine if WAIT.fullmatch(s["name"])])
    busy = minus(traced, waits)
    assert length(busy) < 0.001 * length(traced)  # the count itself: blocked throughout
    d = _explain(path)
    (t,) = [t for t in d["threads"] if t["tid"] == 0]
    for st in d["steps"]["steps"]:
        on_path = sum(p["ns"] for p in st["critical_path"] if p["resource"] == t["label"])
        assert on_path <= length(clip(busy, st["start_ns"], st["end_ns"])), (st["name"], on_path)
