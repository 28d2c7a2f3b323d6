"""The straggler rule: which ranks stand out from the others on a metric.

**Stragglers.** For each metric in :data:`STRAGGLER_METRICS` over the ranks that have a
value, with ``m`` the median and ``MAD`` the median absolute deviation from ``m`` (both
the project's one median, ``stats.median``: the nearest-rank p50, so for an even count
the lower of the two middle values, a value one rank measured), a rank
stands out when ``|x - m| > STRAGGLER_MAD_K * MAD`` **and** ``|x - m| >=
STRAGGLER_MIN_RELATIVE * |m|``. The MAD test is robust: one or two slow ranks cannot drag
the median or the MAD toward themselves, as they would a mean and a standard deviation.
The relative floor keeps out differences too small to matter when the ranks agree very
closely (with identical ranks the MAD is 0, and any difference at all would pass the
first test). Fewer than :data:`STRAGGLER_MIN_RANKS` ranks with a value: no rule applies
(with two ranks, neither is "the odd one"). A straggler is in a minority: when the two
tests pick out half the ranks (they cannot pick more), the ranks have split into two
halves, and which half is odd is arbitrary (the lower median sits in the lower half);
none is named on that metric, and a warning says so. The per-call API p50 counts only when it is
*above* the median (a straggler is slow; an unusually fast rank is not one); the device
busy share counts both ways (a starved device and an overloaded one both mark a rank
that does not do what the others do). ``docs/ranks.md`` has the reasoning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from traceview.stats import median

# A rank stands out when it is more than this many median absolute deviations from the
# median across ranks ...
STRAGGLER_MAD_K = 3.0
# ... and at least this far from the median, relative to it.
STRAGGLER_MIN_RELATIVE = 0.10
# The rule needs this many ranks with a value.
STRAGGLER_MIN_RANKS = 3
# metric -> which side counts: "above", "below" or "both".
STRAGGLER_METRICS = {
    "device_busy_share": "both",
    "api_p50_ns": "above",
}
# Rounding of the shares written to JSON.
SHARE_DIGITS = 6
INF = float("inf")


@dataclass
class Outlier:
    metric: str
    value: float | int
    median: float
    mad: float
    relative: float  # (value - median) / |median|; inf when the median is 0
    direction: Literal["above", "below"]

    def as_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "value": self.value, "median": plain_number(self.median),
                "mad": plain_number(self.mad),
                "relative": None if self.relative in (INF, -INF) else round_share(self.relative),
                "direction": self.direction}


def round_share(x: float) -> float:
    return x if x in (INF, -INF) else round(x, SHARE_DIGITS)


def plain_number(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round_share(x)


def outliers(values: Sequence[float],
             side: str = "both") -> tuple[dict[str, Any], dict[int, Outlier], bool]:
    """The straggler rule over one metric: summary, position -> outlier, and whether the
    values split into two halves (then no position is an outlier)."""
    if not values:
        return {"n": 0, "median": None, "mad": None, "min": None, "max": None}, {}, False
    m = median(values)
    mad = median([abs(x - m) for x in values])
    summary = {"n": len(values), "median": plain_number(m), "mad": plain_number(mad),
               "min": min(values), "max": max(values)}
    if len(values) < STRAGGLER_MIN_RANKS:
        return summary, {}, False
    apart = [i for i, x in enumerate(values)
             if abs(x - m) > STRAGGLER_MAD_K * mad and abs(x - m) >= STRAGGLER_MIN_RELATIVE * abs(m)]
    if 2 * len(apart) >= len(values):  # half the ranks against the other half
        return summary, {}, True
    found: dict[int, Outlier] = {}
    for i in apart:
        x = values[i]
        dev = x - m
        direction: Literal["above", "below"] = "above" if dev > 0 else "below"
        if side != "both" and direction != side:
            continue
        rel = dev / abs(m) if m else (INF if dev > 0 else -INF)
        found[i] = Outlier("", x, m, mad, rel, direction)
    return summary, found, False
