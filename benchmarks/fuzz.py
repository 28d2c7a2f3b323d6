"""Fuzz the loader and the engine. Run outside CI; results in docs/robustness.md.

    pip install atheris                      # coverage-guided, libFuzzer inside
    taskset -c 1 python benchmarks/fuzz.py --minutes 20
    python benchmarks/fuzz.py --replay /tmp/traceview-fuzz/crashes/*.bin   # re-run saved inputs

Every input is written to a temporary file and goes through the public path:
``traceview.analyze(path)``, ``to_dict()``, and the three renderers (text at 80
columns, JSON, markdown), then ``diff`` of the report against itself. Two outcomes are
allowed: a ``TraceviewError`` (one clear line in the CLI), or a result whose identities
hold exactly (host categories and breakdown cells sum to the window, the busy cells to
device busy, busy + idle = window, nothing negative) and whose JSON parses back.
Anything else is a crash: the input is saved under ``--crash-dir`` (one file per
distinct exception site, plus its traceback) and fuzzing goes on, so one run reports
every distinct crash instead of stopping at the first.

Inputs are read two ways. Bytes starting with a control byte 0x01-0x08 drive a
*structured* generator (atheris' FuzzedDataProvider picks events, phases, categories,
field types, damage, truncation, gzip); the generator produces the trace text, which
then takes the same path. All other bytes are the file itself. The seed corpus is the
bad-input corpus of ``tests/corpus.py`` plus cut-down real fixtures, written into
``--corpus-dir`` at start; libFuzzer adds what it finds there.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

DEFAULT_DIR = Path("/tmp/traceview-fuzz")
SLOW_S = 2.0  # an input taking longer than this is saved under slow/ (not a crash)
MAX_LEN = 24_000  # libFuzzer -max_len: bytes per input


class Stats:
    def __init__(self) -> None:
        self.execs = 0
        self.ok = 0
        self.rejected = 0
        self.structured = 0
        self.crashes: dict[str, int] = {}
        self.slow = 0
        self.started = time.time()


STATS = Stats()
CORPUS_DIR = DEFAULT_DIR / "corpus"


def CORPUS_SIZE() -> int:  # noqa: N802
    return sum(1 for _ in CORPUS_DIR.iterdir()) if CORPUS_DIR.is_dir() else 0
CRASH_DIR = DEFAULT_DIR / "crashes"
SLOW_DIR = DEFAULT_DIR / "slow"
TMP = Path(tempfile.mkdtemp(prefix="traceview-fuzz-"))


def _import_target():
    """Import everything the target touches (inside atheris' instrumentation)."""
    import traceview  # noqa: F401
    import traceview.multi.compare  # noqa: F401
    import traceview.render.console  # noqa: F401
    import traceview.render.markdown  # noqa: F401
    import traceview.report.explanation  # noqa: F401
    import traceview.report.schema  # noqa: F401


class IdentityError(AssertionError):
    """The result broke the contract (a crash, like an exception)."""


def check_identities(d: dict) -> None:
    w = d["window"]["dur_ns"]
    dev = d["device"]
    if w < 0:
        raise IdentityError(f"negative window {w}")
    if not 0 <= dev["busy_ns"] <= w or dev["busy_ns"] + dev["idle_ns"] != w:
        raise IdentityError(f"busy {dev['busy_ns']} idle {dev['idle_ns']} window {w}")
    if dev["busy_ns"] > dev["work_sum_ns"]:
        raise IdentityError("busy exceeds the sum of device work")
    cells = d["breakdown"]
    if any(c["ns"] < 0 for c in cells) or any(v < 0 for v in d["host"]["categories"].values()):
        raise IdentityError("negative cell")
    if d["host"]["thread"] is not None and w > 0:
        if sum(d["host"]["categories"].values()) != w:
            raise IdentityError(f"categories {sum(d['host']['categories'].values())} != window {w}")
        if sum(c["ns"] for c in cells) != w:
            raise IdentityError(f"cells {sum(c['ns'] for c in cells)} != window {w}")
        busy = sum(c["ns"] for c in cells if c["device"] == "busy")
        if busy != dev["busy_ns"]:
            raise IdentityError(f"busy cells {busy} != device busy {dev['busy_ns']}")


def run_one(path: Path) -> str:
    """The target on one file: 'ok', 'rejected' (a TraceviewError), or raises."""
    import orjson
    from rich.console import Console

    import traceview
    from traceview.errors import TraceviewError
    from traceview.multi.compare import diff_reports
    from traceview.render.console import render_console
    from traceview.render.markdown import render_markdown
    from traceview.report.schema import to_json as render_json

    head = path.read_bytes()[:4096]
    if b'"schema_version"' in head and b'"traceEvents"' not in head:
        # a saved explain report, as `traceview diff` reads it
        from traceview.multi.compare import load_report

        try:
            rep = load_report(path)
        except TraceviewError:
            return "rejected"
        diff_reports(rep, rep)
        return "ok"
    try:
        ex = traceview.analyze(path)
    except TraceviewError:
        return "rejected"
    d = ex.to_dict()
    check_identities(d)
    if orjson.loads(render_json(ex))["window"] != d["window"]:
        raise IdentityError("JSON output does not parse back")
    render_markdown(ex)
    render_console(ex, Console(file=io.StringIO(), width=80, force_terminal=True))
    diff_reports(ex, ex)
    return "ok"


# -- the structured generator -------------------------------------------------------------

PHASES = ["X"] * 8 + ["B", "E", "i", "I", "s", "t", "f", "M", "C", "b", "e", "Z", ""]
CATS = ["cpu_op", "cpu_op", "kernel", "kernel", "cuda_runtime", "cuda_driver", "python_function",
        "user_annotation", "gpu_user_annotation", "gpu_memcpy", "gpu_memset", "Trace",
        "overhead", "ac2g", "", "weird"]
NAMES = ["aten::mul", "cudaLaunchKernel", "cuLaunchKernelEx", "cudaGraphLaunch",
         "cudaDeviceSynchronize", "cudaMemcpyAsync", "call_0", "call_1", "call_2",
         "ProfilerStep#3", "k", "triton/runtime/jit.py(1): run", "torch/_ops.py(2): __call__",
         "thread_name", "process_name", "[bold]x[/]", "[/]", "<b>|`x`</b>", "名前🚀", "a\nb",
         "\x00", "x" * 300]


def _value(fdp, kind: str):
    """A field value of the type the fuzzer picks (right type most of the time)."""
    choice = fdp.ConsumeIntInRange(0, 15)
    if kind == "id":
        return [fdp.ConsumeIntInRange(0, 4), fdp.ConsumeIntInRange(0, 4),
                str(fdp.ConsumeIntInRange(0, 4)), float(fdp.ConsumeIntInRange(0, 4)), None, True,
                2**63 - 1 + fdp.ConsumeIntInRange(0, 2) ** 70,
                -1, "stream 7", [1], {"a": 1}, 1.5, "", 7, 100, 0][choice]
    # a time in microseconds
    base = fdp.ConsumeIntInRange(0, 20_000) / 1000
    return [base, base, base, base, base + 1.7e12, str(base), f"{base:.3f}", int(base), None,
            -base, 1e300, 3.7e9 + base, "1e999999", "nan", True,
            fdp.ConsumeIntInRange(-2**63, 2**63 - 1) / 1000][choice]


def structured(data: bytes) -> bytes:
    import atheris

    fdp = atheris.FuzzedDataProvider(data)
    events = []
    for _ in range(fdp.ConsumeIntInRange(0, 40)):
        ph = fdp.PickValueInList(PHASES)
        ev: dict = {"ph": ph}
        if fdp.ConsumeBool():
            ev["cat"] = fdp.PickValueInList(CATS)
        if fdp.ConsumeIntInRange(0, 7):
            ev["name"] = fdp.PickValueInList(NAMES)
        ev["pid"] = _value(fdp, "id")
        ev["tid"] = _value(fdp, "id")
        if fdp.ConsumeIntInRange(0, 7):
            ev["ts"] = _value(fdp, "time")
        if ph == "X" and fdp.ConsumeIntInRange(0, 7):
            ev["dur"] = _value(fdp, "time")
        if ph in "stf" and ph:
            ev["id"] = _value(fdp, "id")
            if fdp.ConsumeBool():
                ev["bp"] = "e"
        if fdp.ConsumeBool():
            args: dict = {}
            for key in ("correlation", "device", "stream", "name", "External id"):
                if fdp.ConsumeBool():
                    args[key] = _value(fdp, "id") if key != "name" else fdp.PickValueInList(NAMES)
            ev["args"] = args if fdp.ConsumeIntInRange(0, 7) else fdp.PickValueInList([[1], "x", 3])
        events.append(ev)
        if fdp.ConsumeIntInRange(0, 15) == 0 and events:  # an exact duplicate
            events.append(dict(events[fdp.ConsumeIntInRange(0, len(events) - 1)]))
    form = fdp.ConsumeIntInRange(0, 3)
    if form == 0:
        doc: object = events
    else:
        doc = {"traceEvents": events}
        if fdp.ConsumeBool():
            meta = {"schemaVersion": 1, "deviceProperties": [{"name": "X"}],
                    "traceview": fdp.PickValueInList([
                        {"op": "mul", "shape": [1, 4], "protocol": {"mode": "eager"},
                         "baseline": {"full_api_ns_p50": 1000}},
                        {"shape": 5, "protocol": "eager", "baseline": [1], "device": "gpu"},
                        [1, 2], "x", None, {"versions": 3, "scalars": None}])}
            doc = {**meta, "traceEvents": events} if form == 1 else {"traceEvents": events, **meta}
    text = json.dumps(doc).encode()  # NaN and Infinity kept: Python writers do emit them
    cut = fdp.ConsumeIntInRange(0, 9)
    if cut == 0 and text:
        text = text[: fdp.ConsumeIntInRange(0, len(text))]
    if fdp.ConsumeIntInRange(0, 5) == 0:
        text = gzip.compress(text)
        if fdp.ConsumeBool():
            text = text[: fdp.ConsumeIntInRange(0, len(text))]
    return text


# -- harness --------------------------------------------------------------------------------

def _site(exc: BaseException) -> str:
    """Where an exception came from: its type and the innermost traceview frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "traceview" in f.filename and "benchmarks" not in f.filename]
    f = (ours or frames)[-1]
    where = f"{Path(f.filename).name}:{f.lineno}" if f else "?"
    return f"{type(exc).__name__}@{where}"


def record_crash(data: bytes, exc: BaseException) -> None:
    site = _site(exc)
    first = site not in STATS.crashes
    STATS.crashes[site] = STATS.crashes.get(site, 0) + 1
    if not first:
        return
    CRASH_DIR.mkdir(parents=True, exist_ok=True)
    tag = hashlib.sha1(site.encode()).hexdigest()[:10]
    (CRASH_DIR / f"{tag}.bin").write_bytes(data)
    (CRASH_DIR / f"{tag}.txt").write_text(
        site + "\n\n" + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    print(f"\n=== new crash {site} -> {CRASH_DIR / tag}.bin", file=sys.stderr, flush=True)


def one_input(data: bytes) -> None:
    STATS.execs += 1
    file_bytes = data
    if data[:1] and 1 <= data[0] <= 8:
        STATS.structured += 1
        try:
            file_bytes = structured(data[1:])
        except Exception as exc:  # a bug in the generator, not in traceview
            record_crash(data, exc)
            return
    path = TMP / "input.json"
    path.write_bytes(file_bytes)
    t0 = time.perf_counter()
    try:
        outcome = run_one(path)
    except (Exception, RecursionError) as exc:
        record_crash(data, exc)
        return
    finally:
        took = time.perf_counter() - t0
        if took > SLOW_S:
            STATS.slow += 1
            SLOW_DIR.mkdir(parents=True, exist_ok=True)
            (SLOW_DIR / f"{hashlib.sha1(data).hexdigest()[:12]}-{took:.1f}s.bin").write_bytes(data)
    if outcome == "ok":
        STATS.ok += 1
    else:
        STATS.rejected += 1


def seeds(folder: Path) -> int:
    """Write the seed corpus: the bad-input corpus, and cut-down real fixtures."""
    import random

    import corpus

    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    work = Path(tempfile.mkdtemp(prefix="traceview-seeds-"))
    for case in corpus.cases():
        try:
            p = case.write(work / case.name)
        except Exception:
            continue
        if p.is_file() and p.stat().st_size <= MAX_LEN:
            (folder / f"seed-{case.name}").write_bytes(p.read_bytes())
            n += 1
    rng = random.Random(6)
    for fx in sorted((ROOT / "fixtures").glob("*.json.gz")):
        doc = json.loads(gzip.decompress(fx.read_bytes()))
        events = doc["traceEvents"]
        # a window of consecutive events small enough to mutate quickly
        for k in range(2):
            i = rng.randrange(max(len(events) - 40, 1))
            small = {"traceEvents": events[i:i + 40],
                     "deviceProperties": doc.get("deviceProperties")}
            data = json.dumps(small).encode()[:MAX_LEN]
            (folder / f"seed-{fx.name}-{k}").write_bytes(data)
            n += 1
    import traceview
    from tracebuilder import TraceBuilder

    tb = TraceBuilder()
    corpus._clean_small(tb)
    report = traceview.analyze(tb.write(work / "small.json")).to_dict()
    (folder / "seed-saved-report").write_bytes(json.dumps(report).encode())
    n += 1
    for k in range(8):  # structured seeds
        (folder / f"seed-structured-{k}").write_bytes(bytes([1 + k % 8]) + rng.randbytes(200))
        n += 1
    return n


def report(final: bool = False) -> str:
    el = time.time() - STATS.started
    lines = [f"{'final' if final else 'progress'}: {el:.0f} s, {STATS.execs} executions "
             f"({STATS.execs / max(el, 1e-9):.0f}/s), {STATS.structured} structured, "
             f"{STATS.ok} analysed, {STATS.rejected} rejected with a TraceviewError, "
             f"{STATS.slow} slow (> {SLOW_S} s), {len(STATS.crashes)} distinct crash sites, "
             f"corpus {CORPUS_SIZE()} inputs"]
    for site, count in sorted(STATS.crashes.items()):
        lines.append(f"  crash {site}: {count} inputs")
    return "\n".join(lines)


def replay(paths: list[str]) -> int:
    _import_target()
    bad = 0
    for p in paths:
        data = Path(p).read_bytes()
        before = len(STATS.crashes)
        if data[:1] and 1 <= data[0] <= 8:
            try:
                import atheris  # noqa: F401
            except ImportError:
                print(f"{p}: structured input needs atheris installed", file=sys.stderr)
                continue
        one_input(data)
        status = "CRASH" if len(STATS.crashes) > before else "ok"
        bad += status == "CRASH"
        print(f"{status} {p}")
    print(report(final=True))
    return 1 if bad else 0


def main() -> int:
    global CRASH_DIR, SLOW_DIR, CORPUS_DIR
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--dir", type=Path, default=DEFAULT_DIR,
                    help="work folder: corpus/, crashes/, slow/ go here")
    ap.add_argument("--replay", nargs="+", metavar="FILE", help="re-run saved inputs and exit")
    ap.add_argument("--report-every", type=float, default=60.0,
                    help="seconds between progress lines")
    args, rest = ap.parse_known_args()
    CRASH_DIR, SLOW_DIR = args.dir / "crashes", args.dir / "slow"
    if args.replay:
        return replay(args.replay)
    import atheris

    with atheris.instrument_imports(include=["traceview"]):
        _import_target()
    corpus_dir = CORPUS_DIR = args.dir / "corpus"
    n = seeds(corpus_dir)
    print(f"seed corpus: {n} inputs in {corpus_dir}", flush=True)
    last = [time.time()]

    STATS.started = time.time()
    stop = STATS.started + args.minutes * 60

    def target(data: bytes) -> None:
        one_input(data)
        now = time.time()
        if now - last[0] > args.report_every or now >= stop:
            last[0] = now
            text = report(final=now >= stop)
            print(text, flush=True)
            (args.dir / "stats.txt").write_text(text + "\n")
            if now >= stop:
                os._exit(1 if STATS.crashes else 0)

    argv = [sys.argv[0], str(corpus_dir), f"-max_total_time={int(args.minutes * 60) + 600}",
            f"-max_len={MAX_LEN}", "-timeout=120", "-rss_limit_mb=4096",
            f"-artifact_prefix={CRASH_DIR}/", "-print_final_stats=1", *rest]
    CRASH_DIR.mkdir(parents=True, exist_ok=True)
    atheris.Setup(argv, target)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
