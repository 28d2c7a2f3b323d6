"""``capture --check-cache``: is a warm cached path still right when the next call differs?

The review question of a fix that caches the host work of a pointwise call (as
FlagGems #4812 proposes): does the cache store reusable structural work, or does it keep state of one
invocation that the next one then gets? ``--check-layouts`` cannot tell: each of its
layouts is a first call. Here one warm process calls the implementation on a sequence
that changes one thing at a time against a *base* call (the capture's own operands) and
calls the base again after each change::

    base, larger shape, base, smaller shape, base, other rank, base, lhs transposed, base,
    rhs broadcast, base, lhs every other element, base, lhs not 16-byte aligned, base,
    lhs sliced one row in, base, other dtype, base, mixed dtypes, base, 0-dim rhs, base,
    Python float scalar, base, Python int scalar, base, [another CUDA stream, base,
    inside a CUDA graph, base]

Every call gets fresh seeded values (so a cache of *results* is caught too) and every
output is compared with the float64 reference, dtype and shape included
(``correctness.compare``). A cache keyed on too little returns the state of an earlier
call: the first call that differs from it in what the key left out is wrong, and the
report names that call, what changed from the call before it (from the operands as
built: shape, dtype, strides, storage offset, 16-byte alignment, scalar, stream, graph),
the worst error and the command that reproduces it. Exit 3, nothing else measured or
written; a crash or hang ends the child process only (``isolation.run_child``) and names
the call it happened in.

The implementation is resolved once per process (:func:`_resolve`): unlike
``impls.build_impl``, whose ``Impl.call`` is bound to one set of inputs, the check needs
one warm implementation called with changing arguments. Torch-free on the parent side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from traceview.checks.failure import STARTUP_S
from traceview.documents import stamp
from traceview.errors import CaptureError, CorrectnessError, KernelHangError
from traceview.render.measured.checks import cache_check_headline as headline
from traceview.runner import isolation
from traceview.runner.outcome import Outcome
from traceview.workload.config import CaptureConfig

CHILD_ENTRY = "traceview.checks.cache_check:run_sequence"
#: The base shape when ``--shape`` is not given: rank 4, every dim > 1 (so transposed and
#: broadcast views exist), small enough for Triton's CPU interpreter.
DEFAULT_SHAPE = (4, 8, 16, 32)
SCALAR_FLOAT, SCALAR_INT = 2.5, -3
#: The dtype both operands take in the "other dtype" step, and the rhs dtype of the
#: "mixed dtypes" step (chosen so that promotion gives another output dtype where it can).
OTHER_DTYPE = {"float32": "float16", "float16": "float32", "bfloat16": "float32",
               "float64": "float32", "int32": "int64", "int64": "int32"}
MIXED_RHS = {"float32": "float64", "float16": "float32", "bfloat16": "float16",
             "float64": "float16", "int32": "int64", "int64": "float32"}
FLOATS_ONLY = ("div", "sigmoid", "silu", "gelu", "exp")


@dataclass(frozen=True)
class Step:
    """One call of the sequence: its operands (specs the child builds) and context."""

    name: str
    operands: tuple[dict[str, Any], ...]
    context: str = "eager"  # "eager" | "stream" | "graph"

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "operands": list(self.operands), "context": self.context}


def _x(shape: Any) -> str:
    return "x".join(map(str, shape)) or "()"


def _t(shape: tuple[int, ...], dtype: str, layout: str = "contiguous") -> dict[str, Any]:
    return {"shape": list(shape), "dtype": dtype, "layout": layout}


def base_operands(config: CaptureConfig) -> tuple[dict[str, Any], ...]:
    """The capture's own operands: its shapes, dtype, layout and scalar."""
    shapes = config.shapes
    if config.spec.arity == 2 and len(shapes) == 1 and config.scalar is None:
        shapes = (shapes[0], shapes[0])
    ops: list[dict[str, Any]] = [_t(tuple(s), config.dtype, config.layout) for s in shapes]
    if config.scalar is not None:
        ops.append({"scalar": config.scalar})
    return tuple(ops)


def steps(config: CaptureConfig) -> list[Step]:
    """The seeded sequence for ``config``: base, change, base, change, ..., base.

    Changes a shape cannot express (a transposed view needs the last two dims > 1) are
    left out rather than faked; dtype changes stay within the dtypes the op takes.
    """
    shape = tuple(config.out_shape)
    rank = len(shape)
    dt = config.dtype
    binary = config.spec.arity == 2
    base = Step("base", base_operands(config))

    def like(s: tuple[int, ...], dtype: str = dt, layout: str = "contiguous"):
        return (_t(s, dtype, layout),) * (2 if binary else 1)

    changes: list[Step] = []
    larger = (shape[0] * 2,) + shape[1:]
    changes.append(Step(f"shape: larger ({_x(larger)})", like(larger)))
    k = max(range(rank), key=lambda i: shape[i])
    if shape[k] > 1:
        smaller = shape[:k] + (shape[k] // 2,) + shape[k + 1:]
        changes.append(Step(f"shape: smaller ({_x(smaller)})", like(smaller)))
    flat = (math.prod(shape),)
    if rank > 1:
        changes.append(Step(f"shape: same elements, rank 1 ({_x(flat)})", like(flat)))
    c = _t(shape, dt)
    lhs = "lhs " if binary else ""
    rest = (c,) if binary else ()
    if rank >= 2 and min(shape[-2:]) > 1:
        changes.append(Step(f"strides: {lhs}transposed view", (_t(shape, dt, "transposed"), *rest)))
    axis = next((i for i in range(rank) if shape[i] > 1), None)
    if axis is not None:
        one = shape[:axis] + (1,) + shape[axis + 1:]
        if binary:
            changes.append(Step(f"strides: rhs broadcast on dim {axis} ({_x(one)})",
                                (c, _t(one, dt))))
        else:
            changes.append(Step(f"strides: expanded view (stride 0 on dim {axis})",
                                ({**c, "layout": "expand", "base": list(one)},)))
    if shape[-1] > 1:
        changes.append(Step(f"strides: {lhs}every other element", (_t(shape, dt, "strided"), *rest)))
    changes.append(Step(f"storage offset: {lhs}starts 1 element in (not 16-byte aligned)",
                        (_t(shape, dt, "misaligned"), *rest)))
    changes.append(Step(f"storage offset: {lhs}a slice one row in", (_t(shape, dt, "offset"), *rest)))
    other = OTHER_DTYPE[dt]
    if config.op in FLOATS_ONLY and not other.startswith(("float", "bfloat")):
        other = "float32"
    changes.append(Step(f"dtype: {'both ' if binary else ''}{other}", like(shape, other)))
    if binary:
        mixed = MIXED_RHS[dt]
        if config.op in FLOATS_ONLY and not mixed.startswith(("float", "bfloat")):
            mixed = "float32"
        changes.append(Step(f"dtype: rhs {mixed}", (c, _t(shape, mixed))))
        changes.append(Step("dtype: rhs a 0-dim float64 tensor",
                            (c, {"zero_dim": True, "dtype": "float64"})))
        changes.append(Step(f"scalar: rhs Python float {SCALAR_FLOAT}", (c, {"scalar": SCALAR_FLOAT})))
        if config.op != "div" or dt.startswith(("float", "bfloat")):
            changes.append(Step(f"scalar: rhs Python int {SCALAR_INT}", (c, {"scalar": SCALAR_INT})))
    if config.device == "cuda":
        changes.append(Step("stream: the base operands on another CUDA stream",
                            base.operands, "stream"))
        changes.append(Step("graph: the base call inside a CUDA graph, replayed on new values",
                            base.operands, "graph"))
    out = [base]
    for ch in changes:
        out += [ch, Step("base again", base.operands)]
    return out


# -- the parent side ----------------------------------------------------------------------
def check_cache(config: CaptureConfig, timeout_s: float, *, python: str | None = None,
                env: dict[str, str] | None = None, side: str | None = None) -> dict[str, Any]:
    """Run the sequence in one fresh process; return the passing result (``as_json``'s
    dict) or raise CorrectnessError (exit 3: wrong values, or a crash) / KernelHangError
    (exit 2) carrying :func:`report`, or CaptureError when it cannot run at all."""
    if config.inputs_fn:
        raise CaptureError("--check-cache builds its own operands from --op/--shape/--dtype; "
                           "leave out --inputs")
    from traceview.workload.wire import encode_config

    todo = steps(config)
    payload = {"config": encode_config(config), "steps": [s.as_dict() for s in todo]}
    env = dict(env or {})
    if config.interpreted:
        env.setdefault("TRITON_INTERPRET", "1")
    outcome = isolation.run_child(CHILD_ENTRY, payload, timeout_s, env=env or None,
                                  locate=config.device == "cuda",
                                  startup_s=max(timeout_s, STARTUP_S), python=python)
    if outcome.status == "error":
        err = CaptureError(outcome.error or "the cache check could not run")
        err.exit_code = outcome.exit_code or 2
        raise err
    rows = _rows(todo, outcome.records)
    if outcome.status == "ok":
        return as_json(config, rows, side)
    rep = report(config, todo, rows, outcome, side)
    cls = KernelHangError if outcome.status == "timeout" else CorrectnessError
    raise cls(headline(rep), report=rep)


def _rows(todo: list[Step], records: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """One row per call that ran: index (1-based), name, operands, result."""
    rows: dict[int, dict[str, Any]] = {}
    for rec in records:
        if "start" in rec:
            i = rec["start"]
            rows[i] = {"call": i + 1, "name": todo[i].name, "context": todo[i].context,
                       "status": "started"}
        elif "operands" in rec and rows:
            rows[max(rows)]["operands"] = rec["operands"]
        elif "done" in rec:
            rows[rec["done"]].update({k: v for k, v in rec.items() if k != "done"})
    return [rows[i] for i in sorted(rows)]


def changes_between(before: dict[str, Any] | None, after: dict[str, Any]) -> list[str]:
    """What differs between two calls, from their operands as built (``describe``)."""
    if before is None:
        return ["the first call of the process"]
    out = []
    if before.get("context") != after.get("context"):
        out.append(f"context {before.get('context')} -> {after.get('context')}")
    a_ops, b_ops = before.get("operands") or [], after.get("operands") or []
    for i in range(max(len(a_ops), len(b_ops))):
        name = "ab"[i] if i < 2 else str(i)
        x = a_ops[i] if i < len(a_ops) else None
        y = b_ops[i] if i < len(b_ops) else None
        if x is None or y is None:
            out.append(f"{name}: {'added' if x is None else 'removed'}")
            continue
        if x.get("kind") != y.get("kind"):
            out.append(f"{name}: {_kind(x)} -> {_kind(y)}")
            continue
        if y.get("kind") == "scalar":
            if (x.get("value"), x.get("type")) != (y.get("value"), y.get("type")):
                out.append(f"{name}: Python {x.get('type')} {x.get('value')} -> "
                           f"Python {y.get('type')} {y.get('value')}")
            continue
        for key, label in (("shape", "shape"), ("dtype", "dtype"), ("strides", "strides"),
                           ("storage_offset", "storage offset"), ("align16", "16-byte aligned"),
                           ("device", "device")):
            if x.get(key) != y.get(key):
                out.append(f"{name}: {label} {_v(x.get(key))} -> {_v(y.get(key))}")
    return out or ["nothing in the operands (same shapes, dtypes, strides, offsets; new values)"]


def _kind(op: dict[str, Any]) -> str:
    if op.get("kind") == "scalar":
        return f"Python {op.get('type')} {op.get('value')}"
    return f"tensor {_x(op.get('shape'))} {op.get('dtype')}"


def _v(value: Any) -> str:
    if isinstance(value, list):
        return _x(value) if all(isinstance(v, int) for v in value) and len(value) else str(tuple(value))
    return str(value)


def _first_wrong(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((r for r in rows if r["status"] not in ("pass", "skipped")), None)


def report(config: CaptureConfig, todo: list[Step], rows: list[dict[str, Any]],
           outcome: Outcome, side: str | None = None) -> dict[str, Any]:
    """The failure report (the isolated check's document, kind ``check``, plus
    ``cache_check``): the first wrong (or crashed) call, what changed, the error."""
    bad = _first_wrong(rows) if outcome.status == "wrong" else (rows[-1] if rows else None)
    i = bad["call"] - 1 if bad else 0
    prev = rows[i - 1] if bad and i > 0 else None
    wrong_calls = [r["call"] for r in rows if r["status"] not in ("pass", "started", "skipped")]
    rep: dict[str, Any] = {
        **stamp("check"),
        "verdict": outcome.status,  # wrong | crashed | timeout
        "found_by": f"--check-cache: call {i + 1} of {len(todo)} in one warm process",
        "op": config.op, "impl": config.impl_label, "device": config.device,
        "dtype": config.dtype, "layout": config.layout, "seed": config.seed,
        "shapes": [list(s) for s in config.shapes], "scalar": config.scalar,
        "operands": (bad or {}).get("operands"),
        "cache_check": {
            "call": i + 1, "calls": len(todo), "name": todo[i].name,
            "context": todo[i].context,
            "previous": None if prev is None else {"call": prev["call"], "name": prev["name"]},
            "changed": changes_between(prev, bad or {}),
            "passed_before": i if all(r["status"] in ("pass", "skipped") for r in rows[:i])
            else None,
            "wrong_calls": wrong_calls,
            "rows": [_row_json(r) for r in rows],
        },
        "reproducer": reproducer(config),
        "written": [],
    }
    if side:
        rep["side"] = side
    if outcome.status == "wrong":
        rep["comparison"] = (bad or {}).get("comparison")
    else:
        from traceview.checks.failure import crash_fields

        rep["crash"] = crash_fields(outcome)
    return rep


def _row_json(r: dict[str, Any]) -> dict[str, Any]:
    c = r.get("comparison") or {}
    return {"call": r["call"], "name": r["name"], "context": r["context"], "status": r["status"],
            "max_abs_err": c.get("max_abs_err"), "wrong": c.get("wrong"),
            "mismatch": c.get("mismatch"), "out_dtype": c.get("out_dtype"),
            "out_shape": c.get("out_shape"), "operands": r.get("operands"),
            **({"skipped": r["skipped"]} if r.get("skipped") else {})}


def reproducer(config: CaptureConfig) -> str:
    """The ``traceview capture ... --check-cache`` line that runs the same sequence:
    capture's shortest reproducer (``failure.reproducer``) with the check."""
    from traceview.checks.failure import reproducer as capture_line

    line = capture_line(config) + " --check-cache"
    if config.device == "cpu" and config.impl == "fn":
        line = "TRITON_INTERPRET=1 " + line  # a Triton --fn on the CPU needs the interpreter
    return line


def as_json(config: CaptureConfig, rows: list[dict[str, Any]], side: str | None = None
            ) -> dict[str, Any]:
    """The passing result: every call, with what changed from the call before it."""
    out = []
    prev = None
    for r in rows:
        row = _row_json(r)
        row["changed"] = changes_between(prev, r)
        out.append(row)
        prev = r
    doc = {**stamp("cache_check"),
           "passed": all(r["status"] in ("pass", "skipped") for r in rows),
           "op": config.op, "impl": config.impl_label, "device": config.device,
           "dtype": config.dtype, "shapes": [list(s) for s in config.shapes],
           "calls": len(rows), "rows": out, "reproducer": reproducer(config)}
    if side:
        doc["side"] = side
    return doc


# -- the child side -------------------------------------------------------------------------
def run_sequence(payload: dict[str, Any], emit: Any) -> dict[str, Any]:
    """Entry for ``isolation.run_child``: every step in this one process, in order.

    Emits ``{"start": i}``, ``{"operands": [...]}`` and ``{"done": i, "status", ...}`` per
    call, so a crash or a hang is pinned to its call. Returns ``{"status": "ok"}`` or,
    when any call was wrong, ``{"status": "wrong"}`` (the calls are in the records).
    """
    import contextlib

    from traceview.checks.correctness import compare_config
    from traceview.workload import device as device_mod
    from traceview.workload.wire import decode_config

    config = decode_config(payload["config"])
    dev = device_mod.open_device(config)
    torch = dev.torch
    wrong = False
    with contextlib.ExitStack() as stack:
        call = _resolve(config, dev, stack)
        for i, step in enumerate(payload["steps"]):
            emit({"start": i})
            gen = torch.Generator(device=dev.torch_device)
            gen.manual_seed(config.seed * 100_003 + i)
            args = build_args(torch, config, dev.torch_device, gen, step["operands"])
            emit({"operands": describe(torch, args)})
            try:
                out, args = _call_in(dev, call, args, step["context"], gen, config)
            except CaptureError as exc:  # cannot be captured into a CUDA graph: not a cache bug
                if step["context"] != "graph":
                    raise
                emit({"done": i, "status": "skipped", "skipped": str(exc)})
                continue
            dev.sync()
            if not isinstance(out, torch.Tensor):
                found = {"passed": False, "mismatch": f"the call returned {type(out).__name__}, "
                                                      "not a tensor"}
            else:
                found = compare_config(torch, config, args, out)
            dev.sync()
            ok = bool(found.get("passed"))
            wrong = wrong or not ok
            emit({"done": i, "status": "pass" if ok else "wrong", "comparison": found})
    return {"status": "wrong" if wrong else "ok"}


def _resolve(config: CaptureConfig, dev: Any, stack: Any) -> Any:
    """The implementation as one callable taking the op's arguments, built once."""
    torch = dev.torch
    fn = config.spec.torch_fn(torch)
    if config.impl == "torch":
        return fn
    if config.impl == "fn":
        from traceview.workload.usercode import load_callable

        return load_callable("fn", config.fn or "")
    if config.impl == "flag_gems":
        from traceview.workload.impls import FLAG_GEMS_INSTALL

        try:
            import flag_gems
        except ImportError:
            raise CaptureError(FLAG_GEMS_INSTALL) from None
        stack.enter_context(flag_gems.use_gems())
        return fn
    if config.impl == "inductor":
        torch._dynamo.reset()
        stack.callback(torch._dynamo.reset)
        return torch.compile(lambda *a: fn(*a), dynamic=False, fullgraph=True)
    from traceview.workload.device import import_triton
    from traceview.workload.impls import _check_interpreter_possible

    if config.interpreted:
        _check_interpreter_possible()
    import_triton()
    from traceview.workload import kernels

    return kernels.PointwiseLauncher(torch, config.op)


def build_args(torch: Any, config: CaptureConfig, device: Any, gen: Any,
               specs: list[dict[str, Any]]) -> tuple[Any, ...]:
    """The call's positional arguments from operand specs (fresh seeded values)."""
    from traceview.workload.inputs import _laid_out, _random

    args: list[Any] = []
    for i, spec in enumerate(specs):
        divisor = config.op == "div" and i == 1
        if "scalar" in spec:
            args.append(spec["scalar"])
            continue
        dtype = getattr(torch, spec.get("dtype") or config.dtype)
        if spec.get("zero_dim"):
            args.append(_random(torch, (), dtype, device, gen, divisor))
            continue
        shape, layout = tuple(spec["shape"]), spec["layout"]
        if layout == "offset":  # a slice one row in: non-zero storage offset
            t = _random(torch, (shape[0] + 1,) + shape[1:], dtype, device, gen, divisor)[1:]
        elif layout == "misaligned":  # one element in: the data pointer is not 16-byte aligned
            t = _random(torch, (math.prod(shape) + 1,), dtype, device, gen, divisor)[1:].view(shape)
        elif layout == "expand":
            t = _random(torch, tuple(spec["base"]), dtype, device, gen, divisor).expand(shape)
        else:
            t = _laid_out(torch, shape, dtype, device, gen, layout, divisor)
        args.append(t)
    return tuple(args)


def describe(torch: Any, args: tuple[Any, ...]) -> list[dict[str, Any]]:
    """``check_child.describe_operands`` plus each tensor's 16-byte alignment."""
    from traceview.checks.check_child import describe_operands

    out = describe_operands(torch, args)
    for d, a in zip(out, args, strict=True):
        if isinstance(a, torch.Tensor):
            d["align16"] = a.data_ptr() % 16 == 0
    return out


def _call_in(dev: Any, call: Any, args: tuple[Any, ...], context: str, gen: Any,
             config: CaptureConfig) -> tuple[Any, tuple[Any, ...]]:
    """(output, the arguments it was computed from) for one call in its context."""
    torch = dev.torch
    if context == "stream":
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            out = call(*args)
        torch.cuda.current_stream().wait_stream(side)
        return out, args
    if context == "graph":
        from traceview.workload.graphs import capture_graph

        graph = capture_graph(torch, lambda: call(*args), 1,
                              f"--check-cache {config.impl_label} {config.op}")
        # new values into the same input tensors: the replay must compute from them
        fresh = build_args(torch, config, dev.torch_device, gen,
                           [_spec_of(a) for a in args])
        for a, f in zip(args, fresh, strict=True):
            if isinstance(a, torch.Tensor):
                a.copy_(f)
        graph.replay()
        return graph.outputs[-1], args
    return call(*args), args


def _spec_of(a: Any) -> dict[str, Any]:
    """A contiguous spec of ``a``'s shape and dtype (values to copy into ``a``)."""
    if not hasattr(a, "shape"):
        return {"scalar": a}
    if a.dim() == 0:
        return {"zero_dim": True, "dtype": str(a.dtype).removeprefix("torch.")}
    return {"shape": list(a.shape), "dtype": str(a.dtype).removeprefix("torch."),
            "layout": "contiguous"}
