"""capture -> explain on the CPU, end to end, through the real CLI.

``--device cpu`` runs ``--impl torch`` natively and ``--impl triton`` through Triton's
interpreter, producing real CPU-only profiler traces. Small shapes and few iterations
keep each capture to a few seconds.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

torch = pytest.importorskip("torch")

from traceview.cli.app import app  # noqa: E402  (after the importorskip)

pytestmark = pytest.mark.capture
runner = CliRunner()
FAST = ["--device", "cpu", "--iters", "5", "--warmup", "2", "--baseline-n", "10"]


def capture(tmp_path: Path, *args: str, name: str = "t.json.gz"):
    out = tmp_path / name
    result = runner.invoke(app, ["capture", *args, *FAST, "--out", str(out)])
    return result, out


def load(path: Path) -> dict:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.name.endswith(".gz") else raw)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") or "tmp" in p.name)


def call_ranges(trace: dict, prefix: str = "call_") -> list[str]:
    names = (e["name"] for e in trace["traceEvents"] if e.get("cat") == "user_annotation")
    return sorted((n for n in names if re.fullmatch(prefix + r"\d+", n)),
                  key=lambda n: int(n.rsplit("_", 1)[1]))


def test_torch_cpu_capture_writes_trace_metadata_and_cold_trace(tmp_path):
    r, out = capture(tmp_path, "--op", "mul", "--impl", "torch", "--shape", "4x256")
    assert r.exit_code == 0, r.output
    assert str(out) in r.stdout and "full API p50" in r.stdout
    trace = load(out)
    assert next(iter(trace)) == "traceview" and "traceEvents" in trace
    assert call_ranges(trace) == [f"call_{i}" for i in range(5)]
    m = trace["traceview"]
    assert m["schema_version"] == 2 and m["kind"] == "warm"
    assert (m["op"], m["impl"], m["shape"], m["dtype"], m["layout"]) == \
        ("mul", "torch", [4, 256], "float32", "contiguous")
    assert m["strides"] == [[256, 1], [256, 1]] and m["scalars"] == []
    assert m["device"]["name"] and m["device"]["cuda"] is None
    assert m["versions"]["torch"] == torch.__version__ and m["versions"]["python"]
    p = m["protocol"]
    assert (p["mode"], p["sync"], p["warmup"], p["iters"]) == ("eager", "each", 2, 5)
    assert p["with_stack"] is True and p["record_shapes"] is True and p["timer"]
    c = m["correctness"]
    assert c["reference"] == "float64" and c["passed"] is True
    assert c["max_abs_err"] <= c["tolerance"]["atol"] + c["tolerance"]["rtol"] * 10
    b = m["baseline"]
    assert b["n"] == 10 and len(b["full_api_ns_samples"]) == 10
    assert all(isinstance(x, int) and x > 0 for x in b["full_api_ns_samples"])
    assert isinstance(b["full_api_ns_p50"], int) and isinstance(b["amortized_submit_ns"], int)
    assert b["device_ns"] is None  # no CUDA graph on the CPU
    assert m["cold"]["trace"] == "t.cold.json.gz" and m["cold"]["wall_ns"] > 0
    assert "capture" in m["command"] or m["command"].startswith("traceview capture")
    assert "--op mul" in m["reproducer"]

    cold = load(tmp_path / "t.cold.json.gz")
    assert cold["traceview"]["kind"] == "cold"
    assert call_ranges(cold, "cold_call_") == ["cold_call_0"]
    assert call_ranges(cold) == []
    assert leftovers(tmp_path) == []


def test_explain_reads_what_capture_wrote(tmp_path):
    r, out = capture(tmp_path, "--op", "add", "--impl", "torch", "--shape", "8x64,64")
    assert r.exit_code == 0, r.output
    import traceview

    d = traceview.analyze(out).to_dict()
    assert d["calls"]["count"] == 5
    assert d["calls"]["stats"]["api_ns"]["p50"] > 0
    r2 = runner.invoke(app, ["explain", str(out), "--width", "120"])
    assert r2.exit_code == 0, r2.output
    assert "add" in r2.stdout and "torch" in r2.stdout


# Triton's interpreter must be switched on before triton is first imported, and the
# torch profiler imports triton, so the interpreter runs in a fresh process, exactly as
# `traceview capture` does from a shell.
REPO = Path(__file__).resolve().parent.parent


def capture_in_subprocess(tmp_path: Path, *args: str, name: str = "t.json.gz", pre: str = ""):
    out = tmp_path / name
    argv = ["traceview", "capture", *args, *FAST, "--out", str(out)]
    code = f"{pre}\nimport sys\nfrom traceview.cli.app import main\nsys.argv = {argv!r}\nmain()\n"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120, check=False)
    return proc, out


def real_stderr(proc) -> list[str]:
    """stderr minus the profiler library's own chatter and Python warnings."""
    noise = re.compile(r"^(USDT|STAGE|INFO|WARNING):|.*Warning|\s+warn")
    return [line for line in proc.stderr.splitlines() if line.strip() and not noise.match(line)]


def test_triton_interpreter_capture(tmp_path):
    proc, out = capture_in_subprocess(
        tmp_path, "--op", "sigmoid", "--impl", "triton", "--shape", "16x64",
        "--dtype", "bfloat16", "--layout", "transposed")
    assert proc.returncode == 0, proc.stderr
    m = load(out)["traceview"]
    assert m["impl"] == "triton" and m["impl_detail"]["interpreter"] is True
    assert m["strides"] == [[1, 16]] and m["contiguous"] == [False]
    assert m["correctness"]["passed"] and m["dtype"] == "bfloat16"
    assert any("interpreter" in n for n in m["notes"])
    assert m["protocol"]["with_stack"] is False  # auto: interpreter frames would bury the launcher
    assert m["command"].startswith("traceview capture --op sigmoid")
    assert call_ranges(load(out)) == [f"call_{i}" for i in range(5)]
    import traceview

    assert traceview.analyze(out).to_dict()["calls"]["count"] == 5


def test_triton_interpreter_scalar_broadcast_and_strided(tmp_path):
    proc, out = capture_in_subprocess(tmp_path, "--op", "div", "--impl", "triton",
                                      "--shape", "4x32,32", "--layout", "strided", name="a.json.gz")
    assert proc.returncode == 0, proc.stderr
    m = load(out)["traceview"]
    assert m["input_shapes"] == [[4, 32], [32]] and m["strides"] == [[64, 2], [2]]
    proc, out = capture_in_subprocess(tmp_path, "--op", "mul", "--impl", "triton", "--scalar", "3",
                                      "--dtype", "int32", "--shape", "8x8", name="b.json.gz")
    assert proc.returncode == 0, proc.stderr
    m = load(out)["traceview"]
    assert m["scalars"] == [3] and m["correctness"]["max_abs_err"] == 0


def test_wrong_triton_kernel_fails_correctness_exit_3(tmp_path):
    """Inject a wrong Triton kernel into the capturing process only (the isolated check's
    child does not see it, so it passes): the capturing process's own check of its cold
    call still stops with the report, naming who found it."""
    inject = (
        "import os\n"
        "os.environ['TRITON_INTERPRET'] = '1'  # before kernels imports triton\n"
        "from traceview.workload import kernels\n"
        "real_init = kernels.PointwiseLauncher.__init__\n"
        "def wrong(self, torch, op, kernel=None):\n"
        "    real_init(self, torch, 'add', kernel)\n"
        "kernels.PointwiseLauncher.__init__ = wrong\n"
    )
    proc, _ = capture_in_subprocess(tmp_path, "--op", "mul", "--impl", "triton",
                                    "--launcher", "library", "--shape", "8x8", pre=inject)
    assert proc.returncode == 3, proc.stderr
    lines = real_stderr(proc)
    assert lines[0].startswith("traceview: error: correctness check failed: mul (triton")
    assert "gives wrong values: 64 of 64 elements" in lines[0]  # a+b vs a*b: all wrong
    assert "no timings written" in lines[0]
    assert any("found by" in ln and "cold call" in ln for ln in lines), proc.stderr
    assert "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_interpreter_after_a_compiled_triton_import_is_refused(monkeypatch):
    import triton  # noqa: F401  (this process: imported without the interpreter)

    from traceview.errors import CaptureError
    from traceview.workload import impls

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)

    if type(sys.modules["triton.language.standard"].sigmoid).__name__ == "InterpretedFunction":
        pytest.skip("this process runs under TRITON_INTERPRET=1")
    with pytest.raises(CaptureError, match="fresh process"):
        impls._check_interpreter_possible()


def test_plain_json_out_and_cold_twin(tmp_path):
    r, out = capture(tmp_path, "--op", "exp", "--impl", "torch", "--shape", "64",
                     "--no-with-stack", name="plain.json")
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["traceview"]["protocol"]["with_stack"] is False
    assert json.loads((tmp_path / "plain.cold.json").read_text())["traceview"]["kind"] == "cold"


def test_sync_end_and_sweep(tmp_path):
    r, out = capture(tmp_path, "--op", "neg", "--impl", "torch", "--sync", "end")
    assert r.exit_code == 0, r.output
    m = load(out)["traceview"]
    assert m["protocol"]["sync"] == "end" and any("sync end" in n for n in m["notes"])
    # the summary's notes are claims true of what this capture measured and wrote
    import traceview
    from traceview.report.claims import check, check_all
    from traceview.report.measured_lines import (
        amortized_claim,
        bandwidth_claim,
        crossover_claim,
        perturbation_claim,
    )

    amort = amortized_claim(m["baseline"])
    assert amort is not None and check(amort, {"traceview": m}) == []
    assert " ".join(amort.text.split()) in " ".join(r.stdout.split())
    report = traceview.analyze(out).to_dict()
    pert = perturbation_claim(report)
    assert pert is not None and check(pert, report) == []
    assert pert.text.endswith("% vs unprofiled submit")

    folder = tmp_path / "sw"
    r = runner.invoke(app, ["capture", "--op", "relu", "--impl", "torch", "--sweep",
                            "numel=2**6..2**8", *FAST, "--out", str(folder)])
    assert r.exit_code == 0, r.output
    summary = json.loads((folder / "sweep.json").read_text())
    assert [row["numel"] for row in summary["rows"]] == [64, 256]
    assert all(row["full_api_ns"] > 0 for row in summary["rows"])
    assert (folder / "numel_64.json.gz").exists() and (folder / "numel_64.cold.json.gz").exists()
    md = (folder / "sweep.md").read_text()
    assert "| numel |" in md and "crossover" in md.lower()
    said = [crossover_claim(summary), bandwidth_claim(summary)]
    assert check_all(said, summary) == [] and said[0].text in md
    assert "numel" in r.stdout and "full API p50" in r.stdout


def test_run_sweep_returns_data_and_writes_only_the_traces(tmp_path):
    from traceview.opcapture import CaptureConfig
    from traceview.sweep import run_sweep, write_sweep
    from traceview.sweep.sweep import SweepResult, SweepRow

    folder = tmp_path / "api"
    cfg = CaptureConfig(op="relu", impl="torch", device="cpu", iters=5, warmup=2, baseline_n=10)
    seen = []
    result = run_sweep(cfg, [64, 256], folder=folder, on_row=seen.append)
    assert isinstance(result, SweepResult) and all(isinstance(r, SweepRow) for r in seen)
    assert result.rows == tuple(seen) and [r.numel for r in result.rows] == [64, 256]
    assert all(r.error is None and r.full_api_ns > 0 for r in result.rows)
    assert sorted(p.name for p in folder.iterdir()) == [
        "numel_256.cold.json.gz", "numel_256.json.gz", "numel_64.cold.json.gz", "numel_64.json.gz"]
    files = write_sweep(result)
    assert json.loads(files[0].read_text())["rows"] == [r.to_dict() for r in result.rows]


# -- failures: one line, right exit code, nothing left behind ------------------------------

def one_line_error(r) -> str:
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert r.exception is None or isinstance(r.exception, SystemExit)
    return lines[0]


def test_wrong_output_dtype_fails_correctness(tmp_path, monkeypatch):
    from traceview.workload import impls

    def half_torch(config, device, inputs, stack):
        impl = real(config, device, inputs, stack)
        return impls.Impl("torch", lambda: impl.call().half(), impl.detail)

    real = impls._torch_impl
    monkeypatch.setattr(impls, "_torch_impl", half_torch)
    r, _ = capture(tmp_path, "--op", "mul", "--impl", "torch", "--shape", "8x8")
    assert r.exit_code == 3, r.output
    first = r.stderr.splitlines()[0]
    assert "output is (8, 8) float16, eager PyTorch gives (8, 8) float32" in first
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, fragment", [
    (["--op", "nope"], "unknown op"),
    (["--op", "mul", "--shape", "3xq"], "bad dimension"),
    (["--op", "mul", "--shape", "4x4,3x3"], "do not broadcast"),
    (["--op", "exp", "--dtype", "int64"], "does not take dtype int64"),
    (["--op", "mul", "--dtype", "float8"], "unknown dtype"),
    (["--op", "mul", "--sweep", "numel=9..3"], "bad --sweep"),
    (["--op", "mul", "--impl", "flag_gems"], "needs --device cuda"),
    (["--op", "mul", "--shape", "100000x100000x100", "--dtype", "float64", "--impl", "torch"],
     "too large for cpu memory"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, args, fragment):
    r = runner.invoke(app, ["capture", *args, "--device", "cpu",
                            "--out", str(tmp_path / "x.json.gz")])
    assert r.exit_code == 2, r.output
    assert fragment in one_line_error(r)
    assert r.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_no_gpu_is_one_line_exit_2(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    r = runner.invoke(app, ["capture", "--op", "mul", "--out", str(tmp_path / "x.json.gz")])
    assert r.exit_code == 2
    assert "no CUDA GPU" in one_line_error(r) and "--device cpu" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_flag_gems_missing_says_how_to_install(monkeypatch):
    import builtins

    from traceview.errors import CaptureError
    from traceview.workload import impls

    real_import = builtins.__import__

    def no_gems(name, *a, **k):
        if name == "flag_gems":
            raise ImportError("No module named 'flag_gems'")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_gems)
    with pytest.raises(CaptureError, match="pip install flag_gems"):
        impls._flag_gems_impl(None, None, None, None)


def test_failed_publish_leaves_nothing_behind(tmp_path, monkeypatch):
    """Disk full while writing the second file: neither trace appears, no temp remains."""
    from traceview.opcapture import tracefile

    real_stage = tracefile.Publisher.stage
    calls = []

    def flaky(self, path, data):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real_stage(self, path, data)

    monkeypatch.setattr(tracefile.Publisher, "stage", flaky)
    r, _ = capture(tmp_path, "--op", "mul", "--impl", "torch", "--shape", "8x8")
    assert r.exit_code != 0 and isinstance(r.exception, OSError)
    assert list(tmp_path.iterdir()) == []


def test_publisher_commits_all_or_nothing(tmp_path):
    from traceview.opcapture.tracefile import Publisher

    with Publisher() as pub:
        pub.stage(tmp_path / "a.json", b"{}")
        pub.stage(tmp_path / "b.json", b"{}")
        assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == []
        pub.commit()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]

    with pytest.raises(KeyboardInterrupt), Publisher() as pub:
        pub.stage(tmp_path / "c.json", b"{}")
        raise KeyboardInterrupt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]


def test_capture_help_and_validation_do_not_import_torch(tmp_path):
    code = ("import sys\n"
            "from typer.testing import CliRunner\n"
            "from traceview.cli.app import app\n"
            "r = CliRunner().invoke(app, ['capture', '--help'])\n"
            "assert r.exit_code == 0, r.output\n"
            "r = CliRunner().invoke(app, ['capture', '--op', 'nope'])\n"
            "assert r.exit_code == 2, r.output\n"
            "print([m for m in ('torch', 'triton') if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
