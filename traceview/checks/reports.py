"""The correctness checks' reports, typed: the layouts of the JSON they write.

The checks build their reports as plain dicts (``failure.report``,
``cache_check.report`` / ``as_json``, ``layouts.document``) because the pieces come
from a child process as JSON records; these Structs are what that JSON is, key by key
and in the written order, so that the kinds ``check``, ``cache_check`` and
``check_layouts`` of ``traceview.documents`` have a JSON Schema (``docs/schemas/``) and
a layout change cannot go unversioned (``tests/test_document_schemas.py`` decodes real
reports strictly, unknown keys refused, and encodes them back to the same bytes).

A key that only some reports carry (``side`` for an ``ab`` side, ``crash`` or
``comparison`` by verdict, a compared element only when some were wrong) is ``UNSET``
when absent, so it is left out when encoded, as the writer leaves it out. No torch here:
``explain`` and the schema writer import this module.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

#: a compared figure: a number, or ``nan``/``inf``/``-inf`` spelled as a string
Figure = int | float | str | None


class TensorOperand(msgspec.Struct, frozen=True, kw_only=True, tag="tensor",
                    tag_field="kind", forbid_unknown_fields=True):
    """A tensor operand as built (``check_child.describe_operands``); ``align16`` is the
    cache check's (whether its data pointer is 16-byte aligned)."""

    shape: list[int]
    dtype: str
    strides: list[int]
    contiguous: bool
    storage_offset: int
    device: str
    align16: bool | UnsetType = UNSET


class ScalarOperand(msgspec.Struct, frozen=True, kw_only=True, tag="scalar",
                    tag_field="kind", forbid_unknown_fields=True):
    """A Python scalar operand: its value and its Python type's name."""

    value: bool | int | float
    type: str


Operand = TensorOperand | ScalarOperand


class Tolerance(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    rtol: int | float
    atol: int | float


class Element(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One compared element (the worst, the first wrong)."""

    index: list[int]
    got: Figure
    expected: Figure
    abs_err: Figure


class Comparison(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``correctness.compare``'s result. A call that returned no tensor has only
    ``passed`` and ``mismatch``; the wrong elements' figures (``worst`` ...
    ``wrong_per_dim``) are there only when some element was wrong."""

    reference: str | UnsetType = UNSET
    tolerance: Tolerance | UnsetType = UNSET
    out_dtype: str | UnsetType = UNSET
    out_shape: list[int] | UnsetType = UNSET
    out_strides: list[int] | UnsetType = UNSET
    expected_shape: list[int] | UnsetType = UNSET
    expected_dtype: str | UnsetType = UNSET
    passed: bool
    max_abs_err: Figure | UnsetType = UNSET
    max_rel_err: Figure | UnsetType = UNSET
    total: int | UnsetType = UNSET
    wrong: int | None | UnsetType = UNSET
    mismatch: str | None
    worst: Element | UnsetType = UNSET
    first: Element | UnsetType = UNSET
    nonfinite: int | UnsetType = UNSET
    out_of_range: int | UnsetType = UNSET
    reference_range: list[int | float] | None | UnsetType = UNSET
    wrong_per_dim: list[list[int]] | UnsetType = UNSET


class Crash(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A crashed or hung child (``failure.crash_fields``)."""

    error: str | None
    frame: str | None
    stack: list[str]
    located: bool
    first_error: str | None
    signal: str | None
    returncode: int | None
    stderr_tail: list[str]
    timeout_s: int | float | None


class CallRow(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One call of the cache check's sequence (``cache_check._row_json``); ``changed``
    is in the passing result's rows only."""

    call: int
    name: str
    context: str
    status: str  # pass | wrong | skipped | started (the call a crash or hang stopped in)
    max_abs_err: Figure
    wrong: int | None
    mismatch: str | None
    out_dtype: str | None
    out_shape: list[int] | None
    operands: list[Operand] | None
    skipped: str | UnsetType = UNSET
    changed: list[str] | UnsetType = UNSET


class PreviousCall(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    call: int
    name: str


class CacheCheckBlock(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The cache check's part of its failure report: the first wrong call, what changed
    from the call before it, every call that ran."""

    call: int
    calls: int
    name: str
    context: str
    previous: PreviousCall | None
    changed: list[str]
    passed_before: int | None
    wrong_calls: list[int]
    rows: list[CallRow]


class CheckReport(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Kind ``check``: a correctness check's failure report (``failure.report``,
    ``failure.from_comparison``, ``cache_check.report``). ``comparison`` for a wrong
    result, ``crash`` for a crash or hang; ``cache_check`` when the cache check found
    it; ``side`` when ``ab`` ran it for one side."""

    schema_version: int
    verdict: Literal["wrong", "crashed", "timeout"]
    found_by: str
    op: str
    impl: str
    device: str
    dtype: str
    layout: str
    seed: int
    shapes: list[list[int]]
    scalar: bool | int | float | None
    operands: list[Operand] | None
    cache_check: CacheCheckBlock | UnsetType = UNSET
    reproducer: str
    written: list[str]
    side: str | UnsetType = UNSET
    comparison: Comparison | None | UnsetType = UNSET
    crash: Crash | UnsetType = UNSET


class CacheCheckResult(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Kind ``cache_check``: the cache check's passing result (``cache_check.as_json``),
    every call with what changed from the call before it."""

    schema_version: int
    passed: bool
    op: str
    impl: str
    device: str
    dtype: str
    shapes: list[list[int]]
    calls: int
    rows: list[CallRow]
    reproducer: str
    side: str | UnsetType = UNSET


class LayoutRow(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One layout variant's verdict (``layouts.Row``). ``operands`` are the operands as
    built, or, when the process died before building them, the spec that was asked for
    (``{"shape", "layout"}``, ``{"scalar"}``, ``{"zero_dim"}``): hence plain objects."""

    name: str
    status: Literal["pass", "wrong", "raised", "crashed", "timeout"]
    operands: list[dict[str, Any]] | None
    comparison: Comparison | None
    error: str | None
    frame: str | None
    located: bool


class LayoutsDocument(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Kind ``check_layouts``: the layout matrix (``layouts.document``)."""

    schema_version: int
    op: str
    impl: str
    dtype: str
    device: str
    shape: list[int]
    rows: list[LayoutRow]
    passed: int
    total: int
