"""tools/copy_public_corpus.py on a throwaway git repository standing in for a source: the
bytes at the named commit are copied (gzipped when stored plain, the same bytes every run),
a checksum that differs or a source that is absent is one line and exit 2, never a
traceback."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "copy_public_corpus.py"
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")


def _tool():
    spec = importlib.util.spec_from_file_location("copy_public_corpus", TOOL)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(repo), "PATH": "/usr/bin:/bin"}).stdout


@pytest.fixture
def source(tmp_path):
    """A mirror holding ``owner/proj`` with one plain and one gzipped trace, and its commit."""
    repo = tmp_path / "mirror" / "owner+proj"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q")
    plain = json.dumps({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}]}).encode()
    (repo / "a.json").write_bytes(plain)
    packed = gzip.compress(b'{"traceEvents": []}', mtime=0)
    (repo / "b.json.gz").write_bytes(packed)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "traces")
    commit = _git(repo, "rev-parse", "HEAD").strip()
    # later history removes the files: the tool must read the named commit, not HEAD
    _git(repo, "rm", "-q", "a.json", "b.json.gz")
    _git(repo, "commit", "-qm", "gone")
    return tmp_path / "mirror", commit, plain, packed


def _manifest(tmp_path: Path, entries: list[dict]) -> Path:
    d = tmp_path / "manifests"
    d.mkdir(exist_ok=True)
    (d / "owner__proj.json").write_text(json.dumps(entries))
    return d


def _entry(name: str, commit: str, path: str, data: bytes) -> dict:
    return {"name": name, "repo": "owner/proj", "commit": commit, "path": path,
            "sha256": hashlib.sha256(data).hexdigest(), "licence": "MIT", "what": "test", "held_out": False}


def test_copies_at_the_commit_gzipping_plain_files_the_same_way_every_time(source, tmp_path, capsys):
    mirror, commit, plain, packed = source
    stored = gzip.compress(plain, compresslevel=9, mtime=0)
    manifests = _manifest(tmp_path, [_entry("owner__proj/a.json.gz", commit, "a.json", stored),
                                     _entry("owner__proj/b.json.gz", commit, "b.json.gz", packed)])
    dest = tmp_path / "dest"
    tool = _tool()
    assert tool.main(["--mirror", str(mirror), "--dest", str(dest), "--manifests", str(manifests)]) == 0
    assert gzip.decompress((dest / "owner__proj/a.json.gz").read_bytes()) == plain
    assert (dest / "owner__proj/b.json.gz").read_bytes() == packed
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["copied", "copied"]
    assert tool.main(["--mirror", str(mirror), "--dest", str(dest), "--manifests", str(manifests)]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["present", "present"]


@pytest.mark.parametrize("problem", ["checksum", "no_source", "no_path"])
def test_a_problem_is_one_line_and_exit_2(source, tmp_path, capsys, problem):
    mirror, commit, plain, _ = source
    entry = _entry("owner__proj/a.json.gz", commit, "a.json", gzip.compress(plain, compresslevel=9, mtime=0))
    if problem == "checksum":
        entry["sha256"] = "0" * 64
    elif problem == "no_source":
        entry["repo"] = "other/missing"
    else:
        entry["path"] = "nope.json"
    manifests = _manifest(tmp_path, [entry])
    code = _tool().main(["--mirror", str(mirror), "--dest", str(tmp_path / "dest"), "--manifests", str(manifests)])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ")
    assert not (tmp_path / "dest" / "owner__proj" / "a.json.gz").exists()


@pytest.fixture
def archive(tmp_path):
    """A mirror whose source committed its traces inside a tar archive (param's
    ``dlrm_kineto.tar.gz``): a folder of two members, and the commit."""
    import io
    import tarfile

    repo = tmp_path / "mirror" / "owner+proj"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q")
    members = {"ranks/rank0.pt.trace.json": b'{"traceEvents": [{"ph": "X", "name": "r0"}]}',
               "ranks/rank1.pt.trace.json": b'{"traceEvents": [{"ph": "X", "name": "r1"}]}'}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        folder = tarfile.TarInfo("ranks")
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    (repo / "ranks.tar.gz").write_bytes(buf.getvalue())
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "traces")
    return tmp_path / "mirror", _git(repo, "rev-parse", "HEAD").strip(), members


def test_a_member_of_a_committed_archive_is_copied_alone(archive, tmp_path, capsys):
    mirror, commit, members = archive
    data = members["ranks/rank1.pt.trace.json"]
    stored = gzip.compress(data, compresslevel=9, mtime=0)
    manifests = _manifest(tmp_path, [_entry("owner__proj/rank1.json.gz", commit,
                                            "ranks.tar.gz::ranks/rank1.pt.trace.json", stored)])
    dest = tmp_path / "dest"
    assert _tool().main(["--mirror", str(mirror), "--dest", str(dest), "--manifests", str(manifests)]) == 0
    assert gzip.decompress((dest / "owner__proj/rank1.json.gz").read_bytes()) == data


@pytest.mark.parametrize("path", ["ranks.tar.gz::ranks/rank9.pt.trace.json", "ranks.tar.gz::ranks"])
def test_a_missing_member_is_one_line_and_exit_2(archive, tmp_path, capsys, path):
    """No such member, or a member that is a folder, not a file."""
    mirror, commit, _ = archive
    manifests = _manifest(tmp_path, [_entry("owner__proj/x.json.gz", commit, path, b"")])
    code = _tool().main(["--mirror", str(mirror), "--dest", str(tmp_path / "dest"), "--manifests", str(manifests)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("error: ")
