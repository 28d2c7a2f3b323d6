"""What the decoder hands the model, finished: complete events as columns (``X`` events
and the ``B``/``E`` pairs, ids already coerced, times in integer ns with ``MISSING`` where
unusable), their args kept as raw bytes and decoded only when read, what the other
phases said (flows, thread names, counts), the metadata and the problems met.

This is the whole io -> model interface: the model reads these fields and never calls
io's decode helpers.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from traceview.io.events import decode_args
from traceview.io.exact_time import MISSING

__all__ = ["ARGS_KEPT_CATS", "LEGACY_CATS", "MISSING", "Columns", "Decoded", "LazyArgs", "Phases"]

# The category of every event ``explain --annotate`` adds to a trace (io/annotations.py
# says why the loader and the model leave them out).
ANNOTATION_CAT = "traceview"

# PyTorch 1.8-1.9 (the first Kineto releases) wrote capitalised categories for the same
# events the later profiler writes in lower case: a kernel on stream 7 was ``Kernel``
# under pid 0 and tid ``"stream 7"``. The model reads them as their modern names, so such
# a trace has device work, launches and ops (HTA reads them the same way).
LEGACY_CATS = {"Kernel": "kernel", "Memcpy": "gpu_memcpy", "Memset": "gpu_memset",
               "Runtime": "cuda_runtime", "Operator": "cpu_op"}

# Event categories whose args the model reads (kept as raw bytes, decoded on access).
ARGS_KEPT_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "cpu_op", "cuda_runtime",
                            "cuda_driver", "user_annotation", "gpu_user_annotation", "cuda_sync",
                            *LEGACY_CATS})


class LazyArgs(Mapping[int, dict[str, Any]]):
    """Row -> decoded ``args`` dict, decoded on first access from the kept raw bytes."""

    def __init__(self, raw: dict[int, bytes] | None = None) -> None:
        self._raw: dict[int, bytes] = raw or {}
        self._cache: dict[int, dict[str, Any]] = {}

    def __getitem__(self, row: int) -> dict[str, Any]:
        hit = self._cache.get(row)
        if hit is None:
            hit = self._cache[row] = decode_args(self._raw[row])
        return hit

    def __iter__(self) -> Iterator[int]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def keys_present(self, rows: list[int], keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` the args of any of ``rows`` have at the top level. The rows'
        raw bytes are joined once for all the keys and searched in C; only rows whose
        bytes hold a key's text are decoded (asking this of every op of a big trace must
        not decode them all, nor gather their bytes once per key)."""
        raw = self._raw
        blob = b"\n".join(filter(None, map(raw.get, rows)))
        found = set()
        for key in keys:
            needle = key.encode()
            if needle in blob and any(needle in raw[r] and key in self[r]
                                      for r in rows if r in raw):
                found.add(key)
        return found

    def subset(self, rows: dict[int, int]) -> LazyArgs:
        """Renumbered copy: ``rows`` maps old row -> new row (dropped rows absent)."""
        return LazyArgs({rows[r]: b for r, b in self._raw.items() if r in rows})

    def with_items(self, extra: dict[int, bytes]) -> LazyArgs:
        out = LazyArgs(dict(self._raw))
        out._raw.update(extra)
        return out


@dataclass
class Columns:
    """Complete ('X') events as columns, in file order. ``key`` codes index ``keys``,
    tuples ``(ph, cat, pid, tid)``; ``name`` codes index ``names``."""

    key: np.ndarray
    name: np.ndarray
    ts: np.ndarray  # int64 ns, MISSING where absent or unusable
    dur: np.ndarray  # int64 ns, MISSING where absent
    # the link ids, -1 when absent: int32 when every one of them fits, else int64
    corr: np.ndarray
    stream: np.ndarray
    device: np.ndarray
    args: LazyArgs


FlowKey = tuple[int | str, int | str, int]  # (pid, tid, ts ns) of a flow event


@dataclass
class Phases:
    """What the non-X events said, besides the slices they added to the columns."""

    flow_start: dict[FlowKey, int] = field(default_factory=dict)  # 's' events
    flow_end: dict[FlowKey, int] = field(default_factory=dict)  # 'f' events
    # ("thread_name" | "process_name", pid, tid) -> name
    thread_names: dict[tuple[str, int | str, int | str], str] = field(default_factory=dict)
    instants: int = 0
    # diagnostic code -> events: unmatched-end, unclosed-begin, other-phase, unknown-phase
    counts: dict[str, int] = field(default_factory=dict)


@dataclass
class Decoded:
    """What the file held: X events and ``B``/``E`` pairs as columns, what the other
    phases said, metadata, and problems met while decoding (turned into diagnostics by
    the model)."""

    path: str
    keys: list[tuple[str, str, int | str, int | str]]  # (ph, cat, pid, tid) per key code
    names: list[str]
    x: Columns
    phases: Phases
    metadata: dict[str, Any]
    problems: list[tuple[str, int, str]] = field(default_factory=list)
    compressed_bytes: int = 0
    decoded_bytes: int = 0
    # where the event array's closing ']' is in the text (from its first byte; None for
    # a text cut short): ``--annotate`` streams the text through and adds its events there
    events_end: int | None = None
