"""serve --attribute: the split of a backend swap's effect by op.

The fast tests drive :func:`traceview.serve.attribution.attribute` with a launcher that
computes each pass's timestamps from a known cost per op (no torch), so the truth is
known by construction: every figure here is recomputed from those costs. The slow test
runs the tiny CPU model with a planted backend (``tests/planted_gems``: ATen ops through
their ``.out`` overloads, one op busy-waiting a known time per call).
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest

from traceview.runner.outcome import Outcome
from traceview.serve import attribution as at
from traceview.serve.spec import Variant

ROOT = Path(__file__).resolve().parents[1]
PLANTED = ROOT / "tests" / "planted_gems"


def fake_launch(costs: dict[str, int], base_tpot: int, noise: int, seed: int = 1,
                pair: tuple[str, str, int] | None = None):
    """A launcher whose passes take ``base_tpot + sum(cost of enabled ops)`` per token
    (+ uniform noise per pass); ``pair``: two ops that cost extra together (interaction).
    Requests: one batch of 2, 5 tokens, TTFT = 2 x TPOT."""
    rng = random.Random(seed)
    calls = []

    def launch(variant: Variant, task: dict) -> Outcome:
        calls.append(task)
        out = []
        for cfg in task["configs"]:
            inc = cfg["include"]
            on = set(costs) if inc is None else set(inc)
            tpot = base_tpot + sum(costs[o] for o in on) + rng.randint(-noise, noise)
            if pair and pair[0] in on and pair[1] in on:
                tpot += pair[2]
            first = 2 * tpot
            reqs = [{"index": i, "batch": 0, "arrival_ns": 0, "first_token_ns": first,
                     "last_token_ns": first + 4 * tpot, "tokens": 5} for i in range(2)]
            out.append({"name": cfg["name"], "requests": reqs, "tokens_sha256": "x",
                        "elapsed_ns": 10 * tpot})
        return Outcome(status="ok", value={"configs": out, "setup_ns": 1000,
                                           "environment": None}, records=[], error="")
    return launch, calls


COSTS = {"add": 3_000_000, "mm": 8_000_000, "mul": 0, "neg": 0, "silu": 500_000,
         "rsqrt": 0, "cat": 1_000_000, "pow": 0}


def run(costs=COSTS, noise=0, pair=None, **kw):
    launch, calls = fake_launch(costs, 5_000_000, noise, pair=pair)
    settings = at.Settings(**kw)
    att = at.attribute(sorted(costs), settings, Variant("B", backend="flag_gems"),
                       {"model": {}, "workload": {}}, launch, lambda s: None)
    return att, calls


def test_parts_and_interaction_add_up_to_the_whole_exactly():
    att, _ = run(noise=200_000)
    assert at.check_identity(att) == []
    for f in at.FIGURES:
        total = sum(p.figures[f].estimate_ns for p in att.parts)
        assert total + att.interaction[f].estimate_ns == att.whole[f].estimate_ns
        # the interaction's per-round residuals are recomputed from the final stage
        final = att.stages[-1]
        assert final.kind == "final" and len(att.interaction[f].diffs_ns) == final.rounds


def test_without_noise_each_op_gets_its_own_cost():
    att, _ = run()
    by = {p.name: p for p in att.parts}
    # every op costing at least 10% of the whole (12.5 ms) is isolated
    assert by["mm"].figures["tpot_p50"].estimate_ns == 8_000_000
    assert by["add"].figures["tpot_p50"].estimate_ns == 3_000_000
    assert att.whole["tpot_p50"].estimate_ns == sum(COSTS.values())
    assert att.interaction["tpot_p50"].estimate_ns == 0
    # TTFT is 2 x TPOT in the fake, the wall 6 x TPOT
    assert by["mm"].figures["ttft_p50"].estimate_ns == 16_000_000
    assert by["mm"].figures["wall"].estimate_ns == 48_000_000
    assert [p.name for p in att.parts][:2] == ["mm", "add"]


def test_an_interaction_shows_as_the_residual():
    att, _ = run(pair=("add", "mm", 2_000_000))
    assert att.interaction["tpot_p50"].estimate_ns == 2_000_000


def test_every_process_measures_eager_and_orders_change_by_round():
    att, calls = run(noise=100_000)
    for task in calls:
        assert task["task"] == "attribute"
        assert any(c["name"] == at.BASELINE and c["include"] == [] for c in task["configs"])
    final = att.stages[-1]
    assert len({tuple(o) for o in final.orders}) > 1
    whole_in = [c for c in calls[-1]["configs"] if c["name"] == at.WHOLE]
    assert whole_in and whole_in[0]["include"] is None  # the whole swap as side B runs it


def test_a_slow_eager_pass_moves_no_part():
    """One eager pass per process 4 ms slow (a collection, a clock step): with eager
    measured once that pass is the baseline of every part in its round, so each part
    reads 4 ms low in those rounds and the interaction N - 1 times 4 ms high; the
    median of three passes ignores it: every part keeps its exact cost."""
    def slow_first_eager(costs, base, noise, pair=None):
        launch, calls = fake_launch(costs, base, noise, pair=pair)

        def wrapped(variant, task):
            out = launch(variant, task)
            for cfg in out.value["configs"]:
                if cfg["name"] == at.BASELINE:  # eager's first pass in every process
                    for q in cfg["requests"]:
                        q["first_token_ns"] += 8_000_000
                        q["last_token_ns"] += 8_000_000 + 4 * 4_000_000
            return out
        return wrapped, calls

    for passes, exact in ((3, True), (1, False)):
        launch, calls = slow_first_eager(COSTS, 5_000_000, 0)
        att = at.attribute(sorted(COSTS), at.Settings(baseline_passes=passes),
                           Variant("B", backend="flag_gems"), {"model": {}, "workload": {}},
                           launch, lambda s: None)
        by = {p.name: p.figures["tpot_p50"].estimate_ns for p in att.parts}
        assert (by["mm"] == 8_000_000 and by["add"] == 3_000_000) is exact, by
        assert (att.interaction["tpot_p50"].estimate_ns == 0) is exact
        assert att.baseline_passes == passes
        eager = [sum(1 for c in t["configs"] if c["name"].split("#")[0] == at.BASELINE)
                 for t in calls]
        assert set(eager) == {passes} and all(
            c["include"] == [] for t in calls for c in t["configs"]
            if c["name"].startswith(at.BASELINE))


def test_a_budget_stops_screening_but_the_final_stage_runs():
    att, calls = run(budget_s=1e-9)
    assert "time budget" in att.screening_ended
    assert len([s for s in att.stages if s.kind == "screen"]) == 1
    assert att.stages[-1].kind == "final" and at.check_identity(att) == []


def test_claims_read_back_against_the_document():
    from traceview.documents import builtins
    from traceview.report.claims import check, from_json

    att = at.with_claims(run(noise=100_000)[0])
    doc = {"attribution": builtins(att)}
    assert len(att.claims) == len(at.FIGURES)
    for c in att.claims:
        assert check(from_json(c), doc) == []


@pytest.mark.slow
@pytest.mark.capture
def test_planted_busy_wait_is_attributed_to_its_op(monkeypatch):
    """silu busy-waits 4 ms per call; the tiny model calls it once per layer (2) per
    decode step: TPOT's truth is 2 x the wait as it ran (the planted op's own clock: a
    loaded machine stretches a wait) on silu, and exactly nothing on the other ops
    (ATen's own kernels). "No other part excludes zero" is a statement about up to 4
    parts at once: each interval at 99% (9 rounds reach it), so noise alone puts one of
    them off zero in up to 4% of runs (Bonferroni), more on a loaded machine (a suite
    run beside other work read mean_dim+neg +354 us [+1 us, +676 us] against silu's
    8 ms). What the plant must not do is leak: no other part excludes zero with an
    estimate over a tenth of the planted truth."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from traceview.serve import launch
    from traceview.serve.runner import run_serve
    from traceview.serve.spec import AttributeSpec, ModelSpec, ServeSpec, Workload

    busy_ns, layers = 4_000_000, 2
    monkeypatch.setenv("PLANTED_GEMS_SLOW", f"silu:{busy_ns}")
    monkeypatch.syspath_prepend(str(PLANTED))
    sys.modules.pop("flag_gems", None)
    import torch

    torch.set_num_threads(1)  # a shared machine: fewer threads, less scheduling noise
    tiny = ModelSpec(layers=layers, hidden=64, heads=4, kv_heads=2, intermediate=128,
                     vocab=512, dtype="float32", device="cpu")
    spec = ServeSpec(model=tiny, workload=Workload(requests=2, prompt_len=8, output_len=8,
                                                   batch_size=2),
                     a=Variant("A"), b=Variant("B", backend="flag_gems"), rounds=9,
                     alpha=0.01, check_steps=2, profile_steps=0,
                     attribute=AttributeSpec()).validate()
    import flag_gems

    doc = run_serve(spec, launch=launch.in_this_process)
    waited = dict(flag_gems.BUSY)
    sys.modules.pop("flag_gems", None)
    att = doc["attribution"]
    parts = {p["name"]: p["figures"]["tpot_p50"] for p in att["parts"]}
    assert "silu" in parts, att["parts"]
    assert waited["calls"] > 0
    truth = waited["ns"] // waited["calls"] * layers
    assert abs(parts["silu"]["estimate_ns"] - truth) <= 0.25 * truth, parts["silu"]
    assert parts["silu"]["excludes_zero"]
    others = {n: e for n, e in parts.items() if n != "silu"}
    leaks = {n: e for n, e in others.items()
             if e["excludes_zero"] and abs(e["estimate_ns"]) > 0.1 * truth}
    assert not leaks, others
    assert os.environ["PLANTED_GEMS_SLOW"] == f"silu:{busy_ns}"


@pytest.mark.capture
def test_a_wrong_op_comes_with_its_calls_errors_and_a_script(monkeypatch, tmp_path):
    """The stand-in FlagGems: silu is 1.5 x silu (a kernel bug: its error is half the
    reference), mean returns NaN, neg raises. Each culprit's calls are recorded and the
    silu script, run on its own, shows the bug (exit 1)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import subprocess

    from traceview.serve import launch
    from traceview.serve.runner import run_serve
    from traceview.serve.spec import ModelSpec, ServeSpec, Workload

    fake = ROOT / "tests" / "fake_gems"
    monkeypatch.syspath_prepend(str(fake))
    sys.modules.pop("flag_gems", None)
    tiny = ModelSpec(layers=2, hidden=64, heads=4, kv_heads=2, intermediate=128, vocab=512,
                     dtype="float32", device="cpu")
    spec = ServeSpec(model=tiny, workload=Workload(requests=2, prompt_len=8, output_len=3,
                                                   batch_size=2),
                     a=Variant("A", backend="flag_gems"), rounds=1, check_steps=3,
                     profile_steps=0).validate()
    doc = run_serve(spec, launch=launch.in_this_process, report_dir=tmp_path)
    sys.modules.pop("flag_gems", None)
    found = {r["op"]: r for r in doc["variants"][0]["correctness"]["reproducers"]}
    assert set(found) == {"mean", "neg", "silu"}
    silu = found["silu"]
    assert silu["verdict"] == "kernel bug" and silu["keys"] == ["silu"]
    assert silu["calls"] and all(c["aten"] == "silu" for c in silu["calls"])
    for c in silu["calls"]:
        # got = 1.5 x ref, so the largest error is half the largest |ref| (float32 rounding)
        assert c["max_abs_err"] == pytest.approx(0.5 * c["max_abs_ref"], rel=1e-5)
        assert c["beyond_tolerance"] and not c["eager_beyond_tolerance"]
        assert c["args"][0]["dtype"] == "float32" and len(c["args"][0]["shape"]) == 3
    assert found["mean"]["verdict"] == "kernel bug"
    assert all(c["max_abs_err"] is None for c in found["mean"]["calls"])  # NaN
    assert found["neg"]["verdict"] == "crashed" and "illegal memory access" in \
        found["neg"]["crashed"]
    from traceview.render.registry import RenderOptions, renderer
    from traceview.report.claims import check, from_json

    for r in found.values():  # each sentence reads back against the document
        assert check(from_json(r["claim"]), doc) == []
    assert "silu: kernel bug" in silu["claim"]["text"]
    text = renderer("text", "serve").render(doc, RenderOptions(width=200))
    assert silu["claim"]["text"] in text and str(silu["script"]) in text
    script = Path(silu["script"])
    assert script.parent == tmp_path
    env = dict(os.environ, PYTHONPATH=str(fake))
    ran = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                         text=True, timeout=120)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "kernel bug" in ran.stdout


def _hodges_lehmann(d: list[int]) -> float:
    walsh = sorted((d[i] + d[j]) / 2 for i in range(len(d)) for j in range(i, len(d)))
    n = len(walsh)
    return walsh[n // 2] if n % 2 else (walsh[n // 2 - 1] + walsh[n // 2]) / 2


SAVED = [ROOT / "tests" / "data" / "serve_attribute_cpu.json",
         *sorted((ROOT / "tests" / "data" / "serve_attribute_h100").glob("*.json"))]


def _walsh(d: list[int]) -> list[float]:
    return sorted((d[i] + d[j]) / 2 for i in range(len(d)) for j in range(i, len(d)))


@pytest.mark.parametrize("path", SAVED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_saved_document_adds_up_and_its_sentences_hold(path):
    """The saved attributions (the CPU golden's; the H100 acceptance's three): each
    estimate recomputed from its per-round differences, the identity, the claims."""
    import json

    from traceview.report.claims import check, from_json
    from traceview.serve.runner import read_serve

    doc = json.loads(path.read_text())
    att = read_serve(doc).attribution
    assert att is not None and at.check_identity(att) == []
    raw = doc["attribution"]
    for f in raw["figures"]:
        for e in [raw["whole"][f]] + [p["figures"][f] for p in raw["parts"]]:
            assert e["estimate_ns"] == round(_hodges_lehmann(e["diffs_ns"]))
            assert len(e["diffs_ns"]) == raw["rounds"]
            if e["confidence"] == 0.96875:
                # six rounds: the exact signed-rank interval at 31/32 spans every Walsh
                # average (each tail holds 1/64 of the 2^6 sign patterns)
                assert raw["rounds"] == 6
                w = _walsh(e["diffs_ns"])
                assert (e["ci_low_ns"], e["ci_high_ns"]) == (w[0], w[-1])
                assert e["excludes_zero"] == (w[0] > 0 or w[-1] < 0)
        # the interaction's per-round residuals: whole minus the parts, round by round
        for r, res in enumerate(raw["interaction"][f]["diffs_ns"]):
            assert res == raw["whole"][f]["diffs_ns"][r] - sum(
                p["figures"][f]["diffs_ns"][r] for p in raw["parts"])
    for c in raw["claims"]:
        assert check(from_json(c), doc) == []


def test_cli_refuses_what_it_cannot_attribute_in_one_line():
    from typer.testing import CliRunner

    from traceview.cli.app import app

    cases = [
        (["--attribute"], "give --backend eager --vs flag_gems"),
        (["--attribute", "--vs", "flag_gems", "--vs-env", "X=1"], "same Python and environment"),
        (["--attribute", "--vs", "flag_gems", "--attribute-budget", "2us"],
         "--attribute-budget '2us': give a time"),
        (["--attribute", "--vs", "flag_gems", "--attribute-min-share", "1.5"],
         "--attribute-min-share must be between 0 and 1"),
        (["--vs", "flag_gems", "--attribute-ops", "mm"], "go with --attribute"),
    ]
    for args, words in cases:
        r = CliRunner().invoke(app, ["serve", "--device", "cpu", *args])
        assert r.exit_code == 2, (args, r.output)
        assert words in r.output and "Traceback" not in r.output, (args, r.output)


@pytest.mark.slow
@pytest.mark.capture
def test_cli_attributes_in_forked_processes(tmp_path):
    """The real command, its processes forked from a template: the op list, every round
    and both profiles in their own processes; silu (planted at 3 ms per call) is among the
    parts, the identity holds in the written document and the markdown shows the table."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import json
    import subprocess

    out = tmp_path / "attr.json"
    env = dict(os.environ, PYTHONPATH=f"{ROOT}:{PLANTED}", PLANTED_GEMS_SLOW="silu:3000000")
    proc = subprocess.run(
        [sys.executable, "-m", "traceview", "serve", "--device", "cpu", "--dtype", "float32",
         "--layers", "2", "--hidden", "64", "--heads", "4", "--kv-heads", "2",
         "--intermediate", "128", "--vocab", "512", "--requests", "2", "--prompt-len", "8",
         "--output-len", "6", "--batch-size", "2", "--check-steps", "2", "--profile-steps",
         "2", "--vs", "flag_gems", "--attribute", "--no-check-cache", "--format", "md",
         "--out", str(out), "--trace-dir", str(tmp_path / "traces")],
        capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    from traceview.serve.runner import read_serve

    att = read_serve(doc).attribution
    assert att is not None and at.check_identity(att) == []
    # the plumbing is what this test checks (the planted test above checks the sizes): on
    # a machine loaded by other tests one process of six read -239 ms against +3 ms
    # planted, so no figure of these few rounds is asserted here; for the same reason
    # screening may keep silu in a group with a neighbour ("rsqrt+silu"), which is still
    # the plumbing working: silu must be in exactly one part, alone or grouped
    holding = [p for p in att.parts if "silu" in p.ops]
    assert len(holding) == 1, [p.name for p in att.parts]
    assert doc["protocol"]["process_start"]["mode"] == "fork"
    assert f"| {holding[0].name} |" in proc.stdout and "attribution round" not in proc.stdout
    assert "attribution final: round 6/6" in proc.stderr
    assert all(v["diagnosis"] and "decode" in v["diagnosis"] for v in doc["variants"])


H100 = ROOT / "tests" / "data" / "serve_attribute_h100"


def _tpot_parts(name: str) -> list[dict]:
    import json

    return json.loads((H100 / name).read_text())["attribution"]["parts"]


def test_on_the_h100_two_runs_name_the_same_three_single_ops_first():
    """The acceptance's repeatability on the GPU: the two runs' three largest TPOT
    parts, ranked here from their per-round differences, are the same single ops."""
    tops = []
    for name in ("run1.json", "run2.json"):
        parts = _tpot_parts(name)
        ranked = sorted(parts, key=lambda p: -round(_hodges_lehmann(
            p["figures"]["tpot_p50"]["diffs_ns"])))
        assert [len(p["ops"]) for p in ranked[:3]] == [1, 1, 1]
        assert all(p["figures"]["tpot_p50"]["excludes_zero"] for p in ranked[:3])
        tops.append({p["name"] for p in ranked[:3]})
    assert tops[0] == tops[1] == {"add", "copy_", "mm"}


def test_on_the_h100_the_planted_wait_is_found_and_moves_no_other_part():
    """FlagGems' argmax busy-waiting 5 ms once per decode step: its part is within 25%
    of the truth, which lies between the wait alone and the wait plus run 1's group
    that held argmax; the other parts whose interval excludes zero (real costs) overlap
    their unplanted intervals in run 1."""
    planted = {p["name"]: p["figures"]["tpot_p50"] for p in _tpot_parts("planted.json")}
    run1 = _tpot_parts("run1.json")
    group = next(p for p in run1 if "argmax" in p["ops"])["figures"]["tpot_p50"]
    wait = 5_000_000
    got = _hodges_lehmann(planted["argmax"]["diffs_ns"])
    for truth in (wait, wait + _hodges_lehmann(group["diffs_ns"])):
        assert abs(got - truth) <= 0.25 * truth, (got, truth)
    unplanted = {p["name"]: p["figures"]["tpot_p50"] for p in run1}
    for name, e in planted.items():
        if name == "argmax" or not e["excludes_zero"]:
            continue
        before = _walsh(unplanted[name]["diffs_ns"])
        after = _walsh(e["diffs_ns"])
        assert max(before[0], after[0]) <= min(before[-1], after[-1]), name
