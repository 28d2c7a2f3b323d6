"""Nesting depths of intervals, and of the intervals inside any one of them, from one sort.

``callfind`` picks the calls among the Python frames that sit a given number of levels
below an enclosing frame (``--calls-depth``), trying the enclosing frames from the
innermost out. Done directly, each try copies the frames inside that frame and sorts
their ends: on a real 450 MB ``torch.compile`` trace (1.7 M frames on the main
thread) two tries cost 0.26 s and their temporaries (eight arrays of 1-1.7 M int64)
were the run's peak memory. ``Levels`` sorts once, for the depths among all frames,
and derives the depths inside a frame from them with counts over the few frames that
are open when it starts or that outlive it (see ``Levels.at``).
"""

from __future__ import annotations

import numpy as np


def nesting_depth(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Depth of each interval (sorted by start, longest first) among these intervals:
    how many earlier ones are still open at its start."""
    return np.arange(starts.size) - np.searchsorted(np.sort(ends), starts, side="right")


def inside(starts: np.ndarray, ends: np.ndarray, p: int | None) -> np.ndarray:
    """Positions of the intervals after ``p`` that lie within it (every one for None)."""
    if p is None:
        return np.arange(starts.size)
    after = np.arange(p + 1, starts.size)
    return after[(starts[after] >= starts[p]) & (ends[after] <= ends[p])]


def at_level_reference(starts: np.ndarray, ends: np.ndarray, p: int | None,
                       level: int) -> np.ndarray:
    """The definition ``Levels.at`` computes: the intervals inside ``p`` whose
    ``nesting_depth`` among the intervals inside ``p`` is ``level``."""
    idx = inside(starts, ends, p)
    if idx.size == 0:
        return idx
    return idx[nesting_depth(starts[idx], ends[idx]) == level]


class Levels:
    """``at_level_reference`` for many ``p`` over the same intervals, with one sort.

    Intervals are sorted by start (ties in any fixed order) and none ends before it
    starts (the model drops negative durations). Write I for the intervals inside p,
    D for ``nesting_depth`` over all intervals and d for it over I. For i in I, D_i - d_i
    counts the intervals outside I that D counts and d does not:

    - the j <= p still open at i's start (en_j > st_i): the frames open around p;
    - the j between p and i that end after p (they start inside p, so they are open at
      st_i too): the frames that outlive their parent.

    Nothing else differs: a j outside I that ended by st_i and is not before p would
    start at or after st_i (sorted starts) and so lie within p. Both counts come from
    small sets: the frames open at p's start and the overhanging frames within p's span.
    Unsorted starts (a window that clips them) take the reference path.
    """

    def __init__(self, starts: np.ndarray, ends: np.ndarray) -> None:
        self.starts, self.ends = starts, ends
        self.sorted = starts.size < 2 or bool((starts[1:] >= starts[:-1]).all())
        self._depth: np.ndarray | None = None

    @property
    def depth(self) -> np.ndarray:
        """``nesting_depth`` over all intervals, made with two arrays of their size
        instead of four (the subtraction goes a block at a time)."""
        if self._depth is None:
            sorted_ends = np.sort(self.ends)
            d = np.searchsorted(sorted_ends, self.starts, side="right")
            del sorted_ends
            block = 1 << 18
            for lo in range(0, d.size, block):
                hi = min(d.size, lo + block)
                np.subtract(np.arange(lo, hi), d[lo:hi], out=d[lo:hi])
            self._depth = d
        return self._depth

    def at(self, p: int | None, level: int) -> np.ndarray:
        """Positions (ascending) equal to ``at_level_reference(starts, ends, p, level)``."""
        st, en = self.starts, self.ends
        if not self.sorted:
            return at_level_reference(st, en, p, level)
        if p is None:
            return np.flatnonzero(self.depth == level)
        lo = p + 1  # every later interval starts at or after st_p; the ones inside p
        hi = int(np.searchsorted(st, en[p], side="right"))  # start by en_p
        if hi <= lo:
            return np.zeros(0, np.int64)
        member = en[lo:hi] <= en[p]
        outlive = np.flatnonzero(~member)  # relative to lo
        before = en[:lo]
        open_ends = np.sort(before[before > st[p]])  # p and the frames open around it
        d_all = self.depth[lo:hi]
        band = member & (d_all >= level) & (d_all <= level + open_ends.size + outlive.size)
        cand = np.flatnonzero(band)
        if cand.size == 0:
            return cand
        opened = open_ends.size - np.searchsorted(open_ends, st[lo + cand], side="right")
        crossed = np.searchsorted(outlive, cand, side="left")
        return lo + cand[d_all[cand] - opened - crossed == level]
