"""The kernels each call launched: read from raw Kineto events written here by hand, and
the differences ``ab`` and ``diff`` report between two variants."""

from __future__ import annotations

from traceview.analyses.kernels_used import kernels_per_call, summarize
from traceview.report.kernel_words import describe, differences

PATTERN = r"traceview_probe_call_\d+"


def _x(cat, name, ts, dur, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid,
            "args": args}


def _events():
    ev = []
    corr = 100
    for i in range(3):
        t0 = 1000 * i
        ev.append(_x("user_annotation", f"traceview_probe_call_{i}", t0, 500))
        for k in range(2 if i < 2 else 1):  # the third call launches one kernel only
            corr += 1
            ev.append(_x("cuda_driver", "cuLaunchKernelEx", t0 + 10 + 100 * k, 20, correlation=corr))
            ev.append(_x("kernel", "add_kernel", t0 + 50 + 100 * k, 5, tid=7, correlation=corr,
                         grid=[16, 1, 1], block=[128, 1, 1]))
        corr += 1
        ev.append(_x("cuda_runtime", "cudaMemcpyAsync", t0 + 300, 20, correlation=corr))
        ev.append(_x("gpu_memcpy", "Memcpy DtoD (Device -> Device)", t0 + 330, 4, tid=7,
                     correlation=corr))
    # a launch outside every range, and its kernel: not any call's
    ev.append(_x("cuda_driver", "cuLaunchKernelEx", 9000, 20, correlation=999))
    ev.append(_x("kernel", "stray_kernel", 9050, 5, tid=7, correlation=999, grid=[1, 1, 1],
                 block=[32, 1, 1]))
    # another thread's launch inside a range's time: not that call's either
    ev.append(_x("cuda_driver", "cuLaunchKernelEx", 20, 5, tid=2, correlation=998))
    ev.append(_x("kernel", "other_thread_kernel", 60, 5, tid=8, correlation=998))
    return ev


def test_kernels_per_call_counts_each_calls_launches():
    per = kernels_per_call(_events(), PATTERN)
    add = {"name": "add_kernel", "kind": "kernel", "grid": [16, 1, 1], "block": [128, 1, 1]}
    copy = {"name": "Memcpy DtoD (Device -> Device)", "kind": "memcpy", "grid": None,
            "block": None, "count": 1}
    assert per[0] == [copy, dict(add, count=2)] == per[1]
    assert per[2] == [copy, dict(add, count=1)]
    s = summarize(per, "hand-written")
    assert s["calls"] == 3 and s["launches_per_call"] == 3 and s["same_every_call"] is False
    assert s["per_call"] == per
    line = describe(s)
    assert "add_kernel grid (16, 1, 1) block (128, 1, 1) x2" in line
    assert "memcpy Memcpy DtoD (Device -> Device) x1" in line
    assert line.endswith("NOT the same in all 3 probed calls")


def _block(*kernels, same=True):
    ks = [{"name": n, "kind": "kernel", "grid": g, "block": [128, 1, 1], "count": c}
          for n, g, c in kernels]
    return {"calls": 3, "kernels": ks, "launches_per_call": sum(k["count"] for k in ks),
            "same_every_call": same, "how": "test"}


def test_differences_name_kernels_counts_and_grids():
    a = _block(("add_kernel", [16, 1, 1], 1))
    assert differences(a, a) == []
    assert differences(a, _block(("add_kernel", [32, 1, 1], 1))) == [
        "add_kernel: grid/block (16, 1, 1) (128, 1, 1) in A, (32, 1, 1) (128, 1, 1) in B"]
    assert differences(a, _block(("add_kernel", [16, 1, 1], 2))) == [
        "add_kernel: 1 per call in A, 2 in B"]
    b = _block(("copy_kernel", [8, 1, 1], 1), ("add_kernel", [16, 1, 1], 1), same=False)
    assert differences(a, b, ("before", "after")) == [
        "only after launched copy_kernel",
        "after did not launch the same kernels in every probed call"]
    assert differences(a, {"note": "no device kernels on the CPU"}) is None
    assert differences(None, a) is None


def test_ab_and_diff_report_the_difference(tmp_path, tb):
    from traceview.render.ab_report import kernel_lines

    a = _block(("add_kernel", [16, 1, 1], 1))
    b = _block(("add_func_kernel_rank_1", [256, 1, 1], 1))
    doc = {"sides": {"A": {"kernels_used": a}, "B": {"kernels_used": b,
                                                   "cache_check": {"calls": 27}}},
           "kernels_used": {"same": False, "differences": differences(a, b)}}
    lines = kernel_lines(doc)
    assert lines[0] == "A kernels per call: add_kernel grid (16, 1, 1) block (128, 1, 1) x1"
    assert lines[1].startswith("B --check-cache: 27 calls")
    assert lines[-1] == ("kernels DIFFER: only B launched add_func_kernel_rank_1; only A "
                         "launched add_kernel")
    assert kernel_lines({"sides": {}}) == []  # an ab result saved before the probe

    import traceview
    from traceview.multi.compare import diff_reports

    paths = []
    for name, block, kernel in (("a", a, "add_kernel"), ("b", b, "add_func_kernel_rank_1")):
        from tracebuilder import TraceBuilder

        t = TraceBuilder()
        t.metadata = {"traceview": {"schema": 1, "kernels_used": block}}
        for i in range(3):
            t0 = 1_000_000 + i * 100_000
            t.annotation(f"call_{i}", t0, 50_000)
            t.launched_kernel(kernel, t0 + 2_000, 5_000, t0 + 10_000, 2_000)
        paths.append(t.write(tmp_path / f"{name}.json"))
    d = diff_reports(traceview.analyze(paths[0]), traceview.analyze(paths[1]))
    ku = d.kernels_used
    assert ku["same"] is False and ku["source"].startswith("capture's kernel probe")
    assert ku["differences"] == ["only after launched add_func_kernel_rank_1",
                                 "only before launched add_kernel"]
    from traceview.render.diff_report import kernels_used_lines

    assert kernels_used_lines(d)[-1].startswith("kernels launched DIFFER (capture's kernel probe")
    same = diff_reports(traceview.analyze(paths[0]), traceview.analyze(paths[0]))
    assert same.kernels_used["same"] is True
    assert d.as_dict()["kernels_used"]["differences"] == ku["differences"]


def test_diff_without_a_probe_compares_launches_per_call(tmp_path):
    import traceview
    from tracebuilder import TraceBuilder
    from traceview.multi.compare import diff_reports

    paths = []
    for name, per_call in (("one", 1), ("two", 2)):
        t = TraceBuilder()
        for i in range(4):
            t0 = 1_000_000 + i * 100_000
            t.annotation(f"call_{i}", t0, 50_000)
            for k in range(per_call):
                t.launched_kernel("mul_kernel", t0 + 2_000 + 8_000 * k, 5_000,
                                  t0 + 10_000 + 8_000 * k, 2_000)
        paths.append(t.write(tmp_path / f"{name}.json"))
    d = diff_reports(traceview.analyze(paths[0]), traceview.analyze(paths[1]))
    assert d.kernels_used["differences"] == ["mul_kernel: 1 per call before, 2 after"]
    assert "grids not compared" in d.kernels_used["source"]


def test_kernels_per_call_on_real_h200_traces():
    """capture's own ranges (call_<i>) in fixtures captured on the H200: eager and graph."""
    import gzip
    import json
    from pathlib import Path

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"

    def events(name):
        return json.loads(gzip.decompress((fixtures / name).read_bytes()))["traceEvents"]

    ev = events("flag_gems_add_16x4096_bf16.json.gz")
    calls = [e for e in ev if e.get("cat") == "user_annotation"
             and str(e.get("name", "")).startswith("call_")]
    per = kernels_per_call(ev, r"call_\d+")
    assert len(per) == len(calls) == 30
    assert all(c == [{"name": "add_func_kernel_rank_1", "kind": "kernel", "grid": [256, 1, 1],
                      "block": [128, 1, 1], "count": 1}] for c in per)
    # a graph replay's kernel belongs to its cudaGraphLaunch (one kernel per replay here)
    ev = events("torch_mul_graph.json.gz")
    replays = [e for e in ev if e.get("name") == "cudaGraphLaunch"]
    per = kernels_per_call(ev, r"call_\d+")
    assert len(per) == 100 and len(replays) >= 100
    assert {len(c) for c in per} == {1} and {c[0]["count"] for c in per} == {1}
