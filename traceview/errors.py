"""All of traceview's own exceptions, in one place.

Only *unusable* input raises. Problems that still leave an analysable trace become
named diagnostics carried with the trace (see ``traceview.diagnostics``), never
exceptions. The CLI turns every ``TraceviewError`` into one line and an exit code.
"""

from __future__ import annotations


class TraceviewError(Exception):
    """Base class: a problem the user can fix, reported as one line."""

    exit_code = 2


class TraceLoadError(TraceviewError):
    """The file cannot be read as a trace at all (missing, not JSON, no events...)."""

    def __init__(self, path: object, problem: str) -> None:
        from traceview.printable import printable_path

        self.path = printable_path(path)  # a name that is not UTF-8 still prints
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class UsageError(TraceviewError):
    """An option value that makes no sense (bad window, bad regex, bad rules file)."""


class OutputError(TraceviewError):
    """An output cannot be written (a full disk, a folder where a file goes, no
    permission, a store that refuses): nothing half-written is left."""


class CaptureError(TraceviewError):
    """capture cannot run as asked (no GPU, unknown op, bad shape...)."""


class CorrectnessError(TraceviewError):
    """capture's correctness check failed (wrong values, or the kernel crashed): no
    timings are written. ``report`` is the structured failure report when there is one
    (``traceview.checks.failure``); the message is its first line."""

    exit_code = 3

    def __init__(self, message: str, report: dict | None = None) -> None:
        super().__init__(message)
        self.report = report


class KernelHangError(CorrectnessError):
    """The op under test did not return within capture's timeout (it was killed)."""

    exit_code = 2


class IdentityError(RuntimeError):
    """An accounting identity failed (cells != window...): a traceview bug, never the
    input's fault. Not a ``TraceviewError``: the CLI lets it surface with its traceback
    so it gets reported, instead of printing numbers that do not add up."""
