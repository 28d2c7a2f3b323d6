"""Bad input and faults: clear errors, numbers that still add up, nothing lost.

Every case of the generated corpus (``tests/corpus.py``) goes through the real CLI in
all three formats. Unusable input: exit 2, one line on stderr naming the file, stdout
empty, no traceback. Degraded input: exit 0, the identities hold exactly, each problem
is a diagnostic or finding with its count, and damaged fixtures give the numbers of
their clean reference. The input file is never touched. Then property tests over
generated traces, and the output files (atomic).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import corpus
import traceview
from conftest import FIXTURES
from tracebuilder import TraceBuilder
from traceview.cli.app import app
from traceview.errors import TraceviewError

runner = CliRunner()
CASES = corpus.cases()


def _params(cases: list[corpus.Case]) -> list:
    return [pytest.param(c, id=c.name, marks=[pytest.mark.xfail(reason=c.xfail, strict=False)]
                         if c.xfail else []) for c in cases]


UNUSABLE = _params([c for c in CASES if c.exit_code])
DEGRADED = _params([c for c in CASES if not c.exit_code])
FORMATS = ("text", "json", "md")
FIXTURE_OK = [HealthCheck.function_scoped_fixture]  # tmp_path is reused; each example overwrites
WIDTH = 80


def identities(d: dict) -> None:
    """The contract of every report, checked from the outside (JSON)."""
    w = d["window"]["dur_ns"]
    dev = d["device"]
    assert w >= 0
    assert 0 <= dev["busy_ns"] <= w and dev["busy_ns"] + dev["idle_ns"] == w
    assert dev["busy_ns"] <= dev["work_sum_ns"]
    assert all(c["ns"] >= 0 for c in d["breakdown"])
    assert all(v >= 0 for v in d["host"]["categories"].values())
    if w > 0:
        # with or without a host thread, every ns of the window has one host category
        assert sum(d["host"]["categories"].values()) == w
        assert sum(c["ns"] for c in d["breakdown"]) == w
        assert sum(c["ns"] for c in d["breakdown"] if c["device"] == "busy") == dev["busy_ns"]


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every file under ``folder``: size, mtime and content hash."""
    out = {}
    for p in sorted(folder.rglob("*")):
        st_ = p.stat()
        digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        size = st_.st_size if p.is_file() else 0
        out[str(p.relative_to(folder))] = (size, st_.st_mtime_ns, digest)
    return out


def explain(path: Path, fmt: str, *extra: str):
    return runner.invoke(app, ["explain", str(path), "--format", fmt, "--width", str(WIDTH),
                               *extra])


def no_traceback(r) -> None:
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.stderr


def write_case(case: corpus.Case, folder: Path) -> Path:
    return case.write(folder)


# -- the corpus -------------------------------------------------------------------------------

def test_corpus_covers_every_item_of_the_issue():
    covered = {c.item for c in CASES}
    assert covered == set(corpus.ITEMS), set(corpus.ITEMS) ^ covered
    assert len({c.name for c in CASES}) == len(CASES)
    assert len(CASES) >= 70


@pytest.mark.parametrize("case", UNUSABLE)
def test_unusable_input_is_one_line_and_exit_2(case, tmp_path):
    folder = tmp_path / "in"
    path = write_case(case, folder)
    before = snapshot(folder)
    for fmt in FORMATS:
        r = explain(path, fmt)
        no_traceback(r)
        assert r.exit_code == 2, (fmt, r.output)
        assert r.stdout == ""
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, r.stderr
        assert lines[0].startswith("traceview: error: ") and str(path) in lines[0]
        assert case.error in lines[0], lines[0]
    good = FIXTURES / corpus.RUNTIME
    for a, b in ((path, good), (good, path)):
        r = runner.invoke(app, ["diff", str(a), str(b), "--format", "json"])
        no_traceback(r)
        assert r.exit_code == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
        assert str(path) in r.stderr
    with pytest.raises(TraceviewError, match=case.error):
        traceview.analyze(path)
    assert snapshot(folder) == before


@pytest.mark.parametrize("case", DEGRADED)
def test_degraded_input_is_analysed_and_adds_up(case, tmp_path):
    folder = tmp_path / "in"
    path = write_case(case, folder)
    before = snapshot(folder)
    r = explain(path, "json")
    no_traceback(r)
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    identities(d)
    diags = {g["code"]: g for g in d["diagnostics"]}
    for code, count in case.diagnostics.items():
        assert code in diags, (code, sorted(diags))
        assert count is None or diags[code]["count"] == count, diags[code]
    found = {f["id"]: f for f in d["findings"]}
    for fid, count in case.findings.items():
        assert fid in found, (fid, sorted(found))
        assert count is None or found[fid]["evidence"]["count"] == count, found[fid]
    for name in case.absent:
        assert name not in found and name not in diags, name
    ref = None
    if case.reference is not None:
        ref = traceview.analyze(case.reference(tmp_path / "ref")).to_dict()
        for key in case.same:
            assert d[key] == ref[key], key
    if case.check is not None:
        case.check(d, ref)
    for fmt in ("text", "md"):
        r = explain(path, fmt)
        no_traceback(r)
        assert r.exit_code == 0, (fmt, r.output)
        if fmt == "text":
            assert max(map(len, r.stdout.splitlines())) <= WIDTH
            for g in d["diagnostics"]:  # every problem is in the text output too
                assert f"input:{g['code']}" in r.stdout
        else:
            assert len(r.stdout) <= 65_536  # GitHub's comment limit
    assert snapshot(folder) == before


def test_degraded_diagnostics_say_what_was_lost(tmp_path):
    """The truncation diagnostic says how much was lost; findings carry their counts."""
    case = next(c for c in CASES if c.name == "cut-at-25pct")
    d = traceview.analyze(case.write(tmp_path)).to_dict()
    g = corpus.diagnostic(d, "truncated")
    assert g["severity"] == "warning" and "byte" in g["message"]
    case = next(c for c in CASES if c.name == "kernels-without-launches")
    d = traceview.analyze(case.write(tmp_path / "k")).to_dict()
    f = corpus.finding(d, "device-work-without-launch")
    assert f["message"].startswith(f"{f['evidence']['count']} device work items have no launch")


def test_a_folder_of_ranks_with_damaged_files(tmp_path):
    """Several traces: each unusable one is one line naming it; the rest is analysed."""
    by_name = {c.name: c for c in CASES}
    good = tmp_path / "ranks"
    for i, name in enumerate(["gzip-plain-fixture", "empty", "cut-at-25pct", "binary-random"]):
        p = by_name[name].write(tmp_path / "src" / name)
        (good / f"rank{i}{''.join(p.suffixes)}").parent.mkdir(exist_ok=True)
        p.rename(good / f"rank{i}{''.join(p.suffixes)}")
    r = runner.invoke(app, ["explain", str(good), "--format", "json", "--jobs", "1"])
    no_traceback(r)
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["schema_version"] == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2 and "rank1" in lines[0] and "empty file" in lines[0]
    assert "rank3" in lines[1] and "not a JSON trace" in lines[1]
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "a.json").write_bytes(b"")
    (bad / "b.json").write_bytes(b"xx")
    r = runner.invoke(app, ["explain", str(bad), "--format", "json", "--jobs", "1"])
    no_traceback(r)
    assert r.exit_code == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 2


def test_diff_of_damaged_saved_reports(tmp_path):
    """``diff`` also reads saved explain JSON: a damaged one is one line, exit 2."""
    good = FIXTURES / corpus.RUNTIME
    saved = json.loads(explain(good, "json").stdout)
    text = json.dumps(saved).encode()

    def edit(f):
        doc = json.loads(text)
        f(doc)
        return json.dumps(doc).encode()

    for name, data in [
        ("cut", text[: len(text) // 2]),
        ("busy-as-text", edit(lambda d: d["device"].update(busy_ns="12"))),
        ("per-call-not-list", edit(lambda d: d["calls"].update(per_call={"a": 1}))),
        ("metric-as-float", edit(lambda d: d["calls"]["per_call"][0]["metrics"].update(api_ns=1.5))),
        ("no-device", edit(lambda d: d.pop("device"))),
        ("huge-category", edit(lambda d: d["calls"]["per_call"][0]["categories"].update(x=2**64))),
    ]:
        p = tmp_path / f"{name}.json"
        p.write_bytes(data)
        r = runner.invoke(app, ["diff", str(good), str(p), "--format", "json"])
        no_traceback(r)
        assert r.exit_code == 2 and r.stdout == "", (name, r.output)
        assert len(r.stderr.strip().splitlines()) == 1 and str(p) in r.stderr, name
    # odd capture metadata in a saved report is ignored, not a crash
    p = tmp_path / "odd-capture.json"
    p.write_bytes(edit(lambda d: d["trace"].update(capture={"shape": 5, "protocol": "x",
                                                            "device": [1]})))
    r = runner.invoke(app, ["diff", str(good), str(p), "--format", "json"])
    no_traceback(r)
    assert r.exit_code == 0, r.output


def test_malformed_capture_metadata_is_set_aside(tmp_path, tb):
    corpus._clean_small(tb)
    tb.metadata = {"traceview": {"op": "mul", "shape": 5, "protocol": "eager",
                                 "baseline": {"full_api_ns_p50": "fast"}, "device": None},
                   "deviceProperties": ["not a dict"]}
    p = tb.write(tmp_path / "t.json")
    for fmt in FORMATS:
        r = explain(p, fmt)
        no_traceback(r)
        assert r.exit_code == 0, r.output
    d = traceview.analyze(p).to_dict()
    g = corpus.diagnostic(d, "metadata-malformed")
    assert g["count"] == 5
    for name in ("traceview.shape", "traceview.protocol", "traceview.baseline.full_api_ns_p50",
                 "traceview.device", "deviceProperties"):
        assert name in g["message"]
    assert d["trace"]["capture"]["op"] == "mul"  # the well-typed fields are kept
    identities(d)


def test_errors_from_a_real_process_are_one_line(tmp_path):
    """Outside CliRunner: the installed entry point, stderr exactly one line, no traceback."""
    bad = tmp_path / "half.json"
    bad.write_bytes(b'{"traceEvents": [')
    for args in (["explain", str(bad), "--format", "json"], ["diff", str(bad), str(bad)]):
        p = subprocess.run([sys.executable, "-m", "traceview", *args], capture_output=True,
                           check=False, text=True, timeout=120)
        assert p.returncode == 2 and p.stdout == ""
        assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr and str(bad) in p.stderr


def test_file_larger_than_available_memory_fails_early(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACEVIEW_MEMORY_LIMIT_BYTES", "1000")
    trace = FIXTURES / corpus.RUNTIME
    for fmt in FORMATS:
        r = explain(trace, fmt)
        no_traceback(r)
        assert r.exit_code == 2 and r.stdout == ""
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "memory" in lines[0] and str(trace) in lines[0]


# -- outputs: never the input, always whole -------------------------------------------------

def test_input_files_are_never_written(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    trace = folder / "t.json.gz"
    trace.write_bytes((FIXTURES / corpus.RUNTIME).read_bytes())
    os.chmod(trace, 0o444)
    before = snapshot(folder)
    for fmt in FORMATS:
        assert explain(trace, fmt).exit_code == 0
    assert runner.invoke(app, ["diff", str(trace), str(trace)]).exit_code == 0
    assert explain(trace, "md", "--figure", str(tmp_path / "fig.svg")).exit_code == 0
    r = explain(trace, "md", "--figure", str(trace))  # asked to write over its own input
    assert r.exit_code == 2 and "is the input trace" in r.stderr and r.stdout == ""
    assert snapshot(folder) == before


def test_figure_is_written_atomically(tmp_path, monkeypatch):
    """An interrupted write leaves the previous figure whole and no temporary file."""
    from traceview import atomic

    fig = tmp_path / "call.svg"
    fig.write_text("<svg>old</svg>")
    real_replace = os.replace

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic.write_text_atomic(fig, "<svg>new</svg>")
    assert fig.read_text() == "<svg>old</svg>"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["call.svg"]
    monkeypatch.setattr(atomic.os, "replace", real_replace)
    r = explain(FIXTURES / corpus.RUNTIME, "md", "--figure", str(fig))
    assert r.exit_code == 0 and fig.read_text().startswith("<svg")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["call.svg"]


# -- properties over generated traces --------------------------------------------------------

_ids = st.one_of(st.integers(0, 3), st.integers(0, 3).map(str), st.sampled_from(
    [None, True, 1.0, 2**63, -(2**70), "stream 7", "", [1], {"a": 1}]))
_times = st.one_of(st.integers(0, 20_000).map(lambda ns: ns / 1000),
                   st.integers(0, 20_000).map(lambda ns: f"{ns / 1000:.3f}"),
                   st.sampled_from([None, -1.5, 1e300, 1e20, 3.7e9, "1e999999", "nan", "x", True,
                                    [1], 2**64]))
_event = st.fixed_dictionaries(
    {"ph": st.sampled_from(["X"] * 6 + ["B", "E", "i", "s", "f", "M", "C", "Z"]),
     "pid": _ids, "tid": _ids, "ts": _times},
    optional={"cat": st.sampled_from(sorted(corpus.LAUNCH_APIS | {
                  "cpu_op", "kernel", "cuda_runtime", "cuda_driver", "python_function",
                  "user_annotation", "gpu_memcpy", "Trace", "overhead", ""})),
              "name": st.one_of(st.sampled_from(["call_0", "call_1", "cudaLaunchKernel",
                                                 "cuLaunchKernelEx", "aten::mul", "[/]", "k"]),
                                st.text(max_size=8)),
              "dur": _times, "id": _ids,
              "args": st.one_of(st.fixed_dictionaries({}, optional={
                  "correlation": _ids, "device": _ids, "stream": _ids}), st.just([1]))})


@settings(max_examples=150, deadline=None, suppress_health_check=FIXTURE_OK)
@given(events=st.lists(_event, max_size=30), bare=st.booleans())
def test_no_exception_escapes_on_generated_events(tmp_path, events, bare):
    """Any list of events, however odd its fields, is analysed with the identities intact;
    only an empty list is refused (with its one-line reason), so a change that rejected
    every odd input fails here."""
    p = tmp_path / "g.json"
    p.write_text(json.dumps(events if bare else {"traceEvents": events}))
    if not events:
        with pytest.raises(TraceviewError, match="the trace holds no events"):
            traceview.analyze(p)
        return
    d = traceview.analyze(p).to_dict()
    identities(d)
    json.dumps(d)


# Well-formed events with the damage a real profiler produces: launches with and without
# kernels, kernels without launches, duplicates, missing/negative/absurd/zero durations,
# overlapping slices, several streams and devices.
_host = st.tuples(st.sampled_from(["cpu_op", "python_function", "cuda_runtime", "user_annotation"]),
                  st.sampled_from(["aten::mul", "f.py(1): f", "cudaDeviceSynchronize", "call_0",
                                   "call_1"]),
                  st.integers(0, 8_000), st.integers(0, 4_000), st.integers(1, 2))
_dev = st.tuples(st.integers(0, 9_000), st.integers(0, 3_000), st.integers(7, 8), st.integers(0, 1),
                 st.sampled_from(["launched", "launched", "orphan", "lost-kernel"]))
_bad = st.lists(st.sampled_from(["no-dur", "negative", "absurd", "far-ts"]), max_size=4)


def _damaged(hosts, devs, bad) -> TraceBuilder:
    tb = TraceBuilder()
    for cat, name, start, dur, tid in hosts:
        tb._x(cat, name, start, dur, tb.pid, tid, {})
    for start, dur, stream, device, kind in devs:
        if kind == "launched":
            tb.launched_kernel("k", max(start - 700, 0), 300, start, dur, stream=stream,
                               device=device)
        elif kind == "orphan":
            tb.kernel("k", start, dur, stream=stream, device=device)
        else:
            tb.launch(max(start - 700, 0), 300)
    for j, kind in enumerate(bad):
        ev = {"ph": "X", "cat": "kernel" if j % 2 else "cpu_op", "name": kind, "pid": 100,
              "tid": 1, "ts": 1.0, "dur": 1.0, "args": {"device": 0, "stream": 7}}
        if kind == "no-dur":
            del ev["dur"]
        elif kind == "negative":
            ev["dur"] = -3.0
        elif kind == "absurd":
            ev["dur"] = 4e9
        else:
            ev["ts"] = 1e20
        tb.raw(ev)
    return tb


def _analyze_events(tmp_path: Path, name: str, events: list, **kw) -> dict:
    tb = TraceBuilder()
    tb.events = events
    d = traceview.analyze(tb.write(tmp_path / name, **kw)).to_dict()
    d["trace"].pop("path")
    return d


def _stringify(ev: dict) -> dict:
    ev = dict(ev)
    for k in ("ts", "dur"):
        if isinstance(ev.get(k), float):
            ev[k] = repr(ev[k])
    return ev


@settings(max_examples=80, deadline=None, suppress_health_check=FIXTURE_OK)
@given(st.lists(_host, max_size=20), st.lists(_dev, max_size=10), _bad, st.integers(0, 2**16))
def test_damage_adds_up_and_order_duplication_and_types_do_not_matter(tmp_path, hosts, devs, bad,
                                                                       seed):
    events = _damaged(hosts, devs, bad).events
    a = _analyze_events(tmp_path, "a.json", events)
    identities(a)
    shuffled = list(events)
    random.Random(seed).shuffle(shuffled)
    b = _analyze_events(tmp_path, "b.json", shuffled)
    assert a == b
    doubled = [e for e in shuffled for _ in (0, 1)]
    c = _analyze_events(tmp_path, "c.json.gz", doubled, gz=True)
    assert {k: c[k] for k in ("window", "device", "host", "breakdown", "launches", "calls")} == \
        {k: a[k] for k in ("window", "device", "host", "breakdown", "launches", "calls")}
    def dups(d: dict) -> int:
        return sum(g["count"] for g in d["diagnostics"] if g["code"] == "duplicate")

    # every kept slice of `a` now comes twice, and each duplicate `a` already had, four times
    assert dups(c) == a["trace"]["slices"] + 2 * dups(a)
    if not events:
        return
    s = _analyze_events(tmp_path, "s.json", [_stringify(e) for e in events], bare=True)
    assert {k: s[k] for k in ("window", "device", "host", "breakdown", "launches")} == \
        {k: a[k] for k in ("window", "device", "host", "breakdown", "launches")}


def _small_trace() -> TraceBuilder:
    tb = TraceBuilder()
    corpus._clean_small(tb)
    tb.metadata = {"deviceProperties": [{"name": "X"}]}
    return tb


@settings(max_examples=120, deadline=None, suppress_health_check=FIXTURE_OK)
@given(st.floats(0, 1), st.booleans(), st.booleans())
def test_a_cut_anywhere_keeps_every_complete_event(tmp_path, frac, bare, gz):
    doc = json.loads(_small_trace().text())
    lay = corpus.layout(doc["traceEvents"] if bare else doc)
    cut = int(len(lay.text) * frac)
    assume(cut < len(lay.text))
    data = lay.text[:cut]
    if gz:
        z = gzip.compress(lay.text, mtime=0)
        data = z[: int(len(z) * frac)]
        import zlib
        cut = len(zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data))
    p = tmp_path / ("cut.json.gz" if gz else "cut.json")
    p.write_bytes(data)
    kept = [e for e, end in zip(lay.events, lay.ends, strict=True) if end <= cut]
    try:
        d = traceview.analyze(p).to_dict()
    except TraceviewError as exc:
        # nothing usable: only when no complete event (nor metadata) came before the cut
        assert not kept, exc
        return
    identities(d)
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps(kept if bare else {**lay.meta_before, "traceEvents": kept}))
    r = traceview.analyze(ref).to_dict() if kept else None
    assert d["trace"]["slices"] == (r["trace"]["slices"] if r else 0)
    if r is not None:
        for key in ("window", "device", "host", "breakdown", "launches", "calls"):
            assert d[key] == r[key], key
    if cut < len(lay.text) and lay.text[cut:].strip() not in (b"", b"]", b"}", b"]}"):
        assert any(g["code"] == "truncated" for g in d["diagnostics"])


@settings(max_examples=150, deadline=None, suppress_health_check=FIXTURE_OK)
@given(st.binary(max_size=300),
       st.sampled_from([b"", b"{", b"[", b'{"traceEvents": [', b"\x1f\x8b"]))
def test_arbitrary_bytes_are_an_error_or_an_analysis(tmp_path, data, prefix):
    p = tmp_path / "b.json"
    p.write_bytes(prefix + data)
    try:
        d = traceview.analyze(p).to_dict()
    except TraceviewError as exc:
        assert str(p) in str(exc) and "\n" not in str(exc)
        return
    identities(d)
