"""The one place a sweep's summary files are written (:func:`write_sweep`); their text is
:mod:`traceview.render.measured.sweep`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traceview.render.measured.sweep import markdown

if TYPE_CHECKING:
    from traceview.sweep.sweep import SweepResult

SUMMARY_FILES = ("sweep.json", "sweep.md")  # what write_sweep writes into the sweep's folder


def write_sweep(result: SweepResult) -> list[Path]:
    """``sweep.json`` and ``sweep.md`` into the sweep's folder, both or neither (staged,
    then renamed into place); returns their paths."""
    import json

    from traceview.opcapture.tracefile import Publisher

    summary = result.summary()
    paths = [result.folder / name for name in SUMMARY_FILES]
    data = [json.dumps(summary, indent=2).encode(), markdown(summary).encode()]
    with Publisher() as pub:
        for path, body in zip(paths, data, strict=True):
            pub.stage(path, body)
        pub.commit()
    return paths


@dataclass(frozen=True)
class SweepOutput:
    """A finished sweep (``traceview.sweep.sweep.SweepResult``) and its summary files."""

    result: Any
    files: tuple[Path, ...] = ()
