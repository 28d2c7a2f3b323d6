"""The bad-input corpus, generated: no damaged JSON is checked in.

``cases()`` returns every case: a name, the input item of the issue it covers, a
function that writes the input into a folder, and what must come out. Inputs are
made three ways: tiny byte strings for what is not a trace at all; traces from
``TraceBuilder`` for damage that needs exact numbers; and real fixtures (H200 traces in
``fixtures/``) damaged on purpose in code: cut, shuffled, duplicated, retyped, with
events removed or injected. Damaged fixtures name a *reference*: the clean input the
numbers must equal (the fixture itself, or, for a cut file, the events before the cut).

``tests/test_robustness.py`` runs every case through the CLI and the Python API;
``benchmarks/fuzz.py`` uses the written inputs as its seed corpus.
"""

from __future__ import annotations

import copy
import functools
import gzip
import json
import random
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracebuilder import TraceBuilder

FIXTURES = Path(__file__).parent.parent / "fixtures"
RUNTIME = "torch_mul_1x4096_f32.json.gz"  # cudaLaunchKernel, 30 calls, no Python frames
DRIVER = "triton_mul_1x4096_f32.json.gz"  # cuLaunchKernelEx (Triton)
STACK = "torch_mul_1x4096_f32_stack.json.gz"  # with_stack: python_function slices
STREAMS = "two_streams_8192x8192_f16.json.gz"  # two streams overlapping
LAUNCH_APIS = {"cudaLaunchKernel", "cuLaunchKernelEx", "cuLaunchKernel", "cudaLaunchKernelExC"}
HOUR_US = 3_600 * 10**6

Writer = Callable[[Path], Path]
Report = dict[str, Any]


@dataclass(frozen=True)
class Case:
    """One input and its asserted outcome.

    ``exit_code`` 2 means unusable: one line on stderr naming the file and containing
    ``error``. Otherwise the analysis runs and every identity must hold; ``diagnostics``
    (code -> count) and ``findings`` (id -> ``evidence['count']``; ``None`` for
    "present") must appear; ``reference`` writes the input whose numbers this one must
    equal; ``check`` asserts anything else on the JSON report (and the reference's).
    """

    name: str
    item: str
    write: Writer
    exit_code: int = 0
    error: str | None = None
    diagnostics: dict[str, int | None] = field(default_factory=dict)
    findings: dict[str, int | None] = field(default_factory=dict)
    absent: tuple[str, ...] = ()  # finding ids or diagnostic codes that must not appear
    reference: Writer | None = None
    same: tuple[str, ...] = ("window", "device", "host", "breakdown", "launches", "calls")
    check: Callable[[Report, Report | None], None] | None = None
    xfail: str | None = None  # a known gap, reported; the case documents the wanted outcome


# -- helpers ----------------------------------------------------------------------------------

@functools.cache
def _fixture_text(name: str) -> bytes:
    return gzip.decompress((FIXTURES / name).read_bytes())


def fixture(name: str) -> dict[str, Any]:
    """A fresh copy of a fixture's document (safe to damage)."""
    return json.loads(_fixture_text(name))


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def dump(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode()


def doc_writer(make: Callable[[], Any], *, gz: bool = False, suffix: str = ".json") -> Writer:
    def write(folder: Path) -> Path:
        data = dump(make())
        return _write(folder / ("trace" + suffix + (".gz" if gz else "")),
                      gzip.compress(data) if gz else data)
    return write


def bytes_writer(data: bytes, name: str = "trace.json") -> Writer:
    return lambda folder: _write(folder / name, data)


def builder_writer(build: Callable[[TraceBuilder], Any], *, bare: bool = False) -> Writer:
    def write(folder: Path) -> Path:
        tb = TraceBuilder()
        build(tb)
        folder.mkdir(parents=True, exist_ok=True)
        return tb.write(folder / "trace.json", bare=bare)
    return write


def fixture_writer(name: str, damage: Callable[[dict[str, Any]], Any] | None = None, *,
                   gz: bool = False) -> Writer:
    """A real fixture, damaged in code by ``damage(doc)`` (which edits ``doc`` in place)."""
    def make() -> Any:
        doc = fixture(name)
        if damage is not None:
            out = damage(doc)
            if out is not None:
                return out
        return doc
    return doc_writer(make, gz=gz)


def events_where(doc: dict[str, Any], keep: Callable[[dict[str, Any]], bool]) -> None:
    doc["traceEvents"] = [e for e in doc["traceEvents"] if keep(e)]


def is_launch(e: dict[str, Any]) -> bool:
    return e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") \
        and e.get("name") in LAUNCH_APIS


def is_work(e: dict[str, Any]) -> bool:
    return e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")


def kernels_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]


def finding(report: Report, fid: str) -> dict[str, Any] | None:
    return next((f for f in report["findings"] if f["id"] == fid), None)


def diagnostic(report: Report, code: str) -> dict[str, Any] | None:
    return next((g for g in report["diagnostics"] if g["code"] == code), None)


# -- cutting a file short, knowing which events were complete --------------------------------

@dataclass(frozen=True)
class Layout:
    """A document serialised with the byte offset where each event ends."""

    text: bytes
    head: bytes  # everything up to and including '"traceEvents": ['
    events: list[dict[str, Any]]
    ends: list[int]  # offset just past each event's closing brace
    meta_before: dict[str, Any]  # top-level keys written before traceEvents


def layout(doc: dict[str, Any] | list[Any]) -> Layout:
    if isinstance(doc, list):
        head, events, before, after = b"[", doc, {}, {}
    else:
        keys = list(doc)
        i = keys.index("traceEvents")
        before = {k: doc[k] for k in keys[:i]}
        after = {k: doc[k] for k in keys[i + 1:]}
        events = doc["traceEvents"]
        head = b"{" + b"".join(dump(k) + b": " + dump(v) + b", " for k, v in before.items()) \
            + b'"traceEvents": ['
    parts, ends, pos = [head], [], len(head)
    for j, ev in enumerate(events):
        t = (b", " if j else b"") + dump(ev)
        parts.append(t)
        pos += len(t)
        ends.append(pos)
    if isinstance(doc, list):
        parts.append(b"]")
    else:
        parts.append(b"]" + b"".join(b", " + dump(k) + b": " + dump(v) for k, v in after.items())
                     + b"}")
    return Layout(b"".join(parts), head, events, ends, before)


def _complete_before(lay: Layout, cut: int) -> list[dict[str, Any]]:
    return [ev for ev, end in zip(lay.events, lay.ends, strict=True) if end <= cut]


def cut_fixture(name: str, where: Callable[[Layout], int], *, gz: bool = False,
                bare: bool = False) -> tuple[Writer, Writer]:
    """A fixture cut at ``where(layout)`` bytes, and the reference: the events before it.

    With ``gz`` the *compressed* stream is cut at that fraction of its length; the
    reference holds the events that inflate completely from what is left.
    """
    def lay() -> Layout:
        doc = fixture(name)
        return layout(doc["traceEvents"] if bare else doc)

    def write(folder: Path) -> Path:
        ly = lay()
        cut = where(ly)
        if gz:
            z = gzip.compress(ly.text, mtime=0)
            return _write(folder / "cut.json.gz", z[:cut * len(z) // len(ly.text)])
        return _write(folder / "cut.json", ly.text[:cut])

    def reference(folder: Path) -> Path:
        ly = lay()
        cut = where(ly)
        if gz:
            z = gzip.compress(ly.text, mtime=0)
            cut = len(zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(
                z[:cut * len(z) // len(ly.text)]))
        kept = _complete_before(ly, cut)
        doc: Any = kept if bare else {**ly.meta_before, "traceEvents": kept}
        return _write(folder / "reference.json", dump(doc))

    return write, reference


def _inside(ly: Layout, frac: float, key: bytes, into: int) -> int:
    """A text offset ``into`` bytes past ``key`` in the event at ``frac`` of the trace."""
    j = int(len(ly.events) * frac)
    start = ly.ends[j - 1] if j else len(ly.head)
    k = ly.text[start:ly.ends[j]].find(key)
    return start + k + len(key) + into


def _inside_name(ly: Layout, frac: float) -> int:
    return _inside(ly, frac, b'"name": "', 2)


def _inside_number(ly: Layout, frac: float) -> int:
    return _inside(ly, frac, b'"ts": ', 5)


# -- synthetic traces with known answers ------------------------------------------------------

def _clean_small(tb: TraceBuilder) -> None:
    """Two calls, each an op launching one kernel: 20 us window."""
    for i in range(2):
        t = i * 10_000
        tb.annotation(f"call_{i}", t, 9_000)
        tb.op("aten::mul", t + 500, 6_000)
        tb.launched_kernel("mul_kernel", t + 1_000, 3_000, t + 5_000, 2_000)
        tb.sync(t + 6_600, 2_300)


def _overlapping(tb: TraceBuilder) -> None:
    # A [0, 10 us) and B [5 us, 15 us): B starts inside A and ends after it.
    tb.op("A", 0, 10_000)
    tb.op("B", 5_000, 10_000)
    tb.launched_kernel("k", 1_000, 1_000, 3_000, 4_000)


def _check_overlap(d: Report, _ref: Report | None) -> None:
    f = {x["name"]: x for x in d["host"]["functions"]}
    assert d["window"]["dur_ns"] == 15_000
    # one owner per ns: A owns [0,1us)+[2us,5us) around the launch, B owns [5us,15us)
    assert f["B"]["self_ns"] == 10_000 and f["A"]["self_ns"] == 4_000
    assert f["cuLaunchKernelEx"]["self_ns"] == 1_000
    assert sum(x["self_ns"] for x in d["host"]["functions"]) == 15_000


def _two_devices(tb: TraceBuilder) -> None:
    tb.op("aten::mul", 0, 6_000)
    tb.launched_kernel("k0", 100, 300, 1_000, 2_000, device=0)
    tb.launched_kernel("k1", 500, 300, 2_000, 3_000, device=1, stream=3)


def _check_two_devices(d: Report, _ref: Report | None) -> None:
    per = {r["device"]: r for r in d["device"]["per_device"]}
    assert set(per) == {0, 1}
    assert per[0]["busy_ns"] == 2_000 and per[1]["busy_ns"] == 3_000
    assert d["device"]["busy_ns"] == 4_000  # union [1 us, 5 us), not 5 us of sums
    assert d["device"]["work_sum_ns"] == 5_000


def _two_processes(tb: TraceBuilder) -> None:
    tb.op("aten::mul", 0, 9_000)
    for i in range(3):
        tb.launched_kernel("k", 1_000 + 2_000 * i, 500, 1_600 + 2_000 * i, 300)
    other = TraceBuilder(pid=200, tid=7)
    other._corr = 5_000
    other.op("aten::add", 2_000, 5_000)
    for i in range(2):
        other.launched_kernel("k2", 2_500 + 1_000 * i, 300, 3_000 + 1_000 * i, 200, stream=9)
    tb.events.extend(other.events)


def _check_two_processes(d: Report, _ref: Report | None) -> None:
    assert (d["host"]["thread"]["pid"], d["host"]["thread"]["tid"]) == (100, 100)
    others = {(t["pid"], t["tid"]): t for t in d["host"]["other_threads"]}
    assert others[(200, 7)]["launches"] == 2
    assert d["launches"]["count"] == 5 and d["launches"]["linked"] == 5


UNICODE_NAMES = ["aten::乗算", "ядро_mul", "kernel🚀", "\u05e7\u05e8\u05e0\u05dc",  # RTL
                 "e\u0301\u200b\ufeff", "tab\there"]
MARKUP_NAMES = ["[bold red]x[/]", "[/]", "<script>alert(1)</script>", "a|b|c", "`tick`",
                "line\nbreak\r\n", "\x00\x01\x7f", "\\u0000", "%s%n{0}"]


def _named(names: list[str]) -> Callable[[TraceBuilder], None]:
    def build(tb: TraceBuilder) -> None:
        tb.annotation("call_0", 0, 50_000)
        tb.annotation("call_1", 60_000, 50_000)
        for i, nm in enumerate(names):
            t = i * 4_000
            tb.op(nm, t, 3_000)
            tb.py(nm + ".py(1): f", t + 100, 2_000)
            tb.launched_kernel(nm, t + 200, 500, t + 1_000, 1_000)
    return build


def _check_names(names: list[str]) -> Callable[[Report, Report | None], None]:
    def check(d: Report, _ref: Report | None) -> None:
        kernels = {k["name"] for k in d["device"]["kernels"]}
        assert kernels == set(names), kernels
    return check


LONG = "very_long_kernel_name_" * 5_000  # 110k characters


def _flows_only(tb: TraceBuilder) -> None:
    """Launch and kernel linked only by ac2g flow events (no args.correlation)."""
    tb.op("aten::mul", 0, 5_000)
    for i in range(3):
        t = 1_000 + 1_200 * i
        tb._x("cuda_runtime", "cudaLaunchKernel", t, 300, tb.pid, tb.tid, {})
        tb._x("kernel", "k", t + 700, 400, 0, 7, {"device": 0, "stream": 7})
        tb.raw({"ph": "s", "id": 50 + i, "pid": tb.pid, "tid": tb.tid, "ts": t / 1000,
                "cat": "ac2g", "name": "ac2g"})
        tb.raw({"ph": "f", "id": 50 + i, "pid": 0, "tid": 7, "ts": (t + 700) / 1000,
                "cat": "ac2g", "name": "ac2g", "bp": "e"})


def _be_pairs(shuffle: int | None) -> Callable[[TraceBuilder], None]:
    """chrome://tracing style: B/E pairs, instants, counters, no categories, bare array."""
    def build(tb: TraceBuilder) -> None:
        evs = [
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2,
             "args": {"name": "CrBrowserMain"}},
            {"ph": "B", "name": "outer", "pid": 1, "tid": 2, "ts": 10},
            {"ph": "B", "name": "inner", "pid": 1, "tid": 2, "ts": 12},
            {"ph": "i", "name": "mark", "pid": 1, "tid": 2, "ts": 13, "s": "t"},
            {"ph": "E", "pid": 1, "tid": 2, "ts": 15},
            {"ph": "C", "name": "mem", "pid": 1, "ts": 16, "args": {"bytes": 5}},
            {"ph": "B", "name": "second", "pid": 1, "tid": 2, "ts": 17},
            {"ph": "E", "pid": 1, "tid": 2, "ts": 19},
            {"ph": "E", "pid": 1, "tid": 2, "ts": 30},
            {"ph": "X", "name": "other_thread", "pid": 1, "tid": 3, "ts": 11, "dur": 4},
        ]
        if shuffle is not None:
            random.Random(shuffle).shuffle(evs)
        tb.events.extend(evs)
    return build


def _check_be(d: Report, _ref: Report | None) -> None:
    f = {x["name"]: x for x in d["host"]["functions"]}
    assert d["window"]["dur_ns"] == 20_000
    assert f["outer"]["total_ns"] == 20_000 and f["inner"]["total_ns"] == 3_000
    assert f["second"]["total_ns"] == 2_000
    assert d["host"]["thread"]["label"].startswith("CrBrowserMain")


def _check_zero_length_pair(d: Report, _ref: Report | None) -> None:
    """An integer-us clock: a B/E pair at one instant, inside a parent that stays open."""
    f = {x["name"]: x for x in d["host"]["functions"]}
    assert d["trace"]["slices"] == 2 and d["window"]["dur_ns"] == 10_000
    assert f["outer"]["self_ns"] == f["outer"]["total_ns"] == 10_000  # inner owns no time


def _damaged_builder(tb: TraceBuilder) -> None:
    """The small trace plus every kind of bad duration."""
    _clean_small(tb)
    tb.raw({"ph": "X", "cat": "cpu_op", "name": "no_dur", "pid": 100, "tid": 100, "ts": 3.0})
    tb.raw({"ph": "X", "cat": "kernel", "name": "neg", "pid": 0, "tid": 7, "ts": 2.0, "dur": -1.5,
            "args": {"device": 0, "stream": 7}})
    tb.raw({"ph": "X", "cat": "kernel", "name": "absurd", "pid": 0, "tid": 7, "ts": 2.0,
            "dur": 2 * HOUR_US, "args": {"device": 0, "stream": 7}})
    tb.raw({"ph": "X", "cat": "cpu_op", "name": "236 years", "pid": 100, "tid": 100, "ts": 1.0,
            "dur": 236 * 365 * 24 * HOUR_US})
    tb.raw({"ph": "X", "cat": "cpu_op", "name": "no_ts", "pid": 100, "tid": 100, "dur": 1.0})


def _zero_length(tb: TraceBuilder) -> None:
    _clean_small(tb)
    tb.kernel("zero", 8_000, 0, stream=8)
    tb.op("zero_op", 4_000, 0)


def _check_zero_length(d: Report, ref: Report | None) -> None:
    assert ref is not None
    assert d["device"]["kernel_count"] == ref["device"]["kernel_count"] + 1
    assert d["device"]["busy_ns"] == ref["device"]["busy_ns"]
    assert d["host"]["categories"] == ref["host"]["categories"]


def _inject(name: str, events: Callable[[dict[str, Any]], list[dict[str, Any]]]
            ) -> Callable[[dict[str, Any]], None]:
    def damage(doc: dict[str, Any]) -> None:
        doc["traceEvents"].extend(events(doc))
    return damage


def _absurd_events(doc: dict[str, Any]) -> list[dict[str, Any]]:
    k = copy.deepcopy(kernels_of(doc)[3])
    k["dur"] = 2 * HOUR_US  # "> 1 hour inside a 5 ms trace"
    k2 = copy.deepcopy(kernels_of(doc)[7])
    k2["dur"] = 236 * 365 * 24 * HOUR_US  # HTA's "236 years" kernel
    op = next(copy.deepcopy(e) for e in doc["traceEvents"] if e.get("cat") == "cpu_op")
    op["ts"] = op["ts"] - 10 * HOUR_US
    op["dur"] = 20 * HOUR_US
    return [k, k2, op]


def _far_events(doc: dict[str, Any]) -> list[dict[str, Any]]:
    far = copy.deepcopy(kernels_of(doc)[9])
    far["ts"] = 1e20  # 3 million years out
    op = next(copy.deepcopy(e) for e in doc["traceEvents"] if e.get("cat") == "cpu_op")
    op["ts"] = -1e17
    return [far, op]


def _check_far(d: Report, ref: Report | None) -> None:
    """Timestamps no clock gives are dropped (as absurd, or as unusable 'ts')."""
    dropped = sum((diagnostic(d, code) or {"count": 0})["count"]
                  for code in ("absurd-dur", "missing-ts"))
    assert dropped == 2


def _negative_events(doc: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for j in (2, 5):
        k = copy.deepcopy(kernels_of(doc)[j])
        k["dur"] = -k["dur"]
        out.append(k)
    return out


def _shuffle(seed: int) -> Callable[[dict[str, Any]], None]:
    def damage(doc: dict[str, Any]) -> None:
        random.Random(seed).shuffle(doc["traceEvents"])
    return damage


def _retype(field_name: str, conv: Callable[[Any], Any], *,
            only: Callable[[dict], bool] = lambda e: True, every: int = 1
            ) -> Callable[[dict[str, Any]], None]:
    def damage(doc: dict[str, Any]) -> None:
        for j, e in enumerate(doc["traceEvents"]):
            if field_name in e and only(e) and j % every == 0:
                e[field_name] = conv(e[field_name])
    return damage


def _chain(*damages: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def damage(doc: dict[str, Any]) -> None:
        for f in damages:
            f(doc)
    return damage


def _float(x: Any) -> Any:
    return float(x) if isinstance(x, int) else x


def _us_text(x: Any) -> Any:
    return f"{x:.3f}" if isinstance(x, float) else str(x)


def _drop_dur(doc: dict[str, Any]) -> None:
    n = 0
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op" and n < 4:
            e.pop("dur")
            n += 1


def _duplicate_all(doc: dict[str, Any]) -> None:
    doc["traceEvents"] = [copy.deepcopy(e) for e in doc["traceEvents"] for _ in range(2)]


def _duplicate_some(doc: dict[str, Any]) -> None:
    doc["traceEvents"].extend(copy.deepcopy(k) for k in kernels_of(doc)[:5])


def _drop_every_other_kernel(doc: dict[str, Any]) -> None:
    ks = kernels_of(doc)
    drop = {id(k) for k in ks[1::2]}
    events_where(doc, lambda e: id(e) not in drop)


def _corrupt_stack(doc: dict[str, Any]) -> None:
    """Stretch some Python frames past their parent's end (with_stack corruption)."""
    py = [e for e in doc["traceEvents"] if e.get("cat") == "python_function"]
    for e in py[10:400:40]:
        e["dur"] = e["dur"] + 50.0


def _metadata_only(doc: dict[str, Any]) -> None:
    events_where(doc, lambda e: e.get("ph") == "M")


def _device_only(doc: dict[str, Any]) -> None:
    events_where(doc, is_work)


def _cpu_only(doc: dict[str, Any]) -> None:
    events_where(doc, lambda e: e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset",
                                                      "gpu_user_annotation", "cuda_runtime",
                                                      "cuda_driver", "ac2g"))


def _work_count(report: Report) -> int:
    dev = report["device"]
    return dev["kernel_count"] + dev["memcpy_count"] + dev["memset_count"]


def _check_same_busy(d: Report, ref: Report | None) -> None:
    assert ref is not None and d["device"]["busy_ns"] == ref["device"]["busy_ns"]
    assert d["device"]["kernel_count"] == ref["device"]["kernel_count"]


def _check_all_duplicated(d: Report, ref: Report | None) -> None:
    assert ref is not None and diagnostic(d, "duplicate")["count"] == ref["trace"]["slices"]
    assert d["trace"]["slices"] == ref["trace"]["slices"]


def _check_launches_unlinked(d: Report, ref: Report | None) -> None:
    assert ref is not None
    assert d["launches"]["count"] == ref["launches"]["count"] and d["launches"]["linked"] == 0
    assert finding(d, "launch-without-device-work")["evidence"]["count"] == ref["launches"]["count"]
    assert d["device"]["busy_ns"] == 0
    assert d["host"]["categories"] == ref["host"]["categories"]


def _check_kernels_unlinked(d: Report, ref: Report | None) -> None:
    assert ref is not None
    assert d["launches"]["count"] == 0
    assert finding(d, "device-work-without-launch")["evidence"]["count"] == _work_count(ref)
    _check_same_busy(d, ref)


def _check_half_kernels(d: Report, ref: Report | None) -> None:
    assert ref is not None
    missing = ref["device"]["kernel_count"] - d["device"]["kernel_count"]
    assert missing == ref["device"]["kernel_count"] // 2
    assert finding(d, "launch-without-device-work")["evidence"]["count"] == missing


def _check_device_only(d: Report, ref: Report | None) -> None:
    assert ref is not None and d["host"]["thread"] is None
    assert d["host"]["categories"].get("untraced") == d["window"]["dur_ns"]
    assert finding(d, "device-work-without-launch")["evidence"]["count"] == _work_count(ref)
    assert d["device"]["busy_ns"] == ref["device"]["busy_ns"]


def _check_cpu_only(d: Report, _ref: Report | None) -> None:
    assert d["device"]["busy_ns"] == 0 and d["device"]["idle_ns"] == d["window"]["dur_ns"] > 0
    assert d["launches"]["count"] == 0


def _check_empty_window(d: Report, _ref: Report | None) -> None:
    assert d["window"]["dur_ns"] == 0 and d["device"]["busy_ns"] == 0
    assert d["breakdown"] == [] and d["calls"]["count"] == 0


def _check_truncated(d: Report, ref: Report | None) -> None:
    g = diagnostic(d, "truncated")
    assert g is not None and g["count"] == 1
    assert any(ch.isdigit() for ch in g["message"])  # says how much was lost
    assert d["trace"]["slices"] == ref["trace"]["slices"]  # every complete event kept


def _check_damaged(d: Report, ref: Report | None) -> None:
    assert ref is not None
    assert d["window"] == ref["window"]  # dropped events did not widen the window
    assert d["device"]["busy_ns"] == ref["device"]["busy_ns"]


def _mixed_pid_types(tb: TraceBuilder) -> None:
    """The same thread written once as integers, once as strings (two writers)."""
    _clean_small(tb)
    for e in tb.events[::2]:
        if e.get("pid") == 100:
            e["pid"], e["tid"] = "100", "100"


def _huge_ids(tb: TraceBuilder) -> None:
    _clean_small(tb)
    tb.raw({"ph": "X", "cat": "cpu_op", "name": "big", "pid": 2**70, "tid": -2**70,
            "ts": 1.0, "dur": 1.0})
    tb.raw({"ph": "X", "cat": "kernel", "name": "bigk", "pid": 0, "tid": 7, "ts": 6.0, "dur": 1.0,
            "args": {"device": 2**64, "stream": 2**65, "correlation": 2**66}})


def _other_types(tb: TraceBuilder) -> None:
    """Odd field types: float/bool/null ids, list args, object names, exponent strings."""
    _clean_small(tb)
    tb.raw({"ph": "X", "cat": "cpu_op", "name": {"not": "a string"}, "pid": 100.0, "tid": True,
            "ts": "1e1", "dur": "2.5"})
    tb.raw({"ph": "X", "cat": "cpu_op", "name": "nullpid", "pid": None, "tid": None, "ts": 1.0,
            "dur": 1.0, "args": [1, 2]})
    tb.raw({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": "1e999999",
            "dur": 1.0, "args": {"device": "zero", "stream": None}})
    tb.raw({"ph": "X", "cat": "cpu_op", "name": "x", "pid": 100, "tid": 100, "ts": "nan",
            "dur": "inf"})
    tb.raw(17)
    tb.raw(["not", "an", "event"])


# -- the corpus -------------------------------------------------------------------------------

def cases() -> list[Case]:
    c: list[Case] = []
    add = c.append
    not_trace = "not a trace"

    # -- not a trace: one line, exit 2 -------------------------------------------------------
    rnd = random.Random(6)
    blob = bytes([0x80]) + rnd.randbytes(4095)
    gz_fixture = (FIXTURES / RUNTIME).read_bytes()
    flipped = bytearray(gz_fixture)
    for i in range(len(flipped) // 3, len(flipped) // 3 + 64):
        flipped[i] ^= 0x5A
    for name, data, frag in [
        ("empty", b"", "empty file"),
        ("whitespace", b" \n\t\r\n ", "empty file"),
        ("binary-random", blob, "not a JSON trace"),
        ("binary-nul", bytes(range(256)), "not a JSON trace"),
        ("png", b"\x89PNG\r\n\x1a\n" + rnd.randbytes(64), "not a JSON trace"),
        ("text", b"hello, this is not a trace\n", "not a JSON trace"),
        ("utf16-json", dump({"traceEvents": []}).decode().encode("utf-16"), "not a JSON trace"),
        ("json-number", b"42", "not a JSON trace"),
        ("json-string", b'"traceEvents"', "not a JSON trace"),
        ("json-null", b"null", "not a JSON trace"),
        ("not-json-object", b"{not json", "not valid JSON"),
        ("not-json-array", b"[1, 2,, 3]", "not valid JSON"),
        ("json-bad-literal", b'{"traceEvents": [{"ph": "X", "ts": tru}]}', "not valid JSON"),
        ("json-nan-literal", b'{"traceEvents": [{"ph": "X", "ts": NaN, "dur": 1}]}',
         "not valid JSON"),
        ("json-latin1-bytes", b'{"traceEvents": [{"ph": "X", "name": "caf\xe9", "ts": 1}]}',
         "not valid JSON"),
        ("json-utf8-bom-no-events", b"\xef\xbb\xbf" + dump({"traceEvents": []}), "no events"),
        ("json-empty-object", b"{}", "no 'traceEvents'"),
        ("json-no-events-key", dump({"schemaVersion": 1, "events": []}), "no 'traceEvents'"),
        ("json-events-empty", dump({"traceEvents": []}), "no events"),
        ("json-array-empty", b"[]", "no events"),
        ("json-events-not-list", dump({"traceEvents": {"ph": "X"}}), "traceEvents"),
        ("json-events-null", dump({"traceEvents": None}), "traceEvents"),
        ("json-events-not-objects", dump([1, "x", None, [2]]), "no events"),
        ("cut-before-first-event", b'{"traceEvents": [{"ph": "X", "name": "a', "truncated"),
        ("cut-after-open-bracket", b'[', "truncated"),
        ("gzip-corrupt", bytes(flipped), "gzip"),
        ("gzip-header-only", gz_fixture[:10], "gzip"),
        ("gzip-garbage", b"\x1f\x8b\x08\x00" + rnd.randbytes(200), "gzip"),
        ("gzip-of-binary", gzip.compress(blob), "not a JSON trace"),
        ("gzip-of-empty", gzip.compress(b""), "empty file"),
        ("gzip-of-text", gzip.compress(b"not json at all"), "not a JSON trace"),
    ]:
        add(Case(name, not_trace, bytes_writer(data, "trace.json.gz" if name.startswith("gzip")
                                               else "trace.json"), exit_code=2, error=frag))
    add(Case("missing-file", not_trace, lambda folder: folder / "no-such-trace.json",
             exit_code=2, error="no such file"))
    add(Case("directory", not_trace, lambda folder: _mkdir(folder / "a-folder.json"),
             exit_code=2, error="directory"))

    # -- truncated: every complete event before the cut, and how much was lost ----------------
    trunc = "truncated JSON from a killed process"
    for name, where, kw in [
        ("cut-at-25pct", lambda ly: len(ly.text) // 4, {}),
        ("cut-at-90pct", lambda ly: len(ly.text) * 9 // 10, {}),
        ("cut-inside-a-string", lambda ly: _inside_name(ly, 0.5), {}),
        ("cut-inside-a-number", lambda ly: _inside_number(ly, 0.6), {}),
        ("cut-after-a-comma", lambda ly: ly.ends[len(ly.ends) // 3] + 2, {}),
        ("cut-after-a-brace", lambda ly: ly.ends[len(ly.ends) // 2], {}),
        ("cut-in-trailing-metadata", lambda ly: ly.ends[-1] + 12, {}),
        ("cut-bare-array", lambda ly: len(ly.text) // 2, {"bare": True}),
        ("cut-gzip-stream", lambda ly: len(ly.text) // 2, {"gz": True}),
    ]:
        write, ref = cut_fixture(RUNTIME, where, **kw)
        add(Case(name, trunc, write, diagnostics={"truncated": 1}, reference=ref,
                 check=_check_truncated))
    # a cut right after a '}' that closes an object nested in the last event's args
    nested = {"ph": "X", "cat": "cpu_op", "name": "nested", "pid": 1, "tid": 1, "ts": 5.0,
              "dur": 1.0, "args": {"a": {"b": {"c": {}}}}}
    first = {"ph": "X", "cat": "cpu_op", "name": "first", "pid": 1, "tid": 1, "ts": 1.0, "dur": 3.0}
    text = dump({"traceEvents": [first, nested]})
    add(Case("cut-in-nested-args", trunc,
             bytes_writer(text[: text.index(b'"c": {}') + len(b'"c": {}}')]),
             diagnostics={"truncated": 1},
             reference=doc_writer(lambda: {"traceEvents": [first]}), check=_check_truncated))

    # a killed writer on a filesystem that had already extended the file: zeros after the cut
    write, ref = cut_fixture(RUNTIME, lambda ly: len(ly.text) // 2)
    add(Case("cut-then-zero-padding", trunc, _padded(write, b"\x00" * 4096),
             diagnostics={"truncated": 1}, reference=ref, check=_check_truncated))
    add(Case("complete-then-zero-padding", trunc, _padded(fixture_writer(RUNTIME), b"\x00" * 512),
             reference=fixture_writer(RUNTIME)))

    # -- nothing to attribute, or one side missing --------------------------------------------
    add(Case("metadata-events-only", "metadata-only trace", fixture_writer(RUNTIME, _metadata_only),
             findings={"no-activity": None}, check=_check_empty_window))
    add(Case("metadata-keys-only", "metadata-only trace",
             doc_writer(lambda: {"deviceProperties": [{"name": "NVIDIA H200"}], "traceEvents": []}),
             findings={"no-activity": None}, check=_check_empty_window))
    add(Case("instants-only", "metadata-only trace",
             doc_writer(lambda: [{"ph": "i", "name": "m", "pid": 1, "tid": 1, "ts": t}
                                 for t in range(5)]),
             findings={"no-activity": None}, check=_check_empty_window))
    add(Case("zero-length-only", "metadata-only trace",
             builder_writer(lambda tb: [tb.op("a", 1_000, 0), tb.kernel("k", 1_000, 0)]),
             findings={"no-activity": None}, check=_check_empty_window))
    add(Case("cpu-only-fixture", "no device events (CPU-only)", fixture_writer(RUNTIME, _cpu_only),
             findings={"no-device-work": None},
             absent=("device-work-without-launch", "launch-without-device-work"),
             check=_check_cpu_only))
    add(Case("cpu-only-synthetic", "no device events (CPU-only)",
             builder_writer(lambda tb: [tb.op("aten::mul", 0, 5_000),
                                        tb.py("f.py(1): f", 100, 4_000)]),
             findings={"no-device-work": None}, check=_check_cpu_only))
    add(Case("device-only-fixture", "device events but no host events",
             fixture_writer(RUNTIME, _device_only), findings={"no-host-events": None,
                                                              "device-work-without-launch": None},
             reference=fixture_writer(RUNTIME), same=(), check=_check_device_only))

    # -- dropped records, duplicates, bad durations -----------------------------------------
    add(Case("launches-without-kernels", "launches without kernels",
             fixture_writer(RUNTIME, lambda d: events_where(d, lambda e: e.get("cat") != "kernel")),
             findings={"launch-without-device-work": None, "no-device-work": None},
             reference=fixture_writer(RUNTIME), same=(), check=_check_launches_unlinked))
    add(Case("kernels-without-launches", "kernels without launches",
             fixture_writer(RUNTIME, lambda d: events_where(d, lambda e: not is_launch(e))),
             findings={"device-work-without-launch": None},
             reference=fixture_writer(RUNTIME), same=(), check=_check_kernels_unlinked))
    add(Case("kernels-without-driver-launches", "kernels without launches",
             fixture_writer(DRIVER, lambda d: events_where(d, lambda e: not is_launch(e))),
             findings={"device-work-without-launch": None},
             reference=fixture_writer(DRIVER), same=(), check=_check_kernels_unlinked))
    add(Case("every-other-kernel-dropped", "launches without kernels",
             fixture_writer(RUNTIME, _drop_every_other_kernel),
             findings={"launch-without-device-work": None}, reference=fixture_writer(RUNTIME),
             same=(), check=_check_half_kernels))
    add(Case("duplicated-every-event", "duplicate events", fixture_writer(RUNTIME, _duplicate_all),
             diagnostics={"duplicate": None}, reference=fixture_writer(RUNTIME),
             check=_check_all_duplicated))
    add(Case("duplicated-five-kernels", "duplicate events",
             fixture_writer(RUNTIME, _duplicate_some),
             diagnostics={"duplicate": 5}, reference=fixture_writer(RUNTIME)))
    add(Case("missing-dur", "missing dur", fixture_writer(RUNTIME, _drop_dur),
             diagnostics={"missing-dur": 4}, check=None))
    add(Case("negative-dur", "negative durations",
             fixture_writer(RUNTIME, _inject(RUNTIME, _negative_events)),
             diagnostics={"negative-dur": 2}, reference=fixture_writer(RUNTIME)))
    add(Case("absurd-dur", "absurd durations",
             fixture_writer(RUNTIME, _inject(RUNTIME, _absurd_events)),
             diagnostics={"absurd-dur": 3}, reference=fixture_writer(RUNTIME)))
    add(Case("absurd-timestamps", "absurd durations",
             fixture_writer(RUNTIME, _inject(RUNTIME, _far_events)),
             reference=fixture_writer(RUNTIME), check=_check_far))
    add(Case("bad-durations-synthetic", "negative or absurd durations",
             builder_writer(_damaged_builder),
             diagnostics={"missing-dur": 1, "negative-dur": 1, "absurd-dur": 2, "missing-ts": 1},
             reference=builder_writer(_clean_small), same=(), check=_check_damaged))
    add(Case("zero-length-events", "zero-length events", builder_writer(_zero_length),
             reference=builder_writer(_clean_small), same=(), check=_check_zero_length))

    # -- overlapping host slices --------------------------------------------------------------
    add(Case("overlap-synthetic", "host slices overlapping without nesting",
             builder_writer(_overlapping), findings={"overlapping-host-slices": 1},
             check=_check_overlap))
    add(Case("overlap-stack-fixture", "host slices overlapping without nesting",
             fixture_writer(STACK, _corrupt_stack), findings={"overlapping-host-slices": None}))

    # -- types and order ----------------------------------------------------------------------
    ids = "string or integer pids/tids"
    add(Case("pids-as-strings", ids,
             fixture_writer(RUNTIME, _chain(_retype("pid", str), _retype("tid", str))),
             reference=fixture_writer(RUNTIME)))
    add(Case("pids-as-floats", ids,
             fixture_writer(RUNTIME, _chain(_retype("pid", _float), _retype("tid", _float))),
             reference=fixture_writer(RUNTIME)))
    add(Case("pids-mixed-types", ids, builder_writer(_mixed_pid_types),
             reference=builder_writer(_clean_small)))
    add(Case("ids-huge", ids, builder_writer(_huge_ids), check=None))
    add(Case("odd-field-types", "string or integer pids/tids",
             builder_writer(_other_types), diagnostics={"event-malformed": 2}))
    add(Case("ts-as-strings", "ts given as strings",
             fixture_writer(RUNTIME, _retype("ts", _us_text)),
             reference=fixture_writer(RUNTIME)))
    add(Case("ts-and-dur-as-strings", "ts given as strings",
             fixture_writer(RUNTIME, _chain(_retype("ts", _us_text), _retype("dur", _us_text))),
             reference=fixture_writer(RUNTIME)))
    add(Case("ts-some-strings", "ts given as strings",
             fixture_writer(RUNTIME, _retype("ts", _us_text, every=3)),
             reference=fixture_writer(RUNTIME)))
    for seed in (1, 2):
        add(Case(f"shuffled-{seed}", "events out of order", fixture_writer(RUNTIME, _shuffle(seed)),
                 reference=fixture_writer(RUNTIME)))
    add(Case("reversed", "events out of order",
             fixture_writer(RUNTIME, lambda d: d["traceEvents"].reverse() and None),
             reference=fixture_writer(RUNTIME)))
    add(Case("shuffled-streams", "events out of order", fixture_writer(STREAMS, _shuffle(3)),
             reference=fixture_writer(STREAMS)))
    add(Case("two-devices", "several devices", builder_writer(_two_devices),
             check=_check_two_devices))
    add(Case("two-processes", "several processes", builder_writer(_two_processes),
             check=_check_two_processes))
    add(Case("unicode-names", "unicode names", builder_writer(_named(UNICODE_NAMES)),
             check=_check_names(UNICODE_NAMES)))
    add(Case("markup-and-control-names", "unicode names", builder_writer(_named(MARKUP_NAMES)),
             check=_check_names(MARKUP_NAMES)))
    # past 10,000 characters a name is cut with a note of its length (io/limits.py); the
    # expected names are written out here, not taken from traceview's own cut
    add(Case("very-long-names", "very long names", builder_writer(_named([LONG, LONG + "2"])),
             check=_check_names([LONG[:10_000] + "... (name cut: 110,000 characters)",
                                 LONG[:10_000] + "... (name cut: 110,001 characters)"])))
    add(Case("gzip-plain-fixture", "events out of order", fixture_writer(RUNTIME, gz=True),
             reference=fixture_writer(RUNTIME)))

    # -- other producers ----------------------------------------------------------------------
    other = "Chrome traces from other producers"
    add(Case("bare-array-fixture", other, fixture_writer(RUNTIME, lambda d: d["traceEvents"]),
             reference=fixture_writer(RUNTIME), same=("window", "device", "breakdown", "launches")))
    add(Case("begin-end-pairs", other, builder_writer(_be_pairs(None), bare=True),
             diagnostics={"other-phase": 1}, findings={"no-device-work": None}, check=_check_be))
    add(Case("begin-end-shuffled", other, builder_writer(_be_pairs(4), bare=True),
             reference=builder_writer(_be_pairs(None), bare=True), check=_check_be))
    add(Case("begin-end-unmatched", other,
             doc_writer(lambda: [{"ph": "B", "name": "open", "pid": 1, "tid": 1, "ts": 1},
                                 {"ph": "E", "pid": 1, "tid": 2, "ts": 3},
                                 {"ph": "X", "name": "x", "pid": 1, "tid": 1, "ts": 2, "dur": 2}]),
             diagnostics={"unclosed-begin": 1, "unmatched-end": 1}))
    add(Case("begin-end-zero-length", other,
             doc_writer(lambda: [{"ph": "B", "name": "outer", "pid": 1, "tid": 1, "ts": 0},
                                 {"ph": "B", "name": "inner", "pid": 1, "tid": 1, "ts": 5},
                                 {"ph": "E", "pid": 1, "tid": 1, "ts": 5},
                                 {"ph": "E", "pid": 1, "tid": 1, "ts": 10}]),
             absent=("unclosed-begin", "unmatched-end"), check=_check_zero_length_pair))
    add(Case("flows-link-launches", other, builder_writer(_flows_only),
             absent=("device-work-without-launch", "launch-without-device-work"),
             check=_check_flows))
    add(Case("unknown-phases", other,
             doc_writer(lambda: {"traceEvents": [
                 {"ph": "X", "name": "x", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 1, "dur": 2},
                 {"ph": "Z", "name": "?", "pid": 1, "tid": 1, "ts": 1},
                 {"ph": "b", "name": "async", "id": 1, "pid": 1, "tid": 1, "ts": 1, "cat": "a"},
                 {"ph": "e", "name": "async", "id": 1, "pid": 1, "tid": 1, "ts": 2, "cat": "a"},
                 {"ph": "O", "name": "obj", "id": "0x1", "pid": 1, "tid": 1, "ts": 1},
                 {"ph": "I", "name": "inst", "pid": 1, "tid": 1, "ts": 1, "s": "g"}],
                 "displayTimeUnit": "ns", "systemTraceEvents": "..."}),
             diagnostics={"unknown-phase": 1, "other-phase": 3}))
    return c


def _padded(write: Writer, pad: bytes) -> Writer:
    def padded(folder: Path) -> Path:
        p = write(folder)
        p.write_bytes(p.read_bytes() + pad)
        return p
    return padded


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def _check_flows(d: Report, _ref: Report | None) -> None:
    assert d["launches"]["count"] == 3 and d["launches"]["linked"] == 3, d["launches"]
    assert d["launches"]["latency_ns"]["p50"] == 700


ITEMS = [
    "not a trace", "truncated JSON from a killed process", "metadata-only trace",
    "no device events (CPU-only)", "device events but no host events", "launches without kernels",
    "kernels without launches", "duplicate events", "missing dur", "negative durations",
    "absurd durations", "negative or absurd durations", "zero-length events",
    "host slices overlapping without nesting", "string or integer pids/tids",
    "ts given as strings", "events out of order", "several devices", "several processes",
    "unicode names", "very long names", "Chrome traces from other producers",
]
