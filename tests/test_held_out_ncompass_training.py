"""The held-out nCompass trace (its SDK's basic example: a small net trained with Adam on an
NVIDIA H100 NVL, with_stack and record_shapes; one ``ProfilerStep#2`` range holding ten
iterations). The SDK wraps source lines in ranges named by their line numbers:
``user_annotated: null.train_simple_network:59-60`` once (set-up), ``...:67-67`` ten times
(the forward and loss) and ``...:72-72`` ten times (``loss.backward()``). Those numbers are
line ranges that repeat every iteration, not the numbers of a series of one call.

Counted here from the raw events, with plain interval arithmetic (``tests/rawcount.py``):

* the window (docs/json.md: every duration event but profiler spans, device labels and flow
  records), device busy (the union of kernels, copies and sets), the counts, the kernel and
  copy sums, launches by API and by thread (``launch_apis`` of the rule table, read as data)
  and syncs by thread (the rule table's synchronizing runtime calls);
* the calls: ranges of different names are different code, never one call kind (each kind's
  fastest and slowest call are those of its one name);
* the step (``--calls ProfilerStep``): its wall, and its phases as docs/training.md defines
  them: optimizer the union of ``Optimizer.step#``/``Optimizer.zero_grad#`` ranges, backward
  the union of the main thread's ``torch/_tensor.py: backward`` frames (the autograd thread's
  ``evaluate_function`` work lies inside them, checked here), forward the union of the top
  ``nn.Module:`` frames.

They run only with ``TRACEVIEW_HELD_OUT=1`` and skip where the corpus copy lacks the trace.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import public_corpus
from typer.testing import CliRunner

from rawcount import clip, complete_slices, length, minus, union
from traceview.cli.app import app

NAME = "nCompass-tech__ncompass/examples__basic_example__test_files__test_trace.pt.trace.json.gz"
RULES = json.loads((Path(__file__).resolve().parent.parent / "traceview" / "data"
                    / "default_rules.json").read_text())
LAUNCH = {n for names in RULES["launch_apis"].values() for n in names}
SYNC = re.compile(next(r["name"] for r in RULES["rules"]
                       if r["category"] == "sync" and "cuda_runtime" in r["cats"]))
NOT_WINDOW = {"Trace", "overhead", "gpu_user_annotation", "ac2g"}
WORK = ("kernel", "gpu_memcpy", "gpu_memset")
SERIES = re.compile(r"user_annotated: null\.train_simple_network:\d+-\d+")
runner = CliRunner()


def _path() -> Path:
    return public_corpus.held_out_path(NAME)


def _explain(path: Path, *extra: str) -> dict[str, Any]:
    r = runner.invoke(app, ["explain", str(path), "--format", "json", *extra])
    assert r.exit_code == 0, r.output[:400]
    return json.loads(r.stdout)


def test_ncompass_headline_figures_as_counted():
    path = _path()
    sl = complete_slices(path)
    act = [s for s in sl if s["cat"] not in NOT_WINDOW]
    lo, hi = min(s["s"] for s in act), max(s["e"] for s in act)
    work = [s for s in sl if s["cat"] in WORK]
    rt = [s for s in sl if s["cat"] in ("cuda_runtime", "cuda_driver")]
    want = {
        "window": hi - lo,
        "busy": length(union(clip([[w["s"], w["e"]] for w in work], lo, hi))),
        "counts": tuple(sum(w["cat"] == c for w in work) for c in WORK),
        "kernel_sum": sum(w["e"] - w["s"] for w in work if w["cat"] == "kernel"),
        "copy_sum": sum(w["e"] - w["s"] for w in work if w["cat"] != "kernel"),
        "launches": dict(Counter(r["name"] for r in rt if r["name"] in LAUNCH)),
        "thread_launches": dict(Counter((r["pid"], r["tid"]) for r in rt if r["name"] in LAUNCH)),
        "thread_syncs": dict(Counter((r["pid"], r["tid"]) for r in rt
                                     if r["cat"] == "cuda_runtime" and SYNC.search(r["name"]))),
    }
    assert want["counts"] == (384, 18, 30)  # the count itself, so this can fail
    d = _explain(path)
    dev = d["device"]
    got = {
        "window": d["window"]["dur_ns"], "busy": dev["busy_ns"],
        "counts": (dev["kernel_count"], dev["memcpy_count"], dev["memset_count"]),
        "kernel_sum": dev["kernel_sum_ns"], "copy_sum": dev["copy_sum_ns"],
        "launches": d["launches"]["by_api"],
        "thread_launches": {(t["pid"], t["tid"]): t["launches"] for t in d["threads"] if t["launches"]},
        "thread_syncs": {(t["pid"], t["tid"]): t["syncs"] for t in d["threads"] if t["syncs"]},
    }
    diffs = [f"{k}: traceview {got[k]!r} counted {want[k]!r}" for k in want if got[k] != want[k]]
    assert not diffs, "; ".join(diffs)


def test_ncompass_line_ranges_of_different_lines_are_not_one_call_kind():
    """The calls must not pool the set-up range, the forward ranges and the backward ranges
    as one series: its p50 and its outliers (every backward range, "run_backward took
    851 us more than in nearby calls", nearby being forward ranges) then mean nothing."""
    path = _path()
    sl = complete_slices(path)
    by_name: dict[str, list[int]] = defaultdict(list)
    for s in sl:
        if s["cat"] == "user_annotation" and SERIES.fullmatch(s["name"]):
            by_name[s["name"]].append(s["e"] - s["s"])
    assert {n.rsplit(":", 1)[1]: len(v) for n, v in by_name.items()} == \
        {"59-60": 1, "67-67": 10, "72-72": 10}
    d = _explain(path)
    kinds: dict[str, set[str]] = defaultdict(set)
    for c in d["calls"]["per_call"]:
        kinds[c["kind"]].add(c["name"])
    mixed = {k: sorted(v) for k, v in kinds.items() if len(v) > 1 and all(SERIES.fullmatch(n) for n in v)}
    assert not mixed, f"one call kind holds ranges of different source lines: {mixed}"
    for k in d["calls"]["kinds"]:
        names = kinds.get(k["name"], set())
        if len(names) == 1 and (name := next(iter(names))) in by_name:
            api = k["stats"]["api_ns"]
            assert (api["min"], api["max"]) == (min(by_name[name]), max(by_name[name])), name


def test_ncompass_line_ranges_chosen_by_option_are_a_kind_per_line():
    """``--calls train_simple_network`` takes all 21 ranges: three kinds, one per source
    line, each with its count and its fastest, median (the lower one, docs/json.md) and
    slowest wall as counted from that name's ranges alone."""
    path = _path()
    by_name: dict[str, list[int]] = defaultdict(list)
    for s in complete_slices(path):
        if s["cat"] == "user_annotation" and SERIES.fullmatch(s["name"]):
            by_name[s["name"]].append(s["e"] - s["s"])
    want = {n: (len(v), min(v), sorted(v)[(len(v) + 1) // 2 - 1], max(v)) for n, v in by_name.items()}
    d = _explain(path, "--calls", "train_simple_network")
    got = {k["name"]: (k["count"], k["stats"]["api_ns"]["min"], k["stats"]["api_ns"]["p50"],
                       k["stats"]["api_ns"]["max"]) for k in d["calls"]["kinds"]}
    assert got == want


def test_ncompass_profiler_step_phases_as_counted():
    path = _path()
    sl = complete_slices(path)
    (step,) = [s for s in sl if s["cat"] == "user_annotation"
               and re.fullmatch(r"ProfilerStep#\d+", s["name"])]
    s0, s1, main = step["s"], step["e"], (step["pid"], step["tid"])
    on_main = [s for s in sl if (s["pid"], s["tid"]) == main]
    opt = union(clip([[s["s"], s["e"]] for s in on_main if s["cat"] == "user_annotation"
                      and re.match(r"Optimizer\.(step|zero_grad)#", s["name"])], s0, s1))
    bwd_frames = union(clip([[s["s"], s["e"]] for s in on_main if s["cat"] == "python_function"
                             and re.fullmatch(r"torch/_tensor\.py\(\d+\): backward", s["name"])], s0, s1))
    engine = [[s["s"], s["e"]] for s in sl if s["name"].startswith("autograd::engine::evaluate_function: ")]
    assert len(engine) == 160 and not minus(union(engine), bwd_frames)  # inside the frames
    bwd = minus(bwd_frames, opt)
    fwd = minus(union(clip([[s["s"], s["e"]] for s in on_main if s["cat"] == "python_function"
                            and s["name"].startswith("nn.Module: ")], s0, s1)), union(opt + bwd))
    want = {"wall": s1 - s0, "optimizer": length(opt), "backward": length(bwd), "forward": length(fwd)}
    assert want["forward"] > 0 and want["backward"] > 0  # counts that can fail
    d = _explain(path, "--calls", "ProfilerStep")
    (st,) = d["steps"]["steps"]
    ph = {p["phase"]: p["wall_ns"] for p in st["phases"]}
    got = {"wall": st["wall_ns"], "optimizer": ph.get("optimizer"), "backward": ph.get("backward"),
           "forward": ph.get("forward")}
    assert got == want
