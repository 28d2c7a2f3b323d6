"""``diff``'s "kernels launched" counts launches: kernels with no launch record are left out.

A kernel that runs in the profiled window with no runtime (launch) event linked to it by
correlation id was launched before the window opened (a DLRM rank's previous step's Adam
kernels run inside the one profiled step) or lost its correlation. Nobody launched it in
the window, so "N per call before, M after" must not count it; the line says how many
such kernels it left out on each side instead, as figures of its own. Each expected
figure here is counted from the raw events: kernels per name with and without a runtime
event of their correlation id.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import public_corpus
import pytest
from test_claims_diff_checks import _diff_problems

import traceview
from tracebuilder import TraceBuilder
from traceview.multi.compare import KERNEL_ROWS, diff_reports
from traceview.render.diff_report import kernels_used_lines
from traceview.render.registry import RenderOptions, renderer

US = 1000
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
PARAM = "facebookresearch__param/chakra_traces__dlrm_kineto__worker{}_step_12.json.gz"


def _events(path: Path) -> list[dict]:
    raw = path.read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def _kernels_by_link(events: list[dict]) -> tuple[Counter, Counter]:
    """(kernels per name a runtime event's correlation id links to, those none does)."""
    launched = {(e.get("args") or {}).get("correlation") for e in events
                if e.get("ph") == "X" and e.get("cat") in LAUNCH_CATS}
    launched.discard(None)
    linked, unlinked = Counter(), Counter()
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            corr = (e.get("args") or {}).get("correlation")
            (linked if corr in launched else unlinked)[e["name"]] += 1
    return linked, unlinked


def _steps(events: list[dict]) -> int:
    return sum(1 for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
               and str(e.get("name", "")).startswith("ProfilerStep#"))


def _expected_differences(lb: Counter, la: Counter, nb: int, na: int) -> list[str]:
    """What the line must say of each kernel, from launched kernels alone."""
    out = []
    for name in sorted(set(lb) | set(la)):
        b, a = lb[name], la[name]
        if not b and not a:
            continue
        if not b or not a:
            out.append(f"only {'after' if not b else 'before'} launched {name}")
        elif b * na != a * nb:
            out.append(f"{name}: {b / nb:.3g} per call before, {a / na:.3g} after")
    return out


def _side(builder: TraceBuilder, path: Path) -> traceview.Report:
    return traceview.analyze(builder.write(path))


def _pair(tmp_path: Path, gemms_after: int):
    """Before: one step whose first kernels are three ``adam`` the previous step launched
    (correlation ids no runtime event has) and two ``leftover`` likewise, then two
    ``adam`` and one ``gemm`` launched in the step. After: two ``adam`` and
    ``gemms_after`` ``gemm``, all launched."""
    before, after = TraceBuilder(), TraceBuilder()
    for tb in (before, after):
        tb.annotation("ProfilerStep#0", 0, 1_000 * US)
    for i, (name, at) in enumerate((("adam", 20), ("adam", 25), ("adam", 30),
                                    ("leftover", 35), ("leftover", 40))):
        before.kernel(name, at * US, 2 * US, corr=90_000 + i)
    t = 100 * US
    for name in ("adam", "adam", "gemm"):
        before.launched_kernel(name, t, 5 * US, t + 10 * US, 4 * US)
        t += 50 * US
    t = 100 * US
    for name in ("adam", "adam", *["gemm"] * gemms_after):
        after.launched_kernel(name, t, 5 * US, t + 10 * US, 4 * US)
        t += 50 * US
    return before, after


def test_kernels_launched_before_the_window_are_not_counted_as_launched_by_hand(tmp_path):
    """By hand: ``adam`` ran 5 times before (3 with no launch record) and 2 after: 2
    launched on each side, the same. ``leftover`` ran twice before, both with no launch
    record: launched on neither side. ``gemm``: 1 launched before, 2 after, the one
    difference. Left out: 5 kernels before, 0 after."""
    b, a = _pair(tmp_path, gemms_after=2)
    # the builder's events are what the hand count says
    assert _kernels_by_link(b.events) == (Counter(adam=2, gemm=1), Counter(adam=3, leftover=2))
    assert _kernels_by_link(a.events) == (Counter(adam=2, gemm=2), Counter())
    rb, ra = _side(b, tmp_path / "b.json"), _side(a, tmp_path / "a.json")
    assert {k.name: (k.count, k.unlinked) for k in rb.device.kernels} == {
        "adam": (5, 3), "leftover": (2, 2), "gemm": (1, 0)}
    d = diff_reports(rb, ra)
    assert (d.calls_before, d.calls_after) == (1, 1)
    assert d.kernels_used == {"source": KERNEL_ROWS, "same": False,
                              "differences": ["gemm: 1 per call before, 2 after"],
                              "unlinked": {"before": 5, "after": 0}}
    assert kernels_used_lines(d) == [
        f"kernels launched DIFFER ({KERNEL_ROWS}): gemm: 1 per call before, 2 after; "
        "not counted: 5 kernel(s) before, 0 after with no launch record"]
    assert _diff_problems(d) == []


def test_kernels_the_same_once_the_unlaunched_are_left_out_by_hand(tmp_path):
    """The same pair with one ``gemm`` after: every launched kernel once per call on both
    sides (``adam`` 2, ``gemm`` 1), the 5 kernels with no launch record said apart."""
    b, a = _pair(tmp_path, gemms_after=1)
    d = diff_reports(_side(b, tmp_path / "b.json"), _side(a, tmp_path / "a.json"))
    assert d.kernels_used is not None and d.kernels_used["same"] is True
    assert kernels_used_lines(d) == [
        f"kernels launched: the same in both ({KERNEL_ROWS}); not counted: 5 kernel(s) "
        "before, 0 after with no launch record"]
    assert _diff_problems(d) == []


def test_a_report_with_no_unlinked_kernel_writes_no_unlinked_key(tmp_path):
    """The key is written where a kernel has some: reports of fully linked traces are
    the JSON they were; a saved report reads the key back."""
    b, a = _pair(tmp_path, gemms_after=1)
    rb, ra = _side(b, tmp_path / "b.json"), _side(a, tmp_path / "a.json")
    assert all("unlinked" not in k for k in ra.to_dict()["device"]["kernels"])
    saved = {k["name"]: k.get("unlinked") for k in rb.to_dict()["device"]["kernels"]}
    assert saved == {"adam": 3, "leftover": 2, "gemm": None}
    from traceview.report.schema import from_json, to_json
    assert from_json(to_json(rb)) == rb


@pytest.fixture(scope="module")
def dlrm():
    paths = [public_corpus.locate(PARAM.format(w)) for w in (1, 4)]
    if any(p is None for p in paths):
        pytest.skip("PARAM's DLRM ranks 1 and 4 are not in the local corpus")
    return paths


def test_dlrm_adam_kernels_of_the_previous_step_are_not_said_launched(dlrm):
    """worker1's one step holds 64 Adam kernels (addcmul, sqrt, addcdiv...) its previous
    step launched before the profiler's window; worker4's has none. The line said
    "10 per call before, 5 after" of them; it now counts launches alone, and says the 64
    apart. Every figure from the raw events."""
    before, after = (_events(p) for p in dlrm)
    (lb, ub), (la, ua) = _kernels_by_link(before), _kernels_by_link(after)
    nb, na = _steps(before), _steps(after)
    assert (sum(ub.values()), sum(ua.values())) == (64, 0)  # the case this test is about
    d = diff_reports(traceview.analyze(dlrm[0]), traceview.analyze(dlrm[1]),
                     str(dlrm[0]), str(dlrm[1]))
    assert (d.calls_before, d.calls_after) == (nb, na)
    doc = json.loads(renderer("json", "diff").render(d, RenderOptions()))
    rows = {k["name"]: k for k in doc["kernels"]}
    for name in set(lb) | set(ub):
        assert rows[name]["count_before"] == lb[name] + ub[name]
        assert rows[name].get("unlinked_before", 0) == ub[name]
    ku = doc["kernels_used"]
    assert ku["unlinked"] == {"before": sum(ub.values()), "after": sum(ua.values())}
    want = _expected_differences(lb, la, nb, na)
    assert ku["differences"] == want
    # none of the kernels only the previous step launched is said to move
    moved_by_unlinked = {n for n in ub if lb[n] * na == la[n] * nb}
    assert moved_by_unlinked and not any(n in c for c in ku["differences"]
                                         for n in moved_by_unlinked)
    (line,) = kernels_used_lines(d)
    assert line.endswith(f"; not counted: {sum(ub.values())} kernel(s) before, "
                         f"{sum(ua.values())} after with no launch record")
    assert _diff_problems(d) == []
