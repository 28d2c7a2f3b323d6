"""Golden outputs of the Proton renderers (text at 80 and 120 columns, markdown, JSON) for the
four H200 Proton fixtures, byte for byte. Refresh after an intended change with
``TRACEVIEW_UPDATE_GOLDEN=1 python -m pytest tests/test_proton_golden.py`` and review the
diff in git."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from conftest import FIXTURES
from traceview.io import proton
from traceview.render.proton import render
from traceview.report.proton import trace_report, tree_report

GOLDEN = Path(__file__).parent / "golden"
UPDATE = bool(os.environ.get("TRACEVIEW_UPDATE_GOLDEN"))
NAMES = ("proton_mul_20_calls.chrome_trace", "proton_nested.chrome_trace",
         "proton_mul_20_calls.hatchet", "proton_nested.hatchet")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("suffix", "fmt", "width"),
                         [("text80.txt", "text", 80), ("text120.txt", "text", 120),
                          ("md", "md", 80), ("json", "json", 80)])
def test_proton_golden(name, suffix, fmt, width):
    path = FIXTURES / "proton" / f"{name}.gz"
    # the path inside the report is relative, as the CLI from the repository root shows it
    rel = os.path.relpath(path, FIXTURES.parent)
    cwd = os.getcwd()
    os.chdir(FIXTURES.parent)
    try:
        r = trace_report(proton.read_trace(rel)) if proton.sniff(rel) == "trace" \
            else tree_report(proton.read_tree(rel))
    finally:
        os.chdir(cwd)
    out = render(r, fmt, width)
    golden = GOLDEN / f"{name}.{suffix}"
    if UPDATE:
        golden.write_text(out)
    want = golden.read_text()
    assert out == want, "".join(difflib.unified_diff(want.splitlines(True), out.splitlines(True)))
