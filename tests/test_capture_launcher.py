"""The built-in Triton implementation in its two documented forms (``--launcher``): the
minimal launch (1-D kernel, allocate + launch, the default where it applies) and the
library-style launcher (promotion, broadcasting, strides per call); the report names the
form, shows the harness-owned part of a call from the trace, and explains amortized
submit vs full API p50. Triton runs through its CPU interpreter in fresh processes (it
must be on before triton is first imported), as tests/test_capture_cpu.py does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from test_capture_cpu import capture_in_subprocess, load, real_stderr  # noqa: E402

pytestmark = pytest.mark.capture
REPO = Path(__file__).resolve().parent.parent


def _interpreted(code: str) -> dict:
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_minimal_kernel_computes_every_op_like_torch():
    got = _interpreted("""
        import json, torch
        from traceview.workload import kernels, ops
        out = {}
        g = torch.Generator().manual_seed(0)
        for op in ("add", "sub", "mul", "div", "neg", "abs", "relu", "sigmoid", "silu",
                   "gelu", "exp"):
            spec = ops.get_op(op)
            for dtype in (torch.float32, torch.bfloat16):
                x = torch.randn(3, 100, generator=g).to(dtype)
                args = (x,) if spec.arity == 1 else (x, torch.rand(3, 100, generator=g).to(dtype) + 0.5)
                fits, why = kernels.minimal_applies(torch, op, args)
                launcher = kernels.MinimalLauncher(torch, op, args)
                mine = launcher(*args)
                ref = spec.torch_fn(torch)(*(a.double() for a in args)).to(dtype)
                tol = 1e-5 if dtype == torch.float32 else 1e-2
                out[f"{op}/{dtype}"] = [fits, mine.dtype == dtype and mine.shape == x.shape,
                                        float((mine.double() - ref.double()).abs().max()) <= tol * (1 + float(ref.double().abs().max()))]
            if spec.arity == 2:
                s = launcher_s = kernels.MinimalLauncher(torch, op, (x, 2.5))
                r = s(x, 2.5)
                out[f"{op}/scalar"] = [kernels.minimal_applies(torch, op, (x, 2.5))[0], True,
                                       bool(torch.allclose(r.double(), spec.torch_fn(torch)(x.double(), 2.5).to(x.dtype).double(), atol=1e-2, rtol=1e-2))]
        print(json.dumps(out))
    """)
    assert len(got) == 11 * 2 + 4
    assert all(v == [True, True, True] for v in got.values()), {k: v for k, v in got.items()
                                                                if v != [True, True, True]}


def test_the_minimal_form_is_refused_where_it_would_compute_something_else():
    got = _interpreted("""
        import json, torch
        from traceview.workload.kernels import minimal_applies as ok
        x = torch.ones(4, 8)
        print(json.dumps({
            "same": ok(torch, "add", (x, torch.ones(4, 8))),
            "broadcast": ok(torch, "add", (x, torch.ones(8))),
            "dtypes": ok(torch, "add", (x, torch.ones(4, 8, dtype=torch.float64))),
            "transposed": ok(torch, "add", (x.t(), torch.ones(8, 4))),
            "int div": ok(torch, "div", (torch.ones(4, dtype=torch.int32),) * 2),
            "promoting scalar": ok(torch, "mul", (torch.ones(4, dtype=torch.int32), 2.5)),
            "int scalar": ok(torch, "mul", (torch.ones(4, dtype=torch.int32), 3)),
        }))
    """)
    assert got["same"][0] and got["int scalar"][0]
    for case, reason in (("broadcast", "broadcast"), ("dtypes", "dtypes"),
                         ("transposed", "not contiguous"), ("int div", "div"),
                         ("promoting scalar", "scalar promotes")):
        assert got[case][0] is False and reason in got[case][1], (case, got[case])


def test_capture_names_the_form_shows_the_harness_part_and_explains_amortized(tmp_path,
                                                                             monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")  # one line per table row
    proc, out = capture_in_subprocess(tmp_path, "--op", "add", "--impl", "triton",
                                      "--shape", "4x64", "--with-stack")
    assert proc.returncode == 0, proc.stderr
    m = load(out)["traceview"]
    d = m["impl_detail"]
    assert d["launcher_form"] == "minimal" and d["kernel"] == "flat_binary_kernel"
    assert d["launcher"] == "traceview.workload.kernels.MinimalLauncher"
    assert d["launcher_why"].startswith("auto: contiguous inputs of one shape and dtype")
    import re

    text = " ".join(re.sub(r"[│┃]", " ", proc.stdout).split())
    assert "launcher minimal minimal: 1-D flat_binary_kernel with 4 runtime arguments, grid and launch prepared once" in text
    assert "is the median of 10 calls each timed alone up to a synchronize" in text
    assert "Amortized submit" in text and "a mean, not a median" in text
    import traceview

    r = traceview.analyze(out)
    want = sum(f.ns_per_call for f in r.host.families if f.name.split(".")[0] == "traceview")
    from traceview.units import fmt_ns

    assert want > 0
    line = re.search(r"trace: harness \(traceview\) per call (\S+ \S+)", text)
    assert line and line.group(1) == fmt_ns(want)
    assert "trace: Triton per call" in text and "trace: torch per call" in text
    assert "trace: of it, traceview's own Python" in text
    assert "--launcher" not in m["reproducer"]  # auto is the default


def test_library_form_on_request_and_for_broadcast(tmp_path):
    proc, out = capture_in_subprocess(tmp_path, "--op", "add", "--impl", "triton",
                                      "--shape", "4x64", "--launcher", "library", name="l.json.gz")
    assert proc.returncode == 0, proc.stderr
    m = load(out)["traceview"]
    assert m["impl_detail"]["launcher_form"] == "library"
    assert m["impl_detail"]["launcher"] == "traceview.workload.kernels.PointwiseLauncher"
    assert "--launcher library" in m["reproducer"]
    proc, out = capture_in_subprocess(tmp_path, "--op", "add", "--impl", "triton",
                                      "--shape", "4x64,64", name="b.json.gz")
    assert proc.returncode == 0, proc.stderr
    d = load(out)["traceview"]["impl_detail"]
    assert d["launcher_form"] == "library" and d["launcher_why"] == "auto: the inputs broadcast"


def test_minimal_where_it_does_not_apply_is_one_line_exit_2(tmp_path):
    proc, out = capture_in_subprocess(tmp_path, "--op", "add", "--impl", "triton",
                                      "--shape", "4x64,64", "--launcher", "minimal")
    assert proc.returncode == 2, proc.stderr
    err = real_stderr(proc)
    assert len(err) == 1 and "--launcher minimal does not apply: the inputs broadcast" in err[0]
    assert not out.exists()


def test_amortized_words_say_which_way_and_why():
    from traceview.render.measured.capture import amortized_words

    above = amortized_words({"full_api_ns_p50": 68_900, "amortized_submit_ns": 71_700, "n": 200})
    assert "full API p50 (68.9 us)" in above and "Amortized submit (71.7 us)" in above
    assert "above the p50, as here" in above
    below = amortized_words({"full_api_ns_p50": 68_900, "amortized_submit_ns": 20_000, "n": 200})
    assert "below the p50" in below
    assert amortized_words({"full_api_ns_p50": None, "amortized_submit_ns": 1, "n": 1}) == ""


def test_the_harness_row_names_traceviews_own_python_apart_from_what_it_calls():
    """--impl torch's call wrapper (impls.py's lambda) holds the op itself: the harness
    row (module table: builtins and ops go to their caller's module) counts aten::mul,
    traceview's own Python is the lambda's self time. Independent count from the raw
    events: per call, the lambda's duration minus the union of the events inside it on
    its thread, median over the calls after the cold first one."""
    import gzip

    import traceview
    from rawcount import length, union
    from traceview.render.measured.capture import harness_python, owner_split

    path = REPO / "fixtures" / "torch_mul_1x4096_f32_stack.json.gz"
    r = traceview.analyze(path)
    events = [e for e in json.load(gzip.open(path))["traceEvents"] if e.get("ph") == "X"]

    def ns(x):
        return round(float(x) * 1000)

    own = []
    for lam in (e for e in events if e["name"].endswith("traceview/capture/impls.py(55): <lambda>")):
        lo, hi = ns(lam["ts"]), ns(lam["ts"]) + ns(lam["dur"])
        inside = [[ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])] for e in events
                  if e is not lam and e.get("tid") == lam.get("tid")
                  and lo <= ns(e["ts"]) and ns(e["ts"]) + ns(e["dur"]) <= hi]
        own.append(hi - lo - length(union(inside)))
    assert len(own) == 30
    warm = sorted(own[1:])
    assert harness_python(r) == warm[len(warm) // 2]
    harness = dict(owner_split(r))["harness (traceview)"]
    assert harness_python(r) < harness / 10  # the rest is the op under the wrapper
