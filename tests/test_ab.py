"""traceview ab: the interleaving runner, its statistics and the CLI, on the CPU.

The runner is exercised with a tiny torch-free child (a spin loop timed with
perf_counter_ns; ~30 ms a process) so the false-positive rate can be measured over
many seeds quickly; one end-to-end run goes through the real CLI with torch and a user
callable whose extra cost is set by an environment variable.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from traceview.ab import fresh_processes as rounds
from traceview.ab import harness as ab
from traceview.errors import CaptureError, CorrectnessError
from traceview.multi import ab_result
from traceview.paired import compare
from traceview.runner.process import ChildSpec, run_process

SPIN_CHILD = textwrap.dedent('''
    import json, os, statistics, sys, time
    cfg = json.loads(sys.stdin.read())
    if cfg.get("fail"):
        print(json.dumps({"error": "told to fail", "exit_code": cfg["fail"]}))
        sys.exit(cfg["fail"])
    spin = cfg["base_ns"] + int(os.environ.get("EXTRA_NS", "0"))
    perf = time.perf_counter_ns
    samples = []
    for _ in range(cfg["n"]):
        t0 = perf()
        while perf() - t0 < spin:
            pass
        samples.append(perf() - t0)
    print("some chatter on stdout")
    print(json.dumps({"p50_ns": int(statistics.median_low(samples)),
                      "path0": sys.path[1] if len(sys.path) > 1 else None}))
''')


@pytest.fixture
def child(tmp_path: Path) -> Path:
    p = tmp_path / "spin_child.py"
    p.write_text(SPIN_CHILD)
    return p


def _sides(child: Path, extra_b: int, n: int = 30, base: int = 20_000):
    cfg = {"n": n, "base_ns": base}
    a = ChildSpec("A", entry=(str(child),), config=cfg, env={"EXTRA_NS": "0"})
    b = ChildSpec("B", entry=(str(child),), config=cfg, env={"EXTRA_NS": str(extra_b)})
    return a, b


def test_runner_interleaves_and_finds_an_injected_delay(child):
    delay = 50_000
    a, b = _sides(child, delay)
    seen = []
    runs = rounds.run_interleaved(a, b, rounds=8, on_run=seen.append)
    assert [(r.round, r.side) for r in runs] == [(r, s) for r in range(8)
                                                  for s in (("A", "B") if r % 2 == 0 else ("B", "A"))]
    assert seen == runs and all(r.wall_ns > 0 for r in runs)
    pairs = ab_result.paired_figures(runs, "p50_ns")
    assert pairs is not None
    a_vals, b_vals = pairs
    # independent count: per-round differences straight from the processes' JSON
    by = {(r.round, r.side): r.result["p50_ns"] for r in runs}
    assert a_vals == [by[(i, "A")] for i in range(8)] and b_vals == [by[(i, "B")] for i in range(8)]
    c = compare(a_vals, b_vals)
    assert c.verdict == "B slower" and c.b_slower_rounds >= 7
    # both sides spin to a deadline, so the overshoot cancels: the interval holds the delay
    assert c.ci_low_ns <= delay * 1.02 and c.ci_high_ns >= delay * 0.98, c
    line = ab_result.verdict_line(c, 8)
    assert line.startswith("B slower by ") and f"{c.b_slower_rounds} of 8 rounds" in line
    assert "unprofiled" in line


def test_a_vs_a_false_positive_rate_is_low(child):
    a, _ = _sides(child, 0, n=20)
    b = ChildSpec("B", entry=a.entry, config=a.config, env=a.env)
    verdicts = []
    for seed in range(8):
        runs = rounds.run_interleaved(a, b, rounds=6, seed=seed)
        order = [r.side for r in runs]
        assert all(sorted(order[i:i + 2]) == ["A", "B"] for i in range(0, 12, 2))
        verdicts.append(compare(*ab_result.paired_figures(runs, "p50_ns")).verdict)
    # exact 96.9% intervals: about 3% false positives each when the machine is steady; a
    # loaded machine drifts within a round too, so allow 2 of 8 here (P(>=3) < 0.1% at 3%);
    # the rate itself is checked on simulated drifting rounds below
    assert sum(v != "cannot tell" for v in verdicts) <= 2, verdicts


def test_a_vs_a_false_positive_rate_under_drift_simulated():
    """Null rounds on a machine that drifts 2x over the run and jitters 30% per process:
    with the pairing and the exact interval, false positives stay near the nominal 3%."""
    import random

    fp = 0
    trials = 400
    for seed in range(trials):
        rng = random.Random(seed)
        a, b = [], []
        for r in range(6):
            level = 100_000 * (1 + r / 5)  # slow drift, shared by the round's two processes
            a.append(int(level * rng.uniform(0.85, 1.15)))
            b.append(int(level * rng.uniform(0.85, 1.15)))
        fp += compare(a, b).verdict != "cannot tell"
    assert fp / trials <= 0.06, fp


def test_extra_path_env_and_python_reach_the_child(child, tmp_path):
    extra = tmp_path / "extra"
    extra.mkdir()
    side = ChildSpec("A", entry=(str(child),), config={"n": 1, "base_ns": 1},
                   python=sys.executable, path=(str(extra),))
    _, result = run_process(side)
    assert result["path0"] == str(extra)


def test_child_errors_name_the_side_and_round(child):
    bad = ChildSpec("B", entry=(str(child),), config={"fail": 3})
    with pytest.raises(CorrectnessError, match="side B, round 1: told to fail"):
        run_process(bad)
    with pytest.raises(CaptureError, match="cannot start"):
        run_process(ChildSpec("A", entry=("-c", "1"), python="/nonexistent/python"))
    with pytest.raises(CaptureError, match="no JSON result line"):
        run_process(ChildSpec("A", entry=("-c", "print('hi')")))


def test_too_few_rounds_cannot_tell():
    c = compare([100, 101, 102, 103, 104], [200, 201, 202, 203, 204])
    assert c.ci_low_ns is None
    assert ab_result.verdict_line(c, 5).startswith("cannot tell: 5 rounds are too few")


USER_FN = textwrap.dedent('''
    import os, time
    import torch

    def add(a, b):
        spin = int(os.environ.get("AB_TEST_SPIN_NS", "0"))
        t0 = time.perf_counter_ns()
        while time.perf_counter_ns() - t0 < spin:
            pass
        return torch.add(a, b)

    def wrong(a, b):
        return torch.add(a, b) * 2

    def make(device):
        g = torch.Generator(device=device).manual_seed(1)
        return (torch.randn(8, 64, generator=g, device=device), 2.5)

    def ref(x, s):
        return x * 0 + (x + s)
''')


@pytest.mark.capture
def test_ab_cli_finds_an_env_var_delay_with_the_right_sign(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from traceview.cli.app import app

    (tmp_path / "abfn.py").write_text(USER_FN)
    monkeypatch.chdir(tmp_path)
    delay = 100_000
    out = tmp_path / "ab.json"
    r = CliRunner().invoke(app, [
        "ab", "--no-split", "--op", "add", "--fn", "abfn:add", "--shape", "4x256", "--device", "cpu",
        "--warmup", "2", "--baseline-n", "30", "--rounds", "6",
        "--a-env", "AB_TEST_SPIN_NS=5000", "--b-env", f"AB_TEST_SPIN_NS={5000 + delay}",
        "--a-name", "before", "--b-name", "after", "--out", str(out), "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert json.loads(out.read_text())["verdict"] == doc["verdict"]
    assert doc["schema_version"] == 2 and "schema" not in doc and doc["rounds"] == 6
    assert doc["splits"] is None  # --no-split
    a_proc = [p["full_api_ns_p50"] for p in doc["sides"]["A"]["processes"]]
    b_proc = [p["full_api_ns_p50"] for p in doc["sides"]["B"]["processes"]]
    c = doc["comparisons"]["full_api_ns_p50"]
    assert c["a_ns"] == a_proc and c["b_ns"] == b_proc
    assert c["diff_ns"] == [y - x for x, y in zip(a_proc, b_proc, strict=True)]
    assert c["verdict"] == "B slower" and c["b_slower_rounds"] >= 5
    assert c["ci_low_ns"] <= delay * 1.03 and c["ci_high_ns"] >= delay * 0.97, c
    assert doc["verdict"].startswith("B (after) slower by ") and "unprofiled" in doc["verdict"]
    assert doc["sides"]["B"]["correctness"]["passed"] is True
    assert doc["sides"]["B"]["env"] == {"AB_TEST_SPIN_NS": str(5000 + delay)}
    order = [side for _, side in doc["run_order"]]
    assert order[:4] == ["A", "B", "B", "A"]


@pytest.mark.capture
def test_ab_cli_wrong_side_is_exit_3_and_bad_env_exit_2(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from traceview.cli.app import app

    (tmp_path / "abfn.py").write_text(USER_FN)
    monkeypatch.chdir(tmp_path)
    base = ["ab", "--no-split", "--op", "add", "--shape", "4x64", "--device", "cpu", "--warmup", "1",
            "--baseline-n", "5", "--rounds", "1", "--impl", "torch"]
    r = CliRunner().invoke(app, [*base, "--b-fn", "abfn:wrong"])
    # named by the isolated check of side B, before any round was timed
    assert r.exit_code == 3 and "correctness check failed: add (abfn:wrong" in r.output
    assert "round" not in r.output
    r = CliRunner().invoke(app, [*base, "--a-env", "NOEQUALS"])
    assert r.exit_code == 2 and "NAME=VALUE" in r.output


def test_the_parent_side_does_not_import_torch():
    import subprocess

    code = ("import sys, traceview.ab.harness, traceview.cli.ab_cmd, traceview.render.ab_report, "
            "traceview.multi.unprofiled, traceview.multi.codepath; "
            "sys.exit('torch' in sys.modules or 'triton' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest.mark.capture
def test_ab_trace_dir_then_diff_with_the_saved_result(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from traceview.cli.app import app

    (tmp_path / "abfn.py").write_text(USER_FN)
    monkeypatch.chdir(tmp_path)
    out, traces = tmp_path / "ab.json", tmp_path / "traces"
    r = CliRunner().invoke(app, [
        "ab", "--no-split", "--op", "add", "--fn", "abfn:add", "--shape", "4x64", "--device", "cpu",
        "--warmup", "1", "--baseline-n", "5", "--rounds", "1", "--a-name", "before",
        "--b-name", "after", "--b-env", "AB_TEST_SPIN_NS=20000", "--out", str(out),
        "--trace-dir", str(traces), "--width", "80"])
    assert r.exit_code == 0, r.output
    assert "cannot tell: 1 round is too few" in r.stdout
    doc = json.loads(out.read_text())
    before, after = doc["sides"]["A"]["trace"], doc["sides"]["B"]["trace"]
    assert Path(before).name == "before.json.gz" and Path(after).exists()
    r = CliRunner().invoke(app, ["diff", before, after, "--ab", str(out), "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["unprofiled"]["paired"] is True
    assert d["unprofiled"]["figures"][0]["before_ns"] == doc["comparisons"]["full_api_ns_p50"]["a_ns"]
    assert d["verdict"].startswith("cannot tell: 1 round is too few")
    assert d["code_path"]["functions"]  # both traces have Python frames


def test_time_limit_stops_between_rounds_never_inside_one(child):
    """A fake clock: each process takes 10 s, so a round takes 20 s. With 45 s, round 3
    would end at 60 s: two whole rounds run, and the pair is never split."""
    a, b = _sides(child, 0, n=2)
    t = [0.0]

    def clock():
        return t[0]

    def on_run(run):
        t[0] += 10.0

    runs = rounds.run_interleaved(a, b, rounds=6, on_run=on_run, time_limit_s=45, clock=clock)
    assert [(r.round, r.side) for r in runs] == [(0, "A"), (0, "B"), (1, "B"), (1, "A")]
    t[0] = 0.0
    runs = rounds.run_interleaved(a, b, rounds=3, on_run=on_run, time_limit_s=1000, clock=clock)
    assert len(runs) == 6
    with pytest.raises(CaptureError, match="--time-limit"):
        rounds.run_interleaved(a, b, rounds=3, time_limit_s=0)


def test_cpus_pin_every_process_and_are_checked(child):
    import os

    from traceview.cli.ab_cmd import parse_cpus
    from traceview.errors import UsageError

    mine = sorted(os.sched_getaffinity(0))
    assert parse_cpus(None) == () and parse_cpus(f"{mine[0]}") == (mine[0],)
    if len(mine) > 1:
        assert parse_cpus(f"{mine[0]}-{mine[1]}") == tuple(range(mine[0], mine[1] + 1))
    for bad in ("x", "3-1", "-1", "99999"):
        with pytest.raises(UsageError, match="--cpus"):
            parse_cpus(bad)
    # the child sees the pinned set (the spin child prints its affinity)
    side = ChildSpec("A", entry=("-c", "import os, json; print(json.dumps("
                               "{'aff': sorted(os.sched_getaffinity(0))}))"), cpus=(mine[0],))
    _, result = run_process(side)
    assert result["aff"] == [mine[0]]


PAIR_FNS = textwrap.dedent('''
    import time
    import torch

    def spin(ns):
        t0 = time.perf_counter_ns()
        while time.perf_counter_ns() - t0 < ns:
            pass

    def base(a, b):
        spin(5_000)
        return torch.add(a, b)

    def slower(a, b):
        spin(45_000)
        return torch.add(a, b)
''')


@pytest.mark.capture
def test_same_process_ab_finds_a_delay_between_two_callables(tmp_path, monkeypatch):
    """Both callables in each process, alternating blocks: the 40 us delay is found with
    the right sign, and each round's figures come from one process (same pid/wall)."""
    pytest.importorskip("torch")
    from traceview.cli.app import app

    (tmp_path / "pairfns.py").write_text(PAIR_FNS)
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, [
        "ab", "--no-split", "--op", "add", "--shape", "4x64", "--device", "cpu", "--warmup", "2",
        "--baseline-n", "30", "--rounds", "6", "--same-process", "--blocks", "4",
        "--a-fn", "pairfns:base", "--b-fn", "pairfns:slower", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    c = doc["comparisons"]["full_api_ns_p50"]
    assert c["verdict"] == "B slower" and c["b_slower_rounds"] == 6
    # the longer spin is the likelier to be preempted on a loaded machine (its loop then
    # ends late, never early): measured with CI's second test worker busy, B - A was
    # 45.3-45.8 us per round, spawned or forked alike; quiet, 40.1-44.0 us
    assert c["ci_low_ns"] <= 40_000 * 1.25 and c["ci_high_ns"] >= 40_000 * 0.95, c
    assert all(p["position"] is None for p in doc["sides"]["A"]["processes"])
    assert doc["protocol"]["blocks"] == 4
    assert doc["protocol"]["process"].startswith("one fresh process per round")
    assert doc["order"].startswith("both sides in each process")


FIRST_BUILT_SLOWER = textwrap.dedent('''
    import time
    import torch

    FIRST = []

    def spin(ns):
        end = time.perf_counter_ns() + ns
        while time.perf_counter_ns() < end:
            pass

    def add(a, b):
        # the first inputs this process ever sees (the side it built first: its
        # correctness check is the first call) are 20 us slower for the process's life
        if not FIRST:
            FIRST.append(id(a))
        if FIRST[0] == id(a):
            spin(20_000)
        return torch.add(a, b)
''')


@pytest.mark.capture
@pytest.mark.parametrize("start", [[], ["--spawn"]], ids=["forked", "spawned"])
def test_same_process_alternates_which_side_is_built_first(tmp_path, monkeypatch, start):
    """A planted lean that follows the build order, not the variant (an A/A of one
    callable that is 20 us slower for whichever side's inputs it saw first): rounds build A
    first in even rounds and B first in odd ones, so the lean reads -20 us and +20 us in
    alternate rounds and the A/A is not called a difference. Always building A first read
    B 20 us faster in every round ("B faster")."""
    pytest.importorskip("torch")
    from traceview.cli.app import app

    (tmp_path / "leanfns.py").write_text(FIRST_BUILT_SLOWER)
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, [
        "ab", "--no-split", "--op", "add", "--shape", "4x64", "--device", "cpu",
        "--warmup", "2", "--baseline-n", "30", "--rounds", "4", "--same-process",
        "--blocks", "4", "--a-fn", "leanfns:add", "--b-fn", "leanfns:add",
        "--format", "json", *start])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    procs = sorted(doc["sides"]["A"]["processes"], key=lambda p: p["round"])
    assert [p["built_first"] for p in procs] == ["A", "B", "A", "B"]
    for p in procs:  # the side built first is the slower one, by about the planted 20 us
        lean = p["pair_estimate_ns"] if p["built_first"] == "A" else -p["pair_estimate_ns"]
        assert -30_000 < lean < -15_000, procs
    c = doc["comparisons"]["full_api_ns_p50"]
    assert c["b_faster_rounds"] == 2 and c["b_slower_rounds"] == 2, c
    assert c["verdict"] not in ("B faster", "B slower"), c


@pytest.mark.capture
def test_same_process_refuses_sides_that_need_two_interpreters(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from traceview.cli.app import app

    (tmp_path / "pairfns.py").write_text(PAIR_FNS)
    monkeypatch.chdir(tmp_path)
    base = ["ab", "--no-split", "--op", "add", "--shape", "4x64", "--device", "cpu", "--same-process"]
    r = CliRunner().invoke(app, [*base, "--a-fn", "pairfns:base", "--b-fn", "pairfns:slower",
                                 "--b-env", "X=1"])
    assert r.exit_code == 2 and "--a-env and --b-env must be the same" in r.output
    for extra, words in ((["--fn", "pairfns:base", "--blocks", "3"], "even number"),
                         (["--fn", "pairfns:base", "--order-seed", "1"], "leave it out"),
                         (["--fn", "pairfns:base", "--time-limit", "0"], "--time-limit"),
                         (["--fn", "pairfns:base", "--time-limit", "nan"], "--time-limit")):
        r = CliRunner().invoke(app, [*base, *extra])
        assert r.exit_code == 2 and words in r.output, (extra, r.output)
        assert "Traceback" not in r.output
    r = CliRunner().invoke(app, ["ab", "--no-split", "--op", "add", "--device", "cpu", "--blocks", "4"])
    assert r.exit_code == 2 and "--blocks is for --same-process" in r.output
    # FlagGems' use_gems() is process-wide: refused before any process starts
    import dataclasses

    from traceview.workload.config import CaptureConfig, parse_shapes

    torch_cfg = CaptureConfig(op="add", impl="torch", shapes=parse_shapes("4x64"),
                              dtype="float32", device="cpu")
    gems = dataclasses.replace(torch_cfg, impl="flag_gems")
    with pytest.raises(CaptureError, match="cannot take --impl flag_gems"):
        ab.run_capture_ab(torch_cfg, gems, 1, same_process=True)
    graph = dataclasses.replace(torch_cfg, mode="graph")
    with pytest.raises(CaptureError, match="eager calls only"):
        ab.run_capture_ab(graph, graph, 1, same_process=True)


def test_same_process_block_order_gives_each_side_the_first_slot_half_the_time():
    from traceview.ab.ab_pair_child import block_order

    order = block_order(4)
    assert order == ["A", "B", "B", "A", "A", "B", "B", "A"]
    firsts = [order[i] for i in range(0, len(order), 2)]
    assert firsts.count("A") == firsts.count("B") == 2


def test_same_process_report_says_what_each_process_ran():
    from traceview.render.ab_report import _header, _per_process_rows

    doc = {"protocol": {"op": "add", "shape": [4, 64], "dtype": "float32",
                        "layout": "contiguous", "device": "cpu", "mode": "eager", "warmup": 2,
                        "baseline_n": 30, "blocks": 4},
           "rounds": 1, "order": "both sides in each process", "run_order": [[1, "A"], [1, "B"]],
           "comparisons": {"full_api_ns_p50": {"a_ns": [100], "b_ns": [150], "diff_ns": [50]}}}
    assert "4 blocks per side" in _header(doc)
    assert _per_process_rows(doc)[0][1] == "ABBA.."


def test_run_same_process_makes_two_runs_per_process_and_honours_the_limit():
    src = ("import json, sys; json.load(sys.stdin); print(json.dumps({'A': {'v': 1}, "
           "'B': {'v': 3}, 'cpu': {'last': 0}}))")
    pair = ChildSpec("A+B", entry=("-c", src), config={})
    t = [0.0]

    def on_run(run):
        t[0] += 5.0  # 10 s per process (two records)

    runs = rounds.run_same_process(pair, 5, on_run=on_run, time_limit_s=25,
                               clock=lambda: t[0])
    assert [(r.round, r.side) for r in runs] == [(0, "A"), (0, "B"), (1, "A"), (1, "B")]
    assert all(r.result["cpu"] == {"last": 0} for r in runs)
    assert ab_result.paired_figures(runs, "v") == ([1, 1], [3, 3])


def test_time_limit_leaves_the_compiling_first_round_out_of_the_longest(child):
    """Round 1 takes 40 s (it compiles), later rounds 20 s: with 85 s, a third round
    fits (60 + 20 <= 85) though 60 + 40 would not."""
    a, b = _sides(child, 0, n=2)
    t = [0.0]

    def on_run(run):
        t[0] += 20.0 if run.round == 0 else 10.0

    runs = rounds.run_interleaved(a, b, rounds=6, on_run=on_run, time_limit_s=85,
                              clock=lambda: t[0])
    assert len(runs) == 6


REF_FNS = textwrap.dedent('''
    import os
    import time
    import torch

    DELAY = int(os.environ.get("PLANTED_DELAY_NS", "0"))

    def spin(ns):
        t0 = time.perf_counter_ns()
        while time.perf_counter_ns() - t0 < ns:
            pass

    def side(a, b):
        spin(5_000 + DELAY)
        return torch.add(a, b)
''')


@pytest.mark.capture
def test_reference_and_until_find_an_env_delay_across_processes(tmp_path, monkeypatch):
    """Fresh processes per side, each against torch's add in alternating blocks; B's
    environment plants +40 us. ``--until 60s`` stops at the first planned look whose
    interval (at alpha / L) excludes zero, with the right sign and size."""
    pytest.importorskip("torch")
    from traceview.cli.app import app

    (tmp_path / "reffns.py").write_text(REF_FNS)
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, [
        "ab", "--no-split", "--op", "add", "--shape", "4x64", "--device", "cpu", "--warmup", "2",
        "--baseline-n", "20", "--blocks", "4", "--reference", "torch", "--until", "60s",
        "--rounds", "20", "--fn", "reffns:side", "--b-env", "PLANTED_DELAY_NS=40000",
        "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    c = doc["comparisons"]["full_api_ns_p50"]
    until = doc["protocol"]["until"]
    assert c["verdict"] == "B slower", c
    assert c["ci_low_ns"] <= 40_000 * 1.25 and c["ci_high_ns"] >= 40_000 * 0.95, c
    assert doc["rounds"] == until["looks"][0] == until["seen"][0]["rounds"]
    assert until["stopped_because"] == "the interval excludes zero"
    assert c["confidence"] >= 1 - until["per_look_alpha"]
    proc = doc["sides"]["B"]["processes"][0]
    # the judged difference is B's (side - reference) minus A's, per round
    assert c["diff_ns"][0] == proc["vs_reference_ns"] - \
        doc["sides"]["A"]["processes"][0]["vs_reference_ns"]
    assert len(proc["blocks_full_ns"]) == 4 and proc["reference"]["full_api_ns_p50"] > 0
    assert doc["protocol"]["reference"]["impl"] == "torch"


def test_reference_is_refused_with_same_process_and_flag_gems(tmp_path):
    from traceview.workload.config import CaptureConfig, parse_shapes

    cfg = CaptureConfig(op="add", impl="torch", shapes=parse_shapes("4x64"), device="cpu")
    gems = CaptureConfig(op="add", impl="flag_gems", shapes=parse_shapes("4x64"),
                         device="cpu")
    with pytest.raises(CaptureError, match="--reference"):
        ab.check_reference(cfg, cfg, cfg, same_process=True, blocks=4)
    with pytest.raises(CaptureError, match="flag_gems"):
        ab.check_reference(cfg, gems, cfg, same_process=False, blocks=4)
