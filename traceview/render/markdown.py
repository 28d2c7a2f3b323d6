"""Markdown for GitHub issues and PRs: the seed's reproducer template, filled in.

Reviewers read it on GitHub without installing anything, so it uses only GitHub
Flavored Markdown: pipe tables, a list of findings, ``<details>`` for long parts, and a
Mermaid gantt chart of one typical call (GitHub renders Mermaid blocks natively). Where
the trace does not tell a template field, the field says "not recorded" and a finding
says what would add it: nothing is invented.

The whole document stays under ``MAX_CHARS`` (GitHub's comment limit is 65,536):
tables are cut to a fixed number of rows and say how many were left out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from traceview import __version__
from traceview.render._format import METRIC_LABELS, fmt_ns, fmt_share

if TYPE_CHECKING:
    from traceview.explanation import Explanation

MAX_CHARS = 60_000
MAX_FUNCTION_ROWS = 25
MAX_KERNEL_ROWS = 15
MAX_CALL_ROWS = 40
NOT_RECORDED = "not recorded"
GANTT_MAX_BARS = 40


def esc(text: Any, limit: int | None = None) -> str:
    """Make text safe inside GFM (table cells included); cut to ``limit`` characters."""
    s = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
    s = s.replace("<", "&lt;").replace(">", "&gt;")
    if limit is not None and len(s) > limit:
        s = s[: limit - 3] + "..."
    return s


def code(text: Any, limit: int = 120) -> str:
    """A code span: no HTML escaping (GitHub shows entities literally there), pipes escaped."""
    s = str(text).replace("\n", " ").replace("`", "'")
    if len(s) > limit:
        s = s[: limit - 3] + "..."
    return "`" + s.replace("|", "\\|") + "`"


def table(header: list[str], rows: list[list[str]], align: str | None = None) -> str:
    align = align or "l" + "r" * (len(header) - 1)
    marks = {"l": "---", "r": "---:", "c": ":---:"}
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(marks[a] for a in align) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def _capture(ex: Explanation) -> dict[str, Any]:
    cap = ex.trace.metadata.get("traceview")
    return cap if isinstance(cap, dict) else {}


def _op_args(ex: Explanation) -> dict[str, Any] | None:
    """Name and args of the aten op that launches the most device work, if any.

    The innermost ``cpu_op`` around each launch on the attributed thread; Triton
    kernels launched from Python have none (their shapes come from capture's metadata).
    """
    s = ex.trace.slices
    lane = ex.timeline.lane
    if lane is None or ex.launches.count == 0:
        return None
    cpu = ex.trace.cat_code("cpu_op")
    ops = np.flatnonzero((s.cat == cpu) & (s.lane == lane.index))
    if ops.size == 0:
        return None
    ops = ops[np.argsort(s.start[ops], kind="stable")]
    o_st, o_en = s.start[ops], s.end[ops]
    counts: dict[int, int] = {}
    for row in ex.launches.rows.tolist():
        ls, le = int(s.start[row]), int(s.end[row])
        k = int(np.searchsorted(o_st, ls, side="right")) - 1
        for j in range(k, max(k - 64, -1), -1):  # innermost: latest start that contains it
            if o_en[j] >= le:
                counts[int(ops[j])] = counts.get(int(ops[j]), 0) + 1
                break
    if not counts:
        return None
    by_name: dict[int, list[int]] = {}
    for row, n in counts.items():
        by_name.setdefault(int(s.name[row]), []).extend([row] * n)
    name = max(by_name, key=lambda c: (len(by_name[c]), ex.trace.names[c]))
    row = by_name[name][0]
    return {"name": ex.trace.names[name], "launches": len(by_name[name]), **s.args.get(row, {})}


def reproducer(ex: Explanation) -> list[tuple[str, str]]:
    """The seed's template, in its order, each field from the trace or 'not recorded'."""
    cap = _capture(ex)
    meta = ex.trace.metadata
    proto = cap.get("protocol") or {}
    op_args = _op_args(ex)
    kernels = ", ".join(f"{code(k.name)} x{k.count}" for k in ex.device.kernels[:3])

    if cap.get("op"):
        op = f"{code(cap['op'])} via {code(cap.get('impl'))}"
    elif op_args:
        op = f"{code(op_args['name'])} (the op around {op_args['launches']} launches)"
    else:
        op = NOT_RECORDED
    if kernels:
        op += f"; kernels: {kernels}"

    if cap.get("shape"):
        shape = (f"shape {code(cap['shape'])}, dtype {code(cap.get('dtype'))}, strides "
                 f"{code(cap.get('strides'))}, layout {code(cap.get('layout'))}, scalars "
                 f"{code(cap.get('scalars'))}")
    elif op_args and "Input Dims" in op_args:
        shape = (f"inputs {code(op_args.get('Input Dims'))}, types {code(op_args.get('Input type'))}, "
                 f"strides {code(op_args.get('Input Strides', NOT_RECORDED))}, scalars "
                 f"{code(op_args.get('Concrete Inputs', NOT_RECORDED))} (of {code(op_args['name'])})")
    else:
        shape = NOT_RECORDED

    dev_parts = []
    props = meta.get("deviceProperties")
    capdev = cap.get("device") or {}
    name = capdev.get("name") or (props[0].get("name") if isinstance(props, list) and props
                                  and isinstance(props[0], dict) else None)
    if name:
        dev_parts.append(esc(name))
    if capdev.get("driver"):
        dev_parts.append(f"driver {esc(capdev['driver'])}")
    elif "cuda_driver_version" in meta:
        dev_parts.append(f"CUDA driver API {esc(meta['cuda_driver_version'])}")
    if "cuda_runtime_version" in meta:
        dev_parts.append(f"CUDA runtime {esc(meta['cuda_runtime_version'])}")
    versions = cap.get("versions") or {}
    dev_parts += [f"{k} {esc(v)}" for k, v in versions.items() if v]
    device = ", ".join(dev_parts) if dev_parts else NOT_RECORDED
    if not versions:
        device += "; framework/compiler versions " + NOT_RECORDED

    corr = cap.get("correctness") or {}
    if corr:
        tol = corr.get("tolerance") or {}
        correctness = (f"{esc(corr.get('reference'))} reference, rtol {esc(tol.get('rtol'))}, "
                       f"atol {esc(tol.get('atol'))}; max abs err {esc(corr.get('max_abs_err'))}"
                       f", passed: {esc(corr.get('passed'))}")
    else:
        correctness = NOT_RECORDED

    graph = any(f.id == "graph-replay" for f in ex.findings)
    mode = proto.get("mode") or ("graph replay" if graph else "eager (no graph launches seen)")
    cold = (f"{ex.calls.warm_count} warm calls; cold call(s) #{', #'.join(map(str, ex.calls.cold_indices))}"
            " reported apart" if ex.calls.cold_indices else f"{ex.calls.warm_count} warm calls")
    if cap.get("cold"):
        cold += f"; cold first call measured apart: {fmt_ns(cap['cold'].get('wall_ns'))}"
    warm_mode = f"{cold}; {esc(mode)}"

    if proto:
        timer = (f"{esc(proto.get('timer', 'torch.profiler'))}; sync {esc(proto.get('sync'))}; "
                 f"warm-up {esc(proto.get('warmup'))}, {esc(proto.get('iters'))} profiled calls; "
                 f"with_stack {esc(proto.get('with_stack'))}")
    else:
        timer = (f"torch.profiler trace; {len(ex.calls.calls)} calls from {ex.calls.source}; "
                 f"sync points {NOT_RECORDED}")

    st = ex.calls.stats
    k = st["kernel_ns"]
    device_result = (f"kernel p50 {fmt_ns(k.p50)} (p90 {fmt_ns(k.p90)}, n={k.n}); device busy "
                     f"{fmt_ns(ex.device.busy_ns)} of {fmt_ns(ex.window.dur_ns)} window"
                     if k.n else f"device busy {fmt_ns(ex.device.busy_ns)} of "
                     f"{fmt_ns(ex.window.dur_ns)} window")
    a = st["api_ns"]
    api = (f"profiled call p50 {fmt_ns(a.p50)} (p90 {fmt_ns(a.p90)}, n={a.n}); host overhead "
           f"p50 {fmt_ns(st['host_overhead_ns'].p50)}" if a.n else NOT_RECORDED)
    base = cap.get("baseline") or {}
    if base.get("full_api_ns_p50"):
        api += (f"; **unprofiled** synchronized call p50 {fmt_ns(base['full_api_ns_p50'])}, "
                f"amortized submit {fmt_ns(base.get('amortized_submit_ns'))}, device "
                f"{fmt_ns(base.get('device_ns'))}")
    repro = code(cap["command"]) if cap.get("command") else NOT_RECORDED
    repro += f"; trace {code(ex.trace.path.rsplit('/', 1)[-1])}"
    return [
        ("Operation / model", op),
        ("Shape, dtype, strides and scalar arguments", shape),
        ("Device, driver, framework and compiler revisions", device),
        ("Correctness reference and tolerance", correctness),
        ("Cold or warmed? Eager or graph replay?", warm_mode),
        ("Timer, synchronization points and repetitions", timer),
        ("Device-kernel result", device_result),
        ("Full-API result", api),
        ("Serving result, if measured", "not measured (traceview measures one op)"),
        ("Public reproducer / trace", repro),
    ]


def _matrix(ex: Explanation) -> str:
    w = ex.window.dur_ns
    by: dict[str, dict[str, int]] = {}
    for c in ex.cells:
        by.setdefault(c.host, {})[c.device] = c.ns
    rows = []
    for cat, v in sorted(by.items(), key=lambda kv: -sum(kv[1].values())):
        total = sum(v.values())
        rows.append([code(cat), fmt_ns(v.get("busy", 0)), fmt_ns(v.get("idle", 0)),
                     fmt_ns(total), fmt_share(total, w)])
    rows.append(["**total**", f"**{fmt_ns(ex.device.busy_ns)}**", f"**{fmt_ns(ex.device.idle_ns)}**",
                 f"**{fmt_ns(w)}**", "**100%**"])
    return table(["host category", "device busy", "device idle", "total", "share"], rows)


def _calls(ex: Explanation) -> str:
    c = ex.calls
    rows = []
    for m, label in METRIC_LABELS.items():
        s = c.stats[m]
        if s.n:
            rows.append([label, fmt_ns(s.p50), fmt_ns(s.p90), fmt_ns(s.min), fmt_ns(s.max)])
    for cat, s in sorted(c.category_stats.items(), key=lambda kv: -(kv[1].p50 or 0)):
        rows.append([f"host: {code(cat)}", fmt_ns(s.p50), fmt_ns(s.p90), fmt_ns(s.min), fmt_ns(s.max)])
    return table(["per call", "p50", "p90", "min", "max"], rows)


def gantt(ex: Explanation) -> str | None:
    """A Mermaid gantt chart of the typical call: host categories and device work.

    Mermaid's finest date unit is the millisecond, so the chart's axis counts
    microseconds of the call as milliseconds (stated in the title).
    """
    warm = ex.calls.warm
    if not warm:
        return None
    p50 = ex.calls.stats["api_ns"].p50 or 0
    call = min(warm, key=lambda c: (abs(c.metrics["api_ns"] - p50), c.index))
    lo, hi = call.start_ns, call.end_ns
    tl = ex.timeline
    m = (tl.seg_end > lo) & (tl.seg_start < hi)
    segs = [(max(int(s), lo), min(int(e), hi), tl.categories[int(c)])
            for s, e, c in zip(tl.seg_start[m], tl.seg_end[m], tl.seg_cat[m])]
    merged: list[list[Any]] = []
    for s, e, cat in segs:  # merge neighbours of one category
        if merged and merged[-1][2] == cat and merged[-1][1] == s:
            merged[-1][1] = e
        else:
            merged.append([s, e, cat])
    if len(merged) > GANTT_MAX_BARS:  # keep the longest pieces, in time order
        keep = sorted(sorted(merged, key=lambda x: x[0] - x[1])[:GANTT_MAX_BARS], key=lambda x: x[0])
        merged = keep
    s_busy, e_busy = ex.device.busy
    dm = (e_busy > lo) & (s_busy < max(hi, call.kernel_end_ns or hi))
    dev = [(max(int(s), lo), int(e)) for s, e in zip(s_busy[dm], e_busy[dm])]

    def us(t: int) -> int:  # ns -> the chart's unit (1 "ms" = 1 us), at least 1 wide
        return round((t - lo) / 1_000)

    lines = ["```mermaid", "gantt",
             f"    title Typical call #{call.index} ({fmt_ns(call.metrics['api_ns'])}); axis: 1 ms shown = 1 us",
             "    dateFormat x", "    axisFormat %L", "    section host"]
    for i, (s, e, cat) in enumerate(merged):
        a, b = us(s), max(us(e), us(s) + 1)
        lines.append(f"    {cat} {fmt_ns(e - s)} :h{i}, {a}, {b}")
    lines.append("    section device")
    if not dev:
        lines.append(f"    idle :d0, 0, {max(us(hi), 1)}")
    for i, (s, e) in enumerate(dev[:GANTT_MAX_BARS]):
        a, b = us(s), max(us(e), us(s) + 1)
        lines.append(f"    busy {fmt_ns(e - s)} :active, d{i}, {a}, {b}")
    lines.append("```")
    return "\n".join(lines)


def _findings(ex: Explanation) -> str:
    out = [f"- **{f.severity}** `{f.id}`: {esc(f.message)}" for f in ex.findings]
    out += [f"- **{g.severity}** `input:{g.code}` ({g.count}): {esc(g.message)}"
            for g in ex.trace.diagnostics]
    return "\n".join(out) if out else "- none"


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


def _more(shown: int, total: int) -> str:
    return f"\n\n_{total - shown} more not shown._" if total > shown else ""


def render_markdown(ex: Explanation, figure: str | None = None) -> str:
    cap = _capture(ex)
    title = (f"{cap.get('op')} · {cap.get('impl')} · {'x'.join(map(str, cap.get('shape') or []))} "
             f"{cap.get('dtype')}" if cap.get("op") else ex.trace.path.rsplit("/", 1)[-1])
    verdict = next((f.message for f in ex.findings if f.id in ("host-bound", "device-bound")), None)
    parts = [f"### traceview: {esc(title)}"]
    if verdict:
        parts.append(f"> **{esc(verdict)}**")
    parts.append(f"Window {fmt_ns(ex.window.dur_ns)} ({esc(ex.window.description)}); host thread "
                 f"{esc(ex.timeline.lane.label if ex.timeline.lane else 'none')}; "
                 f"{esc(ex.calls.description)}.")
    parts.append(table(["field", "value"], [[f, v] for f, v in reproducer(ex)], "ll"))
    parts.append("#### Where the time went (host category x device state; cells sum to the window)")
    parts.append(_matrix(ex))
    if ex.calls.calls:
        cold = f", cold #{', #'.join(map(str, ex.calls.cold_indices))} left out" if ex.calls.cold_indices else ""
        from traceview.render.percall import unprofiled_short

        parts.append(f"#### Per call ({ex.calls.warm_count} warm of {len(ex.calls.calls)}{cold})"
                     f"{unprofiled_short(ex)}")
        parts.append(_calls(ex))
    from traceview.render.percall import markdown_sections

    parts.extend(markdown_sections(ex, esc, code, table, _details))
    g = gantt(ex)
    if g:
        parts.append(g)
    if figure:
        parts.append(f"![typical call]({figure})")
    parts.append("#### Findings")
    parts.append(_findings(ex))

    fs = [f for f in ex.functions if f.self_ns > 0]
    per = ex.per_call.functions if ex.per_call else {}
    warm = ex.per_call.warm_calls if ex.per_call else 0

    def _pc(name: str) -> list[str]:
        pf = per.get(name)
        if pf is None:
            return ["-", "-", f"0/{warm}"]
        return [fmt_ns(pf.self_ns), fmt_ns(pf.inclusive_ns),
                f"{pf.calls_with}/{warm}" + (" (few)" if pf.few_calls else "")]

    if fs:
        rows = [[code(f.name), code(f.category), fmt_ns(f.self_ns), *_pc(f.name),
                 fmt_ns(f.total_ns), str(f.count)] for f in fs[:MAX_FUNCTION_ROWS]]
        parts.append(_details("Hot host functions (self time; per call: p50 over the warm calls "
                              "that contain it)",
                              table(["function", "category", "self", "self/call", "incl/call",
                                     "in calls", "inclusive", "count"], rows)
                              + _more(len(rows), len(fs))))
    ks = ex.device.kernels
    if ks:
        rows = [[code(k.name), str(k.count), fmt_ns(k.sum_ns), fmt_ns(k.stats.p50),
                 fmt_ns(k.stats.min), fmt_ns(k.stats.max)] for k in ks[:MAX_KERNEL_ROWS]]
        parts.append(_details("Kernels", table(["kernel", "count", "sum", "p50", "min", "max"], rows)
                              + _more(len(rows), len(ks))))
    calls = ex.calls.calls
    if calls:
        rows = [[str(c.index), code(c.name), "cold" if c.cold else ("outlier" if c.outlier else ""),
                 fmt_ns(c.metrics["api_ns"]),
                 fmt_ns(c.metrics["kernel_ns"]), fmt_ns(c.metrics["launch_latency_ns"]),
                 fmt_ns(c.metrics["host_overhead_ns"])] for c in calls[:MAX_CALL_ROWS]]
        parts.append(_details("Every call", table(["#", "range", "", "wall", "kernel",
                                                   "launch latency", "host overhead"], rows)
                              + _more(len(rows), len(calls))))
    parts.append(f"<sub>traceview {__version__} · times are integer-ns interval unions: host and "
                 "device time are never added together</sub>")
    text = "\n\n".join(parts) + "\n"
    if len(text) > MAX_CHARS:  # cannot happen with the row caps above; keep the promise anyway
        text = text[: MAX_CHARS - 40] + "\n\n_(truncated)_\n"
    return text
