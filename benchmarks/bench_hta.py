"""traceview against Holistic Trace Analysis (HTA), side by side.

    .venv/bin/python benchmarks/bench_hta.py --sizes 56,112,225,450 --reps 5,5,3,3 \
        --work /tmp/tvbench --profile 450

What it does, in one run (results and method: docs/performance.md):

1. Creates ``WORK/hta-venv`` (``python3 -m venv`` + ``pip install
   holistictraceanalysis==0.5.0 'pandas<3'``) if it is missing. HTA is never a
   dependency of traceview and never enters traceview's venv. (HTA 0.5.0 cannot load a
   trace under pandas 3; ``--hta-pip-extra`` changes the pin.)
2. Makes the input traces with ``make_large_trace.py`` from
   ``fixtures/triton_mul_cold_stack.json.gz`` (a real H200 ``with_stack`` Triton
   cold-compile trace), one gzipped trace per size in its own directory (HTA takes a
   directory), plus the same trace as plain ``.json`` (to check that traceview's
   output does not depend on the compression). Before repeating it, the fixture is
   re-laid out the way Kineto writes traces (a few lines per event, ts/dur with 3
   decimals) and given the ``"distributedInfo": {"backend": "nccl", "rank": 0,
   "world_size": 1}`` key that Kineto writes for distributed jobs; both tools get
   exactly the same file. See ``kineto_layout`` for why. Traces are cached in WORK and
   re-made when the fixture's bytes change.
3. For each size, alternating traceview / HTA (order flipped every repetition), each
   run in a fresh subprocess pinned to one core (``taskset -c CPU``) under
   ``/usr/bin/time -v``: wall time (this process's clock around the child), peak RSS
   (the child's own maximum resident set; see ``LAUNCHER`` for why a launcher is
   needed), and the CPU time other processes used meanwhile on the pinned core and on
   the machine (``/proc/stat``), since the machine may be shared.

   - traceview: ``traceview explain FILE --format json`` (stdout to a file of a few KB,
     then compared between the plain and gzipped input and between reps).
   - HTA: ``WORK/hta_driver.py`` run by the HTA venv's python:
     ``TraceAnalysis(trace_dir=DIR)`` (load), then ``get_temporal_breakdown()``,
     ``get_idle_time_breakdown()``, ``get_cuda_kernel_launch_stats()`` (all with
     ``visualize=False``), each in its own ``try``: an exception is recorded with its
     type and message, and the next analysis still runs.
   - floors: gzip decompression alone (one ``decompress(data, ISIZE)`` call, with
     ISA-L's ``isal_zlib``, the fastest inflate found, and with the standard ``zlib``
     for reference); the ISA-L decompression plus a generic decode
     into Python objects with ``msgspec.json.decode`` and with ``orjson.loads`` (gc
     off); and decompression plus a typed msgspec decode (the fastest whole-document
     decode in docs/json-decoder.md).
4. Prints a table per size (medians, ratios) and a linear-scaling table, and writes
   every raw measurement to ``WORK/results[_TAG].json`` (rewritten after each run, so
   an interrupted run keeps what it measured); each child's output is in
   ``WORK/logs[/TAG]``.

``--one-step SIZES`` also runs each of those sizes as a variant with a single
``ProfilerStep`` (see ``one_step_variant``: HTA's load time grows with rows x steps).
``--profile SIZE`` records one ``cProfile`` run of traceview on that size's trace
(``WORK/profile_<SIZE>[_TAG].txt``, not timed into the tables). ``--report-only``
reprints the tables of ``results[_TAG].json``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import make_large_trace  # (same directory)

HTA_SPEC = "holistictraceanalysis==0.5.0"
FIXTURE = ROOT / "fixtures" / "triton_mul_cold_stack.json.gz"
DISTRIBUTED_INFO = '{"backend": "nccl", "rank": 0, "world_size": 1}'

# --------------------------------------------------------------------------- HTA driver

HTA_DRIVER = r'''
"""Run HTA 0.5.0's load and three analyses on one trace directory; print JSON."""
import json, resource, sys, time, traceback

t_start = time.perf_counter()
out = {"phases": {}}

def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

def phase(name, fn, summarise):
    t0 = time.perf_counter()
    try:
        res = fn()
        out["phases"][name] = {"ok": True, "s": time.perf_counter() - t0,
                               "peak_mb": rss_mb(), "summary": summarise(res)}
        return res
    except Exception as e:  # record and go on with the next analysis
        out["phases"][name] = {"ok": False, "s": time.perf_counter() - t0, "peak_mb": rss_mb(),
                               "error": f"{type(e).__name__}: {e}"[:500],
                               "where": traceback.format_exc().strip().splitlines()[-3:]}
        return None

def small(df, n=5):
    try:
        return json.loads(df.head(n).to_json(orient="records"))
    except Exception as e:
        return repr(e)[:200]

t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
out["import_s"] = time.perf_counter() - t0
out["import_peak_mb"] = rss_mb()

analyzer = phase("load", lambda: TraceAnalysis(trace_dir=sys.argv[1]),
                 lambda a: {"ranks": sorted(a.t.traces), "rows": {r: len(d) for r, d in a.t.traces.items()}})
if analyzer is not None:
    phase("temporal_breakdown", lambda: analyzer.get_temporal_breakdown(visualize=False), small)
    phase("idle_time_breakdown", lambda: analyzer.get_idle_time_breakdown(visualize=False),
          lambda r: small(r[0], 10))
    phase("cuda_kernel_launch_stats",
          lambda: analyzer.get_cuda_kernel_launch_stats(visualize=False),
          lambda r: {str(k): {"launches": len(v), "head": small(v, 3)} for k, v in r.items()})
out["total_s"] = time.perf_counter() - t_start
print(json.dumps(out, default=str))
'''

# --------------------------------------------------------------------------- floors

FLOOR_DRIVER = r'''
"""Floors: gzip decompression alone, and decompression + a generic JSON decode."""
import gc, json, resource, sys, time, zlib
method, path = sys.argv[1], sys.argv[2]
import msgspec, orjson
t0 = time.perf_counter()
with open(path, "rb") as f:
    data = f.read()
# the fastest inflate found: ISA-L (what traceview uses when installed), zlib otherwise;
# "gunzip_zlib" measures the standard library's for reference
inflate = zlib
if method != "gunzip_zlib":
    try:
        from isal import isal_zlib as inflate
    except ImportError:
        pass
if method == "streamed_typed":
    # inflate + msgspec typed decode, streamed as traceview reads (ISA-L pieces, cut at
    # event boundaries into ~8 MB chunks, each decoded into structs and dropped): the
    # floor for any decoder that makes a Python object per event
    try:
        from traceview.io.events import EVENTS as _FAST
    except ImportError:  # a tree from before io/decode.py was split
        from traceview.io.decode import _FAST
    from traceview.io.pieces import pieces
    from traceview.io.splitter import Splitter

    count = [0]
    def chunk(text):
        count[0] += len(_FAST.decode(text))
    from pathlib import Path
    sp = Splitter(Path(path), chunk)
    for piece in pieces(Path(path), [0]):
        sp.push(piece)
    sp.finish()
    dt = time.perf_counter() - t0
    print(json.dumps({"s": dt, "n": count[0], "inflate": "pieces",
                      "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
    raise SystemExit(0)
if data[:2] == b"\x1f\x8b":
    isize = int.from_bytes(data[-4:], "little")
    d = inflate.decompressobj(31)
    doc = d.decompress(data, isize)   # max_length = ISIZE: one allocation of the right size
    doc += d.flush()
    if d.unused_data:
        raise SystemExit("more than one gzip member")
    del data, d
else:
    doc = data
if method in ("gunzip", "gunzip_zlib"):
    n = len(doc)
elif method == "msgspec":
    n = len(msgspec.json.decode(doc)["traceEvents"])
elif method == "orjson":
    gc.disable()
    n = len(orjson.loads(doc)["traceEvents"])
elif method == "msgspec_typed":
    # The fastest whole-document decode in docs/json-decoder.md: traceview's own typed
    # event struct (the fields an analysis needs, args left as a raw view, not decoded).
    try:
        from traceview.io.events import FastEvent as Ev
    except ImportError:  # a tree from before io/decode.py was split
        from traceview.io.decode import FastEvent as Ev

    class Doc(msgspec.Struct):
        traceEvents: list[Ev] = []

    n = len(msgspec.json.decode(doc, type=Doc).traceEvents)
else:
    raise SystemExit(f"unknown floor {method}")
dt = time.perf_counter() - t0
print(json.dumps({"s": dt, "n": n, "inflate": inflate.__name__,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
'''

FLOORS = ("gunzip_zlib", "gunzip", "msgspec", "orjson", "msgspec_typed", "streamed_typed")
FLOOR_NAMES = {
    "gunzip_zlib": "floor: gunzip only (zlib)",
    "gunzip": "floor: gunzip only (ISA-L)",
    "msgspec": "floor: gunzip + msgspec.json.decode (generic)",
    "orjson": "floor: gunzip + orjson.loads (generic, gc off)",
    "msgspec_typed": "floor: gunzip + msgspec typed decode (args raw)",
    "streamed_typed": "floor: streamed inflate + msgspec typed decode (traceview's chunks)",
}

# --------------------------------------------------------------------------- helpers


def sh(cmd: list[str], **kw) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout.strip()


def pin(cmd: list[str], cpu: int | None) -> tuple[list[str], object]:
    """Pin a child to one core: taskset if present, else sched_setaffinity in the child."""
    if cpu is None:
        return cmd, None
    if shutil.which("taskset"):
        return ["taskset", "-c", str(cpu), *cmd], None
    return cmd, (lambda: os.sched_setaffinity(0, {cpu}))


# A launcher between this (large) process and the measured child. On Linux a child's
# ru_maxrss starts at its parent's high-water mark: fork copies it and exec keeps it. So
# measuring a child forked straight from here would report at least this process's own
# peak (~300 MB after making the traces). The launcher is small, and it is the one that
# forks the measured command.
LAUNCHER = r"""
import json, os, subprocess, sys, time
t0 = time.perf_counter()
with open(sys.argv[1], "wb") as out, open(sys.argv[2], "wb") as err:
    p = subprocess.Popen(sys.argv[4:], stdout=out, stderr=err)
    _, status, ru = os.wait4(p.pid, 0)
wall = time.perf_counter() - t0
with open(sys.argv[3], "w") as f:
    json.dump({"wall_s": wall, "peak_mb": ru.ru_maxrss / 1024, "user_s": ru.ru_utime,
               "sys_s": ru.ru_stime, "rc": os.waitstatus_to_exitcode(status)}, f)
"""


def proc_field(path: str, key: str) -> str:
    for ln in Path(path).read_text().splitlines():
        if ln.startswith(key):
            return ln.split(":", 1)[1].strip()
    return ""


def cpu_busy() -> dict[str, float]:
    """Busy seconds so far per CPU ("cpu" = all), from /proc/stat (not idle, not iowait)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for ln in Path("/proc/stat").read_text().splitlines():
        if not ln.startswith("cpu"):
            break
        name, *v = ln.split()
        n = [int(x) for x in v]
        out[name] = (sum(n[:8]) - n[3] - n[4]) / tick
    return out


def measure(cmd: list[str], stem: Path, cpu: int | None) -> dict:
    """One run, with what else the machine did meanwhile (see ``contention``)."""
    b0 = cpu_busy()
    r = _measure(cmd, stem, cpu)
    b1 = cpu_busy()
    child = r["user_s"] + r["sys_s"]
    # CPU seconds that other processes used during the run, per wall second: on the
    # pinned core (its busy time minus the child's own), and on the whole machine.
    core = f"cpu{cpu}" if cpu is not None else "cpu"
    r["other_load_pinned_core"] = max(0.0, (b1[core] - b0[core] - child) / r["wall_s"])
    r["other_load_machine"] = max(0.0, (b1["cpu"] - b0["cpu"] - child) / r["wall_s"])
    return r


def _measure(cmd: list[str], stem: Path, cpu: int | None) -> dict:
    """Wall time and peak RSS (ru_maxrss of exactly the measured child) of one run.

    The child runs under a small launcher (``/usr/bin/time -v`` if present, else a short
    Python script) so that its ``ru_maxrss`` is its own (see ``LAUNCHER``); ``taskset``
    execs the command in the same process, so it does not change what is measured.
    """
    cmd, pre = pin(cmd, cpu)
    out, err, meta = (Path(f"{stem}.{x}") for x in ("out", "err", "time"))
    if Path("/usr/bin/time").exists():
        with open(out, "wb") as o, open(err, "wb") as e:
            t0 = time.perf_counter()
            p = subprocess.run(
                ["/usr/bin/time", "-v", "-o", str(meta), *cmd],
                stdout=o,
                stderr=e,
                preexec_fn=pre,
                check=False,
            )
            wall = time.perf_counter() - t0
        tv = {}
        for ln in meta.read_text().splitlines():
            k, _, v = ln.strip().rpartition(": ")
            tv[k] = v
        rc = p.returncode
        if "Command exited with non-zero status" in meta.read_text():
            rc = rc or 1
        return {
            "wall_s": wall,
            "peak_mb": int(tv["Maximum resident set size (kbytes)"]) / 1024,
            "user_s": float(tv["User time (seconds)"]),
            "sys_s": float(tv["System time (seconds)"]),
            "rc": rc,
            "launcher": "/usr/bin/time -v",
        }
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", LAUNCHER, str(out), str(err), str(meta), *cmd],
        preexec_fn=pre,
        check=True,
    )
    r = json.loads(meta.read_text())
    r["wall_s"] = time.perf_counter() - t0  # includes the launcher's start (~20 ms)
    r["launcher"] = "python wait4"
    return r


def run_one(kind: str, cmd: list[str], stem: Path, cpu: int | None) -> dict:
    """Measure one run and attach what its child reported about itself."""
    r = measure(cmd, stem, cpu)
    out = Path(f"{stem}.out")
    if r["rc"] != 0:
        r["stderr_tail"] = Path(f"{stem}.err").read_text()[-1500:]
    elif kind == "hta":
        try:
            r["hta"] = json.loads(out.read_text().splitlines()[-1])
        except (IndexError, json.JSONDecodeError) as e:
            r["hta"] = {"parse_error": repr(e)}
    elif kind.startswith("floor_"):
        r["inner"] = json.loads(out.read_text())
    return r


def _differences(a: object, b: object, path: str, diffs: list[str]) -> None:
    if len(diffs) > 20:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            _differences(a.get(k), b.get(k), f"{path}.{k}", diffs)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _differences(x, y, f"{path}[{i}]", diffs)
    elif a != b:
        diffs.append(f"{path}: {str(a)[:120]} != {str(b)[:120]}")


def compare_outputs(gz_outs: list[Path], plain_outs: list[Path], inputs: list[Path]) -> dict:
    """traceview's JSON must not depend on the compression, nor change between runs.

    The input's path and file name are replaced by a placeholder before comparing.
    """

    def norm(path: Path) -> object:
        text = path.read_text()
        for p in inputs:
            text = text.replace(str(p), "TRACE")
        for p in inputs:
            text = text.replace(p.name, "TRACE")
        return json.loads(text)

    g = [norm(p) for p in gz_outs if p.exists() and p.stat().st_size]
    p = [norm(q) for q in plain_outs if q.exists() and q.stat().st_size]
    verdict: dict = {
        "gz_reps_identical": all(x == g[0] for x in g),
        "plain_reps_identical": all(x == p[0] for x in p),
        "plain_equals_gz": bool(g and p and g[0] == p[0]),
    }
    if g and p and g[0] != p[0]:
        diffs: list[str] = []
        _differences(g[0], p[0], "", diffs)
        verdict["differences"] = diffs
    return verdict


def traceview_diff_sha1() -> str:
    """sha1 of ``git diff HEAD -- traceview`` (uncommitted changes to the code measured)."""
    diff = subprocess.run(
        ["git", "-C", str(ROOT), "diff", "HEAD", "--", "traceview"],
        capture_output=True,
        check=True,
    ).stdout
    return hashlib.sha1(diff).hexdigest() if diff else ""


def traceview_cmd() -> list[str]:
    exe = ROOT / ".venv" / "bin" / "traceview"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "traceview"]


# --------------------------------------------------------------------------- HTA venv


def ensure_hta_venv(work: Path, extra: list[str]) -> dict:
    venv = work / "hta-venv"
    py = venv / "bin" / "python"
    marker = venv / "bench_requirements.txt"
    reqs = "\n".join([HTA_SPEC, *extra])
    if not py.exists():
        print(f"creating {venv}", file=sys.stderr)
        subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
    if not marker.exists() or marker.read_text() != reqs:
        print(f"installing {HTA_SPEC} {' '.join(extra)} into {venv}", file=sys.stderr)
        subprocess.run([str(py), "-m", "pip", "install", "-q", HTA_SPEC, *extra], check=True)
        marker.write_text(reqs)
    versions = json.loads(
        sh(
            [
                str(py),
                "-c",
                (
                    "import json, sys, importlib.metadata as m; print(json.dumps({'python': "
                    "sys.version.split()[0], **{p: m.version(p) for p in "
                    "('holistictraceanalysis', 'pandas', 'numpy', 'plotly')}}))"
                ),
            ]
        )
    )
    return {"python": str(py), "versions": versions}


# --------------------------------------------------------------------------- inputs


def kineto_layout(fixture: Path, out: Path) -> dict:
    """Re-lay the fixture out the way Kineto writes a trace, with a rank.

    The fixture was re-encoded compactly by ``traceview capture``: the whole document is
    one 14 MB line. Kineto (``output_json.cpp``) writes a few lines per event. Layout
    matters to HTA: to find the rank it reads the file line by line until it sees
    ``"rank": N``, and without one it reads the *whole* file that way and falls back to
    rank 0. On a one-line file even the hit costs a full decompression of the file into
    one string. So, for a fair comparison on what users actually have, both tools get
    the Kineto layout and a ``distributedInfo`` with rank 0, written near the top as
    Kineto does. Every event, key and value is kept (values as their original JSON
    text, ts/dur rewritten with exactly 3 decimals, as Kineto does).
    """
    import msgspec
    from make_large_trace import fmt_ns, to_ns

    doc = make_large_trace.read_fixture(fixture)
    top = msgspec.json.decode(doc, type=dict[str, msgspec.Raw])
    events = msgspec.json.decode(top["traceEvents"], type=list[dict[str, msgspec.Raw]])

    def val(k: str, v: msgspec.Raw) -> str:
        t = bytes(v).decode()
        if k in ("ts", "dur") and t[:1] in "-0123456789":
            return fmt_ns(to_ns(t))
        return t

    def kv(k: str, v: msgspec.Raw) -> str:
        return f"{json.dumps(k)}: {val(k, v)}"

    def event(ev: dict[str, msgspec.Raw]) -> str:
        keys = [k for k in ev if k != "args"]
        line1 = [k for k in keys if k not in ("ts", "dur")]
        line2 = [k for k in keys if k in ("ts", "dur")]
        if ev.get("ph") == msgspec.Raw(b'"X"'):  # Kineto: ph/cat/name/pid/tid, then ts/dur
            lines = [", ".join(kv(k, ev[k]) for k in line1), ", ".join(kv(k, ev[k]) for k in line2)]
        else:
            lines = [", ".join(kv(k, ev[k]) for k in keys)]
        text = "  {\n    " + ",\n    ".join(lines)
        if "args" in ev:
            args = msgspec.json.decode(ev["args"], type=dict[str, msgspec.Raw])
            text += ',\n    "args": {\n      ' + ", ".join(kv(k, v) for k, v in args.items())
            text += "\n    }"
        return text + "\n  }"

    parts = ["{"]
    header = [k for k in top if k != "traceEvents"]
    before = header[: header.index("traceName")] if "traceName" in header else header
    after = [k for k in header if k not in before]
    for k in before:
        parts.append(f"  {json.dumps(k)}: {bytes(top[k]).decode()},")
        if k == "deviceProperties":
            parts.append(f'  "distributedInfo": {DISTRIBUTED_INFO},')
    if "deviceProperties" not in before:
        parts.append(f'  "distributedInfo": {DISTRIBUTED_INFO},')
    parts.append('  "traceEvents": [')
    parts.append(",\n".join(event(ev) for ev in events))
    tail = ["  ]"] + [f"  {json.dumps(k)}: {bytes(top[k]).decode()}" for k in after]
    parts.append(",\n".join(tail))
    parts.append("}")
    text = "\n".join(parts).encode()
    # Same document, only whitespace and number spelling differ:
    again = msgspec.json.decode(text)
    orig = msgspec.json.decode(doc)
    assert len(again["traceEvents"]) == len(orig["traceEvents"])
    assert again["distributedInfo"]["rank"] == 0
    out.parent.mkdir(parents=True, exist_ok=True)
    with (
        open(out, "wb") as f,
        gzip.GzipFile(fileobj=f, mode="wb", compresslevel=6, mtime=0, filename="") as g,
    ):
        g.write(text)
    return {
        "events": len(events),
        "bytes_compact": len(doc),
        "bytes_kineto": len(text),
        "lines_compact": doc.count(b"\n") + 1,
        "lines_kineto": text.count(b"\n") + 1,
    }


def make_trace(fixture: Path, mb: float, out: Path) -> dict:
    # Not next to the trace: HTA takes every *.json / *.gz file of the directory.
    info_path = out.parent.parent / "info" / (out.name + ".info.json")
    info_path.parent.mkdir(parents=True, exist_ok=True)
    # Reused only if made from the same fixture bytes (the re-laid-out fixture is
    # deterministic, so its sha1 names the source fixture's content).
    sha1 = hashlib.sha1(fixture.read_bytes()).hexdigest()
    if out.exists() and info_path.exists():
        info = json.loads(info_path.read_text())
        if info.get("fixture_sha1") == sha1:
            return info
    t0 = time.perf_counter()
    info = make_large_trace.build(fixture, int(mb * 1e6), out, 6)
    info["make_s"] = time.perf_counter() - t0
    info["fixture_sha1"] = sha1
    info_path.write_text(json.dumps(info))
    return info


STEP_NAME = b'"name": "ProfilerStep#1"'
STEP_RENAMED = b'"name": "profiler_step_copy"'


def one_step_variant(gz: Path, out: Path) -> dict:
    """The same trace with only its first ``ProfilerStep#1`` annotation left.

    The fixture has one ``ProfilerStep#1`` (spanning its cold call), so a trace of N
    copies has N of them. HTA's ``add_iteration`` tests every CPU event against every
    ProfilerStep in a Python loop (rows x steps), so its load time depends on how many
    steps the trace holds. This variant renames the others (a name HTA does not match)
    to measure HTA with a single step as well. Everything else is byte-identical.
    """
    info_path = out.parent.parent / "info" / (out.name + ".info.json")
    info = json.loads((gz.parent.parent / "info" / (gz.name + ".info.json")).read_text())
    if out.exists() and info_path.exists():
        cached = json.loads(info_path.read_text())
        if cached.get("fixture_sha1") == info.get("fixture_sha1"):
            return cached
    doc = make_large_trace.read_fixture(gz)
    first = doc.index(STEP_NAME) + len(STEP_NAME)
    n = doc.count(STEP_NAME)
    doc = doc[:first] + doc[first:].replace(STEP_NAME, STEP_RENAMED)
    out.parent.mkdir(parents=True, exist_ok=True)
    with (
        open(out, "wb") as f,
        gzip.GzipFile(fileobj=f, mode="wb", compresslevel=6, mtime=0, filename="") as g,
    ):
        g.write(doc)
    info.update(bytes=len(doc), file_bytes=out.stat().st_size, profiler_steps_renamed=n - 1)
    info_path.parent.mkdir(parents=True, exist_ok=True)
    info_path.write_text(json.dumps(info))
    return info


# --------------------------------------------------------------------------- report


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def fit(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """Least squares y = a + b x; returns (a, b, r2)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else float("nan")
    a = my - b * mx
    ss = sum((y - my) ** 2 for y in ys)
    r2 = 1 - sum((y - a - b * x) ** 2 for x, y in zip(xs, ys, strict=True)) / ss if ss else float("nan")
    return a, b, r2


def report(res: dict) -> str:
    lines = []
    scal = []
    for size in [*res["sizes"], *res.get("variants", [])]:
        s = str(size)
        runs = res["runs"].get(s, {})
        info = res["traces"][s]
        mb = info["bytes"] / 1e6
        title = f"{size} MB target" if size in res["sizes"] else f"{size} (variant)"
        lines.append(
            f"\n## {title}: {mb:.1f} MB decompressed, {info['file_bytes'] / 1e6:.1f} MB gzip, "
            f"{info['events']:,} events ({info.get('copies', '?')} copies)\n"
        )
        lines.append(
            "| tool | runs | median s | min s | max s | median CPU s | median peak MB "
            "| other load | ratio |"
        )
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---|")

        def row(name, rs, ratio=""):
            ok = [r for r in rs if r["rc"] == 0]
            if not rs:
                return
            t = [r["wall_s"] for r in ok] or [float("nan")]
            c = [r["user_s"] + r["sys_s"] for r in ok] or [float("nan")]
            m = [r["peak_mb"] for r in ok] or [float("nan")]
            # CPU-seconds per second that other processes took on the pinned core
            o = [r["other_load_pinned_core"] for r in ok if "other_load_pinned_core" in r]
            lines.append(
                f"| {name} | {len(ok)}/{len(rs)} | {med(t):.2f} | {min(t):.2f} | {max(t):.2f} "
                f"| {med(c):.2f} | {med(m):.0f} | {med(o):.2f} | {ratio} |"
            )

        tv = [r for r in runs.get("traceview", []) if r["rc"] == 0]
        hta = [r for r in runs.get("hta", []) if r["rc"] == 0]
        tv_t, tv_m = med([r["wall_s"] for r in tv]), med([r["peak_mb"] for r in tv])
        h_t, h_m = med([r["wall_s"] for r in hta]), med([r["peak_mb"] for r in hta])
        tv_c = med([r["user_s"] + r["sys_s"] for r in tv])
        h_c = med([r["user_s"] + r["sys_s"] for r in hta])
        row("traceview (.json.gz)", runs.get("traceview", []))
        row(
            "HTA 0.5.0 (.json.gz)",
            runs.get("hta", []),
            f"HTA/tv time **{h_t / tv_t:.1f}x** (CPU {h_c / tv_c:.1f}x), "
            f"tv/HTA RSS **{tv_m / h_m:.2f}**"
            if tv and hta
            else "",
        )
        row("traceview (.json, plain)", runs.get("traceview_plain", []))
        floor_t = {}
        for fl in FLOORS:
            rs = [r for r in runs.get("floor_" + fl, []) if r["rc"] == 0]
            floor_t[fl] = med([r["wall_s"] for r in rs])
            row(
                FLOOR_NAMES[fl],
                runs.get("floor_" + fl, []),
                f"tv/floor time {tv_t / floor_t[fl]:.2f}x" if not fl.startswith("gunzip") and tv else "",
            )
        # HTA phases
        if hta:
            ph = {}
            for r in hta:
                for name, p in (r.get("hta") or {}).get("phases", {}).items():
                    ph.setdefault(name, []).append(p)
            parts = []
            for name, ps in ph.items():
                okc = sum(p["ok"] for p in ps)
                parts.append(
                    f"{name} {med([p['s'] for p in ps]):.2f} s ({okc}/{len(ps)} ok"
                    + (f"; {ps[0]['error']}" if not ps[0]["ok"] else "")
                    + ")"
                )
            lines.append("\nHTA phases (median s): " + "; ".join(parts))
        same = res.get("plain_vs_gzip", {}).get(s)
        if same is not None:
            lines.append(f"\ntraceview output, plain vs gzip input: {same}")
        if tv and size in res["sizes"]:
            scal.append((size, mb, tv_t, tv_m, h_t, h_m))
    if scal:
        lines.append("\n## Scaling (medians)\n")
        lines.append(
            "| trace MB | tv s | tv s per 100 MB | tv peak MB | tv MB per 100 MB | HTA s | HTA s per 100 MB | HTA peak MB | HTA MB per 100 MB |"
        )
        lines.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for _, mb, t, m, ht, hm in scal:
            lines.append(
                f"| {mb:.1f} | {t:.2f} | {t / mb * 100:.2f} | {m:.0f} | {m / mb * 100:.0f} "
                f"| {ht:.2f} | {ht / mb * 100:.2f} | {hm:.0f} | {hm / mb * 100:.0f} |"
            )
        if len(scal) >= 2:
            xs = [x[1] for x in scal]
            for name, i in (("tv s", 2), ("tv peak MB", 3), ("HTA s", 4), ("HTA peak MB", 5)):
                ys = [x[i] for x in scal]
                if any(math.isnan(y) for y in ys):
                    continue
                a, b, r2 = fit(xs, ys)
                lines.append(
                    f"\nfit {name} = {a:.2f} + {b * 100:.3f} per 100 MB of trace (R^2 {r2:.4f})"
                )
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="56,112,225,450", help="target sizes, MB decompressed")
    ap.add_argument(
        "--reps", default="3", help="repetitions: one number, or one per size (5,5,3,3)"
    )
    ap.add_argument("--work", type=Path, default=Path("/tmp/tvbench"))
    ap.add_argument("--cpu", type=int, default=0, help="core to pin every child to (-1: none)")
    ap.add_argument("--fixture", type=Path, default=FIXTURE)
    ap.add_argument(
        "--hta-pip-extra",
        default="pandas<3",
        help="extra pip requirements for the HTA venv (default 'pandas<3': HTA 0.5.0's "
        "load raises TypeError under pandas 3, which refuses the silent int8 upcast it relies on)",
    )
    ap.add_argument("--skip-hta", action="store_true")
    ap.add_argument(
        "--one-step",
        default="",
        help="sizes (comma list) also run as a variant with a single ProfilerStep (see "
        "one_step_variant); uses the last --reps value",
    )
    ap.add_argument(
        "--tag",
        default="",
        help="results_TAG.json / report_TAG.md / logs/TAG (reuses venv, traces)",
    )
    ap.add_argument("--profile", type=float, default=None, help="cProfile traceview at this size")
    ap.add_argument("--report-only", action="store_true", help="print the tables of results.json")
    ap.add_argument(
        "--real-cuts",
        type=Path,
        default=None,
        help="run on the time-prefix cuts of a real trace made by cut_trace.py in this "
        "directory (its cuts.json) instead of generated traces; --reps per cut",
    )
    ap.add_argument(
        "--stages",
        default="",
        help="sizes (comma list): also record one benchmarks/stages.py run (stage table, "
        "not timed into the tables) on each",
    )
    args = ap.parse_args(argv)

    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    # every child (traceview, floors, stages) imports this tree's traceview, not an
    # installed copy
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    suffix = f"_{args.tag}" if args.tag else ""
    res_path = work / f"results{suffix}.json"
    if args.report_only:
        print(report(json.loads(res_path.read_text())))
        return 0

    sizes = [float(x) if "." in x else int(x) for x in filter(None, args.sizes.split(","))]
    reps = [int(x) for x in args.reps.split(",")]
    reps = reps * max(1, len(sizes)) if len(reps) == 1 else reps
    if sizes and len(reps) != len(sizes):
        raise SystemExit("--reps: one number or one per size")
    cpu = None if args.cpu < 0 else args.cpu

    hta = None if args.skip_hta else ensure_hta_venv(work, args.hta_pip_extra.split())
    (work / "hta_driver.py").write_text(HTA_DRIVER)
    (work / "floor_driver.py").write_text(FLOOR_DRIVER)
    logs = work / "logs" / args.tag if args.tag else work / "logs"
    logs.mkdir(parents=True, exist_ok=True)

    fixture = work / "fixture" / (args.fixture.name.split(".")[0] + ".kineto.json.gz")
    layout = kineto_layout(args.fixture, fixture) if args.real_cuts is None else {}

    res = {
        "argv": sys.argv,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {
            "nproc": os.cpu_count(),
            "cpu": proc_field("/proc/cpuinfo", "model name") or platform.processor(),
            "mem_total_kb": int(proc_field("/proc/meminfo", "MemTotal").split()[0]),
            "kernel": platform.release(),
            "pinned_cpu": cpu,
            "pinning": "taskset" if shutil.which("taskset") else "sched_setaffinity",
        },
        "traceview": {
            "commit": sh(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]),
            "dirty": sh(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"]),
            "python": sys.version.split()[0],
            "cmd": traceview_cmd(),
            "diff_sha1_start": traceview_diff_sha1(),
        },
        "hta": hta,
        "fixture": {"source": str(args.fixture), "kineto_layout": str(fixture), **layout},
        "sizes": sizes,
        "reps": reps,
        "traces": {},
        "runs": {},
        "plain_vs_gzip": {},
    }
    try:
        import msgspec
        import orjson

        res["traceview"]["msgspec"] = msgspec.__version__
        res["traceview"]["orjson"] = orjson.__version__
        res["traceview"]["numpy"] = __import__("numpy").__version__
        from importlib.metadata import version

        res["traceview"]["isal"] = version("isal")
    except Exception:  # a missing optional package: record what is there
        pass

    def save():
        res_path.write_text(json.dumps(res, indent=1, default=str))

    # Inputs first, so that generation does not interleave with the timed runs.
    paths = {}
    if args.real_cuts is not None:  # time-prefix cuts of a real trace (cut_trace.py)
        cuts = json.loads((args.real_cuts / "cuts.json").read_text())
        sizes = [int(k) if k.isdigit() else k for k in cuts]
        reps = [int(x) for x in args.reps.split(",")]  # per cut, not per --sizes entry
        reps = reps * len(sizes) if len(reps) == 1 else reps
        if len(reps) != len(sizes):
            raise SystemExit("--reps: one number or one per cut")
        res["sizes"], res["reps"] = sizes, reps
        res["real_cuts"] = str(args.real_cuts)
    for size in sizes if args.real_cuts is not None else ():
        gz = args.real_cuts / f"{size}mb" / f"real_{size}mb.json.gz"
        info = dict(cuts[str(size)], copies="real")
        res["traces"][str(size)] = info
        paths[size] = (gz, None)
        print(f"trace {size} MB: {info['bytes'] / 1e6:.1f} MB, {info['events']:,} events (real)",
              file=sys.stderr)
    for size in sizes if args.real_cuts is None else ():
        gz = work / "traces" / f"{size}mb" / f"rank0_{size}mb.json.gz"
        plain = work / "plain" / f"{size}mb" / f"rank0_{size}mb.json"
        info = make_trace(fixture, size, gz)
        make_trace(fixture, size, plain)
        res["traces"][str(size)] = info
        paths[size] = (gz, plain)
        print(
            f"trace {size} MB: {info['bytes'] / 1e6:.1f} MB, {info['file_bytes'] / 1e6:.1f} MB gz, "
            f"{info['events']:,} events",
            file=sys.stderr,
        )
    entries = [(size, *paths[size], nrep, True) for size, nrep in zip(sizes, reps, strict=True)]
    res["variants"] = []
    for x in filter(None, args.one_step.split(",")):
        size = float(x) if "." in x else int(x)
        label = f"{size}-1step"
        gz = work / "traces" / f"{label}mb" / f"rank0_{label}mb.json.gz"
        base = work / "traces" / f"{size}mb" / f"rank0_{size}mb.json.gz"
        make_trace(fixture, size, base)  # cached when --sizes has it
        res["traces"][label] = one_step_variant(base, gz)
        res["variants"].append(label)
        entries.append((label, gz, None, reps[-1], False))
    save()

    tv = traceview_cmd()
    t_all = time.perf_counter()
    for size, gz, plain, nrep, with_floors in entries:
        jobs = {"traceview": [*tv, "explain", str(gz), "--format", "json"]}
        if plain is not None:
            jobs["traceview_plain"] = [*tv, "explain", str(plain), "--format", "json"]
        if hta:
            jobs["hta"] = [hta["python"], str(work / "hta_driver.py"), str(gz.parent)]
        for fl in FLOORS if with_floors else ():  # variants: same bytes, no floors
            jobs["floor_" + fl] = [sys.executable, str(work / "floor_driver.py"), fl, str(gz)]
        runs = res["runs"].setdefault(str(size), {})
        for rep in range(nrep):
            # traceview and HTA alternate: tv first on even reps, HTA first on odd ones.
            seq = ["traceview", "hta"] if rep % 2 == 0 else ["hta", "traceview"]
            seq = [k for k in seq if k in jobs] + [k for k in jobs if k not in seq]
            for kind in seq:
                stem = logs / f"{size}mb.{kind}.{rep}"
                r = run_one(kind, jobs[kind], stem, cpu)
                r["rep"] = rep
                runs.setdefault(kind, []).append(r)
                save()
                print(
                    f"  {size} MB {kind:16s} rep {rep}: {r['wall_s']:7.2f} s "
                    f"{r['peak_mb']:7.0f} MB rc={r['rc']}  other load: core "
                    f"{r['other_load_pinned_core']:.2f}, machine {r['other_load_machine']:.2f}",
                    file=sys.stderr,
                )
        if plain is not None:
            res["plain_vs_gzip"][str(size)] = compare_outputs(
                [logs / f"{size}mb.traceview.{i}.out" for i in range(nrep)],
                [logs / f"{size}mb.traceview_plain.{i}.out" for i in range(nrep)],
                [gz, plain],
            )
        save()
    res["bench_s"] = time.perf_counter() - t_all
    # The code measured is HEAD plus this diff; if it changed during the run, say so.
    res["traceview"]["diff_sha1_end"] = traceview_diff_sha1()

    if args.profile is not None:
        size = int(args.profile) if float(args.profile).is_integer() else args.profile
        gz = paths.get(size, (None,))[0] or (
            work / "traces" / f"{size}mb" / f"rank0_{size}mb.json.gz"
        )
        prof = work / f"profile_{size}{suffix}.txt"
        prof_cmd = [sys.executable, "-m", "cProfile", "-s", "tottime", "-m", "traceview"]
        cmd, pre = pin([*prof_cmd, "explain", str(gz), "--format", "json"], cpu)
        p = subprocess.run(
            cmd, capture_output=True, text=True, preexec_fn=pre, cwd=ROOT, check=False
        )
        out = p.stdout
        i = out.find(" function calls ")
        i = out.rfind("\n", 0, i) + 1 if i >= 0 else -1
        prof.write_text(out[i:] if i >= 0 else out + p.stderr)
        res["profile"] = str(prof)
    for x in filter(None, args.stages.split(",")):
        size = int(x) if x.isdigit() else x
        gz = paths[size][0]
        out = work / f"stages_{size}{suffix}.json"
        cmd, pre = pin([sys.executable, str(ROOT / "benchmarks" / "stages.py"), str(gz),
                        "--stats", str(out)], cpu)
        p = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=pre, cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
        res.setdefault("stages", {})[str(size)] = {"table": p.stdout, "stats": str(out),
                                                  "rc": p.returncode}
        save()
    res["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    save()
    text = report(res)
    (work / f"report{suffix}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
