"""traceview serve on the CPU: a tiny Llama (2 layers, hidden 64) under torch eager.

Most runs go through ``launch.in_this_process`` (the same JSON task and lines as a child,
without the 5 s torch+transformers import per process); one test runs the real CLI with
fresh processes. Expected figures are recomputed here from the raw timestamps, the raw
trace events and plain integer arithmetic.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")


from traceview.paired import interleaved_order
from traceview.render.registry import RenderOptions, renderer
from traceview.serve import launch
from traceview.serve.arrivals import arrival_offsets_ns
from traceview.serve.runner import run_serve
from traceview.serve.spec import ModelSpec, ServeSpec, Variant, Workload

pytestmark = pytest.mark.capture
ROOT = Path(__file__).resolve().parents[1]
FAKE_GEMS = ROOT / "tests" / "fake_gems"
TINY = ModelSpec(layers=2, hidden=64, heads=4, kv_heads=2, intermediate=128, vocab=512,
                 dtype="float32", device="cpu")
TINY_ARGS = ["--device", "cpu", "--dtype", "float32", "--layers", "2", "--hidden", "64",
             "--heads", "4", "--kv-heads", "2", "--intermediate", "128", "--vocab", "512"]


@pytest.fixture(scope="module")
def ab_doc(tmp_path_factory):
    spec = ServeSpec(model=TINY, workload=Workload(requests=5, prompt_len=8, output_len=4,
                                                   batch_size=2),
                     a=Variant("A"), b=Variant("B", env={"TRACEVIEW_TEST_SIDE": "b"}),
                     rounds=3, check_steps=3, profile_steps=2).validate()
    return run_serve(spec, launch=launch.in_this_process,
                     trace_dir=tmp_path_factory.mktemp("traces"))


def test_workload_is_recorded_and_done_as_stated(ab_doc):
    w = ab_doc["workload"]
    assert (w["requests"], w["prompt_len"], w["output_len"], w["batch_size"], w["arrival"]) == \
        (5, 8, 4, 2, "offline")
    assert w["arrival_offsets_ns"] == [0] * 5
    assert ab_doc["model"]["layers"] == 2 and ab_doc["model"]["hidden"] == 64
    for v in ab_doc["variants"]:
        assert len(v["repetitions"]) == 3
        for rep in v["repetitions"]:
            assert [r["index"] for r in rep["requests"]] == [0, 1, 2, 3, 4]
            assert all(r["tokens"] == 4 for r in rep["requests"])
            assert [b["size"] for b in rep["batches"]] == [2, 2, 1]
            assert rep["warmup_calls"] == 1


def test_relations_hold_in_the_output(ab_doc):
    for v in ab_doc["variants"]:
        walls = []
        for rep in v["repetitions"]:
            for r in rep["requests"]:
                n = r["tokens"]
                assert r["ttft_ns"] == r["first_token_ns"] - r["arrival_ns"]
                assert r["e2e_ns"] == r["ttft_ns"] + (n - 1) * r["tpot_ns"]
                assert r["e2e_ns"] + r["e2e_rounding_ns"] == r["last_token_ns"] - r["arrival_ns"]
                assert 0 <= r["e2e_rounding_ns"] < n - 1
            f = rep["figures"]
            wall = max(r["last_token_ns"] for r in rep["requests"])
            assert f["wall_ns"] == wall and f["output_tokens"] == 20 and f["requests"] == 5
            assert f["output_tokens_per_s"] == 20 * 1e9 / wall
            assert f["requests_per_s"] == 5 * 1e9 / wall
            e2e = sorted(r["e2e_ns"] for r in rep["requests"])
            assert f["latency_ns"]["e2e"]["p90"] == e2e[math.ceil(0.9 * 5) - 1]
            walls.append(wall)
        assert v["summary"]["wall_ns"] == sorted(walls)[1]  # median of three


def test_ab_interleaves_fresh_runs_and_pairs_them_by_round(ab_doc):
    assert ab_doc["protocol"]["order"] == [[r, s] for r, s in interleaved_order(3)]
    a, b = ab_doc["variants"]
    positions = sorted([(r["position"], "A", r["round"]) for r in a["repetitions"]]
                       + [(r["position"], "B", r["round"]) for r in b["repetitions"]])
    assert [(s, rnd) for _, s, rnd in positions] == \
        [(s, r) for r, s in interleaved_order(3)]
    assert all(r["env_seen"] == {} for r in a["repetitions"])
    assert all(r["env_seen"] == {"TRACEVIEW_TEST_SIDE": "b"} for r in b["repetitions"])
    row = ab_doc["ab"]["figures"]["wall"]
    wa = [r["figures"]["wall_ns"] for r in sorted(a["repetitions"], key=lambda r: r["round"])]
    wb = [r["figures"]["wall_ns"] for r in sorted(b["repetitions"], key=lambda r: r["round"])]
    assert row["a"] == wa and row["b"] == wb
    assert row["diffs"] == [y - x for x, y in zip(wa, wb, strict=True)]
    # three rounds cannot give a 95% interval: the verdict says the data cannot tell
    assert row["ci_low_ns"] is None and row["verdict"] == "cannot tell"
    assert set(ab_doc["ab"]["figures"]) >= {"wall", "ttft_p50", "tpot_p99", "e2e_p90"}
    assert ab_doc["ab"]["same_tokens"] is True  # same weights, same prompts, same backend
    assert b["correctness"]["check"]["status"] == "passed"
    assert a["correctness"]["check"]["status"] == "reference"


def test_stages_add_up_to_what_the_processes_took(ab_doc):
    """``protocol.stages_ns``: every stage the run went through, each at least what its
    processes took as the parent waited for them (recorded per process, summed here),
    and together no more than the whole run."""
    st = ab_doc["protocol"]["stages_ns"]
    a, b = ab_doc["variants"]
    assert set(st) == {"correctness_A", "correctness_B", "repetitions_A", "repetitions_B",
                       "profile_A", "profile_B", "explain_A", "explain_B", "total"}
    assert all(isinstance(v, int) and v >= 0 for v in st.values())
    for side, v in (("A", a), ("B", b)):
        walls = sum(r["process_wall_ns"] for r in v["repetitions"])
        assert walls <= st[f"repetitions_{side}"] <= walls + 50_000_000 * len(v["repetitions"])
        assert v["diagnosis"]["process_wall_ns"] <= st[f"profile_{side}"]
    assert b["correctness"]["check"]["process_wall_ns"] <= st["correctness_B"]
    assert sum(v for k, v in st.items() if k != "total") <= st["total"]


def test_profiled_decode_steps_are_explained(ab_doc):
    d = ab_doc["variants"][0]["diagnosis"]
    dec = d["decode"]
    assert dec["steps"] == 2
    with gzip.open(d["trace"], "rt") as f:
        events = json.load(f)["traceEvents"]
    ranges = [e for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
              and str(e.get("name", "")).startswith("decode_")]
    assert sorted(e["name"] for e in ranges) == ["decode_0", "decode_1"]
    assert any(e.get("name") == "serve_prefill" for e in events)
    start = min(round(e["ts"] * 1000) for e in ranges)
    end = max(round((e["ts"] + e["dur"]) * 1000) for e in ranges)
    assert abs(dec["window_ns"] - (end - start)) <= 1  # us floats -> ns
    walls = [round((e["ts"] + e["dur"]) * 1000) - round(e["ts"] * 1000) for e in ranges]
    assert any(abs(dec["step_ns"]["p50"] - w) <= 1 for w in walls)  # a decode step's wall
    assert dec["device_busy_ns"] == 0 and dec["device_busy_share"] == 0.0  # CPU: no device
    assert sum(dec["host_categories_per_step_ns"].values()) <= dec["window_ns"] // 2
    names = {o["name"] for o in dec["host_ops_per_step"]}
    assert names and all(n.startswith("aten::") for n in names)


def test_markdown_fills_the_seed_template_line(ab_doc):
    md = renderer("md", "serve").render(ab_doc, RenderOptions())
    line = next(ln for ln in md.splitlines() if ln.startswith("Serving result, if measured:"))
    a, b = ab_doc["variants"]
    assert f"{a['summary']['output_tokens_per_s']:,.1f} -> " \
           f"{b['summary']['output_tokens_per_s']:,.1f} tok/s" in line
    assert "cannot tell" in line and "3 interleaved fresh-process rounds" in line
    assert "| TPOT p50 |" in md and "| wall (both throughputs) |" in md
    text = renderer("text", "serve").render(ab_doc, RenderOptions(width=140))
    assert "A/B: B - A over 3 interleaved rounds" in text and "decode step, A eager" in text


def test_poisson_arrivals_drive_the_batches():
    w = Workload(requests=4, prompt_len=8, output_len=3, batch_size=2, arrival="poisson",
                 rate=40.0, seed=3)
    spec = ServeSpec(model=TINY, workload=w, a=Variant("A"), rounds=1, check_steps=2,
                     profile_steps=0).validate()
    doc = run_serve(spec, launch=launch.in_this_process)
    offsets = arrival_offsets_ns(w)
    assert doc["workload"]["arrival_offsets_ns"] == offsets and offsets[1] > 0
    rep = doc["variants"][0]["repetitions"][0]
    assert [r["arrival_ns"] for r in rep["requests"]] == offsets
    by_batch = {}
    for r in rep["requests"]:
        by_batch.setdefault(r["batch"], []).append(r)
    for b in rep["batches"]:
        members = by_batch[b["batch"]]
        assert len(members) == b["size"] <= 2
        assert all(m["arrival_ns"] <= b["start_ns"] <= m["first_token_ns"] for m in members)
    assert doc["ab"] is None and doc["measured"]


@pytest.fixture
def fake_gems(monkeypatch):
    monkeypatch.syspath_prepend(str(FAKE_GEMS))
    yield
    sys.modules.pop("flag_gems", None)


def test_failing_backend_is_bisected_and_culprits_named(fake_gems):
    w = Workload(requests=2, prompt_len=8, output_len=3, batch_size=2)
    spec = ServeSpec(model=TINY, workload=w, a=Variant("A", backend="flag_gems"), rounds=1,
                     check_steps=3, profile_steps=0).validate()
    doc = run_serve(spec, launch=launch.in_this_process)
    c = doc["variants"][0]["correctness"]
    assert c["check"]["status"] == "crashed" and "illegal memory access" in c["check"]["error"]
    verdicts = {r["op"]: r["verdict"] for r in c["bisect"]["tested"]}
    assert verdicts == {"mean": "wrong", "neg": "crashed", "rsqrt": "ok", "silu": "wrong"}
    nan = next(r for r in c["bisect"]["tested"] if r["op"] == "mean")
    assert nan["logits_ratio"] is None  # NaN logits: no distance, and valid JSON
    assert c["bisect"]["culprits"] == ["mean", "neg", "silu"] and c["bisect"]["children"] == 2
    assert not doc["measured"] and "--exclude-ops mean,neg,silu" in doc["stopped"]
    json.dumps(doc, allow_nan=False)

    excluded = run_serve(ServeSpec(model=TINY, workload=w,
                                   a=Variant("A", backend="flag_gems", exclude_ops=("neg",)),
                                   b=Variant("B", backend="flag_gems",
                                             exclude_ops=("mean", "neg", "silu")),
                                   rounds=2, check_steps=3, profile_steps=0,
                                   exclude_failing=True).validate(),
                         launch=launch.in_this_process)
    a, b = excluded["variants"]
    assert a["correctness"]["check"]["status"] == "wrong"
    assert a["correctness"]["check"]["logits"]["finite"] is False
    assert [r["op"] for r in a["correctness"]["bisect"]["tested"]] == ["mean", "rsqrt", "silu"]
    assert a["exclude_ops"] == ["neg", "mean", "silu"]
    assert a["correctness"]["recheck"]["status"] == "passed"
    # wrong, not crashed: the check's own process bisected and checked again (one child)
    assert a["correctness"]["bisect"]["children"] == 1
    assert a["correctness"]["recheck"]["same_process"] is True
    assert a["correctness"]["recheck"]["backend_detail"]["excluded_ops"] == ["neg", "mean", "silu"]
    assert b["correctness"]["check"]["status"] == "passed" and "bisect" not in b["correctness"]
    assert excluded["measured"] and excluded["ab"]["rounds"] == 2


def test_cli_in_fresh_processes_reports_the_culprit(tmp_path):
    """The real command: children are fresh interpreters, --env reaches them (the fake
    FlagGems is importable only through it), a failed check is exit 3."""
    out = tmp_path / "serve.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "traceview", "serve", *TINY_ARGS, "--backend", "flag_gems",
         "--exclude-ops", "neg", "--env", f"PYTHONPATH={FAKE_GEMS}", "--requests", "2",
         "--prompt-len", "8", "--output-len", "3", "--batch-size", "2", "--check-steps", "2",
         "--rounds", "1", "--profile-steps", "0", "--format", "md", "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 3, proc.stderr
    assert "culprit op(s): mean, silu: rerun with --exclude-ops mean,silu" in proc.stderr
    assert "Serving result, if measured: not measured" in proc.stdout
    doc = json.loads(out.read_text())
    c = doc["variants"][0]["correctness"]
    assert c["check"]["backend_detail"]["excluded_ops"] == ["neg"]
    assert c["bisect"]["culprits"] == ["mean", "silu"] and c["bisect"]["children"] == 1
    assert doc["variants"][0]["env"] == {"PYTHONPATH": str(FAKE_GEMS)}
    assert doc["complete"] and not doc["measured"]


def test_cli_rejects_bad_options_in_one_line():
    from typer.testing import CliRunner

    from traceview.cli.app import app

    r = CliRunner().invoke(app, ["serve", "--arrival", "poisson"])
    assert r.exit_code == 2 and "needs --rate" in r.output
    r = CliRunner().invoke(app, ["serve", "--vs", "flag_gems", "--rounds", "1"])
    assert r.exit_code == 2 and "--rounds 2 or more" in r.output


def test_cli_json_and_text_outputs(monkeypatch, tmp_path):
    """The command's own output paths (children run in this process here)."""
    from typer.testing import CliRunner

    from traceview.cli.app import app
    from traceview.serve import launch as launch_mod

    @contextlib.contextmanager
    def here(variants, **kw):
        yield launch_mod.in_this_process

    monkeypatch.setattr(launch_mod, "forking", here)
    args = ["serve", *TINY_ARGS, "--requests", "3", "--prompt-len", "8", "--output-len", "3",
            "--batch-size", "2", "--rounds", "1", "--profile-steps", "0", "--check-steps", "2"]
    out = tmp_path / "doc.json"
    r = CliRunner().invoke(app, [*args, "--format", "json", "--out", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc == json.loads(out.read_text()) and doc["complete"] and doc["measured"]
    assert doc["schema_version"] == 2 and "schema" not in doc
    rep = doc["variants"][0]["repetitions"][0]
    assert rep["figures"]["output_tokens"] == 9 and len(rep["requests"]) == 3
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0 and "output tokens/s" in r.stdout and "TPOT p99" in r.stdout


def test_a_passed_check_is_kept_and_reused_only_with_the_same_versions(fake_gems, monkeypatch,
                                                                         tmp_path):
    """Wrong, then bisected and checked again in one process, then kept: the second run
    starts no check process and measures the same variant (the culprits excluded); a
    different flag_gems version is a different key and checks again."""
    from traceview.serve import check_cache

    monkeypatch.setenv("TRACEVIEW_CACHE_DIR", str(tmp_path))
    seen = {"python": "3", "torch": "2", "transformers": "5", "triton": "3", "flag_gems": "5.0.2"}
    monkeypatch.setattr(check_cache, "versions", lambda variant: dict(seen))
    tasks: list[str] = []

    def counting(variant, task):
        tasks.append(task["task"])
        return launch.in_this_process(variant, task)

    w = Workload(requests=2, prompt_len=8, output_len=3, batch_size=2)
    spec = ServeSpec(model=TINY, workload=w, a=Variant("A", backend="flag_gems",
                                                       exclude_ops=("neg",)),
                     rounds=1, check_steps=3, profile_steps=0, exclude_failing=True,
                     check_cache=True).validate()
    first = run_serve(spec, launch=counting)
    assert tasks == ["check", "measure"]  # bisect and recheck inside the check's process
    assert first["variants"][0]["exclude_ops"] == ["neg", "mean", "silu"]
    assert len(list(tmp_path.glob("serve-checks/*.json"))) == 1
    tasks.clear()
    again = run_serve(spec, launch=counting)
    assert tasks == ["measure"]
    c = again["variants"][0]
    assert c["exclude_ops"] == ["neg", "mean", "silu"] and again["measured"]
    assert c["correctness"]["cached"]["versions"] == seen
    assert c["correctness"]["recheck"]["status"] == "passed"
    tasks.clear()
    seen["flag_gems"] = "5.0.3"
    run_serve(spec, launch=counting)
    assert tasks[0] == "check"


def test_versions_are_read_from_the_variants_interpreter_without_importing_torch():
    import importlib.metadata as md

    from traceview.serve import check_cache

    got = check_cache.versions(Variant("A", backend="eager"))
    assert got is not None and got["torch"] == md.version("torch")
    assert check_cache.versions(Variant("A", python="/no/such/python")) is None
    k = check_cache.key(ServeSpec(model=TINY, workload=Workload(), a=Variant("A")),
                        Variant("A", backend="flag_gems"), got)
    k2 = check_cache.key(ServeSpec(model=TINY, workload=Workload(), a=Variant("A")),
                         Variant("A", backend="flag_gems", exclude_ops=("mul",)), got)
    assert len(k) == 32 and k != k2


def test_cli_forks_every_process_of_both_sides_from_one_template(tmp_path):
    """The default: one template per interpreter and environment (eager and flag_gems
    here share one) imports torch and transformers once; the check, each repetition and
    each profile is a new process forked from it, with its own pid, the variant's
    environment, and nearly no start-up of its own. ``--spawn`` starts fresh
    interpreters instead and says so."""
    out = tmp_path / "serve.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    gems = f"PYTHONPATH={FAKE_GEMS}"
    common = [sys.executable, "-m", "traceview", "serve", *TINY_ARGS, "--requests", "2",
              "--prompt-len", "8", "--output-len", "3", "--batch-size", "2",
              "--check-steps", "2", "--no-check-cache", "--format", "json"]
    proc = subprocess.run(
        [*common, "--env", gems, "--vs", "flag_gems", "--vs-env", gems, "--vs-exclude-ops",
         "neg,mean,silu", "--rounds", "2", "--profile-steps", "1", "--trace-dir",
         str(tmp_path / "traces"), "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    how = doc["protocol"]["process_start"]
    assert how["mode"] == "fork" and how["why"] is None
    assert list(how["templates"]) == ["A+B"] and how["templates"]["A+B"]["variants"] == ["A",
                                                                                       "B"]
    t = how["templates"]["A+B"]
    assert {"torch", "transformers", "traceview.serve.child"} <= set(t["preloaded"])
    assert "flag_gems" not in t["preloaded"]  # never imported under the eager side
    assert t["imports_ns"] > 0
    a, b = doc["variants"]
    assert b["correctness"]["check"]["status"] == "passed"
    assert b["correctness"]["check"]["process_ns"]["start_to_task"] < 2e9
    reps = a["repetitions"] + b["repetitions"]
    assert len({r["pid"] for r in reps}) == 4  # a new process each
    assert all(str(FAKE_GEMS) in r["env_seen"]["PYTHONPATH"].split(os.pathsep) for r in reps)
    for r in reps:  # forked: the task is nearly all of the process, inside the parent's wall
        p = r["process_ns"]
        assert 0 <= p["start_to_task"] < 2e9 and p["task"] <= r["process_wall_ns"]
        assert r["setup_ns"] + r["warmup_ns"] <= p["task"]
    assert all(v["diagnosis"] and "error" not in v["diagnosis"] for v in doc["variants"])

    spawned = subprocess.run([*common, "--rounds", "1", "--profile-steps", "0", "--spawn"],
                             capture_output=True, text=True, env=env, timeout=300,
                             check=False)
    assert spawned.returncode == 0, spawned.stderr
    sdoc = json.loads(spawned.stdout)
    assert sdoc["protocol"]["process_start"]["mode"] == "spawn"
    assert "--spawn" in sdoc["protocol"]["process_start"]["why"]
    rep = sdoc["variants"][0]["repetitions"][0]
    # a fresh interpreter imports torch and transformers before its task
    assert rep["process_ns"]["start_to_task"] > 0


def test_a_template_preloads_what_its_variants_backends_import():
    from traceview.serve.launch import PRELOAD, preload_for

    eager, gems = Variant("A"), Variant("B", backend="flag_gems")
    assert preload_for([eager]) == PRELOAD
    mixed = preload_for([eager, gems])
    assert "?triton" in mixed and "?sqlalchemy" in mixed
    assert not any(p.lstrip("?~") == "flag_gems" for p in mixed)  # never under eager
    assert preload_for([gems])[-1] == "~flag_gems"
    assert "?torch._dynamo" in preload_for([Variant("A", backend="compile")])
