"""The held-out public traces (``tests/data/public_corpus/README.md``) read right where
the final check found them read wrong: skipped unless ``TRACEVIEW_HELD_OUT=1``, so that
nothing is tuned on them. Each expected figure is counted here from the raw events; the
synthetic tests of each fix are beside the code they test (test_attribution,
test_integrity, test_diff_identity, test_diff_threads)."""

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


DDP = "AMD-AGI__TraceLens/mi300__ddp_resnet18_no_pool__train_resnet18.json.gz"
ACT_CHECKPOINT = "AMD-AGI__TraceLens/mi300_resnet_act_checkpoint.json.gz"
VLLM_DECODE = "AMD-AGI__TraceLens/inference__vllm_decode_full__graph_execution.json.gz"
HOST_CATS = ("python_function", "cpu_op", "cuda_runtime", "cuda_driver")


def _identity(name: str) -> str:
    """A function as diff matches it, here from the raw name: line numbers and object
    addresses dropped (both traces' frames are named by relative paths)."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", re.sub(r"\(\d+\): ", ": ", name))


def test_ddp_backward_on_the_main_thread_is_not_new_against_act_checkpoint():
    """The DDP trace's calls are autograd ops on pt_autograd_0; its ``backward`` frames
    run on the main thread. Against the activation-checkpointing trace (backward inside
    its steps): every function either trace ran on any thread is matched, so a row is
    new or gone only where the other trace's raw events never name it."""
    ddp, act = _events(DDP), _events(ACT_CHECKPOINT)
    on = [{_identity(e["name"]): e["tid"] for e in ev
           if e.get("ph") == "X" and e.get("cat") in HOST_CATS} for ev in (ddp, act)]
    opts = traceview.Options(functions_limit=ALL_FUNCTIONS)  # as diff reads a trace
    rb = traceview.analyze(str(_path(DDP)), opts)
    assert rb.host.thread is not None and rb.host.thread.label.startswith("pt_autograd_0")
    assert on[0]["torch/_tensor.py: backward"] == 1 and "torch/_tensor.py: backward" in on[1]
    rows = code_path_changes(rb, traceview.analyze(str(_path(ACT_CHECKPOINT)), opts),
                             top=10**6)["functions"]
    wrong = [(r["function"], r["status"]) for r in rows
             if (r["status"] in ("new", "new*") and r["function"] in on[0])
             or (r["status"] in ("gone", "gone*") and r["function"] in on[1])]
    assert not wrong
    back = next(r for r in rows if r["function"] == "torch/_tensor.py: backward")
    assert back["status"] == "other thread before"
    assert back["before_threads"] == ["main thread [1/1]"]
    # what only one trace ran is still new or gone
    assert {r["status"] for r in rows if r["function"] == "train_ddp.py: train_step"} == {"new"}
    assert "train_ddp.py: train_step" not in on[0]


def _union(spans: list[tuple[int, int]]) -> int:
    total, end = 0, None
    for s, e in sorted(spans):
        if end is None or s > end:
            total, end = total + e - s, e
        elif e > end:
            total, end = total + e - end, e
    return total


def test_vllm_function_share_is_of_the_call_it_runs_in():
    """vLLM's three calls are of three kinds (prepare inputs, the model's forward, the
    logits); the FX graph's ``call_wrapped`` runs only inside the forward. Its share is
    its time in that call over that call's wall, counted here from the raw events (it
    read 1532%: the forward's time over the trace's p50 call, a short one)."""
    ev = _events(VLLM)
    fwd = [e for e in ev if e.get("cat") == "python_function"
           and re.fullmatch(r"vllm/v1/worker/gpu_model_runner\.py\(\d+\): _model_forward",
                            e["name"])]
    assert len(fwd) == 1
    c0 = _ns(fwd[0]["ts"])
    c1 = c0 + _ns(fwd[0]["dur"])
    spans = [(_ns(e["ts"]), min(c1, _ns(e["ts"]) + _ns(e["dur"]))) for e in ev
             if e.get("cat") == "python_function" and e["tid"] == fwd[0]["tid"]
             and _identity(e["name"]) == "torch/fx/graph_module.py: call_wrapped"
             and c0 <= _ns(e["ts"]) < c1]
    inside = _union(spans)
    opts = traceview.Options(functions_limit=ALL_FUNCTIONS)
    r = traceview.analyze(str(_path(VLLM)), opts)
    assert r.calls.count == len(r.calls.kinds) == 3
    assert inside > r.calls.stats["api_ns"].p50  # over the p50 call: the old 1532%
    cp = code_path_changes(r, traceview.analyze(str(_path(VLLM_DECODE)), opts), top=10**6)
    row = next(x for x in cp["functions"]
               if x["function"] == "torch/fx/graph_module.py: call_wrapped")
    assert row["before_inclusive_ns_per_call"] == inside
    assert row["before_call_ns_per_call"] == c1 - c0
    assert row["before_share"] == pytest.approx(inside / (c1 - c0))
    assert all(x[f"{s}_share"] is None or x[f"{s}_share"] <= 1
               for x in cp["functions"] for s in ("before", "after"))


PARAM_RESNET = "facebookresearch__param/data__resnet_kineto.json.gz"
DDP_RESNET = "AMD-AGI__TraceLens/mi300__ddp_resnet18_no_pool__train_resnet18.json.gz"


@pytest.mark.parametrize(("name", "beside"), [
    (PARAM_RESNET, ("aten::copy_", "aten::_to_copy")),
    (DDP_RESNET, ("torchvision/models/resnet.py(89): forward",))])
def test_backward_outliers_are_not_held_by_the_main_threads_work(name, beside):
    """The calls are backward nodes on the autograd thread, each node a call of its own
    kind, while the main thread works (param's resnet: the next batch's copies to the
    device; the DDP resnet: the forward of ``torchvision``'s block). That work is never
    what holds a node's excess; every holder named ran on the node's own thread inside
    it, and any other thread's work named ran there for at least the time the words give
    (counted from the raw events). While the rarer nodes joined the node after them, the
    slowest calls spanned the main thread's work and at least 4 reasons named it beside
    the call; as calls of their own, no node spans it by enough to be named."""
    from outlier_threads import thread_words

    from traceview.report.claims import check_all

    r = traceview.analyze(str(_path(name)))
    held, named_beside, problems = thread_words(_events(name), r)
    assert not problems and held >= 5  # holders were named, so the check above checked
    reasons = [c.cold_reason or c.outlier_reason or "" for c in r.calls.per_call]
    assert not [w for w in reasons for b in beside if f"; {b} holds" in w or f"; {b} took" in w]
    assert sum(any(f"ran {b}, " in w for b in beside) for w in reasons) == named_beside
    assert check_all(r.claims, r.to_dict()) == []


FILTERED = "facebookresearch__HolisticTraceAnalysis/trace_filter__sampled_rank-1.json.gz"


def test_htas_filtered_rank_calls_no_idle_launch_latency():
    """HTA's trace-filter test data: a rank whose events a sampler thinned (1,465 holes in
    the numbering of its 2,367 numbered CPU events). The typical step's 162 ms of idle
    after launches (a GEMM launched 98 ms before the 13 ms gap it ends, nothing on the
    device in the trace meanwhile) is ``not in the trace`` (no thread: ``unknown``), never
    launch latency; each step's figure is counted from the raw events, and a diagnostic
    says why."""
    from idle_count import after_launch, numbering_gaps, step_bounds

    from traceview.report.claims import check_all

    events = _events(FILTERED)
    r = traceview.analyze(str(_path(FILTERED)))
    bounds = step_bounds(events)
    assert [(s.start_ns, s.end_ns) for s in r.steps.steps] == bounds
    for st, (a, b) in zip(r.steps.steps, bounds, strict=True):
        assert [(c.resource, c.ns) for c in st.idle_causes if c.what == "not in the trace"] \
            == [("unknown", after_launch(events, a, b))]
        assert not [c for c in st.idle_causes if c.what == "launch latency"]
    typical = next(s for s in r.steps.steps if s.name == "ProfilerStep#551")
    shown = next(c.ns for c in typical.idle_causes if c.what == "not in the trace")
    assert 161_500_000 <= shown < 162_500_000  # "162 ms", as launch latency said before
    missing, holes = numbering_gaps(events)
    (d,) = [d for d in r.diagnostics if d.code == "events-removed"]
    assert (d.count, holes) == (missing, 1465)
    assert check_all(r.claims, r.to_dict()) == []
