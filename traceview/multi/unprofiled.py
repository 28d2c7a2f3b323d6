"""The unprofiled half of ``diff``: the speed verdict, from figures no profiler touched.

Profiled calls diagnose; unprofiled runs judge speed. Two sources, best first:

* a saved ``traceview ab`` result (``diff --ab``): interleaved rounds of fresh
  processes, paired per round (``traceview.paired``) -- the trustworthy one;
* the capture metadata of both traces (``baseline.per_process``: each capture's few
  fresh processes, one capture after the other): independent samples, compared with
  the two-sample Hodges-Lehmann shift and its exact Mann-Whitney interval
  (``traceview.multi.twosample``). Three processes per side admit no 95% interval, so this
  usually says "too few processes to tell" -- which is the truth.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from traceview.documents import readable, upgrade
from traceview.errors import TraceLoadError
from traceview.multi.twosample import critical_k, shift
from traceview.paired import PairedComparison

if TYPE_CHECKING:
    from traceview.report.claims import Claim
    from traceview.report.model import Report

FIGURES = {
    "full_api_ns_p50": "full call, synchronized each call (median per process)",
    "amortized_submit_ns": "amortized submit, one sync per batch",
}
MATCHED_METHOD = ("Hodges-Lehmann two-sample shift with the exact Mann-Whitney interval "
                  "over per-process figures (captures, not interleaved)")


def _fewest_per_side(alpha: float = 0.05) -> int:
    n = 1
    while critical_k(n, n, alpha)[0] == 0:
        n += 1
    return n


def per_process(report: Report, key: str) -> list[int]:
    """Per-process unprofiled figures from a report's capture metadata (may be empty).

    ``Report.capture_meta``: the baseline's figures are typed; its per-process rows, free
    JSON, are checked row by row here."""
    cap = report.capture_meta
    base = None if cap is None else cap.baseline
    if base is None:
        return []
    rows = base.per_process
    if isinstance(rows, list) and rows:
        vals = [r.get(key) for r in rows if isinstance(r, dict)]
        return [int(v) for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
    v = getattr(base, key, None)
    return [int(v)] if isinstance(v, (int, float)) and not isinstance(v, bool) else []


def from_captures(before: Report, after: Report) -> dict[str, Any] | None:
    """The unprofiled block from both traces' capture metadata, or None if a side lacks it."""
    figures = []
    for key, label in FIGURES.items():
        a, b = per_process(before, key), per_process(after, key)
        if not a or not b:
            continue
        s = shift(a, b)
        figures.append({"figure": key, "label": label, "before_ns": list(s.before),
                        "after_ns": list(s.after), "estimate_ns": s.estimate_ns,
                        "ci_low_ns": s.ci_low_ns, "ci_high_ns": s.ci_high_ns,
                        "confidence": s.confidence, "verdict": s.verdict})
    if not figures or figures[0]["figure"] != "full_api_ns_p50":
        return None
    main = figures[0]
    return {"source": "capture metadata: each capture's fresh processes, one capture after "
                      "the other (not interleaved)",
            "paired": False, "method": MATCHED_METHOD, "figures": figures,
            "line": _capture_line(main)}


def _fmt(ns: float) -> str:
    from traceview.units import fmt_ns

    return fmt_ns(round(ns))


def _span(v: list[int]) -> str:
    return _fmt(v[0]) if min(v) == max(v) else f"{_fmt(min(v))} to {_fmt(max(v))}"


def _capture_line(f: dict[str, Any]) -> str:
    return capture_claim(f).text


def capture_claim(f: dict[str, Any], at: tuple[str | int, ...] | None = None) -> Claim:
    """The capture-metadata line as a claim over its figures (``f``: one of the block's
    ``figures``, held at ``at`` in the document): the processes on each side, the
    shift's interval on the side of zero its word says, the estimate inside it."""
    from traceview.report.claims import Claim, Figure, Relation, pointer, rel

    a, b = f["before_ns"], f["after_ns"]
    figs: list[Figure] = []
    rels: list[Relation] = []

    def fig(name: str, value: float | int | None, *key: str | int) -> None:
        figs.append(Figure(name, value, None if at is None or not key else pointer(*at, *key)))

    # a pointer names no list's length: its last item stands for it
    for side, v in (("before", a), ("after", b)):
        fig(f"{side}:n", len(v))
        fig(f"{side}:last", v[-1], f"{side}_ns", len(v) - 1)
    data = (f"{len(a)} and {len(b)} fresh processes, unprofiled, synchronized each call, "
            "one capture after the other")
    if f["ci_low_ns"] is None:
        need = _fewest_per_side()
        fig("fewest", need)
        fig("smaller", min(len(a), len(b)))
        rels += [rel("le", "smaller", "before:n"), rel("le", "smaller", "after:n"),
                 rel("lt", "smaller", "fewest")]
        return Claim("diff-unprofiled", (
            f"too few processes to tell: {data} (full call {_span(a)} before, "
            f"{_span(b)} after); a 95% interval needs {need} "
            "per side, and only interleaved runs cancel machine drift: use traceview ab"),
            tuple(figs), tuple(rels))
    lo, hi = f["ci_low_ns"], f["ci_high_ns"]
    fig("estimate", f["estimate_ns"], "estimate_ns")
    fig("low", lo, "ci_low_ns")
    fig("high", hi, "ci_high_ns")
    fig("zero", 0)
    # the Hodges-Lehmann shift is a pairwise difference between the interval's two
    rels += [rel("le", "low", "estimate"), rel("le", "estimate", "high")]
    if f["verdict"] == "cannot tell":
        rels += [rel("le", "low", "zero"), rel("ge", "high", "zero")]
        return Claim("diff-unprofiled", (
            f"cannot tell: after - before = {_fmt(f['estimate_ns'])} per call (95% CI "
            f"[{_fmt(lo)}, {_fmt(hi)}] covers zero; {data})"), tuple(figs), tuple(rels))
    word = "faster" if f["verdict"] == "after faster" else "slower"
    if word == "faster":
        fig("by", -f["estimate_ns"])
        fig("shown_low", -hi)
        fig("shown_high", -lo)
        rels += [rel("lt", "high", "zero"), rel("sum", "by", "estimate", "zero"),
                 rel("sum", "shown_low", "high", "zero"), rel("sum", "shown_high", "low", "zero")]
        lo, hi = -hi, -lo
    else:
        fig("by", f["estimate_ns"])
        rels += [rel("gt", "low", "zero"), rel("eq", "by", "estimate")]
    return Claim("diff-unprofiled", (
        f"after {word} by {_fmt(abs(f['estimate_ns']))} per call (95% CI [{_fmt(lo)}, "
        f"{_fmt(hi)}]; {data}: machine drift between the captures can pass for a "
        "change; traceview ab interleaves)"), tuple(figs), tuple(rels))


def line_claim(block: dict[str, Any], at: tuple[str | int, ...]) -> Claim:
    """The block's ``line`` as a claim over the figures it states, the block held at
    ``at`` (the line's text is the claim's when the block is true to its figures): a
    paired block's comparison recomputed from its rounds (``from_ab``), a capture
    block's from its processes."""
    from traceview.multi.ab_result import verdict_claim
    from traceview.paired import compare

    f = block["figures"][0]
    if not block.get("paired"):
        return capture_claim(f, (*at, "figures", 0))
    pc = compare(f["before_ns"], f["after_ns"])
    # the block's source names how the rounds ran (``from_ab``): the line's data says it
    how = str(block.get("source", "")).removeprefix(AB_SOURCE[0]).removesuffix(AB_SOURCE[1])
    return verdict_claim(pc, pc.rounds, _ab_data(how), names=("before", "after"),
                         at=(*at, "figures", 0), held=("estimate_ns", "ci_low_ns", "ci_high_ns"),
                         sid="diff-unprofiled")


# A paired block's ``source``: how the ab rounds ran, between these.
AB_SOURCE = ("traceview ab: ", ", paired per round")


def _ab_data(how: str) -> str:
    return f"unprofiled, synchronized each call, {how} (traceview ab)"


class _Pairs(msgspec.Struct):
    a_ns: list[int]
    b_ns: list[int]


class _Side(msgspec.Struct):
    name: str | None = None


class _ABForDiff(msgspec.Struct):
    """The part of a saved ab result that ``diff --ab`` reads (``from_ab``), typed; other
    keys are not read, so not checked (a result written by another tool may leave them
    out)."""

    comparisons: dict[str, _Pairs]
    protocol: dict[str, Any] | None = None
    method: str | None = None
    sides: dict[str, _Side] = {}


def load_ab(path: str | Path) -> dict[str, Any]:
    """A saved ``traceview ab --out`` / ``--format json`` result, checked enough to use."""
    import orjson

    p = Path(path)
    try:
        doc = orjson.loads(p.read_bytes())
    except OSError as exc:
        raise TraceLoadError(p, exc.strerror or "cannot read") from None
    except orjson.JSONDecodeError:
        raise TraceLoadError(p, "not JSON: expected a saved traceview ab result") from None
    ok = readable(doc, "ab") and isinstance(doc.get("comparisons"), dict)
    c = doc.get("comparisons", {}).get("full_api_ns_p50") if ok else None
    if not (isinstance(c, dict) and isinstance(c.get("a_ns"), list)
            and isinstance(c.get("b_ns"), list) and len(c["a_ns"]) == len(c["b_ns"])
            and all(isinstance(x, int) for x in c["a_ns"] + c["b_ns"])):
        raise TraceLoadError(p, "not a traceview ab result (schema_version 1 or 2 with "
                                "comparisons.full_api_ns_p50.a_ns/b_ns)")
    current = upgrade(doc, "ab")
    try:  # every key diff reads, typed: a null or a string where a number goes is named
        msgspec.convert(current, _ABForDiff, strict=True)
    except msgspec.ValidationError as exc:
        raise TraceLoadError(p, f"not a traceview ab result this traceview reads: {exc}"
                             ) from None
    return current


def from_ab(doc: dict[str, Any]) -> dict[str, Any]:
    """The unprofiled block from a saved ab result: side A is before, B is after."""
    from traceview.multi.ab_result import verdict_line
    from traceview.paired import compare

    figures = []
    main: PairedComparison | None = None
    for key, label in FIGURES.items():
        c = doc["comparisons"].get(key)
        if not isinstance(c, dict):
            continue
        pc = compare(c["a_ns"], c["b_ns"])  # recomputed: the saved figures are the data
        main = main or pc
        figures.append({"figure": key, "label": label, "before_ns": list(pc.a),
                        "after_ns": list(pc.b), "estimate_ns": pc.estimate_ns,
                        "ci_low_ns": pc.ci_low_ns, "ci_high_ns": pc.ci_high_ns,
                        "confidence": pc.confidence,
                        "verdict": pc.verdict.replace("B ", "after ")})
    blocks = (doc.get("protocol") or {}).get("blocks")
    how = (f"both sides in each fresh process, {blocks} alternating blocks per side"
           if blocks else "interleaved rounds of fresh processes")
    line = verdict_line(main, main.rounds if main else 0, names=("before", "after"),
                        data=_ab_data(how))
    return {"source": f"{AB_SOURCE[0]}{how}{AB_SOURCE[1]}",
            "paired": True, "method": doc.get("method"), "figures": figures, "line": line,
            "sides": {k: v.get("name") for k, v in doc.get("sides", {}).items()}}
