"""The public corpus: real traces from other projects, described here, never committed.

The traces come from other projects' public repositories (Kineto's samples, HTA's and
TraceLens' test data, published training profiles, ...). Their licences allow use, but
this repository holds only what describes them: one manifest per source repository in
``tests/data/public_corpus/<owner>__<repo>.json``, a list of entries naming the source
commit and path, the sha256 of the bytes, the licence and what the trace is. The bytes
themselves are copied into a corpus directory by ``tools/copy_public_corpus.py`` from a
clone (or snapshot) of each source at the named commit.

The tests that read the corpus look for it, in order, in ``$TRACEVIEW_PUBLIC_CORPUS``,
in ``../shared/public_traces`` beside the checkout (where a project-wide copy lives), and
in ``~/.cache/traceview/public_traces`` (the copy tool's default). A trace that is absent
or whose bytes differ from the manifest's sha256 is skipped with a reason that says so;
a wrong trace is never silently read.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFESTS = Path(__file__).resolve().parent / "data" / "public_corpus"


@dataclass(frozen=True)
class Entry:
    """One public trace: where it is in the corpus directory (``name``, e.g.
    ``pytorch__kineto/resnet50_pt18.json.gz``), where it came from, and what it is."""

    name: str
    repo: str
    commit: str
    path: str
    sha256: str
    licence: str
    what: str
    held_out: bool = False


def corpus_dirs() -> list[Path]:
    """Where a corpus copy may be, in the order they are tried."""
    dirs = []
    if env := os.environ.get("TRACEVIEW_PUBLIC_CORPUS"):
        dirs.append(Path(env))
    dirs.append(ROOT.parent / "shared" / "public_traces")
    dirs.append(Path.home() / ".cache" / "traceview" / "public_traces")
    return dirs


@cache
def entries() -> tuple[Entry, ...]:
    """Every manifest entry, sorted by name."""
    found: list[Entry] = []
    for manifest in sorted(MANIFESTS.glob("*.json")):
        for raw in json.loads(manifest.read_text()):
            found.append(Entry(**raw))
    return tuple(sorted(found, key=lambda e: e.name))


# Triton Proton profiles in the corpus (a ``.hatchet`` tree, a ``.chrome_trace``): explain
# reads them on their own (docs/proton.md); the Kineto tests and the reference count do not
PROTON_SUFFIXES = (".hatchet.gz", ".hatchet", ".chrome_trace.gz", ".chrome_trace")


def is_proton(entry: Entry) -> bool:
    """A Proton profile, by the name its manifest gives it."""
    return entry.name.endswith(PROTON_SUFFIXES)


def held_out_runs() -> bool:
    """The held-out traces are read only by the final check (``TRACEVIEW_HELD_OUT=1``)."""
    return os.environ.get("TRACEVIEW_HELD_OUT") == "1"


def held_out_path(name: str) -> Path:
    """The held-out trace ``name`` for a final-check test, which skips unless the final
    check is running and this machine holds the trace's bytes."""
    import pytest

    if not held_out_runs():
        pytest.skip(f"{name} is held out (TRACEVIEW_HELD_OUT=1 runs it)")
    path = locate(name)
    if path is None:
        pytest.skip(f"{name} is not in this machine's corpus copy")
    return path


def kineto_entries() -> tuple[Entry, ...]:
    """The Chrome/Kineto traces a test that reads every trace may run: no Proton profile,
    and no held-out trace unless the final check is running, so that no test reads a
    held-out trace by iterating the corpus."""
    return tuple(e for e in entries() if not is_proton(e) and (held_out_runs() or not e.held_out))


@cache
def locate(name: str) -> Path | None:
    """The path of the corpus trace ``name`` whose bytes match its manifest, or None."""
    entry = next((e for e in entries() if e.name == name), None)
    if entry is None:
        raise KeyError(f"{name} is in no manifest under {MANIFESTS}")
    for d in corpus_dirs():
        p = d / name
        if p.is_file() and hashlib.sha256(p.read_bytes()).hexdigest() == entry.sha256:
            return p
    return None
