"""Stopping an A/B when it has its answer (``ab --until``), with a valid error rate.

Looking at the interval after every round and stopping when it excludes zero would
make "B faster" far more likely than 5% for an A/A run: every look is another chance
for noise to cross. So the looks are *planned*: before the first round, the rounds at
which the interval may be looked at are fixed (:func:`plan_looks`, ``L`` of them,
growing by about a quarter each), and each look's interval is computed at level
``alpha / L``. By the union bound, the chance that *any* of the ``L`` intervals misses
the true shift is at most ``alpha``, so whichever look the run stops at -- the first
that meets the target, or the last that fit in the time -- its interval keeps a
confidence of at least ``1 - alpha`` (Bonferroni; conservative, since the looks share
their rounds). A time budget ends the run at the last look the time allowed; when it
stops at a look is decided by the clock, not by the figures, so that look is one of the
planned ones.

The targets (:class:`Until`): an interval width (stop at the first look whose interval
is at most that wide), or a time budget (stop at the first look whose interval excludes
zero, or when the time is up). Both may be given: then the width decides, and the
budget ends the run in any case.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from traceview.errors import UsageError
from traceview.paired import PairedComparison, _critical_k

#: Growth of the rounds from one look to the next.
GROWTH = 1.25


@dataclass(frozen=True)
class LookPlan:
    """The rounds at which the interval is looked at, and each look's level."""

    looks: tuple[int, ...]
    alpha: float  # the error rate kept over all looks
    per_look_alpha: float

    def as_dict(self) -> dict[str, object]:
        return {"looks": list(self.looks), "alpha": self.alpha,
                "per_look_alpha": self.per_look_alpha}


def fewest_rounds(alpha: float) -> int:
    """The fewest rounds whose exact signed-rank interval reaches ``1 - alpha``."""
    n = 1
    while _critical_k(n, alpha)[0] == 0:
        n += 1
    return n


def _looks_from(first: int, last: int, growth: float) -> list[int]:
    looks = [first]
    while looks[-1] < last:
        looks.append(min(last, max(looks[-1] + 2, math.ceil(looks[-1] * growth))))
    return looks


def plan_looks(max_rounds: int, alpha: float = 0.05, growth: float = GROWTH) -> LookPlan:
    """Looks from the fewest rounds an ``alpha / L`` interval needs up to ``max_rounds``.

    ``L`` and the first look depend on each other (more looks, a stricter level, a later
    first look): the smallest ``L`` that holds all its own looks is taken."""
    for count in range(1, max_rounds + 1):
        first = fewest_rounds(alpha / count)
        if first > max_rounds:
            break
        looks = _looks_from(first, max_rounds, growth)
        if len(looks) <= count:
            return LookPlan(looks=tuple(looks), alpha=alpha, per_look_alpha=alpha / count)
    need = fewest_rounds(alpha)
    raise UsageError(f"--until needs at least {max(need + 2, 10)} rounds to plan its looks "
                     f"(--rounds {max_rounds}); give more --rounds")


@dataclass(frozen=True)
class Until:
    """What ``--until`` asked for: an interval width (ns), a time budget (s), or both."""

    width_ns: int | None = None
    seconds: float | None = None

    def as_dict(self) -> dict[str, object]:
        return {"width_ns": self.width_ns, "seconds": self.seconds}

    def reached(self, c: PairedComparison) -> str | None:
        """Why the run may stop at this look, or None to go on."""
        if c.ci_low_ns is None or c.ci_high_ns is None:
            return None
        width = c.ci_high_ns - c.ci_low_ns
        if self.width_ns is not None:
            if width <= self.width_ns:
                return f"interval {width / 1e3:.2f} us wide, target {self.width_ns / 1e3:g} us"
            return None
        if c.verdict != "cannot tell":
            return "the interval excludes zero"
        return None


_UNITS_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000}
_UNITS_S = {"s": 1.0, "min": 60.0, "m": 60.0}


def parse_until(items: list[str] | None) -> Until | None:
    """``--until 2us`` (interval width), ``--until 90s`` / ``2min`` (time budget)."""
    if not items:
        return None
    width, seconds = None, None
    for item in items:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-z]+)\s*", item.lower())
        if not m or (m[2] not in _UNITS_NS and m[2] not in _UNITS_S) or float(m[1]) <= 0:
            raise UsageError(f"--until {item!r}: give an interval width (2us, 500ns) or a "
                             "time budget (90s, 2min)")
        if m[2] in _UNITS_NS:
            width = round(float(m[1]) * _UNITS_NS[m[2]])
        else:
            seconds = float(m[1]) * _UNITS_S[m[2]]
    return Until(width_ns=width, seconds=seconds)
