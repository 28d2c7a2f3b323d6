"""Top-level trace metadata that the reports read, checked for type before anyone reads it.

Capture's ``traceview`` key and Kineto's ``deviceProperties`` are free JSON: a trace from
another tool, or an edited one, can hold anything there. Fields of the wrong type are
set aside (the rest is kept) and named in a ``metadata-malformed`` diagnostic, so the
renderers, findings and ``diff`` only ever see the types they expect.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from traceview.diagnostics import Diagnostic


class ProtocolMeta(msgspec.Struct, frozen=True):
    """How the calls were measured (``protocol``)."""

    mode: str | None = None  # eager | graph
    sync: str | None = None  # each | end
    timer: str | None = None
    warmup: Any = None
    iters: Any = None
    with_stack: Any = None
    call_range: str | None = None  # the record_function name of warm call {i}
    cold_range: str | None = None


class BaselineMeta(msgspec.Struct, frozen=True):
    """The unprofiled figures measured beside the profiled run (``baseline``)."""

    full_api_ns_p50: int | float | None = None
    amortized_submit_ns: int | float | None = None
    device_ns: int | float | None = None
    # graph mode: one synchronized graph replay, the graph-mode analogue of the full API
    replay_ns_p50: int | float | None = None
    per_process: Any = None  # one row of the figures per fresh process, when measured so
    split: dict[str, Any] | None = None  # the call's unprofiled split (docs/capture.md)


class ColdMeta(msgspec.Struct, frozen=True):
    wall_ns: int | float | None = None


class CorrectnessMeta(msgspec.Struct, frozen=True):
    tolerance: dict[str, Any] = {}
    reference: Any = None
    max_abs_err: Any = None
    passed: Any = None


class CaptureMeta(msgspec.Struct, frozen=True):
    """Capture's metadata block (the trace's ``traceview`` key, docs/capture.md), typed:
    what the reports read of it. Every field is optional (a trace from another tool, or
    an older capture, has fewer); a field of the wrong type is set aside when the trace
    is loaded (``clean_capture``), so reading never fails. Versions 1 and 2 of the block
    differ only in the name of the version field (``traceview.documents``), which is not
    read here."""

    op: str | None = None
    impl: str | None = None
    dtype: str | None = None
    layout: str | None = None
    command: str | None = None
    reproducer: str | None = None
    kind: str | None = None  # warm | cold
    shape: list[Any] | None = None
    strides: list[Any] | None = None
    scalars: list[Any] | None = None
    input_shapes: list[Any] | None = None
    notes: list[Any] | None = None
    protocol: ProtocolMeta | None = None
    device: dict[str, Any] | None = None
    versions: dict[str, Any] | None = None
    correctness: CorrectnessMeta | None = None
    baseline: BaselineMeta | None = None
    cold: ColdMeta | None = None
    bandwidth: dict[str, Any] | None = None
    kernels_used: dict[str, Any] | None = None


NO_CAPTURE = CaptureMeta()
# the blocks a reader calls ``.get`` on, or reads as a typed block: present means a dict
_BLOCKS = frozenset({"protocol", "device", "versions", "correctness", "baseline", "cold"})
_FIELD_TYPES: dict[str, Any] = {f.name: f.type for f in msgspec.structs.fields(CaptureMeta)}
_NESTED: dict[str, dict[str, Any]] = {
    name: {f.name: f.type for f in msgspec.structs.fields(t)}
    for name, t in (("baseline", BaselineMeta), ("cold", ColdMeta),
                    ("correctness", CorrectnessMeta), ("protocol", ProtocolMeta))}


def _fits(value: Any, tp: Any, *, block: bool) -> bool:
    """Whether ``value`` reads as ``tp`` (a dict for a block: a present block is never
    null); a bool is never a number."""
    if block:
        return isinstance(value, dict)
    try:
        msgspec.convert(value, tp, strict=True)
    except msgspec.ValidationError:
        return False
    return True


def clean_capture(cap: Any) -> tuple[dict[str, Any] | None, list[str]]:
    """Capture metadata with wrong-typed fields removed (checked against ``CaptureMeta``,
    the one schema), and the names of those fields."""
    if cap is None:
        return None, []
    if not isinstance(cap, dict):
        return None, ["traceview"]
    bad = [k for k, t in _FIELD_TYPES.items()
           if k in cap and not _fits(cap[k], t, block=k in _BLOCKS)]
    out = {k: v for k, v in cap.items() if k not in bad}
    for key, fields in _NESTED.items():
        sub = out.get(key)
        if isinstance(sub, dict):
            wrong = [f for f, t in fields.items()
                     if f in sub and not _fits(sub[f], t, block=f == "tolerance")]
            if wrong:
                out[key] = {f: v for f, v in sub.items() if f not in wrong}
                bad += [f"{key}.{f}" for f in wrong]
    return out, [b if b == "traceview" else f"traceview.{b}" for b in bad]


def capture_meta(cap: Any) -> CaptureMeta | None:
    """The typed view of a capture block (wrong-typed fields set aside, as
    ``clean_capture`` does: a saved report may hold anything); None for none (or an
    empty one). An empty block (``{}``) reads as absent (None), as it always has: every
    reader asks "was it recorded?" of a block."""
    cap = clean_capture(cap)[0]
    if not cap:
        return None
    present = {k: v for k, v in cap.items() if not (v == {} and k in _FIELD_TYPES)}
    return msgspec.convert(present, CaptureMeta, strict=True)


def clean_metadata(meta: dict[str, Any]) -> tuple[dict[str, Any], Diagnostic | None]:
    """``meta`` with wrong-typed fields set aside (a new dict; ``meta`` itself unchanged
    and returned as is when nothing is wrong), and a diagnostic naming them, if any."""
    bad: list[str] = []
    out = meta
    if "traceview" in meta:
        cap, wrong = clean_capture(meta["traceview"])
        if wrong:
            out = dict(meta)
            if cap is None:
                out.pop("traceview")
            else:
                out["traceview"] = cap
            bad += wrong
    props = meta.get("deviceProperties")
    if props is not None and not (isinstance(props, list) and all(isinstance(p, dict) for p in props)):
        out = dict(out) if out is meta else out
        out.pop("deviceProperties")
        bad.append("deviceProperties")
    if not bad:
        return meta, None
    return out, Diagnostic("metadata-malformed", "warning", len(bad),
                           "top-level metadata of an unexpected type was ignored: " + ", ".join(bad))


# Which GPU runtime recorded the trace: CUDA or HIP (ROCm), from the trace's own evidence.
#
# PyTorch on ROCm records its HIP calls under Kineto's ``cuda_runtime`` category and writes
# the same ``deviceProperties`` header, so nothing in the file's structure says which
# runtime it was: a report that names the runtime (a graph is a "CUDA graph" or a "HIP
# graph"; the versions a reproducer needs are CUDA's or ROCm's, in the profiler's
# ``cuda_driver_version`` or ``hip_driver_version``) reads it from the evidence, in order:
# the runtime calls themselves (``hip*`` or ``cuda*``/``cu*`` names), the header's version
# keys (``hip_driver_version``, ``roctracer_version``; ``cuda_driver_version``), the device
# names (AMD Instinct, Radeon, ``MI<digits>``). A trace with none of it (CPU only, a
# device-only file without a header) is worded as CUDA, the common case.
_AMD_DEVICE = re.compile(r"\bAMD\b|Instinct|Radeon|\bMI\d{3}", re.IGNORECASE)
_HIP_KEYS = ("hip_driver_version", "hip_runtime_version", "roctracer_version")
_CUDA_KEYS = ("cuda_driver_version", "cuda_runtime_version")


@dataclass(frozen=True)
class Runtime:
    """The words a report uses for the trace's GPU runtime."""

    api: str  # "CUDA" | "HIP": the runtime API (a "CUDA graph", a "HIP graph")
    toolkit: str  # "CUDA" | "ROCm": the software stack whose versions a reproducer names
    driver_key: str  # the profiler header key that records the driver version


CUDA = Runtime("CUDA", "CUDA", "cuda_driver_version")
HIP = Runtime("HIP", "ROCm", "hip_driver_version")


def runtime_of(metadata: Mapping[str, Any], api_names: Iterable[str]) -> Runtime:
    """The runtime the evidence names (``api_names``: the runtime calls seen, e.g. the
    launches by API); CUDA where there is none."""
    apis = [n for n in api_names if isinstance(n, str)]
    if any(n.startswith("hip") for n in apis):
        return HIP
    if any(n.startswith("cu") for n in apis):
        return CUDA
    if any(k in metadata for k in _HIP_KEYS):
        return HIP
    if any(k in metadata for k in _CUDA_KEYS):
        return CUDA
    props = metadata.get("deviceProperties")
    names = [str(p.get("name", "")) for p in props if isinstance(p, dict)] \
        if isinstance(props, list) else []
    return HIP if any(_AMD_DEVICE.search(n) for n in names) else CUDA
