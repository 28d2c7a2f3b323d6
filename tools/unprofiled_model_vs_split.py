"""How far the models of the unprofiled split (used when no split was measured) are from
the measured split, on capture traces that carry one (``baseline.split``).

Each model is given only what it would have without a split: the profiled tree and the
unprofiled call (here the split's own call, so only the distribution is compared).
Printed per trace: each category's share of the call, measured and per model, and each
measured function holding 10% or more of the call, measured and per model (us); the
worst relative error per model closes each table:

    python tools/unprofiled_model_vs_split.py TRACE.json.gz [...]

Models: ``shares`` (``report/unprofiled.from_model``, what explain uses: every profiled
figure scaled by one ratio, the unprofiled call over the profiled call without the
profiler's own time) and ``per-event`` (the model explain used before: one profiler cost
per recorded event, fitted to the call, removed from each node by its own events).
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


def _walk(nodes: Any) -> Any:
    for n in nodes:
        if n.category not in SKIP_CATEGORIES:
            yield n
            yield from _walk(n.children)


def _events_below(n: Any) -> int:
    return n.count + n.folded + sum(_events_below(c) for c in n.children)


def per_event(tree: Any, call_u: int) -> tuple[dict[str, float], dict[str, float]]:
    top = [n for n in tree if n.category not in SKIP_CATEGORIES]
    cost = max(0.0, (sum(n.inclusive_ns for n in top) - call_u)
               / max(sum(_events_below(n) for n in top), 1))
    cats: dict[str, float] = {}
    funcs: dict[str, float] = {}
    for n in _walk(top):
        own = n.self_ns + n.folded_ns - cost * (n.count + n.folded)
        cats[n.category] = cats.get(n.category, 0.0) + max(0.0, own)
    for name, prof in profiled_by_name(tree).items():
        node = next(n for n in _walk(top) if n.name == name)
        funcs[name] = min(call_u, max(0.0, prof - cost * _events_below(node)))
    return cats, funcs


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
        sh = from_model(a.per_call.tree, call_u, profiled,
                        dict(info.profiled_categories or {}), "measured split's call")
        shared = {n: v * call_u / max(sum(n_.inclusive_ns for n_ in a.per_call.tree
                                          if n_.category not in SKIP_CATEGORIES), 1)
                  for n, v in profiled_by_name(a.per_call.tree).items()}
        models = {"shares": ({k: float(v) for k, v in sh.categories.items()}, shared),
                  "per-event": per_event(a.per_call.tree, call_u)}
        print(f"{path}: unprofiled call {call_u / 1e3:.1f} us, profiled {profiled / 1e3:.1f} us"
              f"; {sh.method}")
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
