"""Invariants over generated traces: whatever the input, the books balance."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import traceview
from tracebuilder import TraceBuilder

host_ev = st.tuples(st.sampled_from(["cpu_op", "python_function", "cuda_runtime", "weird"]),
                    st.sampled_from(["aten::mul", "triton/runtime/jit.py(1): run", "user.py(3): f",
                                     "cudaDeviceSynchronize", "<built-in function launch>"]),
                    st.integers(0, 5_000), st.integers(0, 3_000), st.integers(1, 2))
dev_ev = st.tuples(st.integers(0, 6_000), st.integers(1, 2_000), st.integers(7, 9),
                   st.booleans())


def _build(hosts, devs, order_seed):
    tb = TraceBuilder()
    for cat, name, start, dur, tid in hosts:
        tb.op(name, start, dur, cat=cat, tid=tid)
    for start, dur, stream, launched in devs:
        if launched:
            tb.launched_kernel("k", max(start - 500, 0), 200, start, dur, stream=stream)
        else:
            tb.kernel("k", start, dur, stream=stream)
    random.Random(order_seed).shuffle(tb.events)
    return tb


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(host_ev, max_size=25), st.lists(dev_ev, max_size=12), st.integers(0, 3))
def test_identities_hold_and_order_does_not_matter(tmp_path, hosts, devs, seed):
    a = traceview.analyze(_build(hosts, devs, seed).write(tmp_path / "a.json")).to_dict()
    b = traceview.analyze(_build(hosts, devs, seed + 1).write(tmp_path / "b.json")).to_dict()
    w = a["window"]["dur_ns"]
    dev = a["device"]
    assert 0 <= dev["busy_ns"] <= max(w, 0)
    assert dev["busy_ns"] <= dev["work_sum_ns"]
    assert dev["busy_ns"] + dev["idle_ns"] == w
    if a["host"]["thread"] is not None and w > 0:
        assert sum(a["host"]["categories"].values()) == w
        assert sum(c["ns"] for c in a["breakdown"]) == w
        assert sum(c["ns"] for c in a["breakdown"] if c["device"] == "busy") == dev["busy_ns"]
    for d in (a, b):
        d["trace"].pop("path")
    assert a == b
