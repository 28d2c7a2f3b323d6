"""Top-level trace metadata that the reports read, checked for type before anyone reads it.

Capture's ``traceview`` key and Kineto's ``deviceProperties`` are free JSON: a trace from
another tool, or an edited one, can hold anything there. Fields of the wrong type are
set aside (the rest is kept) and named in a ``metadata-malformed`` diagnostic, so the
renderers, findings and ``diff`` only ever see the types they expect.
"""

from __future__ import annotations

from typing import Any

from traceview.diagnostics import Diagnostic

NUMBER = (int, float)
# capture metadata key -> expected type; nested dicts list the subkeys that are read
CAPTURE_TYPES: dict[str, type | tuple[type, ...]] = {
    "op": str, "impl": str, "dtype": str, "layout": str, "command": str, "reproducer": str,
    "kind": str, "shape": list, "strides": list, "scalars": list, "input_shapes": list,
    "notes": list, "protocol": dict, "device": dict, "versions": dict, "correctness": dict,
    "baseline": dict, "cold": dict,
}
CAPTURE_NESTED: dict[str, dict[str, type | tuple[type, ...]]] = {
    "baseline": {"full_api_ns_p50": NUMBER, "amortized_submit_ns": NUMBER, "device_ns": NUMBER},
    "cold": {"wall_ns": NUMBER},
    "correctness": {"tolerance": dict},
    "protocol": {"mode": str, "sync": str},
}


def _is(value: Any, types: type | tuple[type, ...]) -> bool:
    if value is None:
        return types is not dict  # readers call .get on the dicts
    return isinstance(value, types) and not isinstance(value, bool)


def clean_capture(cap: Any) -> tuple[dict[str, Any] | None, list[str]]:
    """Capture metadata with wrong-typed fields removed, and the names of those fields."""
    if cap is None:
        return None, []
    if not isinstance(cap, dict):
        return None, ["traceview"]
    bad = [k for k, t in CAPTURE_TYPES.items() if k in cap and not _is(cap[k], t)]
    out = {k: v for k, v in cap.items() if k not in bad}
    for key, fields in CAPTURE_NESTED.items():
        sub = out.get(key)
        if isinstance(sub, dict):
            wrong = [f for f, t in fields.items() if f in sub and not _is(sub[f], t)]
            if wrong:
                out[key] = {f: v for f, v in sub.items() if f not in wrong}
                bad += [f"{key}.{f}" for f in wrong]
    return out, [b if b == "traceview" else f"traceview.{b}" for b in bad]


def clean_metadata(meta: dict[str, Any]) -> tuple[dict[str, Any], Diagnostic | None]:
    """``meta`` with wrong-typed fields set aside (a new dict; ``meta`` itself unchanged
    and returned as is when nothing is wrong), and a diagnostic naming them, if any."""
    bad: list[str] = []
    out = meta
    if "traceview" in meta:
        cap, wrong = clean_capture(meta["traceview"])
        if wrong:
            out = dict(meta)
            if cap is None:
                out.pop("traceview")
            else:
                out["traceview"] = cap
            bad += wrong
    props = meta.get("deviceProperties")
    if props is not None and not (isinstance(props, list) and all(isinstance(p, dict) for p in props)):
        out = dict(out) if out is meta else out
        out.pop("deviceProperties")
        bad.append("deviceProperties")
    if not bad:
        return meta, None
    return out, Diagnostic("metadata-malformed", "warning", len(bad),
                           "top-level metadata of an unexpected type was ignored: " + ", ".join(bad))
