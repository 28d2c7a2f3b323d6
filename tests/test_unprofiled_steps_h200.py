"""capture_steps on the H200 (``fixtures/steps_h200_llama.json``, written by
``tools/steps_vs_independent.py`` from ``tools/capture_steps_unprofiled_on_gpu.sh``): a
small Llama training loop of two micro-batches per step, its profiled steps read from the
raw ``ProfilerStep#N`` events, and the same step timed by the script alone (no profiler,
no traceview code in its loop) before and after capture_steps."""

from __future__ import annotations

import json
from pathlib import Path

from traceview.stats import median

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "steps_h200_llama.json"
D = json.loads(FIXTURE.read_text())


def test_it_ran_on_the_h200_and_explain_found_every_profiled_step():
    assert D["device"] == "NVIDIA H200" and D["micro_batches"] == 2
    assert len(D["raw_step_walls_ns"]) == D["capture_steps"]["profiled_steps"] == 6
    assert D["explain_step_walls_ns"] == D["raw_step_walls_ns"]


def test_capture_steps_and_the_independent_timer_agree_before_and_after():
    cs, ind = D["capture_steps"], D["independent"]
    before, after = median(ind["independent_before_ns"]), median(ind["independent_after_ns"])
    assert abs(cs["before_ns_p50"] - before) <= 0.10 * before
    assert abs(cs["after_ns_p50"] - after) <= 0.10 * after


def test_the_process_was_slower_after_the_profiler_ran_in_it():
    """Why the step figure is timed before the profiler starts: both timers saw the same
    step run over 20% slower once the profiler had run in the process."""
    cs, ind = D["capture_steps"], D["independent"]
    assert cs["after_ns_p50"] > 1.2 * cs["before_ns_p50"]
    assert median(ind["independent_after_ns"]) > 1.2 * median(ind["independent_before_ns"])


def test_the_profiled_step_is_far_from_the_unprofiled_one_and_the_correction_sums():
    u = D["explain_unprofiled_steps"]
    assert u["profiled_step_ns"] == median([w for w, cold in zip(
        D["raw_step_walls_ns"], D["explain_step_cold"], strict=True) if not cold])
    assert u["profiled_step_ns"] > 1.8 * D["capture_steps"]["before_ns_p50"]
    assert abs(sum(u["phases"].values()) - u["unprofiled_step_ns"]) <= len(u["phases"])
    for phase, ns in u["phases"].items():
        assert ns <= u["profiled_phases"][phase]
