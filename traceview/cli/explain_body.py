"""``traceview explain TRACE`` without typer: what the command does, once its arguments
are known, and the plain command lines' arguments (``plain_arguments``).

``explain_cmd.py`` declares the command's options to typer and calls ``explain`` here;
the console entry point calls it itself for ``explain TRACE [--format F]``, the command
line most runs use, and then typer is never imported (14 ms, a tenth of the
interpreter's start-up and imports: docs/performance.md). Several files, or a
directory, are ranks: each is analysed in its own process and the ranks are compared
(``traceview.multi.ranks``, rendered by ``traceview.render.ranks_report``). One plain file
keeps the single-trace output.
"""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traceview.cli._common import (
    analysis_options,
    check_output_file,
    run_guarded,
    stdout_console,
    write_document,
)
from traceview.cli._output import as_text

if TYPE_CHECKING:
    from traceview.io.sources import Source


class Format(str, enum.Enum):
    text = "text"
    json = "json"
    md = "md"


def explain(*, trace: list[str], format: Format = Format.text, window: str | None = None,
            calls: str | None = None, calls_depth: int = 1, rules: Path | None = None,
            thread: str | None = None, top: int = 10, width: int | None = None,
            figure: Path | None = None, annotate: Path | None = None,
            unprofiled_call: str | None = None, jobs: int | None = None,
            recursive: bool = True, engine: str = "local", address: str | None = None) -> None:
    """Attribute every nanosecond of a profiler trace: host categories x device busy/idle.
    The parameters are ``explain_cmd.explain``'s options, with the same defaults
    (``tests/test_cli.py`` checks both against typer's parse)."""
    from traceview.io import sources

    if len(trace) != 1 or sources.is_dir(trace[0]) or (
            sources.is_glob(trace[0]) and not Path(trace[0]).exists()):
        return _explain_ranks(trace, format, window, calls, rules, thread, width, figure, jobs,
                              recursive=recursive, engine=engine, address=address,
                              annotate=annotate)
    source: str | Path = trace[0] if sources.is_url(trace[0]) or sources.is_stdin(trace[0]) \
        else Path(trace[0])

    def body() -> None:
        from traceview.cli._progress import load_with_progress
        from traceview.report.build import explain as run_explain
        from traceview.report.explanation import check_options

        # every option is checked before the trace is read: a typo costs no decode
        _check_one_trace_outputs(source, figure, annotate, engine, address)
        opts = analysis_options(window, calls, rules, thread, top=top, calls_depth=calls_depth,
                                unprofiled_call=_unprofiled_call(unprofiled_call))
        check_options(opts)
        # the trace is opened once: sniffed, sized, decoded (and copied by --annotate)
        with sources.Source.open(source) as src:
            if _proton(src, format, width, options_given=[
                    ("--window", window), ("--calls", calls), ("--rules", rules),
                    ("--thread", thread), ("--figure", figure), ("--annotate", annotate)]):
                return
            report = run_explain(load_with_progress(src), opts) if annotate is None \
                else _explain_and_annotate(src, annotate, opts)
        from traceview.render.registry import RenderOptions, renderer, write_figure

        ref = None
        if figure is not None:
            write_figure(report, figure)
            ref = figure.name
            if format is not Format.md:  # markdown mentions it itself; stdout stays clean
                print(f"traceview: figure written to {figure}", file=sys.stderr)
        # only the text report reads the terminal (JSON and markdown skip rich's import)
        console = stdout_console(None) if format is Format.text else None
        out = as_text(renderer(format.value).render(report, RenderOptions(
            width=width or (console.width if console is not None else 80), top=top,
            color=console.color_system if console is not None else None, figure=ref)))
        sys.stdout.write(out)
        sys.stdout.flush()

    run_guarded(body, reads_traces=True)


def plain_arguments(argv: list[str]) -> dict[str, Any] | None:
    """``explain``'s arguments for the command lines most runs use, ``explain TRACE``
    with at most ``--format F`` (``-f F``, ``--format=F``) after it; None for any other
    command line, which typer parses. The console entry point then calls ``explain``
    itself (every other option at its default, the one in the signature), and typer
    is not imported at all: typer builds a pydantic validator for each of the command's
    options before it runs it, which with pydantic's import took a third of a small
    trace's run, and typer's own import is 14 ms (docs/performance.md)."""
    if len(argv) < 2 or argv[0] != "explain" or argv[1].startswith("-"):
        return None
    given: dict[str, Any] = {"trace": [argv[1]]}
    rest = argv[2:]
    while rest:
        if rest[0] in ("--format", "-f") and len(rest) > 1:
            value, rest = rest[1], rest[2:]
        elif rest[0].startswith("--format="):
            value, rest = rest[0].partition("=")[2], rest[1:]
        else:
            return None
        if "format" in given or value not in Format._value2member_map_:
            return None
        given["format"] = Format(value)
    return given


def _check_one_trace_outputs(source: str | Path, figure: Path | None, annotate: Path | None,
                             engine: str, address: str | None) -> None:
    """Refuse, before any reading, what one trace cannot take: the ranks' engine options,
    a figure written over the input, and output names of the wrong kind."""
    from traceview.errors import UsageError

    if engine != "local" or address is not None:
        raise UsageError("--engine and --address are for several traces (ranks)")
    if figure is not None and not isinstance(source, str) and _same_file(figure, source):
        raise UsageError(f"--figure {figure} is the input trace: traceview never writes "
                         "to its input")
    check_output_file(figure, "--figure", suffixes=(".svg", ".png"))
    _check_annotate(annotate, source)




def _proton(source: Source, format: Format, width: int | None, *,
            options_given: list[tuple[str, object]]) -> bool:
    """A Proton profile (by content): its report, and True."""
    from traceview.io import proton

    kind = proton.sniff(source)
    if kind is None:
        return False
    given = [flag for flag, value in options_given if value is not None]
    if given:
        from traceview.errors import UsageError

        raise UsageError(f"{', '.join(given)}: not for a Proton {kind} ({source.name}); Proton "
                         "profiles have no host events, windows or Kineto calls")
    from traceview.render.registry import RenderOptions, renderer
    from traceview.report.proton import trace_report, tree_report

    report = trace_report(proton.read_trace(source)) if kind == "trace" \
        else tree_report(proton.read_tree(source))
    out = renderer(format.value, "proton").render(
        report, RenderOptions(width=width or stdout_console(None).width))
    sys.stdout.write(as_text(out))
    sys.stdout.flush()
    return True


def _explain_and_annotate(source: Source, annotate: Path, opts: Any) -> Any:
    """The report, with the annotated trace written to ``annotate`` on the way."""
    from traceview.cli._progress import load_with_progress
    from traceview.render.registry import write_annotated_trace
    from traceview.report.build import build_report
    from traceview.report.explanation import analyze_trace

    analysis = analyze_trace(load_with_progress(source), opts)
    report = build_report(analysis)
    added = write_annotated_trace(source, annotate, analysis, report)
    print(f"traceview: annotated trace written to {annotate} ({added} events "
          "added; open it in https://ui.perfetto.dev)", file=sys.stderr)
    return report


def _check_annotate(annotate: Path | None, source: str | Path) -> None:
    from traceview.errors import UsageError

    if annotate is None:
        return
    from traceview.io.sources import is_stdin

    if is_stdin(source):
        raise UsageError("--annotate copies the trace after reading it: give a file or a "
                         "URL, not standard input, which is read once")
    if not annotate.name.lower().endswith((".json", ".json.gz")):
        raise UsageError(f"--annotate {annotate}: the name must end in .json or .json.gz")
    if not isinstance(source, str) and _same_file(annotate, source):
        raise UsageError(f"--annotate {annotate} is the input trace: traceview never writes "
                         "to its input")
    check_output_file(annotate, "--annotate")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and a.samefile(b))
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (check_output_file says so)
        return False


def _explain_ranks(paths: list[str], format: Format, window: str | None, calls: str | None,
                   rules: Path | None, thread: str | None, width: int | None,
                   figure: Path | None, jobs: int | None, *, recursive: bool, engine: str,
                   address: str | None, annotate: Path | None = None) -> None:
    """Many traces: exit 0 when at least one rank was analysed (the failures are listed
    in the report and on stderr), 2 when none was."""

    def body() -> None:
        from traceview.errors import UsageError
        from traceview.multi.ranks import analyze_ranks

        if figure is not None:
            raise UsageError("--figure needs a single trace")
        if annotate is not None:
            raise UsageError("--annotate needs a single trace")
        if jobs is not None and jobs < 1:
            raise UsageError("--jobs must be at least 1")
        from traceview.cli._progress import RanksProgress

        with RanksProgress() as bar:
            report = analyze_ranks(paths, analysis_options(window, calls, rules, thread),
                                   jobs=jobs, recursive=recursive, engine=engine,
                                   address=address, progress=bar)
        for r in report.failed:
            print(f"traceview: error: rank {r.rank}: {r.error}", file=sys.stderr)
        if not report.ok:
            import typer

            raise typer.Exit(2)
        write_document(format.value, "ranks", report, width)
        sys.stdout.flush()

    run_guarded(body, reads_traces=True)


def _unprofiled_call(text: str | None) -> int | None:
    """``--unprofiled-call`` in ns (a time with its unit); UsageError for anything else."""
    if text is None:
        return None
    from traceview.analyses.window import parse_time
    from traceview.errors import UsageError

    ns = parse_time(text)
    if ns <= 0:
        raise UsageError(f"--unprofiled-call {text!r}: the call's time must be positive")
    return ns
