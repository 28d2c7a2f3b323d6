"""``explain --annotate``: the original events plus traceview's tracks, checked from the
written file's raw events (not from the code that wrote them)."""

from __future__ import annotations

import gzip
import json
import os
from collections import defaultdict
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import traceview
from conftest import FIXTURES
from rawcount import length, union
from traceview.cli.app import app
from traceview.render.annotate import AddedSlice, pack

runner = CliRunner()
TRAIN = FIXTURES / "train_llama_eager.json.gz"
SMALL = FIXTURES / "torch_mul_1x4096_f32.json.gz"


def ns(v) -> int:
    return int(Decimal(str(v)) * 1000)


@pytest.fixture(scope="module")
def annotated(tmp_path_factory):
    out = tmp_path_factory.mktemp("ann") / "train.annotated.json.gz"
    r = runner.invoke(app, ["explain", str(TRAIN), "--annotate", str(out), "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(gzip.decompress(out.read_bytes()))
    return out, doc, json.loads(r.stdout)


def added(doc):
    return [e for e in doc["traceEvents"] if e.get("cat") == "traceview"]


def tracks(doc):
    """track name -> its X events, from the raw file (names from the M events)."""
    ev = added(doc)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
             if e["ph"] == "M" and e["name"] == "thread_name"}
    out = defaultdict(list)
    for e in ev:
        if e["ph"] == "X":
            out[names[(e["pid"], e["tid"])]].append(e)
    return out


def spans(events):
    return [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events]


def test_the_original_events_are_all_there_unchanged(annotated):
    _, doc, _ = annotated
    orig = json.loads(gzip.decompress(TRAIN.read_bytes()))
    mine = [e for e in doc["traceEvents"] if e.get("cat") != "traceview"]
    assert mine == orig["traceEvents"]
    assert {k: v for k, v in doc.items() if k != "traceEvents"} == \
        {k: v for k, v in orig.items() if k != "traceEvents"}


def test_the_annotated_trace_explains_to_the_same_figures(annotated):
    out, _, report = annotated
    again = runner.invoke(app, ["explain", str(out), "--format", "json"])
    assert again.exit_code == 0
    d = json.loads(again.stdout)
    for key in ("window", "device", "host", "breakdown", "launches", "calls", "findings",
                "diagnostics", "threads", "steps"):
        assert d[key] == report[key], key
    assert d["trace"]["slices"] == report["trace"]["slices"]
    assert d["trace"]["metadata"] == report["trace"]["metadata"]


def test_each_steps_critical_path_slices_add_up_to_its_wall_time(annotated):
    _, doc, report = annotated
    path = tracks(doc)["traceview: critical path"]
    by_step = defaultdict(list)
    for e in path:
        by_step[e["args"]["step"]].append(e)
    steps = report["steps"]["steps"]
    assert sorted(by_step) == sorted(s["index"] for s in steps)
    for s in steps:
        sp = sorted(spans(by_step[s["index"]]))
        assert sum(b - a for a, b in sp) == s["wall_ns"] == s["end_ns"] - s["start_ns"]
        # they tile the step: no gap, no overlap
        assert sp[0][0] == s["start_ns"] and sp[-1][1] == s["end_ns"]
        assert all(sp[i][1] == sp[i + 1][0] for i in range(len(sp) - 1))
        # and by item they are the report's critical path
        got = defaultdict(int)
        for e in by_step[s["index"]]:
            got[(e["args"]["kind"], e["args"]["resource"], e["name"])] += ns(e["dur"])
        want = {(p["kind"], p["resource"], p["what"]): p["ns"] for p in s["critical_path"]}
        assert dict(got) == want


def raw_nests(sl):
    """Perfetto's rule, written again here: sorted by start (longer first), a slice that
    starts inside an open slice ends inside it too."""
    open_ends = []
    for a, b in sorted(sl, key=lambda x: (x[0], -(x[1] - x[0]))):
        while open_ends and open_ends[-1] <= a:
            open_ends.pop()
        if open_ends and b > open_ends[-1]:
            return False
        open_ends.append(b)
    return True


def test_every_added_track_nests_properly_and_flat_tracks_never_overlap(annotated):
    _, doc, _ = annotated
    t = tracks(doc)
    assert {"traceview: calls", "traceview: steps and phases", "traceview: critical path",
            "traceview: device idle"} <= set(t)
    for name, events in t.items():
        assert raw_nests(spans(events)), name
        assert all(ns(e["dur"]) >= 0 for e in events)
    for name in ("traceview: critical path", "traceview: device idle", "traceview: calls"):
        sp = sorted(spans(t[name]))
        assert all(sp[i][1] <= sp[i + 1][0] for i in range(len(sp) - 1)), name


def test_phases_tile_each_step_inside_its_slice(annotated):
    _, doc, report = annotated
    ev = tracks(doc)["traceview: steps and phases"]
    for s in report["steps"]["steps"]:
        phases = [e for e in ev if "phase" in e["args"]
                  and s["start_ns"] <= ns(e["ts"]) < s["end_ns"]]
        walls = defaultdict(int)
        for a, b in spans(phases):
            assert s["start_ns"] <= a and b <= s["end_ns"]
        for e in phases:
            walls[e["args"]["phase"]] += ns(e["dur"])
        assert dict(walls) == {p["phase"]: p["wall_ns"] for p in s["phases"]}
        assert sum(walls.values()) == s["wall_ns"]


def test_device_idle_slices_are_the_steps_idle_by_cause(annotated):
    _, doc, report = annotated
    ev = tracks(doc)["traceview: device idle"]
    dev = [e for e in doc["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy",
                                                           "gpu_memset")]
    busy = union([[ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])] for e in dev])
    for s in report["steps"]["steps"]:
        mine = [e for e in ev if s["start_ns"] <= ns(e["ts"]) < s["end_ns"]]
        step_busy = length([[max(a, s["start_ns"]), min(b, s["end_ns"])] for a, b in busy
                            if min(b, s["end_ns"]) > max(a, s["start_ns"])])
        total = sum(ns(e["dur"]) for e in mine)
        assert total == s["end_ns"] - s["start_ns"] - step_busy == s["device_idle_ns"]
        got = defaultdict(int)
        for e in mine:
            got[(e["args"]["waited_for"], e["args"]["what"])] += ns(e["dur"])
        assert dict(got) == {(c["resource"], c["what"]): c["ns"] for c in s["idle_causes"]}


@pytest.mark.parametrize("block", [1, 3, 64])
def test_idle_stretches_made_a_few_at_a_time_are_the_same(annotated, block, monkeypatch,
                                                         tmp_path):
    """A compile's gap can span millions of host segments: they are made a bounded block
    at a time, and the blocks' edges (inside a gap, between a gap's segments and its
    launch latency) leave no trace in the file."""
    import traceview.render.annotate as annotate

    monkeypatch.setattr(annotate, "STRETCH_BLOCK", block)
    out = tmp_path / "small_blocks.json.gz"
    r = runner.invoke(app, ["explain", str(TRAIN), "--annotate", str(out), "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(gzip.decompress(out.read_bytes()))
    _, whole, report = annotated
    assert doc == whole
    idle = tracks(doc)["traceview: device idle"]
    dev = [e for e in doc["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy",
                                                           "gpu_memset")]
    busy = union([[ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])] for e in dev])
    for s in report["steps"]["steps"]:
        step_busy = length([[max(a, s["start_ns"]), min(b, s["end_ns"])] for a, b in busy
                            if min(b, s["end_ns"]) > max(a, s["start_ns"])])
        assert sum(ns(e["dur"]) for e in idle if s["start_ns"] <= ns(e["ts"]) < s["end_ns"]) \
            == s["end_ns"] - s["start_ns"] - step_busy


def test_calls_track_has_one_slice_per_call_with_kind_cold_and_outlier(annotated):
    _, doc, report = annotated
    ev = tracks(doc)["traceview: calls"]
    rows = report["calls"]["per_call"]
    assert len(ev) == len(rows)
    by_index = {e["args"]["index"]: e for e in ev}
    for c in rows:
        e = by_index[c["index"]]
        assert (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) == (c["start_ns"], c["end_ns"])
        assert (e["args"]["kind"], e["args"]["cold"], e["args"]["outlier"]) == \
            (c["kind"], c["cold"], c["outlier"])


def test_findings_are_instants_and_flows_land_inside_the_work_waited_on(annotated):
    _, doc, report = annotated
    ev = added(doc)
    inst = [e for e in ev if e["ph"] == "i"]
    assert sorted(e["name"] for e in inst) == sorted(f["id"] for f in report["findings"])
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f"}
    assert starts and set(starts) == set(ends)
    assert all(e.get("bp") == "e" for e in ends.values())
    orig = [e for e in doc["traceEvents"] if e.get("cat") != "traceview" and e.get("ph") == "X"]
    by_thread = defaultdict(list)
    for e in orig:
        by_thread[(e.get("pid"), e.get("tid"))].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])))
    path = spans(tracks(doc)["traceview: critical path"])
    for fid, f in ends.items():
        t = ns(f["ts"])
        assert any(a <= t <= b for a, b in by_thread[(f["pid"], f["tid"])]), fid
        s0 = ns(starts[fid]["ts"])
        assert any(a <= s0 < b for a, b in path)


def test_a_trace_without_steps_gets_calls_idle_and_findings(tmp_path):
    out = tmp_path / "small.json"
    r = runner.invoke(app, ["explain", str(SMALL), "--annotate", str(out), "--format", "json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    doc = json.loads(out.read_text())
    t = tracks(doc)
    assert len(t["traceview: calls"]) == report["calls"]["count"]
    idle = sum(b - a for a, b in spans(t["traceview: device idle"]))
    assert idle == report["device"]["idle_ns"]
    again = traceview.analyze(out)
    assert again.to_dict()["device"] == report["device"]
    assert again.to_dict()["calls"] == report["calls"]


@pytest.mark.parametrize("name", ["train_llama_reduce_overhead.json.gz",
                                  "generate_llama_16_tokens.json.gz"])
def test_other_real_traces_keep_the_invariants(name, tmp_path):
    out = tmp_path / "a.json.gz"
    r = runner.invoke(app, ["explain", str(FIXTURES / name), "--annotate", str(out),
                            "--format", "json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    doc = json.loads(gzip.decompress(out.read_bytes()))
    t = tracks(doc)
    for events in t.values():
        assert raw_nests(spans(events))
    idle = t["traceview: device idle"]
    steps = (report["steps"] or {}).get("steps") or []
    for s in steps:
        assert sum(b - a for a, b in spans(
            [e for e in t["traceview: critical path"] if e["args"]["step"] == s["index"]])) \
            == s["wall_ns"]
        assert sum(b - a for a, b in spans(
            [e for e in idle if s["start_ns"] <= ns(e["ts"]) < s["end_ns"]])) \
            == s["device_idle_ns"]
    if not steps:
        assert sum(b - a for a, b in spans(idle)) == report["device"]["idle_ns"]
    again = json.loads(runner.invoke(app, ["explain", str(out), "--format", "json"]).stdout)
    assert {k: v for k, v in again.items() if k != "trace"} == \
        {k: v for k, v in report.items() if k != "trace"}


def test_written_atomically_and_never_over_the_input(tmp_path):
    src = tmp_path / "in.json.gz"
    src.write_bytes(SMALL.read_bytes())
    r = runner.invoke(app, ["explain", str(src), "--annotate", str(src)])
    assert r.exit_code == 2 and "input" in r.output
    r = runner.invoke(app, ["explain", str(src), "--annotate", str(tmp_path / "no" / "x.json")])
    assert r.exit_code == 2 and r.output.count("\n") == 1
    r = runner.invoke(app, ["explain", str(src), "--annotate", str(tmp_path / "x.svg")])
    assert r.exit_code == 2
    out = tmp_path / "ok.json.gz"
    r = runner.invoke(app, ["explain", str(src), "--annotate", str(out)])
    assert r.exit_code == 0
    assert sorted(os.listdir(tmp_path)) == ["in.json.gz", "ok.json.gz"]  # no temp file left


def test_several_traces_refuse_annotate():
    r = runner.invoke(app, ["explain", str(SMALL), str(SMALL), "--annotate", "x.json"])
    assert r.exit_code == 2 and "single trace" in r.output


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 300)), max_size=40))
def test_pack_gives_tracks_that_nest_and_keep_every_slice(pairs):
    items = [AddedSlice("calls", str(i), a, a + d, {}) for i, (a, d) in enumerate(pairs)]
    packed = pack(items)
    assert sorted(s.name for t in packed for s in t) == sorted(s.name for s in items)
    for t in packed:
        assert raw_nests([(s.start_ns, s.end_ns) for s in t])
