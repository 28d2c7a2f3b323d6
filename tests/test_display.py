"""The display defects users met on real traces, each pinned by a test.

Expected figures are worked out here from the synthetic events written in each test.
"""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from tracebuilder import TraceBuilder
from traceview.cli.app import app

runner = CliRunner()
STACK = FIXTURES / "triton_mul_1x4096_f32_stack.json.gz"
LONG_FN = "flag_gems/utils/pointwise_dynamic.py(871): _codegen_and_launch_pointwise_kernel"
LONG_KERNEL = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add"
               "<c10::BFloat16>, std::array<char*, 3> >(int, at::native::CUDAFunctor_add<"
               "c10::BFloat16>, std::array<char*, 3>)")


def explain(*args: str):
    return runner.invoke(app, ["explain", *map(str, args)])


def calls_trace(tb: TraceBuilder, n: int = 3, *, kernel: str = "k", fn: str = "f.py(1): g",
                device: int = 0, stream: int = 7) -> TraceBuilder:
    for i in range(n):
        t = i * 10_000
        tb.annotation(f"call_{i}", t, 5_000)
        tb.py(fn, t + 100, 4_000)
        tb.launched_kernel(kernel, t + 1_000, 1_000, t + 2_500, 1_000, device=device,
                           stream=stream)
    return tb


# 1. names --------------------------------------------------------------------------------

def test_long_names_are_whole_at_a_wide_terminal_and_kernels_lose_template_args(tmp_path):
    path = calls_trace(TraceBuilder(), kernel=LONG_KERNEL, fn=LONG_FN).write(tmp_path / "t.json")
    r = explain(path, "--width", "200")
    assert r.exit_code == 0, r.output
    assert LONG_FN in r.stdout  # not cut at ~40 characters
    assert "at::native::vectorized_elementwise_kernel<…>(…)" in r.stdout
    assert "CUDAFunctor_add" not in r.stdout
    j = json.loads(explain(path, "--format", "json").stdout)
    assert j["device"]["kernels"][0]["name"] == LONG_KERNEL  # the full name stays in JSON


def test_python_builtin_names_are_not_taken_for_cpp_signatures():
    from traceview.render.names import short_kernel

    assert short_kernel("<built-in function launch>") == "<built-in function launch>"
    assert short_kernel("void k<4, float>(int, float*)") == "k<…>(…)"


def test_long_names_wrap_at_80_columns_instead_of_being_cut(tmp_path):
    path = calls_trace(TraceBuilder(), fn=LONG_FN).write(tmp_path / "t.json")
    out = explain(path, "--width", "80").stdout
    assert max(len(ln) for ln in out.splitlines()) <= 80
    table = out.split("Hot host functions", 1)[1]
    first = "".join(ln.split("│")[1].strip() for ln in table.splitlines() if ln.startswith("│"))
    assert LONG_FN.replace(" ", "") in first.replace(" ", "")  # wrapped, every character kept


def test_category_column_is_never_cut():
    out = explain(STACK, "--width", "80").stdout
    assert "cache_k…" not in out and "launch_m…" not in out
    assert "cache_key" in out and "launch_metadata" in out


def test_ranks_table_tells_long_file_names_apart_at_80_columns(tmp_path):
    d = tmp_path / "ranks"
    d.mkdir()
    src = STACK.read_bytes()
    for i in range(2):
        (d / f"very_long_experiment_name_worker{i}_host_a.json.gz").write_bytes(src)
    r = explain(d, "--width", "80")
    assert r.exit_code == 0, r.output
    assert "worker0" in r.stdout and "worker1" in r.stdout
    assert max(len(ln) for ln in r.stdout.splitlines()) <= 80


def test_diff_table_shows_metric_names_whole():
    r = runner.invoke(app, ["diff", str(STACK), str(STACK), "--width", "80"])
    assert r.exit_code == 0, r.output
    # metric names in full words, never cut (they wrap inside their column)
    assert "launch latency" in r.stdout and "per call (p50)" in r.stdout
    assert "…" not in r.stdout


# 2. the waterfall ------------------------------------------------------------------------

@pytest.mark.parametrize("width", [60, 80, 120])
def test_waterfall_fits_the_width_and_legend_items_stay_whole(width):
    out = explain(STACK, "--width", str(width)).stdout
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("Typical call"))
    host, dev = lines[start + 1], lines[start + 2]
    assert host.startswith("host   ") and dev.startswith("device ")
    assert len(host) <= width and len(dev) <= width and len(host) == len(dev)
    legend = []
    for ln in lines[start + 4:]:
        if not ln.startswith("  "):
            break
        legend.append(ln)
    items = [it for ln in legend for it in re.split(r"\s{2,}", ln.strip())]
    # every item is "<glyph> <category> <duration>" or the device key, never split
    for it in items:
        assert re.fullmatch(r"\S \S+ [\d.]+ (ns|us|ms|s)|█ device busy [\d.]+ (ns|us|ms|s) "
                            r"\(a cell's height: its busy share\)", it), it


# 3. devices, streams and copies ----------------------------------------------------------

def test_two_devices_are_shown_apart_with_copies_apart_from_kernels(tmp_path):
    tb = TraceBuilder()
    for i in range(3):
        t = i * 10_000
        tb.annotation(f"call_{i}", t, 8_000)
        tb.launched_kernel("k0", t + 500, 500, t + 1_000, 2_000, device=0, stream=7)
        tb.launched_kernel("k1", t + 1_500, 500, t + 2_000, 3_000, device=1, stream=9)
        corr = tb.launch(t + 2_500, 500, api="cudaMemcpyAsync")
        tb.kernel("Memcpy DtoH", t + 6_000, 1_000, corr=corr, device=1, stream=9,
                  cat="gpu_memcpy")
    path = tb.write(tmp_path / "t.json")
    out = explain(path, "--width", "100").stdout
    # device 0: three 2 us kernels; device 1: three 3 us kernels and three 1 us copies
    assert "device 0: busy 6 us" in out and "3 kernels 6 us" in out
    assert "device 1: busy 12 us" in out and "3 kernels 9 us, 3 copies/sets 3 us" in out
    assert "3 copies" in out and "0 sets" not in out
    assert "device work (kernel+copy)" in out and "device kernel" not in out
    md = explain(path, "--format", "md").stdout
    assert "| device 0 | 6 us |" in md and "| device 1 | 12 us |" in md


def test_overlapping_streams_are_listed_per_stream():
    out = explain(FIXTURES / "two_streams_8192x8192_f16.json.gz", "--width", "100").stdout
    assert re.search(r"device 0 stream \d+: busy", out)


# 4. the SVG figure -----------------------------------------------------------------------

def _big_call(tmp_path, *, tail_ns: int = 0):
    """One call of 20,000 alternating host slices and 5,000 kernels (the shape of the
    with_stack trace whose figure was 69.5 MB), then a short second call."""
    tb = TraceBuilder()
    tb.annotation("call_0", 0, 2_000_000)
    tb.annotation("call_1", 3_000_000, 2_000_000)
    for base in (0, 3_000_000):
        for i in range(10_000):
            tb.op("aten::a" if i % 2 else "aten::b", base + i * 200, 100)
        for i in range(2_500):
            tb.launched_kernel("k", base + i * 800, 50, base + i * 800 + 100 + tail_ns, 20)
    return tb.write(tmp_path / "big.json")


def test_svg_of_a_big_call_is_small_and_its_legend_gives_the_calls_figures(tmp_path):
    path = _big_call(tmp_path)
    fig = tmp_path / "call.svg"
    r = explain(path, "--format", "md", "--figure", fig)
    assert r.exit_code == 0, r.output
    svg = fig.read_text()
    assert len(svg.encode()) < 200_000
    assert svg.count("<rect") < 2 * 900
    legend = re.findall(r'font-size="11" font-family="sans-serif">([a-z_]+) [\d.]+ (?:ns|us|ms)<',
                        svg)
    drawn = set(re.findall(r"<title>([a-z_]+) [\d.]+", svg)) - {"device"}
    # the legend is the call's own categories (render/call_picture.py), every drawn one in it
    assert legend and drawn <= set(legend)
    from traceview.render.call_picture import DEVICE_HEX

    # the device is busy 2,500 x 20 ns of the 2 ms call (2.5%): mostly pale, not solid
    opacities = [float(x) for x in re.findall(f'fill="{DEVICE_HEX}" fill-opacity="([\\d.]+)"',
                                              svg)]
    assert opacities and max(opacities) <= 0.5


def test_svg_axis_is_the_call_and_device_work_after_it_is_said_in_words(tmp_path):
    # kernels start 100 ns + 1.9 ms after their launch: the last ends ~1.9 ms after the call
    path = _big_call(tmp_path, tail_ns=1_900_000)
    fig = tmp_path / "call.svg"
    assert explain(path, "--figure", fig).exit_code == 0
    svg = fig.read_text()
    ticks = re.findall(r'text-anchor="middle" font-family="sans-serif">([^<]+)<', svg)
    assert ticks[-1] == "2 ms"  # the call's own 2 ms, not call + device tail
    assert "device work goes on" in svg and "after the call ends" in svg


def test_svg_title_fits_the_picture(tmp_path):
    path = calls_trace(TraceBuilder(), n=3).write(tmp_path / "t.json")
    from traceview.render import figure

    long = "call_" + "x" * 300
    text = figure._fit(f"Typical call #1 ({long})", figure.WIDTH - figure.LEFT - figure.RIGHT)
    assert len(text) * figure.CHAR_W <= figure.WIDTH - figure.LEFT - figure.RIGHT
    assert text.endswith("…")
    fig = tmp_path / "c.svg"
    assert explain(path, "--figure", fig).exit_code == 0


def test_png_figure(tmp_path):
    pytest.importorskip("cairosvg")
    fig = tmp_path / "call.png"
    r = explain(FIXTURES / "torch_mul_1x4096_f32.json.gz", "--figure", fig)
    assert r.exit_code == 0, r.output
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# 5. markdown ----------------------------------------------------------------------------

def test_markdown_wording_every_call_header_and_mermaid():
    md = explain(FIXTURES / "torch_mul_1x4096_f32.json.gz", "--format", "md").stdout
    assert "thread thread" not in md
    header = next(ln for ln in md.splitlines() if ln.startswith("| # |"))
    assert all(cell.strip() for cell in header.strip("|").split("|"))
    chart = md.split("```mermaid", 1)[1].split("```", 1)[0]
    assert "displayMode: compact" in chart and "axisFormat %-L" in chart
    assert "1 ms shown" not in chart and "axis in us" in chart


# 6. --figure with text and JSON ------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["text", "json"])
def test_figure_is_honoured_with_text_and_json(tmp_path, fmt):
    fig = tmp_path / "call.svg"
    r = explain(FIXTURES / "torch_mul_1x4096_f32.json.gz", "--format", fmt, "--figure", fig)
    assert r.exit_code == 0, r.output
    assert fig.read_text().startswith("<svg")
    assert f"figure written to {fig}" in r.stderr
    if fmt == "json":
        json.loads(r.stdout)  # stdout stays pure JSON


# 7. Ctrl-C in export ---------------------------------------------------------------------

def test_ctrl_c_while_writing_parquet_exits_130_and_leaves_no_folder(tmp_path, monkeypatch):
    import polars as pl

    out = tmp_path / "out"
    real = pl.DataFrame.write_parquet
    calls = []

    def interrupted(self, *a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, *a, **k)

    monkeypatch.setattr(pl.DataFrame, "write_parquet", interrupted)
    r = runner.invoke(app, ["export", str(STACK), "--parquet", str(out), "--jobs", "1"])
    assert r.exit_code == 130, r.output
    assert not out.exists()
    assert "internal error" not in r.output


def test_ctrl_c_during_reading_is_not_a_failed_trace(tmp_path, monkeypatch):
    """The interrupt surfacing as BufferError (memoryview exported) is still Ctrl-C."""
    from traceview.report import pipeline

    def load(path, progress=None):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise BufferError("memoryview has 1 exported buffer") from None

    monkeypatch.setattr(pipeline, "load", load)  # what export's reader calls
    out = tmp_path / "out"
    r = runner.invoke(app, ["export", str(STACK), "--parquet", str(out), "--jobs", "1"])
    assert r.exit_code == 130, r.output
    assert "BufferError" not in r.output and not out.exists()


# 8. other formats, folders ---------------------------------------------------------------

@pytest.mark.parametrize("name, data, says", [
    ("run.nsys-rep", b"\x00NSYS", "Nsight Systems report"),
    ("run.qdrep", b"\x00QD", "Nsight Systems report"),
    ("trace.bin", b"\x0a\x8c\x01\x12\x05hello" + b"\x00" * 40, "Perfetto protobuf trace"),
    ("trace.pftrace", b"\x0a\x03abc", "Perfetto protobuf trace"),
])
def test_foreign_formats_get_one_line_and_exit_2(tmp_path, name, data, says):
    p = tmp_path / name
    p.write_bytes(data)
    r = explain(p)
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "export_chrome_trace" in lines[0]


def test_directory_with_traces_in_subfolders_is_searched(tmp_path):
    for i in range(2):
        sub = tmp_path / "runs" / f"rank{i}"
        sub.mkdir(parents=True)
        (sub / "trace.json.gz").write_bytes(STACK.read_bytes())
    r = explain(tmp_path / "runs", "--format", "json")
    assert r.exit_code == 0, r.output
    assert len(json.loads(r.stdout)["ranks"]) == 2
    r = explain(tmp_path / "runs", "--no-recursive")
    assert r.exit_code == 2 and "no trace files in this directory" in r.stderr


# 9. wording ------------------------------------------------------------------------------

def test_one_call_is_one_call_and_step_patterns_read_as_written(tmp_path):
    tb = TraceBuilder()
    tb.annotation("ProfilerStep#7", 0, 5_000)
    tb.launched_kernel("k", 1_000, 500, 2_000, 500)
    out = explain(tb.write(tmp_path / "t.json"), "--width", "100").stdout
    # one step is no series: one call, in the singular
    assert "1 call: " in out and "1 calls" not in out and "1 kernel " in out
    tb.annotation("ProfilerStep#8", 10_000, 5_000)
    tb.launched_kernel("k", 11_000, 500, 12_000, 500)
    out = explain(tb.write(tmp_path / "t2.json"), "--width", "100").stdout
    assert "2 calls: ProfilerStep#N" in " ".join(out.split()) and "##" not in out


@pytest.mark.parametrize("call_ns, axis, unit", [
    (400_000, "%-L", "us"), (3_000_000, "%-S.%L", "ms"), (90_000_000, "%-S.%L", "s")])
def test_mermaid_axis_never_wraps(tmp_path, call_ns, axis, unit):
    tb = TraceBuilder()
    for i in range(3):
        t = i * 2 * call_ns
        tb.annotation(f"call_{i}", t, call_ns)
        tb.launched_kernel("k", t + 1_000, 1_000, t + 3_000, 1_000)
    chart = explain(tb.write(tmp_path / "t.json"), "--format", "md").stdout
    chart = chart.split("```mermaid", 1)[1]
    assert f"axisFormat {axis}\n" in chart and f"axis in {unit}\n" in chart


def test_json_starting_with_a_newline_is_not_taken_for_perfetto(tmp_path):
    """0x0a opens a Perfetto trace, and is also a newline before a JSON document."""
    text = (FIXTURES / "torch_mul_1x4096_f32.json.gz").read_bytes()
    import gzip

    p = tmp_path / "t.json"
    p.write_bytes(b"\n\n" + gzip.decompress(text))
    r = explain(p, "--format", "json")
    assert r.exit_code == 0, r.output


def test_svg_without_calls_draws_the_window_totals(tmp_path):
    tb = TraceBuilder()
    tb.op("aten::a", 0, 3_000)
    tb.op("aten::b", 3_000, 1_000)
    fig = tmp_path / "w.svg"
    r = explain(tb.write(tmp_path / "t.json"), "--figure", fig)
    assert r.exit_code == 0, r.output
    svg = fig.read_text()
    assert "stacked totals, not a timeline" in svg and "dispatch 4 us" in svg
