"""Copy the public corpus (real traces from other projects) into a corpus directory.

The manifests in ``tests/data/public_corpus/*.json`` name, for each trace, the source
repository, the commit and the path; this tool reads those bytes from local git snapshots
of the sources (``--mirror DIR``: one git dir per repository, ``DIR/<owner>+<repo>/repo``
or ``DIR/<owner>+<repo>``, as the snapshot fetcher lays them out, or a clone with a work
tree at any of those or at ``DIR/<owner>/<repo>``; a path ``ARCHIVE::MEMBER`` is one file
of a tar archive the source committed), gzips what the source stored uncompressed (level 9, mtime 0, so
the bytes are the same on every run) and checks the sha256 of the stored bytes against the
manifest before writing ``DEST/<name>``. Nothing is downloaded: the traces stay out of this
repository, and a test that needs one skips when it is absent (``tests/public_corpus.py``).

    python tools/copy_public_corpus.py --mirror /work/.mirror
    python tools/copy_public_corpus.py --mirror ~/src --dest /tmp/corpus --only pytorch__kineto/

One line per trace (``copied``, ``present`` when the right bytes are already there);
any problem (a source missing, a commit or path absent, a checksum that differs, a bad
manifest) is one line naming the trace, and the exit code is 2.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFESTS = ROOT / "tests" / "data" / "public_corpus"
DEFAULT_DEST = Path.home() / ".cache" / "traceview" / "public_traces"
KEYS = ("name", "repo", "commit", "path", "sha256", "licence", "what", "held_out")


class CorpusError(Exception):
    """A problem with one trace or one manifest: reported in one line, exit 2."""


def read_manifests(directory: Path) -> list[dict]:
    entries: list[dict] = []
    for manifest in sorted(directory.glob("*.json")):
        try:
            rows = json.loads(manifest.read_text())
        except (OSError, ValueError) as exc:
            raise CorpusError(f"{manifest}: not readable JSON ({exc})") from None
        if not isinstance(rows, list):
            raise CorpusError(f"{manifest}: expected a list of entries")
        for row in rows:
            if not isinstance(row, dict) or set(row) != set(KEYS):
                raise CorpusError(f"{manifest}: an entry must have exactly the keys {', '.join(KEYS)}")
            entries.append(row)
    names = [e["name"] for e in entries]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise CorpusError(f"{directory}: names used twice: {', '.join(dup)}")
    return entries


def git_dir(mirror: Path, repo: str) -> Path:
    """Where the snapshot of ``owner/name`` is under ``mirror``."""
    owner, name = repo.split("/", 1)
    for base in (mirror / f"{owner}+{name}" / "repo", mirror / f"{owner}+{name}", mirror / owner / name):
        if (base / "HEAD").is_file():  # a bare git dir
            return base
        if (base / ".git" / "HEAD").is_file():  # a clone with a work tree
            return base / ".git"
    raise CorpusError(f"{repo}: no snapshot under {mirror}")


def source_bytes(mirror: Path, entry: dict) -> bytes:
    """The trace's bytes at the entry's commit. A path ``ARCHIVE::MEMBER`` names one file
    inside a tar archive the source committed (some projects ship their traces so), read
    from the archive's bytes at that commit."""
    gd = git_dir(mirror, entry["repo"])
    path, _, member = entry["path"].partition("::")
    proc = subprocess.run(["git", "--git-dir", str(gd), "show", f"{entry['commit']}:{path}"],
                          capture_output=True)
    if proc.returncode != 0:
        why = proc.stderr.decode(errors="replace").strip().splitlines()
        raise CorpusError(f"{entry['name']}: {entry['repo']}@{entry['commit'][:12]}:{path}: "
                          f"{why[-1] if why else 'git show failed'}")
    return tar_member(proc.stdout, member, entry) if member else proc.stdout


def tar_member(archive: bytes, member: str, entry: dict) -> bytes:
    """One regular file of a (possibly compressed) tar archive, or a one-line error."""
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as tar:
            info = tar.getmember(member)
            f = tar.extractfile(info) if info.isfile() else None
            if f is None:
                raise CorpusError(f"{entry['name']}: {member} in {entry['path'].partition('::')[0]} "
                                  "is not a regular file")
            return f.read()
    except KeyError:
        raise CorpusError(f"{entry['name']}: no member {member} in {entry['path'].partition('::')[0]}") from None
    except tarfile.TarError as exc:
        raise CorpusError(f"{entry['name']}: {entry['path'].partition('::')[0]} is not a readable tar "
                          f"archive ({exc})") from None


def stored_bytes(raw: bytes) -> bytes:
    """The bytes as the corpus stores them: gzip, deterministic where we compress."""
    if raw[:2] == b"\x1f\x8b":
        return raw
    return gzip.compress(raw, compresslevel=9, mtime=0)


def copy_one(mirror: Path, dest: Path, entry: dict) -> str:
    target = dest / entry["name"]
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == entry["sha256"]:
        return "present"
    data = stored_bytes(source_bytes(mirror, entry))
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry["sha256"]:
        raise CorpusError(f"{entry['name']}: sha256 {digest} differs from the manifest's {entry['sha256']}")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".part")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    return "copied"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror", type=Path, required=True, help="directory of git snapshots of the sources")
    ap.add_argument("--dest", type=Path, default=DEFAULT_DEST, help=f"corpus directory (default {DEFAULT_DEST})")
    ap.add_argument("--manifests", type=Path, default=MANIFESTS, help="directory of manifests")
    ap.add_argument("--only", default="", help="copy only names starting with this prefix")
    args = ap.parse_args(argv)
    try:
        entries = read_manifests(args.manifests)
        for entry in entries:
            if not entry["name"].startswith(args.only):
                continue
            state = copy_one(args.mirror, args.dest, entry)
            print(f"{state:8} {entry['name']}  ({entry['repo']}@{entry['commit'][:12]}:{entry['path']}, {entry['licence']})")
    except CorpusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
