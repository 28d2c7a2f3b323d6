"""``traceview serve``: a controlled generation workload with the op backend swapped.

Only option parsing and printing live here; the protocol is
``traceview.serve.runner``. The parent never imports torch: every measurement,
check and profile runs in a fresh child process. A failed correctness check is exit 3
(after the report, which names the culprit ops the bisect found).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from traceview.cli._common import check_output_dir, check_output_file, run_guarded
from traceview.cli._output import as_text
from traceview.runner.outcome import CHILD_TIMEOUT_S

_MODEL, _LOAD, _SIDES, _PROTO, _OUT = "Model", "Workload", "Backends", "Protocol", "Output"
_ATTR = "Attribution"


def _opt(help: str, panel: str, *names: str, **kw: Any) -> typer.models.OptionInfo:
    return typer.Option(*names, help=help, rich_help_panel=panel, **kw)


H_BACKEND = "A side: eager | flag_gems | compile (torch.compile + static KV cache)."
H_EXCL = "A side, flag_gems: ops kept on torch, comma-separated FlagGems names (mul,add)."
H_ENV = "A side: NAME=VALUE in its processes' environment (repeatable)."
H_PY = "A side: the Python interpreter its processes run (default: this one)."
H_VS = "B side's backend: run an A/B, interleaved by round in fresh processes."
H_VS_EXCL = "B side, flag_gems: ops kept on torch."
H_VS_ENV = "B side: NAME=VALUE (repeatable); alone, B is A's backend with this environment."
H_VS_PY = "B side: its Python interpreter."


def serve(
    *,  # typer passes every parameter by name: flags are keyword-only
    backend: Annotated[str, _opt(H_BACKEND, _SIDES)] = "eager",
    exclude_ops: Annotated[str | None, _opt(H_EXCL, _SIDES, "--exclude-ops")] = None,
    env: Annotated[list[str] | None, _opt(H_ENV, _SIDES, "--env")] = None,
    python: Annotated[str | None, _opt(H_PY, _SIDES, "--python")] = None,
    vs: Annotated[str | None, _opt(H_VS, _SIDES, "--vs")] = None,
    vs_exclude_ops: Annotated[str | None, _opt(H_VS_EXCL, _SIDES, "--vs-exclude-ops")] = None,
    vs_env: Annotated[list[str] | None, _opt(H_VS_ENV, _SIDES, "--vs-env")] = None,
    vs_python: Annotated[str | None, _opt(H_VS_PY, _SIDES, "--vs-python")] = None,
    exclude_failing: Annotated[bool, _opt(
        "When a flag_gems check fails, exclude the ops the bisect names and go on.",
        _SIDES, "--exclude-failing")] = False,
    no_check_cache: Annotated[bool, _opt(
        "Check correctness again even when the same check (model, inputs, variant, "
        "versions, GPU) passed before.", _SIDES, "--no-check-cache")] = False,
    layers: Annotated[int, _opt("Decoder layers.", _MODEL)] = 8,
    hidden: Annotated[int, _opt("Hidden size.", _MODEL)] = 1024,
    heads: Annotated[int, _opt("Attention heads.", _MODEL)] = 16,
    kv_heads: Annotated[int, _opt("Key/value heads (GQA).", _MODEL, "--kv-heads")] = 4,
    intermediate: Annotated[int, _opt("MLP intermediate size.", _MODEL)] = 2816,
    vocab: Annotated[int, _opt("Vocabulary size.", _MODEL)] = 32000,
    dtype: Annotated[str, _opt("bfloat16 | float16 | float32.", _MODEL)] = "bfloat16",
    device: Annotated[str, _opt("cuda | cpu.", _MODEL)] = "cuda",
    seed: Annotated[int, _opt("Seed of the random weights, prompts and arrivals.",
                              _MODEL)] = 0,
    requests: Annotated[int, _opt("Requests per repetition.", _LOAD)] = 16,
    prompt_len: Annotated[int, _opt("Prompt tokens per request.", _LOAD, "--prompt-len")] = 128,
    output_len: Annotated[int, _opt("Output tokens per request (>= 2).", _LOAD,
                                    "--output-len")] = 32,
    batch_size: Annotated[int, _opt("Largest batch the engine runs.", _LOAD,
                                    "--batch-size")] = 8,
    arrival: Annotated[str, _opt("offline (all at once) | poisson (needs --rate).",
                                 _LOAD)] = "offline",
    rate: Annotated[float | None, _opt("Poisson arrival rate, requests/s.", _LOAD)] = None,
    warmup_batches: Annotated[int, _opt("Untimed warm-up batches per process.", _LOAD,
                                        "--warmup-batches")] = 1,
    rounds: Annotated[int, _opt("Repetitions per side, one fresh process each.", _PROTO)] = 6,
    alpha: Annotated[float, _opt("A/B interval: 1 - confidence.", _PROTO)] = 0.05,
    order_seed: Annotated[int | None, _opt("Random AB/BA order per round, seeded "
                                           "(default: AB BA AB ...).", _PROTO,
                                           "--order-seed")] = None,
    check_steps: Annotated[int, _opt("Greedy steps compared against torch eager.", _PROTO,
                                     "--check-steps")] = 16,
    profile_steps: Annotated[int, _opt("Decode steps profiled and explained per side "
                                       "(0: none).", _PROTO, "--profile-steps")] = 8,
    fmt: Annotated[str, _opt("text | json | md.", _OUT, "--format")] = "text",
    out: Annotated[Path | None, _opt("Write the JSON document here as well.", _OUT)] = None,
    trace_dir: Annotated[Path | None, _opt("Folder for the profiled decode traces "
                                           "(default: a new temporary folder).", _OUT,
                                           "--trace-dir")] = None,
    child_timeout: Annotated[float, _opt("Seconds one child process may take.", _PROTO,
                                         "--child-timeout")] = float(CHILD_TIMEOUT_S),
    attribute: Annotated[bool, _opt(
        "Split the eager -> flag_gems effect on TPOT, TTFT and throughput by op: ops "
        "toggled alone and in bisection groups, in fresh processes, with intervals.",
        _ATTR, "--attribute")] = False,
    attribute_ops: Annotated[str | None, _opt(
        "Only these FlagGems ops are candidates (comma-separated; the rest stay in the "
        "whole effect and show as interaction).", _ATTR, "--attribute-ops")] = None,
    attribute_budget: Annotated[str | None, _opt(
        "Time budget for the attribution (90s, 3min): screening stops where the final "
        "stage would not fit.", _ATTR, "--attribute-budget")] = None,
    attribute_screen_rounds: Annotated[int, _opt(
        "Processes per screening stage.", _ATTR, "--attribute-screen-rounds")] = 3,
    attribute_min_share: Annotated[float, _opt(
        "Split a group further while its TPOT effect is at least this share of the whole.",
        _ATTR, "--attribute-min-share")] = 0.1,
    spawn: Annotated[bool, _opt(
        "Start every process as a fresh interpreter (default: fork it from a template "
        "that imported torch and transformers once, without CUDA).", _PROTO,
        "--spawn")] = False,
) -> None:
    """Serve a generation workload (transformers, random-weight Llama) on a backend, or
    A/B two backends: correctness first, throughput, TTFT, TPOT, a profiled decode step."""
    options = dict(locals())
    run_guarded(lambda: _serve(**options))


def _serve(*, backend, exclude_ops, env, python, vs, vs_exclude_ops, vs_env, vs_python,
           exclude_failing, no_check_cache, layers, hidden, heads, kv_heads, intermediate,
           vocab, dtype, device, seed, requests, prompt_len, output_len, batch_size, arrival, rate,
           warmup_batches, rounds, alpha, order_seed, check_steps, profile_steps, fmt, out,
           trace_dir, child_timeout, spawn, attribute, attribute_ops, attribute_budget,
           attribute_screen_rounds, attribute_min_share) -> None:
    import time

    from rich.console import Console
    from rich.markup import escape

    from traceview.errors import UsageError
    from traceview.serve import launch as launch_mod
    from traceview.serve import spec as sp
    from traceview.serve.runner import as_written, run_serve

    if fmt not in ("text", "json", "md"):
        raise UsageError(f"--format {fmt!r}: expected text, json or md")
    a = sp.Variant("A", backend=backend, exclude_ops=sp.parse_ops(exclude_ops),
                   env=sp.parse_env(env), python=python)
    b = None
    if vs is not None or vs_env or vs_python or vs_exclude_ops:
        b = sp.Variant("B", backend=vs or backend, exclude_ops=sp.parse_ops(vs_exclude_ops),
                       env=sp.parse_env(vs_env), python=vs_python)
    spec = sp.ServeSpec(
        model=sp.ModelSpec(layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads,
                           intermediate=intermediate, vocab=vocab, dtype=dtype, device=device,
                           seed=seed),
        workload=sp.Workload(requests=requests, prompt_len=prompt_len, output_len=output_len,
                             batch_size=batch_size, arrival=arrival, rate=rate,
                             warmup_batches=warmup_batches, seed=seed),
        a=a, b=b, rounds=rounds, alpha=alpha, order_seed=order_seed, check_steps=check_steps,
        profile_steps=profile_steps, exclude_failing=exclude_failing,
        check_cache=not no_check_cache,
        attribute=_attribute_spec(attribute, attribute_ops, attribute_budget,
                                  attribute_screen_rounds, attribute_min_share),
    ).validate()
    if not child_timeout > 0:
        raise UsageError("--child-timeout must be positive")
    sp.check_extras(spec)
    check_output_file(out, "--out", creates=True)
    check_output_dir(trace_dir, "--trace-dir")
    if b is not None and rounds < 2:
        raise UsageError("an A/B needs --rounds 2 or more (6 for a 95% interval)")
    err = Console(stderr=True, highlight=False)
    t0 = time.monotonic()

    def log(line: str) -> None:
        err.print(f"[dim]\\[{time.monotonic() - t0:6.1f} s] {escape(line)}[/]")

    from traceview.render.registry import RenderOptions, renderer

    def save(doc: dict) -> None:
        if out is not None:
            _write_atomically(out, as_text(renderer("json", "serve").render(
                as_written(doc), RenderOptions())))

    with launch_mod.forking(spec.variants, timeout_s=child_timeout,
                            fork=not spawn) as launch:  # templates import meanwhile
        doc = as_written(run_serve(spec, launch=launch, log=log, trace_dir=trace_dir,
                                   argv=_argv(), on_stage=save,
                                   report_dir=out.parent if out is not None else None))
    save(doc)
    from traceview.cli._common import write_document

    write_document(fmt, "serve", doc)
    if doc["stopped"]:
        sys.stdout.flush()
        print(f"traceview: error: {doc['stopped']}", file=sys.stderr)
        raise typer.Exit(3)


def _attribute_spec(on: bool, ops: str | None, budget: str | None,  # noqa: FBT001
                    screen_rounds: int, min_share: float) -> Any:
    """The ``--attribute*`` options (the budget read as ab's ``--until`` reads one)."""
    from traceview.errors import UsageError
    from traceview.multi.sequential import parse_until
    from traceview.serve import spec as sp

    if not on:
        if ops or budget:
            raise UsageError("--attribute-ops and --attribute-budget go with --attribute")
        return None
    try:
        until = parse_until([budget]) if budget else None
    except UsageError:
        until = None
    if budget and (until is None or until.seconds is None):
        raise UsageError(f"--attribute-budget {budget!r}: give a time (90s, 3min)")
    return sp.AttributeSpec(ops=sp.parse_ops(ops),
                            budget_s=None if until is None else until.seconds,
                            screen_rounds=screen_rounds, min_share=min_share)


def _write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` whole: a reader (or a time limit) never sees half a document."""
    from traceview.atomic import refuse_special

    refuse_special(path)  # a FIFO or a device is never replaced by a file
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _argv() -> list[str]:
    argv = list(sys.argv)
    prog = os.path.basename(argv[0]) if argv else "traceview"
    if prog == "__main__.py":
        argv[:1] = ["python", "-m", "traceview"]
    elif argv:
        argv[0] = prog
    return argv
