"""The implementations capture can measure, each reduced to one zero-argument call.

``build_impl`` returns an :class:`Impl` whose ``call()`` is one complete operator
invocation on the prepared inputs: exactly what a user's code would run, and nothing
else (no input creation, no synchronisation: the protocol decides where those go).
Any process-wide switch an implementation needs (FlagGems' ATen overrides) is entered
once for the whole capture through ``stack``, outside every timed region.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from traceview.errors import CaptureError
from traceview.workload.config import CaptureConfig
from traceview.workload.device import Device, import_triton
from traceview.workload.inputs import Inputs

FLAG_GEMS_INSTALL = (
    "--impl flag_gems needs FlagGems, which is not importable here; install it with "
    "'pip install flag_gems' (or from source: https://github.com/FlagOpen/FlagGems) "
    "into the same environment as torch and triton"
)


@dataclass
class Impl:
    """One implementation, ready to call. ``detail`` goes into the trace metadata."""

    name: str
    call: Callable[[], Any]
    detail: dict[str, Any] = field(default_factory=dict)


def build_impl(config: CaptureConfig, device: Device, inputs: Inputs,
               stack: contextlib.ExitStack) -> Impl:
    """Dispatch on ``config.impl``; unavailable implementations raise CaptureError."""
    builders = {
        "torch": _torch_impl,
        "triton": _triton_impl,
        "inductor": _inductor_impl,
        "flag_gems": _flag_gems_impl,
        "fn": _user_impl,
    }
    return builders[config.impl](config, device, inputs, stack)


def _torch_impl(config, device, inputs, stack) -> Impl:
    fn = config.spec.torch_fn(device.torch)
    args = inputs.args
    entry = "torch." + config.spec.aten.replace(":", ".").lstrip(".")
    return Impl("torch", lambda: fn(*args), {"entry": entry})


def _triton_impl(config, device, inputs, stack) -> Impl:
    """The project's kernel in the form ``config.launcher`` names (``workload.kernels``):
    ``minimal`` (allocate and launch) wherever it computes what the op does, ``library``
    (promotion, broadcasting, strides per call) otherwise or when asked; ``auto`` picks
    the first that applies. The form and the reason are recorded in the metadata."""
    if config.interpreted:
        _check_interpreter_possible()
    import_triton()
    from traceview.workload import kernels

    args = inputs.args
    fits, why = kernels.minimal_applies(device.torch, config.op, args)
    form = getattr(config, "launcher", "auto")
    if form == "minimal" and not fits:
        raise CaptureError(f"--launcher minimal does not apply: {why}; use --launcher "
                           "library (or leave --launcher at auto)")
    if form == "auto":
        form = "minimal" if fits else "library"
        reason = f"auto: {why}"
    else:
        reason = f"asked (--launcher {form})"
    launcher: kernels.MinimalLauncher | kernels.PointwiseLauncher
    if form == "minimal":
        launcher = kernels.MinimalLauncher(device.torch, config.op, args)
        what = (f"minimal: 1-D {launcher.kernel.__name__} with 4 runtime arguments, grid "
                "and launch prepared once; per call only the output allocation and the "
                "launch")
    else:
        launcher = kernels.PointwiseLauncher(device.torch, config.op)
        what = ("library: strided rank-4 pointwise_kernel with 16 runtime arguments; per call "
                "type promotion, broadcasting and stride work, as an operator library does")
    detail = {
        "kernel": launcher.kernel.__name__,
        "launcher": f"traceview.workload.kernels.{type(launcher).__name__}",
        "launcher_form": form,
        "launcher_why": reason,
        "launcher_does": what,
        "block": kernels.BLOCK,
        "num_warps": kernels.NUM_WARPS,
        "interpreter": config.interpreted,
    }
    call = launcher.call if isinstance(launcher, kernels.MinimalLauncher) else launcher
    return Impl("triton", lambda: call(*args), detail)


def _check_interpreter_possible() -> None:
    """Triton decides interpreter-or-compiler for its own ``tl.*`` helpers at import
    time, so ``TRITON_INTERPRET=1`` must precede the first ``import triton``. A fresh
    ``traceview capture`` process guarantees that; a library caller may not have."""
    std = sys.modules.get("triton.language.standard")
    helper = getattr(std, "sigmoid", None)
    if helper is not None and type(helper).__name__ != "InterpretedFunction":
        raise CaptureError(
            "--device cpu --impl triton needs Triton's interpreter, but triton was already "
            "imported in this process without TRITON_INTERPRET=1; run traceview capture in a "
            "fresh process, or set TRITON_INTERPRET=1 before anything imports triton"
        )


def _inductor_impl(config, device, inputs, stack) -> Impl:
    """``torch.compile`` of the bare op, static shapes, fresh dynamo state.

    ``dynamic=False`` so the cold call specialises on this exact shape, as the first call
    of a new shape would in a real model.
    """
    torch = device.torch
    torch._dynamo.reset()
    fn = config.spec.torch_fn(torch)
    scalar = inputs.scalar
    if scalar is None:
        compiled = torch.compile(lambda *t: fn(*t), dynamic=False, fullgraph=True)
    else:
        compiled = torch.compile(lambda t: fn(t, scalar), dynamic=False, fullgraph=True)
    tensors = tuple(inputs.tensors)
    stack.callback(torch._dynamo.reset)
    return Impl("inductor", lambda: compiled(*tensors),
                {"compile": "torch.compile(dynamic=False, fullgraph=True)"})


def _flag_gems_impl(config, device, inputs, stack) -> Impl:
    try:
        import flag_gems
    except ImportError:
        raise CaptureError(FLAG_GEMS_INSTALL) from None
    stack.enter_context(flag_gems.use_gems())
    fn = config.spec.torch_fn(device.torch)
    args = inputs.args
    return Impl("flag_gems", lambda: fn(*args), {"entry": "flag_gems.use_gems() + ATen dispatch"})


def _user_impl(config, device, inputs, stack) -> Impl:
    """The user's callable (``--fn``) on the prepared arguments; see ``workload.usercode``."""
    from traceview.workload.usercode import load_callable

    fn = load_callable("fn", config.fn)
    args = inputs.args
    return Impl("fn", lambda: fn(*args), {"entry": config.fn})


def on_streams(device: Device, call: Callable[[], Any], n: int) -> Callable[[], Any]:
    """One "call" that runs ``call`` once on each of ``n`` side streams, then joins.

    Each side stream first waits for the current stream (inputs are ready) and the
    current stream waits for all of them at the end, so the launches can overlap on the
    device while the call stays a well-formed unit for sync and for the trace.
    """
    torch = device.torch
    streams = [torch.cuda.Stream() for _ in range(n)]

    def call_on_streams() -> Any:
        current = torch.cuda.current_stream()
        outs = []
        for s in streams:
            s.wait_stream(current)
            with torch.cuda.stream(s):
                outs.append(call())
        for s in streams:
            current.wait_stream(s)
        return outs[0]

    return call_on_streams
