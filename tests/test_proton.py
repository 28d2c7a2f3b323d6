"""Triton Proton profiles (captured on an H200 by tools/capture_proton_traces.py): every
figure is checked against counts written here from the raw files."""

from __future__ import annotations

import gzip
import json
import math
import shutil
from collections import defaultdict
from decimal import Decimal

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from rawcount import length, union
from traceview.cli.app import app
from traceview.io import proton
from traceview.report.proton import trace_report, tree_report

runner = CliRunner()
P = FIXTURES / "proton"
CALLS_TRACE = P / "proton_mul_20_calls.chrome_trace.gz"
NESTED_TRACE = P / "proton_nested.chrome_trace.gz"
CALLS_TREE = P / "proton_mul_20_calls.hatchet.gz"
NESTED_TREE = P / "proton_nested.hatchet.gz"


def raw(path):
    return json.loads(gzip.decompress(path.read_bytes()))


def ns(us) -> int:
    return int(Decimal(str(us)) * 1000)


def raw_kernels(path):
    """(call_stack, start ns, end ns) of every kernel event, from the raw JSON."""
    out = []
    for e in raw(path)["traceEvents"]:
        out.append((e["args"]["call_stack"], ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])))
    return out


def lower_median(values):
    v = sorted(values)
    return v[math.ceil(len(v) / 2) - 1]


# ---------------------------------------------------------------------- recognition


@pytest.mark.parametrize(("path", "kind"), [(CALLS_TRACE, "trace"), (NESTED_TRACE, "trace"),
                                            (CALLS_TREE, "tree"), (NESTED_TREE, "tree")])
def test_recognised_by_content_whatever_the_name(path, kind, tmp_path):
    assert proton.sniff(path) == kind
    renamed = tmp_path / "profile.json.gz"
    shutil.copy(path, renamed)
    assert proton.sniff(renamed) == kind
    plain = tmp_path / "profile.json"
    plain.write_bytes(gzip.decompress(path.read_bytes()))
    assert proton.sniff(plain) == kind


@pytest.mark.parametrize("name", ["train_llama_eager.json.gz", "torch_mul_1x4096_f32.json.gz",
                                  "flag_gems_add_16x4096_bf16.json.gz"])
def test_kineto_traces_are_not_proton(name):
    assert proton.sniff(FIXTURES / name) is None


def test_fixtures_are_what_the_capture_planned():
    info = json.loads((P / "proton_capture_info.json").read_text())
    assert info["device"] == "NVIDIA H200" and info["versions"]["triton"].startswith("3.6")
    assert all(c["ok"] for c in info["captures"].values())
    stacks = [k[0] for k in raw_kernels(CALLS_TRACE)]
    assert [s[1] for s in stacks] == info["plan"]["mul_20_calls"]["scopes"]


# ---------------------------------------------------------------------------- trace


def test_twenty_scoped_calls_give_twenty_calls_with_the_raw_kernel_p50():
    ks = raw_kernels(CALLS_TRACE)
    by_call = defaultdict(list)
    for stack, a, b in ks:
        assert stack[0] == "ROOT" and len(stack) == 3
        by_call[stack[1]].append(b - a)
    assert len(by_call) == 20
    r = trace_report(proton.read_trace(CALLS_TRACE))
    assert len(r.calls) == 20
    assert {c.name for c in r.calls} == set(by_call)
    per_call = [sum(v) for v in by_call.values()]
    assert r.call_stats["kernel_ns"].p50 == lower_median(per_call)
    assert r.call_stats["kernel_ns"].max == max(per_call)
    assert r.kernels[0].stats.p50 == lower_median([b - a for _, a, b in ks])
    assert r.kernel_count == len(ks) == 20
    assert r.device_busy_ns == length(union([[a, b] for _, a, b in ks]))
    assert r.window_ns == max(b for *_, b in ks) - min(a for _, a, _ in ks)
    assert r.call_kinds == {"call_#": 20}
    assert r.cannot_answer and any("host" in x for x in r.cannot_answer)


def test_idle_after_each_call_is_the_gap_to_the_next_calls_first_kernel():
    ks = raw_kernels(CALLS_TRACE)
    first = {}
    last = {}
    for stack, a, b in ks:
        first[stack[1]] = min(first.get(stack[1], a), a)
        last[stack[1]] = max(last.get(stack[1], b), b)
    order = sorted(first, key=first.get)
    r = trace_report(proton.read_trace(CALLS_TRACE))
    for c, name, nxt in zip(r.calls, order, [*order[1:], None], strict=True):
        assert c.name == name
        assert c.idle_after_ns == (None if nxt is None else first[nxt] - last[name])


def test_nested_scopes_form_a_tree_with_the_raw_counts():
    ks = raw_kernels(NESTED_TRACE)
    count = defaultdict(int)
    total = defaultdict(int)
    calls = set()
    for stack, a, b in ks:
        calls.add(stack[1])
        inner = stack[2:-1]
        for d in range(1, len(inner) + 1):
            count["/".join(inner[:d])] += 1
            total["/".join(inner[:d])] += b - a
    r = trace_report(proton.read_trace(NESTED_TRACE))
    assert len(r.calls) == len(calls) == 4
    got = {}
    stack = list(r.scopes)
    while stack:
        s = stack.pop()
        got[s.path] = (s.kernels, s.kernel_sum_ns, s.calls_with)
        stack.extend(s.children)
    assert got == {p: (count[p], total[p], 4) for p in count}
    assert {"forward", "backward", "backward/grad"} == set(got)
    per_call = defaultdict(int)
    for stack_, a, b in ks:
        per_call[stack_[1]] += b - a
    assert [c.kernel_ns for c in r.calls] == [per_call[c.name] for c in r.calls]
    # several kernels per scope: forward has a mul and an add in every call
    assert got["forward"][0] == 2 * 4


def test_a_call_far_slower_than_the_others_is_an_outlier_and_stays_counted():
    r = trace_report(proton.read_trace(NESTED_TRACE))
    spans = [c.span_ns for c in r.calls]
    for c in r.calls:
        others = sorted(spans[: c.index] + spans[c.index + 1:])
        med = others[math.ceil(len(others) / 2) - 1]
        assert (c.outlier_reason is not None) == (c.span_ns > 2 * med)
    assert r.call_stats["span_ns"].n == 4


# ----------------------------------------------------------------------------- tree


def raw_tree_rows(path):
    """name path -> (inclusive time, inclusive count, inclusive kernel flops, bytes),
    summed here recursively from the raw JSON."""
    doc = raw(path)
    out = {}

    def walk(node, prefix):
        m = node["metrics"]
        kernel = "time (ns)" in m
        t = m.get("time (ns)", 0) if kernel else 0
        c = m.get("count", 0) if kernel else 0
        fl = sum(v for k, v in m.items() if k.startswith("flops")) if kernel else 0
        by = m.get("bytes", 0) if kernel else 0
        for ch in node["children"]:
            ct, cc, cf, cb = walk(ch, f"{prefix}/{ch['frame']['name']}")
            t, c, fl, by = t + ct, c + cc, fl + cf, by + cb
        out[prefix] = (t, c, fl, by)
        return t, c, fl, by

    for ch in doc[0]["children"]:
        walk(ch, ch["frame"]["name"])
    return out, doc


def report_rows(r):
    out = {}
    stack = [(row, row.name) for row in r.rows]
    while stack:
        row, path = stack.pop()
        out[path] = row
        stack.extend((c, f"{path}/{c.name}") for c in row.children)
    return out


@pytest.mark.parametrize("path", [CALLS_TREE, NESTED_TREE])
def test_each_scopes_kernel_time_and_count_equal_the_files(path):
    want, doc = raw_tree_rows(path)
    r = tree_report(proton.read_tree(path))
    got = report_rows(r)
    assert set(got) == set(want)
    for p, (t, c, fl, by) in want.items():
        row = got[p]
        assert (row.time_ns, row.count) == (t, c), p
        assert row.flops == fl and row.bytes == by, p
        assert row.gb_per_s == pytest.approx(by / t)
        assert row.tflop_per_s == pytest.approx(fl / t / 1000)
    assert r.time_ns == sum(want[c["frame"]["name"]][0] for c in doc[0]["children"])
    assert r.count == 20


OLD_NAMES = {"count": "Count", "time (ns)": "Time (ns)", "device_id": "DeviceId",
             "device_type": "DeviceType"}


def test_an_earlier_protons_capitalised_metrics_read_as_todays(tmp_path):
    """Earlier Proton releases wrote ``Count``, ``Time (ns)``, ``DeviceId``, ``DeviceType``
    (a public Hopper matmul tree read as "0 kernel invocations, 0 ns"): the nested tree
    with its keys renamed so gives every scope the time and count summed from the raw
    file, and the kernels' device labels stay labels."""
    doc = raw(NESTED_TREE)

    def rename(node):
        node["metrics"] = {OLD_NAMES.get(k, k): v for k, v in node["metrics"].items()}
        for ch in node["children"]:
            rename(ch)

    rename(doc[0])
    assert "Time (ns)" in json.dumps(doc) and '"time (ns)"' not in json.dumps(doc)
    f = tmp_path / "old.hatchet"
    f.write_text(json.dumps(doc))
    want, _ = raw_tree_rows(NESTED_TREE)
    got = report_rows(tree_report(proton.read_tree(f)))
    assert {p: (row.time_ns, row.count) for p, row in got.items()} == {
        p: (t, c) for p, (t, c, _, _) in want.items()}
    labelled = sum("DeviceType" in n["metrics"] for n in _nodes_raw(doc[0]))
    nodes = list(_nodes(proton.read_tree(f).root))
    assert labelled > 0 and sum("device_type" in n.labels for n in nodes) == labelled
    assert not any(k in n.metrics or k in n.labels for n in nodes for k in OLD_NAMES.values())


def _nodes(root):
    stack = [root]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.children)


def _nodes_raw(root):
    stack = [root]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n["children"])


def test_the_20_call_tree_has_a_scope_per_call_with_one_kernel():
    r = tree_report(proton.read_tree(CALLS_TREE))
    assert sorted(row.name for row in r.rows) == sorted(f"call_{i}" for i in range(20))
    assert all(row.count == 1 and row.children[0].kind == "kernel" for row in r.rows)


def test_metrics_recorded_on_a_scope_stay_apart_from_its_kernels():
    _, doc = raw_tree_rows(NESTED_TREE)
    r = tree_report(proton.read_tree(NESTED_TREE))
    rows = report_rows(r)
    for step in doc[0]["children"]:
        bw = next(c for c in step["children"] if c["frame"]["name"] == "backward")
        row = rows[f"{step['frame']['name']}/backward"]
        assert row.scope_metrics == bw["metrics"]
        assert row.scope_gb_per_s == pytest.approx(bw["metrics"]["bytes"] / row.time_ns)
        # the kernels below describe the same work: equal here, and never added to it
        assert row.flops == bw["metrics"]["flops"]


def test_device_peak_bandwidth_from_the_files_device_table():
    _, doc = raw_tree_rows(CALLS_TREE)
    d = doc[1]["CUDA"]["0"]
    r = tree_report(proton.read_tree(CALLS_TREE))
    assert r.devices[0].peak_gb_per_s == pytest.approx(
        d["bus_width"] / 8 * d["memory_clock_rate"] * 1e3 * 2 / 1e9)
    assert r.devices[0].num_sms == d["num_sms"] == 132


# ------------------------------------------------------------------------------ CLI


@pytest.mark.parametrize("path", [CALLS_TRACE, NESTED_TRACE, CALLS_TREE, NESTED_TREE])
@pytest.mark.parametrize("fmt", ["text", "json", "md"])
def test_explain_reads_proton_in_every_format(path, fmt):
    r = runner.invoke(app, ["explain", str(path), "--format", fmt])
    assert r.exit_code == 0, r.output
    if fmt == "json":
        d = json.loads(r.stdout)
        assert d["format"] in ("proton-trace", "proton-tree")
    else:
        assert "Proton" in r.stdout


def test_proton_trace_text_states_what_it_cannot_answer():
    r = runner.invoke(app, ["explain", str(CALLS_TRACE)])
    assert "20 calls" in r.stdout
    assert "cannot answer" in r.stdout and "launch" in r.stdout


@pytest.mark.parametrize("flag", [["--window", "x"], ["--calls", "x"], ["--thread", "1"],
                                  ["--annotate", "out.json.gz"]])
def test_kineto_only_options_are_refused_in_one_line(flag, tmp_path):
    r = runner.invoke(app, ["explain", str(NESTED_TREE), *flag])
    assert r.exit_code == 2
    assert "not for a Proton" in r.output and "Traceback" not in r.output
    # the line names the file as given, never an object's repr
    assert f"({NESTED_TREE})" in r.output and " object at 0x" not in r.output


@pytest.mark.parametrize("text", [
    b'{"displayTimeUnit":"us","traceEvents":[{"args":{"call_stack":["ROOT","a"]}',  # cut
    b'{"displayTimeUnit":"us","traceEvents":[{"args":{"call_stack":"x"},"ph":"X"}]}',
    b'[{"frame":{"name":"ROOT"},"children":[{"frame":{"name":"x"},"children":7}]}]',
    b'[{"frame":{"name":"ROOT"},"children":[3]}]',
])
def test_bad_proton_input_is_one_line_and_exit_2(text, tmp_path):
    f = tmp_path / "bad.hatchet"
    f.write_bytes(text)
    r = runner.invoke(app, ["explain", str(f)])
    assert r.exit_code == 2, r.output
    assert r.output.count("\n") == 1 and "Traceback" not in r.output


def _deep_tree(depth: int) -> str:
    node = {"frame": {"name": "k", "type": "function"},
            "metrics": {"count": 1, "time (ns)": 5}, "children": []}
    text = json.dumps(node)
    for i in range(depth):
        text = ('{"frame":{"name":"s%d","type":"function"},"metrics":{},"children":[' % i
                + text + "]}")
    return ('[{"frame":{"name":"ROOT","type":"function"},"metrics":{},"children":['
            + text + "]},{}]")


def test_a_deep_tree_is_read_and_folded_without_recursion(tmp_path):
    f = tmp_path / "deep.hatchet"
    f.write_text(_deep_tree(100))
    r = tree_report(proton.read_tree(f))
    assert r.time_ns == 5 and r.count == 1
    assert r.rows[0].time_ns == 5 and r.rows[0].name == "s99"
    assert any("folded" in n for n in r.notes)
    out = runner.invoke(app, ["explain", str(f)])
    assert out.exit_code == 0, out.output


def test_a_tree_deeper_than_the_json_reader_allows_is_one_line(tmp_path):
    f = tmp_path / "deeper.hatchet"
    f.write_text(_deep_tree(50_000))
    r = runner.invoke(app, ["explain", str(f)])
    assert r.exit_code == 2
    assert r.output.count("\n") == 1 and "deeper" in r.output


def test_out_of_range_numbers_do_not_become_figures(tmp_path):
    f = tmp_path / "big.hatchet"
    f.write_text(json.dumps([{"frame": {"name": "ROOT"}, "metrics": {}, "children": [
        {"frame": {"name": "s"}, "metrics": {}, "children": [
            {"frame": {"name": "k"}, "metrics": {"count": 1, "time (ns)": 2**70},
             "children": []},
            {"frame": {"name": "k2"}, "metrics": {"count": -3, "time (ns)": 7},
             "children": []}]}]}]))
    r = runner.invoke(app, ["explain", str(f), "--format", "json"])
    if r.exit_code == 0:
        d = json.loads(r.stdout)
        assert d["time_ns"] == 0 and d["count"] == 0  # neither node is a usable count
        assert any("out of range" in n for n in d["notes"])
    else:
        assert r.exit_code == 2 and r.output.count("\n") == 1


def test_the_python_api_reads_proton_and_load_says_what_the_file_is():
    import traceview
    from traceview.errors import TraceLoadError

    r = traceview.proton(CALLS_TRACE)
    assert len(r.calls) == 20
    assert traceview.proton(NESTED_TREE).count == 20
    with pytest.raises(TraceLoadError, match="Proton trace"):
        traceview.load(CALLS_TRACE)
    with pytest.raises(TraceLoadError, match="not a Triton Proton"):
        traceview.proton(FIXTURES / "torch_mul_1x4096_f32.json.gz")


def _event(stack, ts, dur, tid=7):
    return {"args": {"call_stack": stack}, "cat": "kernel", "dur": dur, "name": stack[-1],
            "ph": "X", "tid": tid, "ts": ts}


def test_one_json_object_per_stream_per_line_is_read(tmp_path):
    f = tmp_path / "two.chrome_trace"
    lines = [{"displayTimeUnit": "us", "traceEvents": [
        _event(["ROOT", "call_0", "k"], 0.0, 1.5), _event(["ROOT", "call_1", "k"], 10.0, 2.0)]},
        {"displayTimeUnit": "us", "traceEvents": [
            _event(["ROOT", "call_0", "k2"], 0.5, 1.0, tid=9)]}]
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert proton.sniff(f) == "trace"
    r = trace_report(proton.read_trace(f))
    assert r.streams == ("7", "9")
    assert [(c.name, c.kernels, c.kernel_ns, c.busy_ns) for c in r.calls] == \
        [("call_0", 2, 2500, 1500), ("call_1", 1, 2000, 2000)]


def test_one_scope_name_reused_for_every_call_is_said(tmp_path):
    f = tmp_path / "same.chrome_trace"
    f.write_text(json.dumps({"displayTimeUnit": "us", "traceEvents": [
        _event(["ROOT", "call", "k"], float(i * 10), 1.0) for i in range(5)]}))
    r = trace_report(proton.read_trace(f))
    assert len(r.calls) == 1 and r.calls[0].kernels == 5
    assert any("name each call's scope uniquely" in n for n in r.notes)
