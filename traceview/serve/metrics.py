"""Serving figures from raw per-request timestamps, with relations that hold exactly.

A child records, for every request, three integer-ns timestamps on one clock
(``time.perf_counter_ns``, relative to the workload's start, which is the first arrival):
``arrival_ns``, ``first_token_ns`` (the first generated token is on the host) and
``last_token_ns`` (the last one is), and ``tokens``, the number of output tokens ``n``.
From those, per request:

* ``ttft_ns = first_token_ns - arrival_ns``;
* ``tpot_ns = (last_token_ns - first_token_ns) // (n - 1)``: time per output token after
  the first, floored to a whole nanosecond;
* ``e2e_ns = ttft_ns + (n - 1) * tpot_ns``: exact by definition; it is the measured
  ``last_token_ns - arrival_ns`` less ``e2e_rounding_ns = (last - first) % (n - 1)``,
  which is below one nanosecond per token and recorded beside it.

Per repetition: ``wall_ns`` = the last request's last token (the first arrival is 0),
``output_tokens`` = sum of ``n``, ``output_tokens_per_s = output_tokens * 1e9 / wall_ns``
and ``requests_per_s = requests * 1e9 / wall_ns`` (the only floats, computed from the two
recorded integers so anyone can recompute them), and nearest-rank p50/p90/p99 of
``ttft_ns``, ``tpot_ns`` and ``e2e_ns`` over the requests (``traceview.stats``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from traceview.stats import summarize

#: The per-request latency figures, in the order they are shown.
LATENCIES = ("ttft", "tpot", "e2e")
PERCENTILES = ("p50", "p90", "p99")


@dataclass(frozen=True)
class RequestTiming:
    index: int
    batch: int
    arrival_ns: int
    first_token_ns: int
    last_token_ns: int
    tokens: int

    @property
    def ttft_ns(self) -> int:
        return self.first_token_ns - self.arrival_ns

    @property
    def tpot_ns(self) -> int:
        return (self.last_token_ns - self.first_token_ns) // (self.tokens - 1)

    @property
    def e2e_rounding_ns(self) -> int:
        return (self.last_token_ns - self.first_token_ns) % (self.tokens - 1)

    @property
    def e2e_ns(self) -> int:
        return self.ttft_ns + (self.tokens - 1) * self.tpot_ns

    def to_dict(self) -> dict[str, int]:
        return {"index": self.index, "batch": self.batch, "arrival_ns": self.arrival_ns,
                "first_token_ns": self.first_token_ns, "last_token_ns": self.last_token_ns,
                "tokens": self.tokens, "ttft_ns": self.ttft_ns, "tpot_ns": self.tpot_ns,
                "e2e_ns": self.e2e_ns, "e2e_rounding_ns": self.e2e_rounding_ns}


def timings_from_raw(raw: Sequence[dict[str, Any]]) -> list[RequestTiming]:
    """Child records -> RequestTiming, checking the clock made sense."""
    out = []
    for r in raw:
        t = RequestTiming(index=int(r["index"]), batch=int(r["batch"]),
                          arrival_ns=int(r["arrival_ns"]),
                          first_token_ns=int(r["first_token_ns"]),
                          last_token_ns=int(r["last_token_ns"]), tokens=int(r["tokens"]))
        if t.tokens < 2 or not t.arrival_ns <= t.first_token_ns <= t.last_token_ns:
            raise ValueError(f"request {t.index}: timestamps out of order or fewer than 2 "
                             f"tokens ({r})")
        out.append(t)
    return out


@dataclass(frozen=True)
class RepetitionFigures:
    """One repetition (one fresh process): the figures over its requests."""

    requests: int
    output_tokens: int
    wall_ns: int
    latencies: dict[str, dict[str, int | None]]  # "ttft" -> {"p50": ..., "p90", "p99", ...}

    @property
    def output_tokens_per_s(self) -> float | None:
        return self.output_tokens * 1e9 / self.wall_ns if self.wall_ns else None

    @property
    def requests_per_s(self) -> float | None:
        return self.requests * 1e9 / self.wall_ns if self.wall_ns else None

    def figure(self, name: str) -> int | None:
        """``"wall"`` or ``"ttft_p50"``-style names, integer ns (the A/B's units)."""
        if name == "wall":
            return self.wall_ns
        lat, _, pct = name.rpartition("_")
        return self.latencies[lat][pct]

    def to_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "output_tokens": self.output_tokens,
                "wall_ns": self.wall_ns, "output_tokens_per_s": self.output_tokens_per_s,
                "requests_per_s": self.requests_per_s, "latency_ns": self.latencies}


def figures(timings: Sequence[RequestTiming]) -> RepetitionFigures:
    if not timings:
        raise ValueError("no requests")
    lat = {}
    for name in LATENCIES:
        s = summarize([getattr(t, f"{name}_ns") for t in timings]).as_dict()
        lat[name] = s
    return RepetitionFigures(requests=len(timings),
                             output_tokens=sum(t.tokens for t in timings),
                             wall_ns=max(t.last_token_ns for t in timings),
                             latencies=lat)


#: The figures an A/B compares, all integer ns where lower is better. ``wall`` stands
#: for both throughputs: every repetition produces the same tokens and requests, so
#: throughput is a fixed count over ``wall``.
AB_FIGURES = ("wall",) + tuple(f"{lat}_{p}" for lat in LATENCIES for p in PERCENTILES)
