"""Field cases read right on real traces, where the case's own test was synthetic.

Each test here takes a real trace (a public corpus trace, skipped with the reason when
the corpus copy is absent, or a committed real capture under fixtures/) of the shape a
field report named, and checks the words and figures against counts made here from the
raw events (Decimal microseconds to integer ns, ``rawcount``'s plain interval
arithmetic), never against traceview's earlier output. The map from each field case to
its tests is in tests/data/public_corpus/README.md.
"""

from __future__ import annotations

import re

import pytest
from public_corpus import locate
from test_trace_shapes import API_CATS, WORK_CATS, ns, raw_events

import traceview
from conftest import FIXTURES
from rawcount import clip, length, union

HOST_CATS = ("cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver")
NON_ACTIVITY = ("Trace", "overhead", "gpu_user_annotation", "ac2g", "cuda_sync")


def span(e) -> list[int]:
    return [ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])]


def nearest_rank(values: list[int], p: int) -> int:
    """The nearest-rank percentile: the smallest value with p% of the values at or below."""
    v = sorted(values)
    return v[max(1, -(-len(v) * p // 100)) - 1]


# --- CUPTI's sync records are device-side lanes, never host threads ------------------

ALEXNET = ("facebookresearch__HolisticTraceAnalysis/"
           "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz")


def test_cuda_sync_records_of_a_real_trace_are_no_host_threads():
    """HTA's AlexNet critical-path trace: 41 ``cuda_sync`` records on the device's pid 0
    (on the streams' tids and on tid -1) beside the kernels. The host threads listed are
    exactly those holding host events, the sync lanes none of them, and device busy is the
    union of the kernels, memcpys and memsets alone."""
    path = locate(ALEXNET)
    if path is None:
        pytest.skip(f"public corpus trace {ALEXNET} not present")
    events = raw_events(path)
    sync_lanes = {(e["pid"], e["tid"]) for e in events if e.get("cat") == "cuda_sync"}
    host = {(e["pid"], e["tid"]) for e in events if e.get("cat") in HOST_CATS}
    assert sync_lanes and not sync_lanes & host  # the shape: sync rows of their own
    r = traceview.analyze(path)
    assert {(t.pid, t.tid) for t in r.threads} == host
    assert r.device.busy_ns == length(union(
        [span(e) for e in events if e.get("cat") in WORK_CATS]))
    main = [t for t in r.threads if t.role == "main"]
    launchers = {(e["pid"], e["tid"]) for e in events if e.get("cat") in API_CATS}
    assert len(main) == 1 and (main[0].pid, main[0].tid) in launchers


# --- a time window cutting a step, on a real training trace -------------------------

def test_a_time_window_cutting_a_real_step_shows_the_whole_step():
    """The H200 Llama training capture (fixtures/train_llama_eager, six steps): a window
    from a third to two thirds of the third step cuts it. The window widens to the step's range,
    and the call's wall, device work and the device busy are all the whole step's: the
    wall its ``ProfilerStep#N`` range, the device work the union of the kernels, copies and sets launched
    (by correlation) inside it, the busy the union of all device work clipped to it."""
    path = FIXTURES / "train_llama_eager.json.gz"
    events = raw_events(path)
    named = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"]) for e in events
                   if e.get("cat") == "user_annotation"
                   and re.match(r"^ProfilerStep#\d+$", e["name"]))
    steps = [(x, y) for x, y, _ in named]
    first = min(ns(e["ts"]) for e in events if e.get("cat") not in NON_ACTIVITY)
    a, b, name = named[2]
    lo, hi = a + (b - a) // 3, a + 2 * (b - a) // 3
    cut = [(x, y) for x, y in steps if x < hi and y > lo and (x < lo or y > hi)]
    assert cut == [(a, b)]  # the shape: the window cuts the third step alone
    r = traceview.analyze(path, traceview.Options(window=f"{lo - first}ns:{hi - first}ns"))
    assert (r.window.start_ns, r.window.end_ns) == (a, b)
    assert r.window.description.endswith(f"widened to the whole steps it cut: {name}")
    launch_at = {e["args"]["correlation"]: ns(e["ts"]) for e in events
                 if e.get("cat") in API_CATS and "correlation" in e.get("args", {})}
    kernels = union([span(e) for e in events if e.get("cat") in WORK_CATS
                     and a <= launch_at.get(e["args"].get("correlation"), -1) < b])
    (call,) = r.calls.per_call
    assert (call.start_ns, call.end_ns) == (a, b)
    assert call.metrics["api_ns"] == b - a
    assert call.metrics["kernel_ns"] == length(kernels)
    work = union([span(e) for e in events if e.get("cat") in WORK_CATS])
    assert r.device.busy_ns == length(clip(work, a, b))
    assert r.steps is not None and [(s.start_ns, s.range_end_ns) for s in r.steps.steps] == [
        (a, b)]


# --- two call kinds, and a real warm call at over 2x its kind's median ----------------

TWO_OPS = FIXTURES / "shape_loop_two_ops.json.gz"


def raw_calls(path) -> list[tuple[int, int, str]]:
    """The calls, from the raw events: the outermost Python frames under the loop's
    ``<module>`` frame on the thread that launches, those that launch device work (a
    runtime call inside whose correlation names a kernel), as (start, end, frame name) in
    time order; a call's kind is its frame's name."""
    events = raw_events(path)
    launcher = next((e["pid"], e["tid"]) for e in events if e.get("cat") in API_CATS)
    frames = [e for e in events if e.get("cat") == "python_function"
              and (e["pid"], e["tid"]) == launcher]
    module = max((e for e in frames if e["name"].endswith(": <module>")),
                 key=lambda e: ns(e["dur"]))
    m0, m1 = span(module)
    inside = sorted(((*span(e), e["name"]) for e in frames if e is not module
                     and m0 <= ns(e["ts"]) and ns(e["ts"]) + ns(e["dur"]) <= m1),
                    key=lambda x: (x[0], -x[1]))
    top: list[tuple[int, int, str]] = []
    for s, t, name in inside:
        if not top or s >= top[-1][1]:
            top.append((s, t, name))
    work = {e["args"].get("correlation") for e in events if e.get("cat") in WORK_CATS}
    launches = [ns(e["ts"]) for e in events if e.get("cat") in API_CATS
                and (e["pid"], e["tid"]) == launcher
                and e.get("args", {}).get("correlation") in work]
    return [(s, t, name) for s, t, name in top if any(s <= x < t for x in launches)]


def warm_walls(r, calls) -> dict[str, list[tuple[int, int]]]:
    """(call index, wall) of each kind's calls that traceview did not judge cold; the walls
    are the raw frames' (the rows are matched to them by start and end)."""
    assert [(c.start_ns, c.end_ns) for c in r.calls.per_call] == [(s, t) for s, t, _ in calls]
    out: dict[str, list[tuple[int, int]]] = {}
    for c, (s, t, name) in zip(r.calls.per_call, calls, strict=True):
        assert c.kind == name
        if not c.cold:
            out.setdefault(name, []).append((c.index, t - s))
    return out


def test_a_real_two_kind_loop_s_typical_call_is_its_kinds_median_call(fixture_reports):
    """``shape_loop_two_ops`` (H200 capture): a loop of two ops per iteration, two call
    kinds. The typical call is a call of the kind holding the most time, at that kind's
    nearest-rank median wall, never the p50 of both kinds mixed."""
    calls = raw_calls(TWO_OPS)
    r = fixture_reports[TWO_OPS.name]
    warm = warm_walls(r, calls)
    assert len(warm) == 2  # the shape: two kinds
    dominant = max(warm, key=lambda k: sum(w for _, w in warm[k]))
    t = r.typical
    assert t is not None and t.kind == dominant
    assert t.api_ns == nearest_rank([w for _, w in warm[dominant]], 50)
    assert (t.start_ns, t.end_ns) in [(s, e) for s, e, n in calls if n == dominant]
    mixed = nearest_rank([w for v in warm.values() for _, w in v], 50)
    assert mixed != t.api_ns  # the shape: the p50 over both kinds is another call's


def test_a_real_warm_call_over_twice_its_kinds_median_stays_in_its_statistics(
        fixture_reports):
    """``shape_loop_two_ops``: a warm call over 2x the median of the others of its kind
    is named an outlier and stays in its kind's n, p90 and max, counted here from the raw
    frames; ``diff T T`` prints the same p50 as explain."""
    from traceview.multi.compare import diff_reports

    calls = raw_calls(TWO_OPS)
    r = fixture_reports[TWO_OPS.name]
    warm = warm_walls(r, calls)
    over = [(kind, i, w) for kind, v in warm.items() for i, w in v
            if w > 2 * nearest_rank([x for j, x in v if j != i], 50)]
    assert over  # the shape: a real warm call at over 2x the others of its kind
    for kind, i, _ in over:
        assert i in r.calls.outliers
        walls = [w for _, w in warm[kind]]
        st = next(k for k in r.calls.kinds if k.name == kind).stats["api_ns"]
        assert (st.n, st.p90, st.max) == (len(walls), nearest_rank(walls, 90), max(walls))
    d = diff_reports(r, r)
    comp = next(x for x in d.comparisons if x.metric == "calls.api_ns.p50")
    assert comp.before == comp.after == r.calls.stats["api_ns"].p50


# --- a step whose device work outlasts its range: the verdict and the path agree ------

# real traces whose steps' device work outlasts their ranges (counted in the test below)
STEP_TRACES = [
    "pytorch__kineto/resnet50_num_workers_0_pt18.json.gz",
    "pytorch__kineto/resnet50_num_workers_0_pt19.json.gz",
    "facebookresearch__HolisticTraceAnalysis/ns_resolution_rank-0.json.gz",
    "facebookresearch__HolisticTraceAnalysis/negative_queue_length_values_check__rank0.json.gz",
    "amd__HPCTrainingExamples/TraceLens__event_replay_wd__replay_trace.json.gz",
    "AMD-AGI__TraceLens/mi300_resnet_act_checkpoint.json.gz",
]


@pytest.mark.parametrize("name", STEP_TRACES)
def test_a_real_step_verdict_never_calls_a_host_path_hidden(name):
    """A device-bound verdict that says host work is hidden behind the device must stand
    beside a typical step whose critical path is mostly the device's; and a step whose
    device work outlasts its range ends where that work ends (counted here from the raw
    launches by correlation), so the path is walked back from the extent's end."""
    path = locate(name)
    if path is None:
        pytest.skip(f"public corpus trace {name} not present")
    events = raw_events(path)
    r = traceview.analyze(path)
    assert r.steps is not None and r.steps.steps
    launch_at = {e["args"]["correlation"]: ns(e["ts"]) for e in events
                 if e.get("cat") in API_CATS and "correlation" in e.get("args", {})}
    work = [(launch_at[e["args"]["correlation"]], ns(e["ts"]) + ns(e["dur"]))
            for e in events if e.get("cat") in WORK_CATS
            and e.get("args", {}).get("correlation") in launch_at]
    rows = r.steps.steps
    tails = 0
    for k, s in enumerate(rows):
        assert s.range_end_ns is not None
        last = max([t for lt, t in work if s.start_ns <= lt < s.range_end_ns],
                   default=s.range_end_ns)
        nxt = rows[k + 1].start_ns if k + 1 < len(rows) else last
        assert s.end_ns == max(s.range_end_ns, min(last, nxt))
        tails += s.end_ns > s.range_end_ns
        assert sum(p.ns for p in s.critical_path) == s.end_ns - s.start_ns
    assert tails  # the shape: device work outlasting a step's range
    v = r.verdict
    if v is not None and "host work is hidden behind device execution" in v.message:
        t = r.typical
        assert t is not None
        s = next(x for x in rows if x.start_ns == t.start_ns)
        on_host = sum(p.ns for p in s.critical_path if p.kind == "host")
        assert 2 * on_host < s.end_ns - s.start_ns, (s.name, on_host)


def test_a_real_busy_device_step_on_a_host_path_is_host_bound():
    """TraceLens' MI300X activation-checkpointing ResNet, the shape of DeepSeek's training
    step: the device is busy most of each step, its work runs on past the step's range,
    and the step's critical path is the host's. The verdict says host-bound with the
    host share of the path and that the host work is not hidden; the path's wall is the
    step's extent, counted here from the raw range and the work it launched."""
    from traceview.units import fmt_ns

    name = "AMD-AGI__TraceLens/mi300_resnet_act_checkpoint.json.gz"
    path = locate(name)
    if path is None:
        pytest.skip(f"public corpus trace {name} not present")
    events = raw_events(path)
    steps = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events
                   if e.get("cat") == "user_annotation"
                   and re.match(r"^ProfilerStep#\d+$", e["name"]))
    launch_at = {e["args"]["correlation"]: ns(e["ts"]) for e in events
                 if e.get("cat") in API_CATS and "correlation" in e.get("args", {})}
    work = [(launch_at[e["args"]["correlation"]], ns(e["ts"]) + ns(e["dur"]))
            for e in events if e.get("cat") in WORK_CATS
            and e.get("args", {}).get("correlation") in launch_at]
    busy = union([span(e) for e in events if e.get("cat") in WORK_CATS])
    r = traceview.analyze(path)
    assert r.steps is not None
    for k, ((a, b), row) in enumerate(zip(steps, r.steps.steps, strict=True)):
        last = max([t for lt, t in work if a <= lt < b], default=b)
        nxt = steps[k + 1][0] if k + 1 < len(steps) else last
        end = max(b, min(last, nxt))
        assert end > b  # the shape: device work running on past the range
        assert 2 * length(clip(busy, a, b)) > b - a  # the device busy most of the range
        assert (row.start_ns, row.end_ns) == (a, end)
        assert sum(p.ns for p in row.critical_path) == end - a
    v = r.verdict
    # the step's length is its path, mostly the host thread's: host-bound
    assert v is not None and v.id == "host-bound", v and v.message
    assert "device-bound" not in v.message
    t = r.typical
    assert t is not None
    (a, end) = next((s.start_ns, s.end_ns) for s in r.steps.steps if s.start_ns == t.start_ns)
    assert f"of the step's critical path ({fmt_ns(end - a)}) is host-thread time" in v.message
    assert v.message.endswith("its host work is not hidden behind the device")
    assert "host work is hidden behind device execution" not in v.message


# --- the same op traced with and without Python frames reads the same -----------------

@pytest.mark.parametrize("name", ["torch_mul_1x4096_f32.json.gz",
                                  "torch_mul_1x4096_f32_stack.json.gz"])
def test_a_real_op_with_or_without_stacks_reads_its_typical_calls_own_kernel(name):
    """The torch mul captured on the H200 with and without ``with_stack``: the verdict
    cites the typical call's own wall, idle share and device work, counted here from the
    raw events (the call its ``call_N`` range, its device work the union of the work its
    launches inside the range started, by correlation; the idle the call's wall less the
    union of all device work clipped to it). The kernel is never longer than the call,
    and both captures read host-bound: the op is a 1x4096 mul, under a microsecond on
    the device."""
    from traceview.units import fmt_ns, fmt_pct

    path = FIXTURES / name
    events = raw_events(path)
    calls = {int(e["name"].split("_")[-1]): span(e) for e in events
             if e.get("cat") == "user_annotation" and re.match(r"^call_\d+$", e["name"])}
    r = traceview.analyze(path)
    t = r.typical
    assert t is not None
    a, b = calls[t.index]
    assert (t.start_ns, t.end_ns) == (a, b)
    launched = {e["args"]["correlation"] for e in events if e.get("cat") in API_CATS
                and a <= ns(e["ts"]) < b and "correlation" in e.get("args", {})}
    mine = union([span(e) for e in events if e.get("cat") in WORK_CATS
                  and e.get("args", {}).get("correlation") in launched])
    busy = clip(union([span(e) for e in events if e.get("cat") in WORK_CATS]), a, b)
    assert 0 < length(mine) < b - a
    v = r.verdict
    assert v is not None and v.id == "host-bound"
    assert v.message.startswith(
        f"host-bound: the device is idle {fmt_pct((b - a - length(busy)) / (b - a))} of a "
        f"typical call ({fmt_ns(b - a)}); kernel {fmt_ns(length(mine))};")
    assert "longer than the call" not in v.message


# --- capture from an editable install: absolute frame paths are still the harness -----

EDITABLE = (FIXTURES.parent / "tests" / "data" / "capture_editable"
            / "torch_mul_cpu_editable_stack.json.gz")


def test_a_real_capture_from_an_editable_install_charges_its_harness_to_traceview():
    """``traceview capture --op mul --impl torch --shape 1x4096 --device cpu --iters 20
    --with-stack`` run from outside the checkout with traceview installed editable
    (``pip install -e``): its frames name the checkout's absolute paths
    (``/work/main/traceview/workload/impls.py(56): <lambda>``). They are traceview's
    modules, so the harness's own Python per call is the wrapper lambda's own time
    (its duration less the union of the events inside it on its thread), median over
    the warm calls after the first, counted here from the raw frames, never 0 ns."""
    from traceview.analyses.calltree import module_of
    from traceview.render.measured.capture import harness_python, owner_split

    events = raw_events(EDITABLE)
    lambdas = [e for e in events if e.get("cat") == "python_function"
               and re.match(r"^/\S+/traceview/workload/impls\.py\(\d+\): <lambda>$", e["name"])]
    assert len(lambdas) == 20  # the shape: one wrapper frame per call, an absolute path
    assert {module_of(e["name"]) for e in lambdas} == {"traceview.workload.impls"}
    own = []
    for lam in lambdas:
        lo, hi = span(lam)
        inside = [span(e) for e in events if e is not lam and e["tid"] == lam["tid"]
                  and lo <= ns(e["ts"]) and ns(e["ts"]) + ns(e["dur"]) <= hi]
        own.append(hi - lo - length(union(inside)))
    warm = sorted(own[1:])
    r = traceview.analyze(EDITABLE)
    assert harness_python(r) == warm[(len(warm) + 1) // 2 - 1] > 0
    assert dict(owner_split(r))["harness (traceview)"] >= harness_python(r)


CHECKOUT = EDITABLE.parent / "torch_mul_cpu_checkout_stack.json.gz"


def lambda_p50(path, report) -> int:
    """The wrapper lambda's wall per warm call, from the raw frames: the nearest-rank p50
    of the lambda frames' durations inside the calls traceview counts warm (``call_N``
    ranges, one lambda each)."""
    events = raw_events(path)
    calls = {int(e["name"].split("_")[-1]): span(e) for e in events
             if e.get("cat") == "user_annotation" and re.match(r"^call_\d+$", e["name"])}
    lambdas = [span(e) for e in events if e.get("cat") == "python_function"
               and re.search(r"traceview/workload/impls\.py\(\d+\): <lambda>$", e["name"])]
    walls = []
    for c in report.calls.per_call:
        if c.cold:
            continue
        a, b = calls[c.index]
        (lam,) = [x for x in lambdas if a <= x[0] and x[1] <= b]
        walls.append(lam[1] - lam[0])
    return nearest_rank(walls, 50)


def test_a_real_pair_from_a_checkout_and_an_editable_install_matches_its_functions():
    """The same CPU capture run twice: from the repository root (``PYTHONPATH=.``: frame
    paths relative, ``traceview/workload/impls.py``) and from an editable install
    (absolute, ``/work/main/traceview/workload/impls.py``). ``diff`` matches each
    function by module and name: the harness lambda is in both, "moved" or "same" with
    each side's own per-call figure (counted here from the raw frames), never "new" or
    "gone" with its full size."""
    from traceview.multi.compare import diff_reports

    for p in (CHECKOUT, EDITABLE):  # the shape: one relative path, one absolute
        names = {e["name"] for e in raw_events(p) if e["name"].endswith(": <lambda>")
                 and "workload/impls.py" in e["name"]}
        assert len(names) == 1 and next(iter(names)).startswith("/") == (p == EDITABLE)
    before, after = traceview.analyze(CHECKOUT), traceview.analyze(EDITABLE)
    d = diff_reports(before, after)
    rows = [r for r in d.code_path["functions"] if r["function"].endswith(": <lambda>")
            and r["family"] == "traceview.workload.impls"]
    assert len(rows) == 1
    (row,) = rows
    assert row["status"] in ("moved", "same")
    want_b, want_a = lambda_p50(CHECKOUT, before), lambda_p50(EDITABLE, after)
    assert (row["before_inclusive_ns_per_call"], row["after_inclusive_ns_per_call"]) == (
        want_b, want_a)
    assert row["change_inclusive_ns_per_call"] == want_a - want_b
