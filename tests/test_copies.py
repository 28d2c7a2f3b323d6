"""Per call, device work is kernels and the memcpy/memset they launched: ``kernel_ns`` is
both (its meaning since schema 1), ``kernel_only_ns`` and ``copy_ns`` the two apart, and
every output shows them apart where a call launched copies.

The figures are checked against counts made here from the raw events (the standard
library, its own ns parsing and interval merge), sharing no code with traceview.
"""

from __future__ import annotations

import gzip
import io
import json
from decimal import Decimal

import pytest
from rich.console import Console

import traceview
from conftest import FIXTURES
from traceview.render.console import render_console
from traceview.render.markdown import render_markdown

COPY_FIXTURES = ["inductor_mul_1x4096_f32.cold.json.gz", "shape_compile_cold.json.gz",
                 "shape_model_schedule_cold.json.gz"]
COPY_CATS = ("gpu_memcpy", "gpu_memset")


def _ns(x) -> int:
    return int(Decimal(str(x)) * 1000)


def _union(intervals) -> int:
    total, end = 0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def independent_per_call(events, thread, calls):
    """For each call ``(start_ns, end_ns)``: (all, kernels, copies) union of the device work
    whose launch (a runtime/driver event on ``thread`` with a correlation id) starts in it."""
    pid, tid = thread
    work = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", *COPY_CATS):
            corr = (e.get("args") or {}).get("correlation")
            if corr is not None:
                work.setdefault(corr, []).append(
                    (e["cat"], _ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])))
    launches = [(_ns(e["ts"]), e["args"]["correlation"]) for e in events
                if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
                and e.get("pid") == pid and e.get("tid") == tid
                and (e.get("args") or {}).get("correlation") in work]
    out = []
    for lo, hi in calls:
        mine = [w for t, corr in launches if lo <= t < hi for w in work[corr]]
        out.append((_union([(s, e) for _, s, e in mine]) if mine else None,
                    _union([(s, e) for c, s, e in mine if c == "kernel"]) if mine else None,
                    _union([(s, e) for c, s, e in mine if c in COPY_CATS]) if mine else None))
    return out


@pytest.mark.parametrize("name", COPY_FIXTURES)
def test_fixture_calls_split_against_raw_events(name, fixture_reports):
    d = fixture_reports[name].to_dict()
    doc = json.loads(gzip.decompress((FIXTURES / name).read_bytes()))
    th = d["host"]["thread"]
    calls = d["calls"]["per_call"]
    ref = independent_per_call(doc["traceEvents"], (th["pid"], th["tid"]),
                               [(c["start_ns"], c["end_ns"]) for c in calls])
    got = [(c["metrics"]["kernel_ns"], c["metrics"]["kernel_only_ns"], c["metrics"]["copy_ns"])
           for c in calls]
    assert got == ref
    assert any(c[2] for c in ref), "the fixture's calls launch copies"
    for whole, kern, copy in got:
        if whole is not None:  # the parts cover the whole, and each is inside it
            assert max(kern, copy) <= whole <= kern + copy


def _copy_trace(tb, calls=5):
    """Each call: a 2 us kernel on stream 7, a 1.5 us memcpy on stream 9 starting 1 us
    into the kernel (so 0.5 us of it runs alone) and a 300 ns memset after both, all
    launched inside a ``call_N`` range of 10 us. Returns the expected per-call figures."""
    for i in range(calls):
        s = i * 20_000
        tb.annotation(f"call_{i}", s, 10_000)
        tb.launched_kernel("k", s + 100, 300, s + 1_000, 2_000)
        corr = tb.launch(s + 500, 300, api="cudaMemcpyAsync")
        tb.kernel("Memcpy HtoD (Pinned -> Device)", s + 2_000, 1_500, corr=corr, stream=9,
                  cat="gpu_memcpy")
        corr = tb.launch(s + 900, 200, api="cudaMemsetAsync")
        tb.kernel("Memset (Device)", s + 4_000, 300, corr=corr, stream=7, cat="gpu_memset")
    # the union [1000, 3500) + [4000, 4300); kernels alone 2000; copies [2000,3500)+[4000,4300)
    return {"kernel_ns": 2_800, "kernel_only_ns": 2_000, "copy_ns": 1_800}


def test_synthetic_calls_split_and_stats(tb, tmp_path):
    want = _copy_trace(tb)
    path = tb.write(tmp_path / "t.json")
    r = traceview.analyze(path)
    d = r.to_dict()
    c = d["calls"]
    assert (c["source"], c["count"], c["warm_count"]) == ("annotations", 5, 5)
    events = json.loads(path.read_text())["traceEvents"]
    ref = independent_per_call(events, (100, 100), [(x["start_ns"], x["end_ns"])
                                                      for x in c["per_call"]])
    assert ref == [tuple(want.values())] * 5  # the arithmetic above, from the raw events
    for row in c["per_call"]:
        assert {k: row["metrics"][k] for k in want} == want
    for k, v in want.items():
        assert c["stats"][k]["p50"] == v and c["stats"][k]["n"] == 5
    assert r.calls.has_copies
    kind = c["kinds"][0]
    assert kind["stats"]["kernel_only_ns"]["p50"] == 2_000 and kind["stats"]["copy_ns"]["p50"] == 1_800


def _text(r, width=120):
    buf = io.StringIO()
    render_console(r, Console(file=buf, width=width, highlight=False, color_system=None))
    return buf.getvalue()


def test_outputs_show_kernels_and_copies_apart(tb, tmp_path):
    _copy_trace(tb)
    r = traceview.analyze(tb.write(tmp_path / "t.json"))
    text = _text(r)
    rows = {line.split("│")[1].strip(): line for line in text.splitlines()
            if line.startswith("│") and line.count("│") > 3}
    assert "2.8 us" in rows["device work (kernel+copy)"]
    assert "2 us" in rows["kernels alone"] and "1.8 us" in rows["memcpy/memset alone"]
    assert "device work 2.8 us (kernels 2 us, memcpy/memset 1.8 us)" in text  # waterfall title
    v = r.verdict
    assert v is not None and "device work 2.8 us (kernels 2 us, memcpy/memset 1.8 us)" in v.message
    md = render_markdown(r, figure=None)
    assert "| kernels alone | 2 us |" in md and "| memcpy/memset alone | 1.8 us |" in md
    assert "of which kernels p50 2 us and memcpy/memset p50 1.8 us" in md
    assert "| device work | kernels | memcpy/memset |" in md
    assert "| 0 | `call_0` | warm | 10 us | 2.8 us | 2 us | 1.8 us |" in md


def test_without_copies_nothing_changes(tb, tmp_path):
    for i in range(4):
        s = i * 20_000
        tb.annotation(f"call_{i}", s, 10_000)
        tb.launched_kernel("k", s + 100, 300, s + 1_000, 2_000)
    r = traceview.analyze(tb.write(tmp_path / "t.json"))
    row = r.to_dict()["calls"]["per_call"][0]["metrics"]
    assert (row["kernel_ns"], row["kernel_only_ns"], row["copy_ns"]) == (2_000, 2_000, 0)
    assert not r.calls.has_copies
    text, md = _text(r), render_markdown(r, figure=None)
    assert "alone" not in text and "alone" not in md and "memcpy/memset" not in md
    assert "kernel 2 us" in r.verdict.message


def test_saved_report_from_before_the_split_still_renders(tb, tmp_path):
    """A report saved before ``kernel_only_ns``/``copy_ns`` existed reads back and renders."""
    from traceview.report.schema import from_json

    _copy_trace(tb)
    d = traceview.analyze(tb.write(tmp_path / "t.json")).to_dict()
    for k in ("kernel_only_ns", "copy_ns"):
        d["calls"]["stats"].pop(k)
        for x in d["calls"]["per_call"]:
            x["metrics"].pop(k)
        for x in d["calls"]["kinds"]:
            x["stats"].pop(k)
    r = from_json(json.dumps(d))
    assert not r.calls.has_copies
    assert "device work (kernel+copy)" in _text(r)


def test_ranks_table_kernels_alone_and_a_copy_column(tmp_path):
    from typer.testing import CliRunner

    from tracebuilder import TraceBuilder
    from traceview.cli.app import app

    d = tmp_path / "ranks"
    d.mkdir()
    for i in range(3):
        tb = TraceBuilder()
        _copy_trace(tb)
        tb.write(d / f"rank{i}.json")
    r = CliRunner().invoke(app, ["explain", str(d), "--width", "80", "-j", "1"])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    head = next(i for i, line in enumerate(lines) if line.lstrip().startswith("rank"))
    assert "copy" in lines[head - 1] and "kernel" in lines[head - 1]  # over "p50"
    row = next(line for line in lines[head:] if line.lstrip().startswith("0 "))
    # kernels alone (2 us) and the copies (1.8 us), not the 2.8 us of both
    assert "2 us" in row and "1.8 us" in row and "2.8 us" not in row
    md = CliRunner().invoke(app, ["explain", str(d), "--format", "md", "-j", "1"]).stdout
    assert "| API p50 | kernel p50 | copy p50 | overhead p50 | verdict |" in md
