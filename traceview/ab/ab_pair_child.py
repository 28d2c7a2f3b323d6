"""One round of ``traceview ab --same-process``: both variants in one fresh process.

Why: on a noisy host a whole process can land in a fast or a slow state and keep it
(measured on the H200: per-process medians of the same FlagGems call in two modes, ~85 us
and ~140 us, on both sides; the paired difference of two fresh processes then swings by
+-50 us and a 12 us change needs over 100 rounds). Two variants that can live in one
interpreter -- two implementations, or two user callables -- share that state when
measured in the same process, so it cancels in their difference.

Reads ``{"a": config, "b": config, "blocks": K}`` (``runner.wire`` configs; with
``"block_ns": T`` the calls per block are chosen here, :func:`block_calls`) on
stdin, with the round's number as ``"round"``. Builds each side's seeded inputs and
implementation (A first in even rounds, B first in odd ones: :func:`build_order`), checks
each first output against the float64 reference, warms both up, then runs ``K`` blocks per side (``K``
even, 2K in all) in the order A B, B A, A B, ... (:func:`block_order`: each side goes
first in half of the pairs); a block is one side's ``baseline_n`` (or the chosen
number of) synchronized calls and one amortized batch. Per side: the median of
all its synchronized calls, each block's median (``blocks_full_ns``, in run order), the
median of its blocks' amortized figures, and (CUDA) the
CUDA-graph device time at the end, both sides' graphs replayed alternately
(``baseline.device_per_op_interleaved``). Prints one JSON line ``{"A": block, "B": block,
"pair_estimate_ns": ..., "cpu": ...}`` or ``{"error": ..., "exit_code": N}``;
``pair_estimate_ns`` is the round's B - A from neighbouring blocks
(:mod:`traceview.multi.block_pairs`: robust to a process that drifts), the figure ``ab``
judges.

``ab --reference``: :func:`measure_against_reference` runs one side's call against a
reference call (the same in both sides' processes) in the same blocks, so a process's
own fast or slow state, shared by both calls, leaves the side's figure
``vs_reference_ns`` (side - reference, from neighbouring blocks).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from traceview.multi import block_pairs
from traceview.stats import median

#: The length of a block in time when the calls per block are chosen (``ab
#: --same-process`` without ``--baseline-n``). On the H200 a process flips between a fast
#: and a slow state every few milliseconds (24 vs 37 us per call for the planted-delay
#: add); a block that straddles a flip reads the mixture, and with blocks of 100 calls
#: (2.5 ms) one or two rounds in ten read -3.7 to +8.2 us for a planted +1 us. Blocks of
#: 5 calls of that add, about 150 us, resolved it in 10 of 10 runs (docs/ab.md): the
#: block's length in time is what matters, so a call of another length gets as many
#: calls as fill about this long.
BLOCK_NS = 150_000
#: The pilot that times the call before the blocks, to choose their length (not used in
#: any figure): synchronized calls, alternating sides, for at least ``PILOT_NS`` and
#: ``PILOT_CALLS`` calls per side (at most ``PILOT_MAX_CALLS``). A pilot by time, not by
#: count: a few calls fit inside one preemption of a loaded host, and every one of them
#: would then be the preemption's.
PILOT_NS = 20_000_000
PILOT_CALLS = 20
PILOT_MAX_CALLS = 10_000
#: The most calls in one block (a call of a few hundred ns on the CPU).
MAX_BLOCK_CALLS = 1000


def block_calls(call_ns: int, block_ns: int = BLOCK_NS) -> int:
    """Calls per block so that a block lasts about ``block_ns``: ``block_ns / call_ns``
    rounded to the nearest whole call, at least 1 (a call longer than a block is a
    block of its own) and at most :data:`MAX_BLOCK_CALLS`. ``call_ns`` is the slower
    side's call (:func:`pilot_call_ns`), so neither side's block runs much longer."""
    if call_ns <= 0:
        return MAX_BLOCK_CALLS
    return max(1, min(MAX_BLOCK_CALLS, (2 * block_ns + call_ns) // (2 * call_ns)))


def pilot_call_ns(calls: dict[str, Any], timed: Any) -> int:
    """The slower side's lower quartile of its synchronized calls over the pilot
    (:data:`PILOT_NS`): ``timed(call)`` gives one call's samples; the sides alternate
    call by call. A lower quartile, not the median: a busy host only ever makes calls
    slower, and on this project's shared 2-core CPU machine a slow spell of 8 ms calls
    sometimes filled more than half of a 20 ms pilot (1 call per block chosen where the
    other processes chose 15-19); a process's own fast and slow states (24 and 37 us on
    the H200) give 6 and 4 calls either way, blocks of about the same length."""
    import time

    pilot: dict[str, list[int]] = {label: [] for label in calls}
    end = time.perf_counter_ns() + PILOT_NS
    while (len(pilot[next(iter(calls))]) < PILOT_CALLS or time.perf_counter_ns() < end) \
            and len(pilot[next(iter(calls))]) < PILOT_MAX_CALLS:
        for label, call in calls.items():
            pilot[label] += timed(call)
    return max(sorted(samples)[len(samples) // 4] for samples in pilot.values())


def block_order(blocks: int) -> list[str]:
    """The sides' blocks in run order: A B, B A, A B, ... (``blocks`` per side)."""
    return [side for i in range(blocks) for side in (("A", "B") if i % 2 == 0 else ("B", "A"))]


def build_order(round_: int) -> tuple[str, str]:
    """Which side a round's process builds first: A in even rounds, B in odd ones.

    Why: whatever a process builds first (its seeded inputs, its closure, the memory they
    take) can make that side's calls a little faster or slower for the life of the process
    in a way that is no difference between the variants. On the H200 an A/A always built A
    first read B +50 to +80 ns slower, and the interval covered a planted delay's true cost
    in only 7 of 10 runs. Alternating the order by round turns that into a lean of
    opposite sign in half the rounds, which the rounds' paired statistics cancel."""
    return ("B", "A") if round_ % 2 else ("A", "B")


def measure_pair(config_a: Any, config_b: Any, blocks: int, phases: Any = None,
                 block_ns: int | None = None,
                 order: tuple[str, str] = ("A", "B")) -> dict[str, Any]:
    from traceview.checks import correctness
    from traceview.opcapture import baseline as baseline_mod
    from traceview.opcapture.metadata import versions
    from traceview.workload import device as device_mod
    from traceview.workload.prepare import prepare

    mark = phases.mark if phases is not None else (lambda _name: None)
    dev = device_mod.open_device(config_a)
    device_mod.check_memory(dev, config_a)
    device_mod.check_memory(dev, config_b)
    mark("cuda_init")
    out: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        configs = {"A": config_a, "B": config_b}
        built = {label: prepare(configs[label], dev, stack, check=correctness.check)
                 for label in order}
        sides = {label: built[label] for label in ("A", "B")}
        mark("build_compile_warmup")
        n = config_a.baseline_n
        pilot_ns = None
        if block_ns is not None:
            pilot_ns = pilot_call_ns({label: sides[label].call for label in ("A", "B")},
                                     lambda call: baseline_mod.full_api_samples(dev, call, 1))
            n = block_calls(pilot_ns, block_ns)
        samples: dict[str, list[int]] = {"A": [], "B": []}
        block_p50: dict[str, list[int]] = {"A": [], "B": []}
        submit: dict[str, list[int]] = {"A": [], "B": []}
        complete: dict[str, list[int]] = {"A": [], "B": []}
        for label in block_order(blocks):
            call = sides[label].call
            block = baseline_mod.full_api_samples(dev, call, n)
            samples[label].extend(block)
            block_p50[label].append(int(median(block)))
            s, c = baseline_mod.amortized(dev, call, n)
            submit[label].append(s)
            complete[label].append(c)
        p50s = {label: int(median(samples[label])) for label in configs}
        for label in configs:
            out[label] = {
                "n": n, "blocks": blocks, "full_api_ns_p50": p50s[label],
                "amortized_submit_ns": int(median(submit[label])),
                "amortized_ns": int(median(complete[label])),
                "correctness": sides[label].checked,
                "blocks_full_ns": block_p50[label],
            }
            if pilot_ns is not None:
                out[label]["block_calls"] = {"chosen": n, "pilot_call_ns": pilot_ns,
                                             "block_ns": block_ns}
        pair = block_pairs.estimate(block_p50["A"], block_p50["B"])
        out["pair_estimate_ns"] = pair.estimate_ns
        out["pair_estimate"] = {"a_then_b_ns": pair.a_then_b_ns,
                                "b_then_a_ns": pair.b_then_a_ns, "pairs": pair.pairs}
        if dev.is_cuda:
            device = baseline_mod.device_per_op_interleaved(
                dev, {label: (sides[label].call, sides[label].out_bytes,
                              f"--impl {cfg.impl} {cfg.op}")
                      for label, cfg in configs.items()}, min(p50s.values()))
            for label in configs:
                out[label].update(device[label])
        else:
            for label in configs:
                out[label]["device_ns"] = None
    mark("measure")
    out["built_first"] = order[0]
    out["versions"] = versions(dev.torch)
    out["device"] = dev.info()
    return out


def measure_both(text: str) -> dict[str, Any]:
    """One round's process (``ChildSpec.call``): both sides in blocks, with the process's
    phases (``phases_ns``, ``ab_child.Phases``)."""
    from traceview.ab.ab_child import Phases, import_libraries
    from traceview.workload.wire import decode_config

    phases = Phases()
    doc = json.loads(text)
    config_a, config_b = (decode_config(json.dumps(doc[x])) for x in ("a", "b"))
    import_libraries(phases, triton="triton" in (config_a.impl, config_b.impl))
    block_ns = doc.get("block_ns")
    out = measure_pair(config_a, config_b, int(doc["blocks"]), phases,
                       block_ns=None if block_ns is None else int(block_ns),
                       order=build_order(int(doc.get("round", 0))))
    out["phases_ns"] = phases.ns
    return out


def measure_against_reference(text: str) -> dict[str, Any]:
    """One fresh process of one side with ``--reference``: ``{"reference": config,
    "side": config, "blocks": K}`` -> the side's figures, ``reference`` (the reference
    call's) and ``vs_reference_ns``."""
    from traceview.ab.ab_child import Phases, import_libraries
    from traceview.workload.wire import decode_config

    phases = Phases()
    doc = json.loads(text)
    ref, side = (decode_config(json.dumps(doc[x])) for x in ("reference", "side"))
    import_libraries(phases, triton="triton" in (ref.impl, side.impl))
    out = measure_pair(ref, side, int(doc["blocks"]), phases)
    result = dict(out["B"], reference=out["A"], vs_reference_ns=out["pair_estimate_ns"],
                  pair_estimate=out["pair_estimate"], versions=out["versions"],
                  device=out["device"])
    result["phases_ns"] = phases.ns
    return result


def main() -> None:
    import sys

    from traceview.runner.process import answer

    answer(measure_against_reference if "--reference" in sys.argv[1:] else measure_both)


if __name__ == "__main__":
    main()
