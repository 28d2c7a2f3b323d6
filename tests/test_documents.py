"""Every document's version in one field, and old versions read back (``documents``).

The saved ab results in ``fixtures/`` and ``tests/data/`` were written by version 1
(``"schema": "traceview.ab/1"``); they must read as today's layout, the documents
themselves unedited, and a version this release does not know must be one line.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from traceview import documents
from traceview.documents import READABLE, VERSIONS, stamp, upgrade
from traceview.errors import UsageError
from traceview.multi.unprofiled import load_ab

ROOT = Path(__file__).resolve().parent.parent
# ab_h200_planted_delays.json is the calibration's record of rounds, not an ab result
SAVED_AB = sorted(p for p in ROOT.glob("fixtures/ab_*.json")
                  if p.name != "ab_h200_planted_delays.json") + [ROOT / "tests/data/ab_add_cpu.json"]


def test_one_version_field_and_every_written_version_is_read():
    for kind, v in VERSIONS.items():
        assert stamp(kind) == {"schema_version": v}
        assert v == max(READABLE[kind])


@pytest.mark.parametrize("path", SAVED_AB, ids=lambda p: p.name)
def test_version_1_ab_results_read_as_version_2(path):
    doc = json.loads(path.read_text())
    assert doc["schema"] == "traceview.ab/1"
    kept = copy.deepcopy(doc)
    new = upgrade(doc, "ab")
    assert doc == kept  # never edited
    assert list(new)[0] == "schema_version" and new["schema_version"] == 2
    assert "schema" not in new
    assert {k: v for k, v in new.items() if k != "schema_version"} == \
        {k: v for k, v in doc.items() if k != "schema"}
    assert upgrade(new, "ab") is new  # today's layout is itself
    if path.name != "loop_h200_flaggems_add_same_process.json":
        assert load_ab(path)["schema_version"] == 2  # diff --ab reads it


@pytest.mark.parametrize("path", SAVED_AB, ids=lambda p: p.name)
def test_saved_ab_results_read_through_the_typed_layout(path):
    from traceview.documents import builtins
    from traceview.multi.ab_result import read_ab

    doc = upgrade(json.loads(path.read_text()), "ab")
    typed = read_ab(doc)
    assert set(typed.comparisons) <= {"full_api_ns_p50", "amortized_submit_ns",
                                      "amortized_ns", "device_ns"}
    assert json.loads(json.dumps(builtins(typed))) == {
        **doc, "kernels_used": doc.get("kernels_used"), "clusters": doc.get("clusters"),
        "splits": doc.get("splits")}
    bad = {**doc, "comparisons": {**doc["comparisons"], "device_ns": {"rounds": "3"}}}
    with pytest.raises(UsageError, match="comparisons"):
        read_ab(bad)


def test_the_saved_serve_document_reads_through_its_layout():
    from traceview.documents import builtins
    from traceview.serve.runner import as_written, read_serve

    doc = upgrade(json.loads((ROOT / "tests/data/serve_tiny_cpu.json").read_text()), "serve")
    typed = read_serve(doc)
    assert typed.complete and typed.measured and typed.stopped is None
    assert len(typed.variants) == 2 and typed.ab is not None
    assert builtins(typed) == doc and list(as_written(doc)) == list(doc)
    with pytest.raises(UsageError, match="measured"):
        as_written({**doc, "measured": "yes"})


def test_serve_and_capture_version_1():
    serve = json.loads((ROOT / "tests/data/serve_tiny_cpu.json").read_text())
    assert upgrade(serve, "serve")["schema_version"] == 2
    cap = {"schema": 1, "kind": "warm", "op": "mul"}
    assert upgrade(cap, "capture") == {"schema_version": 2, "kind": "warm", "op": "mul"}


@pytest.mark.parametrize(("kind", "field"), [("check", "traceview_check"),
                                             ("cache_check", "traceview_cache_check"),
                                             ("check_layouts", "traceview_check_layouts")])
def test_check_documents_version_1_name_their_kind_in_the_field(kind, field):
    old = {field: 1, "op": "mul", "rows": []}
    kept = copy.deepcopy(old)
    assert upgrade(old, kind) == {"schema_version": 2, "op": "mul", "rows": []}
    assert old == kept
    with pytest.raises(UsageError):
        upgrade({field: 2, "op": "mul"}, kind)  # the old field only ever said 1


def test_the_checks_write_todays_version():
    from traceview.checks import cache_check, failure, layouts
    from traceview.runner.outcome import Outcome
    from traceview.workload.config import CaptureConfig

    config = CaptureConfig(op="mul", shapes=((4,), (4,)), device="cpu")
    out = Outcome(status="wrong", value={"comparison": {"wrong": 1, "total": 4}})
    rep = failure.report(config, out)
    assert list(rep)[0] == "schema_version" and rep["schema_version"] == VERSIONS["check"]
    assert upgrade(rep, "check") is rep
    assert cache_check.as_json(config, [])["schema_version"] == VERSIONS["cache_check"]
    assert layouts.document(config, [])["schema_version"] == VERSIONS["check_layouts"]


@pytest.mark.parametrize("kind", list(VERSIONS))
@pytest.mark.parametrize("bad", [None, 0, 99, "2", 2.0, True])
def test_an_unknown_version_is_one_line(kind, bad):
    doc = {} if bad is None else {"schema_version": bad}
    with pytest.raises(UsageError) as e:
        upgrade(doc, kind)
    msg = str(e.value)
    assert "\n" not in msg and documents.NOUNS[kind] in msg and f"schema_version {bad!r}" in msg
