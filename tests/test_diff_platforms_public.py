"""diff across platforms on a real pair: the same Qwen1.5-0.5B-Chat inference step on
an H100 and on an MI300X (AMD TraceLens' test traces, public corpus; skipped where the
corpus is absent).

Hundreds of device work items carry no launch record (509 and 463), and the MI300's
``hipExtModuleLaunchKernel`` launches were not known as launches: per-call device work
once fell 43% where device busy fell 6%. Here each step's device work is counted from
the raw events: the union of the work whose correlation names a runtime call made
inside the step, and of the work no runtime call names that starts inside it.
"""

from __future__ import annotations

import gzip
import json
from decimal import Decimal

import public_corpus
import pytest

from traceview.multi.compare import diff_reports
from traceview.report.pipeline import analyze

H100 = "AMD-AGI__TraceLens/h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
MI300 = "AMD-AGI__TraceLens/mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
WORK = ("kernel", "gpu_memcpy", "gpu_memset")


def _ns(x) -> int:
    return int(Decimal(x) * 1000)


def step_device_work(path) -> tuple[int, int]:
    """(the step's device work, device work items no runtime call names)."""
    with gzip.open(path, "rt") as f:
        events = [e for e in json.load(f, parse_float=Decimal)["traceEvents"]
                  if e.get("ph") == "X"]
    step = next(e for e in events if str(e.get("name", "")).startswith("ProfilerStep#"))
    a, b = _ns(step["ts"]), _ns(step["ts"]) + _ns(step["dur"])
    runtime = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    named = {e.get("args", {}).get("correlation") for e in runtime}
    inside = {e.get("args", {}).get("correlation") for e in runtime if a <= _ns(e["ts"]) < b}
    work = [e for e in events if e.get("cat") in WORK]
    orphans = [e for e in work if e.get("args", {}).get("correlation") not in named]
    spans = sorted([(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in work
                    if e.get("args", {}).get("correlation") in inside]
                   + [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in orphans
                      if a <= _ns(e["ts"]) < b])
    total, cur = 0, None
    for s, t in spans:
        if cur is None or s > cur[1]:
            total += 0 if cur is None else cur[1] - cur[0]
            cur = [s, t]
        else:
            cur[1] = max(cur[1], t)
    return total + (0 if cur is None else cur[1] - cur[0]), len(orphans)


def test_h100_against_mi300_counts_all_device_work_and_cannot_tell_from_one_step():
    paths = [public_corpus.locate(n) for n in (H100, MI300)]
    if None in paths:
        pytest.skip("public corpus traces absent")
    (work_b, orphans_b), (work_a, orphans_a) = (step_device_work(p) for p in paths)
    assert (orphans_b, orphans_a) == (509, 463)
    before, after = (analyze(p) for p in paths)
    d = diff_reports(before, after)
    k = next(c for c in d.comparisons if c.metric == "calls.kernel_ns.p50")
    assert (k.before, k.after) == (work_b, work_a)
    assert any(f"no launch record: {orphans_b} item(s) before, {orphans_a} after" in w
               for w in d.warnings)
    # one step against one: no interval, whatever the bootstrap would print
    api = next(c for c in d.comparisons if c.metric == "calls.api_ns.p50")
    assert (api.n_before, api.n_after) == (1, 1) and api.ci_low is None
