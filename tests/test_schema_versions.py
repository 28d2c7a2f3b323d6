"""The explain JSON's schemas: schema 3 is written; schema 1 (saved by traceview before
schema 2), schema 2 and schema 3 are read; any other is a one-line usage error (``docs/json.md``).

``tests/data/explain_schema1_shape_loop_two_ops.json.gz`` is ``traceview explain
fixtures/shape_loop_two_ops.json.gz --format json`` as the last schema-1 traceview wrote it
(two call kinds, an outlier, null per-call figures). The moves from schema 1 to 2 are
written out again here, by hand, from the documented list of metric names, so the
upgrade in ``report/schema.py`` is checked against an independent statement of them.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from traceview.cli.app import app
from traceview.errors import UsageError
from traceview.report.schema import SCHEMA_VERSION, from_dict, from_json, to_json

DATA = Path(__file__).parent / "data"
SCHEMA_1 = DATA / "explain_schema1_shape_loop_two_ops.json.gz"
FIXTURE = "shape_loop_two_ops.json.gz"
# docs/json.md: the per-call metrics of schema 1, which schema 2 moved.
METRICS = ("api_ns", "pre_launch_ns", "launch_api_ns", "launch_latency_ns", "kernel_ns",
           "kernel_only_ns", "copy_ns", "sync_ns", "device_busy_ns", "host_overhead_ns")
runner = CliRunner()


def _schema_1() -> dict:
    return orjson.loads(gzip.decompress(SCHEMA_1.read_bytes()))


def _nest(obj: dict, into: str) -> dict:
    """The metric keys of a schema-1 object under ``into``, where the first of them was."""
    out: dict = {}
    for k, v in obj.items():
        if k in METRICS:
            out.setdefault(into, {})[k] = v
        else:
            out[k] = v
    return out


def _moved_by_hand(doc: dict) -> dict:
    calls = _nest(doc["calls"], "stats")
    # schema 3 added each call's count of launches without a device record (0: schema 1
    # and 2 never checked), and the integrity and what-if blocks (absent: never computed)
    calls["per_call"] = [{**_nest(row, "metrics"), "launches_without_work": 0}
                         for row in calls["per_call"]]
    calls["kinds"] = [_nest(k, "stats") for k in calls["kinds"]]
    # schema 3 added the matches left out on other threads (none: earlier reports'
    # calls were every match, on one thread or measured on one)
    calls["elsewhere"] = []
    # ``unprofiled`` and ``claims`` came later in schema 2: null where no unprofiled figure
    # was recorded; no claims where none was saved (a report's sentences are its findings'
    # messages, read back as they were written); schema 3 added ``integrity`` and ``what_if``
    return {**doc, "schema_version": 3, "calls": calls, "unprofiled": None, "claims": [],
            "integrity": None, "what_if": []}


def _key_paths(x, path: str = "") -> set[str]:
    if isinstance(x, dict):
        return {path} | {p for k, v in x.items() for p in _key_paths(v, f"{path}.{k}")}
    if isinstance(x, list):
        return {p for v in x for p in _key_paths(v, f"{path}[]")}
    return {path}


def test_the_saved_file_is_schema_1_with_metrics_beside_fixed_keys():
    doc = _schema_1()
    assert doc["schema_version"] == 1 and SCHEMA_VERSION == 3
    calls = doc["calls"]
    assert set(METRICS) <= set(calls) and "stats" not in calls
    assert all(set(METRICS) <= set(row) and "metrics" not in row for row in calls["per_call"])
    assert len(calls["kinds"]) == 2 and all(set(METRICS) <= set(k) for k in calls["kinds"])
    assert any(row["kernel_ns"] is None for row in calls["per_call"]) or calls["outliers"]


def test_a_schema_1_report_reads_as_the_same_report_in_schema_2():
    """Read back and written again, a schema-1 report is byte for byte its hand-moved
    schema-2 form: every figure kept, only the documented keys moved, key order kept."""
    doc = _schema_1()
    r = from_json(gzip.decompress(SCHEMA_1.read_bytes()))
    assert r.schema_version == 3
    want = orjson.dumps(_moved_by_hand(doc), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    assert to_json(r) == want + b"\n"
    assert from_json(to_json(r)) == r
    kinds = {k["name"]: k for k in doc["calls"]["kinds"]}
    for kind in r.calls.kinds:  # spot checks straight from the saved file
        assert kind.stats["api_ns"].p50 == kinds[kind.name]["api_ns"]["p50"]
    assert [c.metrics["api_ns"] for c in r.calls.per_call] == [
        row["api_ns"] for row in doc["calls"]["per_call"]]
    assert r.calls.api_sync is not None
    assert r.calls.api_sync.p50 == doc["calls"]["api_sync_ns"]["p50"]  # a fixed key: in place


def test_no_key_of_schema_1_is_lost_by_todays_explain(fixture_reports):
    """Every key path of the saved report, moved to schema 2, is in today's output of the
    same trace: a key that is dropped or moved needs a new schema version and this file."""
    now = _key_paths(fixture_reports[FIXTURE].to_dict())
    lost = sorted(_key_paths(_moved_by_hand(_schema_1())) - now)
    assert not lost


def test_schema_2_has_no_object_mixing_fixed_and_metric_keys(fixture_reports):
    d = fixture_reports[FIXTURE].to_dict()
    calls = d["calls"]
    assert not set(METRICS) & set(calls) and set(calls["stats"]) == set(METRICS)
    for row in calls["per_call"] + calls["kinds"]:
        assert not set(METRICS) & set(row)
    assert all(set(row["metrics"]) == set(METRICS) for row in calls["per_call"])
    assert all(set(k["stats"]) == set(METRICS) for k in calls["kinds"])


def test_schema_2_reads_a_new_metric_and_a_new_fixed_key_apart(fixture_reports):
    """The point of schema 2: a metric added later lands in the stats, and a fixed key
    added later is not taken for a metric (schema 1 could tell them apart only by a list)."""
    d = json.loads(to_json(fixture_reports[FIXTURE]))
    stats = {"n": 3, "p50": 5, "p90": 6, "p99": 6, "min": 4, "max": 6, "mean": 5}
    d["calls"]["stats"]["future_ns"] = stats
    d["calls"]["kinds"][0]["stats"]["future_ns"] = stats
    d["calls"]["per_call"][0]["metrics"]["future_ns"] = 7
    d["calls"]["some_future_key"] = "text"
    d["calls"]["per_call"][0]["some_future_key"] = [1]
    d["calls"]["kinds"][0]["some_future_key"] = {"a": 1}
    r = from_dict(d)
    assert r.calls.stats["future_ns"].p50 == 5 and r.calls.kinds[0].stats["future_ns"].max == 6
    assert r.calls.per_call[0].metrics["future_ns"] == 7
    assert "some_future_key" not in r.calls.stats and "some_future_key" not in r.calls.kinds[0].stats
    assert "some_future_key" not in r.calls.per_call[0].metrics


def test_calls_read_from_keys_in_any_order_are_written_in_the_documented_order(
        fixture_reports):
    """The JSON writes the report's call rows as they are (orjson, field by field): a
    report read from a document whose call rows hold their keys in another order, and
    leave out the keys at their defaults, is written with every key, in the order of the
    rows of the report it came from."""
    want = json.loads(to_json(fixture_reports[FIXTURE]))
    defaults = {"kind": "", "cold_reason": None, "outlier": False, "outlier_reason": None,
                "api_sync_ns": None, "launches_without_work": 0}
    d = json.loads(to_json(fixture_reports[FIXTURE]))
    rows = d["calls"]["per_call"]
    d["calls"]["per_call"] = [
        {k: row[k] for k in reversed(row) if not (k in defaults and row[k] == defaults[k])}
        for row in rows]
    assert all(len(new) < len(row) for new, row in zip(d["calls"]["per_call"], rows,
                                                          strict=True))
    assert list(d["calls"]["per_call"][0])[0] != "index"
    got = json.loads(to_json(from_dict(d)))["calls"]["per_call"]
    assert [list(row.items()) for row in got] == [
        list(row.items()) for row in want["calls"]["per_call"]]


@pytest.mark.parametrize("version", [0, 4, 99, None, "2", True, 2.0])
def test_a_schema_it_does_not_know_is_a_usage_error(version):
    doc = _moved_by_hand(_schema_1())
    doc["schema_version"] = version
    if version is None:
        doc.pop("schema_version")
    with pytest.raises(UsageError) as e:
        from_json(orjson.dumps(doc))
    msg = str(e.value)
    assert "\n" not in msg and f"schema_version {version!r}" in msg and "1 and 2" in msg


@pytest.mark.parametrize("edit", [
    lambda d: d.update(calls=[1]),
    lambda d: d["calls"].update(per_call=[3]),
    lambda d: d["calls"].update(kinds="x"),
    lambda d: d["calls"]["per_call"][0].update(api_ns="fast"),
])
def test_a_damaged_schema_1_report_is_a_usage_error(edit):
    doc = _schema_1()
    edit(doc)
    with pytest.raises(UsageError) as e:
        from_json(orjson.dumps(doc))
    assert "\n" not in str(e.value) and "not an explain report" in str(e.value)


def test_diff_reads_a_schema_1_report_and_its_schema_2_copy_as_one(tmp_path):
    new = tmp_path / "schema2.json"
    new.write_bytes(to_json(from_json(gzip.decompress(SCHEMA_1.read_bytes()))))
    r = runner.invoke(app, ["diff", str(SCHEMA_1), str(new), "--format", "json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    api = next(c for c in got["comparisons"] if c["metric"] == "calls.api_ns.p50")
    walls = {row["api_ns"] for row in _schema_1()["calls"]["per_call"]}
    assert api["before"] == api["after"] and api["before"] in walls and api["delta"] == 0
    assert all(c["delta"] in (0, None) for c in got["comparisons"])


def test_diff_of_a_report_of_an_unknown_schema_is_one_line(tmp_path):
    doc = _moved_by_hand(_schema_1())
    doc["schema_version"] = 4
    p = tmp_path / "future.json"
    p.write_bytes(orjson.dumps(doc))
    r = runner.invoke(app, ["diff", str(p), str(p)])
    assert r.exit_code == 2 and r.stdout == ""
    line = r.stderr.strip()
    assert "\n" not in line and str(p) in line and "schema_version 4" in line
