"""The unprofiled split of the planted CPU library against a staged timing, printed.

The library (``tests/planted_stages.py``) runs a busy-wait, 400 tiny Python calls and a
C call; this profiles it (CPU, with_stack), picks the functions from the trace as capture
does, measures the split, and times each stage alone with a perf_counter_ns wrapper
(the staged reference, as its share of its own runs' call times the split's call: the
machine may be shared), printing profiled, split and staged figures per stage in us:

    python tools/unprofiled_planted_cpu.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import planted_stages as P  # noqa: E402
from test_unprofiled_split import staged  # noqa: E402

import traceview  # noqa: E402
from traceview.options import Options  # noqa: E402
from traceview.report.explanation import analyze_trace  # noqa: E402
from traceview.report.unprofiled import profiled_by_name  # noqa: E402
from traceview.unprofiled import find, split  # noqa: E402
from traceview.unprofiled.structure import choose_from_trace  # noqa: E402


def main() -> None:
    from torch.profiler import ProfilerActivity, profile, record_function

    for _ in range(20):
        P.op()
    with tempfile.TemporaryDirectory() as d:
        path = str(Path(d) / "planted.json")
        with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
            for i in range(12):
                with record_function(f"call_{i}"):
                    P.op()
        prof.export_chrome_trace(path)
        names = choose_from_trace(path, calls=r"^call_\d+$")
        a = analyze_trace(traceview.load(path), Options(calls=r"^call_\d+$"))
    profiled = {find.parse(n)[2]: v for n, v in profiled_by_name(a.per_call.tree).items()}
    block = split.measure(P.op, lambda: None, find.functions_for(names))
    got = {find.parse(f["name"])[2]: f for f in block["functions"]}
    print(f"call: unprofiled {block['call_ns'] / 1e3:.1f} us; {block['method']}; "
          f"calibration {block['calibration']['in_band_ns']} ns in-band, "
          f"{block['calibration']['per_invocation_ns']} ns per invocation")
    print(f"{'stage (us)':12} {'profiled':>9} {'split':>9} {'interval':>13} {'staged':>9}")
    for name in ("busy_stage", "tiny_stage", "crc_stage"):
        f = got[name]
        stage, call = staged(name)
        want = stage * block["call_ns"] / call
        interval = f"{f['low_ns'] / 1e3:.1f}-{f['high_ns'] / 1e3:.1f}"
        print(f"{name:12} {profiled[name] / 1e3:>9.1f} {f['inclusive_ns'] / 1e3:>9.1f} "
              f"{interval:>13} {want / 1e3:>9.1f}")


if __name__ == "__main__":
    main()
