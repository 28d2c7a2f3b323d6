"""Copies that return only once done are the host waiting for the device, not launch
overhead: ROCm PyTorch's ``.item()``/``.cpu()`` is one ``hipMemcpyWithStream`` where CUDA
PyTorch writes ``cudaMemcpyAsync`` then ``cudaStreamSynchronize``. Figures written here
from the events built, and from the raw events of a public trace."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal

import public_corpus
import pytest

import traceview
from tests.tracebuilder import TraceBuilder

US = 1000


def _call(tb: TraceBuilder, t: int, corr: int) -> None:
    """One call (100 us): a 4 us launch of a 60 us kernel, then a blocking device-to-host
    copy called at 10 us that returns at 95 us, its 2 us record at 92 us."""
    tb.annotation("step", t, 100 * US)
    tb.launched_kernel("void gemm<1>", t + 2 * US, 4 * US, t + 30 * US, 60 * US)
    tb.launch(t + 10 * US, 85 * US, api="hipMemcpyWithStream", corr=corr)
    tb.kernel("Memcpy DtoH (Device -> Host)", t + 92 * US, 2 * US, corr=corr,
              cat="gpu_memcpy")


def test_a_blocking_copy_is_a_sync_wait_and_still_a_linked_launch(tb, analyze_builder):
    for i in range(4):
        _call(tb, i * 200 * US, 90_000 + i)
    r = analyze_builder(tb, calls="^step$")
    assert r.calls.count == 4
    for c in r.calls.per_call:
        # the copy's whole 85 us: from its call at 10 us to its return at 95 us
        assert c.metrics["sync_ns"] == 85 * US
        assert c.categories["launch"] == 4 * US
    assert r.launches.by_api == {"cuLaunchKernelEx": 4, "hipMemcpyWithStream": 4}
    assert r.launches.linked == 8


def test_sglang_decode_waits_in_its_copy_not_in_a_launch():
    """TraceLens' sglang decode trace: the forward call's one ``hipMemcpyWithStream`` blocks
    463 ms while stream 3 waits on an event (``hipStreamWaitEvent`` at the window's
    start); counted here from the raw events, it is the window's sync time, and the
    launch category holds only the real launches' time."""
    name = "AMD-AGI__TraceLens/inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz"
    path = public_corpus.locate(name)
    if path is None:
        pytest.skip(f"{name} is not in this machine's corpus copy")
    with gzip.open(path) as f:
        events = json.load(f, parse_float=Decimal)["traceEvents"]
    copies = [e for e in events if e.get("ph") == "X" and e.get("name") == "hipMemcpyWithStream"]
    assert len(copies) == 1
    wait = int((copies[0]["dur"] * 1000).to_integral_value())
    assert wait > 460_000_000
    r = traceview.analyze(path)
    forward = [c for c in r.calls.per_call if c.name.endswith("forward_batch_generation")]
    assert len(forward) == 1
    assert forward[0].metrics["sync_ns"] == wait
    assert forward[0].categories["launch"] < wait // 100
