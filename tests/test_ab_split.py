"""``traceview ab --split``: each side's unprofiled split, against a staged timing done here.

The planted call (``planted_ab.add``: a busy-wait, tiny Python calls, a C call) has its
stage costs set per side by the environment, so the sides' splits differ by
construction: on A the busy-wait leads, on B the tiny calls do. The expected figures are
measured in this test, independently: each stage replaced in its module by a wrapper
with a ``perf_counter_ns`` accumulator, one stage per run, as a share of the call in the
same runs (the machine is shared: a share carries from one process to another where a
time does not).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from traceview.stats import median

HERE = Path(__file__).resolve().parent
SIDES = {"A": {"PLANTED_BUSY_NS": 60_000, "PLANTED_TINY_CALLS": 200},
         "B": {"PLANTED_BUSY_NS": 30_000, "PLANTED_TINY_CALLS": 1200}}


def staged_shares(busy_ns: int, tiny_calls: int, calls: int = 60,
                  repeats: int = 5) -> dict[str, float]:
    """Each stage's median time per call over the call's median, one stage wrapped per
    run, with the side's costs planted in the module."""
    torch = pytest.importorskip("torch")
    import planted_ab as P

    saved = (P.BUSY_NS, P.TINY_CALLS)
    P.BUSY_NS, P.TINY_CALLS = busy_ns, tiny_calls
    a, b = torch.randn(4, 64), torch.randn(4, 64)
    perf = time.perf_counter_ns
    out: dict[str, float] = {}
    try:
        for _ in range(20):
            P.add(a, b)
        for name in P.STAGES:
            orig, acc = getattr(P, name), [0]

            def wrapper(orig=orig, acc=acc):
                t0 = perf()
                try:
                    return orig()
                finally:
                    acc[0] += perf() - t0

            shares = []
            for _ in range(repeats):
                setattr(P, name, wrapper)
                try:
                    got, wall = [], []
                    for _ in range(calls):
                        before, t0 = acc[0], perf()
                        P.add(a, b)
                        wall.append(perf() - t0)
                        got.append(acc[0] - before)
                finally:
                    setattr(P, name, orig)
                shares.append(median(got) / median(wall))
            out[name] = median(shares)
    finally:
        P.BUSY_NS, P.TINY_CALLS = saved
    return out


def staged_shares_fresh(busy_ns: int, tiny_calls: int) -> dict[str, float]:
    """:func:`staged_shares` in a fresh interpreter, as the split's own child is: the test
    worker's interpreter (its imports, its garbage, its hooks) ran the tiny Python calls
    up to 1.8x slower than a fresh one, which moved every share."""
    import os
    import subprocess
    import sys

    code = (f"import json, sys; sys.path[:0] = [{str(HERE)!r}]; "
            "from test_ab_split import staged_shares; "
            f"print(json.dumps(staged_shares({busy_ns}, {tiny_calls})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [str(HERE.parent), os.environ.get("PYTHONPATH", "")])})
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def ab_doc(tmp_path_factory):
    pytest.importorskip("torch")
    from traceview.cli.app import app

    tmp = tmp_path_factory.mktemp("ab_split")
    shutil.copy(HERE / "planted_ab.py", tmp / "planted_ab.py")
    env = [x for label in ("A", "B") for k, v in SIDES[label].items()
           for x in (f"--{label.lower()}-env", f"{k}={v}")]
    out = tmp / "ab.json"
    cwd = Path.cwd()
    import os

    os.chdir(tmp)
    try:
        r = CliRunner().invoke(app, [
            "ab", "--op", "add", "--fn", "planted_ab:add", "--shape", "4x64", "--device",
            "cpu", "--warmup", "20", "--baseline-n", "60", "--rounds", "2", *env,
            "--out", str(out), "--format", "md"])
    finally:
        os.chdir(cwd)
    assert r.exit_code == 0, r.output
    return json.loads(out.read_text()), r.stdout


def stage_figures(split: dict) -> dict[str, dict]:
    from traceview.unprofiled.find import parse

    return {parse(f["name"])[2]: f for f in split["functions"]
            if parse(f["name"]) and parse(f["name"])[0].endswith("planted_ab.py")}


@pytest.mark.capture
def test_each_side_records_its_split_and_it_reads_through_the_typed_layout(ab_doc):
    from traceview.multi.ab_result import read_ab

    doc, _ = ab_doc
    typed = read_ab(doc)
    assert typed.splits is not None and set(typed.splits) == {"A", "B"}
    for label, sp in typed.splits.items():
        assert sp.method and sp.method.startswith("measured: "), (label, sp.note)
        assert sp.error is None and sp.seconds is not None and sp.seconds > 0
        assert sum(sp.categories.values()) == sp.call_ns  # the categories sum to the call
        assert sp.profiled_call_ns > sp.call_ns  # the profiler slows the call
        for f in sp.functions:
            assert f.low_ns <= f.inclusive_ns <= f.high_ns


def _misses(split: dict, want: dict[str, float]) -> list[tuple]:
    """The stages of 10% or more of the call whose split share is off by over 25%."""
    got = stage_figures(split)
    out = []
    for stage, share in want.items():
        if share < 0.10:
            continue
        mine = got[stage]["inclusive_ns"] / split["call_ns"] if stage in got else None
        if mine is None or abs(mine - share) > 0.25 * share:
            out.append((stage, mine, share))
    return out


@pytest.mark.capture
def test_every_major_stage_of_each_side_is_within_25_percent_of_the_staged_timing(ab_doc):
    doc, _ = ab_doc
    for label, costs in SIDES.items():
        # the machine is shared: the staged reference is taken up to three times, and one
        # that agrees is enough (a neighbour's load moves a reference, not the split)
        for _ in range(3):
            misses = _misses(doc["splits"][label], staged_shares_fresh(
                costs["PLANTED_BUSY_NS"], costs["PLANTED_TINY_CALLS"]))
            if not misses:
                break
        assert not misses, (label, misses)


@pytest.mark.capture
def test_the_stages_rank_as_built_and_the_ranking_flips_between_sides(ab_doc):
    doc, _ = ab_doc
    order = {}
    for label in SIDES:
        got = stage_figures(doc["splits"][label])
        order[label] = sorted(("busy_stage", "tiny_stage"),
                              key=lambda s: -got[s]["inclusive_ns"])
    assert order == {"A": ["busy_stage", "tiny_stage"], "B": ["tiny_stage", "busy_stage"]}
    # the profiled figures rank B's stages the same way but inflate the tiny calls far more
    b = stage_figures(doc["splits"]["B"])
    assert (b["tiny_stage"]["profiled_ns"] / b["tiny_stage"]["inclusive_ns"]
            > 2 * b["busy_stage"]["profiled_ns"] / b["busy_stage"]["inclusive_ns"])


@pytest.mark.capture
def test_the_markdown_shows_both_splits_side_by_side(ab_doc):
    doc, text = ab_doc
    assert "Where each side's call goes without the profiler" in text
    assert "A [95% CI]" in text and "B [95% CI]" in text
    assert "planted\\_ab.py(" in text or "planted_ab.py(" in text
    assert "A split: call " in text and "measured: " in text


def test_a_result_without_splits_renders_as_before():
    from traceview.render.ab_report import split_parts

    doc = json.loads((HERE / "data" / "ab_add_cpu.json").read_text())
    assert split_parts(doc) == ([], [], [])
    assert split_parts({**doc, "splits": None}) == ([], [], [])


def _trace_with_split(tmp_path: Path) -> Path:
    """The FlagGems capture fixture with a split written into its metadata as capture
    writes it."""
    import gzip

    doc = json.loads(gzip.decompress((HERE.parent / "fixtures" /
                                      "flag_gems_add_16x4096_bf16.json.gz").read_bytes()))
    doc["traceview"]["baseline"]["split"] = {
        "method": "sys.monitoring PY_START/PY_RETURN local events on one code object per run",
        "blocks": 10, "calls_per_run": 100, "call_ns": 100_000, "call_low_ns": 99_000,
        "call_high_ns": 101_000, "calibration": {"in_band_ns": 120, "per_invocation_ns": 400},
        "functions": [{"name": "flag_gems/utils/libentry.py(659): run", "inclusive_ns": 30_000,
                       "low_ns": 29_000, "high_ns": 31_000, "invocations_per_call": 1}]}
    path = tmp_path / "with_split.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return path


def test_trace_dir_captures_are_read_not_made_again_and_a_failed_capture_is_told(tmp_path):
    from traceview.ab.splits import side_splits
    from traceview.errors import CaptureError
    from traceview.render.ab_report import split_parts

    path = _trace_with_split(tmp_path)

    def profile(side, config, out):
        raise CaptureError("side B, profiled trace: took over 600 s")

    got = side_splits({"A": None, "B": None}, {"A": None, "B": None}, {"A": str(path)}, profile)
    a, b = got["A"], got["B"]
    assert a.method.startswith("measured: ") and a.trace == str(path) and a.seconds is None
    assert a.call_ns == 100_000 and sum(a.categories.values()) == 100_000
    assert [(f.name, f.inclusive_ns, f.low_ns, f.high_ns) for f in a.functions] == [
        ("flag_gems/utils/libentry.py(659): run", 30_000, 29_000, 31_000)]
    assert b.method is None and b.error == "side B, profiled trace: took over 600 s"
    import msgspec

    lines, rows, cats = split_parts({"splits": msgspec.to_builtins(got)})
    assert lines[0].startswith("A split: call 100 us [99 us, 101 us] unprofiled")
    assert "its capture in --trace-dir" in lines[0]
    assert lines[1].startswith("B split: no split: side B, profiled trace: took over")
    assert rows == [["flag_gems/utils/libentry.py(659): run", "30 us [29 us, 31 us]", "-",
                     rows[0][3], "-"]]
    assert cats and all(r[2] == "-" for r in cats)


def test_on_the_h200_both_sides_splits_were_measured_and_read_back():
    """``tools/ab_split_on_gpu.sh`` on the H200: torch (A) against FlagGems (B) sigmoid
    65536 float32, 6 rounds, the splits from the --trace-dir captures."""
    from traceview.multi.ab_result import read_ab
    from traceview.render.registry import RenderOptions, renderer

    doc = json.loads((HERE.parent / "fixtures" / "split_ab_h200_sigmoid.json").read_text())
    typed = read_ab(doc)
    assert typed.splits is not None and typed.comparisons["full_api_ns_p50"].verdict == "B slower"
    for sp in typed.splits.values():
        assert sp.method.startswith("measured: sys.monitoring") and sp.error is None
        assert sp.trace and sp.seconds is None  # from the --trace-dir capture
        assert sum(sp.categories.values()) == sp.call_ns < sp.profiled_call_ns
        for f in sp.functions:
            assert f.low_ns <= f.inclusive_ns <= f.high_ns and f.inclusive_ns < f.profiled_ns
    b = {f.name.rsplit(": ", 1)[1]: f for f in typed.splits["B"].functions}
    assert {"run", "prepare_args", "runner", "synchronize"} <= set(b)
    # FlagGems' own work (cache key, library) exists on B only
    assert "cache_key" in typed.splits["B"].categories
    assert "cache_key" not in typed.splits["A"].categories
    text = renderer("text", "ab").render(doc, RenderOptions(width=80))
    text = text if isinstance(text, str) else text.decode()
    assert "flag_gems/utils/libentry.py(659):" in text and "profiled 95.4 us" in text


def test_a_crash_or_ctrl_c_in_the_splits_keeps_the_rounds_result(tmp_path):
    """The splits come after the rounds: a side whose split crashes is told as failed,
    and a Ctrl-C stops the splits (every side not done says so) rather than losing the
    judged result."""
    from traceview.ab.splits import INTERRUPTED, side_splits

    def crash(side, config, out):
        raise ValueError("bad trace")

    got = side_splits({"A": None, "B": None}, {"A": None, "B": None}, {}, crash)
    assert got["A"].error == got["B"].error == "ValueError: bad trace"

    def ctrl_c(side, config, out):
        raise KeyboardInterrupt

    got = side_splits({"A": None, "B": None}, {"A": None, "B": None}, {}, ctrl_c)
    assert got["A"].error == got["B"].error == INTERRUPTED and got["A"].method is None
