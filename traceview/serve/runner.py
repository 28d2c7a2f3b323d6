"""The protocol of ``traceview serve``, in the parent process (never imports torch).

1. **Correctness** per variant, in a fresh child: the backend against torch eager
   (skipped for plain eager, which is the reference). A crash or wrong logits on the
   flag_gems backend starts the **bisect** (:mod:`.bisect`); with ``exclude_failing`` the
   culprits are excluded and the check runs again, otherwise the run stops (exit 3)
   with the culprits named.
2. **Repetitions**: ``rounds`` fresh processes per variant, each warming up and then
   measuring one pass of the workload. With two variants the processes are interleaved
   by round (``traceview.paired.interleaved_order``: AB BA AB ..., or a seeded order) so
   slow machine drift cancels in each round's difference.
3. **A/B**: per figure (wall, standing for both throughputs, and TTFT/TPOT/E2E p50, p90,
   p99), ``traceview.paired.compare`` over the rounds: Hodges-Lehmann estimate, exact
   signed-rank interval, verdict.
4. **Diagnosis** per variant: one more fresh child profiles a prefill and decode steps;
   explain summarises it (:mod:`.diagnosis`).

The repetition loop is deliberately plain so it can later share ``traceview ab``'s runner.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import msgspec

from traceview.documents import builtins, read, stamp
from traceview.errors import CaptureError
from traceview.paired import Side, compare, interleaved_order
from traceview.runner.outcome import Outcome
from traceview.serve import arrivals, metrics
from traceview.serve import launch as launch_mod
from traceview.serve.attribution import Attribution
from traceview.serve.bisect import bisect
from traceview.serve.diagnosis import diagnose
from traceview.serve.spec import ServeSpec, Variant, model_to_dict
from traceview.stats import median
from traceview.version import __version__

Log = Callable[[str], None]

ENGINE = ("Hugging Face transformers generate(): greedy, KV cache (DynamicCache; static "
          "for the compile backend), static batching")
DEFINITIONS = {
    "ttft_ns": "first_token_ns - arrival_ns",
    "tpot_ns": "(last_token_ns - first_token_ns) // (tokens - 1)",
    "e2e_ns": "ttft_ns + (tokens - 1) * tpot_ns (= last_token_ns - arrival_ns - "
              "e2e_rounding_ns)",
    "e2e_rounding_ns": "(last_token_ns - first_token_ns) % (tokens - 1), below 1 ns per token",
    "wall_ns": "max(last_token_ns) over requests (the first arrival is time 0)",
    "output_tokens_per_s": "output_tokens * 1e9 / wall_ns",
    "requests_per_s": "requests * 1e9 / wall_ns",
    "percentiles": "nearest rank over the requests of one repetition",
    "clock": "time.perf_counter_ns in the child; token k's time is when generate() handed "
             "it to the streamer as tokens.cpu()",
}
LEGITIMATE_DIVERGENCE = (
    "greedy tokens diverge although the first-step logits are within tolerance: with "
    "random weights the logits are near-uniform, so {dtype} rounding differences between "
    "two correct backends can flip an argmax, and every later token follows the flip")


def base_task(spec: ServeSpec) -> dict[str, Any]:
    return {"model": asdict(spec.model), "workload": asdict(spec.workload),
            "check_steps": spec.check_steps, "profile_steps": spec.profile_steps}


def _status(out: Outcome) -> tuple[str, dict[str, Any]]:
    r = out.value
    if r is None:
        for line in out.records:
            if set(line) == {"error"}:  # a setup problem the user can fix (no FlagGems...)
                raise CaptureError(str(line["error"]))
        if out.status == "timeout":
            return "timeout", {"crashed": False, "timed_out": True, "phase": "process stopped",
                               "error": out.error}
        return "crashed", {"crashed": True, "phase": "process died", "error": out.error}
    if r["crashed"]:
        return "crashed", r
    return ("passed" if r["logits"]["passed"] else "wrong"), r


def check(spec: ServeSpec, variant: Variant, launch: launch_mod.Launcher) -> dict[str, Any]:
    """The correctness block of one variant (without bisect)."""
    return _checked(spec, variant, launch)[0]


def _checked(spec: ServeSpec, variant: Variant, launch: launch_mod.Launcher, *,
             bisect_on_failure: bool = False) -> tuple[dict[str, Any], Outcome | None]:
    """(correctness block, the check process's outcome: None for the reference)."""
    if variant.is_plain_eager:
        return {"status": "reference", "note": "torch eager in this environment is the "
                                               "reference"}, None
    t0 = time.perf_counter_ns()
    out = launch(variant, dict(base_task(spec), task="check", variant=variant.to_dict(),
                               bisect_on_failure=bisect_on_failure))
    wall = time.perf_counter_ns() - t0
    status, r = _status(out)
    return dict(_block(spec, variant, status, r), process_wall_ns=wall), out


def _block(spec: ServeSpec, variant: Variant, status: str, r: dict[str, Any]
           ) -> dict[str, Any]:
    block = dict(r, status=status, exclude_ops=list(variant.exclude_ops))
    block.pop("environment", None)
    block.pop("recheck", None)
    block.pop("reproducers", None)  # the variant's block holds them, with their scripts
    tokens = r.get("tokens") or {}
    if status == "passed" and tokens.get("earliest_divergence") is not None:
        block["note"] = LEGITIMATE_DIVERGENCE.format(dtype=spec.model.dtype)
    return block


def resolve(spec: ServeSpec, variant: Variant, launch: launch_mod.Launcher,
            log: Log) -> tuple[Variant, dict[str, Any], bool]:
    """(variant to measure, correctness block, ok)."""
    if spec.check_cache and not variant.is_plain_eager:
        from traceview.serve import check_cache

        seen = check_cache.versions(variant)
        k = check_cache.key(spec, variant, seen) if seen is not None else None
        kept = check_cache.load(k) if k is not None else None
        if kept is not None:
            fixed = replace(variant, exclude_ops=tuple(kept["exclude_ops"]))
            log(f"correctness: {variant.label} ({fixed.describe()}) passed before with the "
                f"same model, inputs and versions ({kept['path']})")
            return fixed, dict(kept["correctness"], cached={"path": kept["path"], "key": k,
                                                            "versions": seen}), True
        fixed, block, ok = _resolve(spec, variant, launch, log)
        if ok and k is not None and seen is not None:
            check_cache.save(k, fixed, block, seen)
        return fixed, block, ok
    return _resolve(spec, variant, launch, log)


def _resolve(spec: ServeSpec, variant: Variant, launch: launch_mod.Launcher,
             log: Log) -> tuple[Variant, dict[str, Any], bool]:
    log(f"correctness: {variant.label} ({variant.describe()}) vs torch eager")
    checked, out = _checked(spec, variant, launch,
                            bisect_on_failure=variant.backend == "flag_gems")
    block: dict[str, Any] = {"check": checked}
    status = block["check"]["status"]
    if status in ("passed", "reference"):
        return variant, block, True
    if variant.backend != "flag_gems":
        return variant, block, False
    began = out is not None and any("candidates" in line for line in out.records)
    log(f"{variant.label}: {status}; bisecting the backend's ops one at a time"
        + (" (in the check's process)" if began else ""))
    result = bisect(variant, dict(base_task(spec), variant=variant.to_dict()), launch,
                    first=out if began else None)
    block["bisect"] = result.to_dict()
    if result.culprits:
        kept = (out.value or {}).get("reproducers") if out is not None else None
        block["reproducers"] = kept if kept is not None else \
            _reproduce(spec, variant, result.culprits, launch, log)
    if not (spec.exclude_failing and result.culprits and result.incomplete is None):
        return variant, block, False
    fixed = replace(variant, exclude_ops=variant.exclude_ops + tuple(result.culprits))
    log(f"{variant.label}: excluding {', '.join(result.culprits)} and checking again")
    block["excluded_after_bisect"] = result.culprits
    done = (out.value or {}).get("recheck") if out is not None else None
    if done is not None and done.get("exclude_ops") == list(fixed.exclude_ops):
        # checked again in the same process, right after its bisect
        status_again = "crashed" if done["crashed"] else \
            "passed" if done["logits"]["passed"] else "wrong"
        block["recheck"] = dict(_block(spec, fixed, status_again, done),
                                same_process=True)
    else:
        block["recheck"] = check(spec, fixed, launch)
    return fixed, block, block["recheck"]["status"] == "passed"


def _reproduce(spec: ServeSpec, variant: Variant, ops: list[str],
               launch: launch_mod.Launcher, log: Log) -> list[dict[str, Any]] | dict[str, Any]:
    """Each culprit alone in a fresh process: the calls it saw, its error against float64
    (:mod:`.reproducer`); an ``{"error": ...}`` when that process failed."""
    log(f"{variant.label}: recording {', '.join(ops)} against a float64 reference")
    out = launch(variant, dict(base_task(spec), task="reproduce", variant=variant.to_dict(),
                               ops=list(ops)))
    if out.value is None:
        return {"error": out.error or "the process failed"}
    return list(out.value["ops"])


def measure_once(spec: ServeSpec, variant: Variant, launch: launch_mod.Launcher,
                 rnd: int, position: int) -> dict[str, Any]:
    t0 = time.perf_counter_ns()
    out = launch(variant, dict(base_task(spec), task="measure", variant=variant.to_dict()))
    wall = time.perf_counter_ns() - t0
    if out.value is None:
        raise CaptureError(f"{variant.label} ({variant.describe()}), round {rnd}: "
                           f"{out.error}")
    raw = out.value
    timings = metrics.timings_from_raw(raw["requests"])
    figs = metrics.figures(timings)
    return {"round": rnd, "position": position, "pid": raw.get("pid"),
            "figures": figs.to_dict(), "requests": [t.to_dict() for t in timings],
            "batches": raw["batches"], "tokens_sha256": raw["tokens_sha256"],
            "setup_ns": raw["setup_ns"], "warmup_ns": raw["warmup_ns"],
            "warmup_calls": raw["warmup_calls"], "env_seen": raw["env_seen"],
            "backend_detail": raw["backend_detail"], "environment": raw["environment"],
            "process_ns": raw.get("process_ns"), "process_wall_ns": wall}


def _median(values: list[Any]) -> Any:
    if not values or any(v is None for v in values):
        return None
    if all(isinstance(v, int) for v in values):
        return int(median(values))  # the project's one median, a measured value (as the A/B's)
    return float(median(values))


def summarize(reps: list[dict[str, Any]]) -> dict[str, Any]:
    """Median over repetitions of each per-repetition figure (integer ns rounded to 1 ns)."""
    figs = [r["figures"] for r in reps]
    out: dict[str, Any] = {"repetitions": len(reps)}
    for key in ("wall_ns", "output_tokens_per_s", "requests_per_s", "output_tokens", "requests"):
        out[key] = _median([f[key] for f in figs])
    out["latency_ns"] = {
        lat: {p: _median([f["latency_ns"][lat][p] for f in figs]) for p in metrics.PERCENTILES}
        for lat in metrics.LATENCIES}
    return out


def ab_block(spec: ServeSpec, reps_a: list[dict[str, Any]],
             reps_b: list[dict[str, Any]]) -> dict[str, Any]:
    def fig(rep: dict[str, Any], name: str) -> int:
        f = rep["figures"]
        if name == "wall":
            return int(f["wall_ns"])
        lat, _, pct = name.rpartition("_")
        return int(f["latency_ns"][lat][pct])

    rows = {}
    for name in metrics.AB_FIGURES:
        c = compare([fig(r, name) for r in reps_a], [fig(r, name) for r in reps_b],
                    alpha=spec.alpha)
        rows[name] = {"a": list(c.a), "b": list(c.b), "diffs": list(c.diffs),
                      "estimate_ns": c.estimate_ns, "ci_low_ns": c.ci_low_ns,
                      "ci_high_ns": c.ci_high_ns, "confidence": c.confidence,
                      "relative": c.relative, "b_faster_rounds": c.b_faster_rounds,
                      "b_slower_rounds": c.b_slower_rounds,
                      "min_detectable_ns": c.min_detectable_ns,
                      "a_median_ns": c.a_median_ns, "b_median_ns": c.b_median_ns,
                      "verdict": c.verdict}
    digests = {r["tokens_sha256"] for r in reps_a} | {r["tokens_sha256"] for r in reps_b}
    return {"a": spec.a.label, "b": spec.b.label if spec.b else None, "alpha": spec.alpha,
            "rounds": len(reps_a), "figures": rows, "same_tokens": len(digests) == 1,
            "throughput_note": "every repetition generates the same requests and tokens, "
                               "so both throughputs are fixed counts over wall: the wall "
                               "row is their verdict (B faster = higher throughput)"}


def _fill(doc: dict[str, Any], spec: ServeSpec, reps: dict[str, list[dict[str, Any]]]) -> None:
    """Repetitions, summaries and the A/B over the rounds both sides have finished."""
    for entry, side in zip(doc["variants"], ("A", "B"), strict=False):
        entry["repetitions"] = reps[side]
        if reps[side]:
            entry["summary"] = summarize(reps[side])
            entry["environment"] = reps[side][0]["environment"]
    if spec.b is not None:
        done = {r["round"] for r in reps["A"]} & {r["round"] for r in reps["B"]}
        if done:
            pick = {side: sorted((r for r in reps[side] if r["round"] in done),
                                 key=lambda r: r["round"]) for side in ("A", "B")}
            doc["ab"] = ab_block(spec, pick["A"], pick["B"])


def _stopped(v: Variant, block: dict[str, Any]) -> str:
    """Why the run stopped at a variant's correctness check, and what to rerun with."""
    bis = block.get("bisect") or {}
    culprits = bis.get("culprits") or []
    slow = bis.get("timed_out") or []
    status = (block.get("recheck") or block["check"])["status"]
    what = ("did not finish its correctness check within --child-timeout"
            if status == "timeout" else "failed the correctness check")
    return (f"{v.label} ({v.describe()}) {what}"
            + (f"; culprit op(s): {', '.join(culprits)}: rerun with "
               f"--exclude-ops {','.join(culprits)} (or --exclude-failing)"
               if culprits else "")
            + (f"; {', '.join(slow)} ran past --child-timeout alone (slow, "
               "not shown wrong): raise --child-timeout" if slow else ""))


class ServeDocument(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The serve document's top-level layout (docs/serving.md), in its key order. The
    document grows in place while the protocol runs (``run_serve``'s ``on_stage``), so it
    is a dict until it is written; ``as_written`` checks it against this layout and
    gives the dict to write, and ``read_serve`` reads a saved one back."""

    schema_version: int
    tool_version: str
    created: str
    command: list[str] | None
    model: dict[str, Any]
    workload: dict[str, Any]
    protocol: dict[str, Any]
    variants: list[dict[str, Any]]  # one per variant: its setting, checks, repetitions, ...
    ab: dict[str, Any] | None  # the paired comparisons; None with one variant
    measured: bool
    stopped: str | None  # why the run stopped early (a failed check); None
    complete: bool
    #: ``--attribute``'s result; absent without it (so other documents keep their bytes)
    attribution: Attribution | None = None


def read_serve(doc: object) -> ServeDocument:
    """A saved serve document, upgraded and checked; a ``UsageError`` of one line for
    anything else."""
    return read(doc, "serve", ServeDocument)


def as_written(doc: dict[str, Any]) -> dict[str, Any]:
    """The document as it is written: checked against ``ServeDocument`` and encoded
    through it (the same keys, order and values)."""
    return builtins(read_serve(doc))


def run_serve(spec: ServeSpec, *, launch: launch_mod.Launcher | None = None,
              log: Log = lambda s: None, trace_dir: Path | None = None,
              argv: list[str] | None = None,
              on_stage: Callable[[dict[str, Any]], None] = lambda d: None,
              report_dir: Path | None = None) -> dict[str, Any]:
    """The whole protocol; returns the JSON document (docs/serving.md).

    ``on_stage(doc)`` is called after every stage (each check, each repetition, each
    diagnosis) with the document so far, ``complete`` false until the end: a run cut
    short by a time limit still leaves what it measured. ``report_dir``: where a wrong
    op's reproducer script is written (default: ``trace_dir``, else a new folder).

    ``protocol.stages_ns`` says where the run's time went, stage by stage, as the parent
    saw it (:class:`Stages`), and each stage's end is logged with its seconds: a cold
    run's budget is spent in a few stages, and this is the one place that adds them up.
    """
    launch = launch or launch_mod.in_subprocess
    stages = Stages(log)
    doc = _new_document(spec, argv, stages)
    final: list[Variant] = []
    for v in spec.variants:
        with stages.stage(f"correctness_{v.label}"):
            fixed, block, ok = resolve(spec, v, launch, log)
        _write_reproducers(block, spec, report_dir or trace_dir, log, len(doc["variants"]))
        final.append(fixed)
        doc["variants"].append(dict(fixed.to_dict(), description=fixed.describe(),
                                    correctness=block, repetitions=[], summary=None,
                                    diagnosis=None, environment=None))
        doc["protocol"]["process_start"] = _process_start(launch)
        on_stage(doc)
        if not ok:
            doc["stopped"] = _stopped(v, block)
            stages.done()
            doc["complete"] = True
            return doc
    spec = replace(spec, a=final[0], b=final[1] if len(final) > 1 else None)
    attributed = None
    if spec.attribute is not None:
        assert spec.b is not None  # validate() refuses --attribute without a B
        with stages.stage("attribution"):
            attributed = _attribute(spec, spec.b, launch, log)
        doc["attribution"] = builtins(attributed)
        for entry in doc["variants"]:  # both sides ran in the attribution's processes
            entry["environment"] = attributed.environment
    else:
        _repetitions(doc, spec, launch, log, on_stage, stages)
    doc["measured"] = True
    doc["protocol"]["process_start"] = _process_start(launch)
    on_stage(doc)
    if spec.profile_steps:
        _profile_each(spec, doc, launch, log, trace_dir, stages, on_stage)
    if attributed is not None:
        from traceview.serve import attribution

        diag = [v.get("diagnosis") for v in doc["variants"]]
        doc["attribution"] = builtins(attribution.with_claims(
            attribution.with_host_times(attributed, diag[0], diag[1])))
    doc["protocol"]["process_start"] = _process_start(launch)
    stages.done()
    doc["complete"] = True
    return doc


def _new_document(spec: ServeSpec, argv: list[str] | None, stages: Stages) -> dict[str, Any]:
    return {
        **stamp("serve"), "tool_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": argv, "model": model_to_dict(spec.model),
        "workload": dict(asdict(spec.workload), engine=ENGINE,
                         arrival_offsets_ns=arrivals.arrival_offsets_ns(spec.workload)),
        "protocol": {"rounds": spec.rounds, "alpha": spec.alpha, "order_seed": spec.order_seed,
                     "check_steps": spec.check_steps, "profile_steps": spec.profile_steps,
                     "fresh_process_per_repetition": True,
                     "warmup": f"{spec.workload.warmup_batches} untimed batch(es) of "
                               f"{spec.workload.batch_size} per process, own prompts",
                     "definitions": DEFINITIONS, "process_start": None,
                     "stages_ns": stages.ns},
        "variants": [], "ab": None, "measured": False, "stopped": None, "complete": False,
    }


def _repetitions(doc: dict[str, Any], spec: ServeSpec, launch: launch_mod.Launcher,
                 log: Log, on_stage: Callable[[dict[str, Any]], None],
                 stages: Stages) -> None:
    """The measured rounds, interleaved by round with two sides."""
    order: list[tuple[int, Side]]
    if spec.b is None:
        order = [(r, "A") for r in range(spec.rounds)]
    else:
        order = interleaved_order(spec.rounds, spec.order_seed)
    doc["protocol"]["order"] = [[r, side] for r, side in order]
    reps: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
    for position, (rnd, side) in enumerate(order):
        variant = spec.a if side == "A" else spec.b
        assert variant is not None  # side B runs only when there is a B
        log(f"round {rnd + 1}/{spec.rounds}: {side} ({variant.describe()})")
        with stages.stage(f"repetitions_{side}", quiet=position < len(order) - 2):
            reps[side].append(measure_once(spec, variant, launch, rnd, position))
        _fill(doc, spec, reps)  # a run cut short still has its summaries so far
        on_stage(doc)


def _profile_each(spec: ServeSpec, doc: dict[str, Any], launch: launch_mod.Launcher,
                  log: Log, trace_dir: Path | None, stages: Stages,
                  on_stage: Callable[[dict[str, Any]], None]) -> None:
    """Each variant's profiled decode steps in a fresh process, explained into its
    ``diagnosis`` (or the profiled run's failure), the document given after each."""
    folder = trace_dir or Path(tempfile.mkdtemp(prefix="traceview-serve-"))
    folder.mkdir(parents=True, exist_ok=True)
    for entry, v in zip(doc["variants"], spec.variants, strict=True):
        log(f"profiling {spec.profile_steps} decode steps: {v.label} ({v.describe()})")
        path = folder / f"serve-{v.label}-{v.backend}-decode.json.gz"
        with stages.stage(f"profile_{v.label}"):
            t0 = time.perf_counter_ns()
            out = launch(v, dict(base_task(spec), task="profile", variant=v.to_dict(),
                                 trace_path=str(path)))
            wall = time.perf_counter_ns() - t0
        if out.value is None:
            entry["diagnosis"] = {"error": f"the profiled run failed: {out.error}"}
            on_stage(doc)
            continue
        with stages.stage(f"explain_{v.label}"):
            explained = diagnose(str(path), spec.profile_steps)
        entry["diagnosis"] = dict(explained,
                                  profiled_step_wall_ns=out.value.get("step_wall_ns"),
                                  process_ns=out.value.get("process_ns"),
                                  process_wall_ns=wall)
        on_stage(doc)


class Stages:
    """Wall time per stage of a serve run, in ns, as the parent waited for it:
    ``correctness_A``/``_B`` (the check, its bisect and check again, or the check
    cache's look-up; the first one includes the wait for the templates' imports,
    ``protocol.process_start.waited_ns``), ``repetitions_A``/``_B`` (the sum of that
    side's measuring processes), ``profile_X`` and ``explain_X`` (the profiled run and
    explaining its trace), and ``total`` from the start of the protocol to its end. The
    dict is the document's ``protocol.stages_ns`` and grows as the run goes; each stage
    is logged with its seconds when it ends (a side's repetitions once, at its last)."""

    def __init__(self, log: Log) -> None:
        self.ns: dict[str, int] = {}
        self.log = log
        self.began = time.perf_counter_ns()

    @contextlib.contextmanager
    def stage(self, name: str, *, quiet: bool = False) -> Iterator[None]:
        t0 = time.perf_counter_ns()
        try:
            yield
        finally:
            self.ns[name] = self.ns.get(name, 0) + time.perf_counter_ns() - t0
            if not quiet:
                self.log(f"stage {name}: {self.ns[name] / 1e9:.1f} s")

    def done(self) -> None:
        self.ns["total"] = time.perf_counter_ns() - self.began
        self.log(f"stage total: {self.ns['total'] / 1e9:.1f} s")


def _attribute(spec: ServeSpec, b: Variant, launch: launch_mod.Launcher, log: Log) -> Any:
    """``--attribute``: the ops B swaps in, then :func:`attribution.attribute`."""
    from traceview.serve import attribution

    assert spec.attribute is not None
    log(f"attribution: listing the ops {b.describe()} swaps in for this model")
    out = launch(b, dict(base_task(spec), task="units", variant=b.to_dict()))
    if out.value is None:
        raise CaptureError(f"attribution: the op list could not be made: {out.error}")
    units = list(out.value["units"])
    if spec.attribute.ops:
        unknown = [op for op in spec.attribute.ops if op not in units]
        if unknown:
            raise CaptureError(f"--attribute-ops {','.join(unknown)}: not among the ops the "
                               f"model calls on this backend ({', '.join(units)})")
        units = list(spec.attribute.ops)
    settings = attribution.Settings(rounds=spec.rounds, screen_rounds=spec.attribute.screen_rounds,
                                    min_share=spec.attribute.min_share, alpha=spec.alpha,
                                    budget_s=spec.attribute.budget_s,
                                    seed=spec.order_seed or 0)
    return attribution.attribute(units, settings, b, base_task(spec), launch, log,
                                 keys=out.value.get("keys"))


def _write_reproducers(block: dict[str, Any], spec: ServeSpec, folder: Path | None,
                       log: Log, index: int) -> None:
    """Each wrong op's one-file script, next to the report; its path and its sentence
    (a claim on variant ``index``'s block) in the block."""
    found = block.get("reproducers")
    if not isinstance(found, list) or not found:
        return
    from traceview.report.claims import pointer
    from traceview.serve.reproducer import claim, script

    folder = folder or Path(tempfile.mkdtemp(prefix="traceview-serve-"))
    folder.mkdir(parents=True, exist_ok=True)
    model = (f"a {spec.model.layers}-layer Llama-style model ({spec.model.dtype}, "
             f"{spec.model.device})")
    for j, entry in enumerate(found):
        path = folder / f"reproduce_{entry['op']}.py"
        path.write_text(script(entry, path.name, model))
        entry["script"] = str(path)
        entry["claim"] = claim(entry, pointer("variants", index, "correctness",
                                              "reproducers", j))
        log(f"reproducer for {entry['op']} ({entry['verdict']}): {path}")


def _process_start(launch: launch_mod.Launcher) -> dict[str, Any] | None:
    """How the launcher starts processes (``launch.Forking.describe``), or None for a
    plain function (spawned, or in this process in tests)."""
    describe = getattr(launch, "describe", None)
    return describe() if callable(describe) else None
