"""diff says what it can tell: one call against one has no interval ("cannot tell"), a
function in both traces is matched by its identity (module and name, whatever its line
or where the checkout lies), and device work with no launch record is counted and said.

Every trace here is written by ``tracebuilder`` with known durations; the expected
figures are those durations.
"""

from __future__ import annotations

from pathlib import Path

import traceview
from tracebuilder import TraceBuilder
from traceview.multi.compare import diff_reports, profiled_line
from traceview.render.registry import RenderOptions, renderer


def one_call(tmp_path: Path, name: str, dur: int) -> Path:
    tb = TraceBuilder()
    tb.annotation("call_0", 0, dur)
    tb.launched_kernel("k", 1_000, 500, 2_000, 800)
    return tb.write(tmp_path / name)


def test_one_call_against_one_has_no_interval(tmp_path):
    opts = traceview.Options(calls="^call_0$")  # one range: the call, chosen by --calls
    before = traceview.analyze(one_call(tmp_path, "a.json", 9_000), opts)
    after = traceview.analyze(one_call(tmp_path, "b.json", 4_590), opts)
    assert before.calls.count == after.calls.count == 1
    d = diff_reports(before, after)
    api = next(c for c in d.comparisons if c.metric == "calls.api_ns.p50")
    assert (api.before, api.after, api.delta) == (9_000, 4_590, 4_590 - 9_000)
    assert api.ci_low is None and api.ci_high is None and not api.significant
    line = profiled_line(d)
    assert "cannot be told from noise" in line and "1 against 1 calls: no interval" in line
    text = renderer("text", "diff").render(d, RenderOptions(width=120))
    assert "[-4.41 us, -4.41 us]" not in text and "cannot tell" in text


def loop(tmp_path: Path, name: str, root: str, line: int, work: int, *,
         step_encloses: bool) -> Path:
    """Four ``call_#`` ranges of 5 us; in each, ``mylib.core.work`` for ``work`` ns. The
    checkout lies at ``root`` (an editable install: absolute paths), ``work`` at
    ``line``. ``mylib.loop.step`` either encloses all four calls or runs 1 us in each."""
    tb = TraceBuilder()
    if step_encloses:
        tb.py(f"{root}/src/mylib/loop.py(5): step", 0, 4 * 20_000)
    for i in range(4):
        s = 1_000 + i * 20_000
        tb.annotation(f"call_{i}", s, 5_000)
        tb.py(f"{root}/src/mylib/core.py({line}): work", s + 100, work)
        if not step_encloses:
            tb.py(f"{root}/src/mylib/loop.py(5): step", s + 200 + work, 1_000)
        tb.launched_kernel("k", s + 150, 300, s + 1_000, 800)
    return tb.write(tmp_path / name)


def test_functions_are_matched_by_module_and_name(tmp_path):
    before = traceview.analyze(loop(tmp_path, "a.json", "/home/a/proj", 10, 3_000,
                                    step_encloses=True))
    after = traceview.analyze(loop(tmp_path, "b.json", "/root/b/checkout", 12, 2_000,
                                   step_encloses=False))
    rows = {r["function"].rsplit(": ", 1)[-1]: r for r in
            diff_reports(before, after).code_path["functions"]}
    work = rows["work"]
    # another checkout path, another line: the same function, moved by -1 us per call
    assert work["status"] == "moved" and work["family"] == "mylib.core"
    assert (work["before_inclusive_ns_per_call"], work["after_inclusive_ns_per_call"],
            work["change_inclusive_ns_per_call"]) == (3_000, 2_000, -1_000)
    # step is in both traces: around the calls before, 1 us in each after; never "new"
    step = rows["step"]
    assert step["status"] == "outside calls before", step
    assert step["after_inclusive_ns_per_call"] == 1_000
    assert step["change_inclusive_ns_per_call"] is None


def test_a_trace_against_itself_moves_no_function(tmp_path):
    """diff of a trace with itself: every function is in both with the same figure per
    call (``work``: 3,000 ns in each of the four calls, as written), so its status says
    it is the same; "moved" beside a change of 0 ns contradicted the change."""
    path = loop(tmp_path, "a.json", "/home/a/proj", 10, 3_000, step_encloses=False)
    r = traceview.analyze(path)
    d = diff_reports(r, r)
    rows = {row["function"].rsplit(": ", 1)[-1]: row for row in d.code_path["functions"]}
    work = rows["work"]
    assert (work["before_inclusive_ns_per_call"], work["after_inclusive_ns_per_call"],
            work["change_inclusive_ns_per_call"], work["status"]) == (3_000, 3_000, 0, "same")
    assert {row["status"] for row in d.code_path["functions"]} == {"same"}
    assert d.code_path["families"] and all(f["status"] == "same" for f in d.code_path["families"])
    text = renderer("text", "diff").render(d, RenderOptions(width=80))
    assert " moved " not in text


def zero_length_loop(tmp_path: Path, name: str, helper_ns: int) -> Path:
    """Four calls, each running ``mylib/core.py(3): work`` (3 us) which calls
    ``<built-in function check>`` twice, each lasting ``helper_ns`` (0: recorded as a
    zero-length slice, as the profiler writes a call under its 1 us resolution)."""
    tb = TraceBuilder()
    for i in range(4):
        s = 10_000 * i
        tb.annotation(f"call_{i}", s, 5_000)
        tb.py("mylib/core.py(3): work", s + 100, 3_000)
        tb.py("<built-in function check>", s + 200, helper_ns)
        tb.py("<built-in function check>", s + 1_200, helper_ns)
        tb.launched_kernel("k", s + 2_000, 300, s + 2_500, 800)
    return tb.write(tmp_path / name)


def test_a_function_recorded_only_zero_length_is_in_both_traces(tmp_path):
    """A function that ran in every call of both traces, recorded with time in one and
    only as zero-length slices in the other, is the same function in both: moved by its
    time per call, never "gone" (a real pair of traces called such functions new and
    gone). Its count is every slice of it, zero-length ones included."""
    before = traceview.analyze(zero_length_loop(tmp_path, "a.json", 500))
    after = traceview.analyze(zero_length_loop(tmp_path, "b.json", 0))
    check = next(f for f in after.host.functions if f.name == "<built-in function check>")
    # as written: 2 slices in each of 4 calls, no time
    assert (check.count, check.total_ns, check.self_ns) == (8, 0, 0)
    rows = {r["function"]: r for r in diff_reports(before, after).code_path["functions"]}
    row = rows["<built-in function check>"]
    # 2 x 500 ns per call before, none after
    assert (row["status"], row["before_inclusive_ns_per_call"], row["after_inclusive_ns_per_call"],
            row["change_inclusive_ns_per_call"]) == ("moved", 1_000, 0, -1_000)
    assert not {r["status"] for r in rows.values()} & {"new", "gone", "new*", "gone*"}


def test_a_trace_against_itself_lists_its_biggest_functions_first(tmp_path):
    """Against itself every function changes by 0 ns: the rows shown are then the
    biggest per call, never the first names in the alphabet (a real self-diff listed
    1 us builtins while the call's 800 us forward was cut off)."""
    tb = TraceBuilder()
    sizes = {"mylib/a.py(1): a_small": 1_000, "mylib/b.py(1): b_mid": 2_000,
             "mylib/c.py(1): c_big": 3_000}
    for i in range(4):
        s = 20_000 * i
        tb.annotation(f"call_{i}", s, 10_000)
        t = s + 100
        for name, dur in sizes.items():
            tb.py(name, t, dur)
            t += dur + 100
        tb.launched_kernel("k", t, 300, t + 500, 800)
    r = traceview.analyze(tb.write(tmp_path / "a.json"))
    d = diff_reports(r, r)
    rows = [(row["function"].rsplit(": ", 1)[-1], row["before_inclusive_ns_per_call"])
            for row in d.code_path["functions"] if row["function"].startswith("mylib/")]
    assert rows == sorted(((n.rsplit(": ", 1)[-1], ns) for n, ns in sizes.items()),
                          key=lambda x: -x[1])
    fams = [(f["family"], f["before_ns_per_call"]) for f in d.code_path["families"]
            if f["family"].startswith("mylib.")]
    assert fams == [("mylib.c", 3_000), ("mylib.b", 2_000), ("mylib.a", 1_000)]


def test_device_work_without_launch_records_is_counted_and_said(tmp_path, analyze_builder):
    """Four calls of 10 us; each launches a 1 us kernel, and a 3 us kernel with no launch
    record (its correlation dropped) runs inside it: the call's device work is the union
    of both, 4 us, not the 1 us the launch record alone claims."""
    tb = TraceBuilder()
    for i in range(4):
        s = i * 20_000
        tb.annotation(f"call_{i}", s, 10_000)
        tb.launched_kernel("k", s + 1_000, 500, s + 2_000, 1_000)
        tb.kernel("orphan", s + 4_000, 3_000)  # no correlation: no launch record
    r = analyze_builder(tb)
    assert r.launches.unlinked_device_work == 4
    assert [c.metrics["kernel_ns"] for c in r.calls.per_call] == [1_000 + 3_000] * 4
    plain = TraceBuilder()
    for i in range(4):
        s = i * 20_000
        plain.annotation(f"call_{i}", s, 10_000)
        plain.launched_kernel("k", s + 1_000, 500, s + 2_000, 1_000)
    d = diff_reports(analyze_builder(plain), r)
    assert any("no launch record: 0 item(s) before, 4 after" in w for w in d.warnings)
    k = next(c for c in d.comparisons if c.metric == "calls.kernel_ns.p50")
    assert (k.before, k.after) == (1_000, 4_000)


def test_a_side_with_no_warm_call_is_not_said_to_have_one(tmp_path):
    """A side whose one call lost a device record has no warm call (it is incomplete);
    diff compares its every call, and the no-interval line does not call them warm (a
    real H100 step with 22 launches missing records was said "1 against 1 warm calls")."""
    tb = TraceBuilder()
    tb.annotation("call_0", 0, 9_000)
    tb.launch(1_000, 500)  # no device record
    tb.launched_kernel("k", 2_000, 500, 3_000, 800)
    events = tb.events
    kernels = {e["args"]["correlation"] for e in events if e["cat"] == "kernel"}
    assert any(e["cat"] in ("cuda_runtime", "cuda_driver")
               and e["args"]["correlation"] not in kernels for e in events)
    opts = traceview.Options(calls="^call_0$")
    before = traceview.analyze(tb.write(tmp_path / "a.json"), opts)
    after = traceview.analyze(one_call(tmp_path, "b.json", 4_590), opts)
    assert before.calls.warm_count == 0 and after.calls.warm_count == 1
    line = profiled_line(diff_reports(before, after))
    assert "(1 against 1 calls: no interval)" in line and "warm" not in line


def two_calls(tmp_path: Path, name: str, *, lose_one: bool) -> Path:
    """Two 9 us ``call_#`` ranges, each one launch of an 800 ns kernel; with ``lose_one``
    the second call's kernel record is missing (that call is incomplete, not compared)."""
    tb = TraceBuilder()
    for i in range(2):
        t = i * 20_000
        tb.annotation(f"call_{i}", t, 9_000)
        if lose_one and i == 1:
            tb.launch(t + 1_000, 500)
        else:
            tb.launched_kernel("k", t + 1_000, 500, t + 2_000, 800)
    return tb.write(tmp_path / name)


def test_fewer_calls_compared_than_traced_are_told_apart(tmp_path):
    """Two calls a side, one of the after side's incomplete: 2 against 1 compared, 2 vs 2
    in all; the sentence says which count is which."""
    opts = traceview.Options(calls="^call_")
    before = traceview.analyze(two_calls(tmp_path, "a.json", lose_one=False), opts)
    after = traceview.analyze(two_calls(tmp_path, "b.json", lose_one=True), opts)
    assert (before.calls.warm_count, after.calls.warm_count) == (2, 1)
    assert before.calls.count == after.calls.count == 2
    line = profiled_line(diff_reports(before, after))
    assert "(2 against 1 calls compared: no interval)" in line
    assert line.endswith("; 2 vs 2 calls in all")


def test_hta_trace_compare_tells_compared_calls_from_all():
    """HTA's trace_compare pair: two calls a side, one of the after side's not compared
    (counted from the two reports' warm calls, as the sentence's pairs are)."""
    import public_corpus
    import pytest

    paths = [public_corpus.locate(f"facebookresearch__HolisticTraceAnalysis/trace_compare__{s}"
                                  f"__{s}.json.gz") for s in ("base", "test")]
    if None in paths:
        pytest.skip("HTA's trace_compare pair is not in this machine's corpus copy")
    before, after = (traceview.analyze(p) for p in paths)
    counts = (before.calls.count, after.calls.count)
    compared = (before.calls.warm_count or before.calls.count,
                after.calls.warm_count or after.calls.count)
    assert compared != counts
    line = profiled_line(diff_reports(before, after))
    assert f"({compared[0]} against {compared[1]} calls compared: no interval)" in line
    assert line.endswith(f"; {counts[0]} vs {counts[1]} calls in all")


def cpu_steps(tmp_path: Path, name: str, walls: list[int]) -> Path:
    """A CPU-only run: ``ProfilerStep#N`` ranges of the walls given, each holding an
    ``aten::mm`` of half its wall; no kernel, memcpy or memset anywhere."""
    tb = TraceBuilder()
    s = 0
    for i, w in enumerate(walls):
        tb.annotation(f"ProfilerStep#{i + 1}", s, w)
        tb.op("aten::mm", s + 100, w // 2)
        s += w + 1_000
    return tb.write(tmp_path / name)


def test_cpu_only_sides_compare_no_device_idle(tmp_path):
    """With no device work on either side there is no host overhead (device idle) and no
    sync wait per call to compare: both are null (``-`` in the text), as explain says "no
    device work, so no host overhead"; the wall is still compared, p50 the middle
    of the three walls written on each side (12,000 and 9,000 ns)."""
    before = traceview.analyze(cpu_steps(tmp_path, "a.json", [10_000, 12_000, 14_000]))
    after = traceview.analyze(cpu_steps(tmp_path, "b.json", [8_000, 9_000, 11_000]))
    assert before.device.busy_ns == after.device.busy_ns == 0
    assert before.calls.source == after.calls.source == "profiler_steps"
    d = diff_reports(before, after)
    got = {c.metric: (c.before, c.after) for c in d.comparisons}
    assert got["calls.api_ns.p50"] == (12_000, 9_000)
    assert got["calls.host_overhead_ns.p50"] == got["calls.sync_ns.p50"] == (None, None)
    text = renderer("text", "diff").render(d, RenderOptions(width=120))
    (row,) = [ln for ln in text.splitlines() if "host overhead (device idle)" in ln]
    assert "-" in row and "us" not in row and "ns" not in row, row
