"""``serve --attribute``: how much of a backend swap's effect each swapped op causes.

A FlagGems engineer who sees TPOT go from 7 ms to 53 ms needs to know where those 46 ms
come from, op by op, with an interval, so the fix goes where the time is. This module is
the parent side (no torch): it plans which op sets to measure, runs them, and splits the
whole effect into parts.

**What is measured.** One fresh process per round (:func:`run_stage`) builds the model
once and then measures, in a seeded order that changes every round, one pass of the
workload under each *configuration*: torch eager (every op off: the baseline), the
whole backend exactly as side B runs it (``use_gems(exclude=...)``), and op groups
switched on alone (``use_gems(include=group)``, FlagGems' ``only_enable``). A group's
effect in a round is its figure minus the baseline's in the same process, so a
process's own speed (clocks, allocator, neighbours) cancels in every difference, as the
A/B's rounds cancel drift.

**Eager is measured ``baseline_passes`` (3) times per process**, at places of the
shuffled order like any configuration, and the round's baseline is their median. Every
part's difference in a round subtracts that one baseline, so its noise does not average
out across parts: it enters the sum of N parts N times and the interaction (whole minus
that sum) N - 1 times; on a GPU one slow eager pass moved a 20-part interaction by tens
of ms (docs/serving.md). The median of three passes ignores one slow pass.

**Which groups (the bisection).** The candidate ops are those the model calls
(:mod:`.opcalls`, as the correctness bisect lists them), less the excluded ones.
Screening stages (``screen_rounds`` processes each) start from the two halves of the
set; a group whose TPOT effect is at least ``min_share`` of the whole is split in two
for the next stage, the largest ``max_split`` first, until every such group is one op or
the time budget would not leave room for the final stage. The final stage measures the
baseline, the whole backend and every leaf group together for ``rounds`` processes:
its numbers are the result.

**The identity.** Per figure, each part's contribution is the Hodges-Lehmann estimate
of its per-round differences (rounded to whole ns), the whole effect likewise, and the
*interaction* is defined as the whole minus the sum of the parts, so
``sum(parts) + interaction == whole`` holds exactly (:func:`check_identity`). Its interval
comes from the per-round residuals ``whole_r - sum(part_r)``, the same rounds. A positive
interaction means the ops cost more together than alone (or ops the model reaches that
the op list does not name, such as composites' decompositions, which only the whole
backend switches on); a negative one, less.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from traceview.errors import CaptureError
from traceview.paired import compare
from traceview.report.claims import Claim, Figure, pointer, rel
from traceview.serve import metrics
from traceview.serve.launch import Launcher
from traceview.serve.spec import Variant
from traceview.units import fmt_signed_ns

Log = Callable[[str], None]

#: The figures split by op: decode speed, first-token latency, and wall (throughput is
#: a fixed token count over wall, as in the A/B).
FIGURES = ("tpot_p50", "ttft_p50", "wall")
#: The figure the bisection splits on: what a decode-bound backend swap changes most.
SPLIT_ON = "tpot_p50"
BASELINE = "eager"
#: The repeated baseline passes' names (``eager``, ``eager#2``, ...): '#' is in no op name.
PASS_MARK = "#"
WHOLE = "whole"
IDENTITY = ("sum(parts[].figures[f].estimate_ns) + interaction[f].estimate_ns == "
            "whole[f].estimate_ns, exactly, for every figure f")


class Estimate(msgspec.Struct, frozen=True, kw_only=True):
    """One effect on one figure: B-config minus eager in the same process, per round."""

    estimate_ns: int  # Hodges-Lehmann, whole ns (the interaction's: the residual)
    ci_low_ns: float | None  # exact signed-rank interval; None with too few rounds
    ci_high_ns: float | None
    confidence: float | None
    excludes_zero: bool
    diffs_ns: list[int]  # per round, in round order


class Part(msgspec.Struct, frozen=True, kw_only=True):
    """One leaf of the bisection: an op alone, or a group not split further."""

    name: str  # the op, or "a+b+c" for a group
    ops: list[str]
    figures: dict[str, Estimate]
    share_of_whole: float | None  # this part's TPOT estimate over the whole's
    host_ns_per_step_b: int | None  # profiled self host time of its ATen ops, side B
    host_ns_per_step_a: int | None  # the same ATen ops under eager
    aten: list[str]  # the ATen op names its ops register for


class Stage(msgspec.Struct, frozen=True, kw_only=True):
    index: int
    kind: str  # "screen" or "final"
    configs: list[str]
    rounds: int
    orders: list[list[str]]  # per round, the order its process measured the configs in
    estimates_ns: dict[str, int]  # per group, its SPLIT_ON effect in this stage
    wall_ns: int


class Attribution(msgspec.Struct, frozen=True, kw_only=True):
    """``serve --attribute``'s result (docs/serving.md)."""

    figures: list[str]
    units: list[str]  # the candidate ops (FlagGems names)
    whole: dict[str, Estimate]
    parts: list[Part]  # largest TPOT contribution first
    interaction: dict[str, Estimate]
    identity: str
    stages: list[Stage]
    rounds: int
    screen_rounds: int
    min_share: float
    budget_s: float | None
    spent_ns: int
    screening_ended: str  # why no further group was split
    claims: list[dict[str, Any]]
    environment: dict[str, Any] | None = None  # versions and device, as a process saw them
    # eager passes per process, their median the round's baseline (documents written
    # before eager was repeated read 1)
    baseline_passes: int = 1


def check_identity(att: Attribution) -> list[str]:
    """Every figure for which the parts and the interaction do not add up to the whole."""
    bad = []
    for f in att.figures:
        total = sum(p.figures[f].estimate_ns for p in att.parts) + att.interaction[f].estimate_ns
        if total != att.whole[f].estimate_ns:
            bad.append(f"{f}: parts + interaction = {total}, whole = "
                       f"{att.whole[f].estimate_ns}")
    return bad


def halves(group: Sequence[str]) -> list[tuple[str, ...]]:
    """A group split in two (the first half the smaller), order kept."""
    k = len(group) // 2
    return [tuple(group[:k]), tuple(group[k:])]


def config_name(ops: Sequence[str]) -> str:
    return "+".join(ops)


def _figure(rep: metrics.RepetitionFigures, name: str) -> int:
    value = rep.figure(name)
    if value is None:
        raise CaptureError(f"attribution: figure {name} missing from a measured pass")
    return int(value)


def estimate(base: Sequence[int], other: Sequence[int], alpha: float) -> Estimate:
    """``other - base`` per round: the paired estimate and interval of :mod:`traceview.paired`."""
    c = compare(list(base), list(other), alpha=alpha)
    if c.estimate_ns is None:
        raise CaptureError("attribution: a configuration was measured in no round")
    low, high = c.ci_low_ns, c.ci_high_ns
    return Estimate(estimate_ns=round(c.estimate_ns), ci_low_ns=low, ci_high_ns=high,
                    confidence=c.confidence,
                    excludes_zero=low is not None and high is not None and
                    (low > 0 or high < 0),
                    diffs_ns=[int(b - a) for a, b in zip(base, other, strict=True)])


class Measured(msgspec.Struct, frozen=True, kw_only=True):
    """One stage's raw result: per config, per round, the pass's figures; and costs."""

    values: dict[str, dict[str, list[int]]]  # config -> figure -> per round
    cost_ns: dict[str, int]  # config -> its slowest warm-up + pass over the rounds
    setup_ns: int  # the slowest process's model build
    orders: list[list[str]]
    wall_ns: int
    environment: dict[str, Any] | None = None


def baseline_passes(configs: Sequence[tuple[str, tuple[str, ...] | None]], passes: int
                    ) -> list[tuple[str, tuple[str, ...] | None]]:
    """The configs with eager's extra passes added (``eager#2`` ...), each a config of
    its own in the shuffle."""
    extra = [(f"{BASELINE}{PASS_MARK}{k}", ()) for k in range(2, passes + 1)]
    return [*configs, *extra] if any(n == BASELINE for n, _ in configs) else list(configs)


def run_stage(configs: Sequence[tuple[str, tuple[str, ...] | None]], rounds: int,
              seed: int, variant: Variant, base_task: dict[str, Any], launch: Launcher,
              log: Log, what: str, passes: int = 1) -> Measured:
    """``rounds`` fresh processes, each measuring every config once in its own order,
    eager ``passes`` times (its figure per round: the median of its passes).

    A config is ``(name, ops)``: ``ops`` ``()`` is eager (the backend off), ``None`` the
    whole backend as side B runs it, otherwise those ops alone."""
    t0 = time.perf_counter_ns()
    configs = baseline_passes(configs, passes)
    values: dict[str, dict[str, list[int]]] = {n: {f: [] for f in FIGURES} for n, _ in configs}
    cost: dict[str, int] = {n: 0 for n, _ in configs}
    setup = 0
    orders = []
    env = None
    for r in range(rounds):
        order = list(configs)
        random.Random(seed * 1_000_003 + r).shuffle(order)
        orders.append([n for n, _ in order])
        log(f"attribution {what}: round {r + 1}/{rounds}, {len(order)} configurations")
        task = dict(base_task, task="attribute", variant=variant.to_dict(),
                    configs=[{"name": n, "include": None if ops is None else list(ops)}
                             for n, ops in order])
        out = launch(variant, task)
        if out.value is None:
            raise CaptureError(f"attribution {what}, round {r + 1}: {out.error}")
        setup = max(setup, int(out.value["setup_ns"]))
        env = env or out.value.get("environment")
        for got in out.value["configs"]:
            figs = metrics.figures(metrics.timings_from_raw(got["requests"]))
            for f in FIGURES:
                values[got["name"]][f].append(_figure(figs, f))
            cost[got["name"]] = max(cost[got["name"]], int(got["elapsed_ns"]))
    extra = [n for n in values if n.startswith(BASELINE + PASS_MARK)]
    if extra:
        for f in FIGURES:
            per_pass = [values[n][f] for n in (BASELINE, *extra)]
            values[BASELINE][f] = [_median_int(v) for v in zip(*per_pass, strict=True)]
        cost[BASELINE] = sum(cost.pop(n) for n in (BASELINE, *extra))
        for n in extra:
            del values[n]
    return Measured(values=values, cost_ns=cost, setup_ns=setup, orders=orders,
                    wall_ns=time.perf_counter_ns() - t0, environment=env)


def _median_int(values: Sequence[int]) -> int:
    """The median of a round's eager passes (an odd count is one of them; an even count
    the lower middle one: the baseline is always a measured pass, a whole ns)."""
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


def effects(m: Measured, alpha: float) -> dict[str, dict[str, Estimate]]:
    """Per config other than eager, its effect per figure."""
    base = m.values[BASELINE]
    return {n: {f: estimate(base[f], v[f], alpha) for f in FIGURES}
            for n, v in m.values.items() if n != BASELINE}


class Plan(msgspec.Struct, kw_only=True):
    """The bisection's state between stages (mutable: it is the loop's)."""

    leaves: list[tuple[str, ...]]
    split: list[tuple[str, ...]]
    cost_ns: dict[str, int]
    setup_ns: int = 0
    whole_ns: int | None = None  # the whole effect on SPLIT_ON, from the first stage
    ended: str = ""


def to_split(groups: Sequence[tuple[str, ...]], est: dict[str, int], whole_ns: int | None,
             min_share: float, max_split: int) -> list[tuple[str, ...]]:
    """The groups worth splitting: more than one op and at least ``min_share`` of the
    whole effect (of its absolute value: a backend can be faster), largest first."""
    if not whole_ns:
        return []
    big = [g for g in groups if len(g) > 1
           and abs(est[config_name(g)]) >= min_share * abs(whole_ns)]
    big.sort(key=lambda g: -abs(est[config_name(g)]))
    return big[:max_split]


def final_cost_ns(plan: Plan, rounds: int) -> int:
    """What the final stage would take, from the configs' measured costs (a group not
    measured yet: its parent's cost, an overestimate), and the two profiled processes
    that follow it (each about a process measuring the whole swap)."""
    whole = plan.cost_ns.get(WHOLE, 0)
    per = plan.setup_ns + plan.cost_ns.get(BASELINE, 0) + whole
    per += sum(plan.cost_ns.get(config_name(g), 0) for g in plan.leaves)
    return rounds * per + 2 * (plan.setup_ns + whole)


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    rounds: int = 6
    screen_rounds: int = 3
    min_share: float = 0.1
    max_split: int = 4
    alpha: float = 0.05
    budget_s: float | None = None
    seed: int = 0
    baseline_passes: int = 3


def screen(units: Sequence[str], settings: Settings, run: Callable[..., Measured],
           log: Log, t0: int) -> tuple[Plan, list[Stage]]:
    """The screening stages: halve the groups that carry the effect until each is one
    op, or the budget leaves room only for the final stage."""
    plan = Plan(leaves=[tuple(units)], split=[tuple(units)] if len(units) > 1 else [],
                cost_ns={})
    stages: list[Stage] = []
    deadline = None if settings.budget_s is None else t0 + int(settings.budget_s * 1e9)
    while plan.split:
        new = [h for g in plan.split for h in halves(g)]
        configs: list[tuple[str, tuple[str, ...] | None]] = [(BASELINE, ())]
        if plan.whole_ns is None:
            configs.append((WHOLE, None))
        configs += [(config_name(g), g) for g in new]
        if deadline is not None and stages:
            stage_ns = settings.screen_rounds * (plan.setup_ns + sum(
                plan.cost_ns.get(config_name(g), plan.cost_ns.get(WHOLE, 0))
                for g in plan.split) + plan.cost_ns.get(BASELINE, 0))
            after = Plan(leaves=[g for g in plan.leaves if g not in plan.split] + new,
                         split=[], cost_ns=plan.cost_ns, setup_ns=plan.setup_ns)
            if time.perf_counter_ns() + stage_ns + final_cost_ns(
                    after, settings.rounds) > deadline:
                plan.ended = (f"time budget: another screening stage and the final stage "
                              f"would not fit in {settings.budget_s:g} s")
                break
        m = run(configs, settings.screen_rounds, len(stages), f"screen {len(stages) + 1}")
        est = {n: e[SPLIT_ON].estimate_ns for n, e in effects(m, settings.alpha).items()}
        if plan.whole_ns is None:
            plan.whole_ns = est[WHOLE]
        plan.cost_ns.update(m.cost_ns)
        plan.setup_ns = max(plan.setup_ns, m.setup_ns)
        plan.leaves = [g for g in plan.leaves if g not in plan.split] + new
        stages.append(Stage(index=len(stages), kind="screen", configs=[n for n, _ in configs],
                            rounds=settings.screen_rounds, orders=m.orders,
                            estimates_ns=est, wall_ns=m.wall_ns))
        latest = {config_name(g): v for g, v in _earlier(stages, plan.leaves).items()}
        plan.split = to_split(plan.leaves, latest, plan.whole_ns, settings.min_share,
                              settings.max_split)
        log(f"attribution screen {len(stages)}: whole {SPLIT_ON} {plan.whole_ns} ns; "
            f"splitting {len(plan.split)} group(s)")
    if not plan.ended:
        plan.ended = ("every group carrying at least "
                      f"{settings.min_share:.0%} of the whole TPOT effect is one op"
                      if len(units) > 1 else "one candidate op")
    return plan, stages


def _earlier(stages: Sequence[Stage], leaves: Sequence[tuple[str, ...]]
             ) -> dict[tuple[str, ...], int]:
    """Each leaf's latest screening estimate (leaves measured in an earlier stage)."""
    out = {}
    for g in leaves:
        for s in stages:
            if config_name(g) in s.estimates_ns:
                out[g] = s.estimates_ns[config_name(g)]
    return out


def attribute(units: Sequence[str], settings: Settings, variant: Variant,
              base_task: dict[str, Any], launch: Launcher, log: Log,
              keys: dict[str, list[str]] | None = None) -> Attribution:
    """The whole protocol: screening stages, then the final stage; the result with the
    identity holding exactly (host times are filled in later, :func:`with_host_times`)."""
    t0 = time.perf_counter_ns()
    if not units:
        raise CaptureError("attribution: the model calls none of the backend's ops "
                           "(nothing to attribute)")

    def run(configs: Any, rounds: int, index: int, what: str) -> Measured:
        return run_stage(configs, rounds, settings.seed + index, variant, base_task,
                         launch, log, what, settings.baseline_passes)

    plan, stages = screen(units, settings, run, log, t0)
    leaves = plan.leaves
    configs: list[tuple[str, tuple[str, ...] | None]] = [(BASELINE, ()), (WHOLE, None)]
    configs += [(config_name(g), g) for g in leaves]
    m = run(configs, settings.rounds, len(stages), "final")
    eff = effects(m, settings.alpha)
    stages.append(Stage(index=len(stages), kind="final", configs=[n for n, _ in configs],
                        rounds=settings.rounds, orders=m.orders,
                        estimates_ns={n: e[SPLIT_ON].estimate_ns for n, e in eff.items()},
                        wall_ns=m.wall_ns))
    whole = eff[WHOLE]
    parts = [_part(g, eff[config_name(g)], whole, keys or {}) for g in leaves]
    parts.sort(key=lambda p: -abs(p.figures[SPLIT_ON].estimate_ns))
    interaction = {f: _interaction(m, leaves, f, whole[f], parts, settings.alpha)
                   for f in FIGURES}
    att = Attribution(figures=list(FIGURES), units=list(units), whole=whole, parts=parts,
                      interaction=interaction, identity=IDENTITY, stages=stages,
                      rounds=settings.rounds, screen_rounds=settings.screen_rounds,
                      min_share=settings.min_share, budget_s=settings.budget_s,
                      spent_ns=time.perf_counter_ns() - t0, screening_ended=plan.ended,
                      claims=[], environment=m.environment,
                      baseline_passes=settings.baseline_passes)
    bad = check_identity(att)
    if bad:  # by construction never; a broken invariant must not be printed as a result
        raise AssertionError("attribution identity broken: " + "; ".join(bad))
    return att


def _part(group: tuple[str, ...], figures: dict[str, Estimate], whole: dict[str, Estimate],
          keys: dict[str, list[str]]) -> Part:
    w = whole[SPLIT_ON].estimate_ns
    aten = sorted({"aten::" + k.split(".", 1)[0] for op in group for k in keys.get(op, [])})
    return Part(name=config_name(group), ops=list(group), figures=figures,
                share_of_whole=figures[SPLIT_ON].estimate_ns / w if w else None,
                host_ns_per_step_b=None, host_ns_per_step_a=None, aten=aten)


def _interaction(m: Measured, leaves: Sequence[tuple[str, ...]], f: str,
                 whole: Estimate, parts: Sequence[Part], alpha: float) -> Estimate:
    """The residual ``whole - sum(parts)``: its estimate exactly that of the estimates,
    its interval from the same residual in every round."""
    base = m.values[BASELINE][f]
    per_round = []
    for r, b in enumerate(base):
        summed = sum(m.values[config_name(g)][f][r] - b for g in leaves)
        per_round.append(m.values[WHOLE][f][r] - b - summed)
    c = compare([0] * len(per_round), per_round, alpha=alpha, diffs=per_round)
    low, high = c.ci_low_ns, c.ci_high_ns
    return Estimate(estimate_ns=whole.estimate_ns - sum(p.figures[f].estimate_ns
                                                        for p in parts),
                    ci_low_ns=low, ci_high_ns=high, confidence=c.confidence,
                    excludes_zero=low is not None and high is not None and
                    (low > 0 or high < 0), diffs_ns=per_round)


def host_per_step(diagnosis: dict[str, Any] | None, aten: Sequence[str]) -> int | None:
    """The profiled self host time per decode step of these ATen ops, from a side's
    diagnosis (None: not profiled, or none of them among its top ops)."""
    ops = ((diagnosis or {}).get("decode") or {}).get("host_ops_per_step") or []
    found = [o["self_ns_per_step"] for o in ops if o["name"] in aten]
    return sum(found) if found else None


def with_host_times(att: Attribution, diag_a: dict[str, Any] | None,
                    diag_b: dict[str, Any] | None) -> Attribution:
    """The parts with the profiled host time per step of their ATen ops beside them."""
    parts = [msgspec.structs.replace(p, host_ns_per_step_b=host_per_step(diag_b, p.aten),
                                     host_ns_per_step_a=host_per_step(diag_a, p.aten))
             for p in att.parts]
    return msgspec.structs.replace(att, parts=parts)


LABELS = {"tpot_p50": "TPOT p50", "ttft_p50": "TTFT p50", "wall": "wall"}
#: Parts named in a sentence; the rest are summed into "other parts" (still exact).
NAMED_PARTS = 3


def _interval(e: Estimate) -> str:
    if e.ci_low_ns is None or e.ci_high_ns is None or e.confidence is None:
        return "no interval"
    return (f"{fmt_signed_ns(e.ci_low_ns)}..{fmt_signed_ns(e.ci_high_ns)} at "
            f"{e.confidence:.1%}")


def claims(att: Attribution, root: str = "attribution") -> list[Claim]:
    """One sentence per figure: the whole effect, the largest parts, the other parts
    together and the interaction, asserting that they add up to the whole."""
    out = []
    for f in att.figures:
        base = pointer(root, "whole", f, "estimate_ns")
        figs = [Figure("whole", att.whole[f].estimate_ns, base)]
        words = []
        names = []
        for i, p in enumerate(att.parts[:NAMED_PARTS]):
            e = p.figures[f]
            figs.append(Figure(f"part{i}", e.estimate_ns,
                               pointer(root, "parts", i, "figures", f, "estimate_ns")))
            names.append(f"part{i}")
            words.append(f"{p.name} {fmt_signed_ns(e.estimate_ns)} ({_interval(e)})")
        rest = att.parts[NAMED_PARTS:]
        if rest:
            figs.append(Figure("others", sum(p.figures[f].estimate_ns for p in rest)))
            names.append("others")
            words.append(f"{len(rest)} other part(s) {fmt_signed_ns(figs[-1].value)}")
        inter = att.interaction[f]
        figs.append(Figure("interaction", inter.estimate_ns,
                           pointer(root, "interaction", f, "estimate_ns")))
        text = (f"{LABELS[f]}: the swap's whole effect {fmt_signed_ns(att.whole[f].estimate_ns)}"
                f" ({_interval(att.whole[f])}) = " + " + ".join(words)
                + f" + interaction {fmt_signed_ns(inter.estimate_ns)} ({_interval(inter)})")
        out.append(Claim("attribution-split", text, tuple(figs),
                         (rel("sum", *names, "interaction", "whole"),)))
    return out


def with_claims(att: Attribution, root: str = "attribution") -> Attribution:
    return msgspec.structs.replace(att, claims=[c.as_json() for c in claims(att, root)])
