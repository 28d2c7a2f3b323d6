"""What ``traceview explain TRACE --format json`` imports: every run pays for each module
it loads (about a tenth of a second of a small trace's run is imports), so a package the
run does not use stays out. Checked on the console entry point's own path, in a fresh
interpreter, from the modules loaded when the process ends."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import FIXTURES

# packages the JSON, markdown and text explain never calls: the measuring half's
# (torch, triton, transformers), tables and frames (polars, pandas), the serve and
# capture stacks (pydantic: typer's validators; fsspec: remote traces only), and typer
# itself (``explain TRACE [--format F]`` runs without its parser: ``cli/explain_body.py``)
NEVER = ("torch", "triton", "transformers", "polars", "pandas", "pydantic", "scipy",
         "matplotlib", "fsspec", "flag_gems", "typer", "click")

CODE = """
import atexit, sys
def report():
    top = sorted({m.split('.')[0] for m in sys.modules})
    sys.__stdout__.write('\\nMODULES ' + ' '.join(top) + '\\n')
    sys.__stdout__.flush()
atexit.register(report)
sys.argv = ['traceview', 'explain', TRACE, '--format', FMT]
from traceview.cli.entry import main
main()
"""


def loaded(fmt: str) -> set[str]:
    trace = str(FIXTURES / "torch_mul_1x4096_f32.json.gz")
    out = subprocess.run([sys.executable, "-c", CODE.replace("TRACE", repr(trace)).replace("FMT", repr(fmt))],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("MODULES ")]
    assert line, out.stdout[-500:]
    return set(line[-1].split()[1:])


@pytest.mark.parametrize("fmt", ["json", "md", "text"])
def test_explain_imports_no_package_it_does_not_use(fmt):
    mods = loaded(fmt)
    assert "traceview" in mods and "numpy" in mods  # the probe saw the run
    assert sorted(set(NEVER) & mods) == []


def test_json_and_markdown_explain_leave_rich_out():
    """Only the text report draws for a terminal."""
    assert "rich" not in loaded("json")
    assert "rich" not in loaded("md")
