"""Correctness first, isolated: a broken kernel is named as broken, before any timing.

The broken implementations live in ``tests/broken_kernels.py`` (torch) and
``tests/broken_triton.py`` (a Triton kernel, run by Triton's CPU interpreter); capture
reaches them through ``--impl module:function``. Every call of a broken op writes its
process to ``$BROKEN_CALLS``, so a test can see that only the isolated check ran it.
"""

from __future__ import annotations

import gzip
import inspect
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

torch = pytest.importorskip("torch")

import broken_kernels

from traceview import documents
from traceview.checks import layouts, reports
from traceview.checks.correctness import compare
from traceview.cli.app import app
from traceview.runner import isolation
from traceview.workload.config import CaptureConfig

pytestmark = pytest.mark.capture
runner = CliRunner()
TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FAST = ["--device", "cpu", "--iters", "3", "--warmup", "1", "--baseline-n", "5"]
#: float32's tolerance as docs/capture.md states it (rtol, atol).
F32_RTOL, F32_ATOL = 1e-5, 1e-6


@pytest.fixture
def child_env(monkeypatch, tmp_path):
    """Children import the broken kernels from tests/ and log their calls."""
    path = os.pathsep.join([str(REPO), str(TESTS), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", path)
    calls = tmp_path / "calls.log"
    monkeypatch.setenv("BROKEN_CALLS", str(calls))
    return calls


def line_of(fn, text: str) -> int:
    """The line number of ``text`` inside ``fn``'s source, found by reading the source."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, ln in enumerate(lines) if text in ln)


def calls(log: Path) -> list[tuple[str, str]]:
    return [tuple(ln.split()) for ln in log.read_text().splitlines()] if log.exists() else []


# -- the child runner ------------------------------------------------------------------------
@pytest.mark.parametrize("entry, payload, status", [
    ("entry_ok", {"x": 3}, "ok"),
    ("entry_wrong", {}, "wrong"),
    ("entry_usage", {}, "error"),
])
def test_runner_outcomes_that_return(child_env, entry, payload, status):
    o = isolation.run_child(f"broken_kernels:{entry}", payload, timeout_s=30)
    assert o.status == status, o
    if status == "ok":
        assert o.value == {"echo": 3} and o.records == ({"step": 1},) and o.returncode == 0
    elif status == "wrong":
        assert o.value == {"status": "wrong", "why": "2 + 2 = 5"}
    else:
        assert o.error == "no CUDA GPU available" and o.exit_code == 2


def test_runner_names_the_frame_that_raised(child_env):
    o = isolation.run_child("broken_kernels:entry_raises", {"zero": 0}, timeout_s=30)
    assert o.status == "crashed" and o.error == "ZeroDivisionError: division by zero"
    want = f"broken_kernels.py:{line_of(broken_kernels.entry_raises, '1 / payload')} in entry_raises"
    assert o.frame.endswith(want) and o.stack[-1].endswith(want)
    assert o.records == ({"step": "before"},)  # emitted before the crash, kept


def test_runner_survives_a_native_crash_and_locates_it(child_env):
    o = isolation.run_child("broken_kernels:entry_segfault", {}, timeout_s=30)
    assert o.status == "crashed" and o.signal == "SIGSEGV" and o.returncode == -11
    assert "killed by SIGSEGV" in o.error
    line = line_of(broken_kernels.entry_segfault, "ctypes.string_at(0)")
    assert o.frame.endswith(f"broken_kernels.py:{line} in entry_segfault")  # faulthandler
    assert o.records == ({"step": "before"},)


def test_runner_kills_a_hang_and_says_where_it_was(child_env):
    t0 = time.monotonic()
    o = isolation.run_child("broken_kernels:entry_hangs", {}, timeout_s=1.0)
    took = time.monotonic() - t0
    assert o.status == "timeout" and o.timeout_s == 1.0
    assert 1.0 <= took < 1.0 + isolation.DUMP_GRACE_S + 5
    line = line_of(broken_kernels.entry_hangs, "time.sleep(0.05)")
    assert o.frame.endswith(f"broken_kernels.py:{line} in entry_hangs")


def test_runner_timeout_counts_from_the_latest_record(child_env):
    """Five steps 0.3 s apart take ~1.5 s: longer than the 1 s timeout, never idle 1 s."""
    o = isolation.run_child("broken_kernels:entry_slow_steps", {}, timeout_s=1.0)
    assert o.status == "ok" and o.value == {"done": True}
    assert [r["step"] for r in o.records] == [0, 1, 2, 3, 4]
    assert o.wall_ns > 1_400_000_000


# -- the comparison ------------------------------------------------------------------------
def test_compare_counts_worst_first_and_out_of_range():
    a = torch.arange(1.0, 25.0).reshape(2, 3, 4)
    b = torch.full((2, 1, 4), 2.0)
    out = a * b
    out[1, 2, 3] = 1e20  # garbage, far outside [2, 48]
    out[0, 1, 0] = 12.0  # wrong (a = 5, so 10) but in range: another element's value
    c = compare(torch, torch.mul, (a, b), out)
    assert c["passed"] is False and c["total"] == 24 and c["wrong"] == 2
    assert c["worst"]["index"] == [1, 2, 3] and c["worst"]["got"] == float(torch.tensor(1e20))
    assert c["worst"]["expected"] == 48.0
    assert c["first"] == {"index": [0, 1, 0], "got": 12.0, "expected": 10.0, "abs_err": 2.0}
    assert c["out_of_range"] == 1 and c["reference_range"] == [2.0, 48.0]
    # dim 0: indices 0 and 1 hold a wrong element; dim 1: 1 and 2; dim 2: 0 and 3
    assert c["wrong_per_dim"] == [[2, 2], [2, 3], [2, 4]]


def test_compare_first_element_and_nan():
    a = torch.arange(1.0, 7.0).reshape(2, 3)
    out = a * 3
    out[0, 1] = 7.0  # expected 6
    out[1, 0] = float("nan")  # expected 12
    c = compare(torch, torch.mul, (a, 3), out)
    assert c["wrong"] == 2 and c["nonfinite"] == 1
    assert c["first"] == {"index": [0, 1], "got": 7.0, "expected": 6.0, "abs_err": 1.0}
    assert c["worst"]["index"] == [1, 0] and c["worst"]["got"] == "nan"  # NaN ranks worst
    json.dumps(c, allow_nan=False)  # plain JSON: NaN spelled as a string


def test_compare_names_a_dtype_or_shape_mismatch():
    a = torch.ones(2, 3)
    c = compare(torch, torch.mul, (a, a), (a * a).half())
    assert c["passed"] is False
    assert c["mismatch"] == "output is (2, 3) float16, eager PyTorch gives (2, 3) float32"
    c = compare(torch, torch.mul, (a, torch.tensor(2.0)), a * 2)  # 0-dim operand
    assert c["passed"] is True and c["wrong"] == 0


# -- capture on a broken kernel: one report, exit 3, nothing timed or written ---------------
def run_capture(tmp_path, *args):
    out = tmp_path / "t.json.gz"
    r = runner.invoke(app, ["capture", "--op", "mul", *args, *FAST, "--out", str(out)])
    written = sorted(p.name for p in tmp_path.iterdir() if p.suffix != ".log"
                     and p.name != "dump.pt")
    return r, written


def test_wrong_on_broadcast_is_named_with_operands_and_worst_element(tmp_path, child_env,
                                                                     monkeypatch):
    dump = tmp_path / "dump.pt"
    monkeypatch.setenv("BROKEN_DUMP", str(dump))
    r, written = run_capture(tmp_path, "--fn", "broken_kernels:mul_flat_broadcast",
                             "--shape", "4x3x8,4x1x8", "--format", "json")
    assert r.exit_code == 3, r.output
    assert written == []
    assert [prog for _, prog in calls(child_env)] == ["isolation.py"]  # one call, no timing
    rep = json.loads(r.stdout)
    documents.read(rep, "check", reports.CheckReport)  # its typed layout, strictly
    assert rep["verdict"] == "wrong" and rep["found_by"].startswith("isolated check")
    assert [(o["shape"], o["strides"], o["contiguous"]) for o in rep["operands"]] == \
        [([4, 3, 8], [24, 8, 1], True), ([4, 1, 8], [8, 8, 1], True)]
    assert rep["reproducer"] == ("traceview capture --op mul --fn "
                                 "broken_kernels:mul_flat_broadcast --shape 4x3x8,4x1x8 "
                                 "--dtype float32 --device cpu")
    # an independent recount from what the op really got and gave
    a, b, out = torch.load(dump)
    ref = a.double() * b.double()
    diff = (out.double() - ref).abs()
    bad = diff > F32_ATOL + F32_RTOL * ref.abs()
    c = rep["comparison"]
    assert c["wrong"] == int(bad.sum()) and c["total"] == 96
    worst = [int(i) for i in (diff == diff.max()).nonzero()[0]]
    assert c["worst"]["index"] == worst
    assert c["worst"]["got"] == pytest.approx(float(out[tuple(worst)]))
    assert c["worst"]["expected"] == pytest.approx(float(ref[tuple(worst)]))
    assert c["out_of_range"] == 0  # in-bounds wrong elements, not garbage
    assert r.stderr.count("\n") == 1 and "gives wrong values" in r.stderr


def test_text_report_is_one_place_no_traceback(tmp_path, child_env):
    r, written = run_capture(tmp_path, "--fn", "broken_kernels:mul_garbage",
                             "--shape", "4x3x8,4x1x8")
    assert r.exit_code == 3 and written == [] and r.stdout == ""
    lines = r.stderr.splitlines()
    assert lines[0] == ("traceview: error: correctness check failed: mul "
                        "(broken_kernels:mul_garbage, float32, cpu) gives wrong values: 2 of 96 "
                        "elements (2.08%) outside rtol=1e-05 atol=1e-06 of the float64 "
                        "reference; no timings written")
    text = "\n".join(lines)
    assert "a: 4x3x8 float32, strides (24, 8, 1), contiguous" in text
    assert "b: 4x1x8 float32, strides (8, 8, 1), contiguous" in text
    assert "index (0, 0, 3): got 1.5e+20" in text  # first bad element, flat index 3
    assert "got nan" in text  # worst: flat index 7 is (0, 0, 7)
    assert "2 values lie far outside" in text and "out-of-bounds read" in text
    assert "reproduce  traceview capture --op mul --fn broken_kernels:mul_garbage" in text
    assert "Traceback" not in r.output
    assert len(calls(child_env)) == 1


def test_contiguous_same_shape_passes_and_the_check_runs_first(tmp_path, child_env):
    """The broadcast-broken kernel is right on equal shapes: the capture goes on, and the
    first process to run the op is the isolated check, then the baseline processes."""
    r, written = run_capture(tmp_path, "--fn", "broken_kernels:mul_flat_broadcast",
                             "--shape", "4x8", "--format", "json")
    assert r.exit_code == 0, r.output
    assert written == ["t.cold.json.gz", "t.json.gz"]
    printed = json.loads(r.stdout)
    assert printed["trace"] == str(tmp_path / "t.json.gz")
    assert printed["traceview"]["correctness"]["isolated_check"]["passed"] is True
    programs = []
    for pid, prog in calls(child_env):
        if (pid, prog) not in programs:
            programs.append((pid, prog))
    assert [p for _, p in programs[:4]] == ["isolation.py"] + ["baseline_child.py"] * 3
    # then the capturing process (this test's own: pytest's, or its xdist worker's), and
    # last the unprofiled split's own process
    assert len(programs) == 6 and programs[5][1] == "child.py"
    meta = json.loads(gzip.decompress((tmp_path / "t.json.gz").read_bytes()))["traceview"]
    iso = meta["correctness"]["isolated_check"]
    # same seeded inputs in both processes, so the same error as the capturing process's
    assert iso["passed"] is True and iso["max_abs_err"] == meta["correctness"]["max_abs_err"]
    assert 0 < iso["max_abs_err"] < 1e-6  # float32 rounding of a product, nothing more
    assert "correctness first, isolated" in meta["protocol"]["steps"][1]


@pytest.mark.parametrize("impl, error, func, needle", [
    ("mul_cuda_error", "RuntimeError: CUDA error: an illegal memory access was encountered",
     "mul_cuda_error", "raise RuntimeError("),
    ("mul_segfault", "the process was killed by SIGSEGV", "mul_segfault", "ctypes.string_at(0)"),
])
def test_a_crash_is_named_with_the_frame(tmp_path, child_env, impl, error, func, needle):
    r, written = run_capture(tmp_path, "--fn", f"broken_kernels:{impl}", "--shape", "8x8")
    assert r.exit_code == 3, r.output
    assert written == [] and len(calls(child_env)) == 1
    lines = r.stderr.splitlines()
    assert lines[0] == (f"traceview: error: correctness check failed: mul (broken_kernels:{impl}, "
                        f"float32, cpu) crashed: {error}; no timings written")
    line = line_of(getattr(broken_kernels, func), needle)
    assert any(ln.split()[:2] == ["raised", "at"] and ln.endswith(f"broken_kernels.py:{line} in {func}")
               for ln in lines), r.stderr
    assert "a: 8x8 float32, strides (8, 1), contiguous" in r.stderr
    assert "Traceback" not in r.output


def test_a_hang_is_killed_after_the_timeout_exit_2(tmp_path, child_env):
    t0 = time.monotonic()
    r, written = run_capture(tmp_path, "--fn", "broken_kernels:mul_hangs", "--shape", "8x8",
                             "--timeout", "3")
    assert r.exit_code == 2, r.output
    assert time.monotonic() - t0 < 3 + isolation.DUMP_GRACE_S + 10
    assert written == [] and len(calls(child_env)) == 1
    lines = r.stderr.splitlines()
    assert lines[0].endswith("(broken_kernels:mul_hangs, float32, cpu) did not return within "
                             "3 s and was killed; no timings written")
    line = line_of(broken_kernels.mul_hangs, "time.sleep(0.05)")
    assert any("stuck at" in ln and ln.endswith(f"broken_kernels.py:{line} in mul_hangs")
               for ln in lines), r.stderr


def test_a_sweep_stops_at_the_first_wrong_size_with_the_report(tmp_path, child_env):
    folder = tmp_path / "sw"
    r = runner.invoke(app, ["capture", "--op", "mul", "--fn", "broken_kernels:mul_garbage",
                            "--sweep", "numel=2**4..2**6", *FAST, "--out", str(folder)])
    assert r.exit_code == 3, r.output
    assert "(broken_kernels:mul_garbage, float32, cpu) gives wrong values: 2 of 16" in r.stderr
    assert "--shape 16 --dtype float32" in r.stderr  # the reproducer names the failing size
    assert not folder.exists() and len(calls(child_env)) == 1


def test_impl_that_cannot_be_imported_is_one_line_exit_2(tmp_path, child_env):
    r, written = run_capture(tmp_path, "--fn", "broken_kernels:no_such_fn", "--shape", "8")
    assert r.exit_code == 2 and written == []
    assert r.stderr.strip() == ("traceview: error: --fn broken_kernels:no_such_fn: "
                                "'broken_kernels' has no attribute 'no_such_fn'")


@pytest.mark.parametrize("args, fragment", [
    (["--impl", "not a module"], "or package.module:function"),
    (["--timeout", "0"], "--timeout must be > 0"),
    (["--check-layouts", "--out", "x.json"], "--check-layouts writes nothing"),
    (["--format", "yaml"], "--format must be text or json"),
    (["--format", "json", "--sweep", "numel=4..16"], "writes sweep.json"),
])
def test_new_flags_validate_in_one_line(tmp_path, args, fragment):
    r = runner.invoke(app, ["capture", "--op", "mul", "--device", "cpu", *args])
    assert r.exit_code == 2, r.output
    assert fragment in r.stderr and r.stderr.count("\n") == 1


# -- --check-layouts --------------------------------------------------------------------------
def test_variants_cover_what_a_model_passes():
    v = {x.name: x.operands for x in layouts.variants(CaptureConfig(op="mul", shapes=((4, 8, 16, 32),)))}
    assert v["contiguous"] == ({"shape": [4, 8, 16, 32], "layout": "contiguous"},) * 2
    for k, one in enumerate(([1, 8, 16, 32], [4, 1, 16, 32], [4, 8, 1, 32], [4, 8, 16, 1])):
        name = f"rhs broadcast on dim {k} ({'x'.join(map(str, one))})"
        assert v[name][1] == {"shape": one, "layout": "contiguous"}
    assert v["lhs transposed, rhs broadcast on dim 1 (4x1x16x32)"][0]["layout"] == "transposed"
    assert v["scalar operand (2.5)"][1] == {"scalar": 2.5}
    assert v["0-dim CPU tensor operand"][1] == {"zero_dim": "cpu"}
    assert {"transposed", "strided", "offset", "expand"} <= {
        o.get("layout") for ops in v.values() for o in ops}
    cpu = {x.name for x in layouts.variants(CaptureConfig(op="mul", device="cpu",
                                                          shapes=((4, 8),)))}
    assert "0-dim CPU tensor operand" not in cpu and "rhs last dim only (8)" not in cpu
    unary = [x.name for x in layouts.variants(CaptureConfig(op="exp", shapes=((4, 8),)))]
    assert unary == ["contiguous", "transposed view", "strided (every other element)",
                     "sliced (storage offset)", "expanded (stride 0 on dim 0)", "0-dim tensor"]


def run_layouts(tmp_path, impl, *more, env=None):
    argv = ["traceview", "capture", "--op", "mul", "--fn", impl, "--device", "cpu",
            "--check-layouts", "--shape", "4x6x8", "--format", "json", *more]
    code = f"import sys\nfrom traceview.cli.app import main\nsys.argv = {argv!r}\nmain()\n"
    env = {**os.environ, **(env or {}),
           "PYTHONPATH": os.pathsep.join([str(REPO), str(TESTS), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=300, check=False)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    doc = json.loads(proc.stdout)
    documents.read(doc, "check_layouts", reports.LayoutsDocument)  # its typed layout, strictly
    return proc, {row["name"]: row for row in doc["rows"]}


def test_check_layouts_finds_the_broken_broadcast_of_a_triton_kernel(tmp_path):
    proc, rows = run_layouts(tmp_path, "broken_triton:mul", env={"TRITON_INTERPRET": "1"})
    assert proc.returncode == 3, proc.stderr
    # y[offs % numel(y)] is right exactly when y broadcasts over leading dims only
    wrong = {"rhs broadcast on dim 1 (4x1x8)", "rhs broadcast on dim 2 (4x6x1)",
             "lhs transposed, rhs broadcast on dim 1 (4x1x8)"}
    assert {n for n, r in rows.items() if r["status"] == "wrong"} == wrong
    assert {n for n, r in rows.items() if r["status"] == "raised"} == {"scalar operand (2.5)"}
    assert rows["scalar operand (2.5)"]["error"].startswith("AttributeError")
    assert all(r["status"] == "pass" for n, r in rows.items()
               if n not in wrong | {"scalar operand (2.5)"})
    assert len(rows) == 17
    w = rows["rhs broadcast on dim 1 (4x1x8)"]
    assert w["operands"][1]["strides"] == [8, 8, 1] and w["comparison"]["wrong"] > 0


def test_check_layouts_goes_on_after_a_crash_and_a_hang(tmp_path):
    proc, rows = run_layouts(tmp_path, "broken_kernels:mul_segfault_on_transposed")
    assert proc.returncode == 3, proc.stderr
    crashed = {n for n, r in rows.items() if r["status"] == "crashed"}
    # the lhs's last dim is not unit-stride in exactly these four
    assert crashed == {"lhs transposed view", "both transposed", "lhs strided (every other element)",
                       "lhs transposed, rhs broadcast on dim 1 (4x1x8)"}
    assert all(r["status"] == "pass" for n, r in rows.items() if n not in crashed)
    assert len(rows) == 17 and "SIGSEGV" in rows["both transposed"]["error"]

    # 20 s: every layout is a fresh process (imports included) and CI runs two test workers
    proc, rows = run_layouts(tmp_path, "broken_kernels:mul_hangs_on_scalar", "--timeout", "20")
    assert proc.returncode == 2, proc.stderr
    assert rows["scalar operand (2.5)"]["status"] == "timeout"
    assert rows["0-dim tensor operand"]["status"] == "pass"  # after the hang, a new process
    assert sum(r["status"] == "pass" for r in rows.values()) == 16
