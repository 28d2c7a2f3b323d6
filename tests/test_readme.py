"""The README's sample output is what its own command prints today.

The README's first command explains a bundled fixture; the ```text block after it shows
the summary paragraphs of that report (the verdict and the unprofiled baseline: every
paragraph between the header and the first table) at 80 columns. This test runs the
command as the README gives it, in a fresh process with ``COLUMNS=80``, and compares.
When the terminal report changes on purpose, refresh the block with

    TRACEVIEW_UPDATE_GOLDEN=1 python -m pytest tests/test_readme.py

and review the README's diff.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
UPDATE = bool(os.environ.get("TRACEVIEW_UPDATE_GOLDEN"))


def _command(text: str) -> list[str]:
    """The README's explain command (in its first ```bash block), as arguments."""
    block = re.search(r"```bash\n(.*?)```", text, re.DOTALL)
    assert block, "README.md has no ```bash block"
    m = re.search(r"\btraceview (explain [^\n&|;]+)", block.group(1))
    assert m, "the README's first block runs no `traceview explain`"
    return shlex.split(m.group(1))


def _sample(text: str) -> re.Match:
    m = re.search(r"```text\n(.*?)```", text, re.DOTALL)
    assert m, "README.md has no ```text sample"
    return m


def summary(output: str) -> str:
    """The paragraphs after the report's header, up to the first table."""
    lines = [ln.rstrip() for ln in output.splitlines()]
    paragraphs = "\n".join(lines).split("\n\n")
    kept = []
    for p in paragraphs[1:]:
        if "┏" in p or "╭" in p:
            break
        if p.strip():
            kept.append(p.strip("\n"))
    return "\n\n".join(kept) + "\n"


def test_summary_takes_the_paragraphs_between_header_and_first_table():
    out = "head\nmore\n\nverdict one  \ntwo\n\nbaseline\n\nTitle\n┏━━┓\n│x │\n\nlater\n"
    assert summary(out) == "verdict one\ntwo\n\nbaseline\n"


def test_readme_sample_is_what_its_command_prints():
    text = README.read_text()
    args = _command(text)
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    env.pop("TRACEVIEW_NO_NATIVE", None)
    done = subprocess.run([sys.executable, "-m", "traceview", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    want = summary(done.stdout)
    assert want.count("\n") >= 2, done.stdout[:2000]  # the verdict at least
    sample = _sample(text)
    if UPDATE:
        README.write_text(text[:sample.start(1)] + want + text[sample.end(1):])
        return
    assert sample.group(1) == want, (
        "README.md's sample output differs from what its command prints; refresh it with "
        "TRACEVIEW_UPDATE_GOLDEN=1 python -m pytest tests/test_readme.py\n" + want)
