"""Bytes moved per call, by hand: broadcast, strided and transposed operands, capture's
exact count on the CPU, and explain's count from the launching op's recorded shapes.

Every expected figure is written out here as elements x bytes per element.
"""

from __future__ import annotations

import gzip
import json

import pytest

from traceview.analyses import kernel_bytes as kb


def test_distinct_elements_count_a_broadcast_dimension_once():
    assert kb.distinct_elements((16, 4096), (4096, 1)) == 16 * 4096
    assert kb.distinct_elements((16, 4096), (0, 1)) == 4096  # expanded over dim 0
    assert kb.distinct_elements((8, 16, 128, 64), (8192, 0, 64, 1)) == 8 * 128 * 64
    assert kb.distinct_elements((64, 4096), (8192, 2)) == 64 * 4096  # every other element
    assert kb.distinct_elements((32, 64), (1, 32)) == 32 * 64  # transposed: all of them
    assert kb.distinct_elements((3, 0), (1, 1)) == 0
    assert kb.distinct_elements((5, 7), None) == 35


def test_bytes_moved_of_a_broadcast_add_and_a_strided_mul():
    # (16, 4096) + (4096,) in float32: both inputs read once, the output written once
    a = kb.Operand((16, 4096), (4096, 1), 4)
    bias = kb.Operand((4096,), (1,), 4)
    out = kb.Operand((16, 4096), (4096, 1), 4)
    assert kb.bytes_moved([a, bias], [out]) == {
        "read": 16 * 4096 * 4 + 4096 * 4, "written": 16 * 4096 * 4,
        "total": 16 * 4096 * 4 * 2 + 4096 * 4}
    # the same bias expanded to (16, 4096) with stride 0 is still 4096 elements
    assert kb.Operand((16, 4096), (0, 1), 4).bytes == 4096 * 4
    # x[..., ::2] of a (64, 8192) bf16 buffer times a contiguous (64, 4096) bf16 -> bf16
    x = kb.Operand((64, 4096), (8192, 2), 2)
    y = kb.Operand((64, 4096), (4096, 1), 2)
    o = kb.Operand((64, 4096), (4096, 1), 2)
    assert kb.bytes_moved([x, y], [o])["total"] == 3 * 64 * 4096 * 2


def test_from_recorded_op_reads_kineto_args():
    args = {"Input Dims": [[16, 4096], [4096], []], "Input type": ["c10::BFloat16", "float", "Scalar"],
            "Input Strides": [[4096, 1], [1], []]}
    got = kb.from_recorded_op("aten::add", args)
    # bf16 (16, 4096) + f32 (4096,): the output is taken in the widest input dtype (f32)
    assert (got["read"], got["written"]) == (16 * 4096 * 2 + 4096 * 4, 16 * 4096 * 4)
    assert got["strides_recorded"] is True and "widest" in got["assumed"]
    expanded = dict(args, **{"Input Strides": [[4096, 1], [0], []]})
    assert kb.from_recorded_op("aten::add", expanded)["read"] == 16 * 4096 * 2 + 1 * 4
    assert kb.from_recorded_op("aten::mm", args) is None  # not pointwise: unknown
    assert kb.from_recorded_op("aten::add", {"Input type": ["float"]}) is None
    assert kb.gb_per_s(393216, 1056) == round(393216 / 1056, 3)
    assert kb.gb_per_s(None, 5) is None and kb.share(1.0, 4.0) == 0.25


def test_explain_counts_bytes_from_the_launching_op(analyze_builder, tb):
    for i in range(4):
        t0 = 1_000_000 + i * 100_000
        tb.annotation(f"call_{i}", t0, 50_000)
        op = tb.op("aten::mul", t0 + 1_000, 40_000)
        op["args"] = {"Input Dims": [[1, 4096], [1, 4096]], "Input type": ["float", "float"],
                      "Input Strides": [[4096, 1], [4096, 1]]}
        tb.launched_kernel("mul_kernel", t0 + 2_000, 5_000, t0 + 10_000, 2_000)
    r = analyze_builder(tb)
    b = r.bytes_moved
    assert (b.read, b.written, b.total) == (2 * 4096 * 4, 4096 * 4, 3 * 4096 * 4)
    assert b.source == "aten::mul's recorded shapes"
    assert b.gb_per_s == round(3 * 4096 * 4 / 2_000, 3)  # the kernel took 2 us per call
    from traceview.render.registry import RenderOptions, renderer

    md = renderer("md").render(r, RenderOptions())
    line = next(ln for ln in md.splitlines() if ln.startswith("| Device-kernel result"))
    assert "moves 49.2 kB per call (aten::mul's recorded shapes): 24.6 GB/s" in line


def test_explain_says_unknown_without_recorded_shapes(analyze_builder, tb):
    for i in range(3):
        t0 = 1_000_000 + i * 100_000
        tb.annotation(f"call_{i}", t0, 50_000)
        tb.op("aten::mul", t0 + 1_000, 40_000)
        tb.launched_kernel("mul_kernel", t0 + 2_000, 5_000, t0 + 10_000, 2_000)
    b = analyze_builder(tb).bytes_moved
    assert b.total is None and b.source == "unknown: aten::mul has no recorded shapes " \
                                           "(record_shapes off)"


@pytest.mark.capture
def test_capture_records_exact_bytes_for_broadcast_and_strided_inputs(tmp_path):
    pytest.importorskip("torch")
    from typer.testing import CliRunner

    from traceview.cli.app import app

    fast = ["--device", "cpu", "--impl", "torch", "--iters", "2", "--warmup", "1",
            "--baseline-n", "5"]
    cases = {
        # (16, 64) + (64,), float32: 16*64*4 + 64*4 read, 16*64*4 written
        "bcast": (["--op", "add", "--shape", "16x64,64"], 16 * 64 * 4 + 64 * 4, 16 * 64 * 4),
        # x[..., ::2] of (8, 128) f16 times another such view: 2 * 8*64*2 read, 8*64*2 written
        "strided": (["--op", "mul", "--shape", "8x64", "--dtype", "f16", "--layout", "strided"],
                    2 * 8 * 64 * 2, 8 * 64 * 2),
    }
    for name, (args, read, written) in cases.items():
        out = tmp_path / f"{name}.json.gz"
        r = CliRunner().invoke(app, ["capture", *args, *fast, "--out", str(out)])
        assert r.exit_code == 0, r.output
        meta = json.loads(gzip.decompress(out.read_bytes()))["traceview"]
        bw = meta["bandwidth"]
        assert bw["bytes"] == {"read": read, "written": written, "total": read + written}
        assert bw["gb_per_s"] is None and bw["copy"] is None  # no device_ns on the CPU
        assert meta["kernels_used"]["note"] == "no device kernels on the CPU"
        assert "bytes per call" in r.output
        from traceview import analyze

        assert analyze(out).bytes_moved.source == "capture's metadata (exact, from the tensors)"
