"""capture's expected output (shape, dtype) without meta tensors: the same as eager
PyTorch's on every op, dtype pairing, rank pattern and scalar kind, and without
importing torch._dynamo (which a meta-kernel call does: 4-5 s in each checking process).
The reference here is the op called on real tensors of the full shapes."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.capture

from traceview.checks import correctness  # noqa: E402
from traceview.workload import ops  # noqa: E402

DTYPES = ("float16", "bfloat16", "float32", "float64", "int32", "int64")
SHAPES = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((3, 4), ()), ((), (3, 4)), ((2, 3, 4), (4,))]


def _tensor(shape, dtype):
    return torch.ones(shape, dtype=getattr(torch, dtype))


@pytest.mark.parametrize("op", sorted(ops.OPS))
def test_stand_ins_give_eager_shape_and_dtype(op):
    spec = ops.OPS[op]
    fn = spec.torch_fn(torch)
    cases = []
    if spec.arity == 1:
        cases = [(_tensor((3, 4), d),) for d in DTYPES] + [(_tensor((), d),) for d in DTYPES]
    else:
        for (sa, sb), da, db in itertools.product(SHAPES, DTYPES, DTYPES):
            cases.append((_tensor(sa, da), _tensor(sb, db)))
        for d, scalar in itertools.product(DTYPES, (2, 2.5, True)):
            cases.append((_tensor((3, 4), d), scalar))
    checked = 0
    for args in cases:
        try:
            want = fn(*args)
        except RuntimeError:
            continue  # eager refuses this pairing: nothing to match
        assert correctness._eager_meta(torch, fn, args) == (tuple(want.shape), want.dtype), args
        checked += 1
    assert checked >= len(cases) // 2


def test_no_dynamo_import():
    code = ("import sys, torch\n"
            "from traceview.workload import ops\n"
            "from traceview.checks import correctness\n"
            "x = torch.ones(16, 4096, dtype=torch.bfloat16)\n"
            "for op, spec in ops.OPS.items():\n"
            "    args = (x, x) if spec.arity == 2 else (x,)\n"
            "    correctness.compare(torch, spec.torch_fn(torch), args, spec.torch_fn(torch)(*args))\n"
            "print('torch._dynamo' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=True)
    assert done.stdout.split()[-1] == "False"
