"""What the decoder hands the model: complete ('X') events as columns, and their args
kept as raw bytes, decoded only when the model reads them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from traceview.io.events import decode_args

# Event categories whose args the model reads (kept as raw bytes, decoded on access).
ARGS_KEPT_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "cpu_op", "cuda_runtime",
                            "cuda_driver", "user_annotation", "gpu_user_annotation"})


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
    corr: np.ndarray  # int64, -1 when absent
    stream: np.ndarray  # int64, -1 when absent
    device: np.ndarray  # int64, -1 when absent
    args: LazyArgs
