"""The held-out rocprof v1 trace (rocm-blogs' HIP_trace ``results.json``: ``torch.add`` of two
3-element tensors on an MI210 host): rocprof's own Chrome JSON, not a PyTorch profiler trace.
Its process rows say what each lane is (``process_name`` metadata: pid 2 ``CPU HIP API``,
pid 1 ``COPY``, pids 6-8 ``GPU0``-``GPU2``); its events carry no ``cat``, string
``ts``/``dur`` in microseconds and the exact nanoseconds in ``args.BeginNs``/``EndNs``.

Either traceview reads it right (the kernel and the copies as device work, the HIP calls
as the host) or it refuses it in one line naming the file, exit 2. Calling it a CPU-only
trace ("no device work") is wrong: the GPU2 lane holds an ``elementwise_kernel`` and the
COPY lane six host/device copies, each linked to its HIP call by a flow arrow.

Every figure below is counted here from the raw events. They run only with
``TRACEVIEW_HELD_OUT=1`` and skip where the corpus copy lacks the trace.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import public_corpus
from typer.testing import CliRunner

from rawcount import length, union
from traceview.cli.app import app

NAME = "ROCm__rocm-blogs/roc-profiling__tracing_output_examples__HIP_trace__results.json.gz"
runner = CliRunner()


def _path() -> Path:
    return public_corpus.held_out_path(NAME)


def _raw(path: Path) -> dict[str, Any]:
    """The lanes by their process names, and the device and host events counted."""
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    procs = {str(e["pid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    xs = [e for e in events if e.get("ph") == "X"]
    gpu = [e for e in xs if procs[e["pid"]].startswith("GPU")]
    copies = [e for e in xs if procs[e["pid"]] == "COPY"]
    host = [e for e in xs if procs[e["pid"]] == "CPU HIP API"]
    assert len(host) + len(gpu) + len(copies) == len(xs)

    def us(e: dict[str, Any]) -> list[int]:
        return [int(e["ts"]) * 1000, (int(e["ts"]) + int(e["dur"])) * 1000]

    def exact(e: dict[str, Any]) -> list[int]:
        return [int(e["args"]["BeginNs"]), int(e["args"]["EndNs"])]

    work = gpu + copies
    return {"kernels": len(gpu), "copies": len(copies), "host": host,
            # the busy time read from the microsecond fields, and from the exact nanoseconds
            "busy": {length(union([us(e) for e in work])), length(union([exact(e) for e in work]))},
            "kernel_sum": {sum(us(e)[1] - us(e)[0] for e in gpu),
                           sum(exact(e)[1] - exact(e)[0] for e in gpu)}}


def test_rocprof_trace_is_read_with_its_device_work_or_refused_in_one_line():
    path = _path()
    raw = _raw(path)
    assert (raw["kernels"], raw["copies"]) == (1, 6)  # the count itself, so this can fail
    r = runner.invoke(app, ["explain", str(path), "--format", "json"])
    if r.exit_code == 2:
        lines = [ln for ln in r.output.splitlines() if ln.strip()]
        assert len(lines) == 1 and path.name in lines[0], r.output
        return
    assert r.exit_code == 0, r.output[:400]
    d = json.loads(r.stdout)
    dev = d["device"]
    assert (dev["kernel_count"], dev["memcpy_count"] + dev["memset_count"]) == (1, 6), dev
    assert dev["busy_ns"] in raw["busy"], (dev["busy_ns"], raw["busy"])
    assert dev["kernel_sum_ns"] in raw["kernel_sum"], (dev["kernel_sum_ns"], raw["kernel_sum"])
    assert "no-device-work" not in {f["id"] for f in d["findings"]}
    # the device lanes are no host threads: the one host thread is the HIP calls' (on
    # rocprof's "CPU HIP API" lane, pid 2; the thread their args name)
    assert {(t["pid"], t["tid"]) for t in d["threads"]} == {
        (int(h["args"]["pid"]), int(h["args"]["tid"])) for h in raw["host"]}, d["threads"]


def test_rocprof_hip_calls_that_share_a_microsecond_are_not_called_duplicates():
    """Two ``hipGetDevice`` calls 580 ns apart (``BeginNs`` ...751188 and ...751768) share
    ``ts`` 773902407751 us and ``dur`` 1 us: two calls, not one recorded twice."""
    path = _path()
    host = _raw(path)["host"]
    same_us = [e for e in host if e["name"] == "hipGetDevice" and e["ts"] == "773902407751"]
    assert len(same_us) == 2 and len({e["args"]["BeginNs"] for e in same_us}) == 2
    r = runner.invoke(app, ["explain", str(path), "--format", "json"])
    if r.exit_code == 2:
        return  # refused whole: nothing was dropped
    d = json.loads(r.stdout)
    assert "duplicate" not in {x["code"] for x in d["diagnostics"]}, d["diagnostics"]


def test_rocprof_trace_is_read_in_exact_ns_with_its_launches_linked_by_the_flows():
    """Read, not refused: busy and kernel time from ``BeginNs``/``EndNs`` (691,961 ns and
    5,280 ns counted here), each HIP launch or copy call linked to its work by the flow
    whose ``s`` lies in the call and whose ``t`` starts the work (7 here)."""
    path = _path()
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    raw = _raw(path)
    procs = {str(e["pid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    work = [e for e in events if e.get("ph") == "X" and procs[e["pid"]] != "CPU HIP API"]
    exact = [[int(e["args"]["BeginNs"]), int(e["args"]["EndNs"])] for e in work]
    busy = length(union(exact))
    kernel = sum(b - a for (a, b), e in zip(exact, work, strict=True)
                 if procs[e["pid"]].startswith("GPU"))
    host = raw["host"]
    starts = {e["id"]: int(e["ts"]) for e in events if e.get("ph") == "s"}
    ends = {e["id"]: int(e["ts"]) for e in events if e.get("ph") == "t"}
    linked = {fid for fid, t in starts.items() if fid in ends and any(
        int(h["ts"]) <= t <= int(h["ts"]) + int(h["dur"]) for h in host)
        and any(int(w["ts"]) == ends[fid] for w in work)}
    r = runner.invoke(app, ["explain", str(path), "--format", "json"])
    assert r.exit_code == 0, r.output[:400]
    d = json.loads(r.stdout)
    assert (d["device"]["busy_ns"], d["device"]["kernel_sum_ns"]) == (busy, kernel)
    assert d["launches"]["count"] == d["launches"]["linked"] == len(linked), d["launches"]
    assert "rocprof-json" in {x["code"] for x in d["diagnostics"]}
