"""capture_steps' figures against an independent timing of the same step, into a fixture.

Reads what ``tools/capture_steps_llama.py`` wrote (``steps.json.gz``, ``steps.truth.json``)
and ``traceview explain --format json`` of that trace, and writes the figures a test checks
(``tests/test_unprofiled_steps_h200.py``): the profiled steps as the raw
``ProfilerStep#N`` events give them (this script's own reading, no traceview code), the
steps explain found, capture_steps' unprofiled step time, the same step timed by the
script alone, and explain's corrected phases:

    python tools/steps_vs_independent.py --dir OUT/steps --explain OUT/steps/explain.json \
        --fixture fixtures/steps_h200_llama.json
"""

from __future__ import annotations

import argparse
import gzip
import json
from decimal import Decimal
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--dir", required=True)
    p.add_argument("--explain", required=True)
    p.add_argument("--fixture", required=True)
    a = p.parse_args()
    d = Path(a.dir)
    doc = json.loads(gzip.decompress((d / "steps.json.gz").read_bytes()))
    truth = json.loads((d / "steps.truth.json").read_text())
    ex = json.loads(Path(a.explain).read_text())
    raw = [int(Decimal(str(e["dur"])) * 1000) for e in doc["traceEvents"]
           if e.get("cat") == "user_annotation"
           and str(e.get("name", "")).startswith("ProfilerStep#")]
    steps = ex.get("steps") or {}
    u = (ex.get("unprofiled") or {}).get("steps") or {}
    out = {
        "what": "traceview.capture_steps on a small Llama training loop (two micro-batches "
                "per step) against the same step timed by the script alone",
        "command": "OUT=... bash tools/capture_steps_unprofiled_on_gpu.sh (its steps part)",
        "device": truth["device"], "torch": truth["torch"], "model": truth["model"],
        "micro_batches": truth["micro_batches"],
        "raw_step_walls_ns": raw,
        "explain_step_walls_ns": [s["wall_ns"] for s in steps.get("steps", [])],
        "explain_step_cold": [s["cold"] for s in steps.get("steps", [])],
        "capture_steps": {k: v for k, v in doc["traceview_steps"].items()},
        "independent": {k: truth[k] for k in ("independent_before_ns", "independent_after_ns",
                                              "independent_median_ns", "timer")},
        "explain_unprofiled_steps": {k: u.get(k) for k in (
            "profiled_step_ns", "unprofiled_step_ns", "phases", "profiled_phases", "model")},
        "critical_path": u.get("critical_path"),
    }
    Path(a.fixture).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: out[k] for k in ("raw_step_walls_ns", "explain_step_walls_ns")}))
    print("capture_steps p50", out["capture_steps"]["step_ns_p50"], "independent",
          truth["independent_median_ns"], "profiled (explain)", u.get("profiled_step_ns"))


if __name__ == "__main__":
    main()
