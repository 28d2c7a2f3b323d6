"""Which spans are calls, which calls are cold, and the per-warm-call figures: one
synthetic trace per rule (traceview.analyses.callfind, calls, calltree). Every expected
figure is arithmetic on the numbers the test wrote into the trace."""

from __future__ import annotations

import pytest

from traceview.analyses.calltree import module_of
from traceview.errors import UsageError
from traceview.report.build import build_report
from traceview.report.sentences import calls_claim, cause_claim
from traceview.stats import percentile


def p50(values):
    return percentile(sorted(values), 50)


def loop_call(tb, start, *, name="call", i=None, dur=4_000, launch_at=1_000, kernel=800):
    """One call range (if name) with one launch and its kernel."""
    if name is not None:
        tb.annotation(f"{name}_{i}", start, dur)
    tb.launched_kernel("k", start + launch_at, 500, start + launch_at + 1_000, kernel)


# ------------------------------------------------------------------ user range series


def test_user_series_beats_constant_hash_framework_ranges(tb, analysis_builder):
    # the trace: call_N around Inductor's '## Call CompiledFxGraph <hash> ##'
    durs = [9_000 + 100 * i for i in range(6)]
    for i, d in enumerate(durs):
        s = i * 20_000
        tb.annotation(f"call_{i}", s, d)
        tb.annotation("## Call CompiledFxGraph f3abc12de9 ##", s + 500, 3_000)
        tb.launched_kernel("k", s + 1_000, 500, s + 2_000, 800)
    ex = analysis_builder(tb)
    c = ex.calls
    assert (c.source, c.pattern, len(c.calls)) == ("annotations", "call_#", 6)
    assert c.stats["api_ns"].p50 == p50(durs)
    assert calls_claim(c).text.startswith("6 calls: call_#, found from numbered record_function")
    assert "(override: --calls)" in calls_claim(c).text


def test_constant_hash_alone_is_not_numbering(tb, analysis_builder):
    # a user range with a constant hash: one distinct name, so no series; calls come
    # from the outermost host event around each launch
    for i in range(4):
        s = i * 20_000
        tb.annotation("graph_7f3a9", s, 5_000)
        tb.op("aten::mul", s + 500, 2_000)
        tb.launched_kernel("k", s + 1_000, 500, s + 2_000, 800)
    c = analysis_builder(tb).calls
    assert c.source == "launches" and len(c.calls) == 4
    assert c.stats["api_ns"].p50 == 2_000
    assert "outermost host event around each launch" in calls_claim(c).text


def test_numbers_labelling_parts_of_every_step_are_no_call_series(tb, analysis_builder):
    """A model's two norms, ``Add & Norm 1`` and ``Add & Norm 2``, in every profiler step
    (a profiling tutorial's forward pass): the numbers label parts, so the steps are the
    calls, in the whole trace and in a window of one step alike."""
    for n in range(3):
        s = n * 20_000
        tb.annotation(f"ProfilerStep#{n + 1}", s, 15_000)
        for k in (1, 2):
            a = s + k * 5_000
            tb.annotation(f"Add & Norm {k}", a, 3_000)
            tb.launched_kernel("layer_norm", a + 500, 500, a + 1_200, 800)
    whole = analysis_builder(tb).calls
    assert (whole.source, len(whole.calls)) == ("profiler_steps", 3)
    assert [(c.start_ns, c.end_ns) for c in whole.calls] == [
        (n * 20_000, n * 20_000 + 15_000) for n in range(3)]
    one = analysis_builder(tb, window="^ProfilerStep#2$").calls
    assert (one.source, [(c.start_ns, c.end_ns) for c in one.calls]) == (
        "profiler_steps", [(20_000, 35_000)])


def test_numbered_calls_inside_steps_stay_a_series(tb, analysis_builder):
    """The converse: numbers that count (``call_0`` .. ``call_5``, other names in each
    step) are the calls, two per step."""
    for n in range(3):
        s = n * 20_000
        tb.annotation(f"ProfilerStep#{n + 1}", s, 15_000)
        for k in (0, 1):
            i = 2 * n + k
            tb.annotation(f"call_{i}", s + 1_000 + k * 6_000, 5_000)
            tb.launched_kernel("k", s + 1_500 + k * 6_000, 500, s + 2_200 + k * 6_000, 800)
    c = analysis_builder(tb).calls
    assert (c.source, c.pattern, len(c.calls)) == ("annotations", "call_#", 6)


def test_series_without_launches_is_not_calls(tb, analysis_builder):
    # compiler-pass-like user ranges with numbers but no launch; then real calls
    for i in range(3):
        tb.annotation(f"pass_pattern_{i}", i * 1_000, 500)
    for i in range(4):
        loop_call(tb, 10_000 + i * 10_000, name="step", i=i, dur=3_000 + 10 * i)
    c = analysis_builder(tb).calls
    assert (c.pattern, len(c.calls)) == ("step_#", 4)


def test_compiler_pass_ranges_are_framework(tb, analysis_builder):
    # 'pass...: compile_id=N/N' ranges contain launches (autotuning) but are never calls
    for i in range(3):
        s = i * 10_000
        tb.annotation(f"pass.post_grad_passes.pass_pattern_{i}_data: compile_id=0/0", s, 4_000)
        tb.op("aten::mm", s + 100, 3_000)
        tb.launched_kernel("k", s + 1_000, 500, s + 2_000, 800)
    c = analysis_builder(tb).calls
    assert c.source == "launches"


def test_nested_series_the_outermost_with_launches_wins(tb, analysis_builder):
    # iter_i holds op_0, op_1 (each with a launch): the calls are the iterations
    iters = []
    for i in range(3):
        s = i * 30_000
        iters.append(20_000 + 10 * i)
        tb.annotation(f"iter_{i}", s, iters[-1])
        for j in range(2):
            loop_call(tb, s + 1_000 + j * 8_000, name="op", i=j, dur=6_000)
    c = analysis_builder(tb).calls
    assert (c.pattern, len(c.calls)) == ("iter_#", 3)
    assert c.stats["api_ns"].p50 == p50(iters)
    assert c.stats["launch_api_ns"].p50 == 2 * 500


def source_line_loop(tb, iters, *, start=0, backward=False):
    """An SDK's ranges named by the source lines they wrap (``train.py:10-10``, the
    forward, 3,000 ns; ``train.py:12-12``, the backward, 7,000 ns), once per iteration
    each, one launch in each; with ``backward`` the second holds an autograd op."""
    for i in range(iters):
        s = start + i * 20_000
        tb.annotation("train.py:10-10", s, 3_000)
        tb.launched_kernel("fwd", s + 1_000, 500, s + 1_600, 800)
        tb.annotation("train.py:12-12", s + 5_000, 7_000)
        if backward:
            tb.op("autograd::engine::evaluate_function: MulBackward0", s + 5_500, 4_000)
        tb.launched_kernel("bwd", s + 6_000, 500, s + 6_600, 800)


def test_source_line_ranges_that_repeat_are_kinds_not_a_series(tb, analysis_builder):
    """Names that differ only in digits are one series only where the digits count:
    ``train.py:10-10`` and ``train.py:12-12`` four times each are two pieces of code, not
    eight calls of one. By default they are no series; chosen by ``--calls`` they are
    two kinds, each with its own median (3,000 and 7,000 ns, as written), and no
    backward range is an outlier against forward ones."""
    source_line_loop(tb, 4)
    c = analysis_builder(tb).calls
    assert c.source != "annotations"
    c = analysis_builder(tb, calls=r"^train\.py:").calls
    assert [(k.name, k.count, k.stats["api_ns"].p50) for k in c.kinds] == [
        ("train.py:10-10", 4, 3_000), ("train.py:12-12", 4, 7_000)]
    assert c.outlier_indices == []
    assert calls_claim(c).text.startswith(
        "8 calls of 2 kinds: train.py:10-10 (4), train.py:12-12 (4), chosen by --calls")


def test_source_line_ranges_once_each_in_a_window_are_still_no_series(tb, analysis_builder):
    """A window holding each name once reads the names as the whole trace does: the
    repeats are counted over the trace, so one iteration is not a series of two calls."""
    source_line_loop(tb, 4)
    c = analysis_builder(tb, window="20000ns:40000ns").calls
    assert c.source != "annotations"


def test_counted_series_whose_names_each_occur_once_stay_one_kind(tb, analysis_builder):
    """The converse: ``call_0`` .. ``call_5`` each once is a counter, one kind ``call_#``
    by default and by ``--calls`` alike, p50 of the six walls written."""
    durs = [4_000 + 100 * i for i in range(6)]
    for i, d in enumerate(durs):
        loop_call(tb, i * 20_000, i=i, dur=d)
    for opts in ({}, {"calls": "^call_"}):
        c = analysis_builder(tb, **opts).calls
        assert [(k.name, k.count, k.stats["api_ns"].p50) for k in c.kinds] == [
            ("call_#", 6, p50(durs))]


def test_training_step_holding_source_line_ranges_is_the_call(tb, analysis_builder):
    """One ``ProfilerStep#2`` training step (its backward ranges hold autograd ops)
    holding four iterations of source-line ranges, as an SDK's basic example profiles:
    the ranges are no series, so the step is the call, with its wall as written, as in
    every other training trace."""
    tb.annotation("ProfilerStep#2", 0, 90_000)
    source_line_loop(tb, 4, start=1_000, backward=True)
    c = analysis_builder(tb).calls
    assert (c.source, [(x.start_ns, x.end_ns) for x in c.calls]) == (
        "profiler_steps", [(0, 90_000)])


# ------------------------------------------------------------------ Python frames


def frame_loop(tb, n, *, sync=True, two=False, start=0, period=10_000):
    """for i in range(n): f(); [g();] [torch.cuda.synchronize()] under <module>."""
    tb.py("script.py(1): <module>", start, n * period + 1_000)
    f_d, g_d, s_d = [], [], []
    for i in range(n):
        s = start + 500 + i * period
        f_d.append(3_000 + 10 * i)
        tb.py("script.py(10): f", s, f_d[-1])
        tb.py("<built-in function launch>", s + 1_000, 1_000)
        tb.launched_kernel("kf", s + 1_100, 500, s + 2_000, 700)
        t = s + f_d[-1]
        if two:
            g_d.append(2_000 + 20 * i)
            tb.py("<built-in method mul of type object at 0x1>", t + 100, g_d[-1])
            tb.op("aten::mul", t + 200, g_d[-1] - 200)
            tb.launched_kernel("kg", t + 300, 400, t + 1_000, 300, )
            t += 100 + g_d[-1]
        if sync:
            s_d.append(t + 200 + 1_500 - s)  # call start to sync end
            tb.py("torch/cuda/__init__.py(1152): synchronize", t + 200, 1_500)
            tb.sync(t + 300, 1_300)
    return f_d, g_d, s_d


def test_frames_below_the_enclosing_frame_are_calls_with_their_sync(tb, analysis_builder):
    f_d, _, s_d = frame_loop(tb, 5)
    c = analysis_builder(tb).calls
    assert (c.source, len(c.calls)) == ("python_frames", 5)
    assert calls_claim(c).text == ("5 calls: script.py(10): f, found from Python frames "
                                   "(override: --calls)")
    assert [x.api_sync_ns for x in c.calls] == s_d
    assert c.stats["api_ns"].p50 == p50(f_d)
    assert c.api_sync.p50 == p50(s_d)
    assert c.cold_indices == []


def test_two_ops_per_iteration_are_two_kinds(tb, analysis_builder):
    f_d, g_d, _ = frame_loop(tb, 4, sync=False, two=True)
    c = analysis_builder(tb).calls
    assert len(c.calls) == 8 and [k.name for k in c.kinds] == [
        "script.py(10): f", "<built-in method mul of type object at 0x1>"]
    f, g = c.kinds
    assert (f.count, f.stats["api_ns"].p50) == (4, p50(f_d))
    assert (g.count, g.stats["api_ns"].p50) == (4, p50(g_d))
    assert c.stats["api_ns"].p50 == p50(f_d + g_d)  # the combined row
    assert calls_claim(c).text.startswith("8 calls of 2 kinds: script.py(10): f (4), <built-in")


def test_ranges_win_over_frames(tb, analysis_builder):
    frame_loop(tb, 3)
    for i in range(3):
        tb.annotation(f"call_{i}", 500 + i * 10_000, 2_500)
    c = analysis_builder(tb).calls
    assert c.pattern == "call_#"


def test_calls_option_takes_a_function_an_op_or_a_range(tb, analysis_builder):
    f_d, g_d, _ = frame_loop(tb, 3, sync=False, two=True)
    c = analysis_builder(tb, calls=r"\): f$").calls
    assert (c.source, len(c.calls), c.stats["api_ns"].p50) == ("option", 3, p50(f_d))
    said = calls_claim(c).text  # the calls' description, as the report words it
    assert "chosen by --calls" in said and "override" not in said
    c = analysis_builder(tb, calls="^aten::mul$").calls
    assert (len(c.calls), c.stats["api_ns"].p50) == (3, p50([d - 200 for d in g_d]))
    with pytest.raises(UsageError):
        analysis_builder(tb, calls="^nothing$")


def test_calls_option_tells_frames_of_different_def_lines_apart(tb, analysis_builder):
    """A frame's number is its ``def`` line: ``vae.py(73): forward`` (the model, holding
    the encoder's ``(36)`` and the decoder's ``(59)``) and a stand-alone ``vae.py(59):
    forward`` are two functions. ``--calls forward`` takes the outermost matches, the
    model's two (30,000 and 32,000 ns) and the decoder's one (5,000 ns): two kinds, the
    model's p50 the lower median of its two, and the header names both."""
    tb.py("vae.py(1): <module>", 0, 100_000)
    for s, d in ((1_000, 30_000), (40_000, 32_000)):
        tb.py("vae.py(73): forward", s, d)
        tb.py("vae.py(36): forward", s + 1_000, 8_000)
        tb.launched_kernel("enc", s + 2_000, 500, s + 3_000, 800)
        tb.py("vae.py(59): forward", s + 11_000, 8_000)
        tb.launched_kernel("dec", s + 12_000, 500, s + 13_000, 800)
    tb.py("vae.py(59): forward", 80_000, 5_000)
    tb.launched_kernel("dec", 81_000, 500, 82_000, 800)
    c = analysis_builder(tb, calls="forward").calls
    assert [(k.name, k.count, k.stats["api_ns"].p50) for k in c.kinds] == [
        ("vae.py(73): forward", 2, 30_000), ("vae.py(59): forward", 1, 5_000)]
    assert calls_claim(c).text.startswith(
        "3 calls of 2 kinds: vae.py(73): forward (2), vae.py(59): forward (1), chosen by --calls")


def test_calls_option_tells_host_ops_of_different_names_apart(tb, analysis_builder):
    """An op's digits are part of its name: ``aten::conv1d`` (2,000 ns) and
    ``aten::conv2d`` (6,000 ns), twice each, are two kinds under ``--calls conv``."""
    for i in range(2):
        s = i * 20_000
        tb.op("aten::conv1d", s, 2_000)
        tb.launched_kernel("c1", s + 500, 500, s + 1_500, 800)
        tb.op("aten::conv2d", s + 5_000, 6_000)
        tb.launched_kernel("c2", s + 5_500, 500, s + 6_500, 800)
    c = analysis_builder(tb, calls="conv").calls
    assert [(k.name, k.count, k.stats["api_ns"].p50) for k in c.kinds] == [
        ("aten::conv1d", 2, 2_000), ("aten::conv2d", 2, 6_000)]


def test_calls_depth_goes_one_level_down(tb, analysis_builder):
    frame_loop(tb, 3, sync=False)
    c = analysis_builder(tb, calls_depth=2).calls
    assert {x.name for x in c.calls} == {"<built-in function launch>"} and len(c.calls) == 3
    assert c.stats["api_ns"].p50 == 1_000


def test_profiler_steps_only_when_nothing_finer_repeats(tb, analysis_builder):
    # one f per step: the steps are the calls
    frame_loop(tb, 3, sync=False)
    for i in range(3):
        tb.annotation(f"ProfilerStep#{i + 1}", i * 10_000, 10_000)
    c = analysis_builder(tb).calls
    assert (c.source, len(c.calls)) == ("profiler_steps", 3)


def test_frames_win_over_profiler_steps_when_calls_repeat_inside(tb, analysis_builder):
    frame_loop(tb, 4, sync=False)
    for i in range(2):
        tb.annotation(f"ProfilerStep#{i}", i * 20_000, 20_000)
    c = analysis_builder(tb).calls
    assert (c.source, len(c.calls)) == ("python_frames", 4)


# ------------------------------------------------------------------ cold and warm


def test_window_of_later_calls_has_no_cold_first_call(tb, analysis_builder):
    for i in range(8):
        loop_call(tb, i * 10_000, i=i, dur=4_000 + 10 * i)
    c = analysis_builder(tb, window=r"call_(5|6|7)$").calls
    assert [x.name for x in c.calls] == ["call_5", "call_6", "call_7"]
    assert c.cold_indices == [] and c.warm_count == 3


def _cold_words(c, i: int) -> str:
    """Why the analysis's call ``i`` is cold, as the report words it."""
    return cause_claim(c.cold_causes[i], i, "cold-reason").text


def test_compile_work_makes_a_call_cold_and_says_why(tb, analysis_builder):
    for i in range(4):
        loop_call(tb, i * 10_000, i=i, dur=5_000)
    tb.py("triton/compiler/compiler.py(300): compile", 100, 700)
    c = analysis_builder(tb).calls
    assert c.cold_indices == [0] and c.warm_count == 3
    assert _cold_words(c, 0) == "compile/autotune/module-load work 700 ns"


def test_compiler_ranges_inside_a_call_make_it_cold(tb, analysis_builder):
    for i in range(3):
        loop_call(tb, i * 10_000, i=i)
    tb.annotation("inductor_compile_data: compile_id=0/0", 50, 300)
    c = analysis_builder(tb).calls
    assert c.cold_indices == [0]
    assert "1 Dynamo/Inductor compile range(s)" in _cold_words(c, 0)


def test_compiled_function_is_a_runtime_wrapper_not_compile(tb, analysis_builder):
    for i in range(3):
        s = i * 10_000
        tb.annotation(f"call_{i}", s, 5_000)
        tb.op("CompiledFunction", s + 100, 4_000)
        tb.op("Torch-Compiled Region: 0/0", s + 200, 3_000)
        tb.launched_kernel("triton_poi_fused_gelu_0", s + 1_000, 500, s + 2_000, 800)
    ex = analysis_builder(tb)
    assert ex.host_categories.get("compile", 0) == 0
    assert ex.calls.cold_indices == [] and ex.calls.warm_count == 3


def test_capture_cold_twin_is_cold_because_capture_says_so(tb, analysis_builder):
    tb.metadata["traceview"] = {"kind": "cold", "protocol": {"call_range": "call_{i}",
                                                             "cold_range": "cold_call_0"}}
    loop_call(tb, 0, name="cold_call", i=0, dur=6_000)
    c = analysis_builder(tb).calls
    assert (c.source, len(c.calls), c.cold_indices) == ("capture", 1, [0])
    assert _cold_words(c, 0) == "recorded cold by traceview capture"


def test_first_call_slowed_by_profiler_buffers_is_an_outlier(tb, analysis_builder):
    durs = [20_000, 4_000, 4_100, 4_200, 4_300]
    for i, d in enumerate(durs):
        loop_call(tb, i * 30_000, i=i, dur=d)
    tb.op("Buffer Request", 2_000, 15_000, cat="overhead")  # CUPTI buffer set-up in call_0
    c = analysis_builder(tb).calls
    assert c.cold_indices == [] and c.outlier_indices == [0]
    assert "profiler work 15 us inside" in cause_claim(c.outlier_causes[0], 0, "outlier-reason").text
    # named, never dropped: the outlier is a warm call, in the p50 and the max
    assert c.warm_count == 5 and c.stats["api_ns"].p50 == p50(durs)
    assert c.stats["api_ns"].max == max(durs)


# ------------------------------------------------------------------ per warm call


def test_one_off_function_is_flagged_not_averaged(tb, analysis_builder):
    for i in range(5):
        s = i * 10_000
        tb.annotation(f"call_{i}", s, 5_000)
        tb.py("user.py(3): op", s + 100, 4_000)
        tb.launched_kernel("k", s + 1_000, 500, s + 2_000, 800)
    tb.py("user.py(9): once", 30_000 + 2_000, 1_200)  # inside call_3's op, after the launch
    ex = analysis_builder(tb)
    once = ex.per_call.functions["user.py(9): once"]
    assert (once.calls_with, once.inclusive_ns, once.self_ns, once.few_calls) == (1, 1_200, 1_200,
                                                                                 True)
    op = ex.per_call.functions["user.py(3): op"]
    # op's self: its 4000 minus the launch's 500, and in call_3 also minus 1200
    assert (op.calls_with, op.inclusive_ns, op.self_ns) == (5, 4_000, 3_500)
    row = next(f for f in build_report(ex).to_dict()["host"]["functions"] if f["name"] == "user.py(9): once")
    assert (row["inclusive_ns_per_call"], row["few_calls"], row["total_ns"]) == (1_200, True, 1_200)


def test_families_go_to_the_innermost_frames_module_and_sum_to_the_call(tb, analysis_builder):
    for i in range(3):
        s = i * 10_000
        tb.annotation(f"call_{i}", s, 6_000)
        tb.py("pkg/outer.py(1): run", s + 100, 5_000)
        tb.py("pkg/inner/__init__.py(2): helper", s + 200, 2_000)
        tb.py("<built-in function isinstance>", s + 300, 500)  # a builtin: helper's module
        tb.op("aten::empty", s + 1_000, 400)  # an op: helper's module
        tb.launched_kernel("k", s + 3_000, 600, s + 4_000, 800)  # outer's module
    ex = analysis_builder(tb)
    fam = {f.name: f.ns_per_call for f in ex.per_call.families}
    assert fam == {"pkg.inner": 2_000, "pkg.outer": 5_000 - 2_000,
                   "(untraced)": 6_000 - 5_000}
    assert sum(fam.values()) == ex.calls.stats["api_ns"].p50
    d = build_report(ex).to_dict()
    assert {f["name"]: f["ns_per_call"] for f in d["host"]["families"]} == fam
    tree = d["calls"]["tree"]
    assert [(n["name"], n["inclusive_ns"], n["self_ns"]) for n in tree] == [
        ("pkg/outer.py(1): run", 5_000, 5_000 - 2_000 - 600)]


def test_module_names():
    assert module_of("flag_gems/utils/libentry.py(659): run") == "flag_gems.utils.libentry"
    assert module_of("torch/_prims_common/__init__.py(1575): elementwise_dtypes") == \
        "torch._prims_common"
    assert module_of("/usr/lib/python3/site-packages/triton/runtime/jit.py(1): f") == \
        "triton.runtime.jit"
    assert module_of("/root/.flaggems/code_cache/pw_" + "ab" * 20 + ".py(18): w") == \
        "code_cache.pw_abababab~"
    assert module_of("<built-in function len>") is None


def test_module_names_of_editable_installs():
    """``pip install -e .`` imports a package from its checkout: the profiler names its
    frames by absolute path, and the module still starts at the package."""
    assert module_of("/home/u/traceview/traceview/capture/impls.py(55): <lambda>") == \
        "traceview.capture.impls"
    assert module_of("/work/main/traceview/capture/impls.py(55): <lambda>") == \
        "traceview.capture.impls"
    assert module_of("/home/u/FlagGems/src/flag_gems/ops/sigmoid.py(12): sigmoid") == \
        "flag_gems.ops.sigmoid"
    assert module_of("/home/u/proj/src/mylib/core.py(3): f") == "mylib.core"
    assert module_of("/home/u/pytorch/torch/_ops.py(840): __call__") == "torch._ops"
    assert module_of("/tmp/scratch/bench.py(7): main") == "scratch.bench"


# ------------------------------------------------------------------ causality damage


def test_kernel_ending_after_a_later_sync_returned_is_dropped(tb, analysis_builder):
    for i in range(3):
        loop_call(tb, i * 10_000, i=i)  # kernels of 800 ns
        tb.sync(i * 10_000 + 3_000, 500)
    # a kernel launched in call_0 "ending" an hour later, long after call_0's sync
    corr = tb.launch(1_800, 100)
    tb.kernel("bogus", 2_000, 3_600 * 10**9 - 1, corr=corr)
    ex = analysis_builder(tb)
    assert ex.device.kernel_count == 3 and ex.device.busy_ns == 3 * 800
    assert ex.window.dur_ns == 2 * 10_000 + 4_000  # call_2 ends last
    diag = {g.code: g.count for g in ex.trace.diagnostics}
    assert diag["device-work-after-sync"] == 1


def test_kernel_far_past_the_last_host_event_is_dropped(tb, analysis_builder):
    for i in range(3):
        loop_call(tb, i * 10_000, i=i)
    corr = tb.launch(25_000, 100)
    tb.kernel("late", 26_000, 5 * 10**9, corr=corr)  # no sync after it: only the span rule
    ex = analysis_builder(tb)
    assert ex.device.kernel_count == 3
    assert {g.code for g in ex.trace.diagnostics} >= {"device-work-past-host"}


def test_cut_file_says_device_work_is_missing(tb, tmp_path):
    import traceview

    for i in range(4):
        tb.annotation(f"call_{i}", i * 10_000, 4_000)
        tb.launch(i * 10_000 + 1_000, 500)  # host side written ...
    for i in range(2):  # ... device records of the first two only, then the file is cut
        tb.kernel("k", i * 10_000 + 2_000, 800, corr=1001 + i)
    text = tb.text()
    cut = text[: text.rindex("}") - 5]  # inside the last event
    path = tmp_path / "cut.json"
    path.write_text(cut)
    ex = traceview.analyze(path)
    ids = {f.id: f for f in ex.findings}
    assert "device-work-cut" in ids and "no-device-work" not in ids
    # the cut lands inside the last event (the second kernel): one launch keeps its kernel
    assert ids["device-work-cut"].evidence == {"count": 4 - 1, "launches": 4}


def test_a_script_that_calls_once_gets_the_call_its_module_makes(tb, analysis_builder):
    # <module> -> fn(x, y) once: Dynamo compiles (no launch), then runs (one launch)
    tb.py("script.py(1): <module>", 0, 100_000)
    tb.py("torch/_dynamo/eval_frame.py(600): _fn", 1_000, 89_000)
    tb.py("torch/_dynamo/convert_frame.py(900): _compile", 2_000, 58_000)
    tb.py("torch/_functorch/aot_autograd.py(1): runtime_wrapper", 61_000, 19_000)
    tb.py("torch/_inductor/output_code.py(1): __call__", 62_000, 17_000)
    tb.py("<built-in function launch>", 63_000, 2_000)
    tb.launched_kernel("triton_poi_fused_0", 63_100, 1_500, 66_000, 900)
    c = analysis_builder(tb).calls
    assert [x.name for x in c.calls] == ["torch/_dynamo/eval_frame.py(600): _fn"]
    assert c.calls[0].metrics["api_ns"] == 89_000
    assert c.cold_indices == [0] and "compile" in _cold_words(c, 0)


def test_a_second_numbered_series_is_named_with_its_option(tb, analysis_builder):
    # a loop timing torch's op then the Triton one: two series of 5 and 4 calls; the
    # larger is analysed, the other is named with the --calls regex that selects it
    for i in range(5):
        loop_call(tb, i * 20_000, name="torch_mul", i=i)
    for i in range(4):
        loop_call(tb, 200_000 + i * 20_000, name="triton_mul", i=i, dur=6_000)
    c = analysis_builder(tb).calls
    assert (c.pattern, len(c.calls)) == ("torch_mul_#", 5)
    assert calls_claim(c).text.endswith(
        r"; also triton_mul_# (4 calls: --calls '^triton_mul_\d+$')")
    again = analysis_builder(tb, calls=r"^triton_mul_\d+$").calls
    assert len(again.calls) == 4 and again.stats["api_ns"].p50 == 6_000


def test_harness_frames_of_an_editable_install_are_the_harness(tb, analyze_builder):
    """capture after ``pip install -e .``: the harness's frames carry absolute paths; its
    time (the wrapper's own, counted here: 5 us call less the 2 us library frame) goes
    to the harness row, not to the library under test."""
    from traceview.render.measured.capture import owner_split

    for i in range(4):
        s = i * 20_000
        tb.annotation(f"call_{i}", s, 5_000)
        tb.py("/home/u/traceview/traceview/capture/impls.py(55): <lambda>", s, 5_000)
        tb.py("flag_gems/ops/sigmoid.py(12): sigmoid", s + 1_000, 2_000)
        tb.launched_kernel("k", s + 1_500, 300, s + 2_000, 800)
    r = analyze_builder(tb)
    fams = {f.name: f.ns_per_call for f in r.host.families}
    assert fams["traceview.capture.impls"] == 5_000 - 2_000
    assert dict(owner_split(r))["harness (traceview)"] == 5_000 - 2_000


def test_a_rarer_eager_op_is_a_call_of_its_own_not_part_of_the_next(tb, analysis_builder):
    """An eager AlexNet's forward without ranges or frames (HTA's simple_add trace): the
    linear layer is rarer than the relu_ after it and holds no compile work, so it is a
    call of its own kind, never folded into the relu_ call that follows (that "aten::relu_"
    call of 8 ms was mostly an aten::linear); the description names no joined event."""
    t, want = 0, []
    for i in range(4):
        tb.op("aten::conv2d", t, 2_000)
        tb.launched_kernel("conv", t + 500, 500, t + 1_000, 800)
        want.append(("aten::conv2d", t, t + 2_000))
        t += 3_000
        if i == 2:  # one linear layer, before the third relu_
            tb.op("aten::linear", t, 6_000)
            tb.launched_kernel("gemm", t + 500, 500, t + 1_000, 4_000)
            want.append(("aten::linear", t, t + 6_000))
            t += 7_000
        tb.op("aten::relu_", t, 1_000)
        tb.launched_kernel("relu", t + 200, 300, t + 600, 100)
        want.append(("aten::relu_", t, t + 1_000))
        t += 2_000
    c = analysis_builder(tb).calls
    # counted from the events written above: 4 conv2d, 1 linear and 4 relu_ calls
    assert c.source == "launches"
    assert [(x.name, x.start_ns, x.end_ns) for x in c.calls] == want
    assert "join" not in c.how and c.how in calls_claim(c).text


def test_a_compile_event_joining_a_call_is_named(tb, analysis_builder):
    """A rarer event holding compile work (a 2 ms ``(dynamo_timed)`` compile with one
    autotuning launch) joins the compiled call after it, and the description says so."""
    tb.op("_compile.compile_inner (dynamo_timed)", 0, 2_000_000)
    tb.launched_kernel("bench", 100_000, 1_000, 200_000, 300)
    t = 2_010_000
    for _ in range(3):
        tb.op("Torch-Compiled Region: 0/0", t, 10_000)
        tb.launched_kernel("triton_poi", t + 2_000, 1_000, t + 4_000, 500)
        t += 30_000
    c = analysis_builder(tb).calls
    assert c.source == "launches" and len(c.calls) == 3 and c.calls[0].start_ns == 0
    assert c.how.endswith(
        "; compile events join the call that follows them "
        "(_compile.compile_inner (dynamo_timed))")
    assert c.how in calls_claim(c).text


def test_events_recorded_per_call_count_every_event_inside_the_call(tb, analyze_builder):
    """A DLRM rank's step said "recorded per warm step: 1000 events": the host timeline's
    rows (ops and runtime calls of positive length), while the profiler recorded 1,288 on
    the step's thread (its zero-length ops and runtime calls and the optimizer and
    data-loader ranges too; docs/json.md). Each step here records, inside its range: two
    ops, a zero-length op, a user range, a launch and a Python frame on another thread."""
    us = 1_000
    for n in range(3):
        s = n * 1_000 * us
        tb.annotation(f"ProfilerStep#{n}", s, 500 * us)
        tb.annotation("Optimizer.step#Adam.step", s + 300 * us, 100 * us)
        tb.op("aten::mul", s + 10 * us, 50 * us)
        tb.op("aten::empty", s + 70 * us, 0)  # zero-length: recorded all the same
        tb.op("aten::add_", s + 310 * us, 50 * us)
        tb.launched_kernel("k", s + 20 * us, 10 * us, s + 40 * us, 30 * us)
        tb.py("other.py(1): f", s + 5 * us, 10 * us, tid=999)  # another thread: not counted
    r = analyze_builder(tb)
    assert r.calls.source == "profiler_steps" and r.calls.warm_count == 3
    # counted from the events written above: on the step thread, starting inside a step,
    # less the step's own range
    steps = [e for e in tb.events if e["name"].startswith("ProfilerStep#")]
    want = [sum(1 for e in tb.events if e["tid"] == tb.tid and e is not st
                and st["ts"].ns <= e["ts"].ns < st["ts"].ns + st["dur"].ns) for st in steps]
    assert want == [5, 5, 5]
    assert r.calls.perturbation.events_per_call == 5


def _two_thread_collectives(tb):
    """Three ``comm`` ranges on the main thread and one on the autograd thread, each with
    an op and a launch of its own thread; the main thread records nothing during the
    autograd thread's range (a DLRM rank's all_to_all in backward)."""
    us = 1_000
    tb.raw({"ph": "M", "name": "thread_name", "pid": tb.pid, "tid": 200,
            "args": {"name": "pt_autograd_0"}})
    for n, tid in enumerate((100, 100, 200, 100)):
        s = n * 1_000 * us
        tb.annotation("nccl:all_to_all", s, (60 + n) * us, tid=tid)
        tb.op("record_param_comms", s + us, (50 + n) * us, tid=tid)
        tb.launched_kernel("ncclKernel_SendRecv", s + (40 + n) * us, (8 + n) * us,
                           s + 100 * us, 400 * us, tid=tid)
    tb.op("aten::mul", 5_000 * us, 10 * us)  # the main thread's last event
    return [e for e in tb.events if e["name"] == "nccl:all_to_all"]


def test_calls_option_keeps_the_calls_on_one_thread_and_counts_the_rest(tb, analyze_builder):
    """``--calls`` matching ranges on two threads: the calls are those of the thread
    holding the most, whose host rows the per-call figures read; the match on the
    autograd thread is left out and said so, with the ``--thread`` that shows it. Measured
    on the main thread, it read as all untraced time with no launch (the main thread
    records nothing then)."""
    ranges = _two_thread_collectives(tb)
    r = analyze_builder(tb, calls="^nccl:all_to_all$")
    main = [e for e in ranges if e["tid"] == 100]
    assert r.host.thread.tid == 100
    assert [(c.start_ns, c.end_ns) for c in r.calls.per_call] == \
        [(e["ts"].ns, e["ts"].ns + e["dur"].ns) for e in main]
    # each call's launch API time: its own thread's launch inside the range, from the events
    launches = [e for e in tb.events if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    want = [sum(la["dur"].ns for la in launches if la["tid"] == 100
                and e["ts"].ns <= la["ts"].ns < e["ts"].ns + e["dur"].ns) for e in main]
    assert [c.metrics["launch_api_ns"] for c in r.calls.per_call] == want
    left = [e for e in ranges if e["tid"] != 100]
    assert [(e.thread, e.calls) for e in r.calls.elsewhere] == \
        [("pt_autograd_0 [100/200]", len(left))]
    doc = r.to_dict()
    assert doc["calls"]["elsewhere"] == [{"thread": "pt_autograd_0 [100/200]", "calls": 1}]
    assert "1 more on pt_autograd_0 [100/200] left out" in r.calls.description
    assert "--thread 100/200 to see it" in r.calls.description
    # the option it names shows that one call, measured on its own thread
    a = analyze_builder(tb, calls="^nccl:all_to_all$", thread="100/200")
    (only,) = a.calls.per_call
    assert (only.start_ns, only.end_ns) == (left[0]["ts"].ns, left[0]["ts"].ns + left[0]["dur"].ns)
    assert only.metrics["launch_api_ns"] == sum(
        la["dur"].ns for la in launches if la["tid"] == 200)
    assert [(e.thread, e.calls) for e in a.calls.elsewhere] == \
        [("main thread [100/100]", len(main))]
    from traceview.report.claims import check_all

    assert check_all(r.claims, doc) == [] and check_all(a.claims, a.to_dict()) == []


def test_calls_option_left_out_on_several_threads_is_said_once(tb, analyze_builder):
    """Matches on three threads (ranks' steps fused into one file, one thread each): the
    calls are the busiest thread's; the others' total is the sum of theirs, each named
    with its ``--thread``, and the sentence is true of the report's JSON."""
    from traceview.report.claims import check_all

    us = 1_000
    for n, tid in enumerate((100, 100, 100, 200, 300, 300)):
        s = n * 1_000 * us
        tb.annotation("step", s, 100 * us, tid=tid)
        tb.launched_kernel("k", s + 10 * us, 5 * us, s + 20 * us, 50 * us, tid=tid)
    r = analyze_builder(tb, calls="^step$")
    steps = [e for e in tb.events if e.get("name") == "step"]
    by_tid: dict[int, int] = {}
    for e in steps:
        by_tid[e["tid"]] = by_tid.get(e["tid"], 0) + 1
    assert r.host.thread.tid == 100 and r.calls.count == by_tid[100]
    assert [(e.thread, e.calls) for e in r.calls.elsewhere] == [
        (f"thread 100/{tid}", by_tid[tid]) for tid in (300, 200)]  # most first
    total = by_tid[200] + by_tid[300]
    assert (f"; {total} more on 2 other threads left out (the calls and their host rows are "
            f"one thread's): {by_tid[300]} on thread 100/300 (--thread 100/300), "
            f"{by_tid[200]} on thread 100/200 (--thread 100/200)") in r.calls.description
    assert check_all(r.claims, r.to_dict()) == []


def test_calls_option_tied_threads_keep_the_default_thread(tb, analyze_builder):
    """Two threads holding as many matches: the calls are the default thread's (here the
    one running the profiler step), not the first lane's; the other's are left out."""
    us = 1_000
    for n, tid in enumerate((100, 200, 100, 200)):
        s = n * 1_000 * us
        tb.annotation("comm", s, 100 * us, tid=tid)
        tb.launched_kernel("k", s + 10 * us, 5 * us, s + 20 * us, 50 * us, tid=tid)
    tb.annotation("ProfilerStep#1", 0, 4_000 * us, tid=200)
    r = analyze_builder(tb, calls="^comm$")
    mine = [e for e in tb.events if e.get("name") == "comm" and e["tid"] == 200]
    assert r.host.thread.tid == 200
    assert [c.start_ns for c in r.calls.per_call] == [e["ts"].ns for e in mine]
    assert [(e.thread, e.calls) for e in r.calls.elsewhere] == [("thread 100/100", 2)]


def test_calls_option_on_a_thread_holding_no_frame_it_matches_says_where_they_are(
        tb, analysis_builder):
    """A Python frame matched only on another thread than ``--thread``'s: refused in one
    line naming the thread that holds it and the option that shows it."""
    tb.py("a.py(1): f", 0, 1_000, tid=200)
    tb.launched_kernel("k", 100, 50, 300, 100, tid=200)
    tb.py("a.py(2): g", 2_000, 1_000)
    tb.launched_kernel("k", 2_100, 50, 2_300, 100)
    with pytest.raises(UsageError, match=r"matches on thread 100/200 \(--thread 100/200\)"):
        analysis_builder(tb, calls=r": f$", thread="100")
    a = analysis_builder(tb, calls=r": f$")
    assert a.timeline.lane.tid == 200 and [c.start_ns for c in a.calls.calls] == [0]
