"""The JSON report: a stable, documented schema (``docs/json.md``), both directions.

``schema_version`` changes only when a key is removed or changes meaning; new keys may
appear at any time. All times are integer nanoseconds. ``to_json`` / ``from_json`` are
exact inverses on every report: ``from_json(to_json(r)) == r``. The three places where the
JSON is flatter than the report (a kernel's stats, the per-metric stats of ``calls`` and
each call's metrics sit beside the other keys) are undone here and nowhere else.
"""

from __future__ import annotations

from typing import Any

import msgspec
import orjson

from traceview.errors import UsageError
from traceview.report.model import CallRow, CallsInfo, KernelRow, Report
from traceview.stats import Stats

SCHEMA_VERSION = 1

_STATS_KEYS = ("n", "p50", "p90", "p99", "min", "max", "mean")
_CALLS_KEYS = ("count", "source", "pattern", "warm_count", "cold", "categories", "per_call")
_CALL_ROW_KEYS = ("index", "name", "start_ns", "end_ns", "cold", "launches", "kernels",
                  "categories")


def _stats(s: Stats) -> dict[str, int | None]:
    return {k: getattr(s, k) for k in _STATS_KEYS}


def _lists(x: Any) -> Any:
    """Tuples (the report's frozen sequences) as lists, as JSON reads them back."""
    if isinstance(x, dict):
        return {k: _lists(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_lists(v) for v in x]
    return x


def to_dict(r: Report) -> dict[str, Any]:
    """The report as JSON-ready builtins, in the documented key order."""
    d = _lists(msgspec.to_builtins(r, order=None))
    dev = d["device"]
    dev["kernels"] = [{"name": k.name, "count": k.count, "sum_ns": k.sum_ns, **_stats(k.stats)}
                      for k in r.device.kernels]
    c = r.calls
    d["calls"] = {
        "count": c.count,
        "source": c.source,
        "pattern": c.pattern,
        "warm_count": c.warm_count,
        "cold": list(c.cold),
        **{m: _stats(s) for m, s in c.stats.items()},
        "categories": {k: _stats(s) for k, s in c.categories.items()},
        "per_call": [
            {"index": x.index, "name": x.name, "start_ns": x.start_ns, "end_ns": x.end_ns,
             "cold": x.cold, "launches": x.launches, "kernels": x.kernels, **x.metrics,
             "categories": x.categories}
            for x in c.per_call
        ],
    }
    return d


def to_json(r: Report) -> bytes:
    return orjson.dumps(to_dict(r), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n"


def from_dict(d: dict[str, Any]) -> Report:
    """The report a saved JSON dict stands for; ``UsageError`` naming the first bad key."""
    try:
        d = dict(d)
        dev = dict(d["device"])
        dev["kernels"] = [msgspec.convert(
            {"name": k["name"], "count": k["count"], "sum_ns": k["sum_ns"],
             "stats": {s: k.get(s) for s in _STATS_KEYS}}, KernelRow)
            for k in dev["kernels"]]
        d["device"] = dev
        calls = d["calls"]
        per_call = []
        for row in calls["per_call"]:
            per_call.append(msgspec.convert(
                {**{k: row.get(k) for k in _CALL_ROW_KEYS},
                 "metrics": {k: v for k, v in row.items() if k not in _CALL_ROW_KEYS}},
                CallRow))
        d["calls"] = CallsInfo(
            count=calls["count"], source=calls["source"], pattern=calls["pattern"],
            warm_count=calls["warm_count"], cold=tuple(calls["cold"]),
            stats={k: msgspec.convert(v, Stats) for k, v in calls.items()
                   if k not in _CALLS_KEYS},
            categories={k: msgspec.convert(v, Stats) for k, v in calls["categories"].items()},
            per_call=tuple(per_call),
        )
        return msgspec.convert(d, Report, from_attributes=True)
    except (msgspec.ValidationError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"not an explain report: {exc}") from None


def from_json(data: bytes | str) -> Report:
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise UsageError("not an explain report: the JSON is not an object")
    return from_dict(doc)
