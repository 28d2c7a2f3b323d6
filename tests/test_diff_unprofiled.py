"""diff leads with unprofiled figures, never judges speed from profiled ones, shows code path."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from traceview.cli.app import app
from traceview.multi.compare import diff_reports as _diff_reports
from traceview.multi.compare import load_report
from traceview.report.schema import from_dict


def diff_reports(before, after, *args, **kw):
    """The tests edit the JSON form (a slower machine, a function gone): back to Reports."""
    return _diff_reports(from_dict(before), from_dict(after), *args, **kw)

FIX = Path(__file__).resolve().parents[1] / "fixtures"
GEMS = FIX / "flag_gems_add_16x4096_bf16.json.gz"


@pytest.fixture(scope="module")
def gems() -> dict:
    return load_report(GEMS).to_dict()


def _raw_per_process(path: Path) -> list[int]:
    meta = json.loads(gzip.decompress(path.read_bytes()))["traceview"]
    return [p["full_api_ns_p50"] for p in meta["baseline"]["per_process"]]


def test_captures_of_three_processes_are_too_few_to_tell(gems):
    d = diff_reports(gems, gems)
    u = d.unprofiled
    assert u is not None and u["paired"] is False
    f = u["figures"][0]
    assert f["before_ns"] == f["after_ns"] == _raw_per_process(GEMS)
    assert f["ci_low_ns"] is None and f["verdict"] == "cannot tell"
    assert d.as_dict()["verdict"].startswith("too few processes to tell: 3 and 3 fresh")


def _ab_doc(a, b):
    return {"schema": "traceview.ab/1", "method": "m", "sides": {},
            "comparisons": {"full_api_ns_p50": {"a_ns": a, "b_ns": b}}}


def _slower(report: dict, factor: float) -> dict:
    """The same report with every per-call and function figure scaled (a slower machine)."""
    r = copy.deepcopy(report)
    for row in r["calls"]["per_call"]:
        m = row["metrics"]
        for k in ("api_ns", "pre_launch_ns", "host_overhead_ns"):
            if m.get(k) is not None:
                m[k] = int(m[k] * factor)
    api = r["calls"]["stats"]["api_ns"]
    api["p50"] = int(api["p50"] * factor)
    for f in r["host"]["functions"]:
        f["self_ns"], f["total_ns"] = int(f["self_ns"] * factor), int(f["total_ns"] * factor)
        for k in ("inclusive_ns_per_call", "self_ns_per_call", "call_ns_per_call"):
            if f.get(k) is not None:
                f[k] = int(f[k] * factor)
    r["host"]["functions"] = [f for f in r["host"]["functions"]
                              if "elementwise_dtypes" not in f["name"]]
    return r


def test_ab_data_leads_and_profiled_disagreement_is_named(gems):
    after = _slower(gems, 1.5)
    a = [100_000, 120_000, 90_000, 130_000, 110_000, 95_000, 105_000, 125_000]
    b = [x - 10_000 + (i % 3) * 500 for i, x in enumerate(a)]
    d = diff_reports(gems, after, ab=_ab_doc(a, b)).as_dict()
    assert d["unprofiled"]["paired"] is True
    diffs = sorted(y - x for x, y in zip(a, b, strict=True))
    assert d["unprofiled"]["figures"][0]["after_ns"] == b
    assert diffs[0] < 0 and diffs[-1] < 0
    assert d["verdict"].startswith("after faster by ") and "8 of 8 rounds" in d["verdict"]
    api = next(c for c in d["comparisons"] if c["metric"] == "calls.api_ns.p50")
    assert api["significant"] and api["delta"] > 0  # profiled: after looks slower
    assert d["agreement"] == "disagree" and "The profiled calls disagree" in d["verdict"]
    assert "different machine speeds" in d["verdict"]
    # the verdict's claim cites the machine-speed factor it states, and holds
    from traceview.report.claims import check_all, from_json

    claims = [from_json(c) for c in d["claims"]]
    assert check_all(claims, d) == []
    assert claims[0].figure("speed.factor").path == "/code_path/machine_speed/factor"
    assert [c.id for c in claims] == ["diff-verdict", "diff-machine-speed"]
    assert claims[1].text == d["code_path"]["machine_speed"]["note"]


def test_no_unprofiled_data_means_no_speed_verdict(gems):
    bare = copy.deepcopy(gems)
    bare["trace"]["capture"] = None
    d = diff_reports(bare, _slower(bare, 1.5)).as_dict()
    assert d["unprofiled"] is None
    assert d["verdict"].startswith("no speed verdict")
    assert " slower" not in d["verdict"] and " faster" not in d["verdict"]


def test_code_path_gone_function_and_machine_speed_note(gems):
    after = _slower(gems, 1.5)
    cp = diff_reports(gems, after).code_path
    raw = next(f for f in gems["host"]["functions"] if "elementwise_dtypes" in f["name"])
    row = next(r for r in cp["functions"] if "elementwise_dtypes" in r["function"])
    assert row["status"] == "gone*"  # the fixture's list is cut to its top functions
    # explain's own per-warm-call figure (p50 over the warm calls holding it)
    assert row["before_inclusive_ns_per_call"] == raw["inclusive_ns_per_call"]
    assert row["after_inclusive_ns_per_call"] is None
    assert cp["functions"][0]["status"] != "moved"  # what went comes first
    speed = cp["machine_speed"]
    assert speed["uniform"] and abs(speed["factor"] - 1.5) < 0.01
    assert "different machine speeds" in speed["note"]


def test_diff_cli_with_ab_file_at_80_columns(tmp_path, gems):
    ab_file = tmp_path / "ab.json"
    a = [100_000 + 1000 * i for i in range(8)]
    ab_file.write_text(json.dumps(_ab_doc(a, [x + 7000 for x in a])))
    r = CliRunner().invoke(app, ["diff", str(GEMS), str(GEMS), "--ab", str(ab_file),
                                 "--width", "80"])
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert max(len(line) for line in out.splitlines()) <= 80
    assert out.index("unprofiled: the speed verdict") < out.index("profiled calls: diagnosis")
    assert "after slower by 7 us per call" in out
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    r = CliRunner().invoke(app, ["diff", str(GEMS), str(GEMS), "--ab", str(bad)])
    assert r.exit_code == 2 and "not a traceview ab result" in r.output


def test_a_report_saved_before_the_per_call_keys_falls_back_to_window_totals(gems):
    """A report from before ``inclusive_ns_per_call`` existed (``tree_warm_calls`` and the
    per-call keys absent): each function's figures are its window totals / calls."""
    old = copy.deepcopy(gems)
    old["calls"].pop("tree_warm_calls")
    for f in old["host"]["functions"]:
        for key in ("inclusive_ns_per_call", "self_ns_per_call", "calls_with", "few_calls"):
            f.pop(key)
    from traceview.multi.codepath import function_figures, function_identity

    figs, _ = function_figures(from_dict(old))
    calls = gems["calls"]["count"]
    raw = next(f for f in gems["host"]["functions"] if "elementwise_dtypes" in f["name"])
    got = figs[function_identity(raw["name"])]
    assert got.inclusive_ns_per_call == raw["total_ns"] / calls
    assert got.self_ns_per_call == raw["self_ns"] / calls
    # the same report with the keys: explain's per-warm-call figures
    new, _ = function_figures(from_dict(gems))
    assert new[function_identity(raw["name"])].inclusive_ns_per_call == raw["inclusive_ns_per_call"]
