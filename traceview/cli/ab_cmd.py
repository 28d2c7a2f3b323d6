"""``traceview ab``: two variants of the same call, interleaved in fresh processes.

Option parsing and printing only; the runner is ``traceview.ab.harness`` (torch-free:
the children import torch). Options shared by both sides are capture's; ``--a-X`` /
``--b-X`` override one side. Bad values are one line and exit 2; a side whose output is
wrong is exit 3.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from traceview.cli._common import MAX_WIDTH, MIN_WIDTH, run_guarded, write_document
from traceview.cli._output import as_text
from traceview.cli.explain_cmd import Format

_RUN, _SIDES, _OUT = "Run (both sides)", "Per side", "Output"


def _o(help: str, panel: str, *names: str, **kw: Any) -> typer.models.OptionInfo:
    return typer.Option(*names, help=help, rich_help_panel=panel, **kw)


Str = str | None
Many = list[str] | None

# options whose help is long, named once (``ab``'s signature stays readable)
UntilOpt = Annotated[Many, _o("Stop at the first planned look whose interval is at most "
                              "this wide (2us) or, given a time budget (90s, 2min), "
                              "excludes zero; the intervals keep 95% over all looks.",
                              _RUN, show_default=False)]
ReferenceOpt = Annotated[Str, _o("Fresh processes per side: each also measures this call "
                                 "(an --impl such as torch, or pkg.module:function) in "
                                 "alternating blocks, and the side is judged by its "
                                 "difference from it: a process's fast or slow state "
                                 "cancels.", _RUN, show_default=False)]
TimeLimitOpt = Annotated[float | None, _o("Seconds for the rounds: a round starts only if "
                                          "the longest round so far still fits; the "
                                          "verdict rests on the whole rounds run.", _RUN,
                                          show_default=False)]
SameProcessOpt = Annotated[bool, _o("Each round: ONE fresh process measures both variants "
                                    "in alternating blocks (sides that differ by "
                                    "--a-impl/--b-impl or --a-fn/--b-fn only): the "
                                    "process's own fast or slow state cancels.", _RUN,
                                    "--same-process")]
BlocksOpt = Annotated[int | None, _o("With --same-process or --reference: blocks per side and process, "
                                     "even (A B, B A, ...), each --baseline-n calls "
                                     "(default: 200 with --same-process, 10 with "
                                     "--reference).", _RUN, show_default=False)]
APythonOpt = Annotated[Str, _o("Side A's interpreter (another venv).", _SIDES,
                               show_default=False)]
BPythonOpt = Annotated[Str, _o("Side B's interpreter (another venv).", _SIDES,
                               show_default=False)]
AEnvOpt = Annotated[Many, _o("K=V for side A's processes (repeat).", _SIDES,
                             show_default=False)]
BEnvOpt = Annotated[Many, _o("K=V for side B's processes (repeat).", _SIDES,
                             show_default=False)]
APathOpt = Annotated[Many, _o("Folder put first on side A's import path (repeat).", _SIDES,
                              show_default=False)]
BPathOpt = Annotated[Many, _o("Folder put first on side B's import path (repeat).", _SIDES,
                              show_default=False)]
ANameOpt = Annotated[Str, _o("A label for side A (e.g. before).", _SIDES,
                             show_default=False)]
BNameOpt = Annotated[Str, _o("A label for side B (e.g. after).", _SIDES,
                             show_default=False)]
SplitOpt = Annotated[bool, _o("After the rounds, each side's unprofiled split: where its "
                              "call goes without the profiler (functions with intervals, "
                              "categories), from one profiled capture per side in its own "
                              "setting (--trace-dir's, else a temporary one: about 30 s "
                              "per side on a CPU, 90 s with FlagGems on an H200).",
                              _OUT, "--split/--no-split")]


def ab(
    *,
    op: Annotated[str, _o("Op: add sub mul div neg abs relu sigmoid silu gelu exp.", _RUN)],
    impl: Annotated[Str, _o("triton | torch | inductor | flag_gems (default: triton).", _RUN,
                            show_default=False)] = None,
    shape: Annotated[str, _o("Shape, e.g. 16x4096; two comma-separated shapes broadcast.",
                             _RUN)] = "1x4096",
    dtype: Annotated[str, _o("float32 float16 bfloat16 ... (or f32, bf16...).", _RUN)] = "float32",
    layout: Annotated[str, _o("contiguous | transposed | strided.", _RUN)] = "contiguous",
    scalar: Annotated[Str, _o("Binary ops: the tensor-scalar form.", _RUN)] = None,
    device: Annotated[str, _o("cuda | cpu.", _RUN)] = "cuda",
    mode: Annotated[str, _o("eager | graph.", _RUN)] = "eager",
    warmup: Annotated[int, _o("Warm-up calls in each process.", _RUN)] = 10,
    baseline_n: Annotated[int | None, _o("Calls per figure in each process (default: 200; "
                                         "with --same-process, each block's calls are "
                                         "chosen from the call's time: blocks of about "
                                         "150 us).", _RUN, "--baseline-n",
                                         show_default=False)] = None,
    seed: Annotated[int, _o("Seed for the random inputs.", _RUN)] = 0,
    launcher: Annotated[str, _o("--impl triton's form on both sides: auto | minimal | "
                                "library (see capture --help).", _RUN)] = "auto",
    fn: Annotated[Str, _o("Your callable pkg.module:function, for both sides.", _RUN,
                          show_default=False)] = None,
    inputs: Annotated[Str, _o("pkg.module:function(device) -> arguments.", _RUN,
                              show_default=False)] = None,
    ref: Annotated[Str, _o("pkg.module:function: float64 reference.", _RUN,
                           show_default=False)] = None,
    rounds: Annotated[int | None, _o("Rounds: one fresh process per side each "
                                     "(default: 10; with --until, at most 60).", _RUN,
                                     show_default=False)] = None,
    until: UntilOpt = None,
    reference: ReferenceOpt = None,
    time_limit: TimeLimitOpt = None,
    same_process: SameProcessOpt = False,
    blocks: BlocksOpt = None,
    cpus: Annotated[Str, _o("Pin every process of both sides to these CPUs, e.g. 4-7 or "
                            "2,3 (default: wherever the OS puts it).", _RUN,
                            show_default=False)] = None,
    order_seed: Annotated[int | None, _o("Random order per round from this seed (default: "
                                         "balanced AB BA AB ...).", _RUN,
                                         show_default=False)] = None,
    a_impl: Annotated[Str, _o("Side A's --impl.", _SIDES, show_default=False)] = None,
    b_impl: Annotated[Str, _o("Side B's --impl.", _SIDES, show_default=False)] = None,
    a_fn: Annotated[Str, _o("Side A's --fn.", _SIDES, show_default=False)] = None,
    b_fn: Annotated[Str, _o("Side B's --fn.", _SIDES, show_default=False)] = None,
    a_python: APythonOpt = None,
    b_python: BPythonOpt = None,
    a_env: AEnvOpt = None,
    b_env: BEnvOpt = None,
    a_path: APathOpt = None,
    b_path: BPathOpt = None,
    a_name: ANameOpt = None,
    b_name: BNameOpt = None,
    format: Annotated[Format, _o("Output format.", _OUT, "--format", "-f")] = Format.text,
    out: Annotated[Path | None, _o("Also save the JSON result here (diff --ab reads it).",
                                   _OUT, show_default=False)] = None,
    trace_dir: Annotated[Path | None, _o("After the rounds, one profiled capture per side "
                                         "into this folder (diagnosis; traceview diff).",
                                         _OUT, show_default=False)] = None,
    width: Annotated[int | None, _o("Terminal width for text output.", _OUT,
                                    min=MIN_WIDTH, max=MAX_WIDTH, metavar="COLUMNS")] = None,
    check_cache: Annotated[bool, _o("Before any round: each side's capture --check-cache "
                                    "sequence in its own setting (one warm process, one "
                                    "change at a time, every output vs float64); a wrong "
                                    "side stops with exit 3.", _RUN, "--check-cache")] = False,
    spawn: Annotated[bool, _o("A fresh interpreter per process (default: each forked from "
                              "a per-side template).", _RUN, "--spawn")] = False,
    split: SplitOpt = True,
) -> None:
    """A/B of one call in interleaved fresh processes: exact interval, honest verdict."""
    options = dict(locals())
    run_guarded(lambda: _ab(**options))


def parse_env(items: list[str] | None, flag: str) -> dict[str, str]:
    out = {}
    for item in items or ():
        key, eq, value = item.partition("=")
        if not eq or not key or not key.replace("_", "a").isalnum():
            from traceview.errors import UsageError

            raise UsageError(f"{flag} {item!r}: use NAME=VALUE")
        out[key] = value
    return out


def parse_cpus(text: str | None) -> tuple[int, ...]:
    """``4-7,9`` -> (4, 5, 6, 7, 9); each must be a CPU this process may run on."""
    import os

    from traceview.errors import UsageError

    if not text:
        return ()
    got: set[int] = set()
    try:
        for part in text.split(","):
            lo, dash, hi = part.strip().partition("-")
            first, last = int(lo), int(hi) if dash else int(lo)
            if first > last or first < 0:
                raise ValueError
            got.update(range(first, last + 1))
    except ValueError:
        raise UsageError(f"--cpus {text!r}: use a list such as 4-7 or 2,3") from None
    try:
        allowed = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        raise UsageError("--cpus: this system cannot pin processes to CPUs") from None
    if not got <= allowed:
        raise UsageError(f"--cpus {text!r}: CPU(s) {sorted(got - allowed)} not available "
                         f"here (this process may use {len(allowed)} CPUs)")
    return tuple(sorted(got))


def _ab(*, rounds, order_seed, time_limit, same_process, blocks, cpus, format, out, width,
        trace_dir=None, check_cache=False, spawn=False, until=None, reference=None,
        split=True, **options) -> None:
    from traceview.ab.harness import run_capture_ab
    from traceview.errors import CaptureError, CorrectnessError
    from traceview.multi.sequential import parse_until

    wanted = parse_until(until)
    rounds = rounds if rounds is not None else 60 if wanted is not None else 10
    if rounds < 1 or rounds > 200:
        raise CaptureError(f"--rounds takes 1 to 200, got {rounds}")
    if blocks is not None and not (same_process or reference):
        raise CaptureError("--blocks is for --same-process or --reference")
    blocks, block_ns = default_blocks(blocks, options, same_process=same_process)
    if out is not None and out.exists() and out.is_dir():
        raise CaptureError(f"--out {out} is a folder; give a file name")
    from traceview.cli._common import check_output_dir, check_output_file

    check_output_file(out, "--out")
    check_output_dir(trace_dir, "--trace-dir")
    ca, cb, sides = side_configs(**options)
    ref_config = reference_config(ca, reference) if reference else None
    if trace_dir is not None and trace_dir.exists() and not trace_dir.is_dir():
        raise CaptureError(f"--trace-dir {trace_dir} is a file; give a folder")
    # said with the first round, after the checks: a failed check's line comes first
    note = ("after the rounds: each side's unprofiled split, one profiled capture per side "
            "(--no-split leaves it out)") if split else None
    try:
        result = run_capture_ab(ca, cb, rounds, seed=order_seed, sides=sides,
                                on_run=progress_printer(rounds, note), trace_dir=trace_dir,
                                time_limit_s=time_limit, cpus=parse_cpus(cpus),
                                same_process=same_process, blocks=blocks,
                                check_cache=check_cache, fork=not spawn,
                                reference=ref_config, until=wanted, split=split,
                                block_ns=block_ns)
    except CorrectnessError as exc:
        report = exc.report or {}
        if not report.get("cache_check"):
            raise
        from traceview.render.registry import RenderOptions, renderer

        text = as_text(renderer("text", "failure").render(report, RenderOptions()))
        print("traceview: error: " + text, file=sys.stderr)
        raise typer.Exit(exc.exit_code) from None
    _print(result.as_dict(), format, out, width)


#: ``--same-process``'s blocks per side when ``--blocks`` is not given: with blocks of
#: about 150 us (``ab_pair_child.BLOCK_NS``) the setting calibrated on the H200, 200
#: blocks of 5 calls of a ~30 us call (docs/ab.md).
SAME_PROCESS_BLOCKS = 200
#: ``--baseline-n`` when not given (and, with --same-process, only where the calls per
#: block are not chosen: a side's figures outside the blocks, the split's capture).
BASELINE_N = 200


def default_blocks(blocks: int | None, options: dict[str, Any], *, same_process: bool
                   ) -> tuple[int, int | None]:
    """(blocks per side, the block length in ns each process fills with calls, or None).

    ``--same-process`` without ``--baseline-n`` chooses the calls per block in each
    process from the call's own time (``ab_pair_child.block_calls``: blocks of about
    150 us): a block must be short against the few milliseconds between a process's
    flips from a fast to a slow state, which is a time, not a number of calls. Without
    ``--blocks`` it runs 200 blocks per side. ``--reference`` keeps 10 blocks of
    ``--baseline-n`` calls. Fills ``options["baseline_n"]`` where it was not given."""
    from traceview.ab.ab_pair_child import BLOCK_NS

    chosen = same_process and options.get("baseline_n") is None
    if options.get("baseline_n") is None:
        options["baseline_n"] = BASELINE_N
    if blocks is None:
        blocks = SAME_PROCESS_BLOCKS if same_process else 10
    return blocks, BLOCK_NS if chosen else None


def side_configs(*, op, impl, shape, dtype, layout, scalar, device, mode, warmup, baseline_n,
                 seed, fn, inputs, ref, a_impl, b_impl, a_fn, b_fn, a_python, b_python,
                 a_env, b_env, a_path, b_path, a_name, b_name, launcher="auto"):
    """The two sides' CaptureConfigs (validated) and their settings (``sides``)."""
    from traceview.errors import CaptureError
    from traceview.workload import config as cfg
    from traceview.workload.ops import canonical_dtype

    def config_for(side_impl, side_fn):
        # The most specific wins: a side's --X-fn, then its --X-impl (which replaces a
        # shared --fn on that side), then the shared --fn / --impl.
        if side_fn:
            the_fn, the_impl = side_fn, "fn"
        elif side_impl:
            the_fn, the_impl = (fn if side_impl == "fn" else None), side_impl
        else:
            the_fn, the_impl = fn, impl or ("fn" if fn else "triton")
        return cfg.CaptureConfig(
            op=op.strip().lower(), impl=the_impl, shapes=cfg.parse_shapes(shape),
            dtype=canonical_dtype(dtype), layout=layout, scalar=cfg.parse_scalar(scalar),
            device=device, mode=mode, warmup=warmup, baseline_n=baseline_n, seed=seed,
            fn=the_fn, inputs_fn=inputs, ref=ref, launcher=launcher).validate()

    ca, cb = config_for(a_impl, a_fn), config_for(b_impl, b_fn)
    sides = {
        "A": {"python": a_python, "env": parse_env(a_env, "--a-env"), "path": a_path or (),
              "name": a_name},
        "B": {"python": b_python, "env": parse_env(b_env, "--b-env"), "path": b_path or (),
              "name": b_name},
    }
    for label in ("A", "B"):
        for folder in sides[label]["path"]:
            if not Path(folder).is_dir():
                raise CaptureError(f"--{label.lower()}-path {folder}: no such folder")
    return ca, cb, sides


def reference_config(config, text: str):
    """``--reference torch`` (an implementation) or ``pkg.module:function``: side A's
    call with that implementation (validated like a side's)."""
    import dataclasses

    if ":" in text:
        return dataclasses.replace(config, impl="fn", fn=text).validate()
    return dataclasses.replace(config, impl=text, fn=None).validate()


def progress_printer(rounds: int, note: str | None = None):
    """One dim stderr line per process (with --same-process, per round: both sides);
    ``note`` before the first."""
    from rich.console import Console

    from traceview.units import fmt_ns

    err = Console(stderr=True, highlight=False)
    seen_a: dict[int, int | None] = {}
    pending = [note] if note else []

    def progress(run) -> None:
        while pending:
            err.print(f"[dim]{pending.pop()}[/]")
        ms = run.result.get("full_api_ns_p50")
        if run.position is None:  # --same-process: one line per process, both sides
            if run.side == "A":
                seen_a[run.round] = ms
                return
            err.print(f"[dim]{run.round + 1}/{rounds} round {run.round + 1} (A and B in one "
                      f"process): full call A {fmt_ns(seen_a.get(run.round))}, B "
                      f"{fmt_ns(ms)} (process {run.wall_ns / 1e9:.1f} s)[/]")
            return
        err.print(f"[dim]{run.index + 1}/{2 * rounds} round {run.round + 1} {run.side}: "
                  f"full call {fmt_ns(ms)} (process {run.wall_ns / 1e9:.1f} s)[/]")

    return progress


def _print(doc, format, out, width) -> None:
    from rich.console import Console

    from traceview.render.registry import RenderOptions, renderer

    if doc["protocol"].get("stopped"):
        Console(stderr=True, highlight=False).print(
            f"[yellow]stopped early: {doc['protocol']['stopped']}[/]")
    if out is not None:
        from traceview.atomic import write_text_atomic

        write_text_atomic(out, as_text(renderer("json", "ab").render(doc, RenderOptions())))
    write_document(format.value, "ab", doc, width)
