"""``explain`` is a pure function of the ``Trace`` it is given.

The profiler's damage (wrong-typed metadata, implausible device work, Python frames
outliving their caller) is repaired once, when the trace is built (``traceview.model``),
so no analysis writes to the trace. The property: on every fixture, any sequence of
``explain`` calls with various ``Options`` on one loaded ``Trace`` gives, call by call,
what a fresh ``analyze`` of the file with the same options gives, and leaves the trace
exactly as loaded. The reference is a fresh load per option set, so an explain that
leaned on an earlier one's writes would differ from it.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import traceview
from conftest import FIXTURE_NAMES, ROOT
from traceview.analyses.window import activity_window
from traceview.errors import UsageError
from traceview.model import ACTIVITY_CATS, Trace, clip_to_callers
from traceview.report.schema import to_json

# the trace's own state; a cache of derived data (the name ranks, the launches'
# work table) may be added
CACHES = {"_name_rank", "_launch_table"}


def option_pool(trace: Trace) -> list[traceview.Options]:
    """Options that change what the analyses read: a narrower window (the middle third,
    which cuts through calls and frames), a deeper call level, a calls regex, another
    thread with activity of its own, and the default."""
    w = activity_window(trace)
    third = max(w.dur_ns // 3, 1)
    pool = [traceview.Options(), traceview.Options(window=f"{third}ns:{2 * third}ns"),
            traceview.Options(calls_depth=2), traceview.Options(calls="aten::")]
    active = trace.rows_of_cats(ACTIVITY_CATS)
    counts = np.bincount(trace.slices.lane[active], minlength=len(trace.lanes))
    busy = sorted((lane for lane in trace.host_lanes if counts[lane.index]),
                  key=lambda lane: (-counts[lane.index], lane.index))
    if len(busy) > 1:  # the second busiest thread: not the one picked by default
        pool.append(traceview.Options(thread=f"{busy[1].pid}/{busy[1].tid}"))
    return pool


def outcome(run) -> bytes | str:
    """The JSON report, or the one-line refusal (an option may not apply to a trace)."""
    try:
        return to_json(run())
    except UsageError as exc:
        return f"UsageError: {exc}"


def state(trace: Trace) -> dict:
    """Everything the trace holds, copied, and the identity of its columns."""
    s = trace.slices
    return {
        "columns": {k: (id(getattr(s, k)), getattr(s, k).copy())
                    for k in ("cat", "name", "lane", "start", "end", "corr")},
        "slices": id(s), "args": id(s.args), "args_len": len(s.args),
        "metadata": copy.deepcopy(dict(trace.metadata)),
        "diagnostics": list(trace.diagnostics),
        "links": (dict(trace.launch_to_work), dict(trace.work_to_launch)),
        "names": list(trace.names), "cats": list(trace.cat_names), "lanes": list(trace.lanes),
        "keys": set(trace.__dict__) - CACHES,
    }


def assert_same_state(before: dict, after: dict) -> None:
    for k, (ident, col) in before["columns"].items():
        assert after["columns"][k][0] == ident, f"slices.{k} replaced"
        assert np.array_equal(after["columns"][k][1], col), f"slices.{k} written"
    for key in ("slices", "args", "args_len", "metadata", "diagnostics", "links", "names",
                "cats", "lanes", "keys"):
        assert after[key] == before[key], key


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_any_sequence_of_explains_gives_fresh_analyses(name, fixture_reports, monkeypatch):
    monkeypatch.chdir(ROOT)  # the path the shared default reports were analysed from
    path = Path("fixtures") / name
    trace = traceview.load(path)
    loaded = state(trace)
    pool = option_pool(trace)
    fresh: dict[int, bytes | str] = {}

    def reference(i: int) -> bytes | str:
        if i not in fresh:
            fresh[i] = (to_json(fixture_reports[name]) if i == 0 else
                        outcome(lambda: traceview.analyze(path, pool[i])))
        return fresh[i]

    @settings(max_examples=3, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=3))
    def sequence(picks: list[int]) -> None:
        for i in picks:
            got = outcome(lambda i=i: traceview.explain(trace, pool[i]))
            assert got == reference(i), f"{name}: explain with {pool[i]} after {picks} differs"
        assert_same_state(loaded, state(trace))

    sequence()


def test_the_compiled_clip_is_the_reference_loop():
    """``clip_to_callers`` (compiled when built) against its plain loop, on nested,
    overhanging and touching frames."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 40))
        st_ = np.sort(rng.integers(0, 100, n))
        en = st_ + rng.integers(0, 60, n)
        order = np.lexsort((-en, st_))
        st_, en = st_[order], en[order]
        assert np.array_equal(clip_to_callers(st_, en), clip_to_callers(st_, en, general=True))


def test_frames_are_clipped_alike_in_start_order_or_not(tmp_path):
    """The build skips the sort of a thread's frames when their starts already strictly
    increase (as a profiler writes them); written in reverse the frames are sorted
    first. Either way each frame overhanging its caller ends at its caller's end: an
    outer frame [0, 100), a child [10, 150) clipped to 100, its child [20, 130) clipped
    to 100 too, and a later frame [200, 260) with a child [210, 300) clipped to 260."""
    from tracebuilder import TraceBuilder

    frames = [("outer", 0, 100), ("child", 10, 140), ("grandchild", 20, 110),
              ("later", 200, 60), ("late_child", 210, 90)]
    want = {"outer": 100, "child": 100, "grandchild": 100, "later": 260, "late_child": 260}
    got = []
    for order in (frames, frames[::-1]):
        tb = TraceBuilder()
        for name, start, dur in order:
            tb.py(name, start * 1_000, dur * 1_000)
        trace = traceview.load(tb.write(tmp_path / f"t{len(got)}.json"))
        s = trace.slices
        ends = {trace.names[int(s.name[r])]: int(s.end[r]) // 1_000 for r in range(len(s))}
        assert ends == want
        got.append(next(d for d in trace.diagnostics if d.code == "python-frame-overhang"))
    assert got[0] == got[1] and got[0].count == 3


def test_a_narrowed_explain_then_a_default_one_on_the_cold_compile_trace():
    """The case that showed the writes: 64 Python frames overhang their caller on the real
    cold-compile trace; a narrowed explain first must not change what the default one
    reports (the overhang diagnostic, the calls)."""
    path = Path(ROOT) / "fixtures" / "large" / "compiled_fn_cold_then_warm.json.gz"
    trace = traceview.load(path)
    loaded = state(trace)
    w = activity_window(trace)
    traceview.explain(trace, traceview.Options(window=f"0ns:{w.dur_ns // 4}ns"))
    again = traceview.explain(trace)
    assert to_json(again) == to_json(traceview.analyze(path))
    d = next(g for g in again.diagnostics if g.code == "python-frame-overhang")
    assert d.count == 64
    assert_same_state(loaded, state(trace))


def test_a_diagnostic_an_analysis_finds_is_returned_not_written_to_the_trace(
        tmp_path, monkeypatch):
    """More host threads than are attributed one by one: the analysis says so in a
    diagnostic (``threads-over-limit``), which reaches every report of the trace and
    never the trace itself. Four threads with work of their own, the limit lowered to
    two: two are left out."""
    from tracebuilder import TraceBuilder
    from traceview.report import explanation

    monkeypatch.setattr(explanation, "MAX_HOST_THREADS", 2)
    t = TraceBuilder()
    for tid in range(4):
        for i in range(3):
            t0 = 1_000_000 + i * 100_000 + tid * 1_000
            t.op("aten::mul", t0, 20_000 + tid, tid=100 + tid)
    t.launched_kernel("k", 1_000_500, 2_000, 1_010_000, 3_000)
    path = t.write(tmp_path / "threads.json")
    trace = traceview.load(path)
    loaded = state(trace)
    first = traceview.explain(trace)
    narrowed = outcome(lambda: traceview.explain(trace, traceview.Options(
        window=f"0ns:{activity_window(trace).dur_ns // 2}ns")))
    again = traceview.explain(trace)
    left_out = [d for d in first.diagnostics if d.code == "threads-over-limit"]
    assert [d.count for d in left_out] == [2]
    assert to_json(again) == to_json(first) == to_json(traceview.analyze(path))
    assert narrowed == outcome(lambda: traceview.analyze(path, traceview.Options(
        window=f"0ns:{activity_window(trace).dur_ns // 2}ns")))
    assert not any(d.code == "threads-over-limit" for d in trace.diagnostics)
    assert_same_state(loaded, state(trace))


def test_the_trace_is_frozen_and_its_columns_read_only():
    import dataclasses

    trace = traceview.load(Path(ROOT) / "fixtures" / "torch_mul_1x4096_f32.json.gz")
    with pytest.raises(dataclasses.FrozenInstanceError):
        trace.slices = trace.slices  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        trace.slices.end = trace.slices.start  # type: ignore[misc]
    for k in ("cat", "name", "lane", "start", "end", "corr"):
        col = getattr(trace.slices, k)
        assert not col.flags.writeable, k
        with pytest.raises(ValueError):
            col[:1] = 0
    assert isinstance(trace.diagnostics, tuple)


def _trace_with_links() -> Trace:
    trace = traceview.load(Path(ROOT) / "fixtures" / "torch_mul_1x4096_f32.json.gz")
    assert trace.launch_to_work and trace.work_to_launch and trace.metadata  # something to change
    return trace


@pytest.mark.parametrize("mutate", [
    lambda t: t.names.append("x"),
    lambda t: t.names.__setitem__(0, "x"),
    lambda t: t.cat_names.append("x"),
    lambda t: t.cat_names.__setitem__(0, "x"),
    lambda t: t.lanes.append(t.lanes[0]),
    lambda t: t.lanes.__setitem__(0, t.lanes[0]),
    lambda t: t.metadata.__setitem__("x", 1),
    lambda t: t.metadata.pop(next(iter(t.metadata))),
    lambda t: t.metadata.update(x=1),
    lambda t: t.launch_to_work.__setitem__(-1, (0,)),
    lambda t: t.launch_to_work[next(iter(t.launch_to_work))].append(0),
    lambda t: t.launch_to_work.__delitem__(next(iter(t.launch_to_work))),
    lambda t: t.work_to_launch.__setitem__(-1, 0),
    lambda t: t.work_to_launch.clear(),
], ids=["names.append", "names[0]=", "cat_names.append", "cat_names[0]=", "lanes.append",
        "lanes[0]=", "metadata[k]=", "metadata.pop", "metadata.update", "launch_to_work[k]=",
        "launch_to_work[k].append", "del launch_to_work[k]", "work_to_launch[k]=",
        "work_to_launch.clear"])
def test_the_trace_s_names_lanes_metadata_and_links_cannot_be_written(mutate):
    """Every container a Trace holds raises when written, as its columns do: an
    analysis cannot change what the next explain of the same trace reads."""
    trace = _trace_with_links()
    before = state(trace)
    with pytest.raises((TypeError, AttributeError)):
        mutate(trace)
    assert_same_state(before, state(trace))


def test_a_trace_made_from_lists_and_dicts_holds_frozen_copies():
    """A Trace built by hand from mutable containers copies them frozen: the caller's
    dict or list, changed later, does not change the trace."""
    import pickle

    loaded = _trace_with_links()
    names, meta = list(loaded.names), dict(loaded.metadata)
    links = {k: list(v) for k, v in loaded.launch_to_work.items()}
    trace = Trace(path=loaded.path, metadata=meta, cat_names=list(loaded.cat_names),
                  names=names, lanes=list(loaded.lanes), slices=loaded.slices,
                  launch_to_work=links, work_to_launch=dict(loaded.work_to_launch))
    names.append("later")
    meta["later"] = 1
    next(iter(links.values())).append(-1)
    assert trace.names == loaded.names and dict(trace.metadata) == dict(loaded.metadata)
    assert dict(trace.launch_to_work) == dict(loaded.launch_to_work)
    assert isinstance(trace.names, tuple) and isinstance(trace.lanes, tuple)
    again = pickle.loads(pickle.dumps(trace))  # a read-only view pickles as its dict
    assert again.names == trace.names and dict(again.launch_to_work) == dict(trace.launch_to_work)
    with pytest.raises(TypeError):
        again.metadata["x"] = 1  # type: ignore[index]


def test_links_taken_from_flows_are_made_before_the_columns_are_frozen(tmp_path):
    """A launch and its kernel without ``args.correlation``, joined by an ac2g flow (the
    start on the launch, the end on the kernel): the model links them on its own copy of
    the column, before it is made read-only."""
    from tracebuilder import TraceBuilder, _Us

    t = TraceBuilder()
    t._x("cuda_runtime", "cudaLaunchKernel", 1_000_000, 5_000, t.pid, t.tid, {})
    t.kernel("k", 1_010_000, 3_000)
    t.raw({"ph": "s", "id": 77, "cat": "ac2g", "name": "ac2g", "pid": t.pid, "tid": t.tid,
           "ts": _Us(1_000_000)})
    t.raw({"ph": "f", "id": 77, "cat": "ac2g", "name": "ac2g", "pid": 0, "tid": 7,
           "ts": _Us(1_010_000), "bp": "e"})
    trace = traceview.load(t.write(tmp_path / "flows.json"))
    s = trace.slices
    launch = next(r for r in range(len(s)) if trace.names[int(s.name[r])] == "cudaLaunchKernel")
    kernel = next(r for r in range(len(s)) if trace.names[int(s.name[r])] == "k")
    assert int(s.corr[launch]) == int(s.corr[kernel]) == 77
    assert dict(trace.launch_to_work) == {launch: (kernel,)}
    assert not s.corr.flags.writeable


@pytest.mark.parametrize("name", ["torch_mul_1x4096_f32.json.gz", "shape_loop_two_ops.json.gz",
                                  "generate_llama_16_tokens.json.gz"])
def test_launch_work_is_each_launch_s_links_counted_and_in_order(name):
    """``Trace.launch_work`` (arrays from a cached table) against the links themselves:
    per row its count of device work and the rows, launch after launch, for every launch,
    rows that launched nothing, repeats and any order; a trace without links gives
    zeros."""
    trace = traceview.load(Path(ROOT) / "fixtures" / name)
    ltw = trace.launch_to_work
    assert ltw
    launches = list(ltw)
    others = [r for r in range(0, len(trace.slices), 7) if r not in ltw][:200]
    for rows in (launches, launches[::-1], others + launches[:5] + launches[:5], [],
                 [launches[0]]):
        counts, work = trace.launch_work(np.asarray(rows, np.int64))
        assert counts.tolist() == [len(ltw.get(r, ())) for r in rows]
        assert work.tolist() == [w for r in rows for w in ltw.get(r, ())]
    bare = replace(trace, launch_to_work={}, work_to_launch={})
    counts, work = bare.launch_work(np.asarray(launches[:3], np.int64))
    assert counts.tolist() == [0] * min(3, len(launches)) and work.size == 0
