"""capture --sweep: ``run_sweep`` returns a frozen ``SweepResult``; ``write_sweep`` is the
one place its ``sweep.json`` and ``sweep.md`` are written (no torch needed here: the
result is built by hand; tests/test_capture_cpu.py runs a real sweep)."""

from __future__ import annotations

import dataclasses
import io
import json

import pytest
from rich.console import Console

from traceview.opcapture import CaptureConfig
from traceview.render.measured.sweep import markdown, render_sweep
from traceview.sweep import write_sweep
from traceview.sweep.sweep import DEFINITIONS, SweepResult, SweepRow, _crossover


def _result(tmp_path, rows):
    cfg = CaptureConfig(op="relu", impl="torch", device="cpu")
    crossover, fixed = _crossover(list(rows))
    return SweepResult(cfg, tmp_path / "sw", (64, 256, 1024), tuple(rows), crossover, fixed,
                       {"name": "cpu"}, {"torch": "x"}, {"mode": "eager"})


ROWS = (
    SweepRow(64, kernel_ns=1_000, kernel_source="trace", copy_ns=0, device_ns=None,
             full_api_ns=9_000, amortized_submit_ns=5_000, host_gap_ns=8_000,
             trace_api_ns=12_000, trace="numel_64.json.gz", cold_wall_ns=50_000),
    SweepRow(256, error="out of memory"),
    SweepRow(1024, kernel_ns=9_000, kernel_source="trace", copy_ns=0, device_ns=None,
             full_api_ns=17_000, amortized_submit_ns=5_000, host_gap_ns=8_000,
             trace_api_ns=20_000, trace="numel_1024.json.gz", cold_wall_ns=50_000),
)


def test_result_is_frozen_data_and_the_writer_writes_it(tmp_path):
    r = _result(tmp_path, ROWS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.rows = ()  # type: ignore[misc]
    assert (r.crossover_numel, r.fixed_host_gap_ns) == (1024, 8_000)
    assert not (tmp_path / "sw").exists()  # building the result writes nothing
    files = write_sweep(r)
    assert [f.name for f in files] == ["sweep.json", "sweep.md"]
    assert sorted(p.name for p in (tmp_path / "sw").iterdir()) == ["sweep.json", "sweep.md"]
    saved = json.loads(files[0].read_text())
    assert saved == json.loads(json.dumps(r.summary()))
    assert saved["rows"][1] == {"numel": 256, "error": "out of memory"}
    assert saved["rows"][0]["kernel_ns"] == 1_000 and saved["definitions"] == DEFINITIONS
    assert files[1].read_text() == markdown(r.summary())
    buf = io.StringIO()
    render_sweep(Console(file=buf, width=120, color_system=None), r, files)
    out = buf.getvalue()
    assert "Crossover at numel 1024" in out and f"summary: {files[0]}" in out
    assert "of it copies" not in out and "of it copies" not in files[1].read_text()


def test_copies_get_their_own_column(tmp_path):
    rows = (dataclasses.replace(ROWS[0], copy_ns=400), *ROWS[1:])
    r = _result(tmp_path, rows)
    md = markdown(r.summary())
    assert "| numel | kernel p50 | of it copies | full API p50 |" in md
    assert "| 64 | 1 us | 400 ns | 9 us |" in md
    assert "| 256 | error: out of memory | | | | | |" in md
    buf = io.StringIO()
    render_sweep(Console(file=buf, width=120, color_system=None), r, [])
    assert "of it copies" in buf.getvalue() and "400 ns" in buf.getvalue()
