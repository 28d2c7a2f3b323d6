"""The held-out DLRM ranks (PARAM's chakra_traces, 8 ranks of one training step on V100s,
two host threads each: the main thread and the autograd thread): the figures beyond the
reference count's (``tests/reference_count.py``) that the report's sentences name, each
counted here from the raw events with plain interval arithmetic (``tests/rawcount.py``).

* per stream: busy (union of its kernels and copies) and work items;
* the kernel time summed over streams and the copies' summed time;
* per host thread: launches (``launch_apis`` of the rule table, read as data) and syncs
  (the rule table's synchronizing runtime calls), and its own split of the window and of
  the step into launch, sync, dispatch and untraced: the deepest event owns each instant,
  user ranges own nothing (README "How it counts", ``analyses/host.py``), so untraced is
  what no op or runtime call of the thread covers, launch and sync the launch and sync
  calls' union (leaves here), dispatch the rest of the ops' union;
* the main thread's split of the window crossed with the device's busy and idle time
  ("Where the window went");
* the step's communication (kernels the rule table's ``communication_kernels`` names) and
  its exposed part (no other device work running);
* each phase's device busy, the phases counted as ``reference_count`` documents them.

They run only with ``TRACEVIEW_HELD_OUT=1`` (the final check nobody tunes on), and skip
where the corpus copy lacks a trace.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import public_corpus
import pytest
from typer.testing import CliRunner

from rawcount import clip, length, minus, union
from traceview.cli.app import app

RULES = json.loads((Path(__file__).resolve().parent.parent / "traceview" / "data"
                    / "default_rules.json").read_text())
LAUNCH = {n for names in RULES["launch_apis"].values() for n in names}
SYNC = re.compile(next(r["name"] for r in RULES["rules"]
                       if r["category"] == "sync" and "cuda_runtime" in r["cats"]))
COMM = re.compile(RULES["communication_kernels"])
WORK = ("kernel", "gpu_memcpy", "gpu_memset")
RANKS = [f"facebookresearch__param/chakra_traces__dlrm_kineto__worker{w}_step_12.json.gz"
         for w in (2, 5, 7)]
runner = CliRunner()


def _params() -> list[Any]:
    out = []
    for name in RANKS:
        marks = []
        if not public_corpus.held_out_runs():
            marks.append(pytest.mark.skip(reason=f"{name} is held out (TRACEVIEW_HELD_OUT=1 runs it)"))
        elif public_corpus.locate(name) is None:
            marks.append(pytest.mark.skip(reason=f"{name} is not in this machine's corpus copy"))
        out.append(pytest.param(name, marks=marks, id=name.rsplit("__", 1)[-1]))
    return out


def _slices(path: Path) -> list[dict[str, Any]]:
    """The complete events, with integer-ns ``s``/``e`` (these files hold integer us)."""
    out = []
    for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]:
        if e.get("ph") == "X":
            assert isinstance(e["ts"], int) and isinstance(e.get("dur", 0), int)
            out.append({**e, "s": e["ts"] * 1000, "e": (e["ts"] + e.get("dur", 0)) * 1000})
    return out


def _parts(ops: list[dict[str, Any]], lo: int, hi: int) -> dict[str, list[list[int]]]:
    """One thread's launch/sync/dispatch/untraced instants over [lo, hi)."""
    traced = union(clip([[o["s"], o["e"]] for o in ops], lo, hi))
    launch = union(clip([[o["s"], o["e"]] for o in ops
                         if o["cat"] == "cuda_runtime" and o["name"] in LAUNCH], lo, hi))
    sync = union(clip([[o["s"], o["e"]] for o in ops
                       if o["cat"] == "cuda_runtime" and SYNC.search(o["name"])], lo, hi))
    return {"launch": launch, "sync": sync, "dispatch": minus(minus(traced, launch), sync),
            "untraced": minus([[lo, hi]], traced)}


def _split(ops: list[dict[str, Any]], lo: int, hi: int) -> dict[str, int]:
    """Their lengths (zero categories left out)."""
    return {k: length(v) for k, v in _parts(ops, lo, hi).items() if length(v)}


def _counted(path: Path) -> dict[str, Any]:
    sl = _slices(path)
    act = [s for s in sl if s["cat"] != "Trace"]
    lo, hi = min(s["s"] for s in act), max(s["e"] for s in act)
    work = [s for s in sl if s["cat"] in WORK]
    kernels = [s for s in work if s["cat"] == "kernel"]
    streams: dict[tuple[int, int], list[list[int]]] = defaultdict(list)
    for w in work:
        streams[(w["pid"], w["tid"])].append([w["s"], w["e"]])
    runtime = [s for s in sl if s["cat"] == "cuda_runtime"]
    (step,) = [s for s in sl if re.fullmatch(r"ProfilerStep#\d+", s["name"])]
    # no launched work outlasts this step's range (its extent is the range): checked here
    ends = {w["args"]["correlation"]: w["e"] for w in work}
    assert all(ends[r["args"]["correlation"]] <= step["e"] for r in runtime
               if r["name"] in LAUNCH and step["s"] <= r["s"] < step["e"])
    s0, s1 = step["s"], step["e"]
    threads = sorted({(s["pid"], s["tid"]) for s in sl if s["cat"] == "cpu_op"})
    ops = {t: [s for s in sl if (s["pid"], s["tid"]) == t and s["cat"] in ("cpu_op", "cuda_runtime")]
           for t in threads}
    on_step = [s for s in sl if (s["pid"], s["tid"]) == (step["pid"], step["tid"])]
    dl = union(clip([[s["s"], s["e"]] for s in on_step
                     if s["name"].startswith("enumerate(DataLoader)#")], s0, s1))
    opt = minus(union(clip([[s["s"], s["e"]] for s in on_step
                            if re.match(r"Optimizer\.(step|zero_grad)#", s["name"])], s0, s1)), dl)
    autograd = [s for s in sl if s["cat"] == "cpu_op" and s["pid"] == step["pid"] and (
        s["name"].startswith("autograd::engine::evaluate_function: ")
        or re.fullmatch(r"[A-Z][A-Za-z0-9_]*Backward\d*|torch::autograd::AccumulateGrad", s["name"]))]
    bwd = minus(minus([[min(s["s"] for s in autograd), max(s["e"] for s in autograd)]], dl), opt)
    fwd = minus([[s0, bwd[0][0]]], union(dl + opt))
    busy = union([[w["s"], w["e"]] for w in work])

    def busy_in(parts: list[list[int]]) -> int:
        return sum(length(clip(busy, a, b)) for a, b in parts)

    phase_busy = {"data_loading": busy_in(dl), "optimizer": busy_in(opt),
                  "backward": busy_in(bwd), "forward": busy_in(fwd)}
    phase_busy["other"] = length(clip(busy, s0, s1)) - sum(phase_busy.values())
    comm = union(clip([[k["s"], k["e"]] for k in kernels if COMM.search(k["name"])], s0, s1))
    rest = union([[w["s"], w["e"]] for w in work if not COMM.search(w["name"])])
    main = (step["pid"], step["tid"])  # the launching thread the report attributes
    crossed = {}
    for cat, iv in _parts(ops[main], lo, hi).items():
        on_busy = length(iv) - length(minus(iv, busy))
        crossed.update({(cat, "busy"): on_busy, (cat, "idle"): length(iv) - on_busy})
    return {
        "streams": {k: (length(union(v)), len(v)) for k, v in streams.items()},
        "kernel_sum_ns": sum(k["e"] - k["s"] for k in kernels),
        "copy_sum_ns": sum(w["e"] - w["s"] for w in work if w["cat"] != "kernel"),
        "launches": dict(Counter((r["pid"], r["tid"]) for r in runtime if r["name"] in LAUNCH)),
        "syncs": dict(Counter((r["pid"], r["tid"]) for r in runtime if SYNC.search(r["name"]))),
        "window_split": {t: _split(ops[t], lo, hi) for t in threads},
        "step_split": {t: _split(ops[t], s0, s1) for t in threads},
        "communication": (length(comm), length(minus(comm, rest))),
        "phase_busy": phase_busy,
        "breakdown": {k: v for k, v in crossed.items() if v},
        "attributed": main,
    }


def _reported(path: Path) -> dict[str, Any]:
    r = runner.invoke(app, ["explain", str(path), "--format", "json"])
    assert r.exit_code == 0, r.output[:400]
    d = json.loads(r.stdout)
    by_label = {t["label"]: (t["pid"], t["tid"]) for t in d["threads"]}
    (step,) = d["steps"]["steps"]
    step_split: dict[tuple[int, int], Counter[str]] = defaultdict(Counter)
    for p in step["phases"]:  # each thread's categories inside a phase sum to its wall
        for label, cats in p["host"].items():
            step_split[by_label[label]].update(cats)
    return {
        "streams": {(s["device"], s["stream"]): (s["busy_ns"], s["work_count"])
                    for s in d["device"]["per_stream"]},
        "kernel_sum_ns": d["device"]["kernel_sum_ns"],
        "copy_sum_ns": d["device"]["copy_sum_ns"],
        "launches": {(t["pid"], t["tid"]): t["launches"] for t in d["threads"] if t["launches"]},
        "syncs": {(t["pid"], t["tid"]): t["syncs"] for t in d["threads"] if t["syncs"]},
        "window_split": {(t["pid"], t["tid"]): {k: v for k, v in t["categories"].items() if v}
                         for t in d["threads"]},
        "step_split": {k: {c: n for c, n in v.items() if n} for k, v in step_split.items()},
        "communication": (step["communication_ns"], step["exposed_communication_ns"]),
        "phase_busy": {p["phase"]: p["device_busy_ns"] for p in step["phases"]},
        "breakdown": {(b["host"], b["device"]): b["ns"] for b in d["breakdown"] if b["ns"]},
        "attributed": (d["host"]["thread"]["pid"], d["host"]["thread"]["tid"]),
    }


@pytest.mark.parametrize("name", _params())
def test_held_out_rank_reads_as_counted(name):
    path = public_corpus.locate(name)
    assert path is not None
    want, got = _counted(path), _reported(path)
    assert want["phase_busy"]["forward"] > 0 and want["communication"][0] > 0  # a count that can fail
    diffs = [f"{k}: traceview {got[k]!r} counted {want[k]!r}" for k in want if got[k] != want[k]]
    assert not diffs, "; ".join(diffs)
