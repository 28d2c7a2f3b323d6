"""The sentences of the integrity verdicts and the what-if projections.

``analyses.integrity`` and ``analyses.what_if`` hold figures only; each sentence here
is built from the report's figures it asserts (``Report.integrity``, ``Report.what_if``)
and nothing else, so the text, the markdown and the JSON say the same thing. Every
renderer takes its lines from here.
"""

from __future__ import annotations

from traceview.report.model import IntegrityCheck, Report, WhatIfRow
from traceview.units import fmt_ns

TITLE_INTEGRITY = "Trace integrity"
# the models are not yet checked against measured counterfactuals (docs/what-if.md)
TITLE_WHAT_IF = "What if (models of the typical call, not yet checked on a GPU)"


def _ids(ids: tuple[int, ...], limit: int = 8) -> str:
    shown = ", ".join(str(i) for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _calls(ids: tuple[int, ...]) -> str:
    return f"call{'s' if len(ids) != 1 else ''} {_ids(ids)}"


def check_sentence(c: IntegrityCheck, r: Report) -> str:
    """One check's sentence: its count, where it falls, what it means for the figures."""
    where = f" ({_calls(c.calls)})" if c.calls else ""
    steps = f"; steps touched: {_ids(c.steps)}" if c.steps else ""
    if c.id == "launch-without-device-work":
        text = (f"{c.count} of {r.launches.count} launches have no device record{where}: "
                "those calls are marked incomplete and left out of the warm-call and idle "
                "figures, since their idle would be the missing records'")
    elif c.id == "dropped-device-records":
        text = (f"{c.count} device records are missing from CUDA graph replays that recorded "
                f"fewer nodes than their graph's other replays{where}: the device ran them, "
                "the profiler did not record them, so the idle beside them is not real")
    elif c.id == "dropped-prefix":
        text = (f"the first {c.count} launches have no device record and later launches "
                "do: an earlier profiling session's records were lost; the window's idle "
                "before them is not the program's")
    elif c.id == "duration-overrun":
        text = (f"{c.count} device records end after the next record on their stream "
                f"starts ({fmt_ns(c.ns)} of overlap){where}: one stream runs one thing at a "
                "time, so busy time and kernel sums are overstated by up to that much")
    elif c.id == "device-work-without-launch":
        text = (f"{c.count} device records have no launch record{where}: their launch "
                "latency is unknown")
    elif c.id == "graph-capture":
        text = (f"{c.count} CUDA graph capture(s) in the window ({fmt_ns(c.ns)} from the "
                "first capture begin to the last end): the device runs no captured work "
                "while the host captures, so this window's idle is the capture's, not the "
                "program's")
    else:
        text = f"{c.id}: {c.count}{where}"
    return text + steps


def integrity_lines(r: Report) -> list[str]:
    """The integrity section's lines; none for a trace with nothing to say (no damage,
    no graphs)."""
    g = r.integrity
    if g is None:
        return []
    lines = [check_sentence(c, r) for c in g.checks]
    gr = g.graphs
    if gr.replays:
        ids = f" of {gr.graph_ids} graph(s)" if gr.graph_ids else ""
        lines.append(f"CUDA graphs: {gr.replays} replay(s){ids}, {gr.nodes.p50} device "
                     f"nodes per replay (p50; {gr.nodes.min} to {gr.nodes.max}), each node "
                     "counted as the work of the call that launched the replay")
    if g.incomplete_calls:
        lines.append(f"{len(g.incomplete_calls)} incomplete call(s) left out of the warm "
                     f"figures: {_ids(g.incomplete_calls)}")
    if g.unreliable:
        lines.append("unreliable figures: " + ", ".join(g.unreliable))
    return lines


def what_if_sentence(w: WhatIfRow) -> str:
    """One projection: its figure, interval and the figures it rests on."""
    b = w.basis
    ratio = f", {w.measured_ns / w.projected_ns:.1f}x" if w.projected_ns else ""
    # one gap removed has no spread to give an interval from: a point is said as a point
    spread = (f" ({fmt_ns(w.low_ns)} to {fmt_ns(w.high_ns)})"
              if w.low_ns != w.high_ns else " (a point: no spread to give an interval)")
    head = f"{fmt_ns(w.projected_ns)} per call{spread} against {fmt_ns(w.measured_ns)} now{ratio}"
    card = f"{b.get('card')}{'' if b.get('card_matched') else ', not the trace card'}"
    if w.scenario == "cuda-graph":
        return (f"as one CUDA graph: {head}: {b.get('nodes')} nodes, "
                f"{fmt_ns(int(b.get('device_work_ns', 0)))} of device work, one graph "
                f"launch of {fmt_ns(int(b.get('fixed_ns', 0)))} + "
                f"{fmt_ns(int(b.get('per_node_ns', 0)))} per node (measured on {card})")
    if w.scenario == "no-host-overhead":
        return (f"without host overhead (the device-bound limit): {head}: the "
                f"{b.get('nodes')} nodes back to back, "
                f"{fmt_ns(int(b.get('per_node_ns', 0)))} per node when queued "
                f"(measured on {card})")
    if w.scenario == "fewer-launches":
        scaled = (" (scaled to the unprofiled call)"
                  if float(b.get("unprofiled_scale", 1.0)) != 1.0 else "")
        return (f"with {b.get('launches_removed')} fewer launches (the "
                f"{b.get('chain_launches')}-launch pointwise chain fused): {head}: "
                f"{fmt_ns(int(b.get('removed_host_ns', 0)))} of launch spacing removed"
                f"{scaled}, device floor {fmt_ns(int(b.get('device_floor_ns', 0)))}")
    return f"{w.scenario}: {head}"


def what_if_lines(r: Report) -> list[str]:
    return [what_if_sentence(w) for w in r.what_if]
