"""Kernel names as users read them: template arguments folded, the part that tells two
kernels of one template apart kept, with the count of variants; the full names in the
JSON. And the ``diff`` text: the top changes and a count of the rest."""

from __future__ import annotations

import json

import traceview
from conftest import FIXTURES
from traceview.render.names import kernel_labels
from traceview.render.registry import RenderOptions, renderer

ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<"
       "c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>,"
       " std::array<char*, 3ul>)")
MUL = ("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float,"
       " float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, "
       "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<"
       "float> >, std::array<char*, 3ul>)")
FILL = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>, "
        "std::array<char*, 1ul> >(int, at::native::FillFunctor<int>, std::array<char*, 1ul>)")


def test_kernels_of_one_template_are_told_apart_with_the_count_of_variants():
    labels = kernel_labels([ADD, MUL, FILL, "triton_poi_fused_mul_0"])
    assert labels["triton_poi_fused_mul_0"] == "triton_poi_fused_mul_0"
    assert len(set(labels.values())) == 4
    assert labels[ADD] == ("at::native::vectorized_elementwise_kernel<…, CUDAFunctor_add<BFloat16>,"
                           " array<char*, 3ul>>(…) [1 of 3 variants]")
    assert "MulFunctor<…>" in labels[MUL] and "FillFunctor<int>" in labels[FILL]
    assert "c10::" not in labels[ADD] and "std::" not in labels[ADD]


def test_a_kernel_alone_keeps_the_folded_name():
    assert kernel_labels([ADD]) == {ADD: "at::native::vectorized_elementwise_kernel<…>(…)"}


def test_identical_looking_variants_are_numbered():
    a = "void k<1>(int)"
    b = "void k<1>(float)"
    assert kernel_labels([a, b]) == {a: "k<…>(…) #1 [1 of 2 variants]", b: "k<…>(…) #2 [1 of 2 variants]"}


def test_the_kernel_table_shows_readers_names_and_the_json_the_full_ones(tmp_path):
    r = traceview.analyze(FIXTURES / "shape_model_schedule_cold.json.gz")
    names = [k.name for k in r.device.kernels]
    text = renderer("text").render(r, RenderOptions(width=200))
    table = text.split("Top kernels")[1].split("\n\n")[0]
    for label in (kernel_labels(names)[n] for n in names[:10]):
        assert label in table
    d = json.loads(renderer("json").render(r, RenderOptions()))
    assert [k["name"] for k in d["device"]["kernels"]] == names


def test_the_diff_text_shows_the_top_changes_and_counts_the_rest():
    from traceview.multi.compare import diff_reports
    from traceview.render.diff_top import TOP_KERNELS

    before = traceview.analyze(FIXTURES / "inductor_mul_1x4096_f32.cold.json.gz")
    after = traceview.analyze(FIXTURES / "shape_model_schedule_cold.json.gz")
    d = diff_reports(before, after)
    extra = [{"name": f"void at::native::elementwise_kernel<{i}, at::native::F{i}<float> >(int)",
              "status": "added", "count_before": 0, "count_after": i + 1, "p50_before": None,
              "p50_after": 1_000 * (i + 1)} for i in range(20)]
    d.kernels.extend(extra)
    changed = sum(1 for k in d.kernels if k["status"] != "common")
    text = renderer("text", "diff").render(d, RenderOptions(width=100))
    assert f"+{changed - TOP_KERNELS} more kernel changes (--format json)" in text
    table = text.split("kernels added, removed or changed")[1].split("more kernel changes")[0]
    assert "F19<float>" in table  # the largest change (20 launches of 20 us) is shown
    assert "F0<float>" not in table
    # the line of every difference names each kernel apart, the left-out ones too
    said = text.split("kernels launched DIFFER")[1]
    assert all(f"F{i}<float>" in said for i in range(20))
    assert "void " not in text  # no full C++ signature
    assert len(text.splitlines()) < 120
    assert "more differences in what was measured" in text
    full = json.loads(renderer("json", "diff").render(d, RenderOptions()))
    assert len(full["kernels"]) == len(d.kernels)


def test_a_generated_code_frame_is_shown_by_its_file_with_the_hash_cut():
    from traceview.render.names import short_frame

    long = ("/root/.flaggems/code_cache/pointwise_dynamic_8fae3846aeb791025a64642c37a8e2c7864f05"
            "eef303520cf10a20d1a4638c5b_sigmoid_forward_kernel_rank_1_bptr.py(18): "
            "sigmoid_forward_wrapper_rank_1")
    assert short_frame(long) == (".../pointwise_dynamic_8fae3846…_sigmoid_forward_kernel_rank_1_"
                                 "bptr.py(18): sigmoid_forward_wrapper_rank_1")
    # a package-relative frame, and a name that is no frame, stay as they are
    for same in ("flag_gems/utils/libentry.py(659): run", "aten::mul", "/no/frame/name"):
        assert short_frame(same) == same


def test_an_interval_shares_its_unit_only_when_both_ends_have_it():
    from traceview.render.percall import span

    assert span(74_900, 85_700) == "74.9-85.7 us"
    assert span(950, 1_200) == "950 ns - 1.2 us"
