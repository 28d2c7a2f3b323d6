"""traceview against HTA 0.5.0 on real training steps, refereed by a count from the raw JSON.

    python benchmarks/compare_hta_training.py [--hta-venv DIR] [--json OUT] [TRACE ...]
    python benchmarks/compare_hta_training.py --comm tests/data/hta_nccl/*/

(run with traceview's python from the repository root; default traces: the four
``fixtures/train_llama_{eager,compiled,dataloader,side_stream}.json.gz``). Output and the
reasons for every difference: docs/hta-comparison.md.

Three counts of each ``ProfilerStep`` are set side by side, one table per trace:

* **traceview**: ``python -m traceview explain TRACE --format json``, its ``steps``:
  ``device_idle_ns``, ``idle_causes`` (each gap charged to the thread that launched the work
  ending it, then ``launch latency``) and ``critical_path`` (per thread and device).
* **HTA 0.5.0**, in its own venv (``DIR``, made with ``python3 -m venv`` and ``pip install
  HolisticTraceAnalysis==0.5.0 'pandas<3'`` when missing; never traceview's venv). This file
  is run there as ``python compare_hta_training.py --hta-driver TRACE_DIR OUT`` and imports
  only HTA then (see ``hta_driver``): ``get_idle_time_breakdown`` (public, whole trace, per
  stream), the function it runs per stream (``_analyze_idle_time_for_stream``) given the
  kernels that start inside each step, and ``critical_path_analysis`` per ``ProfilerStep``.
  HTA is loaded with ``include_last_profiler_step=True`` (by default HTA drops every event
  that starts in the last step), once with its default rounding to whole microseconds and
  once with ``HTA_DISABLE_NS_ROUNDING=1`` (idle only). Nothing in HTA is patched.
* **raw**: ``raw_count``, written here from the definitions alone with plain ``json`` and
  integers (``Decimal`` microseconds to integer ns), not with traceview: device work is
  every ``kernel``/``gpu_memcpy``/``gpu_memset`` event; a step's idle is its wall minus the
  union of that work clipped to it; each idle gap goes to the thread whose launch call
  (``cuda_runtime``/``cuda_driver`` event of the same ``correlation``) made the work that
  ends the gap, up to the start of that launch call, and the rest of the gap to launch
  latency; a gap that no work in the step ends goes to the step's thread.

``--comm DIR ...`` does the same for communication on folders of ranks with NCCL kernels
(HTA's own test traces, tests/data/hta_nccl/): traceview's per-step ``communication_ns``
and ``exposed_communication_ns`` beside the raw count (``raw_comm_count``), and HTA's
``get_comm_comp_overlap`` (whole trace, per rank; loaded with and without the last step)
beside the raw count of HTA's own definition.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from decimal import Decimal
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the side-stream step was first called train_llama_two_streams (the same bytes)
TRACES = [next((p for p in (ROOT / "fixtures" / f"train_llama_{n}.json.gz" for n in names)
                if p.exists()), ROOT / "fixtures" / f"train_llama_{names[0]}.json.gz")
          for names in (("eager",), ("compiled",), ("dataloader",),
                        ("side_stream", "two_streams"))]
HTA_SPEC = "HolisticTraceAnalysis==0.5.0"
HTA_PINS = ["pandas<3"]
DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
LAUNCH_CATS = {"cuda_runtime", "cuda_driver"}
LATENCY = "launch latency"


# --------------------------------------------------------------------------- HTA side
def hta_driver(trace_dir: str, out_path: str, *, critical_path: bool) -> None:
    """Runs in HTA's venv: HTA's own analyses of the one trace in TRACE_DIR, to OUT (json).

    Times are HTA's (microseconds as HTA holds them: whole numbers after its rounding)."""
    import pandas as pd
    from hta.analyzers.breakdown_analysis import BreakdownAnalysis
    from hta.trace_analysis import TraceAnalysis
    from hta.utils.utils import IdleTimeType

    analysis = TraceAnalysis(trace_dir=trace_dir, include_last_profiler_step=True)
    trace = analysis.t
    df = trace.get_trace(0)
    sym = trace.symbol_table.get_sym_id_map()
    names = trace.symbol_table.get_sym_table()
    import numpy

    out: dict = {"versions": {"pandas": pd.__version__, "numpy": numpy.__version__},
                 "errors": {}}
    labels = {m.value: name.lower() for name, m in IdleTimeType.__members__.items()}

    # the public call: whole trace, per stream
    try:
        idle, _ = analysis.get_idle_time_breakdown(visualize=False)
        out["idle_whole_trace"] = [
            {"stream": int(r.stream), "category": str(r.idle_category), "us": float(r.idle_time)}
            for r in idle.itertuples()]
    except Exception as exc:  # noqa: BLE001 - recorded; the next analysis still runs
        out["errors"]["get_idle_time_breakdown"] = f"{type(exc).__name__}: {exc}"

    # the CPU ProfilerStep rows, and their positions among all rows whose name holds
    # "ProfilerStep" (what critical_path_analysis's instance_id counts, GPU copies too)
    step_ids = {v for k, v in sym.items() if "ProfilerStep" in k}
    cpu_annotation = sym.get("user_annotation", -1000)
    steps = []
    for pos, row in enumerate(df[df["name"].isin(step_ids)].itertuples()):
        if int(row.cat) == cpu_annotation:
            steps.append({"name": names[int(row.name)], "instance_id": pos,
                          "ts": float(row.ts), "end": float(row.ts + row.dur)})
    steps.sort(key=lambda s: s["ts"])
    out["steps"] = steps

    # HTA's idle categories per step: the per-stream function of get_idle_time_breakdown,
    # prepared as it prepares it, given the kernels that start inside the step
    cats = [sym.get(c, -1000) for c in ("kernel", "Kernel", "gpu_memset", "Memset",
                                        "gpu_memcpy", "Memcpy", "mtia_ccp_events")]
    pre = df[df["stream"].ne(-1) & df["cat"].isin(cats)].copy().set_index("index_correlation")
    kernels = pre.join(df[["ts", "index"]], on="index_correlation", rsuffix="_runtime")
    for step in steps:
        inside = kernels[(kernels.ts >= step["ts"]) & (kernels.ts < step["end"])]
        rows = []
        for stream in sorted(inside.stream.unique()):
            res, _ = BreakdownAnalysis._analyze_idle_time_for_stream(int(stream), inside, 30)
            for cat, r in res.iterrows():
                rows.append({"stream": int(stream), "category": labels[int(cat)],
                             "us": float(r.idle_time)})
        step["idle"] = rows

    for step in steps if critical_path else []:
        try:
            result = analysis.critical_path_analysis(
                rank=0, annotation="ProfilerStep", instance_id=step["instance_id"])
            if result is None:
                step["critical_path_error"] = "critical_path_analysis returned None"
                continue
            graph, ok = result
            step["critical_path_ok"] = bool(ok)
            edges = []
            for r in graph.get_critical_path_breakdown().itertuples():
                edges.append({"us": float(r.duration), "type": str(r.type),
                              "bound_by": str(r.bound_by),
                              "tid": None if pd.isna(r.tid) else int(r.tid),
                              "stream": None if pd.isna(r.stream) else int(r.stream)})
            step["critical_path"] = edges
        except Exception as exc:  # noqa: BLE001 - recorded per step
            step["critical_path_error"] = f"{type(exc).__name__}: {exc}"

    with open(out_path, "w") as fh:
        json.dump(out, fh)


def hta_comm_driver(trace_dir: str, out_path: str, *, include_last: bool) -> None:
    """Runs in HTA's venv: ``get_comm_comp_overlap`` of every rank in TRACE_DIR."""
    from hta.trace_analysis import TraceAnalysis

    analysis = TraceAnalysis(trace_dir=trace_dir, include_last_profiler_step=include_last)
    df = analysis.get_comm_comp_overlap(visualize=False)
    with open(out_path, "w") as fh:
        json.dump({str(int(r.rank)): float(r.comp_comm_overlap_pctg) for r in df.itertuples()},
                  fh)


def hta_python(venv: Path) -> Path:
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", HTA_SPEC, *HTA_PINS],
                       check=True)
    return python


def run_hta(python: Path, trace: Path, *, rounding: bool) -> dict:
    """HTA takes a directory: one holding only this trace."""
    with tempfile.TemporaryDirectory(prefix="hta_") as tmp:
        shutil.copy(trace, Path(tmp) / trace.name)
        out = Path(tmp) / "hta.json"
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        if not rounding:
            env["HTA_DISABLE_NS_ROUNDING"] = "1"
        args = [str(python), str(Path(__file__).resolve()), "--hta-driver", tmp, str(out)]
        if not rounding:
            args.append("--no-critical-path")
        proc = subprocess.run(args, env=env, capture_output=True, text=True, cwd=tmp)
        if proc.returncode != 0 or not out.exists():
            return {"failed": proc.stderr.strip().splitlines()[-1:] or ["no output"]}
        return json.loads(out.read_text())


def run_hta_comm(python: Path, folder: Path, *, include_last: bool, rounding: bool = True) -> dict:
    with tempfile.TemporaryDirectory(prefix="hta_") as tmp:
        for trace in sorted(folder.glob("*.json.gz")):
            shutil.copy(trace, Path(tmp) / trace.name)
        out = Path(tmp) / "hta.json"
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        if not rounding:
            env["HTA_DISABLE_NS_ROUNDING"] = "1"
        args = [str(python), str(Path(__file__).resolve()), "--hta-comm-driver", tmp, str(out)]
        if include_last:
            args.append("--include-last")
        proc = subprocess.run(args, env=env, capture_output=True, text=True, cwd=tmp)
        if proc.returncode != 0 or not out.exists():
            return {"failed": proc.stderr.strip().splitlines()[-1:] or ["no output"]}
        return json.loads(out.read_text())


# --------------------------------------------------------------------------- traceview
def run_traceview(trace: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "traceview", "explain", str(trace),
                           "--format", "json"], env=env, capture_output=True, text=True,
                          check=True)
    return json.loads(proc.stdout)


# --------------------------------------------------------------------------- raw count
def to_ns(us: Decimal) -> int:
    """Kineto's microseconds (decimal text, read as Decimal) to integer nanoseconds."""
    return int((us * 1000).to_integral_value())


def union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(intervals):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def raw_count(trace: Path) -> list[dict]:
    """Per step: wall, device idle, and the idle split by launching thread (see module doc)."""
    doc = json.loads(gzip.decompress(trace.read_bytes()), parse_float=Decimal)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    launch: dict[int, tuple[int, int]] = {}  # correlation -> (launch call start, tid)
    for e in events:
        if e.get("cat") in LAUNCH_CATS and "correlation" in e.get("args", {}):
            corr, start = int(e["args"]["correlation"]), to_ns(e["ts"])
            if corr not in launch or start < launch[corr][0]:
                launch[corr] = (start, int(e["tid"]))
    work = []  # (start, end, correlation, stream)
    for e in events:
        if e.get("cat") in DEVICE_CATS:
            start = to_ns(e["ts"])
            work.append((start, start + to_ns(e["dur"]), int(e["args"].get("correlation", -1)),
                         (e["pid"], e["tid"])))
    starts: dict[int, list[int]] = defaultdict(list)
    for start, _, corr, _ in work:
        starts[start].append(corr)
    step_rows = sorted(
        (to_ns(e["ts"]), to_ns(e["ts"]) + to_ns(e["dur"]), e["name"], int(e["tid"]))
        for e in events if e.get("cat") == "user_annotation"
        and str(e["name"]).startswith("ProfilerStep#"))
    out = []
    for a, b, name, step_tid in step_rows:
        busy = union([(max(s, a), min(t, b)) for s, t, _, _ in work if min(t, b) > max(s, a)])
        gaps, cur = [], a
        for s, t in busy:
            if s > cur:
                gaps.append((cur, s))
            cur = t
        if cur < b:
            gaps.append((cur, b))
        split: dict = defaultdict(int)
        for g0, g1 in gaps:
            if g1 == b and g1 not in starts:
                split[step_tid] += g1 - g0
                continue
            # the work ending the gap; of several starting together, the earliest launched
            corrs = [c for c in starts[g1] if c in launch]
            if not corrs:
                split["unlinked"] += g1 - g0
                continue
            call_start, tid = min(launch[c] for c in corrs)
            host_end = min(max(call_start, g0), g1)
            split[tid] += host_end - g0
            split[LATENCY] += g1 - host_end
        idle = b - a - sum(t - s for s, t in busy)
        assert sum(split.values()) == idle, (name, idle, dict(split))
        # HTA's rule on one stream, to referee it: gaps between consecutive work items on
        # the same stream, each charged to the later item, items starting in the step
        between = 0
        for stream in {s[3] for s in work}:
            mine = sorted((s, t) for s, t, _, st in work if st == stream and a <= s < b)
            between += sum(max(0, s2 - t1) for (_, t1), (s2, _) in pairwise(mine))
        out.append({"name": name, "wall_ns": b - a, "idle_ns": idle, "split": dict(split),
                    "between_ns": between})
    return out


def intersect(x: list[tuple[int, int]], y: list[tuple[int, int]]) -> int:
    """Length of the intersection of two unions."""
    total, i, j = 0, 0, 0
    while i < len(x) and j < len(y):
        lo, hi = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        total += max(0, hi - lo)
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return total


def raw_comm_count(trace: Path) -> dict:
    """Communication (device work named ``nccl*``), from the raw events: per step, its union
    and exposed part (no other device work of any kind running), traceview's definition;
    and over the whole trace, HTA's definition of overlap: the time communication and
    computation kernels (``kernel`` events not named ``nccl*``; copies left out) both run,
    over the communication union."""
    doc = json.loads(gzip.decompress(trace.read_bytes()), parse_float=Decimal)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    work = [(to_ns(Decimal(e["ts"])), to_ns(Decimal(e["ts"])) + to_ns(Decimal(e["dur"])),
             str(e["name"]).lower().startswith("nccl"), e.get("cat"))
            for e in events if e.get("cat") in DEVICE_CATS]
    steps = sorted((to_ns(Decimal(e["ts"])), to_ns(Decimal(e["ts"])) + to_ns(Decimal(e["dur"])),
                    e["name"]) for e in events if e.get("cat") == "user_annotation"
                   and str(e["name"]).startswith("ProfilerStep#"))
    out: dict = {"rank": (doc.get("distributedInfo") or {}).get("rank"), "steps": []}
    for a, b, name in steps:
        comm = union([(max(s, a), min(t, b)) for s, t, nc, _ in work if nc and min(t, b) > max(s, a)])
        other = union([(max(s, a), min(t, b)) for s, t, nc, _ in work
                       if not nc and min(t, b) > max(s, a)])
        size = sum(t - s for s, t in comm)
        out["steps"].append({"name": name, "comm_ns": size,
                             "exposed_ns": size - intersect(comm, other)})
    comm = union([(s, t) for s, t, nc, _ in work if nc])
    comp = union([(s, t) for s, t, nc, cat in work if not nc and cat == "kernel"])
    size = sum(t - s for s, t in comm)
    out["whole_comm_ns"] = size
    out["whole_overlap_pct"] = 100 * intersect(comm, comp) / size if size else None
    # HTA's default load drops what starts in the last step: the same count without it
    if steps:
        last = steps[-1][0]
        comm = union([(s, t) for s, t, nc, _ in work if nc and s < last])
        comp = union([(s, t) for s, t, nc, cat in work if not nc and cat == "kernel" and s < last])
        size = sum(t - s for s, t in comm)
        out["before_last_overlap_pct"] = 100 * intersect(comm, comp) / size if size else None
    return out


def compare_comm(folder: Path, python: Path | None) -> str:
    """One table for a folder of ranks with NCCL kernels."""
    hta = run_hta_comm(python, folder, include_last=True) if python else {}
    hta_default = run_hta_comm(python, folder, include_last=False) if python else {}
    hta_exact = run_hta_comm(python, folder, include_last=True, rounding=False) if python else {}
    lines = [f"### {folder.name}", "",
             "| file | rank | step | comm traceview / raw | exposed traceview / raw |",
             "|---|---:|---|---:|---:|"]
    overlap = ["", "Communication overlapped by computation, % of communication. traceview: "
               "1 - exposed / communication over the steps (overlap with any device work). "
               "raw and HTA: HTA's definition (whole trace; computation kernels only).", "",
               "| rank | traceview, steps | raw, HTA's rule | HTA, last step kept | "
               "HTA, last step kept, no µs rounding | raw, last step dropped | "
               "HTA default (drops the last step) |",
               "|---:|---:|---:|---:|---:|---:|---:|"]
    for trace in sorted(folder.glob("*.json.gz")):
        tv = run_traceview(trace)
        raw = raw_comm_count(trace)
        for st, r in zip(tv["steps"]["steps"], raw["steps"], strict=True):
            assert st["name"] == r["name"]
            lines.append(
                f"| {trace.name} | {raw['rank']} | {st['name']} | "
                f"{ms(st['communication_ns'])} / {ms(r['comm_ns'])}"
                f"{'' if st['communication_ns'] == r['comm_ns'] else ' (differs)'} | "
                f"{ms(st['exposed_communication_ns'])} / {ms(r['exposed_ns'])}"
                f"{'' if st['exposed_communication_ns'] == r['exposed_ns'] else ' (differs)'} |")
        key = str(raw["rank"])

        def fmt(x) -> str:
            return "-" if x is None else f"{x:.2f}%"
        comm = sum(st["communication_ns"] for st in tv["steps"]["steps"])
        exposed = sum(st["exposed_communication_ns"] for st in tv["steps"]["steps"])
        overlap.append(f"| {raw['rank']} | {fmt(100 * (1 - exposed / comm) if comm else None)} | "
                       f"{fmt(raw['whole_overlap_pct'])} | {fmt(hta.get(key))} | "
                       f"{fmt(hta_exact.get(key))} | {fmt(raw.get('before_last_overlap_pct'))} | "
                       f"{fmt(hta_default.get(key))} |")
    for run in (hta, hta_default, hta_exact):
        if "failed" in run:
            overlap.append(f"HTA failed: {run['failed']}")
    return "\n".join(lines + overlap) + "\n"


# --------------------------------------------------------------------------- tables
def ms(ns: float) -> str:
    return f"{ns / 1e6:.3f}"


def pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def compare(trace: Path, python: Path | None) -> tuple[str, dict]:
    tv = run_traceview(trace)
    raw = raw_count(trace)
    hta = run_hta(python, trace, rounding=True) if python else {"failed": ["no HTA venv"]}
    hta_ns = run_hta(python, trace, rounding=False) if python else {"failed": ["no HTA venv"]}
    labels = {t["tid"]: t["label"] for t in tv["threads"]}
    short = {t["label"]: ("main" if t["role"] == "main" else t["name"]) for t in tv["threads"]}

    def thread(key) -> str:
        if isinstance(key, int):
            return short.get(labels.get(key, ""), f"tid {key}")
        return short.get(key, key)

    lines = [f"### {trace.name}", ""]
    if "failed" in hta:
        lines += [f"HTA failed: {hta['failed']}", ""]
    hta_steps = {s["name"]: s for s in hta.get("steps", [])}
    hta_ns_steps = {s["name"]: s for s in hta_ns.get("steps", [])}
    lines += ["Device idle per step (ms). raw: the independent count (traceview's figure "
              "is marked where it differs by a nanosecond); raw, HTA's rule: the same events "
              "counted as HTA counts (gaps between consecutive work on each stream, work "
              "starting in the step, summed over streams); HTA: host wait / kernel wait / "
              "other summed over streams (with its µs rounding, and without).", "",
              "| step | wall | idle raw | idle traceview | raw, HTA's rule | "
              "HTA host / kernel / other | HTA total | HTA total, no rounding |",
              "|---|---:|---:|---:|---:|---|---:|---:|"]
    record = {"trace": trace.name, "steps": []}
    for r, st in zip(raw, tv["steps"]["steps"], strict=True):
        assert r["name"] == st["name"], (r["name"], st["name"])
        h, hn = hta_steps.get(r["name"], {}), hta_ns_steps.get(r["name"], {})
        by_cat: dict = defaultdict(float)
        for row in h.get("idle", []):
            by_cat[row["category"]] += row["us"]
        total_ns = sum(row["us"] for row in hn.get("idle", [])) * 1000
        streams = sorted({row["stream"] for row in h.get("idle", [])})
        cats = " / ".join(f"{by_cat[c] / 1000:.3f}" for c in ("host_wait", "kernel_wait", "other"))
        same = "" if st["device_idle_ns"] == r["idle_ns"] else " (differs)"
        lines.append(f"| {r['name']} | {ms(r['wall_ns'])} | {ms(r['idle_ns'])} | "
                     f"{ms(st['device_idle_ns'])}{same} | {ms(r['between_ns'])} | {cats}"
                     f"{f' ({len(streams)} streams)' if len(streams) > 1 else ''} | "
                     f"{sum(by_cat.values()) / 1000:.3f} | {ms(total_ns)} |")
        record["steps"].append({"name": r["name"], "raw": r, "traceview_idle_ns":
                                st["device_idle_ns"], "hta_idle_us": dict(by_cat),
                                "hta_idle_no_rounding_ns": total_ns})

    lines += ["", "Device idle per step by what ended each gap (ms): the thread that "
              "launched the work ending the gap, until its launch call began; then launch "
              "latency. raw / traceview (traceview's per-thread categories summed). HTA "
              "names no thread.", ""]
    keys: list = []
    for r in raw:
        for k in r["split"]:
            name = LATENCY if k == LATENCY else thread(k)
            if name not in keys:
                keys.append(name)
    lines += ["| step | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
    for i, (r, st) in enumerate(zip(raw, tv["steps"]["steps"], strict=True)):
        got: dict = defaultdict(int)
        for c in st["idle_causes"]:
            got[LATENCY if c["what"] == LATENCY else thread(c["resource"])] += c["ns"]
        want: dict = defaultdict(int)
        for k, v in r["split"].items():
            want[LATENCY if k == LATENCY else thread(k)] += v
        cells = [f"{ms(want[k])} / {ms(got[k])}{'' if want[k] == got[k] else ' (differs)'}"
                 for k in keys]
        extra = sorted(set(got) - set(keys))
        lines.append(f"| {r['name']} | " + " | ".join(cells) + " |"
                     + (f" traceview also: {extra}" if extra else ""))
        record["steps"][i]["traceview_idle_split"] = dict(got)

    lines += ["", "Critical path per step: share of the step's wall on each thread "
              "(traceview: its path sums to the wall; HTA: its path's edges by the thread "
              "or stream of their event, as shares of the wall, and the path's length).", "",
              "| step | traceview | HTA | HTA path / wall |", "|---|---|---|---:|"]
    for st in tv["steps"]["steps"]:
        wall = st["wall_ns"]
        tv_on: dict = defaultdict(int)
        for p in st["critical_path"]:
            tv_on[thread(p["resource"]) if p["kind"] == "host" else "device"] += p["ns"]
        h = hta_steps.get(st["name"], {})
        hta_on: dict = defaultdict(float)
        for e in h.get("critical_path", []):
            if e["stream"] is not None and e["stream"] >= 0:
                hta_on["device"] += e["us"] * 1000
            elif e["tid"] is not None:
                hta_on[thread(e["tid"])] += e["us"] * 1000
            elif e["us"]:
                hta_on[e["bound_by"].replace("gpu_kernel_", "").replace("_overhead", "")
                       or "dependency"] += e["us"] * 1000
        hta_len = sum(hta_on.values())
        tv_cell = ", ".join(f"{k} {pct(v, wall)}" for k, v in
                            sorted(tv_on.items(), key=lambda kv: -kv[1]))
        hta_cell = (", ".join(f"{k} {pct(v, wall)}" for k, v in
                              sorted(hta_on.items(), key=lambda kv: -kv[1]))
                    if "critical_path" in h else h.get("critical_path_error", "not run"))
        lines.append(f"| {st['name']} | {tv_cell} | {hta_cell} | "
                     f"{ms(hta_len)} / {ms(wall)} ms ({pct(hta_len, wall)}) |")
        rec = next(s for s in record["steps"] if s["name"] == st["name"])
        rec["traceview_path"], rec["hta_path_ns"] = dict(tv_on), dict(hta_on)

    if hta.get("idle_whole_trace"):
        whole = ", ".join(f"stream {r['stream']} {r['category']} {r['us'] / 1000:.3f}"
                          for r in hta["idle_whole_trace"])
        lines += ["", f"HTA `get_idle_time_breakdown` (whole trace, ms): {whole}"]
        record["hta_idle_whole_trace"] = hta["idle_whole_trace"]
    if hta.get("versions"):
        record["hta_versions"] = hta["versions"]
    return "\n".join(lines) + "\n", record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", type=Path, default=TRACES)
    parser.add_argument("--hta-venv", type=Path, default=Path("/tmp/htavenv"),
                        help="HTA's own venv (made when missing)")
    parser.add_argument("--no-hta", action="store_true", help="raw count and traceview only")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--hta-driver", nargs=2, metavar=("TRACE_DIR", "OUT"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--comm", nargs="+", type=Path, metavar="DIR",
                        help="folders of ranks with NCCL kernels: communication per step and "
                        "HTA's get_comm_comp_overlap, instead of the training traces")
    parser.add_argument("--no-critical-path", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--hta-comm-driver", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--include-last", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.hta_driver:
        hta_driver(*args.hta_driver, critical_path=not args.no_critical_path)
        return 0
    if args.hta_comm_driver:
        hta_comm_driver(*args.hta_comm_driver, include_last=args.include_last)
        return 0
    python = None if args.no_hta else hta_python(args.hta_venv)
    if args.comm:
        for folder in args.comm:
            print(compare_comm(folder, python))
        return 0
    records = []
    for trace in args.traces:
        text, record = compare(trace, python)
        print(text)
        records.append(record)
    versions = next((r["hta_versions"] for r in records if "hta_versions" in r), None)
    if versions:
        print(f"HTA 0.5.0 ran with pandas {versions['pandas']}, numpy {versions['numpy']}.")
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
