"""The estimated unprofiled split of a call: where its time goes without the profiler.

A profiled call is inflated unevenly: each event costs the profiler about the same, so
a stage of many small frames reads several times its real time while a busy-wait reads
true. Two methods, the output names which one gave each figure:

* **measured** -- capture's ``baseline.split`` (``traceview.unprofiled``): the heaviest
  Python frames of the profiled tree timed one per run in a fresh unprofiled process,
  with intervals. Categories: the profiled tree's self time of each category, scaled
  inside each measured function by that function's unprofiled/profiled ratio (the part
  not covered by the measured functions below it), and outside them by the rest of the
  call's ratio; then scaled to sum to the unprofiled call (the sum before that last
  scaling is kept as ``categories_raw_sum_ns``).
* **profiled-shares model** -- only the unprofiled call is known (capture's baseline,
  or ``--unprofiled-call``): every profiled figure (function, category) times one ratio,
  the unprofiled call over the profiled call without the profiler's own time. It says
  nothing the profiled shares do not; it is the model that was closest to the measured
  splits (``tools/unprofiled_model_vs_split.py``): a per-event cost fitted to the call
  and removed where the events are moved the shares further from the truth, on FlagGems
  on the H200 (cache_key read 51% of add's call against 18% measured) as on the CPU.
  No interval: it is a model.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from traceview.analyses.calltree import _FRAME
from traceview.report.unprofiled_steps import UnprofiledSteps
from traceview.report.unprofiled_words import MODEL, SKIP_CATEGORIES, measuring_claim, model_claim

#: Python frames under this share of the profiled call are not split out.
MIN_SHARE = 0.03
MAX_FUNCTIONS = 16
MEASURED = "measured"


@dataclass(frozen=True)
class UnprofiledFunction:
    name: str  # as the trace's Python frame: ``path.py(line): func``
    inclusive_ns: int | None
    low_ns: int | None
    high_ns: int | None
    profiled_ns: int
    method: str
    invocations_per_call: float | None = None


@dataclass(frozen=True)
class UnprofiledInfo:
    method: str | None  # None: no unprofiled figure, ``note`` says what cannot be known
    calls: int
    call_ns: int | None
    low_ns: int | None
    high_ns: int | None
    categories: dict[str, int]
    functions: tuple[UnprofiledFunction, ...]
    profiled_call_ns: int | None = None
    profiled_categories: dict[str, int] | None = None
    categories_raw_sum_ns: int | None = None
    call_source: str = ""
    measuring: str = ""  # what the measurement cost and what was subtracted
    note: str = ""
    steps: UnprofiledSteps | None = None  # profiled steps beside unprofiled step times


def _walk(nodes: Iterable[Any]) -> Iterable[Any]:
    for n in nodes:
        yield n
        yield from _walk(n.children)


def is_frame(name: str) -> bool:
    return _FRAME.match(name) is not None


def choose(tree: Iterable[Any], call_ns: int, min_share: float = MIN_SHARE,
           limit: int = MAX_FUNCTIONS) -> list[str]:
    """The Python frames worth splitting out, heaviest first: every frame node of the
    tree (any depth, so down to the depth that holds most of the call) holding at least
    ``min_share`` of the profiled call, names merged over paths, the profiler's own
    frames left out."""
    weight = profiled_by_name(tree)
    floor = min_share * max(call_ns, 1)
    picked = sorted(((w, n) for n, w in weight.items() if w >= floor), key=lambda x: (-x[0], x[1]))
    return [n for _, n in picked[:limit]]


def profiled_by_name(tree: Iterable[Any]) -> dict[str, int]:
    """Profiled inclusive ns per call of each Python frame, summed over its outermost
    occurrences (a recursive frame counts once)."""
    out: dict[str, int] = {}

    def visit(nodes: Iterable[Any], above: frozenset[str]) -> None:
        for n in nodes:
            if n.category in SKIP_CATEGORIES:
                continue
            if is_frame(n.name) and n.name not in above:
                out[n.name] = out.get(n.name, 0) + n.inclusive_ns
            visit(n.children, above | {n.name})

    visit(tree, frozenset())
    return out


def _scaled_categories(tree: Sequence[Any], unprof: dict[str, float], call_p: int,
                       call_u: int) -> dict[str, float]:
    """Each category's self time, scaled by the remainder ratio of the nearest measured
    function above it (the call's own remainder at the top)."""
    out: dict[str, float] = {}
    prof = profiled_by_name(tree)

    def node_u(n: Any) -> float:  # a measured name's figure shared over its paths
        return unprof[n.name] * n.inclusive_ns / max(prof.get(n.name, 0), 1)

    def nearest(nodes: Iterable[Any]) -> list[Any]:
        got = []
        for n in nodes:
            if n.category in SKIP_CATEGORIES:
                continue
            got += [n] if n.name in unprof else nearest(n.children)
        return got

    def ratio(p: float, u: float, below: list[Any]) -> float:
        rest_p = p - sum(c.inclusive_ns for c in below)
        rest_u = u - sum(node_u(c) for c in below)
        return max(0.0, rest_u) / rest_p if rest_p > 0 else 0.0

    def visit(nodes: Iterable[Any], r: float) -> None:
        for n in nodes:
            if n.category in SKIP_CATEGORIES:
                continue  # the profiler's own work does not exist unprofiled
            here = r
            if n.name in unprof:
                here = ratio(n.inclusive_ns, node_u(n), nearest(n.children))
            out[n.category] = out.get(n.category, 0.0) + (n.self_ns + n.folded_ns) * here
            visit(n.children, here)

    top = [n for n in tree if n.category not in SKIP_CATEGORIES]
    visit(tree, ratio(sum(n.inclusive_ns for n in top), call_u, nearest(tree)))
    return out


def _normalise(raw: dict[str, float], total: int) -> dict[str, int]:
    """Scale to sum to ``total`` exactly (largest remainders get the rounding)."""
    s = sum(raw.values())
    if s <= 0:
        return {}
    exact = {k: v * total / s for k, v in raw.items()}
    out = {k: int(v) for k, v in exact.items()}
    short = total - sum(out.values())
    for k in sorted(exact, key=lambda k: out[k] - exact[k])[:short]:
        out[k] += 1
    return {k: v for k, v in sorted(out.items(), key=lambda kv: -kv[1]) if v}


def _float(v: Any) -> float | None:
    """A recorded count as the float the document's schema holds (a split writes ``1``
    for a function called once per call; the JSON must read back the same)."""
    return None if v is None else float(v)


def none_known(profiled_call: int | None, why: str | None = None) -> UnprofiledInfo:
    """No unprofiled call figure; ``why``: what the trace's capture baseline lacks, where
    it has one (a cold twin's baseline is of warm calls), else none is carried."""
    why = why or "the trace carries no capture baseline"
    return UnprofiledInfo(
        None, 0, None, None, None, {}, (), profiled_call_ns=profiled_call,
        note=f"no unprofiled figure: {why} and none was given "
             "(--unprofiled-call); the profiled figures are inflated by an unknown amount, "
             "most where a call records many small events")


def from_split(tree: Sequence[Any], split: dict[str, Any], profiled_call: int,
               profiled_categories: dict[str, int], call_source: str,
               call_override: int | None = None) -> UnprofiledInfo:
    """The measured split (capture's ``baseline.split``) against this trace's tree."""
    call_u = call_override or int(split["call_ns"])
    prof = profiled_by_name(tree)
    unprof = {f["name"]: float(f["inclusive_ns"]) for f in split.get("functions", ())
              if f["name"] in prof}
    raw = _scaled_categories(tree, unprof, profiled_call, call_u)
    cal = split.get("calibration", {})
    functions = tuple(UnprofiledFunction(
        f["name"], f["inclusive_ns"], f.get("low_ns"), f.get("high_ns"), prof.get(f["name"], 0),
        MEASURED, _float(f.get("invocations_per_call"))) for f in split.get("functions", ()))
    return UnprofiledInfo(
        method=f"{MEASURED}: {split.get('method', '')}",
        calls=int(split.get("blocks", 0)) * int(split.get("calls_per_run", 0)),
        call_ns=call_u,
        low_ns=None if call_override else split.get("call_low_ns"),
        high_ns=None if call_override else split.get("call_high_ns"),
        categories=_normalise(raw, call_u), functions=functions,
        profiled_call_ns=profiled_call, profiled_categories=profiled_categories,
        categories_raw_sum_ns=round(sum(raw.values())), call_source=call_source,
        measuring=measuring_claim(cal).text,
        note="categories: profiled self time scaled by each measured function's "
             "unprofiled/profiled ratio, then to sum to the unprofiled call")


def from_model(tree: Sequence[Any], call_u: int, profiled_call: int,
               profiled_categories: dict[str, int], call_source: str) -> UnprofiledInfo:
    """Only the call is known: every profiled figure scaled by one ratio, the unprofiled
    call over the profiled call without the profiler's own time (its category's p50)."""
    own = sum(v for k, v in profiled_categories.items() if k in SKIP_CATEGORIES)
    ratio = call_u / max(profiled_call - own, 1)
    prof = profiled_by_name(tree)
    functions = [UnprofiledFunction(name, min(call_u, round(prof[name] * ratio)), None, None,
                                    prof[name], MODEL)
                 for name in choose(tree, profiled_call)]
    # the categories shown beside their profiled p50s, times the same ratio: the tree's
    # self times held no untraced time, and scaled to the call they came out 0.013x to
    # 0.171x their profiled figures under a line that said x 0.159
    raw = {k: v * ratio for k, v in profiled_categories.items()
           if k not in SKIP_CATEGORIES and v > 0}
    raw_sum = round(sum(raw.values()))
    return UnprofiledInfo(
        method=model_claim(call_u, profiled_call, profiled_categories, raw_sum).text, calls=0,
        call_ns=call_u, low_ns=None, high_ns=None,
        categories=_normalise(raw, call_u),
        functions=tuple(sorted(functions, key=lambda f: -(f.inclusive_ns or 0))),
        profiled_call_ns=profiled_call, profiled_categories=profiled_categories,
        categories_raw_sum_ns=raw_sum, call_source=call_source,
        measuring="nothing measured per function",
        note="a model, no intervals: the profiler's slowdown taken as even over the call, "
             "which it is not (a stage of many small frames is slowed most); capture "
             "measures the split (baseline.split)")
