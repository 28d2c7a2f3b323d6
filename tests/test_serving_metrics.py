"""traceview serve's arithmetic, arrivals and options: no torch needed.

Every expected figure is computed here from raw integer timestamps, independently of
``traceview.serve.metrics``.
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from traceview.errors import UsageError
from traceview.serve import arrivals, metrics
from traceview.serve.spec import ModelSpec, ServeSpec, Variant, Workload, parse_env


def nearest_rank(values, p):
    v = sorted(values)
    return v[max(1, math.ceil(p / 100 * len(v))) - 1]


@st.composite
def raw_requests(draw):
    n = draw(st.integers(1, 12))
    out = []
    for i in range(n):
        arrival = draw(st.integers(0, 10**9))
        first = arrival + draw(st.integers(0, 10**9))
        tokens = draw(st.integers(2, 300))
        last = first + draw(st.integers(0, 10**10))
        out.append({"index": i, "batch": i // 2, "arrival_ns": arrival, "first_token_ns": first,
                    "last_token_ns": last, "tokens": tokens})
    return out


@settings(max_examples=200, deadline=None)
@given(raw_requests())
def test_relations_hold_exactly_per_request_and_repetition(raw):
    timings = metrics.timings_from_raw(raw)
    for r, t in zip(raw, timings, strict=True):
        d = t.to_dict()
        assert d["ttft_ns"] == r["first_token_ns"] - r["arrival_ns"]
        decode = r["last_token_ns"] - r["first_token_ns"]
        assert d["tpot_ns"] * (r["tokens"] - 1) + d["e2e_rounding_ns"] == decode
        assert 0 <= d["e2e_rounding_ns"] < r["tokens"] - 1
        assert d["e2e_ns"] == d["ttft_ns"] + (r["tokens"] - 1) * d["tpot_ns"]
        assert d["e2e_ns"] + d["e2e_rounding_ns"] == r["last_token_ns"] - r["arrival_ns"]
        assert all(isinstance(v, int) for v in d.values())
    f = metrics.figures(timings).to_dict()
    wall = max(r["last_token_ns"] for r in raw)
    tokens = sum(r["tokens"] for r in raw)
    assert f["wall_ns"] == wall and f["output_tokens"] == tokens
    if wall:
        assert f["output_tokens_per_s"] == tokens * 1e9 / wall
        assert f["requests_per_s"] == len(raw) * 1e9 / wall
    else:  # every token at time 0: no rate to state
        assert f["output_tokens_per_s"] is None and f["requests_per_s"] is None
    ttft = [r["first_token_ns"] - r["arrival_ns"] for r in raw]
    for p in (50, 90, 99):
        assert f["latency_ns"]["ttft"][f"p{p}"] == nearest_rank(ttft, p)


def test_figures_of_a_hand_made_repetition():
    raw = [  # two batches of two; the second batch waits for the first (offline)
        {"index": 0, "batch": 0, "arrival_ns": 0, "first_token_ns": 100, "last_token_ns": 400,
         "tokens": 4},
        {"index": 1, "batch": 0, "arrival_ns": 0, "first_token_ns": 100, "last_token_ns": 400,
         "tokens": 4},
        {"index": 2, "batch": 1, "arrival_ns": 0, "first_token_ns": 500, "last_token_ns": 1001,
         "tokens": 4},
        {"index": 3, "batch": 1, "arrival_ns": 0, "first_token_ns": 500, "last_token_ns": 1001,
         "tokens": 4},
    ]
    f = metrics.figures(metrics.timings_from_raw(raw))
    assert f.wall_ns == 1001 and f.output_tokens == 16
    assert f.output_tokens_per_s == 16 * 1e9 / 1001
    # tpot: (400-100)//3 = 100 and (1001-500)//3 = 167 (rounding 0 and 0)
    assert f.latencies["tpot"]["p50"] == 100 and f.latencies["tpot"]["p90"] == 167
    assert f.latencies["e2e"]["p99"] == 500 + 3 * 167 == 1001
    assert f.figure("wall") == 1001 and f.figure("ttft_p50") == 100


def test_timestamps_out_of_order_are_refused():
    with pytest.raises(ValueError, match="out of order"):
        metrics.timings_from_raw([{"index": 0, "batch": 0, "arrival_ns": 5,
                                   "first_token_ns": 4, "last_token_ns": 9, "tokens": 3}])


def test_poisson_arrivals_are_seeded_exponential_gaps():
    w = Workload(requests=50, arrival="poisson", rate=20.0, seed=7).validate()
    offsets = arrivals.arrival_offsets_ns(w)
    rng = random.Random(7)
    expected = [0]
    for _ in range(49):
        expected.append(expected[-1] + round(rng.expovariate(20.0) * 1e9))
    assert offsets == expected
    assert offsets == arrivals.arrival_offsets_ns(w)  # same seed, same schedule
    other = arrivals.arrival_offsets_ns(Workload(requests=50, arrival="poisson", rate=20.0,
                                                 seed=8))
    assert other != offsets and other[0] == 0
    assert arrivals.arrival_offsets_ns(Workload(requests=3)) == [0, 0, 0]


def test_prompts_are_seeded_and_warmup_prompts_differ():
    w = Workload(requests=3, prompt_len=5, batch_size=2, seed=1)
    p = arrivals.prompts(w, 100)
    assert p == arrivals.prompts(w, 100) and len(p) == 3 and all(len(x) == 5 for x in p)
    assert all(0 <= t < 100 for x in p for t in x)
    warm = arrivals.prompts(w, 100, warmup=True)
    assert len(warm) == 2 and warm[0] != p[0]


@pytest.mark.parametrize(("kw", "message"), [
    ({"output_len": 1}, "at least 2"),
    ({"arrival": "poisson"}, "needs --rate"),
    ({"rate": 3.0}, "poisson only"),
    ({"arrival": "burst"}, "offline or poisson"),
])
def test_workload_options_are_checked(kw, message):
    with pytest.raises(UsageError, match=message):
        Workload(**kw).validate()


def test_model_and_variant_options_are_checked():
    with pytest.raises(UsageError, match="multiple of --heads"):
        ModelSpec(hidden=100, heads=16).validate()
    with pytest.raises(UsageError, match="expected one of bfloat16"):
        ModelSpec(dtype="int8").validate()
    assert ModelSpec(dtype="bf16").validate().dtype == "bfloat16"
    with pytest.raises(UsageError, match="flag_gems backend only"):
        Variant("A", exclude_ops=("mul",)).validate()
    with pytest.raises(UsageError, match="NAME=VALUE"):
        parse_env(["novalue"])
    assert parse_env(["A=1", "B=x=y"]) == {"A": "1", "B": "x=y"}
    spec = ServeSpec(ModelSpec(), Workload(), Variant("A"), Variant("B", env={"X": "1"}))
    assert [v.label for v in spec.validate().variants] == ["A", "B"]
    assert not spec.b.is_plain_eager and spec.a.is_plain_eager


def test_param_count_matches_a_hand_count():
    m = ModelSpec(layers=2, hidden=64, heads=4, kv_heads=2, intermediate=128, vocab=512)
    head = 16
    per_layer = (64 * 4 * head + 2 * 64 * 2 * head + 4 * head * 64) + 3 * 64 * 128 + 2 * 64
    assert m.params == 2 * 512 * 64 + 2 * per_layer + 64


def test_ab_block_pairs_rounds_and_gives_the_exact_interval():
    """Six rounds at alpha 0.05: k = 1, so the interval runs from the smallest to the
    largest Walsh average, i.e. min(d) .. max(d), at confidence 1 - 2/64."""
    from traceview.serve.runner import ab_block

    def rep(wall, tpot, digest="x"):
        lat = {name: {p: tpot for p in metrics.PERCENTILES} for name in metrics.LATENCIES}
        return {"figures": {"wall_ns": wall, "latency_ns": lat}, "tokens_sha256": digest}

    a_wall = [1000, 1100, 900, 1050, 980, 1010]
    b_wall = [1200, 1290, 1150, 1230, 1200, 1220]
    a = [rep(w, 10) for w in a_wall]
    b = [rep(w, 10 + i, "y" if i == 5 else "x") for i, w in enumerate(b_wall)]
    spec = ServeSpec(ModelSpec(), Workload(), Variant("A"), Variant("B", backend="flag_gems"))
    out = ab_block(spec, a, b)
    wall = out["figures"]["wall"]
    d = [y - x for x, y in zip(a_wall, b_wall, strict=True)]  # 200 190 250 180 220 210
    assert wall["diffs"] == d
    assert (wall["ci_low_ns"], wall["ci_high_ns"]) == (min(d), max(d))
    assert wall["confidence"] == 1 - 2 / 64 and wall["verdict"] == "B slower"
    walsh = sorted((d[i] + d[j]) / 2 for i in range(6) for j in range(i, 6))
    assert len(walsh) == 21 and wall["estimate_ns"] == walsh[10]  # the middle one
    assert wall["b_slower_rounds"] == 6 and wall["b_faster_rounds"] == 0
    tpot = out["figures"]["tpot_p50"]
    assert tpot["diffs"] == [0, 1, 2, 3, 4, 5] and tpot["verdict"] == "cannot tell"
    assert out["same_tokens"] is False  # one B repetition generated other tokens
