"""diff's code-path families are explain's module families, checked against the raw events.

Two small with_stack traces (torch.mul, then the Triton mul, 30 warm calls each): for
every instant of every call, the owner is worked out here from the raw events of the
calls' thread (plain json, Decimal microseconds to integer ns): the module of the
innermost Python frame of a file covering it, ``(no Python frame)`` where only other
events (ops, runtime calls, builtins outside any file frame) cover it, ``(untraced)``
where nothing does. Per family: the nearest-rank p50 over the calls (0 in a call without
it) and the share of all the calls' time. diff's ``code_path.families`` must be exactly
those, biggest change first.
"""

from __future__ import annotations

import gzip
import itertools
import json
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from traceview.cli.app import app
from traceview.multi.compare import diff_reports, load_report

FIX = Path(__file__).resolve().parents[1] / "fixtures"
BEFORE = FIX / "torch_mul_1x4096_f32_stack.json.gz"
AFTER = FIX / "triton_mul_1x4096_f32_stack.json.gz"
OWN = {"python_function", "cpu_op", "cuda_runtime", "cuda_driver"}  # on the host thread


def _module(name: str) -> str | None:
    """``torch/cuda/__init__.py(450): _lazy_init`` -> ``torch.cuda``; None for builtins,
    ``<frozen ...>`` and ``<string>`` frames (these fixtures' paths are all relative)."""
    if name.startswith("<") or ".py(" not in name:
        return None
    return name.split(".py(", 1)[0].removesuffix("/__init__").replace("/", ".")


def _p50(values: list[int]) -> int:
    s = sorted(values)
    return s[(len(s) + 1) // 2 - 1]  # nearest rank: the smallest with half at or below


def families_from_raw(path: Path) -> tuple[dict[str, int], dict[str, float], int]:
    """(p50 ns per call, share of the calls' time, number of calls) per family."""
    doc = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)
    evs = []
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and "dur" in e:
            s = int(Decimal(e["ts"]) * 1000)
            evs.append((e.get("cat"), e["name"], (e.get("pid"), e.get("tid")), s,
                        s + int(Decimal(e["dur"]) * 1000)))
    calls = sorted((s, t, th) for cat, name, th, s, t in evs
                   if cat == "user_annotation" and name.startswith("call_"))
    thread = calls[0][2]
    host = [(name, s, t, cat == "python_function" and _module(name))
            for cat, name, th, s, t in evs if th == thread and cat in OWN and t > s]
    per_call: list[dict[str, int]] = []
    for c0, c1, _ in calls:
        around = [h for h in host if h[1] < c1 and h[2] > c0]
        cuts = sorted({c0, c1, *(max(c0, min(c1, x)) for h in around for x in h[1:3])})
        fam: dict[str, int] = {}
        for a, b in itertools.pairwise(cuts):
            cover = [h for h in around if h[1] <= a and h[2] >= b]
            frames = [h for h in cover if h[3]]
            if not cover:
                name = "(untraced)"
            elif not frames:
                name = "(no Python frame)"
            else:  # innermost: started last, the shorter of two starting together
                name = max(frames, key=lambda h: (h[1], -h[2]))[3]
            fam[name] = fam.get(name, 0) + b - a
        assert sum(fam.values()) == c1 - c0  # the families of a call sum to its wall time
        per_call.append(fam)
    total = sum(c1 - c0 for c0, c1, _ in calls)
    names = {n for f in per_call for n in f}
    p50 = {n: _p50([f.get(n, 0) for f in per_call]) for n in names}
    share = {n: round(sum(f.get(n, 0) for f in per_call) / total, 4) for n in names}
    return p50, share, len(calls)


@pytest.fixture(scope="module")
def raw():
    return families_from_raw(BEFORE), families_from_raw(AFTER)


@pytest.fixture(scope="module")
def code_path():
    return diff_reports(load_report(BEFORE), load_report(AFTER)).code_path


def test_the_reports_describe_the_same_calls(raw):
    for path, (_, _, n) in zip((BEFORE, AFTER), raw, strict=True):
        r = load_report(path)
        assert r.calls.tree_warm_calls == r.calls.warm_count == n == 30


def test_families_are_explains_counted_from_the_raw_events(raw, code_path):
    (pb, sb, _), (pa, sa, _) = raw
    want = []
    for name in set(pb) | set(pa):
        x, y = pb.get(name), pa.get(name)
        want.append({"family": name,
                     "status": "new" if x is None else "gone" if y is None else "moved",
                     "before_ns_per_call": x, "after_ns_per_call": y,
                     "change_ns_per_call": (y or 0) - (x or 0),
                     "before_share": sb.get(name), "after_share": sa.get(name)})
    want.sort(key=lambda r: (-abs(r["change_ns_per_call"]), r["family"]))
    assert code_path["families"] == want[:len(code_path["families"])]
    assert len(code_path["families"]) == min(12, len(want))
    # the biggest change: the Triton runner's frames, absent from torch.mul's call
    top = code_path["families"][0]
    assert top["family"] == "triton.runtime.jit" and top["status"] == "new"


def test_function_rows_name_their_frames_module(code_path):
    for row in code_path["functions"]:
        path = row["function"].split(": ", 1)[0]
        if path.endswith(".py") and not path.startswith("<"):
            assert row["family"] == path.removesuffix(".py").removesuffix("/__init__") \
                .replace("/", "."), row
        else:
            assert row["family"] is None, row


def test_families_without_python_frames_are_left_out_with_a_note():
    plain = FIX / "torch_mul_1x4096_f32.json.gz"
    cp = diff_reports(load_report(plain), load_report(AFTER)).code_path
    assert cp["families"] == []
    assert cp["families_note"] == ("no module families: before has no Python frames "
                                   "(profile with with_stack)")


@pytest.mark.parametrize("fmt", ["text", "md"])
def test_the_families_table_is_shown(raw, fmt):
    r = CliRunner().invoke(app, ["diff", str(BEFORE), str(AFTER), "--format", fmt,
                                 "--width", "80"])
    assert r.exit_code == 0, r.output
    out = r.stdout
    if fmt == "text":
        assert max(len(line) for line in out.splitlines()) <= 80
    assert "module famil" in out and "innermost" in out  # the header wraps at 80
    # triton.runtime.jit: new after, its p50 and share as counted from the raw events
    (_, _, _), (pa, sa, _) = raw
    from traceview.units import fmt_ns

    assert f"+{fmt_ns(pa['triton.runtime.jit'])}" in out
    assert f"{100 * sa['triton.runtime.jit']:.0f}%" in out
