"""The one form in which a capture config travels to a child process: JSON text.

Every child of the measuring half (the baseline's processes, ``ab``'s sides, the
isolated checks, the kernel probe) rebuilds the parent's :class:`CaptureConfig` from this
text, so the parent and the child measure the same thing. JSON has no tuples and no
paths: :func:`decode_config` turns ``shapes`` and ``argv`` back into tuples and ``out``
back into a ``Path``, so that ``decode_config(encode_config(c)) == c``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from traceview.workload.config import CaptureConfig


def encode_config(config: CaptureConfig) -> str:
    """The config as JSON text, for a child's stdin or payload."""
    d = dataclasses.asdict(config)
    d["out"] = None if config.out is None else str(config.out)
    return json.dumps(d)


def decode_config(text: str) -> CaptureConfig:
    """The config :func:`encode_config` wrote."""
    from traceview.workload.config import CaptureConfig

    d = json.loads(text)
    d["shapes"] = tuple(tuple(s) for s in d["shapes"])
    d["argv"] = tuple(d.get("argv") or ())
    d["out"] = None if d.get("out") is None else Path(d["out"])
    return CaptureConfig(**d)
