"""Renderers behind one protocol, chosen by name: a report in, a document out.

Every output format is a ``Renderer`` registered here under (subject, format): the one
trace ``Report`` (``explain``), the ranks' ``RanksReport`` (``explain DIR``), the
``Diff`` (``diff``), the ``traceview ab`` result (``ab``: its versioned JSON
document), the ``traceview serve`` document (``serve``, docs/serving.md), and what
``traceview capture`` prints: its summary (``capture``), a sweep (``sweep``), a
correctness failure report (``failure``), the warm-cache check (``cache_check``) and the
layout matrix (``layouts``), from ``traceview.render.measured``. The CLI
looks them up with ``renderer(format, subject)`` and imports no renderer module itself
(``tests/test_layout.py`` checks both), and later formats register here too. A renderer
computes nothing its report does not hold (the typical call, the matrix, shares come
from the report).
"""

from __future__ import annotations

from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from traceview.multi.compare import Diff
    from traceview.multi.ranks import RanksReport
    from traceview.report.model import Report
    from traceview.report.proton import ProtonTraceReport, ProtonTreeReport


@dataclass(frozen=True)
class RenderOptions:
    width: int = 80  # terminal columns (text only)
    top: int = 10  # rows of the kernel and function tables (text only)
    color: str | None = None  # rich colour system ("standard", "256", "truecolor"); text only
    figure: str | None = None  # a figure written beside a markdown report, to mention


Subject = Literal["report", "ranks", "diff", "ab", "serve", "proton", "capture", "sweep",
                  "failure", "cache_check", "layouts"]


class Renderer(Protocol):
    name: str
    binary: bool  # bytes (a PNG) rather than text

    def render(self, report: Any, options: RenderOptions) -> str | bytes: ...


def _console_text(options: RenderOptions, draw: Any) -> str:
    """What ``draw(console)`` prints, on a console ``options.width`` wide, laid out by
    the text layer (``traceview.render.text``: numbers keep their units, names break at
    their boundaries)."""
    from traceview.render.text import TextConsole, finish

    buf = StringIO()
    console = TextConsole(width=options.width, file=buf, highlight=False,
                          color_system=options.color,  # type: ignore[arg-type]
                          force_terminal=options.color is not None, legacy_windows=False)
    draw(console)
    return finish(buf.getvalue())


class Terminal:
    name, binary = "text", False

    def render(self, report: Report, options: RenderOptions) -> str:
        from traceview.render.console import render_console

        return _console_text(options, lambda c: render_console(report, c, options.top))


class Json:
    name, binary = "json", False

    def render(self, report: Report, options: RenderOptions) -> str:
        from traceview.report.schema import to_json

        return to_json(report).decode()


class Markdown:
    name, binary = "md", False

    def render(self, report: Report, options: RenderOptions) -> str:
        from traceview.render.markdown import render_markdown

        return render_markdown(report, options.figure)


class Svg:
    name, binary = "svg", False

    def render(self, report: Report, options: RenderOptions) -> str:
        from traceview.render.figure import render_svg

        return render_svg(report)


class Png:
    name, binary = "png", True

    def render(self, report: Report, options: RenderOptions) -> bytes:
        from traceview.render.figure import render_png

        return render_png(report)


class RanksTerminal:
    name, binary = "text", False

    def render(self, report: RanksReport, options: RenderOptions) -> str:
        from traceview.render.ranks_report import render_ranks_console

        return _console_text(options, lambda c: render_ranks_console(report, c))


class RanksJson:
    name, binary = "json", False

    def render(self, report: RanksReport, options: RenderOptions) -> str:
        from traceview.render.ranks_report import render_ranks_json

        return render_ranks_json(report).decode()


class RanksMarkdown:
    name, binary = "md", False

    def render(self, report: RanksReport, options: RenderOptions) -> str:
        from traceview.render.ranks_report import render_ranks_markdown

        return render_ranks_markdown(report)


class DiffTerminal:
    name, binary = "text", False

    def render(self, report: Diff, options: RenderOptions) -> str:
        from traceview.render.diff_report import render_diff_console

        return _console_text(options, lambda c: render_diff_console(report, c))


class DiffJson:
    name, binary = "json", False

    def render(self, report: Diff, options: RenderOptions) -> str:
        import orjson

        return (orjson.dumps(report.as_dict(), option=orjson.OPT_INDENT_2) + b"\n").decode()


class DiffMarkdown:
    name, binary = "md", False

    def render(self, report: Diff, options: RenderOptions) -> str:
        from traceview.render.diff_report import render_diff_markdown

        return render_diff_markdown(report)


class AbTerminal:
    name, binary = "text", False

    def render(self, report: dict[str, Any], options: RenderOptions) -> str:
        from traceview.render.ab_report import render_ab_console

        return _console_text(options, lambda c: render_ab_console(report, c))


class AbJson:
    """The ab document itself (what ``ab --out`` saves, ``diff --ab`` reads)."""

    name, binary = "json", False

    def render(self, report: dict[str, Any], options: RenderOptions) -> str:
        import orjson

        return (orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n").decode()


class AbMarkdown:
    name, binary = "md", False

    def render(self, report: dict[str, Any], options: RenderOptions) -> str:
        from traceview.render.ab_report import render_ab_markdown

        return render_ab_markdown(report)


class ServeTerminal:
    name, binary = "text", False

    def render(self, report: dict[str, Any], options: RenderOptions) -> str:
        from traceview.render.serve_console import render_serve_console

        return _console_text(options, lambda c: render_serve_console(report, c))


class ServeJson:
    """The serve document as ``serve --out`` saves it (stdlib ``json``, indent 1)."""

    name, binary = "json", False

    def render(self, report: dict[str, Any], options: RenderOptions) -> str:
        import json

        return json.dumps(report, indent=1) + "\n"


class ServeMarkdown:
    name, binary = "md", False

    def render(self, report: dict[str, Any], options: RenderOptions) -> str:
        from traceview.render.serve_markdown import render_serve_markdown

        return render_serve_markdown(report)


class Proton:
    """A Proton profile's report (``traceview.report.proton``): its text, JSON or markdown."""

    binary = False

    def __init__(self, name: str) -> None:
        self.name = name

    def render(self, report: ProtonTraceReport | ProtonTreeReport, options: RenderOptions) -> str:
        from traceview.render.proton import render

        return render(report, self.name, options.width)


def _json_text(doc: Any) -> str:
    import json

    return json.dumps(doc, indent=2) + "\n"


class CaptureText:
    """capture's summary (``traceview.render.measured.capture.CaptureSummary``)."""

    name, binary = "text", False

    def render(self, report: Any, options: RenderOptions) -> str:
        from traceview.render.measured.capture import draw_capture

        return _console_text(options, lambda c: draw_capture(c, report))


class CaptureJson:
    name, binary = "json", False

    def render(self, report: Any, options: RenderOptions) -> str:
        return _json_text(report.to_dict())


class SweepText:
    """A sweep's table (``traceview.render.measured.sweep.SweepOutput``)."""

    name, binary = "text", False

    def render(self, report: Any, options: RenderOptions) -> str:
        from traceview.render.measured.sweep import render_sweep

        return _console_text(options, lambda c: render_sweep(c, report.result, report.files))


class SweepJson:
    name, binary = "json", False

    def render(self, report: Any, options: RenderOptions) -> str:
        return _json_text(report.result.summary())


class SweepMarkdown:
    name, binary = "md", False

    def render(self, report: Any, options: RenderOptions) -> str:
        from traceview.render.measured.sweep import markdown

        return markdown(report.result.summary())


class FailureText:
    """A correctness failure report: the isolated check's, or the cache check's (the
    report holds ``cache_check``); a headline line, then one labelled line per fact."""

    name, binary = "text", False

    def render(self, report: Any, options: RenderOptions) -> str:
        from traceview.render.measured.checks import cache_check_lines, failure_lines

        lines = cache_check_lines(report) if "cache_check" in report else failure_lines(report)
        return "\n".join(lines)


class DocumentJson:
    """A check's document as it is: the plain dict, indented."""

    name, binary = "json", False

    def render(self, report: Any, options: RenderOptions) -> str:
        return _json_text(report)


class CacheCheckText:
    name, binary = "text", False

    def render(self, report: Any, options: RenderOptions) -> str:
        from traceview.render.measured.checks import draw_cache_check

        return _console_text(options, lambda c: draw_cache_check(c, report))


class LayoutsText:
    name, binary = "text", False

    def render(self, report: Any, options: RenderOptions) -> str:
        from traceview.render.measured.checks import draw_layouts

        return _console_text(options, lambda c: draw_layouts(c, report))


RENDERERS: dict[tuple[Subject, str], Renderer] = {
    **{("report", r.name): r for r in (Terminal(), Json(), Markdown(), Svg(), Png())},
    **{("ranks", r.name): r for r in (RanksTerminal(), RanksJson(), RanksMarkdown())},
    **{("diff", r.name): r for r in (DiffTerminal(), DiffJson(), DiffMarkdown())},
    **{("ab", r.name): r for r in (AbTerminal(), AbJson(), AbMarkdown())},
    **{("serve", r.name): r for r in (ServeTerminal(), ServeJson(), ServeMarkdown())},
    **{("proton", name): Proton(name) for name in ("text", "json", "md")},
    **{("capture", r.name): r for r in (CaptureText(), CaptureJson())},
    **{("sweep", r.name): r for r in (SweepText(), SweepJson(), SweepMarkdown())},
    **{("failure", r.name): r for r in (FailureText(), DocumentJson())},
    **{("cache_check", r.name): r for r in (CacheCheckText(), DocumentJson())},
    **{("layouts", r.name): r for r in (LayoutsText(), DocumentJson())},
}


class _Printable:
    """A text or markdown renderer whose document carries no control characters but
    newline and tab (and the ESC of its own colours): names are escaped where they are
    laid out (``printable.py``); this is the net for any text that was not."""

    def __init__(self, inner: Renderer) -> None:
        self.inner = inner
        self.name, self.binary = inner.name, inner.binary

    def render(self, report: Any, options: RenderOptions) -> str | bytes:
        from traceview.printable import SOFT, escape_controls

        out = self.inner.render(report, options)
        if isinstance(out, bytes):
            return out
        # the text layer's break mark is zero cells wide: a leftover one is dropped
        return escape_controls(out.replace(SOFT, ""), keep_esc=options.color is not None)


def renderer(name: str, subject: Subject = "report") -> Renderer:
    found = RENDERERS[(subject, name)]
    return _Printable(found) if name in ("text", "md") else found


def write_figure(report: Report, path: str | Path) -> None:
    """The typical call's picture into ``path``: a PNG for a ``.png`` name, an SVG for an
    ``.svg`` one, any other name refused (``explain --figure``); written whole or not at
    all."""
    from traceview.atomic import write_bytes_atomic
    from traceview.errors import UsageError

    path = Path(path)
    kind = path.suffix.lower().lstrip(".")
    if kind not in ("svg", "png"):
        raise UsageError(f"{path}: a figure is written as .svg or .png, not "
                         f"{path.suffix or 'a name without a suffix'}")
    out = renderer(kind).render(report, RenderOptions())
    write_bytes_atomic(path, out if isinstance(out, bytes) else out.encode())


def write_annotated_trace(source: Any, out: Path, analysis: Any, report: Report) -> int:
    """The trace at ``source`` with traceview's tracks added, written whole to ``out``
    (``explain --annotate``, docs/annotate.md); returns how many events were added.
    ``source``: the open ``io.sources.Source`` the trace was decoded from."""
    from traceview.render.annotate import write_annotated

    return write_annotated(source, out, analysis, report)
