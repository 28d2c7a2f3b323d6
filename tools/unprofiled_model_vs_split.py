"""How far the models of the unprofiled split (used when no split was measured) are from
the measured split, on capture traces that carry one (``baseline.split``).

Each model is given only what it would have without a split: the profiled tree and the
unprofiled call (here the split's own call, so only the distribution is compared).
Printed per trace: each category's share of the call, measured and per model, and each
measured function holding 10% or more of the call, measured and per model (us); the
worst relative error per model closes each table:

    python tools/unprofiled_model_vs_split.py TRACE.json.gz [...]

Models: ``per-event`` (``report/unprofiled.from_model``: one fitted profiler cost per
recorded event, removed where the events are) and ``uniform`` (every node scaled by the
one ratio unprofiled call / profiled call without the profiler's own category).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import traceview  # noqa: E402
from traceview.options import Options  # noqa: E402
from traceview.report.build import unprofiled_info  # noqa: E402
from traceview.report.explanation import analyze_trace  # noqa: E402
from traceview.report.unprofiled import (  # noqa: E402
    SKIP_CATEGORIES,
    from_model,
    profiled_by_name,
)
from traceview.stats import median  # noqa: E402


def uniform(tree: Any, call_u: int, prof_cats: dict[str, int]) -> tuple[dict[str, float],
                                                                       dict[str, float]]:
    kept = {k: v for k, v in prof_cats.items() if k not in SKIP_CATEGORIES}
    r = call_u / max(sum(kept.values()), 1)
    return ({k: v * r for k, v in kept.items()},
            {n: v * r for n, v in profiled_by_name(tree).items()})


def main() -> None:
    for path in sys.argv[1:]:
        a = analyze_trace(traceview.load(path), Options())
        info = unprofiled_info(a)
        if info is None or not (info.method or "").startswith("measured"):
            print(f"{path}: no measured split")
            continue
        warm = [c for c in a.calls.calls if c.warm]
        profiled = int(median([c.api_ns for c in warm]))
        call_u = int(info.call_ns or 0)
        pe = from_model(a.per_call.tree, call_u, profiled,
                        a.per_call.perturbation.events_per_call or 0,
                        dict(info.profiled_categories or {}), "measured split's call")
        models = {"per-event": ({k: float(v) for k, v in pe.categories.items()},
                                {f.name: float(f.inclusive_ns or 0) for f in pe.functions}),
                  "uniform": uniform(a.per_call.tree, call_u, dict(info.profiled_categories
                                                                   or {}))}
        print(f"{path}: unprofiled call {call_u / 1e3:.1f} us, profiled {profiled / 1e3:.1f} us"
              f"; {pe.method}")
        print(f"  {'category (share)':34} {'measured':>9}" + "".join(f" {m:>10}" for m in models))
        worst = dict.fromkeys(models, 0.0)
        for k, v in info.categories.items():
            share = v / call_u
            row = f"  {k:34} {share:9.1%}"
            for m, (cats, _) in models.items():
                got = cats.get(k, 0.0) / max(sum(cats.values()), 1)
                row += f" {got:10.1%}"
                if share >= 0.10:
                    worst[m] = max(worst[m], abs(got - share) / share)
            print(row)
        print("  worst error, categories of 10% or more: "
              + ", ".join(f"{m} {w:.0%}" for m, w in worst.items()))
        worst = dict.fromkeys(models, 0.0)
        print(f"  {'function (us)':60} {'measured':>9}" + "".join(f" {m:>10}" for m in models))
        for f in info.functions:
            if (f.inclusive_ns or 0) < 0.10 * call_u:
                continue
            row = f"  {f.name[-60:]:60} {(f.inclusive_ns or 0) / 1e3:9.1f}"
            for m, (_, funcs) in models.items():
                got = funcs.get(f.name)
                row += f" {got / 1e3:10.1f}" if got is not None else f" {'-':>10}"
                if got is not None:
                    worst[m] = max(worst[m], abs(got - f.inclusive_ns) / f.inclusive_ns)
            print(row)
        print("  worst error, functions of 10% or more: "
              + ", ".join(f"{m} {w:.0%}" for m, w in worst.items()))


if __name__ == "__main__":
    main()
