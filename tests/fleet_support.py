"""What the fleet tests share: a small rank set, and real servers, all on 127.0.0.1
and all stopped at the end.

* :func:`make_rankset` — three small fixtures copied with ``distributedInfo.rank`` set (rank
  order differs from file order), and :func:`raw_x_events`, the independent count.

* :class:`TraceServer` — an HTTP server (the standard library's, in a thread) serving
  the fixtures; a path under ``/stall/`` is held open until the test releases it, and
  records which process asked (found from the connection's port in ``/proc``), so a test
  can interrupt or kill the very process reading that trace.
* :func:`moto_server` — moto's S3-compatible server as its own process.
* :func:`ray_cluster` — ``ray start --head --num-cpus 2`` in a private temp folder, its
  workers given the S3 endpoint, ``ray stop`` at the end.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from conftest import FIXTURES

ROOT = Path(__file__).parent.parent

NAMES = ("torch_mul_1x4096_f32", "triton_mul_1x4096_f32", "triton_add_16x4096_bcast")
RANKS = (2, 0, 1)  # distributedInfo.rank of each, so rank order differs from file order


def _with_rank(src: Path, dst: Path, rank: int) -> Path:
    doc = json.loads(gzip.decompress(src.read_bytes()))
    doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": len(RANKS)}
    dst.write_bytes(gzip.compress(json.dumps(doc).encode(), compresslevel=1))
    return dst


def raw_x_events(path: Path) -> int:
    """The independent count: complete ("X") events in the raw JSON."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    return sum(1 for e in doc["traceEvents"] if e.get("ph") == "X")


def make_rankset(d: Path) -> list[Path]:
    """The rank set in ``d``: ``rank0.json.gz`` ... with ``distributedInfo.rank`` from
    :data:`RANKS`."""
    return [_with_rank(FIXTURES / f"{n}.json.gz", d / f"rank{i}.json.gz", r)
            for i, (n, r) in enumerate(zip(NAMES, RANKS, strict=True))]


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300,
        ) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
            **(env or {})}
    return subprocess.run([sys.executable, "-m", "traceview", *args], capture_output=True,
                          text=True, env=full, timeout=timeout, cwd=ROOT)


def strip_paths(doc, mapping: dict[str, str]):
    """The JSON with each trace's location replaced by its file name."""
    text = json.dumps(doc, sort_keys=True)
    for where, name in mapping.items():
        text = text.replace(json.dumps(where), json.dumps(name))
    return json.loads(text)


def local_ranks_json(rankset) -> dict:
    r = cli("explain", *map(str, rankset), "--format", "json", "-j", "1")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


S3_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
          "AWS_DEFAULT_REGION": "us-east-1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def peer_pid(port: int) -> int | None:
    """The process that owns the local TCP socket bound to ``port`` (Linux /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if int(parts[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{parts[9]}]")
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                    return int(pid)
        except OSError:
            continue
    return None


class TraceServer:
    """Serves ``root``; ``/stall/NAME`` serves ``root/NAME`` only after :meth:`release`
    (each request to it records the asking process in ``stalled``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.gate = threading.Event()
        self.stalled: list[int | None] = []
        self.hit = threading.Condition()
        server = self

        class Handler(SimpleHTTPRequestHandler):
            def __init__(self, *a, **kw):
                super().__init__(*a, directory=str(server.root), **kw)

            def log_message(self, *_a) -> None:
                pass

            def _gate(self) -> None:
                if self.path.startswith("/stall/"):
                    pid = peer_pid(self.client_address[1])
                    with server.hit:
                        server.stalled.append(pid)
                        server.hit.notify_all()
                    server.gate.wait(60)
                    self.path = self.path[len("/stall"):]

            def do_GET(self) -> None:
                self._gate()
                super().do_GET()

            def do_HEAD(self) -> None:
                self._gate()
                super().do_HEAD()

        class Quiet(ThreadingHTTPServer):
            def handle_error(self, request, client_address) -> None:
                pass  # a client killed mid-request (the point of the stall) is expected

        self.httpd = Quiet(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def wait_stalled(self, count: int = 1, timeout: float = 60) -> int | None:
        """The process behind the ``count``-th stalled request, once it is there."""
        end = time.monotonic() + timeout
        with self.hit:
            while len(self.stalled) < count:
                left = end - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no request reached the stalled path")
                self.hit.wait(left)
            return self.stalled[count - 1]

    def release(self) -> None:
        self.gate.set()

    def __enter__(self) -> TraceServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        self.httpd.shutdown()
        self.httpd.server_close()


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """moto's S3 server on 127.0.0.1 as a separate process; yields its endpoint URL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, **S3_ENV})
    url = f"http://127.0.0.1:{port}"
    try:
        end = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > end:
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def s3_env(endpoint: str) -> dict[str, str]:
    """What a process needs to reach the moto server through s3fs."""
    return {**S3_ENV, "FSSPEC_S3_ENDPOINT_URL": endpoint}


def upload(endpoint: str, bucket: str, files: dict[str, Path]) -> None:
    import s3fs

    fs = s3fs.S3FileSystem(key=S3_ENV["AWS_ACCESS_KEY_ID"], secret=S3_ENV["AWS_SECRET_ACCESS_KEY"],
                           endpoint_url=endpoint)
    if not fs.exists(bucket):
        fs.mkdir(bucket)
    for key, path in files.items():
        fs.put(str(path), f"{bucket}/{key}")


def ray_executable() -> str | None:
    here = Path(sys.executable).parent / "ray"
    return str(here) if here.exists() else shutil.which("ray")


@contextlib.contextmanager
def ray_cluster(tmp: Path, env: dict[str, str]) -> Iterator[str]:
    """A real one-node Ray cluster (``ray start --head --num-cpus 2 --block``, in its own
    process group); yields its address. Its workers get ``env`` (the S3 endpoint) and
    this checkout first on their path. Stopped by signalling that group (never
    ``ray stop``, which stops every Ray on the machine)."""
    ray = ray_executable()
    port = free_port()
    # Ray's unix sockets live under its temp dir (session_*/sockets/plasma_store) and an
    # AF_UNIX path may not exceed 107 bytes: pytest-xdist's basetemp
    # (/tmp/pytest-of-root/pytest-N/popen-gw1/...) is too deep, so the cluster gets a short
    # directory of its own, removed afterwards; its log stays beside the test's files
    temp = Path(tempfile.mkdtemp(prefix="tvray", dir="/tmp" if Path("/tmp").is_dir() else None))
    log = (tmp / "ray-start.log").open("wb")
    full = {**os.environ, **env, "RAY_USAGE_STATS_ENABLED": "0",
            "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent.parent),
                                           os.environ.get("PYTHONPATH", "")])}
    full.pop("RAY_ADDRESS", None)
    proc = subprocess.Popen([ray, "start", "--head", "--block", "--num-cpus", "2",
                             "--port", str(port), "--include-dashboard=false",
                             "--disable-usage-stats", "--temp-dir", str(temp)],
                            env=full, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    address = f"127.0.0.1:{port}"
    try:
        end = time.monotonic() + 180
        while not (temp / "ray_current_cluster").exists() and not _raylet_up(temp):
            if proc.poll() is not None or time.monotonic() > end:
                tail = (tmp / "ray-start.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"ray start did not bring a cluster up:\n{tail}")
            time.sleep(0.5)
        time.sleep(1)
        yield address
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(5)
                break
            except subprocess.TimeoutExpired:
                continue
        time.sleep(1)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # anything of the group left
        log.close()
        shutil.rmtree(temp, ignore_errors=True)


def _raylet_up(temp: Path) -> bool:
    return any(temp.glob("session_*/sockets/raylet"))


def interrupt_group(proc: subprocess.Popen) -> None:
    """Ctrl-C as a terminal sends it: SIGINT to the whole foreground process group."""
    os.killpg(proc.pid, signal.SIGINT)
