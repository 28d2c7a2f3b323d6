"""Write explain's text (80 and 120 columns), JSON and markdown output for every fixture
trace into a folder, so that two versions of the code can be compared byte for byte.

Run it once with the old code on ``PYTHONPATH`` and once with the new, then ``diff -r``
the two folders (or pass ``--compare OLD_DIR`` to write and compare in one go): a
refactoring that must not change what people read is checked on every fixture, not on
the few that have goldens.

    PYTHONPATH=/path/to/old python tools/fixture_outputs.py /tmp/before
    PYTHONPATH=. python tools/fixture_outputs.py /tmp/after --compare /tmp/before
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORMATS = (("text80", ["--format", "text", "--width", "80"]),
           ("text120", ["--format", "text", "--width", "120"]),
           ("json", ["--format", "json"]),
           ("md", ["--format", "md"]))


def write_outputs(out: Path, fixtures: list[Path]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    # ``python -m`` puts its working folder first on sys.path: run from a folder that
    # holds only a link to the fixtures, so that PYTHONPATH picks the code compared
    work = out / ".run"
    work.mkdir(exist_ok=True)
    if not (work / "fixtures").exists():
        (work / "fixtures").symlink_to(ROOT / "fixtures")
    for trace in fixtures:
        for label, flags in FORMATS:
            run = subprocess.run([sys.executable, "-m", "traceview", "explain",
                                  str(trace.relative_to(ROOT)), *flags],
                                 capture_output=True, cwd=work, check=False)
            name = f"{trace.name}.{label}"
            # the exit code and stderr are part of what a user sees
            (out / name).write_bytes(run.stdout + b"\n--- rc %d stderr:\n" % run.returncode
                                     + run.stderr)


def compare(old: Path, new: Path) -> list[str]:
    differ = []
    for a in sorted(old.iterdir()):
        if a.name.startswith("."):
            continue
        b = new / a.name
        if not b.exists() or a.read_bytes() != b.read_bytes():
            differ.append(a.name)
    return differ


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--compare", type=Path, help="a folder written by the other version")
    ap.add_argument("--only", help="a substring of the fixture names to run")
    args = ap.parse_args()
    fixtures = sorted(p for p in (ROOT / "fixtures").glob("*.json.gz")
                      if args.only is None or args.only in p.name)
    write_outputs(args.out, fixtures)
    if args.compare is None:
        return 0
    differ = compare(args.compare, args.out)
    for name in differ:
        print(f"differs: {name}")
    print(f"{len(differ)} of {sum(1 for p in args.compare.iterdir() if not p.name.startswith('.'))} outputs differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
