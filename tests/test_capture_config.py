"""capture's option parsing and validation: torch-free, so these run everywhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from traceview.errors import CaptureError
from traceview.workload import config as cfg
from traceview.workload import ops

pytestmark = pytest.mark.capture


@pytest.mark.parametrize("text, shapes", [
    ("1x4096", ((1, 4096),)),
    ("4096", ((4096,),)),
    ("2**12", ((4096,),)),
    ("16x4096,4096", ((16, 4096), (4096,))),
    ("8X2**4", ((8, 16),)),
])
def test_parse_shapes(text, shapes):
    assert cfg.parse_shapes(text) == shapes


@pytest.mark.parametrize("text", ["", "0x4", "3xq", "1x", "2+3", "1x2x3x4x5", "a,b"])
def test_bad_shapes(text):
    with pytest.raises(CaptureError):
        cfg.parse_shapes(text)


def test_sweep_grammar():
    assert cfg.parse_sweep("numel=2**8..2**24") == [4**k * 256 for k in range(9)]
    assert cfg.parse_sweep("numel=2**8..2**10:2") == [256, 512, 1024]
    assert cfg.parse_sweep("numel=100..1000:4") == [100, 400, 1000]  # STOP always included
    for bad in ("size=1..2", "numel=8..4", "numel=1..8:1", "numel=2**8"):
        with pytest.raises(CaptureError):
            cfg.parse_sweep(bad)


def test_broadcast_shapes():
    assert cfg.broadcast_shapes(((16, 4096), (4096,))) == (16, 4096)
    assert cfg.broadcast_shapes(((16, 1), (1, 8))) == (16, 8)
    with pytest.raises(CaptureError, match="do not broadcast"):
        cfg.broadcast_shapes(((16, 4096), (8, 4096)))


def test_scalar_keeps_int_vs_float():
    assert cfg.parse_scalar("2") == 2 and isinstance(cfg.parse_scalar("2"), int)
    assert cfg.parse_scalar("2.5") == 2.5
    with pytest.raises(CaptureError):
        cfg.parse_scalar("two")


def test_dtype_aliases_and_refusals():
    assert ops.canonical_dtype("bf16") == "bfloat16"
    assert ops.canonical_dtype("FP16") == "float16"
    with pytest.raises(CaptureError, match="unknown dtype"):
        ops.canonical_dtype("float8")
    with pytest.raises(CaptureError, match="does not take dtype int32"):
        cfg.CaptureConfig(op="sigmoid", dtype="int32").validate()


@pytest.mark.parametrize("changes, fragment", [
    ({"op": "nope"}, "unknown op"),
    ({"impl": "cuda"}, "--impl"),
    ({"op": "relu", "scalar": 2}, "unary"),
    ({"shapes": ((4, 4), (4,)), "scalar": 2.0}, "not both"),
    ({"op": "div", "scalar": 0}, "divides by zero"),
    ({"layout": "transposed"}, "last two dimensions"),  # default 1x4096
    ({"device": "cpu", "impl": "inductor"}, "needs --device cuda"),
    ({"device": "cpu", "mode": "graph"}, "CUDA graphs"),
    ({"graph_ops": 4}, "--mode graph"),
    ({"streams": 2, "mode": "graph"}, "not supported"),
    ({"iters": 0}, "--iters"),
    ({"out": Path("trace.txt")}, ".json.gz or .json"),
])
def test_validation_errors(changes, fragment):
    base = {"op": "mul"}
    with pytest.raises(CaptureError, match=re.escape(fragment)):
        cfg.CaptureConfig(**{**base, **changes}).validate()


def test_defaults_and_derived_names():
    c = cfg.CaptureConfig(op="mul").validate()
    assert c.impl == "triton" and c.shapes == ((1, 4096),) and c.mode == "eager"
    assert c.default_out() == Path("traceview-mul-triton-1x4096-f32-eager.json.gz")
    assert c.stack is True  # small op: frames on by default
    assert cfg.CaptureConfig(op="mul", shapes=((4096, 4096),)).stack is False
    assert cfg.CaptureConfig(op="mul", device="cpu", impl="triton").stack is False  # interpreter
    assert "--op mul" in c.reproducer and "--with-stack" in c.reproducer
    assert c.command == c.reproducer  # no argv: the resolved command stands in


def test_memory_estimate_refuses_before_allocating():
    from traceview.workload.device import estimate_bytes

    small = cfg.CaptureConfig(op="mul", shapes=((1, 4096),))
    big = cfg.CaptureConfig(op="mul", shapes=((100_000, 100_000, 100),), dtype="float64")
    assert estimate_bytes(small) < 1 << 20
    assert estimate_bytes(big) > 1 << 40
