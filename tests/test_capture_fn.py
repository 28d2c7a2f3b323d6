"""capture --fn/--inputs/--ref and traceview.capture(fn, ...) on the CPU."""

from __future__ import annotations

import gzip
import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

torch = pytest.importorskip("torch")

from traceview.cli.app import app

pytestmark = pytest.mark.capture
FAST = ["--device", "cpu", "--iters", "4", "--warmup", "2", "--baseline-n", "10"]
USER = textwrap.dedent('''
    import torch

    def add(a, b):
        return torch.add(a, b)

    def off_by_one(a, b):
        return torch.add(a, b) + 1

    def make(device):
        g = torch.Generator(device=device).manual_seed(3)
        return (torch.randn(8, 64, generator=g, device=device), 2.5)

    def axpy(x, s):
        return s * x + x

    def axpy_ref(x, s):
        return (s + 1.0) * x
''')


def _meta(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))["traceview"]


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    (tmp_path / "userk.py").write_text(USER)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_capture_fn_runs_the_protocol_and_records_the_callable(user_dir):
    out = user_dir / "fn.json.gz"
    r = CliRunner().invoke(app, ["capture", "--op", "add", "--fn", "userk:add", "--shape",
                                 "4x64", *FAST, "--out", str(out)])
    assert r.exit_code == 0, r.output
    m = _meta(out)
    assert m["impl"] == "fn" and m["impl_detail"] == {"entry": "userk:add"}
    assert m["correctness"]["passed"] is True and m["correctness"]["reference"] == "float64"
    assert "--fn userk:add" in m["reproducer"] and "--impl" not in m["reproducer"]
    assert len(m["baseline"]["per_process"]) == 3


def test_capture_fn_wrong_output_is_exit_3_and_nothing_written(user_dir):
    out = user_dir / "bad.json.gz"
    r = CliRunner().invoke(app, ["capture", "--op", "add", "--fn", "userk:off_by_one",
                                 "--shape", "4x64", *FAST, "--out", str(out)])
    assert r.exit_code == 3 and "userk:off_by_one" in r.output and not out.exists()


def test_capture_fn_with_user_inputs_and_reference(user_dir):
    out = user_dir / "axpy.json.gz"
    r = CliRunner().invoke(app, ["capture", "--op", "mul", "--fn", "userk:axpy", "--inputs",
                                 "userk:make", "--ref", "userk:axpy_ref", *FAST,
                                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    m = _meta(out)
    assert m["correctness"]["reference"] == "float64 via --ref userk:axpy_ref"
    assert m["input_shapes"] == [[8, 64]] and m["scalars"] == [2.5]


@pytest.mark.parametrize(("args", "fragment"), [
    (["--fn", "no_colon"], "use pkg.module:function"),
    (["--fn", "nosuchmodule_xyz:f"], "cannot import 'nosuchmodule_xyz'"),
    (["--fn", "userk:missing"], "has no attribute 'missing'"),
    (["--fn", "userk:add", "--impl", "torch"], "do not combine it with --impl"),
])
def test_bad_user_code_is_one_line_exit_2(user_dir, args, fragment):
    r = CliRunner().invoke(app, ["capture", "--op", "add", "--shape", "4x64", *FAST, *args,
                                 "--out", str(user_dir / "x.json.gz")])
    assert r.exit_code == 2 and fragment in r.output, r.output
    assert "Traceback" not in r.output


def test_python_api_captures_a_live_callable(tmp_path):
    import traceview

    a, b = torch.randn(4, 64), torch.randn(4, 64)
    out = tmp_path / "api.json.gz"
    meta = traceview.capture(torch.add, a, b, reference=torch.add, out=out, warmup=2, iters=4,
                             baseline_n=10)
    assert out.exists() and (tmp_path / "api.cold.json.gz").exists()
    m = _meta(out)
    assert m == json.loads(json.dumps(meta))
    assert m["correctness"]["passed"] is True and m["baseline"]["processes"] == 1
    samples = m["baseline"]["full_api_ns_samples"]
    assert len(samples) == 10 and m["baseline"]["full_api_ns_p50"] == sorted(samples)[4]
    calls = [e["name"] for e in json.loads(gzip.decompress(out.read_bytes()))["traceEvents"]
             if e.get("cat") == "user_annotation" and e["name"].startswith("call_")]
    assert sorted(calls) == [f"call_{i}" for i in range(4)]
    from traceview.errors import CorrectnessError

    with pytest.raises(CorrectnessError):
        traceview.capture(lambda x, y: x + y + 1, a, b, reference=torch.add,
                          out=tmp_path / "bad.json.gz", warmup=1, iters=2, baseline_n=5)
    assert not (tmp_path / "bad.json.gz").exists()


def test_examples_triton_kernel_through_the_interpreter(tmp_path):
    """The docs' hand-written Triton kernel, on the CPU through Triton's interpreter (a
    fresh process: TRITON_INTERPRET must be set before triton is imported)."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "tk.json.gz"
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(root))
    r = subprocess.run([sys.executable, "-m", "traceview", "capture", "--op", "add", "--fn",
                        "examples.triton_add:add", "--shape", "4x256", "--dtype", "bf16",
                        *FAST, "--out", str(out)], cwd=root, env=env, capture_output=True,
                       text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    m = _meta(out)
    assert m["impl_detail"]["entry"] == "examples.triton_add:add"
    assert m["correctness"]["passed"] is True and m["dtype"] == "bfloat16"
