"""explain's ``unprofiled`` key: the measured split from capture's metadata, the
per-event model from the call alone, and the note when nothing is known."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import traceview
from traceview.cli.app import app
from traceview.options import Options
from traceview.report.schema import from_json, to_json

FIX = Path(__file__).resolve().parents[1] / "fixtures"
ADD = FIX / "flag_gems_add_16x4096_bf16.json.gz"
KEYS = {"method", "calls", "call_ns", "low_ns", "high_ns", "categories", "functions"}


def _with_split(call_ns: int = 100_000):
    """The FlagGems fixture with a split recorded as capture records it: two of its
    frames measured (the op at 90% of the call, libentry's run at 30 us)."""
    trace = traceview.load(str(ADD))
    frames = {"flag_gems/ops/add.py(44): add": (90_000, 88_000, 93_000),
              "flag_gems/utils/libentry.py(659): run": (30_000, 29_000, 31_000)}
    capture = {**trace.metadata["traceview"]}
    capture["baseline"] = {**capture["baseline"]}
    # a Trace is frozen: the recorded split goes into a new one, the loaded one unchanged
    capture["baseline"]["split"] = {
        "method": "sys.monitoring PY_START/PY_RETURN local events on one code object per run",
        "blocks": 10, "calls_per_run": 100, "call_ns": call_ns, "call_low_ns": 99_000,
        "call_high_ns": 101_000, "calibration": {"in_band_ns": 120, "per_invocation_ns": 400},
        "functions": [{"name": n, "inclusive_ns": v[0], "low_ns": v[1], "high_ns": v[2],
                       "invocations_per_call": 1} for n, v in frames.items()]}
    return dataclasses.replace(trace, metadata={**trace.metadata, "traceview": capture})


def test_a_recorded_split_gives_measured_functions_and_categories_summing_to_the_call():
    r = traceview.explain(_with_split())
    d = json.loads(to_json(r))["unprofiled"]
    assert KEYS <= set(d)
    assert d["method"].startswith("measured: sys.monitoring")
    assert d["call_ns"] == 100_000 and (d["low_ns"], d["high_ns"]) == (99_000, 101_000)
    assert sum(d["categories"].values()) == 100_000 and "profiler" not in d["categories"]
    names = [f["name"] for f in d["functions"]]
    assert names == ["flag_gems/ops/add.py(44): add", "flag_gems/utils/libentry.py(659): run"]
    run = d["functions"][1]
    assert (run["inclusive_ns"], run["low_ns"], run["high_ns"]) == (30_000, 29_000, 31_000)
    assert run["profiled_ns"] > run["inclusive_ns"]
    # the names are the trace's own frames
    tree = json.loads(to_json(r))["calls"]["tree"]
    seen = set()
    stack = list(tree)
    while stack:
        n = stack.pop()
        seen.add(n["name"])
        stack += n["children"]
    assert set(names) <= seen


def test_the_report_round_trips_through_json():
    r = traceview.explain(_with_split())
    assert from_json(to_json(r)).unprofiled == r.unprofiled


def test_the_call_alone_gives_the_profiled_shares_model(tmp_path):
    r = traceview.explain(traceview.load(str(ADD)))
    u = r.unprofiled
    assert u.method.startswith("profiled-shares model")
    base = r.capture["baseline"]["full_api_ns_p50"]
    assert u.call_ns == base and sum(u.categories.values()) == base
    assert all(f.low_ns is None and f.method == "profiled-shares model" for f in u.functions)
    assert all(0 <= f.inclusive_ns <= base for f in u.functions)
    # one ratio for every figure: the unprofiled call over the profiled call without the
    # profiler's own time (the tree's time is the typical call's: within 3% of the p50s)
    prof_own = u.profiled_categories.get("profiler", 0)
    ratio = base / (u.profiled_call_ns - prof_own)
    for f in u.functions:
        assert abs(f.inclusive_ns - f.profiled_ns * ratio) <= 0.03 * f.profiled_ns * ratio + 1
    cats = {k: v for k, v in u.profiled_categories.items() if k != "profiler"}
    for k, v in u.categories.items():  # the shares are the profiled shares
        assert abs(v / base - cats[k] / sum(cats.values())) <= 0.02, k


def test_unprofiled_call_option_overrides_and_reaches_any_trace():
    plain = FIX / "shape_loop_sync.json.gz"
    r = traceview.explain(traceview.load(str(plain)))
    assert r.unprofiled.method is None and "no unprofiled figure" in r.unprofiled.note
    r2 = traceview.explain(traceview.load(str(plain)), Options(unprofiled_call=20_000))
    assert r2.unprofiled.call_ns == 20_000 and sum(r2.unprofiled.categories.values()) == 20_000
    assert r2.unprofiled.call_source == "--unprofiled-call"


@pytest.mark.parametrize("fmt", ["text", "md"])
def test_text_and_markdown_show_it(fmt):
    out = CliRunner().invoke(app, ["explain", str(ADD), "-f", fmt, "--unprofiled-call",
                                   "100us", "--width", "120"])
    assert out.exit_code == 0, out.output
    assert "Without the profiler a call takes 100 us" in out.output
    assert "categories unprofiled (sum = the call)" in out.output


def test_a_bad_unprofiled_call_is_one_line_exit_2():
    out = CliRunner().invoke(app, ["explain", str(ADD), "--unprofiled-call", "fast"])
    assert out.exit_code == 2
    assert "Traceback" not in out.output


def test_the_verdict_judges_the_unprofiled_call_where_the_split_was_measured():
    """Profiled, the FlagGems add call is 718 us around a 1.2 us kernel: host-bound. With
    a measured split whose call is 2 us, the device is busy most of the real call: the
    verdict is device-bound, says it is the call without the profiler, and its idle time
    is that call less the kernel (counted here from the report's own figures)."""
    from traceview.units import fmt_ns, fmt_pct

    r = traceview.explain(_with_split(call_ns=2_000))
    v = next(f for f in r.findings if f.id in ("host-bound", "device-bound"))
    kernel = r.calls.stats["kernel_ns"].p50
    idle = 2_000 - kernel
    assert idle / 2_000 < 0.5 and v.id == "device-bound", v.message
    assert v.message == (
        f"device-bound: without the profiler the device is busy {fmt_pct(1 - idle / 2_000)} of "
        f"a typical call (2 us; profiled {fmt_ns(r.calls.stats['api_ns'].p50)}); it waits for "
        f"the host {fmt_ns(idle)} of it")
    plain = traceview.explain(traceview.load(str(ADD)))
    assert next(f.id for f in plain.findings if f.id.endswith("-bound")) == "host-bound"
