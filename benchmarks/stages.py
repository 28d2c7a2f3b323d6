"""Where ``explain --format json`` spends its time and memory, stage by stage.

    PYTHONPATH=. python benchmarks/stages.py TRACE [--json OUT]

One fresh process, one run: the functions of each stage are wrapped with timers
(inclusive CPU time of the process, summed over calls: on a shared machine wall time
mostly measures the neighbours; nested stages are indented under the stage
that calls them), and the peak RSS (``VmHWM``) is read after each top-level stage. The
wrappers cost a few microseconds per call, so the totals are a little above an
unwrapped run; use ``bench_hta.py`` for the figures that judge speed. The output JSON
is written to OUT (``--json``) so a run can be compared with the plain CLI's output.
The CLI's allocator settings apply (``traceview.io.allocator``; they raise the peak by
some 20-30 MiB on big traces), so the peaks are the CLI's; ``TRACEVIEW_KEEP_FREED_MEMORY=0``
turns them off as it does for the CLI.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

T0 = time.process_time()
clock = time.process_time

# (module, attribute, stage label, depth): attribute may be "Class.method"
WRAP = [
    ("traceview.io.decode", "decode", "decode", 0),
    ("traceview.io.pieces", "pieces", "inflate (read + gunzip pieces)", 1),
    ("traceview.io.splitter", "Splitter.push", "splitter (cut chunks) + chunk decode", 1),
    # io/collector.py since the decoder was split; io/decode.py in older trees
    ("traceview.io.collector", "Collector.chunk", "chunk: decode + columns", 2),
    ("traceview.io.decode", "_Collector.chunk", "chunk: decode + columns", 2),
    ("traceview.io.fastscan", "scan", "compiled scanner (C)", 3),
    ("traceview.io.collector", "Collector._add_scanned", "columns from the scan (codes, args)", 3),
    ("traceview.io.decode", "_Collector._add_scanned", "columns from the scan (codes, args)", 3),
    ("traceview.io.collector", "EVENTS.decode", "msgspec typed decode", 3),
    ("traceview.io.decode", "_KNOWN.decode", "msgspec typed decode", 3),
    ("traceview.io.decode", "_FAST.decode", "msgspec typed decode", 3),
    ("traceview.io.collector", "Collector._add", "columns (key/name codes, args)", 3),
    ("traceview.io.decode", "_Collector._add", "columns (key/name codes, args)", 3),
    ("traceview.io.collector", "Collector.columns", "concatenate columns", 1),
    ("traceview.io.decode", "_Collector.columns", "concatenate columns", 1),
    ("traceview.model", "build", "model.build", 0),
    ("traceview.report.explanation", "find_window", "window", 0),
    ("traceview.report.explanation", "analyze_device", "device", 0),
    ("traceview.report.explanation", "pick_thread", "pick thread", 0),
    ("traceview.report.explanation", "analyze_launches", "launches", 0),
    ("traceview.report.explanation", "host_rows_by_lane", "host rows by lane", 0),
    ("traceview.report.explanation", "attribute_host", "host sweep (all lanes)", 0),
    ("traceview.analyses.host", "sweep_order", "sweep order", 1),
    ("traceview.analyses.host", "_classify_rows", "classify rows", 1),
    ("traceview.analyses.host", "_sweep_nested", "array sweep (nested only, the old path)", 1),
    ("traceview.analyses.host_sweep_native", "_sweep_native", "compiled loop sweep (C)", 1),
    ("traceview.analyses.host", "_sweep_arrays", "array sweep", 1),
    ("traceview.analyses.host", "_open_parents", "open parents", 2),
    ("traceview.analyses.host", "_subtree_ends", "subtree ends", 2),
    ("traceview.analyses.host", "_resolve_by_ancestor", "categories by ancestor", 2),
    ("traceview.analyses.host", "_timeline", "timeline (self ns)", 1),
    ("traceview.report.explanation", "breakdown", "breakdown", 0),
    ("traceview.report.explanation", "analyze_calls", "calls", 0),
    ("traceview.report.explanation", "hot_functions", "hot functions", 0),
    ("traceview.report.build", "detect", "findings", 0),
    ("traceview.report.build", "typical_call", "typical call", 0),
    ("traceview.report.schema", "to_json", "render json", 0),
]


def hwm_mb() -> float:
    for ln in Path("/proc/self/status").read_text().splitlines():
        if ln.startswith("VmHWM"):
            return int(ln.split()[1]) / 1024
    return float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", type=Path)
    ap.add_argument("--json", type=Path, help="write explain's JSON output here")
    ap.add_argument("--stats", type=Path, help="write the stage table as JSON here")
    args = ap.parse_args(argv)

    spent: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    peak: dict[str, float] = {}
    order = []

    def wrap(fn, label, depth):
        if label.startswith("inflate"):
            @functools.wraps(fn)
            def timed(*a, **k):  # a generator: time each step
                it = fn(*a, **k)
                while True:
                    t = clock()
                    try:
                        piece = next(it)
                    except StopIteration:
                        spent[label] += clock() - t
                        return
                    spent[label] += clock() - t
                    calls[label] += 1
                    yield piece
        else:
            @functools.wraps(fn)
            def timed(*a, **k):
                t = clock()
                try:
                    return fn(*a, **k)
                finally:
                    spent[label] += clock() - t
                    calls[label] += 1
                    if depth == 0:  # the memory high-water mark after each top stage
                        peak[label] = hwm_mb()
        return timed

    class _Timed:
        """A decoder object whose ``decode`` is timed (msgspec's are read-only)."""

        def __init__(self, dec, label):
            self._dec, self._label = dec, label

        def decode(self, *a):
            t = clock()
            try:
                return self._dec.decode(*a)
            finally:
                spent[self._label] += clock() - t
                calls[self._label] += 1

    for mod_name, attr, label, depth in WRAP:
        if (label, depth) not in order:
            order.append((label, depth))
        try:
            mod = importlib.import_module(mod_name)
        except ModuleNotFoundError:  # an older tree (before the compiled scanner)
            continue
        owner, _, name = attr.rpartition(".")
        if owner in ("_KNOWN", "_FAST", "EVENTS"):  # msgspec decoders: wrap the object
            if hasattr(mod, owner):  # (older trees have only _FAST, or _KNOWN too)
                setattr(mod, owner, _Timed(getattr(mod, owner), label))
            continue
        target = getattr(mod, owner, None) if owner else mod
        if target is None or not hasattr(target, name):  # a stage another tree lacks
            continue
        setattr(target, name, wrap(getattr(target, name), label, depth))
    # pieces and the model are imported by name where they are used
    import traceview.io.decode as dec
    import traceview.io.pieces as pcs

    dec.pieces = pcs.pieces
    import traceview
    from traceview import model
    from traceview.io.allocator import keep_freed_memory

    keep_freed_memory()  # as the CLI does
    t_imports = clock() - T0
    t = clock()
    trace = model.build(dec.decode(args.trace))
    ex = traceview.explain(trace)
    from traceview.report.schema import to_json

    out = to_json(ex)
    total = clock() - t
    if args.json:
        args.json.write_bytes(out)
    rows = [{"stage": lab, "depth": d, "s": round(spent.get(lab, 0.0), 4),
             "calls": calls.get(lab, 0), "peak_mb": round(peak[lab], 1) if lab in peak else None}
            for lab, d in order]
    print(f"{args.trace}: CPU s: imports {t_imports:.2f}, load + explain + render {total:.2f}; "
          f"peak RSS {hwm_mb():.0f} MiB")
    print("| stage | s | calls | peak MiB after |\n|---|---:|---:|---:|")
    for r in rows:
        if not r["calls"]:
            continue
        pad = "&nbsp;&nbsp;" * r["depth"]
        pk = "" if r["peak_mb"] is None else f"{r['peak_mb']:.0f}"
        print(f"| {pad}{r['stage']} | {r['s']:.3f} | {r['calls']} | {pk} |")
    if args.stats:
        args.stats.write_text(json.dumps({"trace": str(args.trace), "imports_s": t_imports,
                                          "total_s": total, "peak_mb": hwm_mb(),
                                          "stages": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
