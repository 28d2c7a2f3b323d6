"""The call tree counts zero-length calls, as ``host.functions`` does.

A call shorter than the profiler's resolution is recorded with no duration (PARAM's DLRM
ranks: 5 of one step's 23 top-level ``aten::to``). It ran: docs/robustness.md counts
zero-length events, and ``host.functions`` counts them. The tree counts them too, under
the slice that owns their instant (the innermost slice with time around it; none: the
call's top level), with no time of their own.

The expected figures are counted here from the raw events (exact duplicates, which the
loader drops as docs/robustness.md says, counted once): a slice's parent is the
innermost op or runtime call of the thread, in the call, whose span holds it (for a
zero-length one: holds its instant, spans half-open); identical spans nest in the
sweep's documented order (category, then name, the first outermost).
"""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import public_corpus
import pytest
from typer.testing import CliRunner

from tracebuilder import TraceBuilder
from traceview.cli.app import app

runner = CliRunner()
US = 1000
STEP = 1_000 * US
HOST = ("cpu_op", "cuda_runtime", "cuda_driver")
PARAM = "facebookresearch__param/chakra_traces__dlrm_kineto__worker{}_step_12.json.gz"


def _ns(v: Any) -> int:
    """Microseconds as written (read as Decimal: a float loses the ns of an epoch time)."""
    return int(Decimal(str(v)) * 1000)


def _holds(o: dict, e: dict) -> bool:
    """Whether ``o`` is an ancestor of ``e`` (both of one thread)."""
    if o is e or _ns(o["dur"]) == 0:
        return False
    os_, oe = _ns(o["ts"]), _ns(o["ts"]) + _ns(o["dur"])
    es, ee = _ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])
    if es == ee:
        return os_ <= es < oe
    return os_ <= es and ee <= oe and (oe - os_ > ee - es or os_ < es
                                       or (o["cat"], o["name"]) < (e["cat"], e["name"]))


def _top_level(events: list[dict], name: str, step: dict) -> list[dict]:
    """The thread's slices named ``name`` starting in ``step`` with no op or runtime call
    of the thread in the step around them."""
    s0, s1 = _ns(step["ts"]), _ns(step["ts"]) + _ns(step["dur"])
    mine = [e for e in events if e.get("ph") == "X" and e.get("cat") in HOST
            and e["pid"] == step["pid"] and e["tid"] == step["tid"]
            and s0 <= _ns(e["ts"]) < s1]
    return [e for e in mine if e["name"] == name and not any(_holds(o, e) for o in mine)]


def _unique(events: list[dict]) -> list[dict]:
    """The events less exact duplicates (category, name, thread, start, duration and
    correlation alike: the loader keeps one)."""
    seen, out = set(), []
    for e in events:
        if e.get("ph") == "X":
            key = (e.get("cat"), e["name"], e.get("pid"), e.get("tid"), _ns(e["ts"]),
                   _ns(e.get("dur", 0)), (e.get("args") or {}).get("correlation"))
            if key in seen:
                continue
            seen.add(key)
        out.append(e)
    return out


def _node(tree: list[dict], *path: str) -> dict:
    for name in path:
        node = next(n for n in tree if n["name"] == name)
        tree = node["children"]
    return node


def _steps() -> TraceBuilder:
    tb = TraceBuilder()
    for i in range(3):
        o = i * STEP
        tb.annotation(f"ProfilerStep#{i}", o, STEP)
        tb.op("aten::to", o + 10 * US, 20 * US)
        tb.op("aten::_to_copy", o + 12 * US, 16 * US)
        tb.op("aten::to", o + 50 * US, 0)  # no slice around its instant: top level
        tb.op("aten::mul", o + 90 * US, 40 * US)
        tb.op("aten::to", o + 100 * US, 10 * US)
        tb.op("aten::to", o + 120 * US, 0)  # inside aten::mul
        tb.op("aten::to", o + 200 * US, 50 * US)
        tb.op("aten::to", o + 250 * US, 0)  # at the timed one's end: after it, top level
        tb.op("aten::lift_fresh", o + 300 * US, 0)  # only ever zero-length
    return tb


def test_the_tree_counts_zero_length_calls_under_the_slice_owning_their_instant(tmp_path):
    tb = _steps()
    path = tb.write(tmp_path / "t.json")
    res = runner.invoke(app, ["explain", str(path), "-f", "json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    steps = [e for e in tb.events if e["name"].startswith("ProfilerStep#")]
    top = [_top_level(tb.events, "aten::to", s) for s in steps]
    assert {len(t) for t in top} == {4}  # per step: 2 with time, 2 zero-length
    node = _node(d["calls"]["tree"], "aten::to")
    assert node["count"] == 4
    assert node["inclusive_ns"] == sum(_ns(e["dur"]) for e in top[0])  # 70 us: no time added
    under = _node(d["calls"]["tree"], "aten::mul", "aten::to")
    mul = next(e for e in tb.events if e["name"] == "aten::mul")  # the first step's
    held = [e for e in tb.events if e["name"] == "aten::to" and _holds(mul, e)]
    assert under["count"] == len(held) == 2  # one with time, one zero-length
    assert under["inclusive_ns"] == 10 * US
    # host.functions counts every call in the window, the tree one warm call's; the
    # steps are alike, so the tree's counts times the steps are host.functions' count
    host = {f["name"]: f["count"] for f in d["host"]["functions"]}
    raw = sum(1 for e in tb.events if e["name"] == "aten::to")
    assert host["aten::to"] == raw == 18
    assert (node["count"] + under["count"]) * len(steps) == raw


def _corpus(w: int) -> Path:
    path = public_corpus.locate(PARAM.format(w))
    if path is None:
        pytest.skip(f"{PARAM.format(w)} is not in this machine's corpus copy")
    return path


@pytest.mark.parametrize("w", [1, 4])
def test_dlrm_step_tree_counts_the_zero_length_aten_to(w):
    path = _corpus(w)
    with gzip.open(path) as f:
        events = _unique(json.load(f, parse_float=Decimal)["traceEvents"])
    step = next(e for e in events if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#"))
    top = _top_level(events, "aten::to", step)
    zero = [e for e in top if _ns(e["dur"]) == 0]
    assert zero  # the step has zero-length top-level aten::to (6 on rank 1, 5 on rank 4)
    res = runner.invoke(app, ["explain", str(path), "-f", "json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["calls"]["tree_warm_calls"] == 1
    node = _node(d["calls"]["tree"], "aten::to")
    assert node["count"] == len(top)
    assert node["inclusive_ns"] == sum(_ns(e["dur"]) for e in top)
    text = runner.invoke(app, ["explain", str(path), "-f", "md"]).output
    assert f"\naten::to x{len(top)}  " in text


def test_steps_tree_counts_are_the_p50_of_each_steps_count_zero_length_included():
    """HTA's rank-0 trace: 5 training steps, each with tens of zero-length ``aten::to``
    (two of them at one instant, apart by their external id only, kept as one)."""
    name = "facebookresearch__HolisticTraceAnalysis/negative_queue_length_values_check__rank0.json.gz"
    path = public_corpus.locate(name)
    if path is None:
        pytest.skip(f"{name} is not in this machine's corpus copy")
    with gzip.open(path) as f:
        events = _unique(json.load(f, parse_float=Decimal)["traceEvents"])
    steps = [e for e in events if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")]
    res = runner.invoke(app, ["explain", str(path), "-f", "json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["calls"]["tree_warm_calls"] == len(steps) == 5
    for fn in ("aten::to", "aten::add_"):
        per_step = sorted(len(_top_level(events, fn, s)) for s in steps)
        assert any(_ns(e["dur"]) == 0 for s in steps for e in _top_level(events, fn, s))
        assert _node(d["calls"]["tree"], fn)["count"] == per_step[2]  # the p50 of 5
