"""Per-warm-call sections, for every output: what the calls are, their kinds, cold and
outlier calls with their reasons, module families, the typical call's tree, the
profiler's footprint per call.

Kept apart from the renderers' main bodies so each output adds them with one call:
``json_calls_extra``/``json_host_extra`` (JSON), ``console_sections`` (rich),
``markdown_sections``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from traceview.render._format import fmt_ns

if TYPE_CHECKING:
    from traceview.analyses.calltree import TreeNode
    from traceview.explanation import Explanation

TREE_DEPTH_TEXT = 12  # levels shown in the terminal and markdown trees
TREE_MIN_SHARE_TEXT = 0.02  # nodes below this share of the call are folded there
FAMILY_ROWS = 15
KIND_ROWS = 8


# ---------------------------------------------------------------- JSON


def json_calls_extra(ex: Explanation) -> dict[str, Any]:
    c = ex.calls
    pc = ex.per_call
    out: dict[str, Any] = {
        "description": c.description,
        "how": c.how,
        "outliers": c.outlier_indices,
        "api_sync_ns": c.api_sync.as_dict(),
        "kinds": [{"name": k.name, "count": k.count, "warm_count": k.warm_count,
                   **{m: s.as_dict() for m, s in k.stats.items()},
                   "api_sync_ns": k.api_sync.as_dict()} for k in c.kinds],
        "tree": [n.as_dict() for n in pc.tree] if pc else [],
    }
    if pc is not None:
        p = pc.perturbation
        out["perturbation"] = {
            "python_frames_per_call": p.python_frames_per_call,
            "events_per_call": p.events_per_call,
            "profiler_ns_per_call": p.profiler_ns_per_call,
            "unprofiled_ns": p.unprofiled_ns,
            "unprofiled_share": p.unprofiled_share,
        }
    return out


def json_per_call_row(call) -> dict[str, Any]:
    return {"kind": call.kind, "cold_reason": call.cold_reason, "outlier": call.outlier,
            "outlier_reason": call.outlier_reason, "api_sync_ns": call.api_sync_ns}


def json_function_extra(ex: Explanation, name: str) -> dict[str, Any]:
    f = ex.per_call.functions.get(name) if ex.per_call else None
    if f is None:
        return {"inclusive_ns_per_call": None, "self_ns_per_call": None, "calls_with": 0,
                "few_calls": True}
    return {"inclusive_ns_per_call": f.inclusive_ns, "self_ns_per_call": f.self_ns,
            "calls_with": f.calls_with, "few_calls": f.few_calls}


def json_host_extra(ex: Explanation) -> dict[str, Any]:
    pc = ex.per_call
    return {"families": [{"name": f.name, "ns_per_call": f.ns_per_call, "share": f.share,
                          "calls_with": f.calls_with} for f in (pc.families if pc else [])]}


# ---------------------------------------------------------------- text helpers


def unprofiled_note(ex: Explanation) -> str:
    p = ex.per_call.perturbation if ex.per_call else None
    if p is None or p.unprofiled_share is None:
        return ""
    return (f"unprofiled, the same call takes {fmt_ns(p.unprofiled_ns)}: "
            f"{100 * p.unprofiled_share:.0f}% of the profiled call; shares of the call stay "
            "meaningful, absolute figures are inflated")


def unprofiled_short(ex: Explanation) -> str:
    """`` · unprofiled: 20% of this`` beside per-call figures, where capture measured it."""
    p = ex.per_call.perturbation if ex.per_call else None
    if p is None or p.unprofiled_share is None:
        return ""
    return f" · unprofiled, a call is {100 * p.unprofiled_share:.0f}% of the profiled one"


def perturbation_line(ex: Explanation) -> str:
    p = ex.per_call.perturbation if ex.per_call else None
    if p is None or p.events_per_call is None:
        return ""
    parts = [f"{p.events_per_call} events"]
    if p.python_frames_per_call:
        parts.append(f"{p.python_frames_per_call} Python frames")
    parts.append(f"profiler's own time {fmt_ns(p.profiler_ns_per_call)}")
    return "recorded per warm call: " + ", ".join(parts)


def reasons_lines(ex: Explanation) -> list[str]:
    out = []
    for c in ex.calls.calls:
        if c.cold:
            out.append(f"cold #{c.index} ({c.name}): {c.cold_reason}")
    for c in ex.calls.calls:
        if c.outlier:
            out.append(f"outlier #{c.index} ({c.name}): {c.outlier_reason}")
    return out


def _visible(nodes: list[TreeNode], floor: float) -> list[TreeNode]:
    return [n for n in nodes if n.inclusive_ns >= floor]


def _call_p50(ex: Explanation) -> int:
    return ex.calls.stats["api_ns"].p50 or 0


def _node_label(n: TreeNode, warm: int) -> str:
    count = f" x{n.count}" if n.count > 1 else ""
    few = f" (in {n.calls_with} of {warm} calls)" if 2 * n.calls_with < warm else ""
    return (f"{n.name}{count}  {fmt_ns(n.inclusive_ns)} incl, {fmt_ns(n.self_ns)} self"
            f"  [{n.category}]{few}")


# ---------------------------------------------------------------- terminal (rich)


def console_sections(ex: Explanation) -> list[Any]:
    from rich.table import Table
    from rich.text import Text
    from rich.tree import Tree

    out: list[Any] = []
    c = ex.calls
    if not c.calls:
        return out
    reasons = reasons_lines(ex)
    head = Text("\n".join(reasons)) if reasons else None
    if len(c.kinds) > 1 or c.api_sync.n:
        t = Table(title="Call kinds (p50 over warm calls)", title_justify="left", pad_edge=False)
        t.add_column("kind", overflow="ellipsis", max_width=24, no_wrap=True)
        for col in ("calls", "warm", "call", "+ sync", "kernel"):
            t.add_column(col, justify="right")
        rows = [(k.name, k.count, k.warm_count, k.stats, k.api_sync) for k in c.kinds[:KIND_ROWS]]
        if len(c.kinds) > 1:
            rows.append(("all kinds", len(c.calls), c.warm_count, c.stats, c.api_sync))
        for name, n, w, st, sync in rows:
            t.add_row(Text(name), str(n), str(w), fmt_ns(st["api_ns"].p50), fmt_ns(sync.p50),
                      fmt_ns(st["kernel_ns"].p50))
        out.extend(x for x in (head, t) if x is not None)
    elif head is not None:
        out.append(head)
    pc = ex.per_call
    if pc is None:
        return out
    note = unprofiled_note(ex)
    if pc.families and ex.has_python_frames:
        t = Table(title=f"A warm call by Python module (p50 of {pc.warm_calls} warm calls)"
                        f"{unprofiled_short(ex)}",
                  title_justify="left", pad_edge=False)
        t.add_column("module (innermost frame)", overflow="ellipsis", max_width=46, no_wrap=True)
        t.add_column("per call", justify="right")
        t.add_column("share", justify="right")
        for f in pc.families[:FAMILY_ROWS]:
            t.add_row(Text(f.name), fmt_ns(f.ns_per_call), f"{100 * f.share:.1f}%")
        if len(pc.families) > FAMILY_ROWS:
            t.add_row(Text(f"{len(pc.families) - FAMILY_ROWS} more (--format json)"), "", "")
        out.append(t)
    if pc.tree:
        floor = TREE_MIN_SHARE_TEXT * _call_p50(ex)
        tree = Tree(Text(f"Typical warm call, top-down (p50 per warm call; nodes under "
                         f"{100 * TREE_MIN_SHARE_TEXT:.0f}% of the call folded)", style="bold"))

        def add(branch, nodes, depth):
            shown = _visible(nodes, floor)
            for n in shown:
                sub = branch.add(Text(_node_label(n, pc.warm_calls)))
                if depth < TREE_DEPTH_TEXT:
                    add(sub, n.children, depth + 1)
            hidden = len(nodes) - len(shown)
            if hidden:
                ns = sum(n.inclusive_ns for n in nodes if n not in shown)
                branch.add(Text(f"... {hidden} smaller ({fmt_ns(ns)})", style="grey50"))

        add(tree, pc.tree, 1)
        out.append(tree)
    extra = [x for x in (perturbation_line(ex), note) if x]
    if extra:
        out.append(Text("\n".join(extra)))
    return out


# ---------------------------------------------------------------- markdown


def markdown_sections(ex: Explanation, esc, code, table, details) -> list[str]:
    c = ex.calls
    if not c.calls:
        return []
    parts = [esc(c.description) + "".join(f"  \n{esc(x)}" for x in reasons_lines(ex))]
    if len(c.kinds) > 1 or c.api_sync.n:
        rows = [[code(k.name), str(k.count), str(k.warm_count), fmt_ns(k.stats["api_ns"].p50),
                 fmt_ns(k.api_sync.p50), fmt_ns(k.stats["kernel_ns"].p50)] for k in c.kinds]
        if len(c.kinds) > 1:
            rows.append(["all kinds", str(len(c.calls)), str(c.warm_count),
                         fmt_ns(c.stats["api_ns"].p50), fmt_ns(c.api_sync.p50),
                         fmt_ns(c.stats["kernel_ns"].p50)])
        parts.append(table(["kind", "calls", "warm", "call", "call + sync", "kernel"], rows))
    pc = ex.per_call
    if pc is None:
        return parts
    if pc.families and ex.has_python_frames:
        rows = [[code(f.name), fmt_ns(f.ns_per_call), f"{100 * f.share:.1f}%"]
                for f in pc.families[:FAMILY_ROWS]]
        parts.append(f"#### Where a warm call goes, by Python module (p50 over {pc.warm_calls} "
                     f"warm calls){unprofiled_short(ex)}")
        parts.append(table(["module (innermost frame)", "per call", "share"], rows))
    if pc.tree:
        floor = TREE_MIN_SHARE_TEXT * _call_p50(ex)
        lines: list[str] = []

        def add(nodes, depth):
            for n in _visible(nodes, floor):
                lines.append("  " * (depth - 1) + _node_label(n, pc.warm_calls).replace("`", "'"))
                if depth < TREE_DEPTH_TEXT:
                    add(n.children, depth + 1)

        add(pc.tree, 1)
        # a fenced block: deep nested lists exceed markdown renderers' nesting limits
        parts.append(details("Typical warm call, top-down (p50 per warm call, inclusive and self"
                             f"; nodes under {100 * TREE_MIN_SHARE_TEXT:.0f}% of the call left out)",
                             "```text\n" + "\n".join(lines) + "\n```"))
    extra = [x for x in (perturbation_line(ex), unprofiled_note(ex)) if x]
    if extra:
        parts.append(esc("; ".join(extra)))
    return parts
