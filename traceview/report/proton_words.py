"""The sentences of a Proton report, as claims (``report.claims``).

``report.proton`` reads a Proton profile into figures; the sentences it carries (a call's
outlier reason, the notes on merged scopes and out-of-range nodes) are made here from
the figures they state, cited in the Proton document (``ProtonTraceReport.to_dict``,
``ProtonTreeReport.to_dict``) where it holds them. The lines above the tables are
``report.proton_lines``'.
"""

from __future__ import annotations

from traceview.report.claims import Claim, Figure, pointer, rel
from traceview.units import fmt_ns, plural


def outlier_claim(index: int, span_ns: int, median_ns: int, ratio: float) -> Claim:
    """Call ``index``'s outlier reason: its span against the other calls' median, above
    ``ratio`` times it (the same rule as Kineto calls')."""
    return Claim("proton-outlier", (
        f"span {fmt_ns(span_ns)} against {fmt_ns(median_ns)} for the others: device "
        "idle between its kernels, whose cause a kernel-only trace cannot tell "
        "(often a first call's set-up)"),
        (Figure("span", span_ns, pointer("calls", index, "span_ns")),
         Figure("median", median_ns), Figure("ratio", ratio),
         Figure("bound", ratio * median_ns)),
        (rel("ratio", "bound", "median", "ratio"), rel("gt", "span", "bound")))


def overlap_claim(overlapping: int, calls: int) -> Claim:
    """The note that calls overlap in time: how many, of the calls read."""
    return Claim("proton-overlap", (
        f"{overlapping} calls overlap in time: Proton merges scopes of one "
        "name, so a scope name reused across calls is one call here; name "
        "each call's scope uniquely (call_{i}) to tell calls apart"),
        (Figure("overlapping", overlapping), Figure("calls", calls),
         Figure("last", calls - 1, pointer("calls", calls - 1, "index"))),
        (rel("le", "overlapping", "calls"),))


def bad_nodes_claim(bad: int) -> Claim:
    """The note that nodes with out-of-range figures were left out, counted."""
    return Claim("proton-bad-nodes", (
        f"{plural(bad, 'node')} with a time or count out of range (negative, "
        "or past 2**62) left out of every figure"), (Figure("bad", bad),))

