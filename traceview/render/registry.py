"""Renderers behind one protocol, chosen by name: a ``Report`` in, a document out.

Every output format of ``traceview explain`` is a ``Renderer`` in ``RENDERERS``; the CLI
looks the format up here, and later formats register here too. A renderer computes
nothing the report does not hold (the typical call, the matrix, shares come from it).
"""

from __future__ import annotations

from dataclasses import dataclass
from io import StringIO
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from traceview.report.model import Report


@dataclass(frozen=True)
class RenderOptions:
    width: int = 80  # terminal columns (text only)
    top: int = 10  # rows of the kernel and function tables (text only)
    color: bool = False  # ANSI colours (text only)
    figure: str | None = None  # a figure written beside a markdown report, to mention


class Renderer(Protocol):
    name: str
    binary: bool  # bytes (a PNG) rather than text

    def render(self, report: Report, options: RenderOptions) -> str | bytes: ...


class Terminal:
    name, binary = "text", False

    def render(self, report: Report, options: RenderOptions) -> str:
        from rich.console import Console

        from traceview.render.console import render_console

        buf = StringIO()
        console = Console(width=options.width, file=buf, highlight=False,
                          color_system="standard" if options.color else None,
                          force_terminal=options.color, legacy_windows=False)
        render_console(report, console, options.top)
        return buf.getvalue()


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


RENDERERS: dict[str, Renderer] = {r.name: r for r in (Terminal(), Json(), Markdown(), Svg(), Png())}


def renderer(name: str) -> Renderer:
    return RENDERERS[name]
