"""Where a decode step's time goes: ``traceview explain`` over the profiled steps.

The profile child names ``serve_prefill`` and ``decode_0 .. decode_{K-1}`` (one range per
engine step). explain runs twice on the trace: once with the window narrowed to the
decode ranges and the calls set to them (per-step statistics, device busy share over the
decode window, host categories and host functions per step), once on the prefill range.
explain leaves the first decode step out of the per-call statistics as cold; the window
totals cover every step, so per-step figures from totals divide by all ``K`` steps.

Per-step values are integer ns: ``total // steps``; ``device_busy_share`` is
``busy_ns / window_ns``, both recorded.
"""

from __future__ import annotations

from typing import Any

from traceview.serve.profile import DECODE_PATTERN, PREFILL_RANGE

TOP_FUNCTIONS = 12
TOP_KERNELS = 8


def _stats(d: dict[str, Any] | None) -> dict[str, Any] | None:
    if not isinstance(d, dict):
        return None
    return {k: d.get(k) for k in ("n", "p50", "p90", "p99", "min", "max")}


def summarize_decode(ex: dict[str, Any], steps: int) -> dict[str, Any]:
    """The decode window's explain dict -> the serving report's diagnosis block."""
    window = ex["window"]["dur_ns"]
    busy = ex["device"]["busy_ns"]
    calls = ex.get("calls") or {}
    stats = calls.get("stats") or {}  # the per-call statistics (explain schema 2)
    cats = ex.get("host", {}).get("categories", {})
    funcs = ex.get("host", {}).get("functions", [])
    ops = [f for f in funcs if str(f.get("name", "")).startswith("aten::")]
    ops.sort(key=lambda f: -int(f.get("total_ns") or 0))
    kernels = ex.get("device", {}).get("kernels", [])
    return {
        "steps": steps,
        "window_ns": window,
        "device_busy_ns": busy,
        "device_busy_share": busy / window if window else None,
        "step_ns": _stats(stats.get("api_ns")),
        "step_device_busy_ns": _stats(stats.get("device_busy_ns")),
        "step_host_overhead_ns": _stats(stats.get("host_overhead_ns")),
        "warm_steps": calls.get("warm_count"),
        "launches_per_step": (ex.get("launches", {}).get("count") or 0) // steps if steps
        else None,
        "host_categories_per_step_ns": {k: int(v) // steps for k, v in
                                        sorted(cats.items(), key=lambda kv: -kv[1]) if v},
        "host_ops_per_step": [
            {"name": f["name"], "total_ns_per_step": int(f.get("total_ns") or 0) // steps,
             "self_ns_per_step": int(f.get("self_ns") or 0) // steps,
             "calls_per_step": int(f.get("count") or 0) / steps}
            for f in ops[:TOP_FUNCTIONS]],
        "kernels_per_step": [
            {"name": k["name"], "count_per_step": int(k.get("count") or 0) / steps,
             "sum_ns_per_step": int(k.get("sum_ns") or 0) // steps}
            for k in kernels[:TOP_KERNELS]],
        "findings": [{"id": f.get("id"), "severity": f.get("severity"),
                      "message": f.get("message")} for f in (ex.get("findings") or [])[:6]],
    }


def summarize_prefill(ex: dict[str, Any]) -> dict[str, Any]:
    window = ex["window"]["dur_ns"]
    busy = ex["device"]["busy_ns"]
    return {"window_ns": window, "device_busy_ns": busy,
            "device_busy_share": busy / window if window else None}


def diagnose(trace_path: str, steps: int) -> dict[str, Any]:
    """Run explain on the profiled trace; ``{"error": ...}`` instead of raising."""
    from traceview.options import Options
    from traceview.report.pipeline import analyze

    try:
        decode = analyze(trace_path, Options(window=DECODE_PATTERN, calls=DECODE_PATTERN))
        out: dict[str, Any] = {"decode": summarize_decode(decode.to_dict(), steps)}
        try:
            prefill = analyze(trace_path, Options(window=PREFILL_RANGE))
            out["prefill"] = summarize_prefill(prefill.to_dict())
        except Exception as exc:  # noqa: BLE001  (prefill is a side figure)
            out["prefill"] = {"error": f"{type(exc).__name__}: {exc}"}
        out["trace"] = trace_path
        out["explain_command"] = (f"traceview explain {trace_path} --window '{DECODE_PATTERN}' "
                                  f"--calls '{DECODE_PATTERN}'")
        return out
    except Exception as exc:  # noqa: BLE001  (explain's problem must not lose the run)
        return {"error": f"explain failed on {trace_path}: {type(exc).__name__}: {exc}",
                "trace": trace_path}
