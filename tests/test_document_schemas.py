"""Every typed document's JSON Schema is in docs/schemas/, and its layout cannot change
without the table of versions (``documents.SCHEMA_HASHES``) changing with it."""

from __future__ import annotations

import importlib.util
import json
import sys

import msgspec
import pytest

from conftest import ROOT
from traceview import documents

_spec = importlib.util.spec_from_file_location("write_document_schemas",
                                               ROOT / "tools" / "write_document_schemas.py")
assert _spec is not None and _spec.loader is not None
schemas = importlib.util.module_from_spec(_spec)
sys.modules["write_document_schemas"] = schemas
_spec.loader.exec_module(schemas)

KINDS = sorted(documents.VERSIONS)
#: real reports of the checks, written by ``traceview capture --device cpu ... --format
#: json`` (``--check-cache``, ``--check-layouts``, and the isolated check on
#: tests/broken_kernels.py's wrong and crashing kernels), and the Proton goldens
CHECK_REPORTS = ROOT / "tests" / "data" / "check_reports"
SAMPLES = [
    ("check", CHECK_REPORTS / "check_wrong_broadcast_cpu.json"),
    ("check", CHECK_REPORTS / "check_crashed_cpu.json"),
    ("check", CHECK_REPORTS / "check_cache_wrong_promotion_cpu.json"),
    ("cache_check", CHECK_REPORTS / "cache_check_add_cpu.json"),
    ("check_layouts", CHECK_REPORTS / "check_layouts_add_cpu.json"),
    ("check_layouts", CHECK_REPORTS / "check_layouts_segfault_cpu.json"),
    *(("proton", p) for p in sorted((ROOT / "tests" / "golden").glob("proton_*.json"))),
]


def test_every_kind_has_a_typed_layout_and_a_recorded_hash():
    """Every document kind traceview writes (``VERSIONS``) has a layout, a schema in
    docs/schemas/ and a recorded hash: a new kind without them fails here."""
    missing = sorted(set(documents.VERSIONS) - set(documents.LAYOUTS))
    assert not missing, f"document kinds without a typed layout in documents.LAYOUTS: {missing}"
    assert set(documents.SCHEMA_HASHES) == set(documents.LAYOUTS) == set(documents.VERSIONS)
    assert {p.stem for p in (ROOT / "docs" / "schemas").glob("*.json")} == set(documents.VERSIONS)


def test_a_kind_without_a_layout_is_caught(monkeypatch):
    monkeypatch.setitem(documents.VERSIONS, "new_kind", 1)  # type: ignore[index]
    with pytest.raises(AssertionError, match="without a typed layout.*new_kind"):
        test_every_kind_has_a_typed_layout_and_a_recorded_hash()


def test_the_samples_cover_every_kind_without_a_fixture_test():
    """explain's layout is checked on the fixtures below; the kinds whose writers are
    tested elsewhere (ranks, diff, ab, serve, capture) decode their documents there."""
    assert {kind for kind, _ in SAMPLES} == {"check", "cache_check", "check_layouts", "proton"}
    verdicts = {json.loads(p.read_text()).get("verdict") for k, p in SAMPLES if k == "check"}
    assert verdicts == {"wrong", "crashed"}
    statuses = {r["status"] for k, p in SAMPLES if k == "check_layouts"
                for r in json.loads(p.read_text())["rows"]}
    assert {"pass", "crashed"} <= statuses
    formats = {json.loads(p.read_text())["format"] for k, p in SAMPLES if k == "proton"}
    assert formats == {"proton-trace", "proton-tree"}


@pytest.mark.parametrize("kind, path", SAMPLES, ids=[p.name for _, p in SAMPLES])
def test_a_written_document_decodes_strictly_and_encodes_to_the_same_bytes(kind, path):
    """The checks write plain dicts and Proton its report's fields: the layout is what
    they write, key by key and in order (``json.dumps(doc, indent=2)``, as both write),
    and a key it does not know is refused."""
    written = path.read_text()
    layout = schemas.layout(kind)
    doc = msgspec.json.decode(written, type=layout, strict=True)
    assert json.dumps(msgspec.to_builtins(doc), indent=2) + "\n" == written
    assert documents.read(json.loads(written), kind, layout) == doc
    with pytest.raises(msgspec.ValidationError, match="unknown field"):
        msgspec.json.decode(written.replace('"schema_version"', '"extra": 1, "schema_version"', 1),
                            type=layout, strict=True)


@pytest.mark.parametrize("kind", KINDS)
def test_the_schema_in_docs_is_the_layouts(kind):
    path = ROOT / "docs" / "schemas" / f"{kind}.json"
    assert path.read_text() == schemas.text(kind), (
        f"docs/schemas/{kind}.json is not {documents.LAYOUTS[kind]}'s schema: run "
        "tools/write_document_schemas.py")


@pytest.mark.parametrize("kind", KINDS)
def test_a_layout_change_needs_its_version_and_hash_recorded(kind):
    version, recorded = documents.SCHEMA_HASHES[kind]
    assert version == documents.VERSIONS[kind], (
        f"{kind}: schema_version {documents.VERSIONS[kind]} has no recorded layout hash "
        f"(SCHEMA_HASHES says {version}): record {schemas.digest(kind)!r} for it")
    assert schemas.digest(kind) == recorded, (
        f"{kind}: the layout changed ({recorded} -> {schemas.digest(kind)}) but its version "
        f"({version}) and hash in documents.SCHEMA_HASHES did not: bump VERSIONS[{kind!r}] "
        "if a key was removed, moved or changed meaning, and record the new hash")


def test_an_unversioned_layout_change_is_caught(monkeypatch):
    """A field added to a layout, and nothing else changed: the hash test fails."""
    real = schemas.layout("ranks")

    class Changed(real):  # type: ignore[misc, valid-type]
        new_key: int = 0

    monkeypatch.setattr(schemas, "layout", lambda kind: Changed)
    with pytest.raises(AssertionError, match="the layout changed"):
        test_a_layout_change_needs_its_version_and_hash_recorded("ranks")


@pytest.mark.parametrize("kind", KINDS)
def test_each_schema_is_valid_json_schema_naming_its_version(kind):
    doc = json.loads((ROOT / "docs" / "schemas" / f"{kind}.json").read_text())
    assert f"schema_version {documents.VERSIONS[kind]}" in doc["$comment"]
    assert "$ref" in doc or "properties" in doc
    assert issubclass(schemas.layout(kind), msgspec.Struct)


@pytest.mark.parametrize("name", ["torch_mul_1x4096_f32.json.gz", "train_llama_eager.json.gz",
                                  "flaggems_sigmoid_65536_f32_split.json.gz",
                                  "generate_llama_16_tokens.json.gz"])
def test_the_explain_layout_is_the_written_document(name):
    """explain's JSON (written by ``report.model.to_dict``) decodes with its layout
    strictly, unknown keys refused, and encodes back to the same bytes: the schema in
    docs/schemas/explain.json describes exactly what is written."""
    import orjson

    import traceview
    from traceview.report.schema import document_layout, to_json

    written = to_json(traceview.analyze(ROOT / "fixtures" / name))
    doc = msgspec.json.decode(written, type=document_layout(), strict=True)
    again = orjson.dumps(orjson.loads(msgspec.json.encode(doc)),
                         option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n"
    assert again == written
    with pytest.raises(msgspec.ValidationError, match="unknown field"):
        msgspec.json.decode(written.replace(b'"schema_version"', b'"extra": 1, "schema_version"', 1),
                            type=document_layout(), strict=True)
