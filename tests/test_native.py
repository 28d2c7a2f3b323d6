"""The loader of the compiled helpers (traceview/native.py): the switch, the stale-library
check and ``traceview --version``.

A stale library is made for real: the helper's own source compiled into a temporary
directory with another ``TV_SOURCE_SHA256`` (what an edit of the ``.c`` without a rebuild
leaves behind), one with another ABI version, and one from before the check existed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from traceview import native

CC = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
needs_cc = pytest.mark.skipif(not CC, reason="no C compiler")
ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("value", "off"), [("1", True), ("true", True), ("YES", True),
                                            ("0", False), ("", False), ("no", False)])
def test_no_native_switch(monkeypatch, value, off):
    monkeypatch.setenv("TRACEVIEW_NO_NATIVE", value)
    assert native.switched_off() is off


def _compile(tmp_path: Path, which: str, sha: str | None, source_text: str | None = None) -> native.Library:
    lib = native.LIBRARIES[which]
    src = tmp_path / lib.source.name
    src.write_text(source_text if source_text is not None else lib.source.read_text())
    out = tmp_path / lib.path.name
    cmd = [CC, "-O0", "-shared", "-fPIC", "-o", str(out), str(src)]
    if sha is not None:
        cmd.insert(1, f'-DTV_SOURCE_SHA256="{sha}"')
    subprocess.run(cmd, check=True)
    return replace(lib, path=out)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@needs_cc
@pytest.mark.parametrize("which", sorted(native.LIBRARIES))
def test_a_library_built_from_its_source_is_used(tmp_path, monkeypatch, which):
    monkeypatch.delenv("TRACEVIEW_NO_NATIVE", raising=False)
    lib = _compile(tmp_path, which, _sha(native.LIBRARIES[which].source))
    fn, why = native._open(lib)
    assert why == "in use" and fn is not None


@needs_cc
@pytest.mark.parametrize("which", sorted(native.LIBRARIES))
def test_a_library_from_another_source_is_refused(tmp_path, monkeypatch, which):
    monkeypatch.delenv("TRACEVIEW_NO_NATIVE", raising=False)
    lib = _compile(tmp_path, which, "0" * 64)
    fn, why = native._open(lib)
    assert fn is None
    assert why.startswith("stale: it was built from another") and "000000000000" in why


@needs_cc
def test_a_library_of_another_abi_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("TRACEVIEW_NO_NATIVE", raising=False)
    lib = _compile(tmp_path, "sweep", _sha(native.LIBRARIES["sweep"].source))
    fn, why = native._open(replace(lib, abi=lib.abi + 1))
    assert fn is None and why == f"stale: its ABI version is {lib.abi}, this traceview calls " \
                                 f"version {lib.abi + 1}"


@needs_cc
def test_a_library_without_the_check_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("TRACEVIEW_NO_NATIVE", raising=False)
    lib = _compile(tmp_path, "sweep", None, "long tv_host_sweep(void) { return 0; }\n")
    fn, why = native._open(lib)
    assert fn is None and why == "stale: it exports no ABI version (built before the check existed)"


def test_switched_off_and_missing(tmp_path, monkeypatch):
    lib = replace(native.LIBRARIES["scan"], path=tmp_path / "absent.so")
    monkeypatch.setenv("TRACEVIEW_NO_NATIVE", "0")
    assert native._open(lib) == (None, "not built")
    monkeypatch.setenv("TRACEVIEW_NO_NATIVE", "1")
    assert native._open(native.LIBRARIES["scan"]) == (None, "switched off (TRACEVIEW_NO_NATIVE)")


def _version(env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-m", "traceview", "--version"], capture_output=True,
                          text=True, check=True, env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    return done.stdout.strip()


def test_version_names_the_helpers():
    import traceview

    off = _version({"TRACEVIEW_NO_NATIVE": "1"})
    assert off == (f"traceview {traceview.__version__} (compiled helpers: scan switched off "
                   f"(TRACEVIEW_NO_NATIVE), sweep switched off (TRACEVIEW_NO_NATIVE), clip "
                   f"switched off (TRACEVIEW_NO_NATIVE))")
    on = _version({"TRACEVIEW_NO_NATIVE": "0"})
    assert on.startswith(f"traceview {traceview.__version__} (compiled helpers: scan ")
    if os.environ.get("TRACEVIEW_REQUIRE_NATIVE") == "1":
        assert on.endswith("(compiled helpers: scan in use, sweep in use, clip in use)")
