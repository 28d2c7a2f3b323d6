"""The seeded fault suite: over a thousand generated faults, never a traceback.

Every case is generated from a seed, so a failure names the seed that reproduces it. The
families:

* structural mutations of real traces (``fixtures/``): an event removed, duplicated or
  moved, a field dropped or given another JSON type (an object, a list, null, a
  boolean, an integer of 400 digits, a negative or non-finite number), bytes cut,
  flipped or inserted;
* semantic equivalences: rewrites of a real trace that change no figure (event order,
  whitespace, gzip, unknown keys, a clock shifted by whole microseconds) must give equal
  figures;
* rule files and saved documents damaged at a random place (the default rules file,
  a saved ``ab`` result, a saved explain report);
* options misused (bad values, unknown flags), file names that are not UTF-8, a named
  pipe with no writer;
* outputs that cannot be written: a FIFO, a device, a folder, a path under ``/proc``,
  a missing folder (the target left as it was, nothing staged left behind);
* Ctrl-C (exit 130, no output file half-written).

What must hold: exit 0 with the report's invariants (every nanosecond of the window and
of each call attributed once, the breakdown's cells summing to the window, self time
within inclusive time, no negative launch latency), or exit 2 with one line on stderr
and nothing on stdout. Any other exit, or a traceback, fails the case.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import random
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from test_robustness import identities
from typer.testing import CliRunner

from corpus import DRIVER, RUNTIME, STACK, fixture
from traceview.cli.app import app

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
runner = CliRunner()
TRACES = (RUNTIME, DRIVER, STACK)
WEIRD: list[Any] = [None, True, {"a": 1}, [1, 2], "", "x", -1, 10**400, 1e308, "NaN",
                    "1e999", -(10**20), 2**63, 0.5, "12.5"]


@pytest.fixture(autouse=True)
def _short_fifo_wait(monkeypatch):
    monkeypatch.setenv("TRACEVIEW_FIFO_WAIT_S", "0.2")
    monkeypatch.delenv("TRACEVIEW_DEBUG", raising=False)


def invoke(*args: str):
    return runner.invoke(app, list(args))


def no_traceback(r) -> None:
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.stderr, r.stderr[-2000:]


def one_line(r) -> str:
    """The exit-2 contract: one line on stderr, nothing on stdout."""
    no_traceback(r)
    assert r.exit_code == 2, (r.exit_code, r.stdout[-500:], r.stderr[-500:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert r.stdout == ""
    return lines[0]


def tree_ok(nodes: list[dict]) -> None:
    """Self time within inclusive time at every node of the typical call's tree."""
    for n in nodes:
        assert 0 <= n["self_ns"] <= n["inclusive_ns"], n["name"]
        tree_ok(n["children"])


def invariants(d: dict) -> None:
    """What every report must satisfy, counted from its JSON."""
    identities(d)  # window = busy + idle = sum of categories = sum of cells
    for f in d["host"]["functions"]:
        assert 0 <= f["self_ns"] <= f["total_ns"], f["name"]
    for call in d["calls"]["per_call"]:
        m = call["metrics"]
        assert m["api_ns"] == call["end_ns"] - call["start_ns"] >= 0
        # every ns of a call has one host category
        assert sum(call["categories"].values()) == m["api_ns"], call["index"]
        lat = m["launch_latency_ns"]
        assert lat is None or lat >= 0, call["index"]
    tree_ok(d["calls"]["tree"])


def outcome(path: Path, *extra: str) -> dict | None:
    """The JSON report (invariants checked), or None for a one-line refusal."""
    r = invoke("explain", str(path), "--format", "json", *extra)
    no_traceback(r)
    if r.exit_code == 2:
        one_line(r)
        return None
    assert r.exit_code == 0, (r.exit_code, r.stderr[-500:])
    d = json.loads(r.stdout)
    invariants(d)
    return d


# ------------------------------------------------------------------------ mutations


def _events(doc: Any) -> list:
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def _mutate_doc(doc: dict, rng: random.Random) -> str:
    evs = _events(doc)
    i = rng.randrange(len(evs))
    op = rng.choice(["drop", "dup", "move", "retype", "unkey", "retype_args", "swap_ts",
                     "replace", "early"])
    ev = evs[i]
    if op == "drop":
        del evs[i]
    elif op == "dup":
        evs.insert(rng.randrange(len(evs)), copy.deepcopy(ev))
    elif op == "move":
        evs.insert(rng.randrange(len(evs)), evs.pop(i))
    elif op == "retype" and isinstance(ev, dict):
        ev[rng.choice(["ts", "dur", "ph", "cat", "name", "pid", "tid", "id", "args"])] = \
            copy.deepcopy(rng.choice(WEIRD))
    elif op == "unkey" and isinstance(ev, dict) and ev:
        ev.pop(rng.choice(sorted(ev)))
    elif op == "retype_args" and isinstance(ev, dict) and isinstance(ev.get("args"), dict):
        key = rng.choice(sorted(ev["args"]) or ["correlation"])
        ev["args"][key] = copy.deepcopy(rng.choice(WEIRD))
    elif op == "swap_ts" and isinstance(ev, dict):
        other = evs[rng.randrange(len(evs))]
        if isinstance(other, dict):
            ev["ts"], other["ts"] = other.get("ts"), ev.get("ts")
    elif op == "replace":
        evs[i] = copy.deepcopy(rng.choice(WEIRD))
    elif op == "early" and isinstance(ev, dict) and ev.get("cat") == "kernel":
        ev["ts"] = (ev.get("ts") or 0) - 100_000  # 100 ms before its launch
    return op


def _mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    """``data`` cut, with one bit flipped, or with bytes inserted, at a random place."""
    op = rng.choice(["cut", "flip", "insert"])
    at = rng.randrange(len(data))
    if op == "cut":
        return data[:at]
    if op == "flip":
        return data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1:]
    return data[:at] + rng.choice([b"{", b"]", b"\xff", b"\x00", b'"', b",,", b"[" * 500]) \
        + data[at:]


STRUCTURAL = [(name, seed) for name in TRACES for seed in range(80)]


@pytest.mark.parametrize(("name", "seed"), STRUCTURAL)
def test_structural_mutation(name, seed, tmp_path):
    rng = random.Random(f"{name}:{seed}")
    doc = fixture(name)
    for _ in range(1 + seed % 3):
        _mutate_doc(doc, rng)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    outcome(path)


FIELDS = ["ts", "dur", "ph", "cat", "name", "pid", "tid", "id", "args", "args.correlation",
          "args.stream", "args.device"]
KINDS = ["cpu_op", "cuda_runtime", "kernel"]  # an op, its launch, its kernel
RETYPED = [(f, v, k) for f in FIELDS for v in range(len(WEIRD)) for k in KINDS
           if k == KINDS[v % 3]]


@pytest.mark.parametrize(("field", "value", "kind"), RETYPED)
def test_retyped_field(field, value, kind, tmp_path):
    """Every field of each kind of event given every other JSON type, one at a time."""
    doc = fixture(RUNTIME)
    rng = random.Random(f"retype:{field}:{value}:{kind}")
    ev = rng.choice([e for e in doc["traceEvents"] if e.get("cat") == kind])
    where, key = (ev["args"], field[5:]) if field.startswith("args.") else (ev, field)
    where[key] = copy.deepcopy(WEIRD[value])
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    outcome(path)


BYTES = [(name, seed) for name in (RUNTIME, DRIVER) for seed in range(50)]


@pytest.mark.parametrize(("name", "seed"), BYTES)
def test_byte_mutation(name, seed, tmp_path):
    rng = random.Random(f"bytes:{name}:{seed}")
    data = json.dumps(fixture(name)).encode()
    path = tmp_path / ("t.json.gz" if seed % 4 == 0 else "t.json")
    damaged = _mutate_bytes(data, rng)
    path.write_bytes(gzip.compress(damaged) if seed % 4 == 0 else damaged)
    outcome(path)


# ------------------------------------------------------------------------ equivalences

def figures(d: dict) -> dict:
    """Every figure that no rewrite of the same events may change (not the clock's
    readings: start and end move with a shifted clock)."""
    calls = d["calls"]
    return {"window": d["window"]["dur_ns"], "device": d["device"],
            "breakdown": d["breakdown"], "categories": d["host"]["categories"],
            "stats": calls["stats"], "count": calls["count"],
            "per_call": [(c["metrics"], c["categories"]) for c in calls["per_call"]]}


@pytest.fixture(scope="module")
def references(tmp_path_factory) -> dict[str, dict]:
    out = {}
    folder = tmp_path_factory.mktemp("ref")
    for name in TRACES:
        path = folder / "ref.json"
        path.write_text(json.dumps(fixture(name)))
        d = outcome(path)
        assert d is not None
        out[name] = figures(d)
    return out


def _shift(doc: dict, rng: random.Random) -> None:
    by = rng.randrange(1, 10**6)  # whole us: every ns figure stays exact
    for e in doc["traceEvents"]:
        if isinstance(e.get("ts"), (int, float)):
            e["ts"] = e["ts"] + by


def _shuffle(doc: dict, rng: random.Random) -> None:
    rng.shuffle(doc["traceEvents"])


def _unknown_keys(doc: dict, rng: random.Random) -> None:
    doc[f"x_unknown_{rng.randrange(100)}"] = {"nested": [1, 2, {"a": None}]}
    for e in rng.sample(doc["traceEvents"], k=min(20, len(doc["traceEvents"]))):
        e[f"zz{rng.randrange(9)}"] = rng.choice(WEIRD)


EQUIVALENCES: dict[str, Callable[[dict, random.Random], None]] = {
    "shifted": _shift, "shuffled": _shuffle, "unknown-keys": _unknown_keys}
EQUIV = [(name, how, seed) for name in TRACES for how in [*EQUIVALENCES, "indent", "gzip"]
         for seed in range(6)]


@pytest.mark.parametrize(("name", "how", "seed"), EQUIV)
def test_equivalent_rewrite_gives_equal_figures(name, how, seed, references, tmp_path):
    rng = random.Random(f"eq:{name}:{how}:{seed}")
    doc = fixture(name)
    if how in EQUIVALENCES:
        EQUIVALENCES[how](doc, rng)
    text = json.dumps(doc, indent=rng.choice([None, 1, 4]) if how == "indent" else None)
    path = tmp_path / ("t.json.gz" if how == "gzip" else "t.json")
    path.write_bytes(gzip.compress(text.encode(), rng.randrange(1, 10)) if how == "gzip"
                     else text.encode())
    d = outcome(path)
    assert d is not None
    assert figures(d) == references[name]


# ------------------------------------------------------------------------ rule files


def _damage_json(value: Any, rng: random.Random) -> Any:
    """``value`` with one node, chosen at random, replaced by a value of another type."""
    paths: list[list] = []

    def walk(v: Any, p: list) -> None:
        paths.append(p)
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, [*p, k])
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, [*p, i])

    walk(value, [])
    out = copy.deepcopy(value)
    where = rng.choice(paths[1:])
    node = out
    for k in where[:-1]:
        node = node[k]
    node[where[-1]] = copy.deepcopy(rng.choice(WEIRD + [[[1]], {"kernel": 5}, "(", "[a-"]))
    return out


DEFAULT_RULES = (ROOT / "traceview" / "data" / "default_rules.json").read_bytes()


@pytest.mark.parametrize("seed", range(250))
def test_damaged_default_rules_file(seed):
    from traceview.errors import UsageError
    from traceview.rules import RuleSet, _load

    rng = random.Random(f"rules:{seed}")
    doc = _damage_json(json.loads(DEFAULT_RULES), rng)
    data = json.dumps(doc).encode()
    if seed % 10 == 0:
        data = _mutate_bytes(data, rng)
    try:
        got = _load(data, None)
    except UsageError as exc:
        assert "\n" not in str(exc)
    else:
        assert isinstance(got, RuleSet)
        got.classify("cpu_op", "aten::mul")  # usable, whatever it holds


USER_RULES = [
    {"rules": [{"category": "launch", "cats": [[1]]}]},
    {"rules": [{"category": "launch", "name": 5}]},
    {"launch_apis": []}, {"launch_apis": {"kernel": 5}},
    {"phases": {}}, {"phases": [{"phase": 1}]}, {"phases": [{"phase": "x", "name": 5}]},
    {"rules": [{"category": "nowhere"}]}, {"rules": [{"category": "launch", "name": "("}]},
    {"framework_ranges": [1]}, {"communication_kernels": 7}, [], 5, None,
    {"rules": [{"category": "wait", "name": "x", "yields": True}]},  # yields, no subtree
    {"rules": [{"category": "wait", "name": "x", "subtree": True, "yields": "yes"}]},
]


@pytest.mark.parametrize("i", range(len(USER_RULES) + 3))
def test_bad_user_rules_file_is_one_line(i, tmp_path):
    path = tmp_path / "rules.json"
    if i < len(USER_RULES):
        path.write_text(json.dumps(USER_RULES[i]))
    else:
        path.write_bytes([b"\xff", b"[" * 100_000, b'{"rules":' + b"[" * 100_000][
            i - len(USER_RULES)])
    line = one_line(invoke("explain", str(FIXTURES / RUNTIME), "--rules", str(path)))
    assert "rule" in line


# ------------------------------------------------------------------------ saved documents

AB = FIXTURES / "ab_h200_flaggems_add.json"


@pytest.mark.parametrize("seed", range(120))
def test_damaged_ab_document(seed, tmp_path):
    from traceview.errors import TraceviewError
    from traceview.multi.unprofiled import from_ab, load_ab

    rng = random.Random(f"ab:{seed}")
    path = tmp_path / "ab.json"
    path.write_text(json.dumps(_damage_json(json.loads(AB.read_text()), rng)))
    try:
        doc = load_ab(path)
    except TraceviewError as exc:
        assert "\n" not in str(exc)
    else:
        from_ab(doc)


def test_ab_document_with_a_null_through_diff(tmp_path):
    doc = json.loads(AB.read_text())
    doc["sides"] = None
    path = tmp_path / "ab.json"
    path.write_text(json.dumps(doc))
    trace = str(FIXTURES / RUNTIME)
    assert "ab.json" in one_line(invoke("diff", trace, trace, "--ab", str(path)))


@pytest.fixture(scope="module")
def saved_report(tmp_path_factory) -> dict:
    r = invoke("explain", str(FIXTURES / RUNTIME), "--format", "json")
    assert r.exit_code == 0
    return json.loads(r.stdout)


@pytest.mark.parametrize("seed", range(80))
def test_damaged_saved_report(seed, saved_report, tmp_path):
    from traceview.errors import TraceviewError
    from traceview.multi.compare import load_report

    rng = random.Random(f"report:{seed}")
    path = tmp_path / "report.json"
    path.write_text(json.dumps(_damage_json(saved_report, rng)))
    try:
        load_report(path)
    except TraceviewError as exc:
        assert "\n" not in str(exc)


# ------------------------------------------------------------------------ options, names


MISUSE = [
    ["explain"], ["explain", "--format", "yaml", "{T}"], ["explain", "{T}", "--width", "-5"],
    ["explain", "{T}", "--width", "abc"], ["explain", "{T}", "--window", "zz("],
    ["explain", "{T}", "--window", "5ms:1ms"], ["explain", "{T}", "--window", "1e999s:2"],
    ["explain", "{T}", "--calls", "(("], ["explain", "{T}", "--calls", ""],
    ["explain", "{T}", "--top", "-1"], ["explain", "{T}", "--thread", "99999"],
    ["explain", "{T}", "--figure", "{D}/x.txt"], ["explain", "{T}", "--annotate", "{D}/x.txt"],
    ["explain", "{T}", "--no-such-flag"], ["explain", "{D}/missing.json"],
    ["explain", "{D}"], ["explain", "{T}", "--rules", "{D}/missing.json"],
    ["explain", "{T}", "--rules", "{D}"], ["diff", "{T}"], ["diff", "{T}", "{D}/missing"],
    ["diff", "{T}", "{T}", "--ab", "{T}"], ["export", "{T}"],
    ["export", "{T}", "--parquet", "{T}"], ["explain", "{T}", "--unprofiled-call", "x"],
    ["explain", "{T}", "--unprofiled-call", "-5us"], ["explain", "{T}", "--window", ""],
    ["explain", "{T}", "--calls-depth", "-3"], ["explain", "{T}", "{T}", "--figure", "{D}/f.svg"],
    ["nonsense"], ["explain", "{T}", "--format"],
]


@pytest.mark.parametrize("i", range(len(MISUSE)))
def test_cli_misuse(i, tmp_path):
    args = [a.replace("{T}", str(FIXTURES / RUNTIME)).replace("{D}", str(tmp_path))
            for a in MISUSE[i]]
    r = invoke(*args)
    no_traceback(r)
    assert r.exit_code in (0, 2), (args, r.exit_code, r.output[-500:])
    if r.exit_code == 2:
        assert r.stdout == "" or "Usage" in r.output


OPTION_VALUES = ["0", "-1", "1e400", "nan", "", "((", "1ms:", ":2ms", "5ms:1ms", "9" * 30,
                 "\x00", "x" * 5000, "1.5", "-5us", "inf", "1e400ms:2ms", "[a-"]
OPTIONS = ["--width", "--top", "--window", "--calls", "--thread", "--calls-depth",
           "--unprofiled-call", "--format"]


@pytest.mark.parametrize("seed", range(40))
def test_seeded_option_values(seed):
    rng = random.Random(f"options:{seed}")
    args = ["explain", str(FIXTURES / RUNTIME)]
    for flag in rng.sample(OPTIONS, k=rng.randint(1, 3)):
        args += [flag, rng.choice(OPTION_VALUES)]
    r = invoke(*args)
    no_traceback(r)
    assert r.exit_code in (0, 2), (args, r.exit_code, r.output[-500:])


@pytest.mark.parametrize("fmt", ["text", "json", "md"])
@pytest.mark.parametrize("where", ["file", "folder", "diff", "export"])
def test_non_utf8_file_names(where, fmt, tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    name = os.fsdecode(b"bad\xffname.json")
    (folder / name).write_bytes(gzip.decompress((FIXTURES / RUNTIME).read_bytes()))
    path = str(folder / name)
    if where == "file":
        r = invoke("explain", path, "--format", fmt)
    elif where == "folder":
        r = invoke("explain", str(folder), "--format", fmt)
    elif where == "diff":
        r = invoke("diff", path, path, "--format", fmt)
    else:
        r = invoke("export", path, "--parquet", str(tmp_path / f"out-{fmt}"))
    no_traceback(r)
    assert r.exit_code == 0, r.output[-500:]
    if where != "export":  # the name's byte written as text, whatever the format
        assert "xffname" in r.stdout.replace("\n", "")


def test_fifo_with_no_writer_is_one_line_within_the_wait(tmp_path):
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    t = time.monotonic()
    line = one_line(invoke("explain", str(fifo)))
    assert time.monotonic() - t < 5
    assert "trace.json" in line and "no writer" in line


# ------------------------------------------------------------------------ outputs


def _targets(tmp_path: Path) -> dict[str, Path]:
    fifo = tmp_path / "fifo.svg"
    os.mkfifo(fifo)
    fifo_json = tmp_path / "fifo.json"
    os.mkfifo(fifo_json)
    null = tmp_path / "null.svg"
    null.symlink_to("/dev/null")
    null_json = tmp_path / "null.json"
    null_json.symlink_to("/dev/null")
    folder = tmp_path / "folder.svg"
    folder.mkdir()
    folder_json = tmp_path / "folder.json"
    folder_json.mkdir()
    return {"fifo": fifo, "fifo_json": fifo_json, "null": null, "null_json": null_json,
            "folder": folder, "folder_json": folder_json, "proc": Path("/proc/self/x.svg"),
            "missing": tmp_path / "no" / "such" / "x.svg",
            "missing_json": tmp_path / "no" / "such" / "x.json",
            "proc_json": Path("/proc/self/x.json")}


OUTPUTS = [(flag, target) for flag in ("--figure", "--annotate")
           for target in ("fifo", "null", "folder", "proc", "missing")]


@pytest.mark.parametrize(("flag", "target"), OUTPUTS)
def test_output_that_cannot_be_written(flag, target, tmp_path):
    targets = _targets(tmp_path)
    if flag == "--annotate":  # its file is JSON
        target += "_json"
    out = targets[target]
    before = os.lstat(out).st_mode if os.path.lexists(out) else None
    r = invoke("explain", str(FIXTURES / RUNTIME), flag, str(out))
    one_line(r)
    after = os.lstat(out).st_mode if os.path.lexists(out) else None
    assert before == after  # a FIFO stays a FIFO, a symlink to /dev/null stays one
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert not [p for p in tmp_path.rglob("*.tmp")]


def test_export_into_proc_and_onto_a_device(tmp_path):
    for out in ("/proc/self/tables", "/dev/null"):
        one_line(invoke("export", str(FIXTURES / RUNTIME), "--parquet", out))


# ------------------------------------------------------------------------ signals


def _handler_installed(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            mask = int(next(ln.split()[1] for ln in f if ln.startswith("SigCgt:")), 16)
    except (OSError, StopIteration):
        return False
    return bool(mask & (1 << (signal.SIGTERM - 1)))  # Python itself catches SIGINT


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("delay", [0.0, 0.3])
def test_ctrl_c_exits_130_and_leaves_nothing_half_written(delay, tmp_path):
    big = tmp_path / "big.json"
    doc = fixture(STACK)
    doc["traceEvents"] = doc["traceEvents"] * 30  # long enough to be interrupted
    big.write_text(json.dumps(doc))
    figure = tmp_path / "f.svg"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    p = subprocess.Popen([sys.executable, "-m", "traceview", "explain", str(big), "--figure",
                          str(figure)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not _handler_installed(p.pid) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(delay)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert b"Traceback" not in err, err[-2000:]
    assert p.returncode in (0, 130), (p.returncode, err[-500:])
    if p.returncode == 130:
        assert not figure.exists() or figure.stat().st_size > 0
    assert not list(tmp_path.glob(".*.tmp"))


# ------------------------------------------------------------------------ the probe's finds


def _runtime_with(tmp_path: Path, change: Callable[[list[dict]], None]) -> tuple[Path, dict]:
    doc = fixture(RUNTIME)
    change(doc["traceEvents"])
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    d = outcome(path)
    assert d is not None
    return path, d


def ns(us: float) -> int:
    """Kineto's microseconds (three decimals) as exact ns, from the number's text."""
    return int(Decimal(repr(us)) * 1000)


def _codes(d: dict) -> dict[str, int]:
    return {x["code"]: x["count"] for x in d["diagnostics"]}


@pytest.mark.parametrize("field", ["ts", "dur"])
def test_an_integer_past_a_floats_range(field, tmp_path):
    def change(evs: list[dict]) -> None:
        op = next(e for e in evs if e.get("cat") == "cpu_op")
        op[field] = 10**309

    _, d = _runtime_with(tmp_path, change)
    want = "missing-ts" if field == "ts" else "missing-dur"
    assert _codes(d).get(want) == 1


def test_device_work_before_its_launch_is_said_and_has_no_latency(tmp_path):
    moved: list[int] = []

    def change(evs: list[dict]) -> None:
        kernels = sorted((e for e in evs if e.get("cat") == "kernel"), key=lambda e: e["ts"])
        kernels[5]["ts"] -= 100_000  # 100 ms before its launch
        moved.append(kernels[5]["args"]["correlation"])

    _, d = _runtime_with(tmp_path, change)
    assert _codes(d).get("device-work-before-launch") == 1
    doc = fixture(RUNTIME)
    launch_ts = {e["args"]["correlation"]: e["ts"] for e in doc["traceEvents"]
                 if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    kernel_ts = {e["args"]["correlation"]: e["ts"] for e in doc["traceEvents"]
                 if e.get("cat") == "kernel"}
    launch = ns(launch_ts[moved[0]])
    holding = [c for c in d["calls"]["per_call"] if c["start_ns"] <= launch <= c["end_ns"]]
    assert len(holding) == 1 and holding[0]["metrics"]["launch_latency_ns"] is None
    got = sorted(c["metrics"]["launch_latency_ns"] for c in d["calls"]["per_call"]
                 if c["metrics"]["launch_latency_ns"] is not None)
    want = sorted(ns(kernel_ts[k]) - ns(launch_ts[k]) for k in kernel_ts
                  if k != moved[0] and k in launch_ts)
    assert got == want


@pytest.mark.parametrize("value", [{"a": 1}, [1, 2]])
@pytest.mark.parametrize("field", ["ts", "dur"])
def test_proton_trace_with_a_number_of_another_type(field, value, tmp_path):
    doc = json.loads(gzip.decompress(
        (FIXTURES / "proton" / "proton_mul_20_calls.chrome_trace.gz").read_bytes()))
    kernels = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    kernels[3][field] = value
    path = tmp_path / "t.chrome_trace"
    path.write_text(json.dumps(doc))
    r = invoke("explain", str(path), "--format", "json")
    no_traceback(r)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["kernel_count"] == len(kernels) - 1


@pytest.mark.parametrize("depth", [125, 260])
def test_a_deep_host_stack_inside_calls(depth, tmp_path):
    from traceview.report.build import MAX_TREE_DEPTH

    evs = []
    for c in range(3):
        t0 = c * 100_000
        evs.append({"ph": "X", "cat": "user_annotation", "name": "step", "pid": 1, "tid": 1,
                    "ts": t0, "dur": 50_000})
        evs += [{"ph": "X", "cat": "python_function", "name": f"m.py({i}): f{i}", "pid": 1,
                 "tid": 1, "ts": t0 + 1 + i, "dur": 40_000 - 2 * i} for i in range(depth)]
        evs += [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                 "tid": 1, "ts": t0 + depth + 5, "dur": 5, "args": {"correlation": 10 + c}},
                {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                 "ts": t0 + depth + 20, "dur": 30,
                 "args": {"correlation": 10 + c, "stream": 7, "device": 0}}]
    path = tmp_path / "deep.json"
    path.write_text(json.dumps({"traceEvents": evs}))
    d = outcome(path)
    assert d is not None
    node, levels = d["calls"]["tree"][0], 1
    while node["children"]:
        node, levels = node["children"][0], levels + 1
    assert levels == min(depth + 1, MAX_TREE_DEPTH)  # the frames (under the call), the launch
    if depth + 1 > MAX_TREE_DEPTH:  # frame MAX folded: its 40 ms less 2 us a level above
        assert node["folded"] == 1
        assert node["folded_ns"] == (40_000 - 2 * MAX_TREE_DEPTH) * 1000


@pytest.mark.parametrize("kind", ["fifo", "null"])
@pytest.mark.parametrize("table", ["slices", "calls", "summary"])
def test_export_into_a_folder_holding_a_special_file(table, kind, tmp_path):
    out = tmp_path / "tables"
    out.mkdir()
    target = out / f"{table}.parquet"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/null")
    before = os.lstat(target).st_mode
    assert f"{table}.parquet" in one_line(
        invoke("export", str(FIXTURES / RUNTIME), "--parquet", str(out)))
    assert os.lstat(target).st_mode == before
    assert sorted(p.name for p in out.iterdir()) == [f"{table}.parquet"]  # nothing staged
