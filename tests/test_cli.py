"""The command line, driven through typer's CliRunner and, for start-up, a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from traceview.cli.app import app

runner = CliRunner()
SMALL = FIXTURES / "triton_mul_1x4096_f32_stack.json.gz"


def test_explain_text_at_80_columns():
    r = runner.invoke(app, ["explain", str(SMALL), "--width", "80"])
    assert r.exit_code == 0, r.output
    out = r.output
    for needle in ("Where the window went", "specialize", "cache_key", "launch_metadata",
                   "Per call", "Typical call", "mul_kernel", "Hot host functions"):
        assert needle in out, needle
    assert max(len(line) for line in out.splitlines()) <= 80


def test_explain_json_has_the_contract_keys():
    r = runner.invoke(app, ["explain", str(SMALL), "--format", "json"])
    assert r.exit_code == 0
    d = json.loads(r.stdout)
    assert d["schema_version"] == 3
    for path in ("window.start_ns", "window.end_ns", "window.dur_ns", "device.busy_ns",
                 "device.idle_ns", "device.kernel_count", "device.kernel_sum_ns",
                 "device.per_device", "host.categories", "host.functions", "breakdown",
                 "launches.count", "launches.linked", "launches.by_api", "calls.count",
                 "calls.source", "calls.stats.api_ns.p50", "calls.stats.kernel_ns.p99",
                 "calls.stats.launch_latency_ns.mean", "calls.stats.host_overhead_ns.max",
                 "calls.per_call.0.metrics.api_ns", "calls.kinds.0.stats.api_ns.p50",
                 "findings"):
        node = d
        for part in path.split("."):
            node = node[int(part)] if isinstance(node, list) else node[part]
    f = d["host"]["functions"]
    assert [x["self_ns"] for x in f] == sorted((x["self_ns"] for x in f), reverse=True)
    assert d["device"]["per_device"][0].keys() >= {"device", "busy_ns", "kernel_count"}


@pytest.mark.parametrize("content, fragment", [
    (b"", "empty file"),
    (b"{not json", "not valid JSON"),
    (b"\x00\x01\x02", "not a JSON trace"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, content, fragment):
    p = tmp_path / "bad.json"
    p.write_bytes(content)
    for fmt in ("text", "json"):
        r = runner.invoke(app, ["explain", str(p), "--format", fmt])
        assert r.exit_code == 2
        assert r.stdout == ""
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and str(p) in lines[0] and fragment in lines[0]


def test_missing_file(tmp_path):
    r = runner.invoke(app, ["explain", str(tmp_path / "nope.json")])
    assert r.exit_code == 2 and "no such file" in r.stderr


def test_bad_window_option():
    r = runner.invoke(app, ["explain", str(SMALL), "--window", "no_such_range"])
    assert r.exit_code == 2 and "no user range" in r.stderr


def test_help_and_explain_do_not_import_torch_or_triton():
    code = ("import sys\n"
            "from traceview.cli.app import app\n"
            "from typer.testing import CliRunner\n"
            f"r = CliRunner().invoke(app, ['explain', {str(SMALL)!r}, '--format', 'json'])\n"
            "assert r.exit_code == 0, r.output\n"
            "bad = [m for m in ('torch', 'triton') if m in sys.modules]\n"
            "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("fmt", ["text", "json", "md"])
def test_a_closed_pipe_is_exit_0_and_silent(fmt):
    """`traceview explain T | head -1`: the reader has what it wanted; no error, rc 0."""
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "traceview", "explain",
           str(FIXTURES / "triton_mul_1x4096_f32_stack.json.gz"), "--format", fmt]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # the reader is gone before the report is written (a `head` that
    err = p.stderr.read()  # already has its lines): every write meets a closed pipe
    assert p.wait(timeout=120) == 0 and err == b""


def test_help_shows_the_ray_extra_in_full():
    """rich markup would eat '[ray]' from the install hint."""
    for cmd in ("explain", "export"):
        res = runner.invoke(app, [cmd, "--help"], env={"COLUMNS": "250"})
        assert res.exit_code == 0
        assert "'traceview[ray]'" in res.output, cmd  # wrapping may split 'pip install'


@pytest.mark.parametrize("argv", [
    ["explain", "T.json"], ["explain", "T.json", "--format", "json"],
    ["explain", "T.json", "-f", "md"], ["explain", "T.json", "--format=text"],
])
def test_the_direct_explain_gets_what_typer_would_pass(argv):
    """The console entry point calls ``explain_body.explain`` itself for these command
    lines (``explain_body.plain_arguments``): with every other option at that signature's
    default, exactly the arguments typer's parser gives the command; and the typer
    command's own defaults are the same ones."""
    import inspect

    import typer.main

    from traceview.cli import explain_body, explain_cmd

    def defaults(f) -> dict:
        return {n: p.default for n, p in inspect.signature(f).parameters.items()
                if p.default is not inspect.Parameter.empty}

    given = explain_body.plain_arguments(argv)
    assert given is not None
    command = typer.main.get_command(app).commands["explain"]
    with command.make_context("explain", argv[1:]) as ctx:
        parsed = dict(ctx.params)
    assert {**defaults(explain_body.explain), **given} == parsed
    assert defaults(explain_body.explain) == defaults(explain_cmd.explain)
    assert list(inspect.signature(explain_body.explain).parameters) == \
        list(inspect.signature(explain_cmd.explain).parameters)


@pytest.mark.parametrize("argv", [
    ["explain"], ["explain", "--help"], ["explain", "-f", "json", "T.json"],
    ["explain", "T.json", "--top", "5"], ["explain", "T.json", "--format", "xml"],
    ["explain", "T.json", "--format"], ["explain", "T.json", "-f", "json", "-f", "md"],
    ["explain", "a.json", "b.json"], ["explain", "-"], ["diff", "a.json", "b.json"], [],
])
def test_every_other_command_line_goes_through_typer(argv):
    from traceview.cli import explain_body

    assert explain_body.plain_arguments(argv) is None


@pytest.mark.parametrize("fmt", ["text", "json", "md"])
def test_the_direct_explain_prints_what_typer_prints(fmt):
    """The same report, byte for byte, through both (``--top 10``, the default, sends
    the second command line through typer); and its errors the same one line, exit 2."""
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "traceview", "explain", *args],
                              capture_output=True, text=True, check=False,
                              env={**os.environ, "COLUMNS": "100"})

    direct = run(str(SMALL), "--format", fmt)
    parsed = run("--top", "10", str(SMALL), "--format", fmt)
    assert direct.returncode == parsed.returncode == 0
    assert direct.stdout == parsed.stdout and direct.stdout
    missing = run("/nonexistent/trace.json", "--format", fmt)
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr == run("--top", "10", "/nonexistent/trace.json").stderr
