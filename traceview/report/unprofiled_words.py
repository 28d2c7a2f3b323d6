"""The words of the unprofiled split's method and measurement, as claims.

``report.unprofiled`` computes the split; the sentences that state its figures are made
here from the figures the report's JSON holds: the profiled-shares model's ratio (the
unprofiled call over the profiled call less the profiler's own time) and its spread
(the unprofiled call over the scaled categories' sum, ``categories_raw_sum_ns``), and
the measured split's timer cost (capture's calibration). ``report.sentences`` adds the
model's figures to the unprofiled headline's claim, whose text carries the method.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from traceview.report.claims import Claim, Figure, Relation, pointer, rel

MODEL = "profiled-shares model"
# The profiler's own work: no unprofiled counterpart (``report.unprofiled``).
SKIP_CATEGORIES = frozenset({"profiler"})
U = ("unprofiled",)
CALIBRATION = ("trace", "capture", "baseline", "split", "calibration")


def model_claim(call_u: int, profiled_call: int, profiled_categories: Mapping[str, int],
                raw_sum: int) -> Claim:
    """The model's method: every profiled figure times the ratio, the categories then
    times the spread that makes them sum to the call. ``raw_sum``: the scaled
    categories' sum as the JSON holds it (rounded to 1 ns), so the spread shown is the
    one a reader computes."""
    own = sum(v for k, v in profiled_categories.items() if k in SKIP_CATEGORIES)
    base = max(profiled_call - own, 1)
    ratio = call_u / base
    figs = [Figure("call", call_u, pointer(*U, "call_ns")),
            Figure("profiled", profiled_call, pointer(*U, "profiled_call_ns")),
            Figure("base", base), Figure("ratio", ratio)]
    rels: list[Relation] = [rel("ratio", "call", "base", "ratio")]
    skipped = [k for k in sorted(SKIP_CATEGORIES) if k in profiled_categories]
    figs += [Figure(f"own:{k}", profiled_categories[k],
                    pointer(*U, "profiled_categories", k)) for k in skipped]
    if profiled_call - own >= 1:  # else the base is 1 ns, not the difference
        rels.append(rel("sum", "base", *(f"own:{k}" for k in skipped), "profiled"))
    spread = call_u / raw_sum if raw_sum > 0 else 1.0
    figs += [Figure("raw_sum", raw_sum, pointer(*U, "categories_raw_sum_ns")),
             Figure("spread", spread)]
    if raw_sum > 0:
        rels.append(rel("ratio", "call", "raw_sum", "spread"))
    return Claim("unprofiled-model", (
        f"{MODEL}: every profiled figure x {ratio:.3f} (the unprofiled call over the "
        "profiled call without the profiler's own time); categories: their profiled "
        f"p50s x {ratio:.3f}, then x {spread:.3f} to sum to the call (p50s of each "
        "category do not sum to the call's p50)"), tuple(figs), tuple(rels))


def measuring_claim(calibration: Mapping[str, Any]) -> Claim:
    """What the measured split's timing cost, and what of it was subtracted: capture's
    calibration, cited where the trace's capture metadata holds it."""
    per, band = calibration.get("per_invocation_ns"), calibration.get("in_band_ns")
    figs = [Figure("per_invocation", per, pointer(*CALIBRATION, "per_invocation_ns")),
            Figure("in_band", band, pointer(*CALIBRATION, "in_band_ns"))]
    # "N ns of it": the part inside the reading is some of the whole cost
    rels = (rel("le", "in_band", "per_invocation"),) \
        if isinstance(per, int) and isinstance(band, int) else ()
    return Claim("unprofiled-measuring", (
        f"timer cost {per} ns per timed invocation ({band} ns of it inside the reading, "
        "subtracted); one function timed per run, so no figure carries another's timer "
        "cost"), tuple(figs), rels)
