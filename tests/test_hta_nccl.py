"""Communication per training step on multi-GPU traces with NCCL kernels: HTA's public test
traces (tests/data/hta_nccl/, see its README) and a two-rank trace built here with a known
answer. Each step's ``communication_ns`` and ``exposed_communication_ns`` are checked
against a count written here from the raw JSON events (plain json and integers, from the
definition alone): communication is the union of the NCCL kernels inside the step,
exposed communication the part of it during which no other device work runs on any
stream. The folder of ranks goes through the ranks view."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

import traceview
from rawcount import length, minus, union
from traceview.cli.app import app

HTA = Path(__file__).parent / "data" / "hta_nccl"
SENDRECV = HTA / "sendrecv_ranks"  # two ranks of one job, SendRecv on its own stream
ALLREDUCE = HTA / "allreduce_2gpu" / "nccl_data.json.gz"  # rank 0 of 2, AllReduce + Broadcast
REAL = [SENDRECV / "sampled_rank-0.json.gz", SENDRECV / "sampled_rank-1.json.gz", ALLREDUCE]
DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
runner = CliRunner()

needs_hta_traces = pytest.mark.skipif(
    not all(p.exists() for p in REAL),
    reason="HTA's NCCL traces are not in tests/data/hta_nccl/ (its README says how to copy them)")


def to_ns(x) -> int:
    return int((Decimal(x) * 1000).to_integral_value())


def raw_events(path: Path) -> list[dict]:
    doc = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)
    return [e for e in doc["traceEvents"] if e.get("ph") == "X"]








def communication_by_definition(events: list[dict]) -> list[tuple[str, int, int, int, int]]:
    """(step, start, end, communication, exposed) for every ProfilerStep, from the events."""
    steps = sorted((to_ns(e["ts"]), to_ns(e["ts"]) + to_ns(e["dur"]), e["name"]) for e in events
                   if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    work = [(to_ns(e["ts"]), to_ns(e["ts"]) + to_ns(e["dur"]), e["name"].lower().startswith("nccl"))
            for e in events if e.get("cat") in DEVICE_CATS]
    out = []
    for a, b, name in steps:
        def inside(nccl, a=a, b=b):
            return union([[max(s, a), min(t, b)] for s, t, is_nccl in work
                          if is_nccl == nccl and min(t, b) > max(s, a)])
        comm, other = inside(True), inside(False)
        out.append((name, a, b, length(comm), length(minus(comm, other))))
    return out


def check_steps(steps, want) -> None:
    assert steps is not None and len(steps) == len(want)
    for st, (name, a, b, comm, exposed) in zip(steps, want, strict=True):
        assert (st["name"], st["start_ns"], st["end_ns"]) == (name, a, b)
        assert (st["communication_ns"], st["exposed_communication_ns"]) == (comm, exposed), name


# ------------------------------------------------------------------ HTA's traces


@needs_hta_traces
@pytest.mark.parametrize("path", REAL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_rank_communication_matches_an_independent_count(path):
    want = communication_by_definition(raw_events(path))
    # the count itself is not vacuous: every step has NCCL work, part of it exposed,
    # part of it overlapped by computation
    assert all(comm > exposed > 0 for *_, comm, exposed in want)
    report = traceview.analyze(path).to_dict()
    check_steps(report["steps"]["steps"], want)


@needs_hta_traces
def test_the_folder_is_explained_as_ranks():
    r = runner.invoke(app, ["explain", str(SENDRECV), "--format", "json", "--jobs", "1"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["combined"]["ok"] == 2 and not doc["combined"]["failed"]
    by_rank = {rank["rank"]: rank for rank in doc["ranks"]}
    assert set(by_rank) == {0, 1}  # from distributedInfo.rank
    for n, rank in by_rank.items():
        assert rank["rank_source"] != "order"
        check_steps(rank["steps"]["steps"],
                    communication_by_definition(raw_events(SENDRECV / f"sampled_rank-{n}.json.gz")))


# ------------------------------------------------------------------ a known answer


def two_rank_job(tmp_path) -> Path:
    """Two ranks, two steps each (#7: 0-100 us, #8: 100-200 us); compute on stream 7,
    NCCL AllReduce on stream 20. By hand:

    rank 0: compute [10, 30), [50, 60), [110, 130); AllReduce [20, 55), [90, 120) (across
    the step boundary). #7: communication 35 + 10 = 45 us, exposed [30, 50) + [90, 100) =
    30 us; #8: communication 20 us, exposed [100, 110) = 10 us.
    rank 1: compute [0, 100) covers its AllReduce [40, 70); compute [120, 140), AllReduce
    [150, 160). #7: 30 us, none exposed; #8: 10 us, all exposed."""
    from tracebuilder import TraceBuilder

    folder = tmp_path / "job"
    folder.mkdir()
    plans = {0: ([(10, 20), (50, 10), (110, 20)], [(20, 35), (90, 30)]),
             1: ([(0, 100), (120, 20)], [(40, 30), (150, 10)])}
    for rank, (compute, nccl) in plans.items():
        tb = TraceBuilder()
        tb.metadata["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 2}
        tb.annotation("ProfilerStep#7", 0, 100_000)
        tb.annotation("ProfilerStep#8", 100_000, 100_000)
        for i, (start, dur) in enumerate(compute):
            tb.launched_kernel(f"gemm_{i}", start * 1000 - 3_000, 2_000, start * 1000, dur * 1000)
        for start, dur in nccl:
            tb.launched_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage)",
                               start * 1000 - 3_000, 2_000, start * 1000, dur * 1000, stream=20)
        tb.write(folder / f"rank{rank}.json.gz", gz=True)
    return folder


# (communication, exposed) per step, by hand (see two_rank_job)
BY_HAND = {0: [(45_000, 30_000), (20_000, 10_000)], 1: [(30_000, 0), (10_000, 10_000)]}


def test_known_answer_per_rank_and_as_ranks(tmp_path):
    folder = two_rank_job(tmp_path)
    for rank, by_hand in BY_HAND.items():
        path = folder / f"rank{rank}.json.gz"
        want = communication_by_definition(raw_events(path))
        assert [w[3:] for w in want] == by_hand  # the raw count agrees with the hand count
        check_steps(traceview.analyze(path).to_dict()["steps"]["steps"], want)
    r = runner.invoke(app, ["explain", str(folder), "--format", "json", "--jobs", "1"])
    assert r.exit_code == 0, r.output
    ranks = {x["rank"]: x for x in json.loads(r.stdout)["ranks"]}
    assert set(ranks) == {0, 1}
    for rank, by_hand in BY_HAND.items():
        got = [(st["communication_ns"], st["exposed_communication_ns"])
               for st in ranks[rank]["steps"]["steps"]]
        assert got == by_hand
