"""The JSON report: a stable, documented schema (``docs/json.md``), both directions.

``schema_version`` changes only when a key is removed, moves or changes meaning; new keys
may appear at any time. All times are integer nanoseconds. ``to_json`` / ``from_json`` are
exact inverses on every report: ``from_json(to_json(r)) == r``. The dict conversion of the
current layout (``model.to_dict`` / ``model.from_dict``) lives beside the types in
``report.model``, so that ``Report.to_dict()`` needs no import back into this module; this
module reads every schema: :func:`upgrade` brings a saved schema-1 dict to schema 2's
layout, and a schema it does not know is a ``UsageError``.

Schema 2 moved the maps of metric names under keys of their own, so that no object mixes
fixed keys with names that come and go: ``calls.<metric>`` -> ``calls.stats.<metric>``,
``calls.per_call[].<metric>`` -> ``calls.per_call[].metrics.<metric>``,
``calls.kinds[].<metric>`` -> ``calls.kinds[].stats.<metric>``. Nothing else changed.
"""

from __future__ import annotations

from typing import Any

import orjson

from traceview.errors import UsageError
from traceview.report import model
from traceview.report.model import Report, to_dict

SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)
__all__ = ["READABLE_VERSIONS", "SCHEMA_VERSION", "from_dict", "from_json", "to_dict", "to_json",
           "upgrade"]

# Schema 1's fixed keys, frozen with it: every other key of these objects was a metric.
_V1_CALLS_KEYS = ("count", "source", "pattern", "warm_count", "cold", "categories", "per_call",
                  "description", "how", "outliers", "api_sync_ns", "kinds", "tree",
                  "perturbation", "tree_warm_calls")
_V1_CALL_ROW_KEYS = ("index", "name", "start_ns", "end_ns", "cold", "launches", "kernels",
                     "categories", "kind", "cold_reason", "outlier", "outlier_reason",
                     "api_sync_ns")
_V1_KIND_KEYS = ("name", "count", "warm_count", "api_sync_ns")


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
    a schema-1 dict is copied, never edited). ``UsageError`` for a schema this version does
    not read, or a schema-1 dict whose ``calls`` is not the shape schema 1 wrote."""
    version = d.get("schema_version")
    if type(version) is not int or version not in READABLE_VERSIONS:  # 2.0, True: not ints
        raise UsageError(f"not an explain report this traceview reads: schema_version "
                         f"{version!r} (it reads {' and '.join(map(str, READABLE_VERSIONS))})")
    if version == SCHEMA_VERSION:
        return d
    try:
        return {**d, "schema_version": SCHEMA_VERSION, "calls": _calls_from_1(d["calls"])}
    except (KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"not an explain report (schema 1): {exc!r}") from None


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


def _calls_from_1(calls: dict[str, Any]) -> dict[str, Any]:
    out = _split(calls, _V1_CALLS_KEYS, "stats")
    if "per_call" in out:
        out["per_call"] = [_split(row, _V1_CALL_ROW_KEYS, "metrics") for row in out["per_call"]]
    if "kinds" in out:
        out["kinds"] = [_split(k, _V1_KIND_KEYS, "stats") for k in out["kinds"]]
    return out
