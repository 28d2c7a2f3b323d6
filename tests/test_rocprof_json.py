"""rocprof (v1) Chrome JSON, read as what it records (``traceview/io/rocprof.py``).

A small trace of rocprof's shape, every figure worked out by hand below from the events
as written here: no ``cat``; lanes named by ``process_name`` metadata (pid 2 ``CPU HIP
API``, pid 1 ``COPY``, pid 6 ``GPU0``, pid 518 ``GPU Barriers0``); ``ts``/``dur`` whole
microseconds as text, the
exact ns in args ``BeginNs``/``EndNs``; a flow ``s`` in the middle of each launch or copy
call and its step ``t`` at the start of the work it made.

Host thread 100/100 (args pid/tid; HIP calls drawn on lane 2/100, the roctx range
"iteration" 1,008,000 - 1,058,000 on lane 0/100) (ns):
  hipMalloc            1,000,000 - 1,002,000
  hipMemcpyWithStream  1,010,000 - 1,030,500   flow 0 s at 1,020 us -> copy A
  hipLaunchKernel      1,040,000 - 1,045,000   flow 1 s at 1,042 us -> kernel
  hipGetDevice         1,060,100 - 1,060,250   } one microsecond (ts 1060, dur 0):
  hipGetDevice         1,060,600 - 1,060,750   } two calls, no duplicate
  hipMemcpyWithStream  1,070,000 - 1,090,000   flow 2 s at 1,080 us -> copy B
  hipMemsetAsync       1,095,000 - 1,097,000   flow 3 s at 1,096 us -> fill
Device 0 stream 0:
  copy A (COPY)        1,012,250 - 1,020,750   8,500
  kernel (GPU0)        1,046,100 - 1,056,600  10,500
  copy B (COPY)        1,075,000 - 1,080,000   5,000
  FillBuffer (COPY)    1,100,000 - 1,101,000   1,000  (a memset)
  <barrier packet>     1,050,000 - 1,200,000  on GPU Barriers0: a wait, not counted

Window 1,000,000 - 1,101,000 (101,000 ns; the barrier packet would take it to 1,200,000);
device busy 8,500 + 10,500 + 5,000 + 1,000 = 25,000 (no overlap); 1 kernel, 2 copies,
1 memset; 4 launches (2 hipMemcpyWithStream, 1 hipLaunchKernel, 1 hipMemsetAsync), each
linked to its work; 7 HIP calls on one host thread; from the microsecond fields the busy
time would be 8,000 + 10,000 + 5,000 + 1,000 = 24,000 and the two hipGetDevice one event.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import reference_count
from typer.testing import CliRunner

import traceview
from traceview.cli.app import app
from traceview.io.decode import decode

runner = CliRunner()


def _x(name: str, lane: tuple[str, str], begin: int, end: int, args: dict[str, str]) -> dict:
    return {"ph": "X", "name": name, "pid": lane[0], "tid": lane[1], "ts": str(begin // 1000),
            "dur": str(end // 1000 - begin // 1000),
            "args": {"BeginNs": str(begin), "EndNs": str(end), "Name": name,
                     "DurationNs": str(end - begin), **args}}


def _flow(fid: int, s_us: int, t_us: int, pid: int, tid: int) -> list[dict]:
    return [{"ts": s_us, "ph": "s", "cat": "DataFlow", "id": fid, "pid": 2, "tid": 100, "name": "dep"},
            {"ts": t_us, "ph": "t", "cat": "DataFlow", "id": fid, "pid": pid, "tid": tid, "name": "dep"}]


def _events() -> list[dict]:
    dev = {"dev-id": "0", "queue-id": "0", "stream-id": "0", "pid": "100", "tid": "100"}
    host = {"pid": "100", "tid": "100"}
    return [
        {},  # rocprof opens its event list with an empty object
        {"args": {"name": "CPU HIP API"}, "ph": "M", "pid": 2, "name": "process_name"},
        {"args": {"name": "COPY"}, "ph": "M", "pid": 1, "name": "process_name"},
        {"args": {"name": "GPU0"}, "ph": "M", "pid": 6, "name": "process_name"},
        {"args": {"name": "GPU Barriers0"}, "ph": "M", "pid": 518, "name": "process_name"},
        {"args": {"name": "Markers and Ranges"}, "ph": "M", "pid": 0, "name": "process_name"},
        _x("iteration", ("0", "100"), 1_008_000, 1_058_000, host),
        _x("CopyHostToDevice", ("1", "1"), 1_012_250, 1_020_750, dev),
        _x("CopyDeviceToHost", ("1", "1"), 1_075_000, 1_080_000, dev),
        _x("elementwise_kernel", ("6", "1"), 1_046_100, 1_056_600, dev),
        _x("hipMalloc", ("2", "100"), 1_000_000, 1_002_000, host),
        _x("hipMemcpyWithStream", ("2", "100"), 1_010_000, 1_030_500, host),
        _x("hipLaunchKernel", ("2", "100"), 1_040_000, 1_045_000, host),
        _x("hipGetDevice", ("2", "100"), 1_060_100, 1_060_250, host),
        _x("hipGetDevice", ("2", "100"), 1_060_600, 1_060_750, host),
        _x("hipMemcpyWithStream", ("2", "100"), 1_070_000, 1_090_000, host),
        _x("hipMemsetAsync", ("2", "100"), 1_095_000, 1_097_000, host),
        _x("FillBuffer", ("1", "1"), 1_100_000, 1_101_000, dev),
        _x("<barrier packet>", ("518", "0"), 1_050_000, 1_200_000, dev),
        *_flow(0, 1020, 1012, 1, 1), *_flow(1, 1042, 1046, 6, 1), *_flow(2, 1080, 1075, 1, 1),
        *_flow(3, 1096, 1100, 1, 1),
    ]


def _write(tmp_path: Path, events: list[dict]) -> Path:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"traceEvents": events, "otherData": {"CMD": "rocminfo"}}))
    return path


def test_rocprof_figures_are_the_hand_worked_ones(tmp_path):
    path = _write(tmp_path, _events())
    r = traceview.analyze(str(path))
    assert (r.window.start_ns, r.window.end_ns) == (1_000_000, 1_101_000)
    assert r.device.busy_ns == 25_000
    assert (r.device.kernel_count, r.device.memcpy_count, r.device.memset_count) == (1, 2, 1)
    assert r.device.kernel_sum_ns == 10_500
    assert r.launches.count == 4
    assert dict(r.launches.by_api) == {"hipMemcpyWithStream": 2, "hipLaunchKernel": 1,
                                       "hipMemsetAsync": 1}


def test_rocprof_launches_are_linked_by_the_flows_and_lanes_are_right(tmp_path):
    d = json.loads(runner.invoke(app, ["explain", str(_write(tmp_path, _events())),
                                       "--format", "json"]).stdout)
    assert d["launches"]["linked"] == 4, d["launches"]
    # the HIP calls and the roctx range on the thread their args name, not on the lanes
    # rocprof draws them on (pid 2, pid 0)
    assert {(t["pid"], t["tid"]) for t in d["threads"]} == {(100, 100)}, d["threads"]
    codes = {x["code"] for x in d["diagnostics"]}
    assert "rocprof-json" in codes and "duplicate" not in codes, d["diagnostics"]
    assert "no-device-work" not in {f["id"] for f in d["findings"]}


def test_the_reference_counts_rocprof_as_worked_by_hand(tmp_path):
    ref = reference_count.count(_write(tmp_path, _events()))
    assert (ref.window_start, ref.window_end, ref.busy_ns) == (1_000_000, 1_101_000, 25_000)
    assert (ref.kernels, ref.memcpys, ref.memsets, ref.launches) == (1, 2, 1, 4)


def test_two_calls_in_one_microsecond_stay_two(tmp_path):
    r = traceview.analyze(str(_write(tmp_path, _events())))
    assert "duplicate" not in {x.code for x in r.diagnostics}
    trace = traceview.load(str(_write(tmp_path, _events())))
    code = trace.names.index("hipGetDevice")
    assert int((trace.slices.name == code).sum()) == 2


def test_without_process_names_nothing_is_read_as_rocprof(tmp_path):
    """The same events without the lanes' names are no rocprof trace: nothing becomes
    device work, and the args kept for the reader are let go."""
    events = [e for e in _events() if e.get("ph") != "M"]
    path = _write(tmp_path, events)
    r = traceview.analyze(str(path))
    assert r.device.kernel_count == 0 and r.launches.count == 0
    assert "rocprof-json" not in {x.code for x in r.diagnostics}
    assert len(decode(path).x.args) == 0


def test_rocprof_findings_advise_in_rocprofs_terms(tmp_path):
    """No torch.profiler advice a rocprof user cannot follow, nor a CPU-only verdict: the
    op arguments rocprof does not record, no "with_stack off", no CUDA activity to add."""
    path = _write(tmp_path, _events())
    for view in (["--width", "80"], ["--format", "md"], ["--format", "json"]):
        out = runner.invoke(app, ["explain", str(path), *view]).stdout
        for wrong in ("add with record_shapes=True", "with_stack off", "CUDA profiler activity",
                      "deviceProperties", "specialize, cache_key", "no device work",
                      "torch.profiler trace;"):
            assert wrong not in out.replace("\n", " "), (view, wrong)
    d = json.loads(runner.invoke(app, ["explain", str(path), "--format", "json"]).stdout)
    texts = {f["id"]: f["message"] for f in d["findings"]}
    assert "rocprof records no op arguments" in texts["reproducer-incomplete"]
    assert "rocprof traced HIP calls, not Python" in texts["no-python-frames"]


def test_odd_rocprof_args_cost_only_their_own_exact_times(tmp_path):
    """An event whose ``BeginNs``/``EndNs`` are not whole numbers, run backwards or are
    absent keeps its microsecond fields; an args value of an odd type is no traceback.
    Here copy A's ``EndNs`` is text, so it reads 1,012 us to 1,020 us (8,000 ns, from
    ``ts``/``dur``) and the busy time is 25,000 - 8,500 + 8,000 = 24,500 ns."""
    events = _events()
    for e in events:
        if e.get("name") == "CopyHostToDevice":
            e["args"]["EndNs"] = "soon"
        if e.get("name") == "hipMalloc":
            e["args"]["BeginNs"], e["args"]["EndNs"] = "1002000", "1000000"  # backwards
        if e.get("name") == "hipMemsetAsync":
            e["args"]["dev-id"] = {"odd": [1]}
            e["args"]["BeginNs"] = 1_095_000  # a number, not text: read the same
    r = runner.invoke(app, ["explain", str(_write(tmp_path, events)), "--format", "json"])
    assert r.exit_code == 0, r.output[:400]
    d = json.loads(r.stdout)
    assert d["device"]["busy_ns"] == 24_500
    assert (d["window"]["start_ns"], d["window"]["end_ns"]) == (1_000_000, 1_101_000)
    assert d["launches"]["linked"] == 4


@pytest.mark.parametrize("odd", ["²", "9" * 5000, "99999999999999999999"])
def test_unreadable_rocprof_numbers_are_no_traceback(tmp_path, odd):
    """A ``BeginNs`` of a digit Python's ``int`` refuses (a superscript), of more digits
    than it converts, or past int64, and a GPU lane numbered past int64, cost that event
    its exact time and the lane its device number, never the run: the copy keeps its
    microsecond fields (1,012 us to 1,020 us), so busy is 24,500 ns as in the test above."""
    events = _events()
    for e in events:
        if e.get("name") == "CopyHostToDevice":
            e["args"]["BeginNs"] = odd
        if e.get("args", {}).get("name") == "GPU0":
            e["args"]["name"] = "GPU" + "9" * 20
    r = runner.invoke(app, ["explain", str(_write(tmp_path, events)), "--format", "json"])
    assert r.exit_code == 0, r.output[:400]
    d = json.loads(r.stdout)
    assert d["device"]["busy_ns"] == 24_500
