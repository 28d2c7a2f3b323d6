"""The JSON report: a stable, documented schema (``docs/json.md``), both directions.

``schema_version`` changes only when a key is removed, moves or changes meaning; new keys
may appear at any time. All times are integer nanoseconds. ``to_json`` / ``from_json`` are
exact inverses on every report: ``from_json(to_json(r)) == r``. The dict conversion of the
current layout (``model.to_dict`` / ``model.from_dict``) lives beside the types in
``report.model``, so that ``Report.to_dict()`` needs no import back into this module; this
module reads every schema: :func:`upgrade` brings a saved schema-1 dict to schema 2's
layout (``traceview.documents`` holds every document's versions and upgrades), and a
schema it does not know is a ``UsageError``.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any

import msgspec
import orjson

from traceview.documents import READABLE, VERSIONS
from traceview.documents import upgrade as upgrade_document
from traceview.errors import UsageError
from traceview.report import model
from traceview.report.model import Report, to_dict
from traceview.stats import Stats

SCHEMA_VERSION = VERSIONS["explain"]
READABLE_VERSIONS = READABLE["explain"]
__all__ = ["READABLE_VERSIONS", "SCHEMA_VERSION", "document_layout", "from_dict", "from_json",
           "to_dict", "to_json", "upgrade"]


def to_json(r: Report) -> bytes:
    """The report's JSON document, indented, with its final newline. orjson appends the
    newline itself: adding it after would copy the whole document once more (50 MB at
    60,000 calls)."""
    return orjson.dumps(to_dict(r, for_orjson=True), option=orjson.OPT_INDENT_2
                        | orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE)


def from_json(data: bytes | str) -> Report:
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise UsageError("not an explain report: the JSON is not an object")
    return from_dict(doc)


def from_dict(d: dict[str, Any]) -> Report:
    """The report a saved JSON dict of any readable schema stands for."""
    return model.from_dict(upgrade(d))


def upgrade(d: dict[str, Any]) -> dict[str, Any]:
    """A saved report's dict in the current schema's layout (``d`` itself when it is one;
    a schema-1 dict is copied, never edited): ``documents.upgrade``, where every
    document's versions are. ``UsageError`` for a schema this version does not read, or a
    schema-1 dict whose ``calls`` is not the shape schema 1 wrote."""
    return upgrade_document(d, "explain")


def document_layout() -> type[msgspec.Struct]:
    """The explain document's layout as written (``to_dict``), as a msgspec Struct: the
    report's own types where the JSON is their fields (``to_builtins``), and Structs of
    the three places where it is not: a kernel row's stats flattened into it, and
    ``calls`` (its keys in their written order, ``api_sync`` written ``api_sync_ns``,
    each kind's too). Built from the report's fields, so a field added to a report type
    changes this layout, its JSON Schema (``docs/schemas/explain.json``) and its hash
    (``documents.SCHEMA_HASHES``) with it. ``tests/test_document_schemas.py`` decodes
    every fixture's JSON with it, strictly, and re-encodes it to the same document."""
    return _document_layout()


@functools.cache
def _document_layout() -> type[msgspec.Struct]:
    def like(cls: type, replaced: dict[str, Any], order: list[str] | None = None,
             renamed: dict[str, str] | None = None) -> type[msgspec.Struct]:
        hints = typing.get_type_hints(cls)
        fields = {f.name: f for f in dataclasses.fields(cls)}
        out: list[tuple[Any, ...]] = []
        for name in order or list(fields):
            f = fields[name]
            typ = replaced.get(name, hints[name])
            key = (renamed or {}).get(name, name)
            if f.default is not dataclasses.MISSING:
                out.append((key, typ, f.default))
            elif f.default_factory is not dataclasses.MISSING:
                out.append((key, typ, msgspec.field(default_factory=f.default_factory)))
            else:
                out.append((key, typ))
        return msgspec.defstruct(f"{cls.__name__}Document", out, forbid_unknown_fields=True,
                                 module=__name__)

    stat_fields = [(k, typing.get_type_hints(Stats)[k]) for k in model._STATS_KEYS]
    # ``unlinked`` is written only where nonzero (``omit_defaults``: as ``to_dict`` does)
    kernel = msgspec.defstruct("KernelRowDocument", [
        ("name", str), ("count", int), ("sum_ns", int), *stat_fields, ("unlinked", int, 0)],
        forbid_unknown_fields=True, omit_defaults=True, module=__name__)
    kind = like(model.KindRow, {}, ["name", "count", "warm_count", "stats", "api_sync"],
                {"api_sync": "api_sync_ns"})
    calls = like(model.CallsInfo, {"kinds": tuple[kind, ...]},  # type: ignore[valid-type]
                 ["count", "source", "pattern", "warm_count", "cold", "stats", "categories",
                  "per_call", "description", "how", "outliers", "api_sync", "kinds", "tree",
                  "tree_warm_calls", "perturbation", "elsewhere"], {"api_sync": "api_sync_ns"})
    device = like(model.DeviceInfo, {"kernels": tuple[kernel, ...]})  # type: ignore[valid-type]
    return like(Report, {"device": device, "calls": calls})
