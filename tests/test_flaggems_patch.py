"""The H200 A/B's known before/after (docs/figures/flaggems_type_promotion/flaggems_type_promotion_patch): the patch
lets the side's template fork and still applies, or stops the process.

Its ``sitecustomize`` must not import FlagGems at start-up (FlagGems' import initialises
CUDA, and a template whose start-up did that cannot fork: every round spawned a fresh
interpreter on the H200, 1 round in 105 s); it patches when FlagGems' pointwise module
is imported. Checked with a stand-in package of the same module path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.capture  # torch in child processes
pytest.importorskip("torch")  # the patch's cache key reads torch.Tensor

PATCH = (Path(__file__).resolve().parents[1] / "docs" / "figures" / "flaggems_type_promotion"
         / "flaggems_type_promotion_patch")

MODULE = '''CALLS = []
def type_promotion(*args, type_promotion):
    CALLS.append(args)
    return ("float32",)
'''

PROBE = '''
import sys
at_start = sorted(m for m in ("torch", "flag_gems") if m in sys.modules)
import flag_gems.utils.pointwise_dynamic as pd
for _ in range(3):
    pd.type_promotion(1, 2.0, type_promotion="DEFAULT")
print(at_start, pd.type_promotion.__name__, len(pd.CALLS))
'''


def _run(tmp_path: Path, module_text: str, patch_on: bool) -> subprocess.CompletedProcess:
    pkg = tmp_path / "flag_gems" / "utils"
    pkg.mkdir(parents=True, exist_ok=True)
    (tmp_path / "flag_gems" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "pointwise_dynamic.py").write_text(module_text)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PATCH), str(tmp_path)])}
    env.pop("TV13_PATCH", None)
    if patch_on:
        env["TV13_PATCH"] = "1"
    return subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def test_the_patch_waits_for_flag_gems_then_caches(tmp_path):
    done = _run(tmp_path, MODULE, patch_on=True)
    assert done.returncode == 0, done.stderr
    # nothing imported at start-up; patched on import; 3 calls, 1 reaches the original
    assert done.stdout.split() == ["[]", "cached_type_promotion", "1"]


def test_without_the_switch_nothing_is_patched(tmp_path):
    done = _run(tmp_path, MODULE, patch_on=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "type_promotion", "3"]


def test_a_patch_that_cannot_apply_stops_the_process(tmp_path):
    done = _run(tmp_path, "x = 1\n", patch_on=True)
    assert done.returncode == 1
    assert "issue13 patch failed: AttributeError" in done.stderr
