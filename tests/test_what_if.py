"""What-if projections (``analyses.what_if``) from raw events: a built pointwise chain with
known launch spacing and kernel durations, each projection and its interval written out
here from the construction, never from the code's earlier output."""

from __future__ import annotations

import gzip
import json

import public_corpus
import pytest

import traceview
from tests.tracebuilder import TraceBuilder
from traceview.analyses.what_if import GraphCosts, costs_for, load_costs, project
from traceview.report import schema

US = 1000
COSTS = GraphCosts("test card", fixed_ns=8 * US, per_node_ns=2500, floor_ns=10 * US,
                   queued_fixed_ns=1 * US, queued_per_node_ns=1500, queued_floor_ns=5 * US)

N_OPS, SPACING, KERNEL, CALL = 6, 10 * US, 2 * US, 100 * US


def _chain(tb: TraceBuilder, calls: int = 5) -> None:
    """``calls`` calls of a six-launch pointwise chain: launch j at 5 us + j * 10 us,
    its kernel 2 us long; each call 100 us, ending in a synchronize."""
    for i in range(calls):
        t = i * 200 * US
        tb.annotation("call", t, CALL)
        for j in range(N_OPS):
            ls = t + 5 * US + j * SPACING
            tb.launched_kernel("void at::native::vectorized_elementwise_kernel<4>", ls,
                               4 * US, ls + 6 * US, KERNEL)
        tb.sync(t + 70 * US, 29 * US)


@pytest.fixture
def chain(tb, analysis_builder):
    _chain(tb)
    a = analysis_builder(tb, calls="call")
    call = a.calls.typical
    assert call is not None and call.api_ns == CALL
    return a, call


def _by(rows):
    return {p.scenario: p for p in rows}


def test_cuda_graph_projection_of_a_chain(chain):
    a, call = chain
    p = _by(project(a.trace, a.launches, call, COSTS))["cuda-graph"]
    # six nodes of 2 us under a 2.5 us per-node floor: fixed + 6 x 2.5 us
    assert p.projected_ns == 8 * US + N_OPS * 2500
    assert p.low_ns == 8 * US + max(N_OPS * KERNEL, N_OPS * 2500)
    assert p.high_ns == 8 * US + N_OPS * KERNEL + N_OPS * 2500
    assert p.measured_ns == CALL and p.basis["nodes"] == N_OPS
    assert p.basis["device_work_ns"] == N_OPS * KERNEL


def test_device_bound_limit_of_a_chain(chain):
    a, call = chain
    p = _by(project(a.trace, a.launches, call, COSTS))["no-host-overhead"]
    # six 2 us nodes over a 1.5 us per-node floor: 1 us + 12 us, above the 5 us floor
    assert p.projected_ns == 1 * US + N_OPS * max(KERNEL, 1500)
    assert (p.low_ns, p.high_ns) == (1 * US + N_OPS * KERNEL, 1 * US + N_OPS * (KERNEL + 1500))
    floor = GraphCosts("c", 8 * US, 2500, 10 * US, 1 * US, 1500, 50 * US)
    q = _by(project(a.trace, a.launches, call, floor))["no-host-overhead"]
    assert (q.projected_ns, q.low_ns, q.high_ns) == (50 * US, 50 * US, 50 * US)


def test_a_small_graph_costs_the_hosts_submit(tb, analysis_builder):
    tb.annotation("call", 0, 40 * US)
    tb.launched_kernel("vectorized_elementwise_kernel", 5 * US, 4 * US, 12 * US, 1 * US)
    tb.sync(15 * US, 20 * US)
    a = analysis_builder(tb, calls="call")
    costs = GraphCosts("c", 8 * US, 2500, 20 * US, 1 * US, 1500, 5 * US)
    p = _by(project(a.trace, a.launches, a.calls.calls[0], costs))["cuda-graph"]
    # 8 us + one 2.5 us node is under the 20 us floor of a one-node graph's replay
    assert (p.projected_ns, p.low_ns, p.high_ns) == (20 * US, 20 * US, 20 * US)
    assert p.basis["floor_ns"] == 20 * US


def test_fusing_the_pointwise_chain_removes_its_launches_and_their_gaps(chain):
    a, call = chain
    p = _by(project(a.trace, a.launches, call, COSTS))["fewer-launches"]
    assert p.basis["launches_removed"] == N_OPS - 1
    # five launches removed, each 10 us from its start to the next launch's
    assert p.basis["removed_host_ns"] == (N_OPS - 1) * SPACING
    assert p.projected_ns == CALL - (N_OPS - 1) * SPACING
    assert p.basis["device_floor_ns"] == KERNEL  # the chain's longest kernel
    assert p.low_ns <= p.projected_ns <= p.high_ns


def test_fusion_scales_to_the_unprofiled_call(chain):
    a, call = chain
    p = _by(project(a.trace, a.launches, call, COSTS, unprofiled_call_ns=50 * US))[
        "fewer-launches"]
    # the host part shrinks with the call: (100 - 50) us x 50/100
    assert p.projected_ns == (CALL - (N_OPS - 1) * SPACING) // 2
    assert p.measured_ns == 50 * US


def test_no_projection_for_an_incomplete_call(tb, analysis_builder):
    tb.annotation("call", 0, 50 * US)
    tb.launch(5 * US, 3 * US)  # no device record
    tb.launched_kernel("vectorized_elementwise_kernel", 15 * US, 3 * US, 20 * US, 2 * US)
    a = analysis_builder(tb, calls="call")
    assert project(a.trace, a.launches, a.calls.calls[0], COSTS) == []


def test_projections_are_in_the_report_and_its_json(tb, analyze_builder):
    _chain(tb)
    r = analyze_builder(tb, calls="call")
    d = json.loads(schema.to_json(r))
    scen = [w["scenario"] for w in d["what_if"]]
    graphs = ["cuda-graph", "no-host-overhead"] if load_costs() else []
    assert scen == [*graphs, "fewer-launches"]
    for w in d["what_if"]:
        assert w["low_ns"] <= w["projected_ns"] <= w["high_ns"] and w["basis"]
    assert schema.from_json(schema.to_json(r)) == r


def test_the_costs_table_names_its_card_date_and_script():
    """Every row was measured: its date and the script that measured it (an empty table
    means no card was measured, and no graph projection is made)."""
    for c in load_costs().values():
        assert c.date and c.source.startswith("tools/measure_what_if_counterfactuals")
        assert c.floor_ns > 0 and c.queued_floor_ns > 0 and c.per_node_ns > 0


@pytest.mark.parametrize("props, want, matched", [
    ([{"id": 0, "name": "NVIDIA H100 80GB HBM3"}], "NVIDIA H100 80GB HBM3", True),
    ([{"id": 0, "name": "NVIDIA H200"}], "NVIDIA H200", True),
    ([{"id": 0}], "NVIDIA H200", False),  # no name: the first card, said not to match
    ([{"id": 0, "name": ""}], "NVIDIA H200", False),
    ([{"id": 0, "name": "AMD Instinct MI300X"}], "NVIDIA H200", False),
])
def test_the_trace_s_card_picks_its_row_and_a_nameless_device_none(tmp_path, props, want,
                                                                    matched):
    table = {"NVIDIA H200": COSTS, "NVIDIA H100 80GB HBM3": GraphCosts(
        "NVIDIA H100 80GB HBM3", 1, 2, 3, 4, 5, 6)}
    tb = TraceBuilder()
    tb.metadata["deviceProperties"] = props
    tb.launched_kernel("void at::native::vectorized_elementwise_kernel<4>", 0, 4 * US,
                       6 * US, KERNEL)
    trace = traceview.load(tb.write(tmp_path / "t.json"))
    assert costs_for(trace, table) == (table[want], matched)


def test_a_real_trace_whose_devices_have_no_name_is_not_said_to_be_the_table_s_card():
    """TraceLens' vLLM decode trace (an AMD card: warps of 64, 304 compute units) names
    none of its devices (``"name": ""``, counted from the file here): its graph
    projections use the table's first card and say it is not the trace's."""
    name = "AMD-AGI__TraceLens/inference__vllm_decode_full__graph_execution.json.gz"
    path = public_corpus.locate(name)
    if path is None:
        pytest.skip(f"{name} is not in this machine's corpus copy")
    with gzip.open(path) as f:
        props = json.load(f)["deviceProperties"]
    assert props and all(p.get("name") == "" for p in props)
    rows = traceview.analyze(path).what_if
    graphs = [w for w in rows if w.scenario in ("cuda-graph", "no-host-overhead")]
    assert graphs
    first = next(iter(load_costs()))
    assert all(w.basis["card"] == first and w.basis["card_matched"] == 0 for w in graphs)


def _backlog(tb: TraceBuilder) -> None:
    """A call that waits behind device work an earlier launch queued: ``prev`` (0-10 us)
    launches an 80 us kernel (10-90 us on stream 7); ``call`` (20-100 us) launches a 2 us
    kernel that queues behind it (90-92 us) and synchronizes (30-99 us). Stream 9 runs
    30 us of work nobody launched inside the call: another stream, not in the way."""
    tb.annotation("prev", 0, 10 * US)
    tb.launched_kernel("void big_kernel<1>", 2 * US, 4 * US, 10 * US, 80 * US)
    tb.annotation("call", 20 * US, 80 * US)
    tb.launched_kernel("void at::native::vectorized_elementwise_kernel<4>", 25 * US, 4 * US,
                       90 * US, KERNEL)
    tb.sync(30 * US, 69 * US)
    tb.kernel("void other_stream<1>", 40 * US, 30 * US, stream=9)


def test_a_call_waiting_behind_earlier_device_work_keeps_that_backlog(tb, analysis_builder):
    """Inside the call (20-100 us) stream 7 runs the earlier launch's kernel from 20 to
    90 us: 70 us the call's own kernel queues behind however little host time it spends.
    Without it the models promised 5 us against the call's 80 us (a 16x speed-up of a call
    that is a wait for the device)."""
    _backlog(tb)
    a = analysis_builder(tb, calls="^call$")
    call = a.calls.typical
    assert call is not None and call.api_ns == 80 * US
    by = _by(project(a.trace, a.launches, call, COSTS))
    backlog = 90 * US - 20 * US
    queued = by["no-host-overhead"]
    assert queued.basis["foreign_device_ns"] == backlog
    # one 2 us node: queued fixed 1 us + max(2 us, 1.5 us), under the 5 us floor
    assert queued.projected_ns == 5 * US + backlog
    assert (queued.low_ns, queued.high_ns) == (5 * US + backlog, 5 * US + backlog)
    graph = by["cuda-graph"]
    # fixed 8 us + max(2 us, 2.5 us) = 10.5 us, at the 10 us floor's height or above
    assert graph.projected_ns == 8 * US + 2500 + backlog
    assert graph.basis["foreign_device_ns"] == backlog


def test_the_backlog_is_said_beside_the_projection(tb, analyze_builder):
    from traceview.report.integrity_claims import what_if_lines

    _backlog(tb)
    lines = what_if_lines(analyze_builder(tb, calls="^call$"))
    assert lines and all("behind 70 us of device work the call did not launch" in t
                         for t in lines if "graph" in t or "host overhead" in t)


def test_a_call_with_no_backlog_has_none(chain):
    a, call = chain
    assert all("foreign_device_ns" not in p.basis
               for p in project(a.trace, a.launches, call, COSTS))


def _ns(x) -> int:
    from decimal import Decimal
    return int((Decimal(str(x)) * 1000).to_integral_value())


def test_xdit_postprocess_waits_behind_the_denoising_loop_s_device_work():
    """TraceLens' xDiT Flux trace (iteration 0): the typical call, diffusers'
    ``postprocess``, spends 85 ms in a blocking copy while the device finishes the
    denoising steps' graph replays launched before it. Counted here from the raw events:
    the device work on the call's streams inside it that its own launches did not queue.
    The projections keep it, so neither promises the 1000-fold speed-up the call's 50 us
    of own device work would."""
    from decimal import Decimal

    name = ("AMD-AGI__TraceLens/inference__xdit_flux.1__split_traces__profile_trace_rank_0_"
            "annotation_iteration_0_execute_diffusion_1_256x256.json.gz")
    path = public_corpus.locate(name)
    if path is None:
        pytest.skip(f"{name} is not in this machine's corpus copy")
    with gzip.open(path) as f:
        events = json.load(f, parse_float=Decimal)["traceEvents"]
    xs = [e for e in events if e.get("ph") == "X"]
    frame = [e for e in xs if e.get("cat") == "python_function"
             and e["name"].endswith("image_processor.py(738): postprocess")]
    assert len(frame) == 1
    lo = _ns(frame[0]["ts"])
    hi = lo + _ns(frame[0]["dur"])
    mine = {e["args"]["correlation"] for e in xs
            if e.get("cat") in ("cuda_runtime", "cuda_driver") and e["tid"] == frame[0]["tid"]
            and lo <= _ns(e["ts"]) < hi and "correlation" in e.get("args", {})}
    work = [e for e in xs if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    own = [e for e in work if e["args"].get("correlation") in mine]
    streams = {e["args"]["stream"] for e in own}
    busy, own_iv = [], [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in own]
    for e in work:
        if e in own or e["args"].get("stream") not in streams:
            continue
        s, t = max(_ns(e["ts"]), lo), min(_ns(e["ts"]) + _ns(e["dur"]), hi)
        if s < t:
            busy.append((s, t))
    # the union of the backlog pieces, less the call's own work, ns by ns of each piece
    merged: list[list[int]] = []
    for s, t in sorted(busy):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], t)
        else:
            merged.append([s, t])
    foreign = 0
    for s, t in merged:
        cuts = sorted((max(a, s), min(b, t)) for a, b in own_iv if a < t and b > s)
        covered, cur = 0, s
        for a, b in cuts:
            covered += max(0, b - max(a, cur))
            cur = max(cur, b)
        foreign += t - s - covered
    assert foreign > 80_000_000  # more than 80 ms of the call's 89.5 ms
    r = traceview.analyze(path)
    assert r.typical_call is not None and r.typical_call.index == r.what_if[0].call
    graphs = [w for w in r.what_if if w.scenario in ("cuda-graph", "no-host-overhead")]
    assert len(graphs) == 2
    for w in graphs:
        assert w.basis["foreign_device_ns"] == foreign
        assert w.low_ns >= foreign and w.projected_ns >= foreign
        assert w.measured_ns == hi - lo


def test_fusing_a_chain_behind_a_backlog_keeps_the_backlog_under_its_floor(tb,
                                                                           analysis_builder):
    """``prev`` queues an 80 us kernel (10-90 us); ``call`` (20-100 us) launches three 2 us
    elementwise kernels 10 us apart (at 25, 35, 45 us; run 90-96 us) and synchronizes.
    Fusing removes 20 us of launch spacing from the 80 us call, but its kernels still
    wait 70 us (20-90 us) behind the earlier kernel: floor 2 us + 70 us, not 60 us."""
    tb.annotation("prev", 0, 10 * US)
    tb.launched_kernel("void big_kernel<1>", 2 * US, 4 * US, 10 * US, 80 * US)
    tb.annotation("call", 20 * US, 80 * US)
    for j in range(3):
        tb.launched_kernel("void at::native::vectorized_elementwise_kernel<4>",
                           25 * US + j * 10 * US, 4 * US, 90 * US + j * KERNEL, KERNEL)
    tb.sync(50 * US, 49 * US)
    a = analysis_builder(tb, calls="^call$")
    call = a.calls.typical
    assert call is not None and call.api_ns == 80 * US
    fused = _by(project(a.trace, a.launches, call, COSTS))["fewer-launches"]
    assert fused.basis["removed_host_ns"] == 20 * US
    assert fused.basis["foreign_device_ns"] == 70 * US
    assert fused.basis["device_floor_ns"] == KERNEL + 70 * US
    assert fused.projected_ns == KERNEL + 70 * US


def test_particle_transformer_device_bound_call_is_promised_no_gain():
    """The Particle Transformer fork's GPU trace: the typical call (an ``aten::mul``, 226 us)
    runs while the device works through 34 ms of earlier calls' kernels (the device is
    busy 99% of it). No model may promise it a speed-up: each keeps that backlog, and
    the backlog is at least the device busy time inside the call less its own work."""
    name = "harryjmoss__particle_transformer/gpu_working_chrome_trace.json.gz"
    path = public_corpus.locate(name)
    if path is None:
        pytest.skip(f"{name} is not in this machine's corpus copy")
    r = traceview.analyze(path)
    assert r.what_if and {w.scenario for w in r.what_if} == {
        "cuda-graph", "no-host-overhead", "fewer-launches"}
    for w in r.what_if:
        assert w.basis["foreign_device_ns"] > 0
        assert w.projected_ns >= w.measured_ns
