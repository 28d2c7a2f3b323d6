"""The JSON report: a stable, documented schema (``docs/json.md``), both directions.

``schema_version`` changes only when a key is removed or changes meaning; new keys may
appear at any time. All times are integer nanoseconds. ``to_json`` / ``from_json`` are
exact inverses on every report: ``from_json(to_json(r)) == r``. The dict conversion
(``to_dict`` / ``from_dict``) lives beside the types in ``report.model``, so that
``Report.to_dict()`` needs no import back into this module.
"""

from __future__ import annotations

import orjson

from traceview.errors import UsageError
from traceview.report.model import Report, from_dict, to_dict

SCHEMA_VERSION = 1
__all__ = ["SCHEMA_VERSION", "from_dict", "from_json", "to_dict", "to_json"]


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
