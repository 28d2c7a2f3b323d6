"""Fuzz the two compiled helpers under AddressSanitizer and UndefinedBehaviorSanitizer.

    python tools/fuzz_native.py --seconds 60        # what .ci/run runs

Builds ``io/_kineto_scan.c`` and ``analyses/_host_sweep.c`` with
``-fsanitize=address,undefined -fno-sanitize-recover=all`` into a temporary folder, then
re-runs itself with the sanitizer runtimes preloaded and the sanitized libraries in
place of the built ones (loaded through ``traceview/native.py``, so the ABI and source
checks apply). The child then

1. runs ``tests/test_fastscan.py`` and ``tests/test_sweep.py`` (the comparisons of each
   helper with its pure-Python reference, hypothesis cases included) against the
   sanitized libraries, and
2. mutates chunks of every fixture (flipped, inserted, deleted and duplicated bytes,
   cuts, digits and escapes planted) for ``--seconds``: every mutant goes through the
   scanner (memory safety on any bytes), and every mutant that is still a JSON array of
   objects is decoded both ways, which must give the same columns.

Any sanitizer report stops the child with a non-zero exit (``halt_on_error``); a
difference between the two decode paths is printed with its input and exits 1. Needs
gcc or clang with the sanitizer runtimes (Debian: gcc, libc6-dev).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
         "-fno-sanitize-recover=all", "-shared", "-fPIC"]


def build(folder: Path, cc: str) -> None:
    sys.path.insert(0, str(ROOT))
    from traceview import native

    for lib in native.LIBRARIES.values():
        src = folder / lib.source.name
        shutil.copyfile(lib.source, src)
        sha = hashlib.sha256(src.read_bytes()).hexdigest()
        subprocess.run([cc, *FLAGS, f'-DTV_SOURCE_SHA256="{sha}"', "-o",
                        str(folder / lib.path.name), str(src)], check=True)


def runtimes(cc: str) -> str:
    libs = []
    for name in ("libasan.so", "libubsan.so"):
        path = subprocess.run([cc, f"-print-file-name={name}"], capture_output=True,
                              text=True, check=True).stdout.strip()
        if not os.path.isabs(path):
            raise SystemExit(f"fuzz_native: {cc} has no {name} (install the sanitizer runtimes)")
        libs.append(path)
    return ":".join(libs)


def use_sanitized(folder: Path) -> None:
    """Swap the sanitized libraries in for the built ones, through native's checks."""
    from dataclasses import replace

    from traceview import native
    from traceview.analyses import host_sweep_native
    from traceview.io import fastscan

    for which in native.LIBRARIES:
        lib = native.LIBRARIES[which]
        fn, why = native._open(replace(lib, path=folder / lib.path.name))
        if fn is None:
            raise SystemExit(f"fuzz_native: the sanitized {which} library is {why}")
        native._LOADED[which] = (fn, why)
    fastscan._SCAN = native.load("scan")
    host_sweep_native._NATIVE_SWEEP = native.load("sweep")


def chunks() -> list[bytes]:
    """Event arrays of a few KB cut from every fixture at event boundaries."""
    out = []
    for path in sorted((ROOT / "fixtures").glob("*.json.gz")):
        text = gzip.decompress(path.read_bytes())
        start = text.find(b"[", text.find(b'"traceEvents"'))
        body = text[start + 1:]
        pos = 0
        while pos < len(body) and len(out) < 4000:
            end = body.find(b"},", pos + 2048)
            if end < 0:
                break
            out.append(b"[" + body[pos:end + 1].strip().lstrip(b",") + b"]")
            pos = end + 2
    return out


PLANTS = [b"\\u00e9", b"\\ud800", b"\\\"", b"1e5", b"-0.0005", b"99999999999999999999",
          b"null", b"true", b"{}", b"[]", b'"', b",", b":", b"\x00", b"\xff", b"  \n"]


def mutate(rng: random.Random, text: bytes) -> bytes:
    b = bytearray(text)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        i = rng.randrange(len(b) + 1)
        if op == 0 and b:
            b[min(i, len(b) - 1)] = rng.randrange(256)
        elif op == 1:
            b[i:i] = rng.choice(PLANTS)
        elif op == 2:
            del b[i:i + rng.randint(1, 16)]
        elif op == 3:
            j = rng.randrange(len(b) + 1)
            b[i:i] = b[j:j + rng.randint(1, 64)]
        elif op == 4:
            del b[i:]
        else:
            digits = bytes(rng.choice(b"0123456789.") for _ in range(rng.randint(1, 20)))
            b[i:i] = digits
    return bytes(b)


def fuzz(seconds: float, seed: int) -> int:
    import msgspec
    import numpy as np

    from traceview.io import collector, fastscan

    array = msgspec.json.Decoder(list[dict])
    seeds = chunks()
    rng = random.Random(seed)
    t_end = time.monotonic() + seconds
    n = same = 0
    while time.monotonic() < t_end:
        text = mutate(rng, rng.choice(seeds))
        n += 1
        scanned = fastscan.scan(text)  # any bytes: must not fault
        if scanned is None:
            continue
        try:
            array.decode(text)
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue  # not what the splitter hands on
        got, ref = collector.Collector(Path("f.json")), collector.Collector(Path("f.json"))
        got.chunk(text)
        saved, fastscan._SCAN = fastscan._SCAN, None
        try:
            ref.chunk(text)
        except msgspec.ValidationError:
            continue
        finally:
            fastscan._SCAN = saved
        a, b = got.columns(), ref.columns()
        ok = (list(got.keys) == list(ref.keys) and list(got.names) == list(ref.names)
              and all(np.array_equal(getattr(a, f), getattr(b, f))
                      for f in ("key", "name", "ts", "dur", "corr", "stream", "device"))
              and dict(a.args._raw) == dict(b.args._raw) and got.others == ref.others)
        if not ok:
            print(f"fuzz_native: the two decode paths differ on:\n{text!r}", file=sys.stderr)
            return 1
        same += 1
    print(f"fuzz_native: {n} mutated chunks through the sanitized scanner, {same} decoded "
          f"both ways and identical")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="mutation fuzzing time")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is None:
        cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang") or "cc"
        with tempfile.TemporaryDirectory() as d:
            build(Path(d), cc)
            env = {**os.environ, "LD_PRELOAD": runtimes(cc), "PYTHONPATH": str(ROOT),
                   "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1:abort_on_error=0",
                   "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}
            env.pop("TRACEVIEW_NO_NATIVE", None)
            return subprocess.run([sys.executable, __file__, "--child", d, "--seconds",
                                   str(args.seconds), "--seed", str(args.seed)],
                                  env=env, check=False).returncode
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    if "libasan" not in Path("/proc/self/maps").read_text():
        raise SystemExit("fuzz_native: the AddressSanitizer runtime is not loaded")
    use_sanitized(args.child)
    print(f"fuzz_native: sanitized helpers from {args.child} in use", flush=True)
    import pytest

    # -n 0: the sanitized libraries are swapped into this process, so no xdist workers
    rc = pytest.main(["-q", "-p", "no:cacheprovider", "-n", "0", "-x",
                      str(ROOT / "tests" / "test_fastscan.py"),
                      str(ROOT / "tests" / "test_sweep.py")], plugins=[_Sanitized(args.child)])
    if rc != 0:
        return int(rc)
    return fuzz(args.seconds, args.seed)


class _Sanitized:
    """A pytest plugin that swaps the sanitized libraries in once the tests are imported
    (they read ``fastscan._SCAN`` and ``host_sweep_native._NATIVE_SWEEP`` at call time)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def pytest_collection_finish(self, session) -> None:  # noqa: ARG002
        use_sanitized(self.folder)


if __name__ == "__main__":
    sys.exit(main())
