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

from typing import Any

import orjson

from traceview.documents import READABLE, VERSIONS
from traceview.documents import upgrade as upgrade_document
from traceview.errors import UsageError
from traceview.report import model
from traceview.report.model import Report, to_dict

SCHEMA_VERSION = VERSIONS["explain"]
READABLE_VERSIONS = READABLE["explain"]
__all__ = ["READABLE_VERSIONS", "SCHEMA_VERSION", "from_dict", "from_json", "to_dict", "to_json",
           "upgrade"]


def to_json(r: Report) -> bytes:
    return orjson.dumps(to_dict(r), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n"


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
