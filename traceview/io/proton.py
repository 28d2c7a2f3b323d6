"""Triton Proton's two output formats, recognised by content and read into typed records.

* **Trace** (``proton.start(name, data="trace")`` -> ``<name>.chrome_trace``): a JSON
  object ``{"displayTimeUnit": "us", "traceEvents": [...]}`` of kernel slices only
  (``ph`` ``X``, ``cat`` ``kernel``), ``ts`` in microseconds relative to the first kernel,
  ``tid`` the stream, no ``pid``, and ``args.call_stack`` = ``["ROOT", scope..., kernel]``.
  Some Proton versions write one such object per stream, one per line; both are read.
* **Tree** (the default ``proton.start(name)`` -> ``<name>.hatchet``): a JSON list whose
  first item is the calling-context tree, ``{"frame": {"name", "type"}, "metrics": {...},
  "children": [...]}`` (``count``, ``time (ns)``, ``device_id``, ``device_type`` on kernel
  nodes, capitalised by earlier releases: ``Count``, ``Time (ns)``, ``DeviceId``,
  ``DeviceType``; ``flops8/16/32/64``, ``flops``, ``bytes`` and any other number from
  ``hook="triton"``'s ``launch_metadata`` or from ``proton.scope(name, metrics)``), and
  whose second item describes the devices (``{"CUDA": {"0": {"arch", "num_sms",
  "clock_rate", "memory_clock_rate", "bus_width"}}}``).

Recognition reads the head of the (gunzipped) text, whatever the file's name. Bad input
raises ``TraceLoadError`` with one line saying what is wrong; the tree is walked without
recursion, so depth costs nothing but memory.
"""

from __future__ import annotations

import gzip
import os
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from traceview.errors import TraceLoadError
from traceview.io.exact_time import value_to_ns
from traceview.printable import printable_path

if TYPE_CHECKING:
    from traceview.io.sources import Source

ProtonKind = Literal["trace", "tree"]
HEAD_BYTES = 64 * 1024
ROOT = "ROOT"
TIME_KEY = "time (ns)"
COUNT_KEY = "count"
# what Proton writes beside the numbers on a kernel node (strings, not metrics)
NON_METRIC_KEYS = frozenset({"device_id", "device_type"})
# earlier Proton releases wrote its own metrics capitalised ("Count", "Time (ns)",
# "DeviceId", "DeviceType"); read as today's names, such a tree's kernels were 0 ns
OLD_METRIC_NAMES = {"Count": COUNT_KEY, "Time (ns)": TIME_KEY, "DeviceId": "device_id",
                    "DeviceType": "device_type"}


@dataclass(frozen=True)
class ProtonKernel:
    """One kernel slice of a Proton trace."""

    name: str
    start_ns: int
    end_ns: int
    stream: int | str
    scopes: tuple[str, ...]  # call_stack between "ROOT" and the kernel, outermost first


@dataclass(frozen=True)
class ProtonTraceFile:
    path: str
    kernels: tuple[ProtonKernel, ...]  # in start order
    time_unit: str
    dropped: int  # events that were not kernel slices with a call stack


@dataclass(frozen=True)
class ProtonNode:
    """A node of a Proton tree: a scope, an op, or a kernel (Proton's frames)."""

    name: str
    frame_type: str
    metrics: dict[str, int | float]  # numeric metrics only, as written
    labels: dict[str, str]  # device_id, device_type and other text
    children: tuple[ProtonNode, ...]


@dataclass(frozen=True)
class ProtonTreeFile:
    path: str
    root: ProtonNode
    devices: dict[str, dict[str, dict[str, Any]]]  # device type -> id -> properties


def _read_all(path: str | os.PathLike[str] | Source) -> bytes:
    from traceview.io import sources

    if isinstance(path, sources.Source):  # opened (and sniffed) once by the caller
        data = path.binary().read()
        path = path.ref
    else:
        with sources.open_binary(path) as f:
            data = f.read()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceLoadError(path, f"a damaged gzip file ({exc})") from None
    return data


def _ref(source: str | os.PathLike[str] | Source) -> str | os.PathLike[str]:
    from traceview.io.sources import Source

    return source.ref if isinstance(source, Source) else source


def _head(path: str | os.PathLike[str] | Source) -> bytes:
    from traceview.io.sources import Source, read_head

    return path.head(HEAD_BYTES) if isinstance(path, Source) else read_head(path, HEAD_BYTES)


def kind_of_head(head: bytes) -> ProtonKind | None:
    """``"trace"`` or ``"tree"`` when the text's head is Proton's, else None.

    A Kineto trace never has ``call_stack`` args and always has ``schemaVersion`` or
    ``deviceProperties`` near the top; a Chrome array of events has ``ph`` in its first
    object, a Proton tree ``frame`` and ``children``."""
    text = head.lstrip(b" \t\r\n\xef\xbb\xbf")
    if text[:1] == b"[":
        first = text[1:].lstrip(b" \t\r\n")
        if first[:1] == b"{" and b'"frame"' in text and b'"children"' in text \
                and b'"ph"' not in text[:4096]:
            return "tree"
        return None
    if text[:1] == b"{" and b'"call_stack"' in text and b'"traceEvents"' in text \
            and b'"schemaVersion"' not in text and b'"deviceProperties"' not in text:
        return "trace"
    return None


def sniff(path: str | os.PathLike[str] | Source) -> ProtonKind | None:
    """Which Proton format ``path`` holds, by content (None: not Proton, or unreadable:
    the Kineto loader reports that itself)."""
    try:
        return kind_of_head(_head(path))
    except (OSError, TraceLoadError):
        return None


def _objects(path: str | os.PathLike[str], data: bytes) -> list[Any]:
    """The JSON value(s) of the text: one, or one per non-empty line."""
    try:
        return [msgspec.json.decode(data)]
    except RecursionError:
        raise TraceLoadError(path, "JSON nested deeper than the reader allows") from None
    except msgspec.DecodeError as whole:
        lines = [ln for ln in data.splitlines() if ln.strip()]
        if len(lines) > 1:
            try:
                return [msgspec.json.decode(ln) for ln in lines]
            except (msgspec.DecodeError, RecursionError):
                pass
        raise TraceLoadError(path, f"not valid JSON ({whole})") from None


def read_trace(source: str | os.PathLike[str] | Source) -> ProtonTraceFile:
    """A Proton ``.chrome_trace``: its kernel slices, each with its scopes."""
    data = _read_all(source)
    path = _ref(source)
    objs = _objects(path, data)
    kernels: list[ProtonKernel] = []
    dropped = 0
    unit = "us"
    for obj in objs:
        if not isinstance(obj, dict) or not isinstance(obj.get("traceEvents"), list):
            raise TraceLoadError(path, "a Proton trace must be a JSON object with a "
                                       "'traceEvents' list")
        if isinstance(obj.get("displayTimeUnit"), str):
            unit = obj["displayTimeUnit"]
        for ev in obj["traceEvents"]:
            k = _kernel(ev)
            if k is None:
                dropped += 1
            else:
                kernels.append(k)
    if not kernels:
        raise TraceLoadError(path, "a Proton trace with no kernel slices carrying "
                                   "args.call_stack")
    kernels.sort(key=lambda k: (k.start_ns, k.end_ns, str(k.stream), k.name))
    return ProtonTraceFile(printable_path(path), tuple(kernels), unit, dropped)


def _kernel(ev: Any) -> ProtonKernel | None:
    if not isinstance(ev, dict) or ev.get("ph") != "X":
        return None
    args = ev.get("args")
    stack = args.get("call_stack") if isinstance(args, dict) else None
    if not isinstance(stack, list) or not stack or not all(isinstance(s, str) for s in stack):
        return None
    start = value_to_ns(ev.get("ts"))
    dur = value_to_ns(ev.get("dur"))
    if start is None or dur is None or dur < 0:
        return None
    raw_name = ev.get("name")
    name: str = raw_name if isinstance(raw_name, str) else stack[-1]
    scopes = stack[1:-1] if stack[0] == ROOT else stack[:-1]
    tid = ev.get("tid", 0)
    stream = tid if isinstance(tid, (int, str)) and not isinstance(tid, bool) else 0
    return ProtonKernel(name, start, start + dur, stream, tuple(scopes))


def read_tree(source: str | os.PathLike[str] | Source) -> ProtonTreeFile:
    """A Proton ``.hatchet``: the calling-context tree and the device table."""
    data = _read_all(source)
    path = _ref(source)
    objs = _objects(path, data)
    doc = objs[0] if len(objs) == 1 else None
    if not isinstance(doc, list) or not doc or not isinstance(doc[0], dict) \
            or "frame" not in doc[0]:
        raise TraceLoadError(path, "a Proton tree must be a JSON list whose first item is "
                                   "a node with a 'frame'")
    devices = doc[1] if len(doc) > 1 and isinstance(doc[1], dict) else {}
    return ProtonTreeFile(printable_path(path), _node_tree(path, doc[0]),
                          {str(k): v for k, v in devices.items() if isinstance(v, dict)})


def _node_tree(path: str | os.PathLike[str], top: dict) -> ProtonNode:
    """Build the nodes bottom-up with an explicit stack (no recursion limit)."""
    # first pass: pre-order list of (dict, parent index)
    order: list[tuple[dict, int]] = []
    stack: list[tuple[Any, int]] = [(top, -1)]
    while stack:
        node, parent = stack.pop()
        if not isinstance(node, dict):
            raise TraceLoadError(path, "a Proton tree node is not an object")
        order.append((node, parent))
        kids = node.get("children", [])
        if not isinstance(kids, list):
            raise TraceLoadError(path, "a Proton tree node's 'children' is not a list")
        me = len(order) - 1
        for child in reversed(kids):
            stack.append((child, me))
    built: list[list[ProtonNode]] = [[] for _ in order]
    done: list[ProtonNode | None] = [None] * len(order)
    for i in range(len(order) - 1, -1, -1):
        node, parent = order[i]
        frame = node.get("frame")
        frame = frame if isinstance(frame, dict) else {}
        name = frame.get("name")
        ftype = frame.get("type")
        metrics, labels = _metrics(node.get("metrics"))
        built_node = ProtonNode(name if isinstance(name, str) else "?",
                                ftype if isinstance(ftype, str) else "",
                                metrics, labels, tuple(reversed(built[i])))
        done[i] = built_node
        if parent >= 0:
            built[parent].append(built_node)
    root = done[0]
    assert root is not None
    return root


def _metrics(raw: Any) -> tuple[dict[str, int | float], dict[str, str]]:
    metrics: dict[str, int | float] = {}
    labels: dict[str, str] = {}
    if not isinstance(raw, dict):
        return metrics, labels
    for k, v in raw.items():
        if isinstance(v, bool):
            continue
        k = OLD_METRIC_NAMES.get(k, k) if isinstance(k, str) else k
        if isinstance(v, int):
            metrics[str(k)] = v
        elif isinstance(v, float):
            if v == v and v not in (float("inf"), float("-inf")):
                metrics[str(k)] = v
        elif isinstance(v, str):
            labels[str(k)] = v
    return metrics, labels
