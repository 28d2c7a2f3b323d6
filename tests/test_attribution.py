"""Synthetic traces whose answers were worked out by hand (see each test's comments)."""

from __future__ import annotations

import pytest

import traceview
from tracebuilder import TraceBuilder


def triton_like_call(tb: TraceBuilder) -> None:
    tb.annotation("call_0", 0, 10_000)
    tb.py("user.py(1): f", 100, 8_900)
    tb.py("triton/runtime/jit.py(695): run", 1_000, 7_000)
    tb.py("<string>(2): dynamic_func", 1_200, 800)
    tb.py("<built-in function native_specialize_impl>", 1_300, 200)
    tb.py("triton/runtime/jit.py(563): compute_cache_key", 2_000, 500)
    tb.py("triton/compiler/compiler.py(479): launch_metadata", 3_000, 400)
    tb.py("triton/backends/nvidia/driver.py(700): __call__", 4_000, 3_000)
    tb.py("<built-in function launch>", 4_100, 2_800)
    tb.launched_kernel("mul_kernel", 4_200, 2_600, 6_000, 863)
    tb.sync(8_200, 700)


def test_every_ns_gets_the_deepest_category(tb, analyze_builder):
    triton_like_call(tb)
    ex = analyze_builder(tb)
    cats = {k: v for k, v in ex.host.categories.items() if v}
    # untraced: [0,100) + [9000,10000); user: [100,1000)+[8000,8200)+[8900,9000)
    assert cats == {"untraced": 1_100, "user": 1_200, "dispatch": 2_300, "specialize": 800,
                    "cache_key": 500, "launch_metadata": 400, "launch": 3_000, "sync": 700}
    assert ex.window.dur_ns == 10_000


def test_breakdown_cells_split_by_device_state(tb, analyze_builder):
    triton_like_call(tb)
    d = analyze_builder(tb).to_dict()
    cells = {(c["host"], c["device"]): c["ns"] for c in d["breakdown"]}
    # the kernel [6000,6863) runs entirely while the host is inside the launch call
    assert cells[("launch", "busy")] == 863 and cells[("launch", "idle")] == 2_137
    assert sum(v for (h, s), v in cells.items() if s == "busy") == d["device"]["busy_ns"] == 863
    assert sum(cells.values()) == d["window"]["dur_ns"]


def test_per_call_metrics(tb, analyze_builder):
    triton_like_call(tb)
    call = analyze_builder(tb, calls="^call_0$").calls.per_call[0]  # one range is no series
    assert call.metrics == {
        "api_ns": 10_000, "pre_launch_ns": 4_200, "launch_api_ns": 2_600,
        "launch_latency_ns": 1_800, "kernel_ns": 863, "kernel_only_ns": 863, "copy_ns": 0,
        "sync_ns": 700, "device_busy_ns": 863, "host_overhead_ns": 9_137,
    }


def test_streams_union_not_sum(tb, analyze_builder):
    tb.op("aten::work", 0, 3_000)
    tb.kernel("a", 0, 1_000, stream=7)
    tb.kernel("b", 500, 1_000, stream=8)
    tb.kernel("c", 2_000, 100, stream=7)
    tb.kernel("copy", 2_050, 150, stream=9, cat="gpu_memcpy")
    tb.kernel("label", 0, 3_000, stream=7, cat="gpu_user_annotation")
    d = analyze_builder(tb).to_dict()["device"]
    assert d["busy_ns"] == 1_700  # [0,1500) + [2000,2200)
    assert d["kernel_sum_ns"] == 2_100 and d["work_sum_ns"] == 2_250
    assert d["idle_ns"] == 1_300 and d["kernel_count"] == 3 and d["memcpy_count"] == 1


def test_launches_without_kernels_and_kernels_without_launches(tb, analyze_builder):
    tb.op("aten::mul", 0, 5_000)
    tb.launch(100, 1_000, api="cudaLaunchKernel")  # its kernel record was dropped
    tb.kernel("orphan", 2_000, 500, corr=999_999)
    ex = analyze_builder(tb)
    launches = ex.to_dict()["launches"]
    assert launches["count"] == 1 and launches["linked"] == 0
    assert launches["unlinked_device_work"] == 1
    assert ex.device.busy_ns == 500


def test_graph_launch_links_many_kernels(tb, analyze_builder):
    corr = tb.launch(0, 3_000, api="cudaGraphLaunch")
    for i in range(3):
        tb.kernel(f"k{i}", 4_000 + 1_000 * i, 700, corr=corr)
    d = analyze_builder(tb).to_dict()
    assert d["launches"]["by_api"] == {"cudaGraphLaunch": 1} and d["launches"]["linked"] == 1
    assert d["device"]["kernel_count"] == 3 and d["device"]["busy_ns"] == 2_100
    assert d["calls"]["source"] == "launches" and d["calls"]["per_call"][0]["metrics"]["kernel_ns"] == 2_100


def test_non_nested_overlap_still_one_owner(tb, tmp_path):
    tb.op("aten::a", 0, 100)
    tb.op("aten::b", 50, 100)  # overlaps a without nesting (profiler corruption)
    from traceview.report.explanation import analyze_trace

    ex = analyze_trace(traceview.load(tb.write(tmp_path / "t.json")))
    assert ex.window.dur_ns == 150 and ex.host_categories["dispatch"] == 150
    assert ex.timeline.non_nested == 1
    owners = [(int(s), int(e), ex.trace.names[ex.trace.slices.name[o]])
              for s, e, o in zip(ex.timeline.seg_start, ex.timeline.seg_end, ex.timeline.seg_owner, strict=True)]
    assert owners == [(0, 50, "aten::a"), (50, 150, "aten::b")]


def test_profiler_overhead_is_laid_over_the_thread(tb, analyze_builder):
    tb.op("aten::mul", 0, 3_000)
    tb.raw({"ph": "X", "cat": "overhead", "name": "Activity Buffer Request", "pid": -1, "tid": 0,
            "ts": 1.0, "dur": 1.0})
    cats = analyze_builder(tb).host.categories
    assert cats["profiler"] == 1_000 and cats["dispatch"] == 2_000


def test_sub_microsecond_kernels_keep_their_ns(tb, analyze_builder):
    tb.op("aten::mul", 0, 10_000)
    for i in range(5):
        tb.launched_kernel("k", 1_000 * i, 100, 1_000 * i + 400, 831 + i)
    d = analyze_builder(tb).to_dict()
    assert d["device"]["busy_ns"] == sum(831 + i for i in range(5))
    assert d["device"]["kernels"][0]["min"] == 831 and d["device"]["kernels"][0]["max"] == 835


def test_calls_from_numbered_annotations_first_is_not_cold_by_position(tb, analyze_builder):
    # call_0 is slower but holds no compile, import or profiler work: it stays warm
    for i in range(5):
        start = i * 10_000
        tb.annotation(f"call_{i}", start, 4_000 + (3_000 if i == 0 else 100 * i))
        tb.launched_kernel("k", start + 1_000, 500, start + 2_000, 800)
    tb.annotation("setup", 60_000, 100)
    ex = analyze_builder(tb)
    assert ex.calls.pattern == "call_#" and ex.calls.count == 5
    assert ex.calls.cold == () and ex.calls.warm_count == 5
    s = ex.calls.stats["api_ns"]
    durs = sorted([7_000, 4_100, 4_200, 4_300, 4_400])
    assert (s.min, s.p50, s.max, s.mean) == (durs[0], durs[2], durs[-1], round(sum(durs) / 5))


def test_window_narrowing(tb, analyze_builder):
    triton_like_call(tb)
    tb.op("aten::later", 20_000, 5_000)
    assert analyze_builder(tb).window.dur_ns == 25_000
    ex = analyze_builder(tb, window="call_0")
    assert (ex.window.start_ns, ex.window.end_ns) == (0, 10_000)
    ex = analyze_builder(tb, window="2us:4us")
    assert (ex.window.start_ns, ex.window.end_ns) == (2_000, 4_000)
    assert sum(ex.host.categories.values()) == 2_000


@pytest.mark.parametrize("window", ["nomatch", "9s:10s"])
def test_bad_window_is_a_usage_error(tb, analyze_builder, window):
    from traceview.errors import UsageError

    triton_like_call(tb)
    with pytest.raises(UsageError):
        analyze_builder(tb, window=window)


def test_user_rules_file_is_matched_first(tb, tmp_path):
    import json

    import traceview

    triton_like_call(tb)
    rules = tmp_path / "r.json"
    rules.write_text(json.dumps({
        "categories": {"mine": "my function"},
        "rules": [{"category": "mine", "cats": ["python_function"], "name": "^user\\.py"}],
    }))
    ex = traceview.analyze(tb.write(tmp_path / "t.json"), traceview.Options(rules=str(rules)))
    assert ex.host.categories["mine"] == 1_200 and ex.host.categories["user"] == 0


def test_triton_per_launch_arg_specialization_is_no_compile(tb, analyze_builder):
    # Triton's backends specialise each argument on every launch through their
    # compiler.py (AMD's get_arg_specialization checks a knob and the 2 GB range): that
    # is the launch's specialisation, not a compile, so no call of a warm loop is cold
    for i in range(3):
        base = 20_000 * i
        tb.annotation(f"call_{i}", base, 10_000)
        tb.py("user.py(1): f", base + 100, 8_900)
        tb.py("triton/runtime/jit.py(574): run", base + 1_000, 7_000)
        tb.py("triton/runtime/jit.py(325): specialize_impl", base + 1_200, 1_500)
        tb.py("triton/backends/amd/compiler.py(174): get_arg_specialization", base + 1_300, 1_000)
        tb.py("triton/backends/compiler.py(81): get_arg_specialization", base + 1_350, 300)
        tb.py("triton/knobs.py(89): get", base + 1_700, 400)
        tb.launched_kernel("k", base + 4_000, 2_000, base + 6_500, 1_000)
    r = analyze_builder(tb)
    cats = r.host.categories
    # specialize_impl's whole subtree, 1,500 ns a call, and nothing compiled
    assert cats["specialize"] == 3 * 1_500 and not cats.get("compile")
    assert r.calls.count == 3 and r.calls.cold == () and r.calls.warm_count == 3
    assert "cold-path" not in {f.id for f in r.findings}
    rules = traceview.rules.load_rules()
    for name in ("triton/backends/amd/compiler.py(174): get_arg_specialization",
                 "triton/backends/amd/compiler.py(436): get_tensor_specialization",
                 "triton/backends/amd/compiler.py(411): is_within_2gb",
                 "triton/backends/compiler.py(84): get_int_specialization"):
        assert rules.classify("python_function", name) == ("specialize", True), name
    # the backends' compile stages stay compile
    assert rules.classify("python_function", "triton/backends/amd/compiler.py(443): make_ttir") == (
        "compile", True)
    assert rules.classify("python_function", "triton/backends/nvidia/compiler.py(300): make_cubin") == (
        "compile", True)


def test_a_call_that_launched_nothing_says_so_in_its_verdict(tb, analyze_builder):
    # three calls of 5 us that launch nothing (the kernels come between them): the
    # verdict's device work is no figure, said in words, never "kernel -"
    for i in range(3):
        s = 20_000 * i
        tb.annotation("step_a", s, 5_000)
        tb.op("aten::empty", s + 100, 4_000)
        tb.launched_kernel("k", s + 6_000, 1_000, s + 8_000, 500)
    r = analyze_builder(tb, calls="^step_a$")
    assert r.calls.count == 3 and all(c.metrics["kernel_ns"] is None for c in r.calls.per_call)
    verdict = next(c.text for c in r.claims if c.id == "host-bound")
    # idle all of the 5 us call; dispatch: aten::empty's 4 us, untraced the rest
    assert verdict == ("host-bound: the device is idle 100% of a typical call (5 us); no device "
                       "work launched in it; host time goes to dispatch 4 us, untraced 1 us")
