"""One process's estimate of B - A from its alternating blocks, robust to drift.

``ab --same-process`` (and ``ab --reference``) measure two calls in one process in
blocks ordered A B, B A, A B, ... (:func:`traceview.ab.ab_pair_child.block_order`).
The difference of the two sides' medians over all their calls is not robust to what a
process does over its life: on the H200 one process in ten drifted so that a planted
+1 us read -8.4 us, and one such round decides a 10-round verdict.

The estimate here uses only *neighbouring* blocks. Pair ``i`` is A's block ``i`` and
B's block ``i``, run back to back; its difference ``d_i = B_i - A_i`` (of the blocks'
medians) sees only the drift within two blocks. Pairs run A then B for even ``i`` and
B then A for odd ``i``. The round's estimate is the mean of the median ``d`` over the
A->B pairs and the median ``d`` over the B->A pairs:

* a drift that is linear over the process adds ``+g`` to every A->B pair and ``-g`` to
  every B->A pair (B ran later, or earlier, by one block): it cancels in the mean, as
  does a carry-over (the second block of a pair always faster or slower);
* a step (the process changing state once) or a burst touches one or two pairs, which
  the medians leave out.

Medians are the project's one median (:func:`traceview.stats.median`); the mean of the
two is rounded to an integer nanosecond.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from traceview.stats import median


@dataclass(frozen=True)
class BlockPairEstimate:
    """B - A of one process from its neighbouring blocks (integer ns)."""

    estimate_ns: int
    a_then_b_ns: int  # median d over the pairs run A then B
    b_then_a_ns: int  # median d over the pairs run B then A
    pairs: int


def pair_differences(a_blocks: Sequence[int], b_blocks: Sequence[int]) -> list[int]:
    """``B_i - A_i`` per pair, in run order."""
    if len(a_blocks) != len(b_blocks) or not a_blocks:
        raise ValueError(f"blocks per side differ or are missing: {len(a_blocks)} A, "
                         f"{len(b_blocks)} B")
    return [int(b) - int(a) for a, b in zip(a_blocks, b_blocks, strict=True)]


def estimate(a_blocks: Sequence[int], b_blocks: Sequence[int]) -> BlockPairEstimate:
    """The process's B - A from block medians in run order (A B, B A, ...: pair ``i``
    runs A first when ``i`` is even). One pair only: its difference."""
    d = pair_differences(a_blocks, b_blocks)
    ab = [x for i, x in enumerate(d) if i % 2 == 0]
    ba = [x for i, x in enumerate(d) if i % 2 == 1] or ab
    m_ab, m_ba = int(median(ab)), int(median(ba))
    return BlockPairEstimate(estimate_ns=round((m_ab + m_ba) / 2), a_then_b_ns=m_ab,
                             b_then_a_ns=m_ba, pairs=len(d))
