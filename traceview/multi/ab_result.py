"""An A/B's rounds paired and judged (torch-free, no process work): :class:`ABResult`.

What ``traceview ab`` measured -- one :class:`ProcessRun` per side and round -- becomes
per-figure paired comparisons (:func:`analyze`, statistics in :mod:`traceview.paired`)
and one verdict line that names its data (:func:`verdict_line`). The renderers
(``render/ab_report.py``) and ``diff --ab`` (``multi/unprofiled.py``) read these without
importing the capture package that ran the processes. JSON: ``ABResult.as_dict``,
written through its layout ``ABDocument`` (docs/ab.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from traceview.documents import VERSIONS, builtins, read
from traceview.paired import PairedComparison, compare

if TYPE_CHECKING:
    from traceview.report.claims import Claim

#: The figures a capture child reports, in the order they are shown. The first judges.
FIGURES = ("full_api_ns_p50", "amortized_submit_ns", "amortized_ns", "device_ns")
FIGURE_LABELS = {
    "full_api_ns_p50": "full call, synchronized each call (median per process)",
    "amortized_submit_ns": "amortized submit, one sync per batch",
    "amortized_ns": "amortized completion per call",
    "device_ns": "device time per op (CUDA graph replay)",
}
#: What a process may also report: its blocks (``--same-process``, ``--reference``), the
#: round's B - A from neighbouring blocks, its figure against the reference, the calls
#: per block it chose from the call's time (``--same-process`` without ``--baseline-n``),
#: which side it built first (``--same-process``: alternating by round).
PER_PROCESS_EXTRA = ("blocks_full_ns", "pair_estimate_ns", "pair_estimate",
                     "vs_reference_ns", "reference", "block_calls", "built_first")
METHOD = ("Hodges-Lehmann estimate of the paired per-round difference B - A (with both "
          "sides in one process, or each against one reference call: the mean of the "
          "median A->B and the median B->A neighbouring-block differences); exact "
          "Wilcoxon signed-rank confidence interval")


@dataclass(frozen=True)
class ProcessRun:
    """One fresh process: its place in the run and what it printed."""

    index: int
    round: int
    side: str
    position: int | None  # 0 or 1 within its round; None: both sides in one process
    wall_ns: int
    result: dict[str, Any]


def paired_figures(runs: Sequence[ProcessRun], key: str) -> tuple[list[int], list[int]] | None:
    """Per-round (A values, B values) of ``result[key]``; None when any round lacks it."""
    by_round: dict[int, dict[str, Any]] = {}
    for run in runs:
        by_round.setdefault(run.round, {})[run.side] = run.result.get(key)
    a, b = [], []
    for r in sorted(by_round):
        x, y = by_round[r].get("A"), by_round[r].get("B")
        if not isinstance(x, int) or not isinstance(y, int):
            return None
        a.append(x)
        b.append(y)
    return a, b


@dataclass(frozen=True)
class ABResult:
    """An interleaved A/B: the sides, every process, and the paired comparisons."""

    sides: dict[str, dict[str, Any]]
    runs: tuple[ProcessRun, ...]
    rounds: int
    order: str
    comparisons: dict[str, PairedComparison]
    protocol: dict[str, Any]
    splits: dict[str, SideSplit] | None = None  # each side's unprofiled split (``--split``)

    @property
    def judged(self) -> PairedComparison | None:
        return self.comparisons.get(FIGURES[0])

    def verdict(self) -> str:
        """The one-line verdict; sides named ``B (patched)`` when they have names."""
        return self.verdict_claim().text

    def verdict_claim(self) -> Claim:
        """The verdict as a claim over this result's document (``as_dict``)."""
        return document_verdict_claim(self.judged, self.rounds, self.sides, self.protocol)

    def as_dict(self) -> dict[str, Any]:
        per_side: dict[str, Any] = {}
        for label, desc in self.sides.items():
            mine = [r for r in self.runs if r.side == label]
            first = mine[0].result if mine else {}
            per_side[label] = dict(desc, processes=[
                {"round": r.round + 1,
                 "position": None if r.position is None else r.position + 1,
                 "wall_ns": r.wall_ns,
                 **{k: r.result.get(k) for k in FIGURES}, "cpu": r.result.get("cpu"),
                 **{k: r.result[k] for k in PER_PROCESS_EXTRA if k in r.result},
                 "phases_ns": r.result.get("phases_ns")}
                for r in mine],
                correctness=first.get("correctness"), versions=first.get("versions"),
                device=first.get("device"))
        return builtins(ABDocument(
            schema_version=VERSIONS["ab"], protocol=self.protocol, rounds=self.rounds,
            order=self.order, run_order=[(r.round + 1, r.side) for r in self.runs],
            sides=per_side, method=METHOD,
            comparisons={k: comparison_doc(c) for k, c in self.comparisons.items()},
            kernels_used=kernels_used_dict(self.sides), clusters=clusters_dict(self.runs),
            splits=self.splits, verdict=self.verdict()))


class SplitFunction(msgspec.Struct, frozen=True, kw_only=True):
    """One function of a side's unprofiled split: inclusive ns per call without the
    profiler, with its 95% interval, and the same function's profiled figure."""

    name: str  # as the trace's Python frame: ``path.py(line): func``
    inclusive_ns: int | None
    low_ns: int | None
    high_ns: int | None
    profiled_ns: int
    method: str  # measured | profiled-shares model
    invocations_per_call: float | None = None


class SideSplit(msgspec.Struct, frozen=True, kw_only=True):
    """One side's unprofiled split, as ``explain``'s ``unprofiled`` key gives it for that
    side's profiled capture (docs/json.md; docs/ab.md): measured in a fresh unprofiled
    process of the side's own setting, one function timed per run."""

    method: str | None  # None: nothing unprofiled is known, ``note`` says why
    call_ns: int | None
    low_ns: int | None
    high_ns: int | None
    profiled_call_ns: int | None
    categories: dict[str, int]  # sums to call_ns
    profiled_categories: dict[str, int]
    functions: list[SplitFunction]
    measuring: str
    note: str
    trace: str | None  # the side's profiled capture (None: a temporary one)
    seconds: float | None  # what its capture and split cost (None: --trace-dir's capture)
    error: str | None = None  # the split process failed: what it said


class ABComparison(msgspec.Struct, frozen=True):
    """One figure's paired comparison as the ab document holds it (docs/ab.md)."""

    rounds: int
    a_ns: list[int]
    b_ns: list[int]
    diff_ns: list[int]
    a_median_ns: float | None
    b_median_ns: float | None
    estimate_ns: float | None
    ci_low_ns: float | None
    ci_high_ns: float | None
    confidence: float | None
    b_faster_rounds: int
    b_slower_rounds: int
    min_detectable_ns: float | None
    relative: float | None
    verdict: str  # B faster | B slower | cannot tell


class ABDocument(msgspec.Struct, frozen=True, kw_only=True):
    """The ab document's layout (``ab --format json``, ``ab --out``; docs/ab.md), in its
    key order: what is written and what ``diff --ab`` checks a saved one against
    (``read_ab``). ``protocol`` and each side are free-form descriptions of the run;
    ``kernels_used``, ``clusters`` and ``splits`` are absent from results saved before
    they existed (``splits`` also with ``--no-split``)."""

    schema_version: int
    protocol: dict[str, Any]
    rounds: int
    order: str
    run_order: list[tuple[int, str]]  # [round (1-based), side] in the order they ran
    sides: dict[str, dict[str, Any]]
    method: str
    comparisons: dict[str, ABComparison]
    kernels_used: dict[str, Any] | None = None
    clusters: dict[str, Any] | None = None
    splits: dict[str, SideSplit] | None = None
    verdict: str


def document_verdict_claim(judged: PairedComparison | None, rounds: int,
                           sides: dict[str, dict[str, Any]],
                           protocol: dict[str, Any] | None = None) -> Claim:
    """The ab document's verdict as a claim citing its ``comparisons`` and ``rounds``;
    sides named ``B (patched)`` when they have names; at ``--until``'s per-look level
    where the protocol records looks."""
    names = tuple(f"{k} ({v['name']})" if v.get("name") and v["name"] != k else k
                  for k, v in sorted(sides.items()))
    looks = (protocol or {}).get("until") or {}
    alpha = float(looks.get("per_look_alpha") or ALPHA)
    return verdict_claim(judged, rounds, names=names,  # type: ignore[arg-type]
                         at=("comparisons", FIGURES[0]), rounds_at="/rounds", alpha=alpha)


def split_claim(doc: dict[str, Any], label: str) -> Claim | None:
    """Side ``label``'s unprofiled split line ("A split: call 11.1 us [10.9 us, 11.2 us]
    unprofiled, 34.2 us profiled; measured: ...; ... (cost)") as a claim over the
    document's ``splits``: the call inside its interval, the categories summing to it.
    None for a side without a split."""
    from traceview.report.claims import Claim, Figure, Relation, pointer, rel
    from traceview.units import fmt_ns

    sp = (doc.get("splits") or {}).get(label)
    if sp is None:
        return None
    at = ("splits", label)
    figs: list[Figure] = []
    rels: list[Relation] = []
    if sp.get("seconds") is None:
        cost = "its capture in --trace-dir"
    else:
        figs.append(Figure("seconds", sp["seconds"], pointer(*at, "seconds")))
        cost = f"{sp['seconds']:g} s for its profiled capture and split process"
    if sp.get("method") is None or sp.get("call_ns") is None:
        return Claim("ab-split", f"{label} split: {sp.get('note') or sp.get('error')} ({cost})",
                     tuple(figs))
    figs += [Figure("call", sp["call_ns"], pointer(*at, "call_ns")),
             Figure("profiled", sp.get("profiled_call_ns"), pointer(*at, "profiled_call_ns"))]
    ci = ""
    if sp.get("low_ns") is not None:
        figs += [Figure("low", sp["low_ns"], pointer(*at, "low_ns")),
                 Figure("high", sp["high_ns"], pointer(*at, "high_ns"))]
        rels += [rel("le", "low", "call"), rel("le", "call", "high")]
        ci = f" [{fmt_ns(sp['low_ns'])}, {fmt_ns(sp['high_ns'])}]"
    cats = sp.get("categories") or {}
    if cats:  # the categories are the call, split (docs/ab.md)
        figs += [Figure(f"cat:{k}", v, pointer(*at, "categories", k)) for k, v in cats.items()]
        rels.append(rel("sum", *(f"cat:{k}" for k in cats), "call"))
    return Claim("ab-split", (
        f"{label} split: call {fmt_ns(sp['call_ns'])}{ci} unprofiled, "
        f"{fmt_ns(sp.get('profiled_call_ns'))} profiled; {sp['method']}; "
        f"{sp.get('measuring') or 'nothing measured per function'} ({cost})"
        + (f"; split process failed: {sp['error']}" if sp.get("error") else "")),
        tuple(figs), tuple(rels))


def _figure(v: Any) -> int | float | None:
    """A document value as a figure: a number (not a bool), else None."""
    return v if isinstance(v, int | float) and not isinstance(v, bool) else None


def _protocol_each(doc: dict[str, Any], figs: list[Any]) -> str:
    """What each process ran (the header's second half), citing its counts in ``figs``."""
    from traceview.report.claims import Figure, pointer
    from traceview.units import fmt_ns

    p = doc["protocol"]
    for key in ("warmup", "blocks", "baseline_n"):
        if _figure(p.get(key)) is not None:
            figs.append(Figure(key, p[key], pointer("protocol", key)))
    if not p.get("blocks"):
        return (f"each process: {p['warmup']} warm-up calls, then {p['baseline_n']} calls "
                "per figure")
    calls, why = p["baseline_n"], ""
    if calls is None and p.get("block_calls"):
        chosen = [(k, n) for k, n in enumerate(p["block_calls"]["chosen"]) if n is not None]
        calls = "?"
        if chosen:  # the fewest and the most calls per block a process chose
            (k0, lo), (k1, hi) = (min(chosen, key=lambda x: x[1]),
                                  max(chosen, key=lambda x: x[1]))
            at = ("protocol", "block_calls", "chosen")
            figs += [Figure("fewest", lo, pointer(*at, k0)), Figure("most", hi, pointer(*at, k1))]
            calls = f"{lo}" if lo == hi else f"{lo}-{hi}"
        figs.append(Figure("block", p["block_calls"]["block_ns"],
                           pointer("protocol", "block_calls", "block_ns")))
        why = (" (chosen from the call's time: blocks of about "
               f"{fmt_ns(p['block_calls']['block_ns'])})")
    return (f"each process: both sides, {p['warmup']} warm-up calls each, then "
            f"{p['blocks']} blocks per side (A B, B A, ...) of {calls} "
            f"synchronized calls{why} and one amortized batch")


def protocol_claim(doc: dict[str, Any]) -> Claim:
    """The ab report's header (``traceview ab: add 1024 float32 contiguous on cpu (eager),
    8 rounds, order alternate; each process: ...``): the rounds, the rounds its judged
    figure was paired over, and what each process ran, as the protocol records them."""
    from traceview.report.claims import Claim, Figure, Relation, pointer, rel
    from traceview.units import plural

    p = doc["protocol"]
    figs = [Figure("rounds", doc["rounds"], pointer("rounds"))]
    rels: list[Relation] = []
    c = doc.get("comparisons", {}).get(FIGURES[0]) or {}
    if c.get("rounds") is not None:
        figs.append(Figure("judged_rounds", c["rounds"],
                           pointer("comparisons", FIGURES[0], "rounds")))
        rels.append(rel("le", "judged_rounds", "rounds"))
    each = _protocol_each(doc, figs)
    shape = "x".join(map(str, p["shape"]))
    return Claim("ab-protocol", (
        f"traceview ab: {p['op']} {shape} {p['dtype']} {p['layout']} on {p['device']} "
        f"({p['mode']}), {plural(doc['rounds'], 'round')}, order {doc['order']}; {each}, "
        "unprofiled" + (f" (stopped early: {p['stopped']})" if p.get("stopped") else "")),
        tuple(figs), tuple(rels))


def confidence_claim(doc: dict[str, Any]) -> Claim:
    """The judged figure's interval's exact confidence and its rounds (``exact
    confidence 99.2% with 8 rounds``), or that these rounds give none at 95%."""
    from traceview.report.claims import Claim, Figure, pointer, rel

    c = doc["comparisons"].get(FIGURES[0])
    if not c or c["confidence"] is None:
        return Claim("ab-confidence", "no interval at 95% with this few rounds", ())
    at = ("comparisons", FIGURES[0])
    return Claim("ab-confidence", f"exact confidence {c['confidence']:.1%} with "
                 f"{c['rounds']} rounds",
                 (Figure("confidence", c["confidence"], pointer(*at, "confidence")),
                  Figure("rounds", c["rounds"], pointer(*at, "rounds")),
                  Figure("all_rounds", doc["rounds"], pointer("rounds")),
                  Figure("certain", 1)),
                 (rel("le", "rounds", "all_rounds"), rel("le", "confidence", "certain")))


def cache_check_claims(doc: dict[str, Any]) -> list[Claim]:
    """Each side's ``--check-cache`` line: the calls it checked in one warm process, all
    of them right (the check passed)."""
    from traceview.report.claims import Claim, Figure, pointer, rel

    out = []
    for label, s in doc["sides"].items():
        cc = s.get("cache_check")
        if cc:
            at = ("sides", label, "cache_check")
            passed = cc.get("passed")
            out.append(Claim("ab-cache-check", (
                f"{label} --check-cache: {cc['calls']} calls in one warm process, all right "
                "against float64"),
                (Figure("calls", _figure(cc["calls"]), pointer(*at, "calls")),
                 Figure("passed", passed if isinstance(passed, bool) else None,
                        pointer(*at, "passed")),
                 Figure("all_right", value=True)), (rel("eq", "passed", "all_right"),)))
    return out


PAIRED_NOTE = ("paired B - A: the round's own estimate from neighbouring A and B blocks in "
               "its one process, not the B column minus the A column")
REFERENCE_NOTE = ("B - A vs ref: B's difference from the reference call minus A's, each in "
                  "its own process, not the B column minus the A column")


def per_round_claim(doc: dict[str, Any]) -> Claim | None:
    """The per-process table's note where its last column is not the row's B minus its A
    (``--same-process``: the round's paired estimate over neighbouring blocks;
    ``--reference``: each side's difference from the reference call), as a claim: the
    first round whose figure is not its B minus its A, its three figures cited, the
    plain difference beside it (``--same-process``: the blocks each process ran, cited).
    None where every round's figure is its B minus its A (no note: the column is B - A)."""
    from traceview.report.claims import Claim, Figure, Relation, pointer, rel

    p = doc["protocol"]
    c = doc["comparisons"].get(FIGURES[0]) or {}
    rows = list(zip(c.get("a_ns", ()), c.get("b_ns", ()), c.get("diff_ns", ()), strict=True))
    first = next((k for k, (a, b, d) in enumerate(rows) if d != b - a), None)
    if first is None or not (p.get("blocks") or p.get("reference")):
        return None
    a, b, d = rows[first]
    at = ("comparisons", FIGURES[0])
    figs = [Figure("a", a, pointer(*at, "a_ns", first)), Figure("b", b, pointer(*at, "b_ns", first)),
            Figure("shown", d, pointer(*at, "diff_ns", first)), Figure("b_minus_a", b - a),
            Figure("zero", 0)]
    rels: list[Relation] = [rel("sum", "a", "b_minus_a", "b"),
                            rel("lt" if d < b - a else "gt", "shown", "b_minus_a")]
    if p.get("blocks"):
        figs.append(Figure("blocks", p["blocks"], pointer("protocol", "blocks")))
        rels.append(rel("gt", "blocks", "zero"))
        return Claim("ab-per-round", PAIRED_NOTE, tuple(figs), tuple(rels))
    return Claim("ab-per-round", REFERENCE_NOTE, tuple(figs), tuple(rels))


def claims_of(doc: dict[str, Any]) -> list[Claim]:
    """The claims of a saved ab document, made from its figures: its verdict (its
    ``verdict`` is the claim's text when the document is true to its figures), each
    side's split line, the header, each side's cache check and the interval's
    confidence."""
    c = doc.get("comparisons", {}).get(FIGURES[0])
    judged = None if c is None else PairedComparison(
        c["rounds"], tuple(c["a_ns"]), tuple(c["b_ns"]), tuple(c["diff_ns"]),
        c["estimate_ns"], c["ci_low_ns"], c["ci_high_ns"], c["confidence"],
        c["b_faster_rounds"], c["b_slower_rounds"], c["min_detectable_ns"],
        c["a_median_ns"], c["b_median_ns"])
    splits = [split_claim(doc, label) for label in ("A", "B")]
    return [document_verdict_claim(judged, doc["rounds"], doc.get("sides", {}),
                                   doc.get("protocol")),
            *(c for c in splits if c is not None), protocol_claim(doc),
            *cache_check_claims(doc), confidence_claim(doc)]


def read_ab(doc: object) -> ABDocument:
    """A saved ab result, upgraded and checked; a ``UsageError`` of one line for
    anything else."""
    return read(doc, "ab", ABDocument)


def kernels_used_dict(sides: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """``{same, differences}`` from each side's ``kernels_used`` probe; None without."""
    from traceview.report.kernel_words import differences

    a, b = (sides.get(x, {}).get("kernels_used") for x in ("A", "B"))
    if a is None and b is None:
        return None
    diffs = differences(a, b)
    return {"same": None if diffs is None else not diffs, "differences": diffs}


def clusters_dict(runs: Sequence[ProcessRun]) -> dict[str, Any]:
    """Per side: do its processes' full-call medians fall into two clusters
    (:func:`traceview.multi.clusters.two_clusters`), and does the CPU, NUMA node or GPU clock
    a process saw go with the cluster (permutation tests, :func:`traceview.multi.clusters.association`)?
    """
    from traceview.multi.clusters import association, two_clusters

    out: dict[str, Any] = {}
    for label in ("A", "B"):
        mine = [r for r in runs if r.side == label
                and isinstance(r.result.get("full_api_ns_p50"), int)]
        split = two_clusters([r.result["full_api_ns_p50"] for r in mine])
        if split is None:
            continue
        entry: dict[str, Any] = {"split": split.as_dict(), "suspects": []}
        if split.clustered:
            high = [r.result["full_api_ns_p50"] > split.threshold for r in mine]
            for name in ("last", "numa_node", "gpu_sm_mhz", "gpu_mem_mhz"):
                got = association(f"cpu.{name}", high,
                                  [(r.result.get("cpu") or {}).get(name) for r in mine],
                                  categorical=name in ("last", "numa_node"))
                if got is not None:
                    entry["suspects"].append(got.as_dict())
        out[label] = entry
    return out


def comparison_doc(c: PairedComparison) -> ABComparison:
    return ABComparison(c.rounds, list(c.a), list(c.b), list(c.diffs), c.a_median_ns,
                        c.b_median_ns, c.estimate_ns, c.ci_low_ns, c.ci_high_ns, c.confidence,
                        c.b_faster_rounds, c.b_slower_rounds, c.min_detectable_ns,
                        c.relative, c.verdict)




def judged_diffs(runs: Sequence[ProcessRun]) -> list[int] | None:
    """Per-round B - A of the full call where a round measures it within one process:
    ``pair_estimate_ns`` (``--same-process``: both sides' neighbouring blocks), or the
    difference of the sides' ``vs_reference_ns`` (``--reference``: each side against the
    same reference call in its own process). None: the plain difference of medians."""
    by_round: dict[int, dict[str, Any]] = {}
    for run in runs:
        by_round.setdefault(run.round, {})[run.side] = run.result
    if not by_round:
        return None
    out = []
    for r in sorted(by_round):
        a, b = by_round[r].get("A") or {}, by_round[r].get("B") or {}
        if isinstance(b.get("pair_estimate_ns"), int):
            out.append(b["pair_estimate_ns"])
        elif isinstance(a.get("vs_reference_ns"), int) and isinstance(
                b.get("vs_reference_ns"), int):
            out.append(b["vs_reference_ns"] - a["vs_reference_ns"])
        else:
            return None
    return out


def analyze(runs: Sequence[ProcessRun], sides: dict[str, dict[str, Any]], rounds: int,
            order: str, protocol: dict[str, Any], alpha: float = 0.05) -> ABResult:
    """``alpha``: each interval's level (``ab --until`` looks at ``alpha / L``)."""
    comps = {}
    for key in FIGURES:
        pairs = paired_figures(runs, key)
        if pairs is not None:
            comps[key] = compare(*pairs, alpha=alpha,
                                 diffs=judged_diffs(runs) if key == FIGURES[0] else None)
    return ABResult(sides=sides, runs=tuple(runs), rounds=rounds, order=order,
                    comparisons=comps, protocol=protocol)


def _us(ns: float) -> str:
    from traceview.units import fmt_ns

    return fmt_ns(round(ns))


# The interval's level without --until's looks (each look of --until is narrower).
ALPHA = 0.05


def fewest_rounds(alpha: float) -> int:
    """The fewest rounds that give a signed-rank interval at level ``1 - alpha``
    (``paired.signed_rank_interval``): 6 at 95%, more for --until's per-look level."""
    from traceview.paired import _critical_k

    n = 1
    while _critical_k(n, alpha)[0] == 0 and n < 1_000:
        n += 1
    return n


def interval_level(alpha: float) -> str:
    """``95%``, ``99.4%``: the level an interval is said at."""
    return f"{round(100 * (1 - alpha), 1):g}%"
# A comparison's figures the verdict cites (``ABComparison``'s keys).
_CITED = ("rounds", "estimate_ns", "ci_low_ns", "ci_high_ns", "b_faster_rounds",
          "b_slower_rounds", "min_detectable_ns", "a_median_ns", "relative")


def _no_interval(c: PairedComparison | None, rounds: int, data: str, rounds_at: str | None,
                 sid: str, alpha: float) -> Claim:
    """"cannot tell": no full-call figure, or too few rounds for an interval at the
    level (fewer than the fewest that give one: the claim says so)."""
    from traceview.report.claims import Claim, Figure, rel
    from traceview.units import plural

    if c is None:
        return Claim(sid, "cannot tell: no full-call figure on both sides in every round "
                     f"({data})", ())
    fewest = fewest_rounds(alpha)
    few = plural(rounds, "round") + (" is" if rounds == 1 else " are")
    return Claim(sid, f"cannot tell: {few} too few for a {interval_level(alpha)} "
                 f"interval ({fewest} at least; {data})",
                 (Figure("rounds", rounds, rounds_at), Figure("fewest", fewest)),
                 (rel("lt", "rounds", "fewest"),))


def verdict_claim(c: PairedComparison | None, rounds: int,
                  data: str = "unprofiled, synchronized each call",
                  names: tuple[str, str] = ("A", "B"), *,
                  at: tuple[str | int, ...] | None = None,
                  held: Sequence[str] = _CITED, rounds_at: str | None = None,
                  sid: str = "ab-verdict", alpha: float = ALPHA) -> Claim:
    """One line that names its data ("B faster by 9.8 us per call (95% CI [...]; ...)"),
    as a claim: the comparison's figures, cited at ``at`` (the comparison's place in the
    document; only the keys ``held`` there), and what the line asserts: the interval on
    the side of zero its word says, the estimate inside it, the rounds that agree among
    all, the share of A's median. ``names`` relabels the sides (``diff`` says
    before/after); ``rounds_at``: where the document holds ``rounds``; ``alpha``: the
    intervals' level (``ab --until`` looks at a smaller one, so its interval is wider
    and needs more rounds: the line says the level it has)."""
    from traceview.report.claims import Claim, Figure, Relation, pointer, rel

    figs: list[Figure] = []
    rels: list[Relation] = []

    def fig(name: str, value: float | int | None, key: str | None = None) -> None:
        path = pointer(*at, key) if at is not None and key is not None and key in held \
            else None
        figs.append(Figure(name, value, path))

    a_name, b_name = names
    if c is None or c.ci_low_ns is None or c.estimate_ns is None or c.ci_high_ns is None:
        return _no_interval(c, rounds, data, rounds_at, sid, alpha)
    fig("estimate", c.estimate_ns, "estimate_ns")
    fig("low", c.ci_low_ns, "ci_low_ns")
    fig("high", c.ci_high_ns, "ci_high_ns")
    fig("rounds", c.rounds, "rounds")
    figs.append(Figure("zero", 0))
    level = interval_level(alpha)
    if c.confidence is not None:
        # the interval's achieved confidence is at least the level the line says
        fig("confidence", c.confidence, "confidence")
        figs.append(Figure("level", 1 - alpha))
        rels.append(rel("ge", "confidence", "level"))
    # the Hodges-Lehmann estimate is a Walsh average between the interval's two
    rels += [rel("le", "low", "estimate"), rel("le", "estimate", "high")]
    if c.verdict == "cannot tell":
        fig("faster", c.b_faster_rounds, "b_faster_rounds")
        rels += [rel("le", "low", "zero"), rel("ge", "high", "zero"),
                 rel("le", "faster", "rounds")]
        mdd = ""
        if c.min_detectable_ns is not None:
            fig("detectable", c.min_detectable_ns, "min_detectable_ns")
            mdd = f"; these rounds could detect about {_us(c.min_detectable_ns)}"
        return Claim(sid, (
            f"cannot tell: {b_name} - {a_name} = {_us(c.estimate_ns)} per call ({level} CI "
            f"[{_us(c.ci_low_ns)}, {_us(c.ci_high_ns)}] covers zero; {b_name} faster in "
            f"{c.b_faster_rounds} of {c.rounds} rounds{mdd}; {data})"), tuple(figs), tuple(rels))
    faster = c.verdict == "B faster"
    agree = c.b_faster_rounds if c.estimate_ns < 0 else c.b_slower_rounds
    fig("agree", agree, "b_faster_rounds" if c.estimate_ns < 0 else "b_slower_rounds")
    rels.append(rel("le", "agree", "rounds"))
    if faster:
        # "faster by 9.8 us (95% CI [a, b])": the interval below zero, said as a speed-up
        lo, hi = -c.ci_high_ns, -c.ci_low_ns
        figs += [Figure("by", -c.estimate_ns), Figure("shown_low", lo), Figure("shown_high", hi)]
        rels += [rel("lt", "high", "zero"), rel("sum", "by", "estimate", "zero"),
                 rel("sum", "shown_low", "high", "zero"), rel("sum", "shown_high", "low", "zero")]
    else:
        lo, hi = c.ci_low_ns, c.ci_high_ns
        figs.append(Figure("by", c.estimate_ns))
        rels += [rel("gt", "low", "zero"), rel("eq", "by", "estimate")]
    pct = ""
    if c.relative is not None:
        fig("a_median", c.a_median_ns, "a_median_ns")
        fig("relative", c.relative, "relative")
        rels.append(rel("ratio", "estimate", "a_median", "relative"))
        pct = f", {abs(c.relative):.{0 if abs(c.relative) >= 0.1 else 1}%} of {a_name}"
    return Claim(sid, (
        f"{c.verdict.replace('B', b_name, 1)} by {_us(abs(c.estimate_ns))} per call{pct} "
        f"({level} CI [{_us(lo)}, {_us(hi)}]; {agree} of {c.rounds} rounds; {data})"),
        tuple(figs), tuple(rels))


def verdict_line(c: PairedComparison | None, rounds: int,
                 data: str = "unprofiled, synchronized each call",
                 names: tuple[str, str] = ("A", "B")) -> str:
    """The verdict's words (``verdict_claim``'s text)."""
    return verdict_claim(c, rounds, data, names).text
