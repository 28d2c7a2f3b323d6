"""Output paths are checked before any work: a bad one is one line on stderr and exit 2,
and the trace is never read (a report that took minutes is not lost at the end)."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from traceview.cli.app import app

SMALL = FIXTURES / "triton_mul_1x4096_f32_stack.json.gz"


@pytest.fixture
def no_work(monkeypatch):
    """Any attempt to read a trace or run a capture fails the test."""
    def boom(*a, **k):
        raise AssertionError("work started before the output path was checked")

    import traceview.cli._progress as progress
    import traceview.multi.export as export

    monkeypatch.setattr(progress, "load_with_progress", boom)
    monkeypatch.setattr(export, "export_parquet", boom)
    return boom


def _one_line_exit_2(result, *needles):
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    err = result.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("traceview: error: "), err
    for n in needles:
        assert n in err[0], (n, err[0])


def _runner():
    try:
        return CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 keeps stderr apart already
        return CliRunner()


@pytest.mark.parametrize(("name", "needles"), [
    ("missing-dir/x.svg", ("--figure", "does not exist")),
    ("x.pdf", ("--figure", ".svg or .png", ".pdf")),
    ("x", ("--figure", "nothing")),
    (".", ("--figure",)),
])
def test_explain_figure_is_checked_first(tmp_path, no_work, name, needles):
    path = tmp_path / name if name != "." else tmp_path
    r = _runner().invoke(app, ["explain", str(SMALL), "--figure", str(path)])
    _one_line_exit_2(r, *needles)
    assert not path.exists() or path.is_dir()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_explain_figure_in_a_read_only_folder(tmp_path, no_work):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        r = _runner().invoke(app, ["explain", str(SMALL), "--figure", str(ro / "x.svg")])
        _one_line_exit_2(r, "not writable")
    finally:
        ro.chmod(0o700)


def test_explain_figure_png_and_svg_names_are_honoured(tmp_path):
    svg = tmp_path / "call.SVG"
    r = _runner().invoke(app, ["explain", str(SMALL), "--figure", str(svg), "--format", "json"])
    assert r.exit_code == 0, r.output
    assert svg.read_text().lstrip().startswith("<svg")


def test_write_figure_refuses_other_names(tmp_path):
    import traceview
    from traceview.errors import UsageError
    from traceview.render.registry import write_figure

    report = traceview.analyze(SMALL)
    with pytest.raises(UsageError, match=r"\.svg or \.png"):
        write_figure(report, tmp_path / "x.pdf")
    assert not (tmp_path / "x.pdf").exists()


def test_export_parquet_target_is_checked_first(tmp_path, no_work):
    f = tmp_path / "afile"
    f.write_text("x")
    r = _runner().invoke(app, ["export", str(SMALL), "--parquet", str(f)])
    _one_line_exit_2(r, "--parquet", "is a file")
    r = _runner().invoke(app, ["export", str(SMALL), "--parquet", str(f / "sub")])
    _one_line_exit_2(r, "--parquet", "is not a folder")


@pytest.mark.parametrize("command", [
    ["capture", "--op", "mul", "--device", "cpu", "--impl", "torch"],
    ["ab", "--no-split", "--op", "add", "--device", "cpu", "--impl", "torch", "--rounds", "2"],
])
def test_capture_and_ab_out_are_checked_before_any_run(tmp_path, command, monkeypatch):
    import traceview.ab.harness as ab_mod
    import traceview.opcapture.protocol as protocol

    def boom(*a, **k):
        raise AssertionError("ran before the output path was checked")

    monkeypatch.setattr(ab_mod, "run_capture_ab", boom)
    monkeypatch.setattr(protocol, "run_capture", boom, raising=False)
    f = tmp_path / "afile"
    f.write_text("x")
    r = _runner().invoke(app, [*command, "--out", str(f / "x.json.gz")])
    _one_line_exit_2(r, "--out", "is not a folder")


def test_the_launcher_flag_is_validated_and_reproduced():
    from traceview.errors import CaptureError
    from traceview.workload.config import CaptureConfig

    with pytest.raises(CaptureError, match="launcher"):
        CaptureConfig(op="add", launcher="fast").validate()
    assert "--launcher library" in CaptureConfig(op="add", launcher="library").reproducer
    assert "--launcher" not in CaptureConfig(op="add").reproducer
    assert "--launcher" not in CaptureConfig(op="add", impl="torch", launcher="library").reproducer
