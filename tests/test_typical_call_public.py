"""The typical call on a real trace: sglang's Qwen3-8B decode step (AMD TraceLens' test
traces, public corpus; skipped where the corpus is absent).

Six calls of six kinds; the decode step (``forward_batch_generation``, one graph launch
and 465 ms of waiting on it) holds nearly all the time. The verdict once read "device is
busy 100% of a typical call (22.8 us)": the p50 wall time of six different calls over
their p50 idle time, while the call drawn had device busy 0 ns. Here the call, its device
busy and its idle share are counted from the raw events (Decimal microseconds to integer
ns, the union of kernel and memcpy intervals clipped to the call).
"""

from __future__ import annotations

import gzip
import json
from decimal import Decimal

import public_corpus
import pytest

import rawcount
import traceview
from traceview.units import fmt_ns, fmt_pct

DECODE = "AMD-AGI__TraceLens/inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz"


def _ns(x) -> int:
    return int(Decimal(x) * 1000)


def test_sglang_decode_verdict_is_the_decode_steps_own():
    path = public_corpus.locate(DECODE)
    if path is None:
        pytest.skip(f"public corpus trace {DECODE} absent")
    with gzip.open(path, "rt") as f:
        events = json.load(f, parse_float=Decimal)["traceEvents"]
    step = next(e for e in events if e.get("ph") == "X"
                and e.get("name", "").endswith("forward_batch_generation"))
    a, b = _ns(step["ts"]), _ns(step["ts"]) + _ns(step["dur"])
    work = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in events
            if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    busy = rawcount.covered(work, a, b)
    idle = (b - a) - busy
    assert 0.99 < idle / (b - a) < 1.0  # the decode step is 99.7% device idle

    r = traceview.analyze(path)
    t = r.typical
    assert (t.start_ns, t.end_ns) == (a, b)
    assert t.metrics["device_busy_ns"] == busy
    v = r.verdict
    # the idle time is the host blocked in one copy with nothing running on the device:
    # a wait for a held stream, not host work (tests/test_sync_stalled.py)
    assert v is not None and v.id == "sync-stalled", v and v.message
    assert f"idle {fmt_pct(idle / (b - a))} of a typical call ({fmt_ns(b - a)})" in v.message
    # the waterfall draws the same call: its device row inside the call is that busy time
    tc = r.typical_call
    assert sum(min(e, b) - max(s, a) for s, e in tc.device_busy if s < b and e > a) == busy


SWITCH = ("CodingPlatelets__SwitchTransformers/"
          "result__trace_100Kpar_4exp_8batch_128seq_1024.json.gz")
BLOCK = "nn.Module: SwitchTransformerBlock_"


def test_switch_transformer_layers_are_one_kind_whose_median_is_typical():
    """A stack of ten SwitchTransformerBlock instances run once each (the profiler names
    them ``_0`` .. ``_9``): as ten kinds of one call, the slowest warm layer (80.2 ms) was
    "a typical call" while their p50 was 40.3 ms. One kind: the typical call is the layer
    at the nearest-rank p50 of the layers' wall times, here the same whether the first
    layer (155 ms, first use) counts or not, and the verdict's figures are that call's."""
    path = public_corpus.locate(SWITCH)
    if path is None:
        pytest.skip(f"public corpus trace {SWITCH} absent")
    with gzip.open(path, "rt") as f:
        events = json.load(f, parse_float=Decimal)["traceEvents"]
    blocks = sorted((_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"]), e["name"]) for e in events
                    if e.get("ph") == "X" and e.get("name", "").startswith(BLOCK))
    assert [n for _, _, n in blocks] == [f"{BLOCK}{i}" for i in range(10)]
    walls = [b - a for a, b, _ in blocks]

    def p50(v):
        v = sorted(v)
        return v[(len(v) + 1) // 2 - 1]

    want = p50(walls)
    assert want == p50(walls[1:])  # with or without the first use
    a, b, name = next(x for x in blocks if x[1] - x[0] == want)
    work = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in events
            if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    busy = rawcount.covered(work, a, b)

    r = traceview.analyze(path)
    mine = [c for c in r.calls.per_call if c.name.startswith(BLOCK)]
    assert [c.name for c in mine] == [n for _, _, n in blocks]  # each keeps its own name
    t = r.typical
    assert (t.name, t.start_ns, t.end_ns) == (name, a, b)
    assert t.api_ns == want < max(walls[1:])
    assert [k.count for k in r.calls.kinds if k.name == BLOCK + "#"] == [10]
    assert t.metrics["device_busy_ns"] == busy
    v = next(f for f in r.findings if f.id in ("host-bound", "device-bound"))
    assert v.id == "device-bound", v.message
    assert f"busy {fmt_pct(busy / want)} of a typical call ({fmt_ns(want)})" in v.message
    assert r.typical_call.index == t.index
