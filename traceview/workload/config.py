"""What one capture was asked to do, parsed and validated without importing torch.

Every value that changes the measurement lives in :class:`CaptureConfig`, and the
metadata written into the trace is built from it, so a trace always says how it was
made. Validation happens here (torch-free, milliseconds) so bad input is one line and
exit 2 before any expensive import or device work.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path

from traceview.errors import CaptureError
from traceview.runner.outcome import CHILD_TIMEOUT_S
from traceview.workload import ops

SUFFIXES = (".json.gz", ".json")


def check_out_path(path: Path) -> None:
    """``--out`` must name a ``.json`` or ``.json.gz`` file in a writable place."""
    if not str(path).endswith(SUFFIXES):
        raise CaptureError(f"--out {path}: the trace name must end in .json.gz or .json")
    if path.exists() and path.is_dir():
        raise CaptureError(f"--out {path} is a folder; give a file name ending in .json.gz")


IMPLS = ("triton", "torch", "inductor", "flag_gems", "fn")
LAYOUTS = ("contiguous", "transposed", "strided")
DEVICES = ("cuda", "cpu")
MODES = ("eager", "graph")
SYNCS = ("each", "end")
#: ``--launcher``: the built-in Triton implementation's form (``workload/kernels.py``).
LAUNCHERS = ("auto", "minimal", "library")

#: ``--with-stack`` left unset turns Python frames on when the op is this small or
#: smaller: there host overhead is the story and the frames explain it. Larger ops are
#: device-bound and the frames only add profiler perturbation.
AUTO_STACK_MAX_NUMEL = 1 << 16

#: Sweep step when ``--sweep`` names no factor: every power of 4 (2**8, 2**10, ...).
DEFAULT_SWEEP_FACTOR = 4

Shape = tuple[int, ...]


@dataclass(frozen=True)
class CaptureConfig:
    """One capture, fully resolved. ``shapes`` has one entry per tensor input."""

    op: str
    impl: str = "triton"
    shapes: tuple[Shape, ...] = ((1, 4096),)
    dtype: str = "float32"
    layout: str = "contiguous"
    scalar: float | int | None = None
    device: str = "cuda"
    mode: str = "eager"
    sync: str = "each"
    warmup: int = 10
    iters: int = 30
    baseline_n: int = 200
    with_stack: bool | None = None
    record_shapes: bool = True
    graph_ops: int = 1
    streams: int = 1
    seed: int = 0
    #: The isolated correctness check: seconds the op may go without an answer. The one
    #: child limit (``runner.outcome``): it covers compiling (Inductor, autotuning).
    timeout_s: float = float(CHILD_TIMEOUT_S)
    launcher: str = "auto"  # --impl triton: minimal where it applies, else library
    #: The user's callable (``--fn pkg.module:function``; ``impl`` is then ``"fn"``), their
    #: input builder (``--inputs``) and reference (``--ref``): see ``workload.usercode``.
    fn: str | None = None
    inputs_fn: str | None = None
    ref: str | None = None
    out: Path | None = None
    argv: tuple[str, ...] = field(default_factory=tuple)

    # -- derived ---------------------------------------------------------------------
    @property
    def spec(self) -> ops.OpSpec:
        return ops.get_op(self.op)

    @property
    def out_shape(self) -> Shape:
        """The broadcast output shape of all tensor inputs."""
        return broadcast_shapes(self.shapes)

    @property
    def numel(self) -> int:
        return math.prod(self.out_shape)

    @property
    def interpreted(self) -> bool:
        """Triton on the CPU runs through its interpreter (``TRITON_INTERPRET=1``)."""
        return self.impl == "triton" and self.device == "cpu"

    @property
    def stack(self) -> bool:
        """``--with-stack`` as resolved: explicit value, else on for small ops.

        The interpreter's own Python frames would bury the launcher's, so auto is off
        there.
        """
        if self.with_stack is not None:
            return self.with_stack
        return self.numel <= AUTO_STACK_MAX_NUMEL and not self.interpreted

    @property
    def impl_label(self) -> str:
        """What runs, for people: the user's callable (``--fn``) or the ``--impl`` name."""
        return self.fn or self.impl

    @property
    def shape_label(self) -> str:
        return "x".join(str(d) for d in self.out_shape)

    def default_out(self) -> Path:
        impl = self.impl if self.fn is None else self.fn.replace(":", ".")
        return Path(
            f"traceview-{self.op}-{impl}-{self.shape_label}-"
            f"{ops.DTYPE_SHORT[self.dtype]}-{self.mode}.json.gz"
        )

    @property
    def out_path(self) -> Path:
        return self.out if self.out is not None else self.default_out()

    @property
    def command(self) -> str:
        """The exact command line of this process, as a shell string."""
        return shlex.join(self.argv) if self.argv else self.reproducer

    @property
    def reproducer(self) -> str:
        """A ``traceview capture`` line with every resolved option: pasteable, complete."""
        parts = [
            "traceview", "capture", "--op", self.op, "--impl", self.impl,
            "--shape", ",".join("x".join(map(str, s)) for s in self.shapes),
            "--dtype", self.dtype, "--layout", self.layout, "--device", self.device,
            "--mode", self.mode, "--sync", self.sync, "--warmup", str(self.warmup),
            "--iters", str(self.iters), "--baseline-n", str(self.baseline_n),
            "--with-stack" if self.stack else "--no-with-stack",
            "--record-shapes" if self.record_shapes else "--no-record-shapes",
            "--seed", str(self.seed),
        ]
        if self.scalar is not None:
            parts += ["--scalar", str(self.scalar)]
        if self.mode == "graph":
            parts += ["--graph-ops", str(self.graph_ops)]
        if self.streams != 1:
            parts += ["--streams", str(self.streams)]
        if self.impl == "triton" and self.launcher != "auto":
            parts += ["--launcher", self.launcher]
        for flag, value in (("--fn", self.fn), ("--inputs", self.inputs_fn), ("--ref", self.ref)):
            if value:
                parts += [flag, value]
        if self.fn:
            del parts[4:6]  # --impl fn is implied by --fn
        return shlex.join(parts)

    def with_(self, **changes: object) -> CaptureConfig:
        return replace(self, **changes)  # type: ignore[arg-type]

    # -- validation ------------------------------------------------------------------
    def validate(self) -> CaptureConfig:
        """Check every combination that cannot work; return self (resolved) or raise."""
        spec = ops.get_op(self.op)
        if ":" in self.impl:
            raise CaptureError(f"--impl {self.impl}: a callable is named with --fn "
                               "pkg.module:function")
        _one_of("impl", self.impl, IMPLS)
        _one_of("layout", self.layout, LAYOUTS)
        _one_of("device", self.device, DEVICES)
        _one_of("mode", self.mode, MODES)
        _one_of("sync", self.sync, SYNCS)
        _one_of("launcher", self.launcher, LAUNCHERS)
        ops.check_dtype(spec, self.dtype)
        _check_user_code(self)
        if spec.arity == 1 and (len(self.shapes) > 1 or self.scalar is not None):
            raise CaptureError(f"op {self.op!r} is unary: give one shape and no --scalar")
        if len(self.shapes) > 2:
            raise CaptureError("--shape takes at most two shapes (one per input): 16x4096,4096")
        if len(self.shapes) == 2 and self.scalar is not None:
            raise CaptureError("give either a second shape or --scalar, not both")
        if self.scalar is not None and not _finite(self.scalar):
            raise CaptureError(f"--scalar must be a finite number, got {self.scalar}")
        if self.op == "div" and self.scalar == 0:
            raise CaptureError("--scalar 0 with div divides by zero; pick a non-zero scalar")
        broadcast_shapes(self.shapes)  # raises if the shapes do not broadcast
        first = self.shapes[0]
        if self.layout == "transposed" and (len(first) < 2 or min(first[-2:]) < 2):
            raise CaptureError(
                "--layout transposed needs the last two dimensions > 1 (e.g. 64x4096), "
                f"got {'x'.join(map(str, first))}"
            )
        if self.layout == "strided" and first[-1] < 2:
            raise CaptureError("--layout strided needs a last dimension > 1")
        if self.out is not None:
            check_out_path(self.out)
        for name, value, low in (
            ("iters", self.iters, 1), ("warmup", self.warmup, 0),
            ("baseline-n", self.baseline_n, 1), ("graph-ops", self.graph_ops, 1),
            ("streams", self.streams, 1),
        ):
            if value < low:
                raise CaptureError(f"--{name} must be >= {low}, got {value}")
        if self.streams > 4:
            raise CaptureError(f"--streams takes 1 to 4, got {self.streams}")
        if self.graph_ops != 1 and self.mode != "graph":
            raise CaptureError("--graph-ops only applies with --mode graph")
        if not self.timeout_s > 0:
            raise CaptureError(f"--timeout must be > 0 seconds, got {self.timeout_s}")
        if self.device == "cpu":
            if self.impl not in ("torch", "triton", "fn"):
                raise CaptureError(
                    f"--impl {self.impl} needs --device cuda; on the CPU use --impl torch "
                    "or --impl triton (Triton's interpreter)"
                )
            if self.mode == "graph":
                raise CaptureError("--mode graph needs --device cuda (CUDA graphs)")
            if self.streams != 1:
                raise CaptureError("--streams needs --device cuda")
        if self.streams != 1 and self.mode == "graph":
            raise CaptureError("--streams with --mode graph is not supported; use eager")
        return self


def _check_user_code(config: CaptureConfig) -> None:
    """``--fn`` and ``--impl fn`` go together; every callable is ``pkg.module:function``."""
    if (config.impl == "fn") != (config.fn is not None):
        raise CaptureError("--fn pkg.module:function names the callable; do not combine it "
                           "with --impl" if config.fn else "--impl fn needs --fn pkg.module:function")
    for flag, value in (("fn", config.fn), ("inputs", config.inputs_fn), ("ref", config.ref)):
        if value is not None:
            check_spec(flag, value)


_SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def check_spec(flag: str, spec: str) -> None:
    """``pkg.module:function`` or one line naming the flag (no import yet; the callable
    loads in ``workload.usercode`` only when a capture runs)."""
    if not _SPEC.match(spec):
        raise CaptureError(f"--{flag} {spec!r}: use pkg.module:function, e.g. mykernels:add")


def _one_of(flag: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        extra = " or package.module:function" if flag == "impl" else ""
        raise CaptureError(
            f"--{flag} must be one of {', '.join(allowed)}{extra}; got {value!r}")


def _finite(x: float) -> bool:
    return not (isinstance(x, float) and (math.isnan(x) or math.isinf(x)))


# -- parsing ---------------------------------------------------------------------------
_INT = re.compile(r"^\s*(\d+)(?:\s*\*\*\s*(\d+))?\s*$")


def parse_int(text: str, what: str) -> int:
    """``4096`` or ``2**12`` (no other arithmetic: this is not an eval)."""
    m = _INT.match(text)
    if not m:
        raise CaptureError(f"bad {what} {text!r}: use an integer like 4096 or 2**12")
    base, exp = int(m.group(1)), m.group(2)
    return base ** int(exp) if exp is not None else base


def parse_shapes(text: str) -> tuple[Shape, ...]:
    """``1x4096`` -> ((1, 4096),); ``16x4096,4096`` -> two inputs that broadcast."""
    shapes = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise CaptureError(f"bad shape {text!r}: empty shape; use e.g. 1x4096 or 16x4096,4096")
        dims = tuple(parse_int(d, f"dimension in shape {text!r}") for d in part.lower().split("x"))
        if any(d < 1 for d in dims):
            raise CaptureError(f"bad shape {text!r}: every dimension must be >= 1")
        if len(dims) > 4:
            raise CaptureError(f"bad shape {text!r}: at most 4 dimensions")
        shapes.append(dims)
    return tuple(shapes)


def broadcast_shapes(shapes: tuple[Shape, ...]) -> Shape:
    """NumPy/PyTorch broadcasting, in plain Python (no torch needed to validate)."""
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = {s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise CaptureError(
                "shapes " + " and ".join("x".join(map(str, s)) for s in shapes)
                + " do not broadcast"
            )
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def parse_scalar(text: str | None) -> float | int | None:
    """``2`` stays an int (so int tensors keep their dtype), ``2.5`` is a float."""
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise CaptureError(f"bad --scalar {text!r}: not a number") from None


_SWEEP = re.compile(r"^\s*numel\s*=\s*([^.]+?)\s*\.\.\s*([^:]+?)\s*(?::\s*(\S+))?\s*$")


def parse_sweep(text: str) -> list[int]:
    """``numel=2**8..2**24[:F]``: START, START*F, START*F**2 ... up to STOP (F defaults
    to 4). STOP is always included, so the largest size asked for is measured."""
    m = _SWEEP.match(text)
    if not m:
        raise CaptureError(
            f"bad --sweep {text!r}: use numel=START..STOP[:FACTOR], e.g. numel=2**8..2**24"
        )
    start, stop = parse_int(m.group(1), "sweep start"), parse_int(m.group(2), "sweep stop")
    factor = parse_int(m.group(3), "sweep factor") if m.group(3) else DEFAULT_SWEEP_FACTOR
    if start < 1 or stop < start:
        raise CaptureError(f"bad --sweep {text!r}: need 1 <= START <= STOP")
    if factor < 2:
        raise CaptureError(f"bad --sweep {text!r}: FACTOR must be >= 2")
    sizes = []
    n = start
    while n <= stop:
        sizes.append(n)
        n *= factor
    if sizes[-1] != stop:
        sizes.append(stop)
    if len(sizes) > 64:
        raise CaptureError(f"--sweep {text!r} gives {len(sizes)} sizes; 64 at most")
    return sizes
