"""The ``no-python-frames`` finding names Triton's launch stages (specialize, cache_key,
launch_metadata) only where the trace evidently launches Triton kernels eagerly; an
eager PyTorch or CPU-only trace, or one whose Triton kernels run only inside CUDA graph
replays, is told what it holds instead."""

from __future__ import annotations

import pytest

import traceview
from conftest import FIXTURES

TRITON_STAGES = "specialize, cache_key and launch_metadata cannot be told apart"


def _message(path: str) -> str:
    r = traceview.analyze(path)
    return next(f.message for f in r.findings if f.id == "no-python-frames")


@pytest.mark.parametrize("name", [
    "triton_mul_1x4096_f32.json.gz",  # a Triton mul_kernel through cuLaunchKernelEx
    "shape_user_inductor.json.gz",  # Inductor's triton_poi_* through cuLaunchKernel
])
def test_triton_launches_name_its_stages(name):
    assert TRITON_STAGES in _message(str(FIXTURES / name))


@pytest.mark.parametrize("name", [
    "torch_mul_1x4096_f32.json.gz",  # ATen's kernel through cudaLaunchKernel
    "two_streams_8192x8192_f16.json.gz",
])
def test_eager_pytorch_is_told_what_it_holds(name):
    message = _message(str(FIXTURES / name))
    assert TRITON_STAGES not in message
    assert "what the host did between the recorded events cannot be split" in message


def test_triton_kernels_only_in_graph_replays_are_no_triton_launch(tmp_path):
    """An Nsight Systems conversion whose Triton kernels are graph nodes, and whose one
    driver-API launch is cuBLASLt's nvjet kernel: no Triton launch stage ran."""
    import json

    from test_nsys_json import EVENTS, _api, _kernel

    events = [*EVENTS, _api("cuLaunchKernelEx", 8_500, 8_600, 6),
              _kernel("nvjet_tst_64x8_64x16_4x1_v_bz_TNT", 8_700, 8_800, 6)]
    events[8] = {**events[8], "name": "triton_poi_fused_mul_0"}  # g2, a graph node
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(events))
    message = _message(str(path))
    assert TRITON_STAGES not in message and "Nsight Systems traced" in message
