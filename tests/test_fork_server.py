"""ab's per-side template: a fresh process per round, forked from a preloaded process.

Torch-free children (a module on the side's path), so these run in seconds on the CPU:
every round is a new process (its own pid, the template's child), in the side's
environment and path; the template's start and each child's phases are recorded; a
template that cannot serve (its imports "initialised CUDA": a fake torch here) falls
back to spawning and says why; errors name the side and round; a round over its time is
killed; Ctrl-C leaves no traceback and no process behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from traceview.ab import fresh_processes as rounds
from traceview.errors import CaptureError
from traceview.runner.fork_server import start_templates
from traceview.runner.process import ChildSpec

CHILD_MOD = textwrap.dedent('''
    import json, os, sys, time
    import heavy_import  # preloaded by the template: its import time is paid once

    def measure(text):
        cfg = json.loads(text)
        if cfg.get("fail"):
            from traceview.errors import CaptureError
            raise CaptureError("told to fail")
        if cfg.get("crash"):
            raise RuntimeError("boom")
        time.sleep(cfg.get("sleep", 0))
        from traceview.ab.ab_child import Phases
        phases = Phases()
        phases.mark("measure")
        return {"v": int(os.environ.get("AB_V", "0")), "pid": os.getpid(),
                "ppid": os.getppid(), "loaded_at": heavy_import.LOADED_AT,
                "stdin": sys.stdin.read(), "phases_ns": phases.ns}
''')

HEAVY = "import os\nLOADED_AT = os.getpid()\n"
FAKE_TORCH = textwrap.dedent('''
    class cuda:
        @staticmethod
        def is_initialized():
            return True
''')


@pytest.fixture
def mods(tmp_path: Path) -> Path:
    (tmp_path / "abmod.py").write_text(CHILD_MOD)
    (tmp_path / "heavy_import.py").write_text(HEAVY)
    fake = tmp_path / "faketorch" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(FAKE_TORCH)
    return tmp_path


def _side(mods: Path, label: str, config: dict, **kw) -> ChildSpec:
    kw.setdefault("path", (str(mods),))
    return ChildSpec(label, entry=("-c", "pass"), config=config, call="abmod:measure",
                     preload=kw.pop("preload", ("heavy_import",)), **kw)


def test_each_round_is_a_new_child_of_the_sides_template(mods):
    a = _side(mods, "A", {}, env={"AB_V": "1"})
    b = _side(mods, "B", {}, env={"AB_V": "2"})
    with start_templates({"A": a, "B": b}) as started:
        runs = rounds.run_interleaved(a, b, rounds=3, starters=started.starters)
        how = started.describe()
    assert how["mode"] == "fork" and how["why"] is None
    assert [(r.round, r.side) for r in runs] == [(0, "A"), (0, "B"), (1, "B"), (1, "A"),
                                                (2, "A"), (2, "B")]
    by_side = {s: [r.result for r in runs if r.side == s] for s in "AB"}
    for side, results in by_side.items():
        assert {r["v"] for r in results} == {1 if side == "A" else 2}  # the side's env
        template = {r["ppid"] for r in results}
        assert len(template) == 1  # all forked by one template
        assert len({r["pid"] for r in results}) == 3  # each round a new process
        assert {r["loaded_at"] for r in results} == template  # imported in the template
        assert all(r["stdin"] == "" for r in results)  # never the template's command pipe
    assert by_side["A"][0]["ppid"] != by_side["B"][0]["ppid"]
    for label in "AB":
        t = how["templates"][label]
        assert t["start_ns"] > 0 and t["imports_ns"] > 0
        assert "heavy_import" in t["preloaded"] and "abmod" in t["preloaded"]
    for r in runs:  # a child's phases fit inside the round's wall time seen by the parent
        phases = r.result["phases_ns"]
        assert set(phases) == {"start_to_ready", "measure"}
        assert 0 <= sum(phases.values()) <= r.wall_ns


def test_a_template_whose_imports_initialise_cuda_falls_back_to_spawning(mods):
    path = (str(mods / "faketorch"), str(mods))
    a = _side(mods, "A", {}, path=path, preload=("torch", "heavy_import"))
    with start_templates({"A": a, "B": a}) as started:
        assert started.starters == {}
        how = started.describe()
    assert how["mode"] == "spawn"
    assert "importing torch initialised CUDA" in how["why"]
    assert "spawned a fresh interpreter" in how["why"]


def test_an_optional_preload_that_initialises_cuda_is_left_to_the_children(mods):
    path = (str(mods / "faketorch"), str(mods))
    a = _side(mods, "A", {}, path=path, preload=("heavy_import", "?torch"))
    with start_templates({"A": a}) as started:
        run = started.starters["A"]
        _, result = run(0, 60)
        how = started.describe()
    assert how["mode"] == "fork"
    assert how["templates"]["A"]["left_out"] == "torch (its import initialises CUDA)"
    assert "torch" not in how["templates"]["A"]["preloaded"]
    assert result["v"] == 0


def test_a_preload_marked_as_cuda_suspect_is_tried_in_a_throwaway_child_first(mods):
    """``~x``: imported in a forked child first; if CUDA came up there, the template
    leaves it to the rounds' children without restarting (one template, one launch);
    if not, the template imports it itself; a missing one is skipped."""
    (mods / "initialises_cuda.py").write_text("import torch\n")  # the fake torch: CUDA up
    path = (str(mods / "faketorch"), str(mods))
    a = _side(mods, "A", {}, path=path,
              preload=("~initialises_cuda", "~heavy_import", "~no_such_module_xyz"))
    with start_templates({"A": a}) as started:
        _, result = started.starters["A"](0, 60)
        assert started.templates["A"] is started.launched["A"]  # no second template
        how = started.describe()
    t = how["templates"]["A"]
    assert how["mode"] == "fork"
    assert t["left_out"] == "initialises_cuda (its import initialises CUDA)"
    assert "heavy_import" in t["preloaded"] and "initialises_cuda" not in t["preloaded"]
    assert t["skipped"] == ["no_such_module_xyz (not importable)"]
    assert result["loaded_at"] == result["ppid"]  # heavy_import came from the template


def test_the_throwaway_child_says_why_and_is_killed_when_it_hangs(tmp_path, monkeypatch):
    from traceview.runner.fork_server import _try_import

    (tmp_path / "stops_here.py").write_text("raise SystemExit('patch failed')\n")
    (tmp_path / "hangs_here.py").write_text("import time\ntime.sleep(60)\n")
    (tmp_path / "fine_here.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _try_import("fine_here") == "ok"
    assert _try_import("stops_here") == "its import raised"
    assert _try_import("no_such_module_xyz") == "not importable"
    t0 = time.monotonic()
    assert _try_import("hangs_here", timeout_s=1) == "the import took over 1 s"
    assert time.monotonic() - t0 < 10
    assert "fine_here" not in sys.modules  # the template itself imported nothing


def test_spawn_when_asked_or_when_a_side_has_no_function(mods):
    a = _side(mods, "A", {})
    with start_templates({"A": a}, fork=False) as started:
        assert started.starters == {} and "asked" in started.describe()["why"]
    plain = ChildSpec("A", entry=("-c", "pass"))
    with start_templates({"A": plain}) as started:
        assert started.starters == {} and "no function to fork" in started.describe()["why"]


def test_forked_errors_name_the_side_and_round(mods):
    bad = _side(mods, "B", {"fail": 1})
    crash = _side(mods, "A", {"crash": 1})
    slow = _side(mods, "A", {"sleep": 30})
    with start_templates({"B": bad, "A": crash}) as started:
        with pytest.raises(CaptureError, match=r"^side B, round 2: told to fail$"):
            started.starters["B"](1, 60)
        with pytest.raises(CaptureError, match=r"side A, round 1: the process failed: "
                                               r"RuntimeError: boom"):
            started.starters["A"](0, 60)
    with start_templates({"A": slow}) as started:
        t0 = time.monotonic()
        with pytest.raises(CaptureError, match=r"side A, round 1: the process took over 1 s"):
            started.starters["A"](0, 1)
        assert time.monotonic() - t0 < 20


SIGINT_SCRIPT = textwrap.dedent('''
    import sys
    from traceview.ab import fresh_processes as rounds
    from traceview.runner.fork_server import start_templates
    from traceview.runner.process import ChildSpec
    from traceview.cli._common import run_guarded

    def body():
        side = ChildSpec("A", entry=("-c", "pass"), config={"sleep": 60},
                         call="abmod:measure", preload=("heavy_import",),
                         path=(sys.argv[1],))
        with start_templates({"A": side, "B": side}) as started:
            print("TEMPLATE", started.launched["A"].proc.pid, flush=True)
            rounds.run_interleaved(side, side, 2, starters=started.starters)

    try:
        run_guarded(body)
    except SystemExit as exc:
        raise
    except BaseException as exc:  # typer.Exit from run_guarded
        sys.exit(getattr(exc, "exit_code", 1))
''')


def test_ctrl_c_leaves_no_traceback_and_no_template(mods, tmp_path):
    script = tmp_path / "interrupt_me.py"
    script.write_text(SIGINT_SCRIPT)
    root = str(Path(rounds.__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, str(mods)])}
    proc = subprocess.Popen([sys.executable, str(script), str(mods)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    template = int(proc.stdout.readline().split()[1])
    time.sleep(3)  # the templates are up and a round's child is sleeping
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "interrupted" in err
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(template, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"template {template} outlived the interrupted parent")


def test_the_time_limit_counts_what_ran_before_the_rounds():
    """``started``: 30 s of checks before the rounds; rounds of 20 s under a 75 s limit:
    round 1 always runs (ends at 50 s), round 2 would end at 70 s (runs), round 3 at 90 s
    (does not)."""
    t = [30.0]
    ran = []
    for r in rounds.rounds_in_time(5, 75, clock=lambda: t[0], started=0.0):
        ran.append(r)
        t[0] += 20.0
    assert ran == [0, 1]
    t[0] = 30.0
    assert list(rounds.rounds_in_time(5, 75, clock=lambda: t[0])) == [0, 1, 2, 3, 4]


def test_the_ab_result_keeps_each_processes_phases():
    from traceview.multi.ab_result import ProcessRun, analyze

    runs = [ProcessRun(i, i // 2, s, i % 2, 1000, {"full_api_ns_p50": 10 + i,
                                                   "phases_ns": {"measure": i}})
            for i, s in enumerate("ABBA")]
    doc = analyze(runs, {"A": {}, "B": {}}, 2, "balanced", {}).as_dict()
    assert [p["phases_ns"] for p in doc["sides"]["A"]["processes"]] == [{"measure": 0},
                                                                         {"measure": 3}]
    assert json.dumps(doc)


PRINTING_MOD = textwrap.dedent('''
    import json, os, time

    def task(text):
        cfg = json.loads(text)
        print(json.dumps({"testing": cfg.get("name")}), flush=True)
        time.sleep(cfg.get("sleep", 0))
        print(json.dumps({"result": {"pid": os.getpid(), "ppid": os.getppid()}}), flush=True)
        return cfg.get("code", 0)
''')


def test_a_task_prints_its_own_lines_and_one_over_its_time_is_killed_alone(mods):
    """``Template.task`` (serve's tasks): the function's own lines come back whole; a
    child past its time is killed without its template, which serves the next task."""
    from traceview.runner.fork_server import Template

    (mods / "printmod.py").write_text(PRINTING_MOD)
    side = ChildSpec("A", entry=("-c", "pass"), call="printmod:task", path=(str(mods),))
    template = Template.launch(side, mods / "t").wait_ready()
    try:
        first = template.task(json.dumps({"name": "one", "code": 3}), 60)
        lines = [json.loads(ln) for ln in first.stdout.splitlines()]
        assert first.returncode == 3 and lines[0] == {"testing": "one"}
        assert lines[1]["result"]["ppid"] == template.proc.pid
        slow = template.task(json.dumps({"name": "slow", "sleep": 60}), 1.0)
        assert slow.returncode is None and '{"testing": "slow"}' in slow.stdout
        assert "result" not in slow.stdout and slow.wall_ns < 30e9
        again = template.task(json.dumps({"name": "again"}), 60)
        assert again.returncode == 0 and template.proc.poll() is None
        pids = {json.loads(ln)["result"]["pid"] for r in (first, again)
                for ln in r.stdout.splitlines() if "result" in ln}
        assert len(pids) == 2  # a new process per task
    finally:
        template.close()


def test_a_cuda_initialising_optional_preload_takes_its_submodules_out_with_it(mods):
    """``?x`` initialised CUDA: ``?x.y`` would import it again, so the template starts
    once more without both (not twice, and not falling back to spawning)."""
    (mods / "faketorch" / "torch" / "sub.py").write_text("X = 1\n")
    path = (str(mods / "faketorch"), str(mods))
    a = _side(mods, "A", {}, path=path, preload=("heavy_import", "?torch", "?torch.sub"))
    with start_templates({"A": a}) as started:
        _, result = started.starters["A"](0, 60)
        how = started.describe()
    assert how["mode"] == "fork" and result["v"] == 0
    assert how["templates"]["A"]["left_out"] == ("torch (its import initialises CUDA), "
                                                 "torch.sub (its import initialises CUDA)")
