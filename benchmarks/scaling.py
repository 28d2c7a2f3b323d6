"""How explain's time grows with the number of calls, steps, threads and events per call.

    PYTHONPATH=. python benchmarks/scaling.py [--calls 1000,6000,20000,60000,100000]
        [--steps 10,100,1000] [--threads 1,4,16] [--events-per-call 5,20,50] [--json OUT]

Each point is a synthetic trace (``synth_calls.py``) analysed in this process, stage by
stage, with process CPU time (not wall time: on a shared machine the wall clock mostly
measures the neighbours): load (decode + model), every analysis ``analyze_trace``
runs, the report and the JSON, then the text (80 columns) and markdown reports (outside
the total, which is load, explain and JSON). For each series the table gives the seconds
per stage and, per stage, the time per call and per event at the largest point over the
smallest ("growth": 1.0 is linear; a stage at 10x for 100x the calls is quadratic). A stage whose
growth passes ``--flag`` (default 2.0) is marked. The sweep over calls holds steps,
threads and events per call at 0, 1 and 5; each other sweep holds the calls at
``--base-calls`` (default 6,000).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import synth_calls  # (same directory)

import traceview
import traceview.render.console
import traceview.render.markdown  # (the renderers import these on first use: not in a point)
from traceview.render.registry import RenderOptions, renderer
from traceview.report import build as build_mod
from traceview.report import explanation as E
from traceview.report import schema

# (module, function, stage label): analyses wrapped where analyze_trace looks them up
STAGES = [
    (E, "find_window", "window"), (E, "analyze_device", "device"),
    (E, "analyze_launches", "launches"), (E, "host_rows_by_lane", "host rows"),
    (E, "attribute_host", "host sweep"), (E, "breakdown", "breakdown"),
    (E, "analyze_calls", "calls"), (E, "thread_figures", "threads"),
    (E, "analyze_steps", "steps"), (E, "hot_functions", "hot functions"),
    (E, "analyze_per_call", "per-call tree + families"),
    (build_mod, "detect", "findings"), (build_mod, "build_report", "report"),
]

clock = time.process_time


def _wrap(spent: dict[str, float]) -> None:
    for mod, name, label in STAGES:
        fn = getattr(mod, name, None)
        if fn is None or hasattr(fn, "_scaling"):
            continue

        def timed(*a, _fn=fn, _label=label, **k):
            t = clock()
            try:
                return _fn(*a, **k)
            finally:
                spent[_label] = spent.get(_label, 0.0) + clock() - t

        functools.update_wrapper(timed, fn)
        timed._scaling = True  # type: ignore[attr-defined]
        setattr(mod, name, timed)


SPENT: dict[str, float] = {}
_wrap(SPENT)


def measure(path: Path) -> dict[str, float]:
    """CPU seconds per stage of one load + explain + JSON of ``path``."""
    SPENT.clear()
    t0 = clock()
    trace = traceview.load(path)
    t1 = clock()
    report = traceview.explain(trace)
    t2 = clock()
    schema.to_json(report)
    t3 = clock()
    renderer("text").render(report, RenderOptions(width=80))
    t4 = clock()
    renderer("md").render(report, RenderOptions())
    t5 = clock()
    out = {"load": t1 - t0, **SPENT, "render json": t3 - t2,
           "render text": t4 - t3, "render md": t5 - t4}
    out["explain (all)"] = t2 - t1
    out["total"] = t3 - t0
    out["events"] = len(trace.slices)
    return out


def series(name: str, values: list[int], make) -> dict:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for v in values:
            path = Path(tmp) / f"{name}_{v}.json"
            n_calls = make(path, v)
            m = measure(path)
            m["calls"] = n_calls
            m[name] = v
            rows.append(m)
            print(f"  {name}={v:,}: {m['total']:.2f} s, {m['events']:,} events", file=sys.stderr)
    return {"name": name, "rows": rows}


def table(s: dict, flag: float) -> str:
    rows = s["rows"]
    stages = [k for k in rows[-1] if k not in ("calls", "events", s["name"])]
    head = " | ".join(f"{s['name']}={r[s['name']]:,}" for r in rows)
    lines = [f"| stage | {head} | us per call, first -> last | growth per event |",
             "|---|" + "---:|" * (len(rows) + 2)]
    a, b = rows[0], rows[-1]
    for st in stages:
        cells = " | ".join(f"{r.get(st, 0.0):.3f}" for r in rows)
        pa, pb = a.get(st, 0.0) / a["calls"] * 1e6, b.get(st, 0.0) / b["calls"] * 1e6
        ea, eb = a.get(st, 0.0) / a["events"], b.get(st, 0.0) / b["events"]
        growth = eb / ea if ea > 1e-9 else float("nan")
        mark = " **super-linear**" if growth > flag and b.get(st, 0.0) > 0.05 else ""
        lines.append(f"| {st} | {cells} | {pa:.1f} -> {pb:.1f} | {growth:.2f}{mark} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)

    def ints(t: str) -> list[int]:
        return [int(x) for x in t.split(",") if x]

    ap.add_argument("--calls", type=ints, default=ints("1000,6000,20000,60000,100000"))
    ap.add_argument("--steps", type=ints, default=ints("10,100,1000"))
    ap.add_argument("--threads", type=ints, default=ints("1,4,16"))
    ap.add_argument("--events-per-call", type=ints, default=ints("5,20,50"))
    ap.add_argument("--base-calls", type=int, default=6000)
    ap.add_argument("--flag", type=float, default=2.0)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    base = a.base_calls
    out = []
    if a.calls:
        out.append(series("calls", a.calls, lambda p, v: synth_calls.write(p, v) and v))
    if a.steps:
        out.append(series("steps", a.steps,
                          lambda p, v: synth_calls.write(p, base, steps=v) and base))
    if a.threads:
        out.append(series("threads", a.threads,
                          lambda p, v: synth_calls.write(p, base, threads=v) and base))
    if a.events_per_call:
        out.append(series("events_per_call", a.events_per_call,
                          lambda p, v: synth_calls.write(p, base, events_per_call=v) and base))
    for s in out:
        print(f"\n### {s['name']} (CPU s per stage)\n")
        print(table(s, a.flag))
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
