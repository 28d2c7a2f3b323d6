"""One trace, one open: ``explain`` resolves, opens, sniffs and sizes a trace once
(``io.sources.Source``), ``--annotate`` streams the original text through with its
events added instead of parsing the file again, and every option is checked before the
trace is read."""

from __future__ import annotations

import builtins
import gzip
import io
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from traceview.cli.app import app
from traceview.io import sources

runner = CliRunner()
SMALL = FIXTURES / "torch_mul_1x4096_f32.json.gz"


class OpenCounter:
    """Counts the opens of one file through every door Python has: ``open`` (builtins
    and io, which pathlib and fsspec's local files use), ``os.open`` and ``gzip.open``."""

    def __init__(self, monkeypatch, target: Path) -> None:
        self.target = os.path.realpath(target)
        self.count = 0
        for mod, attr in ((builtins, "open"), (io, "open"), (os, "open"), (gzip, "open")):
            monkeypatch.setattr(mod, attr, self._wrap(getattr(mod, attr)))

    def _wrap(self, real):
        def counted(file, *args, **kwargs):
            if isinstance(file, (str, bytes, os.PathLike)) and \
                    os.path.realpath(os.fsdecode(file)) == self.target:
                self.count += 1
            return real(file, *args, **kwargs)

        return counted


@pytest.mark.parametrize("extra", [[], ["--format", "json"], ["--format", "md"],
                                   ["--window", "0ns:500us"]])
def test_explain_opens_the_trace_file_exactly_once(monkeypatch, extra):
    counter = OpenCounter(monkeypatch, SMALL)
    r = runner.invoke(app, ["explain", str(SMALL), *extra])
    assert r.exit_code == 0, r.output
    assert counter.count == 1


def test_explain_of_a_file_url_opens_it_once(monkeypatch):
    pytest.importorskip("fsspec")
    counter = OpenCounter(monkeypatch, SMALL)
    r = runner.invoke(app, ["explain", SMALL.as_uri(), "--format", "json"])
    assert r.exit_code == 0, r.output
    assert counter.count == 1


def test_annotate_reads_the_trace_through_the_same_open(monkeypatch, tmp_path):
    out = tmp_path / "a.json.gz"
    counter = OpenCounter(monkeypatch, SMALL)
    r = runner.invoke(app, ["explain", str(SMALL), "--annotate", str(out)])
    assert r.exit_code == 0, r.output
    assert counter.count == 1


def test_a_proton_profile_is_opened_once(monkeypatch):
    trace = FIXTURES / "proton" / "proton_nested.hatchet.gz"
    if not trace.exists():
        pytest.skip("no Proton fixture")
    counter = OpenCounter(monkeypatch, trace)
    r = runner.invoke(app, ["explain", str(trace)])
    assert r.exit_code == 0, r.output
    assert counter.count == 1


@pytest.mark.parametrize("flags, words", [
    (["--window", "(unclosed"], "--window '(unclosed' is neither a time range nor a regex"),
    (["--calls", "[bad"], "--calls '[bad': bad regular expression"),
    (["--rules", "/no/such/rules.json"], "cannot read rules file"),
])
def test_every_option_is_checked_before_the_trace_is_read(monkeypatch, flags, words):
    counter = OpenCounter(monkeypatch, SMALL)
    r = runner.invoke(app, ["explain", str(SMALL), *flags])
    assert r.exit_code == 2
    assert words in r.output
    assert counter.count == 0  # refused before the trace was opened


# ------------------------------------------------------------------ --annotate streams


def events(n: int) -> list[dict]:
    return [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 7, "tid": 7,
             "ts": 1000.5 + 10 * i, "dur": 5.25} for i in range(n)] + \
           [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 3,
             "ts": 1002.125, "dur": 1.0, "args": {"stream": 3, "device": 0}}]


LAYOUTS = {
    # events first, metadata after the array (the trailer is kept as written)
    "trailer": lambda ev: ('{"traceEvents": ' + json.dumps(ev, indent=1)
                           + ',\n "deviceProperties": [{"name": "X"}], "x": 1.50}').encode(),
    "bare-array": lambda ev: ("  \n" + json.dumps(ev)).encode(),
    "byte-order-mark": lambda ev: b"\xef\xbb\xbf" + json.dumps(
        {"schemaVersion": 1, "traceEvents": ev}).encode(),
    "numbers-as-written": lambda ev: json.dumps({"traceEvents": ev}).replace(
        '"ts": 1000.5,', '"ts": 1000.500,').encode(),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("gz", [False, True])
def test_annotate_keeps_every_byte_and_adds_its_events_inside_the_array(tmp_path, layout, gz):
    ev = events(6)
    text = LAYOUTS[layout](ev)
    trace = tmp_path / ("t.json.gz" if gz else "t.json")
    trace.write_bytes(gzip.compress(text) if gz else text)
    out = tmp_path / "out.json"
    r = runner.invoke(app, ["explain", str(trace), "--annotate", str(out)])
    assert r.exit_code == 0, r.output
    got = out.read_bytes()
    # the original text, byte for byte, around what was added before the array's ']'
    body = text[3:] if text.startswith(b"\xef\xbb\xbf") else text
    end = body.rindex(b"]") if not body.rstrip().endswith(b"}") or layout != "trailer" \
        else body.index(b'],\n "deviceProperties"')
    got_body = got[3:] if got.startswith(b"\xef\xbb\xbf") else got
    assert got_body[:end] == body[:end]
    assert got_body.endswith(body[end:])
    doc = json.loads(got_body)
    all_events = doc["traceEvents"] if isinstance(doc, dict) else doc
    assert all_events[:len(ev)] == ev
    added = all_events[len(ev):]
    assert added and all(e["cat"] == "traceview" for e in added)
    assert {e["pid"] for e in added if e["ph"] != "f"}.isdisjoint({7, 0})
    if layout == "trailer":
        assert doc["deviceProperties"] == [{"name": "X"}]
        assert b'"x": 1.50}' in got  # a number's text is never rewritten
    if layout == "numbers-as-written":
        assert b'"ts": 1000.500,' in got
    # the annotated trace explains to the same figures as the original
    a = runner.invoke(app, ["explain", str(trace), "--format", "json"])
    b = runner.invoke(app, ["explain", str(out), "--format", "json"])
    ja, jb = json.loads(a.stdout), json.loads(b.stdout)
    for doc_ in (ja, jb):
        doc_.pop("source", None)
        doc_.pop("trace", None)
    assert ja["window"] == jb["window"] and ja["device"] == jb["device"]


def test_annotate_after_a_metadata_event_keeps_it_first(tmp_path):
    """The added events follow the last of the trace's own, whatever its phase."""
    ev = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "p"}},
          *events(2)]
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": ev}))
    out = tmp_path / "o.json"
    r = runner.invoke(app, ["explain", str(trace), "--annotate", str(out)])
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_bytes())["traceEvents"][:len(ev)] == ev


def test_annotate_refuses_a_trace_cut_short_in_one_line(tmp_path):
    text = json.dumps({"traceEvents": events(8)}).encode()
    trace = tmp_path / "cut.json"
    trace.write_bytes(text[: len(text) - 40])
    out = tmp_path / "o.json"
    r = runner.invoke(app, ["explain", str(trace), "--annotate", str(out)])
    assert r.exit_code == 2
    assert "cannot annotate: the trace is cut short" in r.output
    assert "Traceback" not in r.output
    assert not out.exists()


# --------------------------------------------------------------- the source's pieces


class Stream:
    """A one-way stream (one HTTP GET) whose reopenings are counted."""

    opened = 0

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0
        Stream.opened += 1

    def read(self, n: int = -1) -> bytes:
        end = len(self.data) if n < 0 else self.pos + n
        b = self.data[self.pos:end]
        self.pos += len(b)
        return b

    def close(self) -> None:
        pass


def test_a_streamed_url_is_sniffed_and_read_with_one_get():
    data = bytes(range(256)) * 2000  # 512 000 bytes: past the kept head
    Stream.opened = 0
    f = sources._Forward(lambda: Stream(data))
    head = f.read(sources.HEAD_BYTES)
    f.seek(0)
    assert f.read(2) == data[:2]
    f.seek(0)
    got = b"".join(iter(lambda: f.read(10_000), b""))
    assert head == data[:sources.HEAD_BYTES] and got == data
    assert Stream.opened == 1
    f.seek(10)  # back past the kept head: a second GET, and still the right bytes
    assert f.read(5) == data[10:15] and Stream.opened == 2


def test_the_source_sizes_and_sniffs_from_its_one_open(tmp_path):
    text = json.dumps({"traceEvents": events(3)}).encode()
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(text))
    with sources.Source.open(p) as src:
        assert src.opens == 1
        assert src.size() == p.stat().st_size
        assert src.text_size() == len(text)
        assert src.head(20) == text[:20]
        assert src.binary().read() == p.read_bytes()


def test_the_idle_track_written_as_text_is_what_its_slices_encode_to():
    """The device idle track is written straight from its columns; the text must be what
    the events' dicts encode to, byte for byte (a training trace: idle per step, on
    several threads, launch latency between)."""
    import traceview
    from traceview.render.annotate import _ENCODE, IDLE, build_annotation, us
    from traceview.report.build import build_report
    from traceview.report.explanation import analyze_trace

    a = analyze_trace(traceview.load(FIXTURES / "train_llama_eager.json.gz"))
    track = build_annotation(a, build_report(a)).slices[IDLE][0]
    slices = list(track)
    assert len(slices) > 100 and len({s.name for s in slices}) > 3
    dicts = [{"ph": "X", "cat": "traceview", "name": s.name, "pid": 5, "tid": 9,
              "ts": us(s.start_ns), "dur": us(s.end_ns - s.start_ns), "args": s.args}
             for s in slices]
    assert _ENCODE.encode(list(track.events(5, 9))) == _ENCODE.encode(dicts)


def _explain_stdin(stdin, *args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "traceview", "explain", "-", *args],
                          stdin=stdin, capture_output=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(FIXTURES.parent)})


@pytest.mark.parametrize("how", ["redirect", "pipe"])
def test_standard_input_is_a_trace_source(how, tmp_path):
    """``explain -`` reads the trace from standard input, a file redirected or a pipe
    (read once: the sniff and the decode share its head), to the report the file gives."""
    import subprocess

    trace = FIXTURES / "train_llama_eager.json.gz"
    if how == "redirect":
        with trace.open("rb") as f:
            got = _explain_stdin(f, "--format", "json")
    else:
        cat = subprocess.Popen(["cat", str(trace)], stdout=subprocess.PIPE)
        got = _explain_stdin(cat.stdout, "--format", "json")
        cat.wait()
    assert got.returncode == 0, got.stderr
    want = runner.invoke(app, ["explain", str(trace), "--format", "json"])
    a, b = json.loads(got.stdout), json.loads(want.stdout)
    assert a["trace"]["path"] == "-"
    a["trace"].pop("path"), b["trace"].pop("path")
    assert a == b


def test_annotate_refuses_standard_input_before_reading_it():
    r = runner.invoke(app, ["explain", "-", "--annotate", "out.json"], input=b"[]")
    assert r.exit_code == 2
    assert "not standard input, which is read once" in r.output
