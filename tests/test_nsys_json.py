"""Nsight Systems captures converted to Chrome JSON by nCompass' converter (``io/nsys.py``).

A small trace of that shape, written here event by event as the converter writes them
(``ncompass/trace/converters/parsers``: ``cuda`` kernels on ``"Device N"/"Stream M"``,
``cuda_api`` calls on ``"Device N"/"CUDA API Thread T"`` with the host thread in
``raw_pid``/``raw_tid``, ``nvtx``, ``nvtx-kernel``, ``osrt``, ``sched``, ``cuda_flow``),
with its figures worked out by hand below, and checked against the independent count
(``tests/reference_count.py``) too. Its clock is past 2**43 us, where the converter's
``ts = ns / 1000.0`` float cannot hold the nanoseconds: the figures are exact only when
read from ``start_ns``/``end_ns``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import reference_count

import traceview
from traceview.cli.app import app

B = 1_700_000_000_000_000_000  # ns: the converter's session clock, past 2**43 us


def _x(cat: str, name: str, pid: str, tid: str, start: int, end: int, args: dict) -> dict:
    return {"name": name, "ph": "X", "ts": (B + start) / 1000.0, "pid": pid, "tid": tid,
            "cat": cat, "args": args, "dur": (end - start) / 1000.0}


def _kernel(name: str, start: int, end: int, corr: int, stream: int = 7) -> dict:
    return _x("cuda", name, "Device 0", f"Stream {stream}", start, end, {
        "grid": [1, 1, 1], "block": [128, 1, 1], "registersPerThread": 24,
        "staticSharedMemory": 0, "dynamicSharedMemory": 0, "correlationId": corr,
        "deviceId": 0, "streamId": stream, "start_ns": B + start, "end_ns": B + end})


def _api(name: str, start: int, end: int, corr: int) -> dict:
    return _x("cuda_api", name, "Device 0", "CUDA API Thread 100", start, end, {
        "correlationId": corr, "deviceId": 0, "raw_pid": 100, "raw_tid": 100,
        "start_ns": B + start, "end_ns": B + end})


def _flow(start_api: int, start_kernel: int, corr: int, stream: int = 7) -> list[dict]:
    return [{"name": "", "ph": "s", "ts": (B + start_api) / 1000.0, "pid": "Device 0",
             "tid": "CUDA API Thread 100", "cat": "cuda_flow", "args": {}, "id": corr},
            {"name": "", "ph": "f", "ts": (B + start_kernel) / 1000.0, "pid": "Device 0",
             "tid": f"Stream {stream}", "cat": "cuda_flow", "args": {}, "id": corr, "bp": "e"}]


EVENTS = [
    {"name": "process_name", "ph": "M", "ts": 0.0, "pid": "Device 0", "tid": "",
     "cat": "__metadata", "args": {"name": "Device 0"}},
    # an OS runtime wait on another thread, wider than everything else: left out
    _x("osrt", "poll", "Process 100", "Thread 101", -5_000, 20_000,
       {"returnValue": 0, "nestingLevel": 0}),
    {"name": "Scheduled In", "ph": "i", "ts": B / 1000.0, "pid": "Process 100",
     "tid": "Thread 100", "cat": "sched", "args": {"cpu": 0, "threadState": 0,
                                                   "threadBlock": None}},
    _x("nvtx", "forward", "Device 0", "NVTX Thread 100", 0, 10_000,
       {"deviceId": 0, "raw_pid": 100, "raw_tid": 100, "start_ns": B, "end_ns": B + 10_000}),
    _api("cudaLaunchKernel_v7000", 1_000, 1_500, 1),
    _kernel("k1", 2_001, 3_003, 1),
    _api("cudaGraphLaunch_v10000", 4_000, 4_700, 2),
    _kernel("g1", 5_000, 6_000, 2),
    _kernel("g2", 5_800, 7_000, 2),
    _api("cudaLaunchKernelExC_v11060", 4_800, 4_900, 3),
    _kernel("k3", 6_500, 7_500, 3, stream=8),
    _api("cudaMemcpyAsync_v3020", 8_000, 8_100, 4),
    _api("cudaStreamIsCapturing_v10000", 8_200, 8_250, 5),
    {"name": "forward", "ph": "X", "ts": (B + 2_001) / 1000.0, "pid": "Device 0",
     "tid": "NVTX Kernel Thread 100", "cat": "nvtx-kernel", "args": {}, "dur": 5.499},
    *_flow(1_000, 2_001, 1), *_flow(4_000, 5_000, 2), *_flow(4_000, 5_800, 2),
    *_flow(4_800, 6_500, 3, stream=8),
]

# By hand, from the events above:
WINDOW = (B, B + 10_000)  # the NVTX range holds every call and kernel; osrt is left out
# [2001, 3003] and [5000, 6000] u [5800, 7000] u [6500, 7500] = [5000, 7500]
BUSY = (3_003 - 2_001) + (7_500 - 5_000)
LAUNCHES = {"cudaLaunchKernel": 1, "cudaGraphLaunch": 1, "cudaLaunchKernelExC": 1,
            "cudaMemcpyAsync": 1}  # cudaStreamIsCapturing launches nothing


@pytest.fixture(scope="module")
def trace_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("nsys") / "capture.json.gz"
    path.write_bytes(gzip.compress(json.dumps(EVENTS).encode()))
    return path


def test_the_float_times_would_not_be_exact():
    """The premise: ``ts`` as the converter writes it has lost the nanoseconds."""
    assert round(EVENTS[5]["ts"] * 1000) != B + 2_001


def test_figures_by_hand(trace_path):
    r = traceview.analyze(str(trace_path))
    assert (r.window.start_ns, r.window.end_ns) == WINDOW
    assert r.device.busy_ns == BUSY == 3_502
    assert r.device.kernel_count == 4 and r.device.memcpy_count == 0
    assert r.launches.count == 4 and dict(r.launches.by_api) == LAUNCHES
    assert r.launches.linked == 3  # the copy's device record is not in the file
    codes = {d.code: d.count for d in r.diagnostics}
    # 1 NVTX range, 5 calls, 4 kernels, 1 projected NVTX range; 1 osrt call left out
    assert codes["nsys-export"] == 11 and codes["nsys-osrt-left-out"] == 1
    assert "unknown-category" not in codes


def test_the_reference_counts_the_same(trace_path):
    ref = reference_count.count(trace_path)
    assert (ref.window_start, ref.window_end) == WINDOW
    assert ref.busy_ns == BUSY and ref.kernels == 4 and ref.launches_by_api == LAUNCHES


def test_calls_and_kernels_land_on_their_threads_and_streams(trace_path):
    t = traceview.load(str(trace_path))
    s = t.slices
    host = {(ln.pid, ln.tid) for ln in t.host_lanes if (s.lane == ln.index).any()}
    assert host == {(100, 100)}  # not "Device 0"/"CUDA API Thread 100", no osrt thread
    streams = {(ln.device, ln.stream) for ln in t.device_lanes
               if (s.lane == ln.index).any() and t.cat_names[int(s.cat[s.lane == ln.index][0])] == "kernel"}
    assert streams == {(0, 7), (0, 8)}
    by_name = {t.names[int(s.name[r])]: r for r in range(len(s))}
    graph = by_name["cudaGraphLaunch"]
    assert sorted(t.names[int(s.name[w])] for w in t.launch_to_work[graph]) == ["g1", "g2"]
    assert int(s.start[by_name["k1"]]) == B + 2_001 and int(s.end[by_name["k1"]]) == B + 3_003
    assert t.cat_names[int(s.cat[by_name["forward"]])] in ("user_annotation", "gpu_user_annotation")


def test_explain_says_what_it_read(trace_path):
    from typer.testing import CliRunner

    out = " ".join(CliRunner().invoke(app, ["explain", str(trace_path), "--width", "120"]).output.split())
    assert "input:nsys-export" in out and "main thread [100/100]" in out
    assert "copy and set calls, whose device records this Nsight Systems conversion" in out
    assert "Device 0/Stream" not in out and "CPU-only" not in out


def test_a_kineto_trace_with_a_cuda_category_is_not_taken_for_one(tmp_path):
    """Evidence, not a category's name: ``cuda`` events without the converter's exact
    times stay an unknown category."""
    events = [{"name": "k", "ph": "X", "ts": 1.0, "dur": 2.0, "pid": 1, "tid": 1, "cat": "cuda",
               "args": {"correlationId": 1}}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(events))
    r = traceview.analyze(str(path))
    assert {d.code for d in r.diagnostics} == {"unknown-category"}
    assert r.device.kernel_count == 0


def test_later_releases_kernel_category_and_nsys_copy_names(tmp_path):
    """The converter's later releases write ``kernel`` for ``cuda``; a copy or set named as
    nsys names them is a copy or a set."""
    events = [dict(e) for e in EVENTS]
    events[5] = {**events[5], "cat": "kernel"}
    copy = _kernel("[CUDA memcpy Host-to-Device]", 8_300, 8_400, 4)
    events.append(copy)
    path = tmp_path / "later.json"
    path.write_text(json.dumps(events))
    r = traceview.analyze(str(path))
    assert r.device.kernel_count == 4 and r.device.memcpy_count == 1
    assert r.device.busy_ns == BUSY + 100 and r.launches.linked == 4
    ref = reference_count.count(path)
    assert ref.kernels == 4 and ref.busy_ns == BUSY + 100


def test_odd_args_cost_only_their_own_event(tmp_path):
    """A null time and a thread id as text (damage, or another release): the null one
    keeps its float time, the text one its whole args unread (it stays on the converter's
    track); every other event reads as before."""
    events = [dict(e) for e in EVENTS]
    events[11] = {**events[11], "args": {**events[11]["args"], "start_ns": None}}  # the copy
    events[12] = {**events[12], "args": {**events[12]["args"], "raw_pid": "x"}}
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(events))
    r = traceview.analyze(str(path))
    assert r.device.kernel_count == 4 and r.device.busy_ns == BUSY
    assert dict(r.launches.by_api) == LAUNCHES
    t = traceview.load(str(path))
    on = {(t.lanes[int(t.slices.lane[i])].pid, t.names[int(t.slices.name[i])])
          for i in range(len(t.slices))}
    assert ("Device 0", "cudaStreamIsCapturing") in on and (100, "cudaMemcpyAsync") in on


def test_a_track_numbered_past_int64_is_no_traceback(tmp_path):
    """A converter's track named "Device 99999999999999999999" holds no usable device
    number: its kernel is still device work (its figures as by hand), and no traceback."""
    events = [dict(e) for e in EVENTS]
    for e in events:
        if e.get("cat") == "cuda" and e["name"] == "k1":
            e["pid"] = "Device 99999999999999999999"
    path = tmp_path / "capture.json.gz"
    path.write_bytes(gzip.compress(json.dumps(events).encode()))
    from typer.testing import CliRunner

    r = CliRunner().invoke(app, ["explain", str(path), "--format", "json"])
    assert r.exit_code == 0, r.output[:400]
    assert json.loads(r.stdout)["device"]["busy_ns"] == BUSY
