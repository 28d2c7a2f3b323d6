"""The JSON report: a stable, documented schema (``docs/json.md``).

``schema_version`` changes only when a key is removed or changes meaning; new keys may
appear at any time. All times are integer nanoseconds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from traceview.render.percall import (
    json_calls_extra,
    json_function_extra,
    json_host_extra,
    json_per_call_row,
)

if TYPE_CHECKING:
    from traceview.explanation import Explanation

SCHEMA_VERSION = 1


def to_dict(ex: Explanation) -> dict[str, Any]:
    d = ex.device
    lane = ex.timeline.lane
    calls = ex.calls
    return {
        "schema_version": SCHEMA_VERSION,
        "trace": {
            "path": ex.trace.path,
            "slices": len(ex.trace.slices),
            "metadata": {k: v for k, v in ex.trace.metadata.items() if k != "traceview"},
            "capture": ex.trace.metadata.get("traceview"),
            "python_frames": ex.has_python_frames,
        },
        "window": {
            "start_ns": ex.window.start_ns,
            "end_ns": ex.window.end_ns,
            "dur_ns": ex.window.dur_ns,
            "source": ex.window.source,
            "description": ex.window.description,
        },
        "device": {
            "busy_ns": d.busy_ns,
            "idle_ns": d.idle_ns,
            "kernel_count": d.kernel_count,
            "kernel_sum_ns": d.kernel_sum_ns,
            "memcpy_count": d.memcpy_count,
            "memset_count": d.memset_count,
            "work_sum_ns": d.work_sum_ns,
            "per_device": d.per_device,
            "per_stream": d.per_stream,
            "kernels": [
                {"name": k.name, "count": k.count, "sum_ns": k.sum_ns, **k.stats.as_dict()}
                for k in d.kernels
            ],
        },
        "host": {
            "thread": None if lane is None else {"pid": lane.pid, "tid": lane.tid,
                                                 "label": lane.label},
            "categories": ex.host_categories,
            "category_descriptions": ex.rules.categories,
            "functions": [
                {"name": f.name, "category": f.category, "self_ns": f.self_ns,
                 "total_ns": f.total_ns, "count": f.count, **json_function_extra(ex, f.name)}
                for f in ex.functions[: ex.options.functions_limit]
            ],
            **json_host_extra(ex),
            "functions_total": len(ex.functions),
            "other_threads": [
                {"pid": t.pid, "tid": t.tid, "label": t.label, "launches": t.launches,
                 "categories": t.categories}
                for t in ex.other_threads
            ],
        },
        "breakdown": [{"host": c.host, "device": c.device, "ns": c.ns} for c in ex.cells],
        "launches": {
            "count": ex.launches.count,
            "linked": ex.launches.linked,
            "by_api": ex.launches.by_api,
            "by_kind": ex.launches.by_kind,
            "unlinked_device_work": ex.launches.unlinked_work,
            "latency_ns": ex.launches.latency.as_dict(),
        },
        "calls": {
            "count": len(calls.calls),
            "source": calls.source,
            "pattern": calls.pattern,
            "warm_count": calls.warm_count,
            "cold": calls.cold_indices,
            **{m: s.as_dict() for m, s in calls.stats.items()},
            "categories": {c: s.as_dict() for c, s in calls.category_stats.items()},
            "per_call": [
                {"index": c.index, "name": c.name, "start_ns": c.start_ns, "end_ns": c.end_ns,
                 "cold": c.cold, "launches": c.launches, "kernels": c.kernels, **c.metrics,
                 "categories": c.categories, **json_per_call_row(c)}
                for c in calls.calls
            ],
            **json_calls_extra(ex),
        },
        "findings": [f.as_dict() for f in ex.findings],
        "diagnostics": [g.as_dict() for g in ex.trace.diagnostics],
    }


def render_json(ex: Explanation) -> bytes:
    return orjson.dumps(to_dict(ex), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n"
