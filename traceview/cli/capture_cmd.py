"""``traceview capture``: measure one pointwise op carefully and write a trace explain reads.

Only option parsing and printing live here; the protocol is ``traceview.opcapture``.
Choices are plain strings validated by ``CaptureConfig`` so that every bad value is one
line on stderr and exit 2 through ``run_guarded`` (typer's own choice errors print a
usage box). A failed correctness check (wrong values, or the op crashed) is exit 3 and
a hang past ``--timeout`` exit 2, each with the one failure report of
``traceview.checks.failure`` on stderr (``--format json``: that report as JSON on
stdout). Nothing heavy is imported at module level: torch and triton load only when a
capture actually runs.
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


def _opt(help: str, panel: str, *names: str, **kw: Any) -> typer.models.OptionInfo:
    return typer.Option(*names, help=help, rich_help_panel=panel, **kw)


_RUN, _PROTO, _OUT = "Run", "Protocol", "Output"
H_OP = "Op: add sub mul div neg abs relu sigmoid silu gelu exp."
H_IMPL = ("triton (the project's kernel) | torch (eager ATen) | inductor (torch.compile) | "
          "flag_gems | package.module:function (your implementation, called like the op).")
H_SHAPE = ("Shape, e.g. 1x4096 or 2**12; two comma-separated shapes broadcast "
           "(16x4096,4096).")
H_DTYPE = "float32 float16 bfloat16 float64 int32 int64 (or f32, f16, bf16...)."
H_LAYOUT = "contiguous | transposed | strided: real non-contiguous inputs."
H_SCALAR = "Binary ops: the tensor-scalar form, with this scalar."
H_DEVICE = "cuda | cpu (cpu: --impl torch, or --impl triton through Triton's interpreter)."
H_MODE = "eager | graph (profile CUDA graph replays; not eager results)."
H_SYNC = "each: synchronize inside every call range | end: once after the loop."
H_WARMUP = "Warm-up calls before the baseline and the trace."
H_ITERS = "Profiled calls (call_0 .. call_N-1)."
H_BASELINE_N = "Calls per unprofiled baseline figure."
H_STACK = "Python frames in the trace (default: on for ops of 65536 elements or fewer)."
H_SHAPES = "Record op input shapes."
H_GRAPH_OPS = "With --mode graph: ops captured per graph (one call = one replay)."
H_STREAMS = "Run each call's op once on each of N CUDA streams (kernels overlap)."
H_SEED = "Seed for the random inputs."
H_TIMEOUT = ("Seconds the isolated correctness check may go without an answer before the "
             "op counts as hung (exit 2).")
H_CHECK_LAYOUTS = ("Only check correctness, no timing, over the layouts a model passes "
                   "(transposed, strided, sliced, broadcast on each axis, scalar, 0-dim); "
                   "prints a table. Default shape 4x8x16x32.")
H_CHECK_CACHE = ("Only check that a warm (cached) path stays right: one process calls the op on "
                 "a sequence that changes one thing at a time (shape, strides, offset, dtype, "
                 "scalar, stream, CUDA graph) and calls the base again after each; every "
                 "output vs float64. Exit 3 names the first wrong call. Default shape 4x8x16x32.")
H_FORMAT = "text | json: the failure report, the --check-layouts table, or the capture summary."
H_SWEEP = "numel=START..STOP[:FACTOR]: one capture per size (FACTOR defaults to 4), then a table."
H_FN = ("Your callable, pkg.module:function: called with the op's inputs, checked against "
        "the op's float64 reference (or --ref), measured like an --impl.")
H_INPUTS = "pkg.module:function(device) -> tuple of arguments for --fn (default: from --op/--shape)."
H_REF = "pkg.module:function: the reference, called on the inputs upcast to float64."
H_LAUNCHER = ("--impl triton's form: minimal (1-D kernel, only allocate + launch per call: "
              "contiguous inputs of one shape and dtype) | library (strided rank-4 kernel, "
              "promotion, broadcasting and strides per call) | auto: minimal where it applies.")
H_OUT_ = ("Trace file (.json.gz or .json); with --sweep, a folder. "
          "(default: traceview-<op>-<impl>-<shape>-<dtype>-<mode>.json.gz)")


def capture(
    *,  # typer passes every parameter by name: flags are keyword-only
    op: Annotated[str, _opt(H_OP, _RUN)],
    impl: Annotated[str | None, _opt(H_IMPL + " (default: triton)", _RUN,
                                     show_default=False)] = None,
    shape: Annotated[str | None, _opt(H_SHAPE, _RUN, show_default="1x4096")] = None,
    dtype: Annotated[str, _opt(H_DTYPE, _RUN)] = "float32",
    layout: Annotated[str, _opt(H_LAYOUT, _RUN)] = "contiguous",
    scalar: Annotated[str | None, _opt(H_SCALAR, _RUN)] = None,
    device: Annotated[str, _opt(H_DEVICE, _RUN)] = "cuda",
    mode: Annotated[str, _opt(H_MODE, _PROTO)] = "eager",
    sync: Annotated[str, _opt(H_SYNC, _PROTO)] = "each",
    warmup: Annotated[int, _opt(H_WARMUP, _PROTO)] = 10,
    iters: Annotated[int, _opt(H_ITERS, _PROTO)] = 30,
    baseline_n: Annotated[int, _opt(H_BASELINE_N, _PROTO, "--baseline-n")] = 200,
    with_stack: Annotated[bool | None, _opt(H_STACK, _PROTO, "--with-stack/--no-with-stack",
                                            show_default=False)] = None,
    record_shapes: Annotated[bool, _opt(H_SHAPES, _PROTO,
                                        "--record-shapes/--no-record-shapes")] = True,
    graph_ops: Annotated[int, _opt(H_GRAPH_OPS, _PROTO, "--graph-ops")] = 1,
    streams: Annotated[int, _opt(H_STREAMS, _PROTO)] = 1,
    seed: Annotated[int, _opt(H_SEED, _PROTO)] = 0,
    timeout: Annotated[float, _opt(H_TIMEOUT, _PROTO)] = float(CHILD_TIMEOUT_S),
    launcher: Annotated[str, _opt(H_LAUNCHER, _RUN)] = "auto",
    check_layouts: Annotated[bool, _opt(H_CHECK_LAYOUTS, _OUT, "--check-layouts")] = False,
    check_cache: Annotated[bool, _opt(H_CHECK_CACHE, _OUT, "--check-cache")] = False,
    format: Annotated[str, _opt(H_FORMAT, _OUT, "--format")] = "text",
    fn: Annotated[str | None, _opt(H_FN, _RUN, show_default=False)] = None,
    inputs: Annotated[str | None, _opt(H_INPUTS, _RUN, show_default=False)] = None,
    ref: Annotated[str | None, _opt(H_REF, _RUN, show_default=False)] = None,
    sweep: Annotated[str | None, _opt(H_SWEEP, _OUT)] = None,
    out: Annotated[Path | None, _opt(H_OUT_, _OUT, show_default=False)] = None,
) -> None:
    """Capture a reproducible trace of one pointwise op: correctness first, cold path apart,
    unprofiled baseline beside the profiled calls, all metadata inside the trace."""
    options = dict(locals())
    run_guarded(lambda: _capture(**options))


def _capture(*, op, impl, shape, dtype, layout, scalar, device, mode, sync, warmup, iters,
             baseline_n, with_stack, record_shapes, graph_ops, streams, seed, timeout,
             check_layouts, format, sweep, out, fn=None, inputs=None, ref=None,
             check_cache=False, launcher="auto") -> None:
    from rich.console import Console

    from traceview.errors import CaptureError, CorrectnessError
    from traceview.workload import config as cfg
    from traceview.workload.ops import canonical_dtype

    if format not in ("text", "json"):
        raise CaptureError(f"--format must be text or json; got {format!r}")
    if format == "json" and sweep is not None and not check_layouts:
        raise CaptureError("--format json with --sweep: the sweep writes sweep.json into its "
                           "folder already")
    if check_layouts and check_cache:
        raise CaptureError("--check-layouts and --check-cache are two checks: run one at a time")
    for flag, on in (("--check-layouts", check_layouts), ("--check-cache", check_cache)):
        if on and (sweep is not None or out is not None):
            raise CaptureError(f"{flag} writes nothing and times nothing: drop "
                               + ("--sweep" if sweep is not None else "--out"))
    if check_cache and inputs:
        raise CaptureError("--check-cache builds its own operands from --op/--shape/--dtype; "
                           "leave out --inputs")
    if shape is None:
        from traceview.checks.layouts import DEFAULT_SHAPE

        shape = "x".join(map(str, DEFAULT_SHAPE)) if check_layouts or check_cache else "1x4096"
    sizes = cfg.parse_sweep(sweep) if sweep is not None else None
    if sizes is not None:
        check_output_dir(out, "--out")
    else:
        check_output_file(out, "--out", creates=True)
    if impl is None:
        impl = "fn" if fn else "triton"
    config = cfg.CaptureConfig(
        op=op.strip().lower(), impl=impl, shapes=cfg.parse_shapes(shape),
        dtype=canonical_dtype(dtype), layout=layout, scalar=cfg.parse_scalar(scalar),
        device=device, mode=mode, sync=sync, warmup=warmup, iters=iters,
        baseline_n=baseline_n, with_stack=with_stack, record_shapes=record_shapes,
        graph_ops=graph_ops, streams=streams, seed=seed, timeout_s=timeout,
        fn=fn, inputs_fn=inputs, ref=ref, launcher=launcher,
        out=None if sizes is not None else out, argv=_argv(),
    ).validate()
    console = Console()
    try:
        if check_layouts:
            _check_layouts(console, config, format)
        elif check_cache:
            _check_cache(console, config, format)
        elif sizes is not None:
            _sweep(console, config, sizes, out)
        else:
            _one(console, config, format)
    except CorrectnessError as exc:
        if exc.report is None:
            raise
        _failure(exc, format)


def _check_cache(console, config, format) -> None:
    from rich.console import Console

    from traceview.checks import cache_check

    with Console(stderr=True).status(f"checking the warm path of {config.op} "
                                     f"({config.impl_label}, {config.dtype}) on {config.device}..."):
        doc = cache_check.check_cache(config, config.timeout_s)
    _show(console, "cache_check", doc, format)


def _one(console, config, format) -> None:
    from rich.console import Console

    from traceview.opcapture.protocol import run_capture
    from traceview.opcapture.summary import CaptureSummary, analyze_trace

    with Console(stderr=True).status(f"capturing {config.op} ({config.impl}, "
                                     f"{config.shape_label} {config.dtype}, {config.mode}) "
                                     f"on {config.device}..."):
        result = run_capture(config)
    if format == "json":
        _show(console, "capture", CaptureSummary(result.metadata, result.path,
                                                 result.cold_path, None, None), format)
        return
    analysis, why_not = analyze_trace(result.path)
    _show(console, "capture", CaptureSummary(result.metadata, result.path, result.cold_path,
                                             analysis, why_not))


def _failure(exc, format) -> None:
    """The one failure report: text on stderr, or JSON on stdout; then the exit code."""
    from traceview.render.registry import RenderOptions, renderer

    text = as_text(renderer("text", "failure").render(exc.report, RenderOptions()))
    if format == "json":
        sys.stdout.write(as_text(renderer("json", "failure").render(exc.report, RenderOptions())))
        print(f"traceview: error: {text.splitlines()[0]}", file=sys.stderr)
    else:
        print("traceview: error: " + text, file=sys.stderr)
    raise typer.Exit(exc.exit_code)


def _check_layouts(console, config, format) -> None:
    from rich.console import Console

    from traceview.checks import layouts

    with Console(stderr=True).status(f"checking {config.op} ({config.impl}, {config.dtype}) "
                                     f"over layouts on {config.device}..."):
        rows = layouts.check_layouts(config, config.timeout_s)
    _show(console, "layouts", layouts.document(config, rows), format)
    code = layouts.exit_code(rows)
    if code:
        raise typer.Exit(code)


def _sweep(console, config, sizes, folder) -> None:
    from rich.markup import escape

    from traceview.sweep.sweep import preflight, run_sweep
    from traceview.sweep.sweep_report import SweepOutput, write_sweep
    from traceview.units import fmt_bytes, fmt_ns, fmt_rate

    folder = preflight(config, sizes, folder)
    console.print(f"[dim]sweep {config.op} ({config.impl}, {config.dtype}, {config.mode}): "
                  f"{len(sizes)} sizes {sizes[0]}..{sizes[-1]}[/]")

    def progress(row):
        if row.error is not None:
            console.print(f"  numel {row.numel}: [red]{escape(row.error)}[/]")
        else:
            rate = "" if row.gb_per_s is None else (
                f", {fmt_rate(row.gb_per_s)} for {fmt_bytes(row.bytes)}"
                + ("" if row.share_of_copy_peak is None else
                   f" ({100 * row.share_of_copy_peak:.0f}% of the copy peak)"))
            console.print(f"  numel {row.numel}: kernel {fmt_ns(row.kernel_ns)}, "
                          f"full API {fmt_ns(row.full_api_ns)}{rate}")

    result = run_sweep(config, sizes, folder=folder, on_row=progress)
    _show(console, "sweep", SweepOutput(result, tuple(write_sweep(result))))


def _show(console, subject, doc, format="text") -> None:
    """``doc`` through the render registry, onto ``console``'s file at its width and colours."""
    from traceview.render.registry import RenderOptions, renderer

    options = RenderOptions(width=console.width,
                            color=console.color_system if format == "text" else None)
    console.file.write(as_text(renderer(format, subject).render(doc, options)))


def _argv() -> tuple[str, ...]:
    """This process's command line, with the program spelled as a user would type it.

    Inside a test runner (no ``capture`` in argv) it returns () so the metadata falls back
    to the fully resolved reproducer line instead of the runner's own argv.
    """
    argv = list(sys.argv)
    if "capture" not in argv[1:]:
        return ()
    prog = os.path.basename(argv[0])
    if prog == "__main__.py":
        argv[:1] = ["python", "-m", "traceview"]
    elif prog == "app.py":
        argv[:1] = ["python", "-m", "traceview.cli.app"]
    else:
        argv[0] = prog
    return tuple(argv)
