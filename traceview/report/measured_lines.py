"""The measured documents' sentences as claims: capture's summary and a sweep's page.

capture's summary prints, under its table, why the amortized submit and the full API p50
differ (``capture-amortized``: above or below, as the figures are) and beside the
profiled call how far it is from the same call unprofiled (``capture-perturbation``); a
sweep prints where the kernel starts to hide the host cost (``sweep-crossover``) and
where it starts to move its bytes at half the copy peak (``sweep-bandwidth``). Each is
made here from the document it is printed from, every figure cited where that document
holds it, so ``tests/test_claims.py`` reads each back against the document: capture's
JSON (``capture --format json``: the trace's ``traceview`` metadata under
``traceview``), explain's report of the captured trace (its ``trace.capture`` block and
its calls) and ``sweep.json``.
"""

from __future__ import annotations

from typing import Any

from traceview.report.claims import Claim, Figure, Relation, pointer, rel
from traceview.units import fmt_ns, fmt_rate


def amortized_claim(base: dict[str, Any],
                    at: tuple[str | int, ...] = ("traceview", "baseline")) -> Claim | None:
    """Why 'amortized submit' and 'full API p50' differ, in words, with this run's
    figures: the submit above the p50 ("as here") or below it, as the baseline at ``at``
    has them. None without both figures."""
    full, submit, n = base.get("full_api_ns_p50"), base.get("amortized_submit_ns"), base.get("n")
    if full is None or submit is None:
        return None
    words = (f"full API p50 ({fmt_ns(full)}) is the median of {n} calls each timed alone up to "
             "a synchronize: host work, device work and the wait. Amortized submit "
             f"({fmt_ns(submit)}) is the host time per call of {n} calls issued back to back "
             "with one synchronize after the loop: no wait per call, device work overlapped "
             "with the next call's host work, and a mean, not a median")
    if submit > full:
        words += (" -- so it can come out above the p50, as here, when the device is idle "
                  "anyway and slower calls (allocator, queue, interpreter) weigh in a mean "
                  "that a median drops.")
    else:
        words += " -- below the p50 by the wait and the device work it does not include."
    return Claim("capture-amortized", words,
                 (Figure("full", full, pointer(*at, "full_api_ns_p50")),
                  Figure("submit", submit, pointer(*at, "amortized_submit_ns")),
                  Figure("n", n, pointer(*at, "n"))),
                 (rel("gt" if submit > full else "le", "submit", "full"),))


# The like-for-like unprofiled figure of a profiled call, by protocol: a graph replay, a
# synchronised call (``--sync each``) or a submission (``--sync end``).
_REFERENCE = {"graph": ("replay_ns_p50", "unprofiled replay"),
              "each": ("full_api_ns_p50", "unprofiled full API"),
              "end": ("amortized_submit_ns", "unprofiled submit")}


def perturbation_claim(report: dict[str, Any]) -> Claim | None:
    """How far the profiled call (explain's call API p50) is from the same thing
    unprofiled (capture's baseline in the same trace): the profiler's cost, as a share
    of the unprofiled figure, over explain's report of the captured trace. None without
    both figures (the note then says "profiled" alone)."""
    cap = (report.get("trace") or {}).get("capture") or {}
    base, proto = cap.get("baseline") or {}, cap.get("protocol") or {}
    key, label = _REFERENCE["graph" if proto.get("mode") == "graph" else
                           "each" if proto.get("sync") == "each" else "end"]
    api = (((report.get("calls") or {}).get("stats") or {}).get("api_ns") or {}).get("p50")
    ref = base.get(key)
    if api is None or not ref:
        return None
    return Claim("capture-perturbation", f"profiled; {100.0 * (api - ref) / ref:+.0f}% vs {label}",
                 (Figure("api", api, pointer("calls", "stats", "api_ns", "p50")),
                  Figure("ref", ref, pointer("trace", "capture", "baseline", key)),
                  Figure("cost", api - ref), Figure("share", (api - ref) / ref)),
                 (rel("sum", "ref", "cost", "api"), rel("ratio", "cost", "ref", "share")))


def crossover_claim(summary: dict[str, Any]) -> Claim:
    """The sweep's crossover sentence over ``sweep.json``: the crossover is the first
    size whose kernel takes at least its host gap (every measured size before it takes
    less), or no size does; the fixed host gap lies within the gaps of the sizes below
    it (their median)."""
    crossover, fixed = summary["crossover_numel"], summary["fixed_host_gap_ns"]
    if fixed is None:
        return Claim("sweep-crossover",
                     "No host gap measured (no device kernel time on this device).",
                     (Figure("fixed", None, pointer("fixed_host_gap_ns")),))
    figs = [Figure("crossover", crossover, pointer("crossover_numel")),
            Figure("fixed", fixed, pointer("fixed_host_gap_ns"))]
    rels: list[Relation] = []
    below = []
    for k, r in enumerate(summary["rows"]):
        if r.get("kernel_ns") is None or r.get("host_gap_ns") is None:
            continue
        kernel, gap = f"kernel:{k}", f"gap:{k}"
        figs += [Figure(kernel, r["kernel_ns"], pointer("rows", k, "kernel_ns")),
                 Figure(gap, r["host_gap_ns"], pointer("rows", k, "host_gap_ns"))]
        if r["numel"] == crossover:
            figs.append(Figure(f"numel:{k}", r["numel"], pointer("rows", k, "numel")))
            rels += [rel("eq", f"numel:{k}", "crossover"), rel("ge", kernel, gap)]
            break
        rels.append(rel("lt", kernel, gap))
        below.append((r["host_gap_ns"], gap))
    if below:  # a median lies between the least and the greatest of what it is over
        rels += [rel("le", min(below)[1], "fixed"), rel("ge", max(below)[1], "fixed")]
    gap_words = f"fixed host gap about {fmt_ns(fixed)}"
    if crossover is None:
        return Claim("sweep-crossover", f"No crossover in this range: the kernel never hides "
                     f"the host cost ({gap_words}).", tuple(figs), tuple(rels))
    return Claim("sweep-crossover", (
        f"Crossover at numel {crossover}: from there the kernel takes at least as long "
        f"as the host gap ({gap_words})."), tuple(figs), tuple(rels))


# A size is bandwidth-bound from this share of the copy peak on (``sweep.bandwidth_bound``).
HALF = 0.5


def bandwidth_claim(summary: dict[str, Any]) -> Claim:
    """The sweep's bandwidth sentence over ``sweep.json``: the first size at half the
    copy peak or more (every size before it below), or none; the copy peak and the best
    rate the largest of the sizes' (each size's cited)."""
    rows = summary["rows"]
    bound = summary.get("bandwidth_bound_numel")
    figs = [Figure("bound", bound, pointer("bandwidth_bound_numel")), Figure("half", HALF)]
    rels: list[Relation] = []
    for k, r in enumerate(rows):
        share = r.get("share_of_copy_peak")
        if share is None:
            continue
        figs.append(Figure(f"share:{k}", share, pointer("rows", k, "share_of_copy_peak")))
        if r["numel"] == bound:
            figs.append(Figure(f"numel:{k}", r["numel"], pointer("rows", k, "numel")))
            rels += [rel("eq", f"numel:{k}", "bound"), rel("ge", f"share:{k}", "half")]
            break
        rels.append(rel("lt", f"share:{k}", "half"))
    peak, best = "", None
    for name, key in (("peak", "copy_peak_gb_per_s"), ("best", "gb_per_s")):
        # the peak of the sizes that measured one; the best of every rate, 0 included
        have = [(r[key], k) for k, r in enumerate(rows)
                if (r.get(key) if name == "peak" else r.get(key) is not None)]
        if not have:
            continue
        top, at = max(have)
        figs.append(Figure(name, top, pointer("rows", at, key)))
        for v, k in have:  # the largest: at least every size's
            figs.append(Figure(f"{name}:{k}", v, pointer("rows", k, key)))
            rels.append(rel("ge", name, f"{name}:{k}"))
        if name == "peak":
            peak = f" (copy peak measured {fmt_rate(top)})"
        else:
            best = top
    if bound is None:
        text = (f"Latency-bound over the whole range: no size reaches half of this device's "
                f"copy peak{peak}; best {fmt_rate(best)}.")
    else:
        text = (f"Bandwidth-bound from numel {bound}: the first size whose kernel moves its "
                f"bytes at half of this device's copy peak or more{peak}; below it the kernel "
                f"is latency-bound. Best {fmt_rate(best)}.")
    return Claim("sweep-bandwidth", text, tuple(figs), tuple(rels))
