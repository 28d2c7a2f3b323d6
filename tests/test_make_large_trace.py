"""The benchmark generator's real-trace features: overhanging slices and renamed frames.

Checked against the generated file itself (plain json, integers), not against
traceview's earlier output: planted slices really outlive the slice they start in, the
renamed frames are really distinct names, and the file is the same bytes every time.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

from conftest import FIXTURES

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import make_large_trace

FIXTURE = FIXTURES / "triton_mul_1x4096_f32_stack.json.gz"
HOST_WORK = ("python_function", "cpu_op", "cuda_runtime", "cuda_driver")  # labels overlap freely


def _ns(v) -> int:
    whole, _, frac = f"{v:.3f}".partition(".")
    return int(whole) * 1000 + int(frac)


def _events(path: Path) -> list[dict]:
    return json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


def _overhangs(events: list[dict]) -> int:
    """Slices that start inside an earlier slice of their thread and end after it (a
    stack over the thread's slices, in start order, longest first)."""
    count = 0
    by_thread: dict[tuple, list[tuple[int, int]]] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in HOST_WORK:
            by_thread.setdefault((e["pid"], e["tid"]), []).append((_ns(e["ts"]), _ns(e["dur"])))
    for spans in by_thread.values():
        stack: list[int] = []
        for ts, dur in sorted(spans, key=lambda x: (x[0], -x[1])):
            while stack and stack[-1] <= ts:
                stack.pop()
            if stack and ts + dur > stack[-1]:
                count += 1
            stack.append(ts + dur)
    return count


def test_plants_overhangs_and_names_deterministically(tmp_path):
    a, b, plain = tmp_path / "a.json.gz", tmp_path / "b.json.gz", tmp_path / "p.json.gz"
    kw = {"overhangs": 5, "overhang_max_us": 50_000.0, "name_variants": 3, "seed": 7}
    info = make_large_trace.build(FIXTURE, 5_000_000, a, 6, **kw)
    make_large_trace.build(FIXTURE, 5_000_000, b, 6, **kw)
    make_large_trace.build(FIXTURE, 5_000_000, plain, 6)
    assert a.read_bytes() == b.read_bytes()
    assert info["copies"] >= 3 and info["overhangs"] == 5 * info["copies"]
    planted, base = _events(a), _events(plain)
    assert len(planted) == len(base)
    assert _overhangs(base) == 0 and _overhangs(planted) >= 5 * info["copies"]
    names = {e["name"] for e in planted if e.get("cat") == "python_function"}
    base_names = {e["name"] for e in base if e.get("cat") == "python_function"}
    renamed = {n for n in base_names if ".py(" in n}
    assert len(names) == len(base_names) + 2 * len(renamed)
    # only dur and names differ: everything else is the plain generator's
    for p, q in zip(planted, base, strict=True):
        assert {k: v for k, v in p.items() if k not in ("dur", "name")} == \
               {k: v for k, v in q.items() if k not in ("dur", "name")}
