"""What a new user meets first: the help, a misused option, markdown pasted on GitHub, a
report read at 80 columns.

Each test here failed before its fix: ``<bool>`` after every flag in the help, an empty
``[default: ...]`` left as "each ." in ``ab --help``, bad option values taken silently
(``--top -1`` hid the kernel table), a usage mistake answered with a 3-6 line box,
``__call__`` rendered bold by GitHub, the ranks table cutting its file names to "…0".
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from traceview.cli.app import app

runner = CliRunner()
ROOT = Path(__file__).parent.parent
SMALL = FIXTURES / "triton_mul_1x4096_f32_stack.json.gz"
COMMANDS = ("explain", "diff", "capture", "export", "serve", "ab")


def _help(*args: str) -> str:
    r = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    return r.stdout


@pytest.mark.parametrize("command", ("", *COMMANDS))
def test_help_shows_no_value_for_a_flag_and_no_empty_default(command):
    text = _help(*([command] if command else []))
    assert "<bool>" not in text
    # a default that rich read as markup and dropped leaves a space before the stop
    flat = " ".join(line.strip("│ ") for line in text.splitlines())
    assert not re.search(r"\w \.(\s|$)", flat), re.search(r".{40}\w \.(\s|$)", flat)
    assert "[default: ]" not in text


def test_the_command_list_keeps_each_summary_one_sentence():
    """``traceview --help`` broke ``diff``'s, ``capture``'s and ``serve``'s summaries where
    their docstrings' lines end ("(capture metadata or --ab), then the" / "profiled...")."""
    import typer

    group = typer.main.get_command(app)
    for name in COMMANDS:
        summary = group.commands[name].short_help
        assert summary and "\n" not in summary, name
    text = _help()
    assert not re.search(r"│\s+[^│]*\bthe\s{3,}│", text), text


def test_ab_help_says_the_rounds_and_blocks_defaults():
    flat = " ".join(line.strip("│ ") for line in _help("ab").splitlines())
    flat = re.sub(r"\s+", " ", flat)
    assert "each (default: 10; with --until, at most 60)" in flat
    assert ("each --baseline-n calls (default: 200 with --same-process, 10 with "
            "--reference)") in flat
    assert "blocks of about 150 us" in flat  # --baseline-n's default with --same-process


def _forms_in(text: str) -> set[str]:
    """The kinds of ``--thread`` value a sentence names."""
    out = {"PID/TID"} if "PID/TID" in text else set()
    rest = text.replace("PID/TID", "")
    out |= {kind for kind in ("TID", "name", "main") if re.search(rf"\b{kind}\b", rest)}
    return out


def test_the_thread_forms_the_docs_promise_are_in_the_help_and_work():
    """README and docs/training.md say ``--thread`` takes a TID, a name, ``main`` or
    PID/TID; the help said PID/TID only. Each form is resolved on a real training trace."""
    from traceview.analyses.threads import resolve_thread
    from traceview.report.pipeline import load

    readme = (ROOT / "README.md").read_text()
    claim = re.search(r"`--thread` takes ([^)]*)\)", readme).group(1)
    training = (ROOT / "docs" / "training.md").read_text()
    claim2 = re.search(r"`--thread` \(([^)]*)\)", training).group(1)
    flat = re.sub(r"[\s│]+", " ", _help("explain"))
    helped = re.search(r"--thread (.*?)\(default", flat).group(1)
    promised = _forms_in(claim) | _forms_in(claim2)
    assert promised == {"TID", "name", "main", "PID/TID"}
    assert _forms_in(helped) == promised, helped

    trace = load(FIXTURES / "train_llama_eager.json.gz")
    autograd = resolve_thread(trace, "pt_autograd_0")
    assert resolve_thread(trace, str(autograd.tid)) is autograd
    assert resolve_thread(trace, f"{autograd.pid}/{autograd.tid}") is autograd
    main = resolve_thread(trace, "main")
    assert main is not autograd and resolve_thread(trace, "main thread") is main


# ---- every misuse: one line on stderr, exit 2, nothing on stdout -----------------------

def _rules(tmp_path: Path, doc: object) -> str:
    p = tmp_path / "rules.json"
    p.write_text(json.dumps(doc))
    return str(p)


MISUSES = {
    "unknown option": (["explain", str(SMALL), "--tpo", "3"], "No such option: --tpo"),
    "unknown command": (["explian", str(SMALL)], "No such command 'explian'"),
    "missing argument": (["explain"], "Missing argument 'TRACE'"),
    "not a number": (["explain", str(SMALL), "--top", "many"], "'--top'"),
    "negative --top": (["explain", str(SMALL), "--top", "-1"], "'--top'"),
    "zero --top": (["explain", str(SMALL), "--top", "0"], "'--top'"),
    "narrow --width": (["explain", str(SMALL), "--width", "10"], "'--width'"),
    "diff --width": (["diff", str(SMALL), str(SMALL), "--width", "5"], "'--width'"),
    "ab --width": (["ab", "--op", "add", "--width", "0"], "'--width'"),
    "ranks --calls-depth": (["explain", str(SMALL), str(SMALL), "--calls-depth", "0"],
                            "'--calls-depth'"),
    "ranks --jobs": (["explain", str(SMALL), str(SMALL), "--jobs", "0"], "'--jobs'"),
    "bad --format": (["explain", str(SMALL), "--format", "html"], "'--format'"),
    "unknown global option": (["--verbose"], "No such option: --verbose"),
}


@pytest.mark.parametrize("case", list(MISUSES))
def test_a_misuse_is_one_line(case):
    args, fragment = MISUSES[case]
    r = runner.invoke(app, args)
    assert r.exit_code == 2, (case, r.output)
    assert r.stdout == "", (case, r.stdout)
    lines = r.stderr.splitlines()
    assert len(lines) == 1, (case, r.stderr)
    assert lines[0].startswith("traceview: error:") and fragment in lines[0], lines[0]
    assert "--help" in lines[0]  # where to look next


@pytest.mark.parametrize("doc", [{}, {"rules": []}, {"rules": [], "categories": {"x": "y"}},
                                 {"about": "my rules", "rules": [], "phases": []}])
def test_a_rules_file_without_rules_is_refused(tmp_path, doc):
    r = runner.invoke(app, ["explain", str(SMALL), "--rules", _rules(tmp_path, doc)])
    assert r.exit_code == 2 and r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and "holds no rules" in r.stderr


def test_a_rules_file_with_one_rule_is_taken(tmp_path):
    doc = {"categories": {"mine": "my kernels"}, "rules": [{"name": "mul", "category": "mine"}]}
    r = runner.invoke(app, ["explain", str(SMALL), "--rules", _rules(tmp_path, doc),
                            "--format", "json"])
    assert r.exit_code == 0, r.output


def test_top_one_keeps_the_kernel_table():
    r = runner.invoke(app, ["explain", str(SMALL), "--top", "1", "--width", "120"])
    assert r.exit_code == 0 and "mul_kernel" in r.stdout


def test_traceview_alone_prints_its_help():
    """Asking the bare command what it does is no misuse: the help, exit 0."""
    r = runner.invoke(app, [])
    assert r.exit_code == 0, r.output
    assert "Usage:" in r.stdout and "explain" in r.stdout and r.stderr == ""


# ---- markdown: every name in a code span ----------------------------------------------

def bare_names(markdown: str) -> list[str]:
    """Words GitHub would render as emphasis: an underscore run opening or closing a word
    outside code spans and code blocks (``__call__`` shows as a bold "call")."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.findall(r"(?<![\w\\])__?\w+|\w+__?(?![\w])", text)


def test_prose_puts_names_in_code_spans():
    from traceview.render.markdown import prose

    got = prose("damaged: rank 3 (t_rank3.json): frame torch/cuda/__init__.py(599): "
                "__init__ outlived its caller; 1/2 host-bound <lambda> | x")
    assert got == ("damaged: rank 3 (`t_rank3.json`): frame `torch/cuda/__init__.py(599)`: "
                   "`__init__` outlived its caller; 1/2 host-bound &lt;lambda&gt; \\| x")
    assert bare_names(got) == []
    assert bare_names("a __call__ b") == ["__call__"]


@pytest.mark.parametrize("golden", sorted(p.name for p in (ROOT / "tests" / "golden").glob("*.md")))
def test_no_golden_markdown_has_a_bare_dunder(golden):
    text = (ROOT / "tests" / "golden" / golden).read_text()
    assert [w for w in bare_names(text) if "__" in w] == []


def test_the_split_table_in_markdown_keeps_dunders(fixture_reports):
    from traceview.render.registry import RenderOptions, renderer

    md = renderer("md").render(fixture_reports["flaggems_sigmoid_65536_f32_split.json.gz"],
                               RenderOptions())
    assert "| `flag_gems/utils/pointwise_dynamic.py(1298): __call__` |" in md
    assert "| `torch/cuda/__init__.py(1152): synchronize` |" in md


# ---- 80 columns: identifiers never cut -------------------------------------------------

NAME = "trainer_job_2026_12_07_worker_rank{}.pt.trace.json"


@pytest.fixture
def damaged_ranks(tmp_path):
    raw = gzip.decompress((FIXTURES / "torch_mul_1x4096_f32.json.gz").read_bytes())
    for i in range(3):
        (tmp_path / (NAME.format(i) + ".gz")).write_bytes(gzip.compress(raw))
    (tmp_path / NAME.format(3)).write_bytes(raw[: len(raw) * 2 // 3])
    return tmp_path


@pytest.mark.parametrize("width", [80, 100, 120])
def test_the_ranks_table_keeps_each_file_tellable_and_the_verdict_whole(damaged_ranks, width):
    r = runner.invoke(app, ["explain", str(damaged_ranks), "--width", str(width),
                            "--jobs", "1"])
    assert r.exit_code == 0, r.output
    table = r.stdout.split("\n\n")[0].splitlines()
    rows = [ln for ln in table if re.match(r"\s+\d+\s", ln)]
    assert len(rows) == 4
    for i, row in enumerate(rows):
        cell = row.split()[1]
        # the file's own start and the part that tells it from the others, or all of it
        assert cell.startswith("trainer") and cell.endswith(f"rank{i}"), row
    text = " ".join(table)
    assert len(re.findall(r"host-bound", text)) == 4 and "damaged;" in text
    assert all(len(ln) <= width for ln in r.stdout.splitlines())


def test_distinct_names_cuts_the_middle_never_the_telling_end():
    from traceview.render.ranks_report import distinct_names

    names = ["trace_rank_0", "trace_rank_1"]
    assert distinct_names(names) == names
    assert distinct_names(names, 12) == names
    assert distinct_names(["job_a_worker_0", "job_a_worker_1"], 8) == ["job_a_…0", "job_a_…1"]
    # the telling part alone wider than the column: whole, for the table to wrap
    assert distinct_names(["x_" + "a" * 30, "x_" + "b" * 30], 10) == ["x_" + "a" * 30,
                                                                    "x_" + "b" * 30]


def _ab_doc() -> dict:
    """``traceview ab --op add --device cpu --impl torch --same-process --rounds 6``."""
    return json.loads((ROOT / "tests" / "data" / "ab_add_cpu_same_process.json").read_text())


@pytest.mark.parametrize("width", [80, 120])
def test_ab_same_process_says_its_per_round_column_is_the_paired_estimate(width):
    """A 1.28 us, B 1.28 us, and the last column +5 ns: it is the round's paired estimate,
    not the B column minus the A column, and the table says so."""
    from traceview.render.registry import RenderOptions, renderer

    doc = _ab_doc()
    c = doc["comparisons"]["full_api_ns_p50"]
    assert any(d != b - a for a, b, d in zip(c["a_ns"], c["b_ns"], c["diff_ns"], strict=True))
    text = " ".join(renderer("text", "ab").render(doc, RenderOptions(width=width)).split())
    assert "paired B - A" in text and "not the B column minus the A column" in text
    md = renderer("md", "ab").render(doc, RenderOptions())
    assert "| round | order | A | B | paired B - A |" in md

    plain = json.loads((ROOT / "tests" / "data" / "ab_add_cpu.json").read_text())
    text = renderer("text", "ab").render(plain, RenderOptions(width=width))
    assert "paired B - A" not in text and "B - A" in text


@pytest.mark.parametrize("width", [80, 120])
def test_ab_figures_are_never_cut(width):
    """A figure with its unit keeps its unit at 80 columns ("-60.3 us", never "-60.3 …")."""
    from traceview.render.registry import RenderOptions, renderer

    doc = _ab_doc()
    for c in doc["comparisons"].values():  # wider figures than the fixture's
        c["estimate_ns"], c["min_detectable_ns"] = -60_312, 1_234_567
    text = renderer("text", "ab").render(doc, RenderOptions(width=width))
    assert "…" not in text
    assert "-60.3 us" in text and "1.23 ms" in text


# ---- the docs say what the code does ------------------------------------------------

def _documented_versions() -> dict[str, int]:
    """docs/json.md's table of documents: its first column -> the version written."""
    text = (ROOT / "docs" / "json.md").read_text()
    table = text.split("| document | written by | `schema_version` | also reads |")[1]
    out = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        out[cells[0]] = int(cells[2])
    return out


def test_every_document_carries_the_version_docs_json_says(tmp_path, fixture_reports):
    """docs/json.md: every JSON document says its version in ``schema_version``; the
    Proton report said none."""
    from traceview.documents import VERSIONS

    documented = _documented_versions()
    assert documented["Proton report"] == VERSIONS["proton"] == 1
    written = {
        "explain report": json.loads(runner.invoke(
            app, ["explain", str(SMALL), "--format", "json"]).stdout),
        "ranks report": json.loads(runner.invoke(
            app, ["explain", str(SMALL), str(SMALL), "--format", "json", "--jobs", "1"]).stdout),
        "diff": json.loads(runner.invoke(
            app, ["diff", str(SMALL), str(SMALL), "--format", "json"]).stdout),
        # saved by today's ``ab --out`` (tests/data's older ones are version 1, read back)
        "ab result": _ab_doc(),
    }
    for name in ("proton_nested.hatchet.gz", "proton_mul_20_calls.chrome_trace.gz"):
        r = runner.invoke(app, ["explain", str(FIXTURES / "proton" / name), "--format", "json"])
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        assert next(iter(doc)) == "schema_version"
        written[f"Proton report ({name})"] = doc
    for what, doc in written.items():
        assert doc["schema_version"] == documented[what.split(" (")[0]], what


# ---- a missing extra: one line naming it, exit 2, before any process -------------------

SERVE_TINY = ["--device", "cpu", "--layers", "1", "--hidden", "64", "--heads", "4",
              "--kv-heads", "2", "--intermediate", "128", "--vocab", "256", "--requests", "2",
              "--prompt-len", "4", "--output-len", "2", "--rounds", "2"]


def _without_torch(tmp_path: Path) -> dict[str, str]:
    """An environment whose interpreters cannot import torch, transformers or triton: a
    ``sitecustomize`` first on the path marks them absent (``import torch`` then raises
    ModuleNotFoundError, as on a machine without them)."""
    import os

    hook = tmp_path / "no_torch"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import sys\nfor _n in ('torch', 'transformers', 'triton'):\n    sys.modules[_n] = None\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(hook), str(ROOT)])
    return env


@pytest.mark.parametrize("args, words", [
    (["serve", *SERVE_TINY, "--vs", "flag_gems"], ("torch", "transformers",
                                                  "traceview[serve]")),
    (["ab", "--op", "add", "--device", "cpu", "--impl", "torch", "--rounds", "2",
      "--no-split"], ("PyTorch", "traceview[capture]")),
    (["capture", "--op", "add", "--device", "cpu", "--impl", "torch"],
     ("PyTorch", "traceview[capture]")),
])
def test_a_missing_extra_is_one_line_exit_2(tmp_path, args, words):
    import subprocess
    import sys

    env = _without_torch(tmp_path)
    probe = subprocess.run([sys.executable, "-c", "import torch"], env=env,
                           capture_output=True, text=True)
    assert probe.returncode != 0 and "ModuleNotFoundError" in probe.stderr
    done = subprocess.run([sys.executable, "-m", "traceview", *args], env=env,
                          capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert all(w in lines[0] for w in words), lines[0]
    assert "correctness" not in done.stderr and "bisect" not in done.stdout


def test_serve_names_the_side_whose_interpreter_lacks_the_extra():
    from traceview.errors import UsageError
    from traceview.serve import spec as sp

    spec = sp.ServeSpec(model=sp.ModelSpec(), workload=sp.Workload(),
                        a=sp.Variant("A"), b=sp.Variant("B", backend="flag_gems",
                                                        python="/opt/other/bin/python"))
    asked = []

    def probe(python, path):
        asked.append(python)
        return ["transformers"] if python else []

    with pytest.raises(UsageError, match=r"transformers not installed for side B "
                                         r"\(/opt/other/bin/python\)"):
        sp.check_extras(spec, probe)
    assert asked == [None, "/opt/other/bin/python"]


# ---- the profiler's own noise ---------------------------------------------------------

PROFILER_NOISE = re.compile(r"^(USDT|ERROR|STAGE|WARNING):\S* .*\.cpp:\d+\]|gpuGetDeviceCount",
                            re.M)


@pytest.mark.capture  # torch in a child process
def test_a_cpu_capture_prints_no_profiler_log(tmp_path):
    """libkineto printed "USDT: ... profiler_start/stop" (and, without a GPU, "ERROR:
    ... gpuGetDeviceCount failed") on every CPU capture."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "traceview", "capture", "--op", "add",
                           "--device", "cpu", "--impl", "torch", "--iters", "3",
                           "--out", str(tmp_path / "t.json.gz")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not PROFILER_NOISE.search(done.stderr), done.stderr[:2000]
    assert not PROFILER_NOISE.search(done.stdout)


def test_the_profiler_log_is_quiet_only_without_cuda_and_never_over_the_users(monkeypatch):
    import os

    from traceview.runner.profiler_log import KINETO_LOG_LEVEL, quiet_profiler_log

    monkeypatch.delenv(KINETO_LOG_LEVEL, raising=False)
    with quiet_profiler_log(cuda=False):
        assert os.environ[KINETO_LOG_LEVEL] == "6"
    assert KINETO_LOG_LEVEL not in os.environ
    with quiet_profiler_log(cuda=True):
        assert KINETO_LOG_LEVEL not in os.environ
    monkeypatch.setenv(KINETO_LOG_LEVEL, "0")
    with quiet_profiler_log(cuda=False):
        assert os.environ[KINETO_LOG_LEVEL] == "0"
    assert os.environ[KINETO_LOG_LEVEL] == "0"


# ---- the waterfall's device row: busy share, honestly, at any zoom ----------------------

CALL_NS = 600_000
KERNELS = 60  # one 1 us kernel every 10 us: the device 10% busy, at every part of the call


def _spread_kernels(tb):
    """Three calls of 600 us, each with 60 kernels of 1 us launched 10 us apart."""
    for c in range(3):
        start = 1_000_000 * c
        tb.annotation(f"call_{c}", start, CALL_NS)
        for k in range(KERNELS):
            t = start + 10_000 * k
            tb.launched_kernel("k", t + 1_000, 2_000, t + 4_000, 1_000)
    return tb


@pytest.mark.parametrize("width", [80, 120])
def test_the_device_row_is_as_busy_as_the_device(tb, analyze_builder, width):
    """A call whose device is 10% busy in every part drew "k" (partly busy) in every cell:
    at a glance busy throughout beside "idle 90%". Each cell is now as tall as its busy
    share, counted here from the kernels as written."""
    from traceview.render.console import BAR_WIDTH, DEVICE_LEVELS
    from traceview.render.registry import RenderOptions, renderer

    r = analyze_builder(_spread_kernels(tb))
    text = renderer("text").render(r, RenderOptions(width=width))
    row = next(ln for ln in text.splitlines()
               if ln.startswith("device ") and set(ln[7:]) <= set(DEVICE_LEVELS))
    cells = row.removeprefix("device ")
    bar = max(10, min(BAR_WIDTH, width - 8))
    assert len(cells) == bar
    t = r.typical_call
    start = 1_000_000 * r.typical.index
    assert (t.start_ns, t.end_ns) == (start, start + CALL_NS)
    kernels = [(start + 10_000 * k + 4_000, start + 10_000 * k + 5_000) for k in range(KERNELS)]
    span = t.axis_end_ns - t.start_ns
    want = ""
    for i in range(bar):
        a, b = t.start_ns + span * i // bar, t.start_ns + span * (i + 1) // bar
        busy = sum(max(0, min(e, b) - max(s, a)) for s, e in kernels)
        want += DEVICE_LEVELS[0 if busy == 0 else min(8, -(-8 * busy // (b - a)))]
    assert cells == want
    # the eye's reading: the row's mean height is the busy share, within an eighth
    mean = sum(DEVICE_LEVELS.index(ch) for ch in cells) / (8 * bar)
    assert abs(mean - 0.10) <= 1 / 8
    assert "█" not in cells
