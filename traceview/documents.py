"""Every document traceview writes, its version, and the one way old versions are read.

A document is JSON traceview writes for people's tools to read back: the explain report
(``docs/json.md``), the ranks view, ``diff``'s comparison, ``ab``'s result, ``serve``'s
document, capture's metadata block inside a trace and the correctness checks' reports
(the isolated check's failure report, the cache check's passing result, the layout
matrix) and the Proton report. Each has a typed layout (``LAYOUTS``) whose JSON Schema is
in ``docs/schemas/``, and says its layout's version in one field, ``schema_version`` (an integer), which changes only when a key is removed,
moves or changes meaning; new keys may appear at any time. ``VERSIONS`` is the table of
the versions written today; ``upgrade(doc, kind)`` brings a saved document of any version
this release reads to today's layout (a copy; the document itself is never edited) and
refuses, in one line, one it does not.

Older spellings of the version are read as versions: ``ab``'s ``"schema":
"traceview.ab/1"``, ``serve``'s ``"schema": "traceview.serve/1"`` and capture's
``"schema": 1`` are version 1 of their kind; version 2 of each is the same layout with
``schema_version`` in place of ``schema``. The checks' reports named their kind in their
version field (``"traceview_check": 1``, ``"traceview_cache_check": 1``,
``"traceview_check_layouts": 1``); version 2 of each is ``schema_version`` 2 in its place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

import msgspec

from traceview.errors import UsageError

T = TypeVar("T")

Kind = Literal["explain", "ranks", "diff", "ab", "serve", "capture", "check", "cache_check",
               "check_layouts", "proton"]
VERSION_FIELD = "schema_version"
#: kind -> the version written today
VERSIONS: dict[Kind, int] = {"explain": 3, "ranks": 2, "diff": 3, "ab": 2, "serve": 2,
                             "capture": 2, "check": 2, "cache_check": 2, "check_layouts": 2,
                             "proton": 1}
#: kind -> every version read (older ones through ``upgrade``)
READABLE: dict[Kind, tuple[int, ...]] = {"explain": (1, 2, 3), "ranks": (2,), "diff": (3,),
                                         "ab": (1, 2), "serve": (1, 2), "capture": (1, 2),
                                         "check": (1, 2), "cache_check": (1, 2),
                                         "check_layouts": (1, 2), "proton": (1,)}
#: kind -> its typed layout (a msgspec Struct, ``module:Class``, or ``module:function``
#: that builds it); every kind has one (``tests/test_document_schemas.py``), and its JSON
#: Schema (``msgspec.json.schema``) is in ``docs/schemas/<kind>.json``
LAYOUTS: dict[Kind, str] = {"explain": "traceview.report.schema:document_layout",
                            "ranks": "traceview.multi.ranks:RanksDocument",
                            "diff": "traceview.multi.compare:DiffDocument",
                            "ab": "traceview.multi.ab_result:ABDocument",
                            "serve": "traceview.serve.runner:ServeDocument",
                            "capture": "traceview.metadata:CaptureMeta",
                            "check": "traceview.checks.reports:CheckReport",
                            "cache_check": "traceview.checks.reports:CacheCheckResult",
                            "check_layouts": "traceview.checks.reports:LayoutsDocument",
                            "proton": "traceview.report.proton:document_layout"}
#: kind -> (version, the sha256 of its JSON Schema, canonical, first 16 hex digits): the
#: layout the version stands for. ``tests/test_document_schemas.py`` fails when a layout
#: changes and this table does not; a change that removes or moves a key or changes its
#: meaning bumps ``VERSIONS`` as well (``tools/write_document_schemas.py`` rewrites the
#: schemas and prints the new hashes)
SCHEMA_HASHES: dict[Kind, tuple[int, str]] = {"explain": (3, "7dc22e370250d874"),
                                              "ranks": (2, "bba7fcd3dbf5bdee"),
                                              "diff": (3, "1a19a462ba566b04"),
                                              "ab": (2, "cd72a3f64c00012d"),
                                              "serve": (2, "69803d1e45434852"),
                                              "capture": (2, "664b61ac4e9fda7d"),
                                              "check": (2, "45bd5634fa1e6f16"),
                                              "cache_check": (2, "1d7e2bfca453914d"),
                                              "check_layouts": (2, "adafa522878bc217"),
                                              "proton": (1, "52224f6e01285473")}
#: kind -> how a refusal names the document
NOUNS: dict[Kind, str] = {"explain": "an explain report", "ranks": "a ranks report",
                          "diff": "a diff report", "ab": "a traceview ab result",
                          "serve": "a traceview serve document",
                          "capture": "capture metadata",
                          "check": "a correctness check's failure report",
                          "cache_check": "a cache check's result",
                          "check_layouts": "a layout check's matrix",
                          "proton": "a Proton report"}
# the version-1 spellings of the field
_LEGACY: dict[Kind, tuple[str, object]] = {"ab": ("schema", "traceview.ab/1"),
                                           "serve": ("schema", "traceview.serve/1"),
                                           "capture": ("schema", 1),
                                           "check": ("traceview_check", 1),
                                           "cache_check": ("traceview_cache_check", 1),
                                           "check_layouts": ("traceview_check_layouts", 1)}


def stamp(kind: Kind) -> dict[str, int]:
    """The version field a new document of ``kind`` starts with."""
    return {VERSION_FIELD: VERSIONS[kind]}


def version(doc: dict[str, Any], kind: Kind) -> object:
    """The version ``doc`` says it is (read from a legacy spelling where it has one);
    whatever the field holds, checked by ``upgrade``."""
    key, v1 = _LEGACY.get(kind, (VERSION_FIELD, None))
    if VERSION_FIELD in doc or key not in doc:
        return doc.get(VERSION_FIELD)
    value = doc.get(key)
    # any other value of the old field is no version of it (a 2 there was never written)
    return 1 if value == v1 and type(value) is type(v1) else {key: value}


def readable(doc: object, kind: Kind) -> bool:
    return isinstance(doc, dict) and _is_readable(version(doc, kind), kind)


def _is_readable(v: object, kind: Kind) -> bool:
    return type(v) is int and v in READABLE[kind]  # 2.0, True: not versions


def upgrade(doc: dict[str, Any], kind: Kind) -> dict[str, Any]:
    """``doc`` in today's layout of ``kind``: ``doc`` itself when it is one, else a copy
    brought up one version at a time. ``UsageError`` (one line) for a version this
    release does not read, or an old document that is not the shape its version wrote."""
    v = version(doc, kind)
    if not _is_readable(v, kind):
        reads = " and ".join(map(str, READABLE[kind]))
        raise UsageError(f"not {NOUNS[kind]} this traceview reads: {VERSION_FIELD} {v!r} "
                         f"(it reads {reads})")
    assert isinstance(v, int)
    while v < VERSIONS[kind]:
        try:
            doc = _STEPS[(kind, v)](doc)
        except (KeyError, TypeError, AttributeError) as exc:
            raise UsageError(f"not {NOUNS[kind]} ({VERSION_FIELD} {v}): {exc!r}") from None
        v += 1
    return doc


def read(doc: object, kind: Kind, layout: type[T]) -> T:
    """A saved document of ``kind`` as its typed ``layout`` (a msgspec Struct): brought to
    today's version by ``upgrade`` first, then checked key by key against the layout.
    ``UsageError`` (one line) for anything else."""
    if not isinstance(doc, dict):
        raise UsageError(f"not {NOUNS[kind]}: a JSON object was expected, not "
                         f"{type(doc).__name__}")
    try:
        return msgspec.convert(upgrade(doc, kind), layout, strict=True)
    except msgspec.ValidationError as exc:
        raise UsageError(f"not {NOUNS[kind]} this traceview reads: {exc}") from None


def builtins(layout: msgspec.Struct) -> dict[str, Any]:
    """A typed document as the plain JSON-able dict written for it: its fields in the
    layout's order, the values as they are (a number is not converted to its field's
    type, so the JSON is what the writer computed)."""
    out = msgspec.to_builtins(layout)
    assert isinstance(out, dict)
    return out


def _renamed_field(doc: dict[str, Any], kind: Kind) -> dict[str, Any]:
    """Version 1 -> 2 of ``ab``, ``serve``, capture and the checks: the version-1 field
    (``schema``, ``traceview_check``, ...) becomes ``schema_version``, in the same place;
    nothing else moves."""
    key = _LEGACY[kind][0]
    return {(VERSION_FIELD if k == key else k): (2 if k == key else v) for k, v in doc.items()}


# explain schema 1's fixed keys, frozen with it: every other key of these objects was a
# metric. Schema 2 moved the maps of metric names under keys of their own, so that no
# object mixes fixed keys with names that come and go: ``calls.<metric>`` ->
# ``calls.stats.<metric>``, ``calls.per_call[].<metric>`` ->
# ``calls.per_call[].metrics.<metric>``, ``calls.kinds[].<metric>`` ->
# ``calls.kinds[].stats.<metric>``. Nothing else changed.
_V1_CALLS_KEYS = ("count", "source", "pattern", "warm_count", "cold", "categories", "per_call",
                  "description", "how", "outliers", "api_sync_ns", "kinds", "tree",
                  "perturbation", "tree_warm_calls")
_V1_CALL_ROW_KEYS = ("index", "name", "start_ns", "end_ns", "cold", "launches", "kernels",
                     "categories", "kind", "cold_reason", "outlier", "outlier_reason",
                     "api_sync_ns")
_V1_KIND_KEYS = ("name", "count", "warm_count", "api_sync_ns")


def _split(obj: dict[str, Any], fixed: tuple[str, ...], into: str) -> dict[str, Any]:
    """Schema 1's flat object as schema 2's: the metrics under ``into``, in place of the
    first metric (the fixed keys keep their order)."""
    out: dict[str, Any] = {}
    moved: dict[str, Any] = {}
    for k, v in obj.items():
        if k in fixed:
            out[k] = v
        else:
            if not moved:
                out[into] = moved
            moved[k] = v
    out.setdefault(into, moved)
    return out


def _explain_from_1(doc: dict[str, Any]) -> dict[str, Any]:
    calls = _split(doc["calls"], _V1_CALLS_KEYS, "stats")
    if "per_call" in calls:
        calls["per_call"] = [_split(row, _V1_CALL_ROW_KEYS, "metrics")
                             for row in calls["per_call"]]
    if "kinds" in calls:
        calls["kinds"] = [_split(k, _V1_KIND_KEYS, "stats") for k in calls["kinds"]]
    return {**doc, VERSION_FIELD: 2, "calls": calls}


def _explain_from_2(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 2 -> 3 of explain: a warm call became a call whose launches all have a
    device record (``warm_count`` and the warm statistics changed meaning). A version-2
    report holds no such count, so it is read as it was: each call's
    ``launches_without_work`` 0, no ``integrity`` block (its records were never checked)
    and no projections."""
    calls = dict(doc["calls"])
    calls["per_call"] = [{**row, "launches_without_work": 0} for row in calls["per_call"]]
    return {**doc, VERSION_FIELD: 3, "calls": calls, "integrity": None, "what_if": []}


_STEPS: dict[tuple[Kind, int], Callable[[dict[str, Any]], dict[str, Any]]] = {
    ("explain", 1): _explain_from_1,
    ("explain", 2): _explain_from_2,
    ("ab", 1): lambda d: _renamed_field(d, "ab"),
    ("serve", 1): lambda d: _renamed_field(d, "serve"),
    ("capture", 1): lambda d: _renamed_field(d, "capture"),
    ("check", 1): lambda d: _renamed_field(d, "check"),
    ("cache_check", 1): lambda d: _renamed_field(d, "cache_check"),
    ("check_layouts", 1): lambda d: _renamed_field(d, "check_layouts"),
}
