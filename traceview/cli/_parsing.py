"""How typer's parser meets a person: help without value placeholders on flags, and a
usage error (an unknown option, a bad value, a missing argument) as one line on stderr,
exit 2, never rich's multi-line box with the usage repeated.

Commands and the group are registered with these classes (``cls=``); the rest of the CLI
uses typer's public API only.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

# the words after "traceview:" on every usage error, so a user's grep finds them all
_PREFIX = "traceview: error:"


def usage_line(exc: typer.TyperException, command_path: str | None) -> str:
    """One line for a usage error: the command, what was wrong, where help is. Click's
    message can run over several lines ("No such option: --fo" / "Did you mean ...?")."""
    what = " ".join(exc.format_message().split())
    where = f"{command_path}: " if command_path else ""
    helps = f" (see {command_path} --help)" if command_path else ""
    return f"{_PREFIX} {where}{what}{helps}"


class _Plain:
    """What the command and the group share: flags without ``<bool>`` in the help (typer
    shows a value type for every option, a flag takes none), and parse errors in one
    line."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            if getattr(param, "is_flag", False) and param.metavar is None:
                param.metavar = ""  # typer's help shows the metavar in place of the type
        return params

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None,
                     **extra: Any) -> Any:
        try:
            return super().make_context(info_name, args, parent=parent,  # type: ignore[misc]
                                        **extra)
        except typer.TyperException as exc:  # click's UsageError and its kinds
            raise _said(exc) from None


def _said(exc: typer.TyperException) -> typer.Exit:
    """Print ``exc`` as one line; the exit that ends the command with its code."""
    ctx = getattr(exc, "ctx", None)
    path = ctx.command_path if ctx is not None else None
    typer.echo(usage_line(exc, path), err=True)
    return typer.Exit(getattr(exc, "exit_code", 2))


class PlainCommand(_Plain, TyperCommand):
    """A command whose help and usage errors read as ``_Plain`` says."""


class PlainGroup(_Plain, TyperGroup):
    """The ``traceview`` group, as ``_Plain`` says; an unknown command is one line too."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except typer.TyperException as exc:
            raise _said(exc) from None
