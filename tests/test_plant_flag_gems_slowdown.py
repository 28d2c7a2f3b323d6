"""The planted check's FlagGems shim (tools/plant_flag_gems_slowdown/sitecustomize.py) slows
the planted op however FlagGems registers it: switched on alone (``use_gems(include=[op])``,
from FlagGems 5.0.2's name index, as ``serve --attribute`` and the bisect do) and with the
whole backend (``use_gems(exclude=...)``, from its table). Run against the CPU stand-in
with FlagGems' API (tests/planted_gems, whose own wait is set to 0 here), each call timed
by this test's own clock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHIM = ROOT / "tools" / "plant_flag_gems_slowdown"
STAND_IN = ROOT / "tests" / "planted_gems"
WAIT_NS = 3_000_000

PROBE = """
import json, time, torch, flag_gems
x = torch.randn(8)
out = {}
for name, mode in (("alone", {"include": ["neg"]}), ("whole", {"exclude": []}),
                   ("other op alone", {"include": ["silu"]})):
    with flag_gems.use_gems(**mode):
        torch.neg(x)
        t = time.perf_counter_ns()
        torch.neg(x)
        out[name] = time.perf_counter_ns() - t
print(json.dumps(out))
"""


def _probe(shim: bool) -> dict[str, int]:
    pytest.importorskip("torch")
    path = [str(SHIM)] if shim else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, str(STAND_IN), str(ROOT)]),
           "PLANTED_FLAG_GEMS_SLOW": f"neg:{WAIT_NS}", "PLANTED_GEMS_SLOW": "neg:0"}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    if shim:
        assert "planted: 1 entries of neg busy-wait 3000000 ns (and its include index)" \
            in done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_planted_op_waits_alone_and_with_the_whole_backend():
    got = _probe(shim=True)
    assert got["alone"] >= WAIT_NS and got["whole"] >= WAIT_NS, got
    # an op switched on that is not the planted one does not wait
    assert got["other op alone"] < WAIT_NS, got


def test_without_the_shim_nothing_waits():
    got = _probe(shim=False)
    assert all(v < WAIT_NS for v in got.values()), got
