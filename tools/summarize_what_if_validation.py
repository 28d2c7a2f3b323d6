"""Each what-if projection beside its counterfactual measured on the GPU, with its error.

Reads what ``tools/measure_what_if_counterfactuals_on_gpu.sh`` wrote (``what_if_measured.json``
and one trace per shape, in a folder; ``tests/data/what_if`` holds the committed copy as
``measured.json``), projects from each trace with traceview (the measured eager call as
the unprofiled call figure), and prints one row per (shape, scenario): the projection,
its interval, the measured counterfactual and the error. ``--write-table`` writes the
measured graph costs into ``traceview/data/graph_launch_costs.json`` under the card's name.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import traceview

COUNTERFACTUAL = {"cuda-graph": "graph", "no-host-overhead": "queued", "fewer-launches": "fused"}
TABLE = Path(__file__).resolve().parent.parent / "traceview" / "data" / "graph_launch_costs.json"
KEYS = ("fixed_ns", "per_node_ns", "floor_ns", "queued_fixed_ns", "queued_per_node_ns",
        "queued_floor_ns")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--write-table", action="store_true")
    a = ap.parse_args()
    doc_path = a.folder / "measured.json"
    if not doc_path.exists():
        doc_path = a.folder / "what_if_measured.json"
    doc = json.loads(doc_path.read_text())
    if a.write_table:  # this card's row, beside the other cards' rows already there
        g = doc["graph_costs"]
        cards = json.loads(TABLE.read_text())["cards"] if TABLE.exists() else {}
        cards[doc["card"]] = {k: g[k] for k in KEYS}
        TABLE.write_text(json.dumps({
            "measured_by": "tools/measure_what_if_counterfactuals_on_gpu.py",
            "date": doc["date"], "torch": doc["torch"], "cards": cards}, indent=1) + "\n")
    print(f"card {doc['card']}, torch {doc['torch']}, {doc['date']}; errors: {doc['errors']}")
    print(f"{'shape':18} {'scenario':18} {'now':>9} {'projected':>10} {'low':>9} {'high':>9} "
          f"{'measured':>9} {'error':>7}")
    for shape, m in doc["shapes"].items():
        trace = a.folder / f"{shape}.json.gz"
        r = traceview.analyze(trace, traceview.Options(calls="whatif_call",
                                                       unprofiled_call=m["eager"]))
        for w in r.what_if:
            meas = m.get(COUNTERFACTUAL[w.scenario])
            err = f"{(w.projected_ns - meas) / meas:+.1%}" if meas else "-"
            print(f"{shape:18} {w.scenario:18} {w.measured_ns:9d} {w.projected_ns:10d} "
                  f"{w.low_ns:9d} {w.high_ns:9d} {meas or 0:9d} {err:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
