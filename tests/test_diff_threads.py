"""diff matches a function on any thread, and its share column is of the calls the
function runs in.

Each trace here is a tiny Kineto JSON written in the test as raw events (integer
microseconds). The expected figures are counted from those events here: which functions
each trace holds on any thread (by module and name, without line numbers), each
function's per-call time (the union of its intervals inside a call, the nearest-rank p50
over the calls holding it) and the wall time of those calls.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from traceview.multi.codepath import SHARE_HEADER
from traceview.multi.compare import diff_reports, load_report
from traceview.render.registry import RenderOptions, renderer
from traceview.report.claims import check_all

NS = 1_000  # the events' microseconds
FUNCTION_CATS = ("python_function", "cpu_op", "cuda_runtime")


def _x(cat: str, name: str, ts: int, dur: int, tid: int, args: dict | None = None,
       pid: int = 1) -> dict[str, Any]:
    e: dict[str, Any] = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
                         "ts": ts, "dur": dur}
    if args is not None:
        e["args"] = args
    return e


def _thread(tid: int, name: str) -> dict[str, Any]:
    return {"ph": "M", "name": "thread_name", "pid": 1, "tid": tid, "args": {"name": name}}


class _Launches:
    def __init__(self) -> None:
        self.corr = 1000

    def __call__(self, ts: int, tid: int) -> list[dict[str, Any]]:
        """A 2 us launch on ``tid`` and its 3 us kernel 5 us later."""
        self.corr += 1
        return [_x("cuda_runtime", "cudaLaunchKernel", ts, 2, tid, {"correlation": self.corr}),
                _x("kernel", "k", ts + 5, 3, 7, {"device": 0, "stream": 7,
                                                 "correlation": self.corr}, pid=0)]


def _write(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def _identity(name: str) -> str:
    return re.sub(r"\(\d+\): ", ": ", name)


def _on_threads(events: list[dict[str, Any]]) -> dict[str, set[int]]:
    """identity -> the threads it ran on, from the raw events."""
    out: dict[str, set[int]] = {}
    for e in events:
        if e.get("ph") == "X" and e["cat"] in FUNCTION_CATS:
            out.setdefault(_identity(e["name"]), set()).add(e["tid"])
    return out


def _p50(values: list[int]) -> int:
    s = sorted(values)
    return s[(len(s) + 1) // 2 - 1]  # nearest rank


def _per_call(events: list[dict[str, Any]], function: str, tid: int
              ) -> tuple[int, int, int]:
    """(p50 inclusive ns per call, p50 wall ns of those calls, calls holding it): the
    union of ``function``'s intervals on ``tid`` inside each ``call_*`` range there."""
    calls = [(e["ts"] * NS, (e["ts"] + e["dur"]) * NS) for e in events
             if e.get("cat") == "user_annotation" and e["tid"] == tid]
    spans = [(e["ts"] * NS, (e["ts"] + e["dur"]) * NS) for e in events
             if e.get("ph") == "X" and e["tid"] == tid and e["cat"] in FUNCTION_CATS
             and _identity(e["name"]) == function]
    inclusive, walls = [], []
    for c0, c1 in calls:
        covered = {t for s, e in spans if c0 <= s < c1 for t in range(s, min(e, c1), NS)}
        if covered:
            inclusive.append(len(covered) * NS)
            walls.append(c1 - c0)
    return _p50(inclusive), _p50(walls), len(walls)


# --- functions on another thread -------------------------------------------------------

def _autograd_pair(tmp_path: Path) -> tuple[list, list, Path, Path]:
    """Before: the calls are on the autograd thread (it launches everything), and the
    main thread's ``backward`` runs around them; ``aten::only_before`` runs in each call.
    After: one thread, ``backward`` (at another line) inside each call, and
    ``mylib/extra.py: extra`` that before never ran."""
    launch = _Launches()
    before = [_thread(1, "python3"), _thread(2, "pt_autograd_0"),
              _x("python_function", "mylib/train.py(10): backward", 0, 400, 1),
              _x("python_function", "mylib/train.py(30): log_loss", 410, 20, 1)]
    for i in range(4):
        s = 10 + i * 100
        before += [_x("user_annotation", f"call_{i}", s, 50, 2),
                   _x("cpu_op", "autograd::engine::evaluate_function: MulBackward0",
                      s + 5, 30, 2),
                   _x("cpu_op", "aten::only_before", s + 8, 10, 2), *launch(s + 20, 2)]
    after = [_thread(1, "python3")]
    for i in range(4):
        s = 10 + i * 100
        after += [_x("user_annotation", f"call_{i}", s, 50, 1),
                  _x("python_function", "mylib/train.py(12): backward", s + 2, 40, 1),
                  _x("cpu_op", "autograd::engine::evaluate_function: MulBackward0",
                     s + 5, 30, 1),
                  _x("python_function", "mylib/extra.py(3): extra", s + 36, 4, 1),
                  *launch(s + 20, 1)]
    return (before, after, _write(tmp_path / "before.json", before),
            _write(tmp_path / "after.json", after))


def test_a_function_on_another_thread_is_never_new_or_gone(tmp_path):
    before, after, pb, pa = _autograd_pair(tmp_path)
    rb, ra = load_report(pb), load_report(pa)
    assert (rb.host.thread.tid, ra.host.thread.tid) == (2, 1)  # the calls' threads
    d = diff_reports(rb, ra)
    rows = {r["function"]: r for r in d.code_path["functions"]}
    tb, ta = _on_threads(before), _on_threads(after)
    both, only_before, only_after = set(tb) & set(ta), set(tb) - set(ta), set(ta) - set(tb)
    assert "mylib/train.py: backward" in both
    assert only_before == {"aten::only_before", "mylib/train.py: log_loss"}
    assert only_after == {"mylib/extra.py: extra"}
    # in both traces, on whatever thread: never new or gone
    assert not [(f, r["status"]) for f, r in rows.items()
                if f in both and r["status"] in ("new", "gone", "new*", "gone*")]
    back = rows["mylib/train.py: backward"]
    assert back["status"] == "other thread before"
    assert back["before_threads"] == ["main thread [1/1]"] and back["after_threads"] is None
    assert back["before_inclusive_ns_per_call"] is None
    assert back["change_inclusive_ns_per_call"] is None  # its full size is not a change
    inc, wall, n = _per_call(after, "mylib/train.py: backward", 1)
    assert (back["after_inclusive_ns_per_call"], back["after_call_ns_per_call"], n) == \
        (inc, wall, 4) == (40_000, 50_000, 4)
    # only in one trace, on its calls' thread: new and gone, as before
    assert rows["aten::only_before"]["status"] == "gone"
    assert rows["mylib/extra.py: extra"]["status"] == "new"
    # log_loss ran only on before's other thread, outside any call: no row to compare
    assert "mylib/train.py: log_loss" not in rows
    text = renderer("text", "diff").render(d, RenderOptions(width=120))
    line = next(ln for ln in text.splitlines() if "mylib/train.py: backward" in ln)
    assert "(before: on main thread [1/1])" in line and " other " in line
    assert " new " not in line
    md = renderer("md", "diff").render(d, RenderOptions())
    assert ("| `mylib/train.py: backward` (before: on main thread [1/1]) | other thread "
            "before |") in md


def test_the_other_threads_functions_are_in_the_report(tmp_path):
    """explain keeps every other thread's functions (self time, count: the raw events'),
    and a saved report cut to fewer says so: diff then marks new/gone with ``*``."""
    before, _, pb, pa = _autograd_pair(tmp_path)
    rb = load_report(pb)
    (main,) = rb.host.other_threads
    got = {f.name: (f.self_ns, f.count) for f in main.functions}
    mine = [e for e in before if e.get("ph") == "X" and e["tid"] == 1]
    assert got == {e["name"]: (e["dur"] * NS, 1) for e in mine}  # no nesting on it
    assert main.functions_total == len(mine) == 2
    import traceview
    from traceview.multi.codepath import report_functions

    cut = traceview.analyze(pb, traceview.Options(functions_limit=1))
    assert not report_functions(cut).complete
    assert report_functions(rb).complete


# --- the share column ----------------------------------------------------------------

def _two_kinds(tmp_path: Path) -> tuple[list, Path]:
    """Four short calls (10 us: decode steps) and two long ones (100 us, 120 us: prefill
    steps); ``forward`` runs only in the long ones (90 us, 110 us). The trace's p50 call
    is a short one."""
    launch = _Launches()
    events: list[dict[str, Any]] = [_thread(1, "python3")]
    t = 0
    for i, (dur, fwd) in enumerate(((10, 0), (10, 0), (100, 90), (10, 0), (120, 110),
                                    (10, 0))):
        events += [_x("user_annotation", f"call_{i}", t, dur, 1), *launch(t + 1, 1)]
        if fwd:
            events.append(_x("python_function", "mylib/model.py(5): forward", t + 4, fwd, 1))
        t += 200
    return events, _write(tmp_path / "kinds.json", events)


def test_the_share_is_of_the_calls_the_function_runs_in(tmp_path):
    events, path = _two_kinds(tmp_path)
    r = load_report(path)
    walls = sorted(e["dur"] * NS for e in events if e.get("cat") == "user_annotation")
    assert r.calls.count == r.calls.warm_count == 6
    assert r.calls.stats["api_ns"].p50 == _p50(walls) == 10_000  # a short call
    d = diff_reports(r, r)
    row = next(x for x in d.code_path["functions"] if x["function"] == "mylib/model.py: forward")
    inc, wall, n = _per_call(events, "mylib/model.py: forward", 1)
    assert (inc, wall, n) == (90_000, 100_000, 2)
    for side in ("before", "after"):
        assert row[f"{side}_inclusive_ns_per_call"] == inc
        assert row[f"{side}_call_ns_per_call"] == wall
        assert row[f"{side}_share"] == pytest.approx(inc / wall)  # 90%, not 900% of 10 us
    for x in d.code_path["functions"]:  # no row's share is over all of its calls
        assert all(x[f"{s}_share"] is None or x[f"{s}_share"] <= 1 for s in ("before", "after"))
    text = renderer("text", "diff").render(d, RenderOptions(width=120))
    line = next(ln for ln in text.splitlines() if "mylib/model.py: forward" in ln)
    assert line.rstrip().endswith("90% -> 90%") and "900%" not in text
    md = renderer("md", "diff").render(d, RenderOptions())
    assert f"| {SHARE_HEADER} |" in md


def test_the_share_note_is_a_claim_that_holds_and_catches_a_share_of_the_p50_call(tmp_path):
    from traceview.multi.codepath import share_claim
    from traceview.render.diff_report import claims_printed

    _, path = _two_kinds(tmp_path)
    r = load_report(path)
    d = diff_reports(r, r)
    doc = d.as_dict()
    (c,) = [c for c in claims_printed(d) if c.id == "diff-code-share"]
    assert check_all([c], doc) == []
    text = renderer("text", "diff").render(d, RenderOptions(width=200))
    assert c.text in text
    # the old share (of the trace's p50 call): the ratio no longer holds, nor "at most all"
    i = next(i for i, x in enumerate(doc["code_path"]["functions"])
             if x["function"] == "mylib/model.py: forward")
    doc["code_path"]["functions"][i]["before_share"] = 90_000 / 10_000
    doc["code_path"]["functions"][i]["before_call_ns_per_call"] = 10_000
    problems = check_all([share_claim(doc["code_path"])], d.as_dict())
    assert any(f"share:{i}:before" in p for p in problems)
    problems = check_all([share_claim(doc["code_path"])], doc)
    assert any(f"le('share:{i}:before', 'all')" in p for p in problems)


# --- one function at two lines ---------------------------------------------------------

def test_one_identity_at_two_lines_nested_is_counted_once(tmp_path):
    """A model's ``forward`` (line 10) around its block's ``forward`` (line 20), in each
    of four 50 us calls: diff matches both as ``mylib/model.py: forward``, and its time
    per call is the union of their intervals (the block's inside the model's), not their
    sum; self times add up (they are disjoint)."""
    launch = _Launches()
    events: list[dict[str, Any]] = [_thread(1, "python3")]
    for i in range(4):
        s = 10 + i * 100
        events += [_x("user_annotation", f"call_{i}", s, 50, 1),
                   _x("python_function", "mylib/model.py(10): forward", s + 2, 40 + i, 1),
                   _x("python_function", "mylib/model.py(20): forward", s + 5, 30, 1),
                   *launch(s + 6, 1)]
    path = _write(tmp_path / "nested.json", events)
    r = load_report(path)
    row = next(x for x in diff_reports(r, r).code_path["functions"]
               if x["function"] == "mylib/model.py: forward")
    inc, wall, n = _per_call(events, "mylib/model.py: forward", 1)
    assert (inc, wall, n) == (41_000, 50_000, 4)  # p50 of 40, 41, 42, 43 us (nearest rank)
    assert row["before_inclusive_ns_per_call"] == row["after_inclusive_ns_per_call"] == inc
    assert row["before_call_ns_per_call"] == wall
    assert row["before_share"] == pytest.approx(inc / wall)
    # self: the outer's time outside the inner (10 + i us), the inner's 30 us minus the
    # launch under it (2 us): 38 + i us per call
    assert row["before_self_ns_per_call"] == _p50([(38 + i) * NS for i in range(4)])


# --- the order of the rows -------------------------------------------------------------

MOVERS = 14  # more functions that moved than the rows diff keeps


def _thread_move_pair(tmp_path: Path) -> tuple[list, list, Path, Path]:
    """Four calls (400 us) on one thread. Before: ``mylib/m.py: f<i>`` (i < 14) 3 us each,
    and ``mylib/big.py: big`` 100 us, in each call. After: each ``f<i>`` 3 + i + 1 us (all
    moved, by 1 to 14 us), and ``big`` only on a second thread, outside the calls."""
    launch = _Launches()
    sides: list[list[dict[str, Any]]] = []
    for after in (False, True):
        events: list[dict[str, Any]] = [_thread(1, "python3"), _thread(2, "worker")]
        for c in range(4):
            s = c * 500
            events += [_x("user_annotation", f"call_{c}", s, 400, 1), *launch(s + 1, 1)]
            for i in range(MOVERS):
                events.append(_x("python_function", f"mylib/m.py({i + 1}): f{i}",
                                 s + 10 + i * 20, 3 + (i + 1 if after else 0), 1))
            events.append(_x("python_function", "mylib/big.py(1): big", s + 290, 100,
                             2 if after else 1))
        sides.append(events)
    before, after = sides
    return (before, after, _write(tmp_path / "before.json", before),
            _write(tmp_path / "after.json", after))


def test_a_function_that_left_the_calls_thread_ranks_by_its_size(tmp_path):
    """``big`` left the calls' thread: it has no change figure, and ranked as no change it
    fell below the 14 functions that moved, past the rows diff keeps. Ranked by its time
    per call on the side it ran in the calls (counted here from the raw events), it is
    the largest move and the first row."""
    from traceview.multi.codepath import TOP

    before, after, pb, pa = _thread_move_pair(tmp_path)
    d = diff_reports(load_report(pb), load_report(pa))
    rows = d.code_path["functions"]
    assert len(rows) == TOP < MOVERS + 1
    big, wall, n = _per_call(before, "mylib/big.py: big", 1)
    assert (big, n) == (100 * NS, 4)
    moves = {f"mylib/m.py: f{i}": abs(_per_call(after, f"mylib/m.py: f{i}", 1)[0]
                                      - _per_call(before, f"mylib/m.py: f{i}", 1)[0])
             for i in range(MOVERS)}
    assert max(moves.values()) == MOVERS * NS < big
    first = rows[0]
    assert (first["function"], first["status"], first["after_threads"]) == \
        ("mylib/big.py: big", "other thread after", ["worker [1/2]"])
    assert first["before_inclusive_ns_per_call"] == big
    assert first["change_inclusive_ns_per_call"] is None
    # then the functions that moved, biggest move first, as many as the rows left
    expected = sorted(moves, key=lambda f: -moves[f])[:TOP - 1]
    assert [r["function"] for r in rows[1:]] == expected
    assert [abs(r["change_inclusive_ns_per_call"]) for r in rows[1:]] == \
        [moves[f] for f in expected]


KINETO_0 = "pytorch__kineto/samples__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz"
KINETO_4 = "pytorch__kineto/samples__resnet50_num_workers_4__worker0.1623212756351.pt.trace.json.gz"


def test_kineto_resnet50_data_loader_workers_show_aten_div_leaving_the_steps_thread():
    """Kineto's ResNet-50 samples, no data-loader workers against four: ``aten::div`` (the
    input normalization) runs on the steps' thread before and only on another thread
    after. Ranked as no change it fell past the 12 rows behind every function that
    moved; ranked by its time per step before, it is shown, and the rows after the new
    and gone ones stay biggest first."""
    import gzip

    import public_corpus

    paths = [public_corpus.locate(n) for n in (KINETO_0, KINETO_4)]
    if None in paths:
        pytest.skip("the Kineto resnet50 samples are not in this machine's corpus copy")
    pb, pa = paths
    assert pb is not None and pa is not None
    threads = []
    for p in (pb, pa):
        events = json.loads(gzip.decompress(p.read_bytes()))["traceEvents"]
        steps = {(e["pid"], str(e["tid"])) for e in events
                 if str(e.get("name", "")).startswith("ProfilerStep#")}
        div = {(e["pid"], str(e["tid"])) for e in events if e.get("name") == "aten::div"}
        threads.append((steps, div))
    (steps_b, div_b), (steps_a, div_a) = threads
    assert div_b & steps_b and div_a and not div_a & steps_a
    (pid, tid), = div_a
    d = diff_reports(load_report(pb), load_report(pa))
    rows = d.code_path["functions"]
    row = next(r for r in rows if r["function"] == "aten::div")
    assert row["status"] == "other thread after"
    assert row["after_threads"] == [f"python [{pid}/{tid}]"]
    assert row["change_inclusive_ns_per_call"] is None and row["before_inclusive_ns_per_call"]
    rest = [r for r in rows if not r["status"].startswith(("new", "gone"))]

    def size(r: dict[str, Any]) -> int:
        """Its change, or on another thread on one side its time on the other."""
        if r["change_inclusive_ns_per_call"] is not None:
            return abs(r["change_inclusive_ns_per_call"])
        if r["status"].startswith("other thread"):
            return r["before_inclusive_ns_per_call"] or r["after_inclusive_ns_per_call"]
        return 0

    sizes = [size(r) for r in rest]
    assert sizes == sorted(sizes, reverse=True)
