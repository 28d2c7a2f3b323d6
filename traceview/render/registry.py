"""Renderers behind one protocol, chosen by name: a report in, a document out.

Every output format is a ``Renderer`` registered here under (subject, format): the one
trace ``Report`` (``explain``), the ranks' ``RanksReport`` (``explain DIR``) and the
``Diff`` (``diff``). The CLI looks them up with ``renderer(format, subject)``, and later
formats register here too. A renderer computes nothing its report does not hold (the
typical call, the matrix, shares come from the report).
"""

from __future__ import annotations

from dataclasses import dataclass
from io import StringIO
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from traceview.report.model import Report


@dataclass(frozen=True)
class RenderOptions:
    width: int = 80  # terminal columns (text only)
    top: int = 10  # rows of the kernel and function tables (text only)
    color: str | None = None  # rich colour system ("standard", "256", "truecolor"); text only
    figure: str | None = None  # a figure written beside a markdown report, to mention


Subject = Literal["report", "ranks", "diff"]


class Renderer(Protocol):
    name: str
    binary: bool  # bytes (a PNG) rather than text

    def render(self, report: Any, options: RenderOptions) -> str | bytes: ...


def _console_text(options: RenderOptions, draw: Any) -> str:
    """What ``draw(console)`` prints, on a console ``options.width`` wide."""
    from rich.console import Console

    buf = StringIO()
    console = Console(width=options.width, file=buf, highlight=False,
                      color_system=options.color,  # type: ignore[arg-type]
                      force_terminal=options.color is not None, legacy_windows=False)
    draw(console)
    return buf.getvalue()


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

    def render(self, report: Any, options: RenderOptions) -> str:
        from traceview.render.ranks_report import render_ranks_console

        return _console_text(options, lambda c: render_ranks_console(report, c))


class RanksJson:
    name, binary = "json", False

    def render(self, report: Any, options: RenderOptions) -> str:
        from traceview.render.ranks_report import render_ranks_json

        return render_ranks_json(report).decode()


class RanksMarkdown:
    name, binary = "md", False

    def render(self, report: Any, options: RenderOptions) -> str:
        from traceview.render.ranks_report import render_ranks_markdown

        return render_ranks_markdown(report)


class DiffTerminal:
    name, binary = "text", False

    def render(self, report: Any, options: RenderOptions) -> str:
        from traceview.render.diff_report import render_diff_console

        return _console_text(options, lambda c: render_diff_console(report, c))


class DiffJson:
    name, binary = "json", False

    def render(self, report: Any, options: RenderOptions) -> str:
        import orjson

        return (orjson.dumps(report.as_dict(), option=orjson.OPT_INDENT_2) + b"\n").decode()


class DiffMarkdown:
    name, binary = "md", False

    def render(self, report: Any, options: RenderOptions) -> str:
        from traceview.render.diff_report import render_diff_markdown

        return render_diff_markdown(report)


RENDERERS: dict[tuple[Subject, str], Renderer] = {
    **{("report", r.name): r for r in (Terminal(), Json(), Markdown(), Svg(), Png())},
    **{("ranks", r.name): r for r in (RanksTerminal(), RanksJson(), RanksMarkdown())},
    **{("diff", r.name): r for r in (DiffTerminal(), DiffJson(), DiffMarkdown())},
}


def renderer(name: str, subject: Subject = "report") -> Renderer:
    return RENDERERS[(subject, name)]
