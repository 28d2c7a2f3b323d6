"""``capture --check-cache`` on the CPU: planted cache bugs are caught at the right call.

The implementations under test are ``examples/cached_add.py`` (a Triton kernel, run
through Triton's interpreter in a fresh process) and small user modules written here.
Where the first wrong call must be is known from the bug, not from the tool: a dtype
cache keyed on shapes is first wrong on the first call with the base's shapes in another
dtype; a launch-plan cache that ignores strides on the first view of the base's shape
with other strides.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

from traceview import documents  # noqa: E402
from traceview.checks import cache_check, reports  # noqa: E402
from traceview.workload.config import CaptureConfig  # noqa: E402

pytestmark = pytest.mark.capture
REPO = Path(__file__).resolve().parents[1]


def run(tmp_path: Path, *args: str, interpret: bool = True) -> tuple[int, dict, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path)])}
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    proc = subprocess.run([sys.executable, "-m", "traceview", "capture", "--check-cache",
                           "--device", "cpu", "--format", "json", "--shape", "4x6x8", *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert "Traceback" not in proc.stderr, proc.stderr
    doc = json.loads(proc.stdout)
    # every report is its kind's typed layout (docs/schemas/), unknown keys refused
    if proc.returncode == 0:
        documents.read(doc, "cache_check", reports.CacheCheckResult)
    else:
        documents.read(doc, "check", reports.CheckReport)
    return proc.returncode, doc, proc.stderr


def test_the_sequence_alternates_base_and_one_change():
    config = CaptureConfig(op="add", shapes=((4, 6, 8),), device="cpu")
    s = cache_check.steps(config)
    assert len(s) % 2 == 1 and all(x.name in ("base", "base again") for x in s[::2])
    base = ({"shape": [4, 6, 8], "dtype": "float32", "layout": "contiguous"},) * 2
    assert all(x.operands == base for x in s[::2])
    names = [x.name for x in s[1::2]]
    assert names[:3] == ["shape: larger (8x6x8)", "shape: smaller (4x6x4)",
                         "shape: same elements, rank 1 (192)"]
    for want in ("strides: lhs transposed view", "strides: rhs broadcast on dim 0 (1x6x8)",
                 "strides: lhs every other element", "dtype: both float16", "dtype: rhs float64",
                 "scalar: rhs Python float 2.5", "scalar: rhs Python int -3",
                 "storage offset: lhs starts 1 element in (not 16-byte aligned)"):
        assert want in names
    assert not any(n.startswith(("stream", "graph")) for n in names)  # CUDA only
    cuda = [x.context for x in cache_check.steps(config.with_(device="cuda"))]
    assert "stream" in cuda and "graph" in cuda
    unary = [x.name for x in cache_check.steps(CaptureConfig(op="exp", shapes=((4, 6),),
                                                             device="cpu"))]
    assert "dtype: float16" in unary and not any("scalar" in n for n in unary)


def test_changes_between_reads_the_operands_as_built():
    a = {"kind": "tensor", "shape": [4, 6], "dtype": "float32", "strides": [6, 1],
         "storage_offset": 0, "align16": True, "device": "cpu"}
    before = {"context": "eager", "operands": [a, a]}
    after = {"context": "eager", "operands": [dict(a, strides=[1, 4], dtype="float16"),
                                              {"kind": "scalar", "value": 2.5, "type": "float"}]}
    assert cache_check.changes_between(before, after) == [
        "a: dtype float32 -> float16", "a: strides 6x1 -> 1x4",
        "b: tensor 4x6 float32 -> Python float 2.5"]
    odd = {"context": "graph", "operands": [dict(a, storage_offset=1, align16=False), a]}
    assert cache_check.changes_between(before, odd) == [
        "context eager -> graph", "a: storage offset 0 -> 1", "a: 16-byte aligned True -> False"]
    assert cache_check.changes_between(None, before) == ["the first call of the process"]


def _nth_change(config: CaptureConfig, name: str) -> int:
    """The 1-based call of the change called ``name``: base is call 1, change k is 2k."""
    names = [x.name for x in cache_check.steps(config)[1::2]]
    return 2 * (names.index(name) + 1)


def test_a_promotion_cache_keyed_on_shapes_is_caught_at_the_first_other_dtype(tmp_path):
    code, rep, err = run(tmp_path, "--op", "add", "--fn", "examples.cached_add:bad_promotion_cache")
    assert code == 3, err
    cc = rep["cache_check"]
    assert cc["name"] == "dtype: both float16"
    assert cc["call"] == _nth_change(CaptureConfig(op="add", shapes=((4, 6, 8),), device="cpu"),
                                     "dtype: both float16")
    assert cc["passed_before"] == cc["call"] - 1
    assert cc["changed"] == ["a: dtype float32 -> float16", "b: dtype float32 -> float16"]
    assert cc["previous"]["name"] == "base again"
    c = rep["comparison"]
    assert (c["out_dtype"], c["expected_dtype"]) == ("float32", "float16")
    assert [o["dtype"] for o in rep["operands"]] == ["float16", "float16"]
    assert rep["reproducer"].endswith("--check-cache")
    assert "--fn examples.cached_add:bad_promotion_cache" in rep["reproducer"]
    assert "call" in err and "dtype: both float16" in err.splitlines()[0]


def test_a_launch_plan_cache_that_ignores_strides_is_caught_at_the_first_transposed_view(tmp_path):
    code, rep, err = run(tmp_path, "--op", "add", "--fn", "examples.cached_add:bad_grid_cache")
    assert code == 3, err
    cc = rep["cache_check"]
    assert cc["name"] == "strides: lhs transposed view"
    assert cc["passed_before"] == cc["call"] - 1
    assert cc["changed"] == ["a: strides 48x8x1 -> 48x1x6"]
    c = rep["comparison"]
    assert c["wrong"] > 0 and c["max_abs_err"] > 0.1 and c["out_of_range"] == 0
    assert rep["operands"][0]["strides"] == [48, 1, 6]
    # the every-other-element view (same shape, other strides) is wrong too; the base
    # calls after it stay right (the cached plan is the contiguous one)
    rows = {r["call"]: r for r in cc["rows"]}
    assert rows[cc["call"] + 1]["status"] == "pass"
    wrong = {rows[n]["name"] for n in cc["wrong_calls"]}
    assert wrong == {"strides: lhs transposed view", "strides: lhs every other element"}


def test_a_correct_cache_passes_every_call(tmp_path):
    code, doc, err = run(tmp_path, "--op", "add", "--fn", "examples.cached_add:cached_add")
    assert code == 0, err
    assert doc["passed"] is True and doc["calls"] == len(doc["rows"]) == 27
    assert all(r["status"] == "pass" for r in doc["rows"])
    dtypes = {r["name"]: r["out_dtype"] for r in doc["rows"]}
    assert dtypes["dtype: both float16"] == "float16" and dtypes["dtype: rhs float64"] == "float64"
    assert dtypes["scalar: rhs Python int -3"] == "float32"


def test_eager_torch_passes_and_a_crash_names_its_call(tmp_path):
    code, doc, err = run(tmp_path, "--op", "mul", "--impl", "torch", interpret=False)
    assert code == 0 and doc["passed"], err
    (tmp_path / "cc_user.py").write_text(textwrap.dedent('''
        import torch

        def picky(a, b):
            if isinstance(b, torch.Tensor) and b.dim() == 0:
                raise RuntimeError("no 0-dim operands")
            return torch.mul(a, b)

        _seen = {}

        def memo(a, b):  # a cache of results keyed on shape: wrong on every new value
            key = tuple(a.shape)
            if key not in _seen:
                _seen[key] = torch.mul(a, b)
            return _seen[key]
    '''))
    code, rep, err = run(tmp_path, "--op", "mul", "--fn", "cc_user:picky", interpret=False)
    assert code == 3 and rep["verdict"] == "crashed", err
    assert rep["cache_check"]["name"] == "dtype: rhs a 0-dim float64 tensor"
    assert rep["crash"]["error"] == "RuntimeError: no 0-dim operands"
    assert "cc_user.py" in rep["crash"]["frame"]
    code, rep, err = run(tmp_path, "--op", "mul", "--fn", "cc_user:memo", interpret=False)
    # call 3 is the base again, with new values: the result cached by call 1 is stale
    assert code == 3 and rep["cache_check"]["call"] == 3
    assert rep["cache_check"]["changed"] == ["a: shape 8x6x8 -> 4x6x8", "b: shape 8x6x8 -> 4x6x8"]
    assert cache_check.changes_between({"operands": [{"kind": "tensor"}]},
                                       {"operands": [{"kind": "tensor"}]}) == [
        "nothing in the operands (same shapes, dtypes, strides, offsets; new values)"]


def test_check_cache_refuses_what_it_cannot_do(tmp_path):
    from typer.testing import CliRunner

    from traceview.cli.app import app

    r = CliRunner().invoke(app, ["capture", "--op", "add", "--check-cache", "--sweep",
                                 "numel=2**8..2**10"])
    assert r.exit_code == 2 and "--check-cache writes nothing" in r.output
    r = CliRunner().invoke(app, ["capture", "--op", "add", "--check-cache", "--check-layouts"])
    assert r.exit_code == 2 and "one at a time" in r.output


def test_ab_check_cache_stops_before_any_round_naming_the_side(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-m", "traceview", "ab", "--op", "add", "--shape",
                           "4x6x8", "--device", "cpu", "--a-impl", "torch", "--b-fn",
                           "examples.cached_add:bad_promotion_cache", "--check-cache",
                           "--rounds", "2", "--baseline-n", "5", "--warmup", "1"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    first = proc.stderr.splitlines()[0]
    assert first.startswith("traceview: error: side B: cache check failed")
    assert "(dtype: both float16)" in first
    assert "round" not in proc.stderr  # no round ran


def test_triton_s_own_promotion_of_bf16_plus_fp16_is_caught_at_the_mixed_dtype_call(tmp_path):
    """What made FlagGems 5.0.2's ``add`` fail ``--check-cache`` on the H200 (bfloat16 base,
    call 20 "dtype: rhs float16", worst error 2**-9): a kernel that loads each operand in its
    own dtype leaves the arithmetic to Triton, whose promotion computes bfloat16 + float16 in
    float16 ("if one operand is half, the other is implicitly converted to half",
    triton/language/semantic.py), where PyTorch computes in float32. Only operands of two
    different dtypes go to the Triton kernel here (broadcast and made contiguous first;
    same dtypes, scalars and 0-dim tensors go to torch: Triton's CPU interpreter also
    cannot store bfloat16), so that promotion is the one thing that can be wrong."""
    (tmp_path / "cc_mixed.py").write_text(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl

        @triton.jit
        def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            x = tl.load(x_ptr + offs, mask=mask)
            y = tl.load(y_ptr + offs, mask=mask)
            tl.store(out_ptr + offs, x + y, mask=mask)  # Triton's promotion, not torch's

        def add_in_triton_dtypes(a, b):
            if not isinstance(b, torch.Tensor) or b.dim() == 0 or a.dtype == b.dtype:
                return torch.add(a, b)
            a, b = (t.contiguous() for t in torch.broadcast_tensors(a, b))
            out = torch.empty_like(a, dtype=torch.result_type(a, b))
            n = out.numel()
            _add[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
            return out
    '''))
    code, rep, err = run(tmp_path, "--op", "add", "--dtype", "bfloat16",
                         "--fn", "cc_mixed:add_in_triton_dtypes")
    assert code == 3, err
    cc = rep["cache_check"]
    assert cc["name"] == "dtype: rhs float16"
    assert cc["changed"] == ["b: dtype bfloat16 -> float16"]
    assert cc["wrong_calls"] == [cc["call"]]  # nothing else in the sequence is wrong
    c = rep["comparison"]
    assert (c["out_dtype"], c["expected_dtype"]) == ("float32", "float32")
    # float16 rounding of a sum below 8: at most half of float16's spacing there, 2**-8
    assert 0 < c["max_abs_err"] <= 2 ** -9


def test_eager_torch_in_bfloat16_passes_the_0_dim_float64_step(tmp_path):
    """PyTorch on the CPU rounds a 0-dim float64 operand to bfloat16 before adding; where the
    sum cancels that is far from the float64 reference (``-1.0 + 1.0318`` gives 0.03125,
    the reference 0.0318), and eager PyTorch used to "fail" this step. Checked here on the
    value that shows it, and on the whole sequence."""
    import torch

    from traceview.checks.correctness import compare

    a = torch.tensor([-1.0, 2.0], dtype=torch.bfloat16)
    b = torch.tensor(1.0318, dtype=torch.float64)
    got = torch.add(a, b)
    assert abs(float(got[0]) - (-1.0 + 1.0318)) > 0.016 * 0.0318 + 1e-5  # the old failure
    assert compare(torch, torch.add, (a, b), got)["passed"]
    wrong = got.clone()
    wrong[1] = 2.5
    c = compare(torch, torch.add, (a, b), wrong)
    assert not c["passed"] and c["wrong"] == 1 and c["worst"]["index"] == [1]
    code, doc, err = run(tmp_path, "--op", "add", "--dtype", "bfloat16", "--impl", "torch",
                         interpret=False)
    assert code == 0 and doc["passed"], err
