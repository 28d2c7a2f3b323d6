"""The sentences of the integrity verdicts and the what-if projections, as claims.

``analyses.integrity`` and ``analyses.what_if`` hold figures only. Each sentence here is
a claim (``report.claims``) made from the report's figures it asserts, each cited where
the JSON holds it (``integrity``, ``what_if``, explain schema 3): a check's count beside
the launches it is a part of, a projection's interval around its figure, the call it
replaces (the unprofiled call where one is known), the chain it fuses. ``build_report``
puts them in the report's claims; every renderer prints their texts
(``integrity_lines``, ``what_if_lines``), so the text, the markdown and the JSON say the
same thing and ``tests/test_claims.py`` reads each one back against the JSON.
"""

from __future__ import annotations

from collections.abc import Callable

from traceview.metadata import runtime_of
from traceview.report.claims import Claim, Figure, Relation, pointer, rel
from traceview.report.model import IntegrityCheck, IntegrityInfo, Report, WhatIfRow
from traceview.report.unprofiled import UnprofiledInfo
from traceview.units import fmt_ns

TITLE_INTEGRITY = "Trace integrity"
# each model's error against its counterfactual measured unprofiled on a GPU is in
# docs/what-if.md (tests/test_what_if_validation.py recomputes them)
TITLE_WHAT_IF = "What if (models of the typical call; their errors on a GPU: docs/what-if.md)"
# The sentence ids of this module (``codes.SENTENCES``).
INTEGRITY_IDS = ("integrity-check", "integrity-graphs", "integrity-incomplete",
                 "integrity-unreliable")
WHAT_IF_ID = "what-if"
# Calls and steps a sentence names one by one; the rest are counted.
IDS_NAMED = 8


class _Cited:
    """The figures and relations of one claim as its sentence is written."""

    def __init__(self) -> None:
        self.figs: list[Figure] = []
        self.rels: list[Relation] = []

    def fig(self, name: str, value: int | float | None, *path: str | int) -> int | float | None:
        self.figs.append(Figure(name, value, pointer(*path) if path else None))
        return value

    def ns(self, name: str, value: int, *path: str | int) -> str:
        self.fig(name, value, *path)
        return fmt_ns(value)

    def ids(self, name: str, ids: tuple[int, ...], *path: str | int) -> str:
        """``#3, #4, #9 and 5 more``: each id named cited at its place in the list; the
        number not named is the list's length (its last item cited where it stands: a
        pointer names no length) less those named."""
        shown = ids[:IDS_NAMED]
        for j, i in enumerate(shown):
            self.fig(f"{name}:{j}", i, *path, j)
        # "#3" as the per-call title and the cold/outlier lines name calls: a bare "0" in
        # "steps touched: 0" reads as a count, not as step #0
        text = ", ".join(f"#{i}" for i in shown)
        if len(ids) > len(shown):
            more = len(ids) - len(shown)
            self.fig(f"{name}:named", len(shown))
            self.fig(f"{name}:more", more)
            self.fig(f"{name}:listed", len(ids))
            self.fig(f"{name}:last", ids[-1], *path, len(ids) - 1)
            self.rels.append(rel("sum", f"{name}:named", f"{name}:more", f"{name}:listed"))
            text += f" and {more} more"
        return text

    def claim(self, cid: str, text: str) -> Claim:
        return Claim(cid, text, tuple(self.figs), tuple(self.rels))


def _calls(c: _Cited, ids: tuple[int, ...], *path: str | int) -> str:
    return f"call{'s' if len(ids) != 1 else ''} {c.ids('call', ids, *path)}"


def check_claim(k: int, chk: IntegrityCheck, launches: int, api: str = "CUDA", *,
                none_warm: bool = False) -> Claim:
    """Check ``k``'s sentence: its count, where it falls, what it means for the figures.
    ``none_warm``: no call is warm, so the figures are over every call, incomplete ones
    included (``calls.warm_calls``)."""
    c = _Cited()
    at = ("integrity", "checks", k)
    c.fig("count", chk.count, *at, "count")
    where = f" ({_calls(c, chk.calls, *at, 'calls')})" if chk.calls else ""
    if chk.id in ("launch-without-device-work", "dropped-prefix"):
        # the launches without a record are some of the window's launches
        c.fig("launches", launches, "launches", "count")
        c.rels.append(rel("le", "count", "launches"))
    if chk.id == "launch-without-device-work" and none_warm:
        text = (f"{chk.count} of {launches} launches have no device record{where}: "
                "those calls are marked incomplete; no call is warm, so the figures are "
                "over every call, incomplete ones included, and their idle may be the "
                "missing records'")
    elif chk.id == "launch-without-device-work":
        text = (f"{chk.count} of {launches} launches have no device record{where}: "
                "those calls are marked incomplete and left out of the warm-call and idle "
                "figures, since their idle would be the missing records'")
    elif chk.id == "dropped-device-records":
        text = (f"{chk.count} device records are missing from {api} graph replays that recorded "
                f"fewer nodes than their graph's other replays{where}: the device ran them, "
                "the profiler did not record them, so the idle beside them is not real")
    elif chk.id == "dropped-prefix":
        text = (f"the first {chk.count} launches have no device record and later launches "
                "do: an earlier profiling session's records were lost; the window's idle "
                "before them is not the program's")
    elif chk.id == "duration-overrun":
        text = (f"{chk.count} device records end after the next record on their stream "
                f"starts ({c.ns('overlap', chk.ns, *at, 'ns')} of overlap){where}: one "
                "stream runs one thing at a time, so busy time and kernel sums are "
                "overstated by up to that much")
    elif chk.id == "device-work-without-launch":
        text = (f"{chk.count} device records have no launch record{where}: their launch "
                "latency is unknown")
    elif chk.id == "graph-capture":
        text = (f"{chk.count} {api} graph capture(s) in the window "
                f"({c.ns('capture', chk.ns, *at, 'ns')} from the first capture begin to the "
                "last end): the device runs no captured work while the host captures, so "
                "this window's idle is the capture's, not the program's")
    else:
        text = f"{chk.id}: {chk.count}{where}"
    if chk.steps:
        text += f"; steps touched: {c.ids('step', chk.steps, *at, 'steps')}"
    return c.claim("integrity-check", text)


def integrity_claims(g: IntegrityInfo | None, launches: int, api: str = "CUDA", *,
                     none_warm: bool = False) -> list[Claim]:
    """The integrity section's sentences; none for a trace with nothing to say (no
    damage, no graphs). ``launches``: the window's launch count (``launches.count``);
    ``api``: the runtime whose graphs they are (``analyses.runtime``: CUDA or HIP);
    ``none_warm``: no call is warm (``calls.warm_count`` 0), so no call is left out."""
    if g is None:
        return []
    out = [check_claim(k, chk, launches, api, none_warm=none_warm) for k, chk in enumerate(g.checks)]
    gr = g.graphs
    if gr.replays:
        c = _Cited()
        at = ("integrity", "graphs")
        c.fig("replays", gr.replays, *at, "replays")
        ids = ""
        if gr.graph_ids:
            c.fig("graphs", gr.graph_ids, *at, "graph_ids")
            ids = f" of {gr.graph_ids} graph(s)"
        for s in ("min", "p50", "max"):
            c.fig(s, getattr(gr.nodes, s), *at, "nodes", s)
        c.rels += [rel("le", "min", "p50"), rel("le", "p50", "max")]
        out.append(c.claim("integrity-graphs", (
            f"{api} graphs: {gr.replays} replay(s){ids}, {gr.nodes.p50} device nodes per "
            f"replay (p50; {gr.nodes.min} to {gr.nodes.max}), each node counted as the work "
            "of the call that launched the replay")))
    if g.incomplete_calls:
        c = _Cited()
        named = c.ids("call", g.incomplete_calls, "integrity", "incomplete_calls")
        c.fig("incomplete", len(g.incomplete_calls))
        if len(g.incomplete_calls) > IDS_NAMED:
            c.rels.append(rel("eq", "incomplete", "call:listed"))
        left = ("counted in the figures, since no call is warm" if none_warm
                else "left out of the warm figures")
        out.append(c.claim("integrity-incomplete", (
            f"{len(g.incomplete_calls)} incomplete call(s) {left}: {named}")))
    if g.unreliable:
        # names the figures (JSON paths), asserting no number about them
        out.append(Claim("integrity-unreliable",
                         "unreliable figures: " + ", ".join(g.unreliable), ()))
    return out


def _projection_head(c: _Cited, w: WhatIfRow, at: tuple[str, int], measured: str) -> str:
    """The projection against the measured figure, with its interval or point, cited in
    ``c``: a gain as a ratio, a projection at or above the measured figure as no gain."""
    projected = c.ns("projected", w.projected_ns, *at, "projected_ns")
    ratio = ""
    gain = w.projected_ns < w.measured_ns
    if w.projected_ns and gain:
        c.fig("ratio", w.measured_ns / w.projected_ns)
        c.rels.append(rel("ratio", "measured", "projected", "ratio"))
        ratio = f", {w.measured_ns / w.projected_ns:.1f}x"
    elif not gain:
        c.rels.append(rel("ge", "projected", "measured"))
    c.fig("low", w.low_ns, *at, "low_ns")
    c.fig("high", w.high_ns, *at, "high_ns")
    c.rels += [rel("le", "low", "projected"), rel("le", "projected", "high")]
    # one gap removed has no spread to give an interval from: a point is said as a point
    if w.low_ns != w.high_ns:
        c.rels.append(rel("lt", "low", "high"))
        spread = f" ({fmt_ns(w.low_ns)} to {fmt_ns(w.high_ns)})"
    else:
        c.rels.append(rel("eq", "low", "high"))
        spread = " (a point: no spread to give an interval)"
    if gain:
        return f"{projected} per call{spread} against {measured} now{ratio}"
    return (f"no gain: the model projects {projected} per call{spread}, "
            f"{'above' if w.projected_ns > w.measured_ns else 'equal to'} the measured "
            f"{measured}")


def _kept(c: _Cited, b: dict[str, int | float | str],
          basis: Callable[[str, str], str]) -> str:
    """What the models that take the host away keep (``analyses.what_if``): the device
    work the call did not launch that its nodes queue behind, and the host's waits in
    synchronizing calls with the device idle (waits for what the trace does not show)."""
    behind = (f", behind {basis('foreign', 'foreign_device_ns')} of device work the "
              f"call did not launch that keeps its streams busy inside it"
              if b.get("foreign_device_ns") else "")
    return behind + _stalled_kept(c, b, basis)


def _stalled_kept(c: _Cited, b: dict[str, int | float | str],
                  basis: Callable[[str, str], str], lead: str = ", and the") -> str:
    """What every model keeps whole: the host's waits in synchronizing calls with the
    device idle (a wait for what the trace does not show), cited in ``c``."""
    if not b.get("stalled_sync_ns"):
        return ""
    stalled = basis("stalled", "stalled_sync_ns")
    c.rels.append(rel("ge", "projected", "stalled"))
    return (f"{lead} {stalled} the host waits in synchronizing calls with the "
            "device idle (a wait for what the trace does not show, not host work)")


def what_if_claim(k: int, w: WhatIfRow, unprofiled: UnprofiledInfo | None,
                  typical: int | None, api: str = "CUDA") -> Claim:
    """Projection ``k``: its figure, interval and the figures it rests on. The call it
    projects is the typical call, and the figure it replaces is that call's unprofiled
    time where one is known, else its profiled one. A projection at or above the
    measured figure is said as no gain, never as a speed-up below 1x (a call that
    returns before its device work ends measures less than the work it launched).
    ``api``: the runtime whose graph the model replays (CUDA or HIP)."""
    b = w.basis
    c = _Cited()
    at = ("what_if", k)
    c.fig("call", w.call, *at, "call")
    if typical is not None:
        c.fig("typical", typical, "typical_call", "index")
        c.rels.append(rel("eq", "call", "typical"))
    measured = c.ns("measured", w.measured_ns, *at, "measured_ns")
    if unprofiled is not None and unprofiled.call_ns:
        c.fig("replaced", unprofiled.call_ns, "unprofiled", "call_ns")
    else:
        c.fig("replaced", w.measured_ns, "calls", "per_call", w.call, "metrics", "api_ns")
    c.rels.append(rel("eq", "measured", "replaced"))
    head = _projection_head(c, w, at, measured)

    def basis(name: str, key: str) -> str:
        value = b.get(key, 0)
        assert not isinstance(value, str), key
        c.fig(name, value, *at, "basis", key)
        return fmt_ns(int(value)) if key.endswith("_ns") else str(value)

    if w.scenario in ("cuda-graph", "no-host-overhead"):
        matched = b.get("card_matched")
        c.fig("card_matched", None if isinstance(matched, str) else matched,
              *at, "basis", "card_matched")
        card = f"{b.get('card')}{'' if matched else ', not the trace card'}"
        nodes = "node" if b.get("nodes") == 1 else "nodes"
        behind = _kept(c, b, basis)
        if w.scenario == "cuda-graph":
            # the model runs the nodes one after another: their durations summed, which
            # exceeds the device busy time (a union over streams) where streams overlap
            n = basis('nodes', 'nodes')
            work = basis('device_work', 'device_work_ns')
            summed = (f"1 node of {work} device time" if nodes == "node" else
                      f"{n} nodes, {work} of device time summed over the nodes")
            return c.claim(WHAT_IF_ID, (
                f"as one {api} graph: {head}: {summed}, one graph "
                f"launch of {basis('fixed', 'fixed_ns')} + "
                f"{basis('per_node', 'per_node_ns')} per node (measured on {card}){behind}"))
        return c.claim(WHAT_IF_ID, (
            f"without host overhead (the device-bound limit): {head}: the "
            f"{basis('nodes', 'nodes')} {nodes} back to back, "
            f"{basis('per_node', 'per_node_ns')} per node when queued (measured on {card})"
            f"{behind}"))
    if w.scenario == "fewer-launches":
        scale = b.get("unprofiled_scale", 1.0)
        scaled = ""
        if not isinstance(scale, str) and float(scale) != 1.0:
            c.fig("scale", scale, *at, "basis", "unprofiled_scale")
            scaled = " (scaled to the unprofiled call)"
        removed = basis("removed", "launches_removed")
        chain = basis("chain", "chain_launches")
        # fusing a chain of N launches into one removes N - 1 of them
        c.fig("fused", 1)
        c.rels.append(rel("sum", "removed", "fused", "chain"))
        spacing = basis("spacing", "removed_host_ns")
        floor = basis("floor", "device_floor_ns")
        if b.get("foreign_device_ns"):
            foreign = basis("foreign", "foreign_device_ns")
            c.rels.append(rel("ge", "floor", "foreign"))
            floor += f" ({foreign} of it device work the call did not launch)"
        # the device still runs the rest of the call's work and the chain's longest kernel
        c.rels.append(rel("ge", "projected", "floor"))
        kept = _stalled_kept(c, b, basis, "; kept whole: the")
        return c.claim(WHAT_IF_ID, (
            f"with {removed} fewer {'launch' if removed == '1' else 'launches'} (the "
            f"{chain}-launch pointwise chain fused): "
            f"{head}: {spacing} of launch spacing removed{scaled}, device floor {floor}"
            f"{kept}"))
    return c.claim(WHAT_IF_ID, f"{w.scenario}: {head}")


def what_if_claims(rows: tuple[WhatIfRow, ...], unprofiled: UnprofiledInfo | None,
                   typical: int | None, api: str = "CUDA") -> list[Claim]:
    return [what_if_claim(k, w, unprofiled, typical, api) for k, w in enumerate(rows)]


def _api(r: Report) -> str:
    """The runtime of a report's trace (CUDA or HIP), from its header and launches."""
    return runtime_of(r.trace.metadata, r.launches.by_api).api


def integrity_lines(r: Report) -> list[str]:
    """The integrity section's lines: the texts of the report's integrity claims (made
    now for a report read back from a JSON written before they were claims)."""
    said = [c.text for c in r.claims if c.id in INTEGRITY_IDS]
    none_warm = r.calls.count > 0 and r.calls.warm_count == 0
    return said or [c.text for c in integrity_claims(r.integrity, r.launches.count, _api(r),
                                                     none_warm=none_warm)]


def what_if_lines(r: Report) -> list[str]:
    said = [c.text for c in r.claims if c.id == WHAT_IF_ID]
    return said or [c.text for c in what_if_claims(
        r.what_if, r.unprofiled, None if r.typical_call is None else r.typical_call.index,
        _api(r))]
