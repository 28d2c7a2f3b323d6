"""Damage told as it is: a gzip stream cut short is named as such, with how much was
read, no finding is drawn from the part that is missing, and the ranks view flags the
damaged rank. Figures are checked against zlib run here on the same bytes."""

from __future__ import annotations

import zlib

import pytest

import traceview
from conftest import FIXTURES
from traceview.render.registry import RenderOptions, renderer

WHOLE = FIXTURES / "flag_gems_add_16x4096_bf16.json.gz"


def _inflated(data: bytes) -> int:
    """Bytes of text that the first gzip member of ``data`` inflates to (a cut one too)."""
    d = zlib.decompressobj(31)
    return len(d.decompress(data) + d.flush())


def _cut(tmp_path, fraction: float, name: str = "cut.json.gz"):
    data = WHOLE.read_bytes()
    cut = data[: int(len(data) * fraction)]
    path = tmp_path / name
    path.write_bytes(cut)
    return path, cut


@pytest.mark.parametrize("fraction", [0.10, 0.45, 0.90])
def test_a_cut_gzip_stream_is_named_with_how_much_was_read(tmp_path, fraction):
    path, cut = _cut(tmp_path, fraction)
    r = traceview.analyze(path)
    codes = {g.code: g for g in r.diagnostics}
    assert "compressed-stream-cut" in codes
    assert codes["truncated"].message.startswith("the text read ends mid-JSON: kept every")
    msg = codes["compressed-stream-cut"].message
    assert f"the compressed stream ends after all {len(cut)} of the file's bytes" in msg
    assert f"{_inflated(cut)} bytes of text read" in msg


@pytest.mark.parametrize("fraction", [0.10, 0.45, 0.90])
def test_no_conclusion_from_the_missing_part(tmp_path, fraction):
    path, _ = _cut(tmp_path, fraction)
    ids = {f.id for f in traceview.analyze(path).findings}
    for absent in ("no-python-frames", "no-device-work", "no-host-events",
                   "reproducer-incomplete", "launch-without-device-work"):
        assert absent not in ids, absent
    text = renderer("text").render(traceview.analyze(path), RenderOptions(width=120))
    assert "with_stack off" not in text and "CPU-only" not in text
    assert "compressed stream ends after" in " ".join(text.split())


def test_a_cut_inside_the_trailer_keeps_all_text_and_still_says_so(tmp_path):
    data = WHOLE.read_bytes()
    path = tmp_path / "trailer.json.gz"
    path.write_bytes(data[:-4])  # the CRC kept, the length gone: every byte of text inflates
    r = traceview.analyze(path)
    (g,) = [g for g in r.diagnostics if g.code == "compressed-stream-cut"]
    assert f"{_inflated(data)} bytes of text read" in g.message
    assert "ends where an event ends" in g.message
    whole = traceview.analyze(WHOLE)
    assert r.window.dur_ns == whole.window.dur_ns and r.device.busy_ns == whole.device.busy_ns


def test_a_whole_file_and_a_cut_plain_file_are_not_called_a_cut_stream(tmp_path):
    assert not [g for g in traceview.analyze(WHOLE).diagnostics
                if g.code == "compressed-stream-cut"]
    d = zlib.decompressobj(31)
    text = d.decompress(WHOLE.read_bytes())
    plain = tmp_path / "plain.json"
    plain.write_bytes(text[: len(text) // 2])
    codes = {g.code for g in traceview.analyze(plain).diagnostics}
    assert "truncated" in codes and "compressed-stream-cut" not in codes


def test_the_ranks_view_flags_the_damaged_rank(tmp_path):
    import shutil

    from traceview.multi.ranks import analyze_ranks
    from traceview.options import Options

    folder = tmp_path / "job"
    folder.mkdir()
    shutil.copy(WHOLE, folder / "rank0.json.gz")
    _cut(folder, 0.45, "rank1.json.gz")
    report = analyze_ranks([folder], Options(), jobs=1)
    text = renderer("text", "ranks").render(report, RenderOptions(width=200))
    rows = {ln.split()[1]: ln for ln in text.splitlines() if ln.strip()[:1].isdigit()}
    assert "damaged" in rows["rank1"] and "damaged" not in rows["rank0"]
    assert "damaged: rank 1 (rank1.json.gz): compressed-stream-cut: the compressed stream" in text
    md = renderer("md", "ranks").render(report, RenderOptions())
    assert "damaged: rank 1 (rank1.json.gz)" in md
