"""The critical path's walk charges a thread's plain segments one after another at once
(``critical_path._Run``): the path it gives (items, edges, every stretch in time order)
must be the path of the walk that charges them one at a time, on generated training
steps (two threads, waits, syncs, launches, two streams) and on HTA's own
``df_index_resolver`` trace, whose five steps are each one run of about 12,000
segments. The one-at-a-time walk is the reference that the other critical-path tests
(``test_training_steps``, ``test_training_invariants``, the public corpus) check against
independent counts."""

from __future__ import annotations

from itertools import pairwise

import public_corpus
import pytest
from hypothesis import HealthCheck, given, settings
from test_training_invariants import training_step

import traceview
from traceview.analyses import critical_path as cp
from traceview.analyses import steps as steps_mod

ONE_AT_A_TIME = 10 ** 12  # RUN_MIN no run reaches


def _paths(path, monkeypatch, run_min: int) -> list[cp.CriticalPath]:
    """Every step's critical path of the trace, walked with runs from ``run_min`` on."""
    got: list[cp.CriticalPath] = []

    def keep(*a, **k):
        p = cp.critical_path(*a, **k)
        got.append(p)
        return p

    with monkeypatch.context() as m:
        m.setattr(cp, "RUN_MIN", run_min)
        m.setattr(steps_mod, "critical_path", keep)
        traceview.analyze(path)
    return got


def _same_and_whole(runs: list[cp.CriticalPath], ref: list[cp.CriticalPath]) -> None:
    assert len(runs) == len(ref) > 0
    for p, q in zip(runs, ref, strict=True):
        assert not any(isinstance(x, cp._Run) for x in q.pieces)
        assert (p.start_ns, p.end_ns, p.items, p.edges) == (q.start_ns, q.end_ns, q.items, q.edges)
        assert p.stretches == q.stretches
        # the stretches tile the step, in time order, each charged once
        assert p.stretches[0][3] == p.start_ns and p.stretches[-1][4] == p.end_ns
        assert all(a[4] == b[3] for a, b in pairwise(p.stretches))
        assert all(type(s[3]) is type(s[4]) is int and (s[5] is None or type(s[5]) is int)
                   for s in p.stretches)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tb=training_step())
def test_runs_give_the_one_at_a_time_path_on_generated_steps(tmp_path_factory, monkeypatch, tb):
    path = tb.write(tmp_path_factory.mktemp("runs") / "t.json")
    runs = _paths(path, monkeypatch, 1)  # every plain segment in a run: the most bulk
    _same_and_whole(runs, _paths(path, monkeypatch, ONE_AT_A_TIME))
    assert any(isinstance(x, cp._Run) for p in runs for x in p.pieces)
    _same_and_whole(_paths(path, monkeypatch, 3), _paths(path, monkeypatch, ONE_AT_A_TIME))


@pytest.mark.slow
def test_runs_give_the_one_at_a_time_path_on_hta_df_index_resolver(monkeypatch):
    name = "facebookresearch__HolisticTraceAnalysis/df_index_resolver.json.gz"
    path = public_corpus.locate(name)
    if path is None:
        pytest.skip(f"{name} is not in this machine's corpus copy")
    runs = _paths(path, monkeypatch, cp.RUN_MIN)
    _same_and_whole(runs, _paths(path, monkeypatch, ONE_AT_A_TIME))
    # each step's path is mostly one run: at most a few pieces per step
    assert len(runs) == 5
    assert all(len(p.pieces) < 10 < len(p.stretches) // 1000 for p in runs)
