"""The held-out public traces (``tests/data/public_corpus/README.md``) read right where
the final check found them read wrong: skipped unless ``TRACEVIEW_HELD_OUT=1``, so that
nothing is tuned on them. Each expected figure is counted here from the raw events; the
synthetic tests of each fix are beside the code they test (test_attribution,
test_integrity, test_diff_identity)."""

from __future__ import annotations

import gzip
import json
import os
import re
from decimal import Decimal

import public_corpus
import pytest

import traceview
from traceview.multi.codepath import code_path_changes
from traceview.multi.compare import ALL_FUNCTIONS

pytestmark = pytest.mark.skipif(os.environ.get("TRACEVIEW_HELD_OUT") != "1",
                                reason="held out: the final check nobody tunes on "
                                       "(TRACEVIEW_HELD_OUT=1 runs it)")

VLLM = "AMD-AGI__TraceLens/inference__vllm_prefilldecode_piecewise__graph_execution.json.gz"
NS_RESOLUTION = ("facebookresearch__HolisticTraceAnalysis/"
                 "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")
TUTORIAL = ("Quentin-Anthony__torch-profiling-tutorial/log__transformer__dcb0aa1a78e7_4399."
            "{}.pt.trace.json.gz")


def _path(name: str):
    path = public_corpus.locate(name)
    if path is None:
        pytest.skip(f"{name} is not in this machine's corpus copy")
    return path


def _events(name: str) -> list[dict]:
    return json.loads(gzip.decompress(_path(name).read_bytes()),
                      parse_float=Decimal)["traceEvents"]


def _ns(x) -> int:
    return int(Decimal(x) * 1000)


def test_vllm_per_launch_specialisation_makes_no_call_cold():
    """Triton's AMD backend specialises each argument on every launch (576 frames of
    get_arg_specialization here) and nothing in the trace compiles: no call is cold, no
    host time is compile."""
    names = [e["name"] for e in _events(VLLM) if e.get("cat") == "python_function"]
    per_launch = [n for n in names if re.search(r"^triton/backends/[^/]+/compiler\.py\(\d+\): "
                                                r"get_arg_specialization$", n)]
    compiles = [n for n in names if re.search(
        r"^triton/compiler/compiler\.py\(\d+\): compile$|: (_do_compile|make_ttir|make_ttgir|"
        r"make_llir|make_amdgcn|make_hsaco)$", n)]
    assert per_launch and not compiles
    r = traceview.analyze(str(_path(VLLM)))
    assert r.calls.cold == () and r.calls.warm_count == r.calls.count
    assert not r.host.categories.get("compile")
    assert "cold-path" not in {f.id for f in r.findings}


def test_ns_resolution_steps_that_lost_device_records_are_not_warm():
    """Every step holds launches whose correlation no device record carries: none is
    warm, in the step sentence as in the per-step table."""
    ev = _events(NS_RESOLUTION)
    work = {e["args"]["correlation"] for e in ev
            if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "correlation" in e.get("args", {})}
    steps = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in ev
             if e.get("cat") == "user_annotation" and re.fullmatch(r"ProfilerStep#\d+", e["name"])]
    launches = [e for e in ev if e.get("cat") == "cuda_runtime" and re.fullmatch(
        r"cuda(LaunchKernel|MemcpyAsync|MemsetAsync)", e["name"])]
    lost = {k for k, (a, b) in enumerate(sorted(steps)) for e in launches
            if a <= _ns(e["ts"]) < b and e["args"]["correlation"] not in work}
    r = traceview.analyze(str(_path(NS_RESOLUTION)))
    assert r.steps is not None and r.steps.count == len(steps) == 5
    warm = len(steps) - len(lost)
    assert r.steps.warm_count == r.calls.warm_count == warm == 0
    step = next(c.text for c in r.claims if c.id == "typical-step")
    assert f"typical of {len(steps)} steps, none warm" in step


def test_tutorial_runs_share_their_functions_in_the_diff():
    """Two runs of the tutorial script: the functions recorded in every step of both
    (by module and name, without line numbers), zero-length calls included, are never
    new or gone."""
    def every_step(name: str) -> set[str]:
        ev = _events(name)
        steps = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in ev
                 if e.get("cat") == "user_annotation" and re.fullmatch(r"ProfilerStep#\d+", e["name"])]
        found = [{re.sub(r"\(\d+\): ", ": ", re.sub(r" at 0x[0-9a-f]+", "", e["name"]))
                  for e in ev if e.get("cat") == "python_function" and a <= _ns(e["ts"]) < b}
                 for a, b in steps]
        return set.intersection(*found)

    a, b = TUTORIAL.format("1752181589621105859"), TUTORIAL.format("1752181589589738346")
    shared = every_step(a) & every_step(b)
    assert "<built-in function _get_cudnn_enabled>" in shared
    opts = traceview.Options(functions_limit=ALL_FUNCTIONS)  # as diff reads a trace
    rows = code_path_changes(traceview.analyze(str(_path(a)), opts),
                             traceview.analyze(str(_path(b)), opts), top=10**6)["functions"]
    assert {r["function"] for r in rows} >= shared
    wrong = [(r["function"], r["status"]) for r in rows
             if r["status"] in ("new", "gone", "new*", "gone*") and r["function"] in shared]
    assert not wrong


def _union(spans) -> int:
    total, end = 0, None
    for a, b in sorted(spans):
        if end is None or a > end:
            total, end = total + b - a, b
        elif b > end:
            total, end = total + b - end, b
    return total


def test_vllm_forward_returns_while_its_device_work_runs_on():
    """The typical call (the 21.5 ms ``_model_forward`` frame) returns long before the
    device work it launched runs (the device idle all of the call): that work, longer
    than the call, bounds it. The verdict says device-bound, the call returning while its
    work runs on, and agrees with the what-if beside it (no gain without host overhead).
    The call and its work (by correlation, launched inside the frame) are counted here."""
    from traceview.report.claims import check_all
    from traceview.units import fmt_ns

    ev = _events(VLLM)
    (a, b), = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in ev
               if e.get("cat") == "python_function" and e["name"].endswith(": _model_forward")]
    corr = {e["args"]["correlation"] for e in ev if e.get("cat") == "cuda_runtime"
            and a <= _ns(e["ts"]) < b and "correlation" in e.get("args", {})}
    work = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in ev
            if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
            and e.get("args", {}).get("correlation") in corr]
    all_work = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in ev
                if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    assert _union([(max(s, a), min(e, b)) for s, e in all_work if e > a and s < b]) == 0
    kernel, end = _union(work), max(e for _, e in work)
    assert kernel > b - a
    r = traceview.analyze(str(_path(VLLM)))
    assert check_all(r.claims, r.to_dict()) == []
    assert r.typical is not None and (r.typical.start_ns, r.typical.end_ns) == (a, b)
    v = next(f for f in r.findings if f.id in ("host-bound", "device-bound"))
    assert v.id == "device-bound" and v.message.startswith(
        f"device-bound: a typical call returns after {fmt_ns(b - a)} of host time while the "
        f"device work it launched (kernel {fmt_ns(kernel)}) runs on until "
        f"{fmt_ns(end - b)} after it: the device, not the host, bounds the work the call "
        "starts"), v.message
    no_host = next(w for w in r.what_if if w.scenario == "no-host-overhead")
    assert no_host.projected_ns > no_host.measured_ns == b - a
    assert "no gain" in next(c.text for c in r.claims
                             if c.id == "what-if" and "without host overhead" in c.text)
