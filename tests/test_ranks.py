"""Many traces as ranks: files and directories, parallel analysis, the straggler rule."""

from __future__ import annotations

import gzip
import io
import json
import shutil

import orjson
import pytest
from rich.console import Console
from typer.testing import CliRunner

import traceview
from conftest import FIXTURES
from traceview.cli.app import app
from traceview.documents import builtins
from traceview.errors import UsageError
from traceview.multi.ranks import analyze_ranks, metadata_rank, read_ranks
from traceview.multi.stragglers import STRAGGLER_MIN_RANKS, outliers
from traceview.multi.trace_files import expand_paths

runner = CliRunner()
PEER = FIXTURES / "torch_mul_1x4096_f32.json.gz"  # API p50 ~34 us
SLOW = FIXTURES / "triton_mul_1x4096_f32_stack.json.gz"  # API p50 ~361 us: the straggler


def _with_rank(src, dst, rank):
    """A copy of a fixture whose metadata says ``distributedInfo.rank = rank``."""
    doc = json.loads(gzip.decompress(src.read_bytes()))
    doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 5}
    dst.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return dst


@pytest.fixture
def plain_dir(tmp_path):
    """4 copies of one fixture and a slower one, no rank metadata: rank = file order."""
    d = tmp_path / "plain"
    d.mkdir()
    for i in range(5):
        shutil.copy(SLOW if i == 2 else PEER, d / f"r{i}.json.gz")
    return d


@pytest.fixture
def ranked_dir(tmp_path):
    """The same, with ranks in the metadata in the reverse of the file order."""
    d = tmp_path / "ranked"
    d.mkdir()
    for i in range(5):
        _with_rank(SLOW if i == 1 else PEER, d / f"host_{i}.pt.trace.json.gz", 4 - i)
    return d


def _json(args, jobs=1):
    """explain --format json; ``jobs=None`` lets it start its process pool."""
    extra = [] if jobs is None else ["--jobs", str(jobs)]
    r = runner.invoke(app, ["explain", *map(str, args), "--format", "json", *extra])
    return r, (json.loads(r.stdout) if r.stdout else None)


def test_directory_flags_the_slow_rank(plain_dir):
    r, d = _json([plain_dir], jobs=None)  # the default: a process pool
    assert r.exit_code == 0, r.output
    assert [x["rank"] for x in d["ranks"]] == [0, 1, 2, 3, 4]
    assert all(x["rank_source"] == "order" for x in d["ranks"])
    c = d["combined"]
    assert c["count"] == 5 and c["ok"] == 5 and c["failed"] == []
    assert [s["rank"] for s in c["stragglers"]] == [2]
    reasons = {x["metric"]: x for x in c["stragglers"][0]["reasons"]}
    assert reasons["api_p50_ns"]["direction"] == "above"
    assert reasons["api_p50_ns"]["value"] == d["ranks"][2]["calls"]["stats"]["api_ns"]["p50"]
    assert reasons["api_p50_ns"]["median"] == d["ranks"][0]["calls"]["stats"]["api_ns"]["p50"]
    assert reasons["device_busy_share"]["direction"] == "below"
    assert c["metrics"]["api_p50_ns"]["n"] == 5


def test_rank_comes_from_distributed_info(ranked_dir):
    r, d = _json([ranked_dir])
    assert r.exit_code == 0, r.output
    assert [x["rank"] for x in d["ranks"]] == [0, 1, 2, 3, 4]
    assert all(x["rank_source"] == "distributedInfo" for x in d["ranks"])
    # file host_1 (the slow one) says rank 3
    assert d["ranks"][3]["trace"]["path"].endswith("host_1.pt.trace.json.gz")
    assert [s["rank"] for s in d["combined"]["stragglers"]] == [3]
    assert d["combined"]["warnings"] == []


def test_each_rank_is_the_single_trace_json(plain_dir):
    _, d = _json([plain_dir])
    for entry, path in zip(d["ranks"], sorted(plain_dir.iterdir()), strict=True):
        entry = dict(entry)
        assert entry.pop("rank") is not None and entry.pop("rank_source") == "order"
        single = orjson.loads(orjson.dumps(traceview.analyze(str(path)).to_dict(),
                                           option=orjson.OPT_NON_STR_KEYS))
        assert entry == single


def test_json_shape(plain_dir):
    _, d = _json([plain_dir])
    assert set(d) == {"schema_version", "ranks", "combined"} and d["schema_version"] == 2
    assert set(d["combined"]) >= {"count", "ok", "failed", "rule", "metrics", "stragglers",
                                  "warnings"}
    assert set(d["combined"]["metrics"]) == {"device_busy_share", "api_p50_ns"}
    assert d["combined"]["rule"]["min_ranks"] == STRAGGLER_MIN_RANKS
    for m in d["combined"]["metrics"].values():
        assert set(m) == {"n", "median", "mad", "min", "max"}


def test_many_files_on_the_command_line(plain_dir):
    files = sorted(plain_dir.iterdir())
    r, d = _json(files[:3])
    assert r.exit_code == 0
    assert [x["trace"]["path"] for x in d["ranks"]] == [str(f) for f in files[:3]]
    # three ranks, one differs from the two others: it still stands out
    assert [s["rank"] for s in d["combined"]["stragglers"]] == [2]
    r, d = _json(files[:2])  # two ranks: no rule
    assert d["combined"]["stragglers"] == []


def test_a_broken_file_among_good_ones(plain_dir, tmp_path):
    (plain_dir / "r5.json").write_bytes(b"{not json")
    r, d = _json([plain_dir])
    assert r.exit_code == 0
    bad = d["ranks"][5]
    assert bad["rank"] == 5 and "not valid JSON" in bad["error"]
    assert bad["trace"]["path"].endswith("r5.json")
    assert d["combined"]["ok"] == 5 and len(d["combined"]["failed"]) == 1
    assert [s["rank"] for s in d["combined"]["stragglers"]] == [2]
    # the document reads back through its typed layout, to the same JSON
    typed = read_ranks(d)
    assert typed.combined.failed[0].rank == 5 and typed.combined.stragglers[0].rank == 2
    assert builtins(typed) == d
    with pytest.raises(UsageError, match="combined"):
        read_ranks({**d, "combined": {**d["combined"], "ok": "5"}})
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "rank 5" in lines[0] and "r5.json" in lines[0]
    # text too
    r = runner.invoke(app, ["explain", str(plain_dir), "--width", "100", "-j", "1"])
    assert r.exit_code == 0 and "failed: rank 5" in r.stdout and "error" in r.stdout


def test_all_files_broken_exit_2(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_bytes(b"")
    b.write_bytes(b"\x00\x01")
    for fmt in ("text", "json", "md"):
        r = runner.invoke(app, ["explain", str(a), str(b), str(tmp_path / "missing.json"),
                                "--format", fmt, "--jobs", "1"])
        assert r.exit_code == 2 and r.stdout == ""
        assert len(r.stderr.strip().splitlines()) == 3


def test_text_and_markdown(plain_dir):
    r = runner.invoke(app, ["explain", str(plain_dir), "--width", "80", "-j", "1"])
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert max(len(line) for line in out.splitlines()) <= 80
    # two-word headers stand on two lines ("kernel" over "p50") so the columns fit 80
    for needle in ("rank", "busy", "API", "kernel", "overhead", " p50 ", "verdict",
                   "host-bound", "straggler: rank 2", "5 of 5 ranks"):
        assert needle in out, needle
    r = runner.invoke(app, ["explain", str(plain_dir), "--format", "md", "-j", "1"])
    assert r.exit_code == 0
    md = r.stdout
    assert "| rank | file | window | busy | calls | API p50 |" in md
    assert "| **2** | `r2.json.gz` |" in md and "**straggler**" in md


def test_single_file_output_is_unchanged():
    """One file: byte for byte what the single-trace renderers give."""
    from traceview.render.console import render_console
    from traceview.render.markdown import render_markdown
    from traceview.report.schema import to_json as render_json

    ex = traceview.analyze(str(PEER))
    r = runner.invoke(app, ["explain", str(PEER), "--format", "json"])
    assert r.exit_code == 0 and r.stdout_bytes == render_json(ex)
    r = runner.invoke(app, ["explain", str(PEER), "--format", "md"])
    assert r.stdout == render_markdown(ex, figure=None)
    buf = io.StringIO()
    render_console(ex, Console(file=buf, width=100, highlight=False, color_system=None))
    r = runner.invoke(app, ["explain", str(PEER), "--width", "100"])
    assert r.stdout == buf.getvalue()
    assert "Ranks (" not in r.stdout


def test_options_reach_the_workers(plain_dir):
    r, d = _json([plain_dir, "--window", "0:100us"], jobs=None)
    assert r.exit_code == 0
    # the time range reached every worker (widened where it cut a profiler step)
    assert all(x["window"]["source"] == "range" and "0:100us" in x["window"]["description"]
               and (x["window"]["dur_ns"] == 100_000) == ("widened" not in
                                                          x["window"]["description"])
               for x in d["ranks"])
    r = runner.invoke(app, ["explain", str(plain_dir), "--rules", str(plain_dir / "nope")])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1
    r = runner.invoke(app, ["explain", str(plain_dir), "--format", "md", "--figure", "x.svg"])
    assert r.exit_code == 2 and "single trace" in r.stderr


def test_pool_and_in_process_agree(plain_dir):
    one = analyze_ranks([plain_dir], jobs=1).to_dict()
    two = analyze_ranks([plain_dir], jobs=2).to_dict()
    assert one == two


def test_expand_paths(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    for name in ("rank10.json", "rank2.json.gz", "rank1.pt.trace.json", "notes.txt", "x.json.bak"):
        (d / name).write_text("{}")
    (d / "sub.json").mkdir()
    got = [p.name for p in expand_paths([d])]
    assert got == ["rank1.pt.trace.json", "rank2.json.gz", "rank10.json"]
    # a file named twice (also via its directory) is analysed once
    assert len(expand_paths([d / "rank2.json.gz", d])) == 3
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(traceview.errors.UsageError, match="no trace files"):
        expand_paths([empty])
    r = runner.invoke(app, ["explain", str(empty)])
    assert r.exit_code == 2 and "no trace files" in r.stderr


def test_metadata_rank():
    assert metadata_rank({"distributedInfo": {"rank": 3}}) == 3
    assert metadata_rank({"distributedInfo": {"rank": "7"}}) == 7
    assert metadata_rank({"distributedInfo": {"rank": 2.0}}) == 2
    for bad in ({}, None, {"distributedInfo": 5}, {"distributedInfo": {"rank": -1}},
                {"distributedInfo": {"rank": True}}, {"distributedInfo": {"rank": "x"}}):
        assert metadata_rank(bad) is None


@pytest.mark.parametrize("values, side, flagged", [
    ([100, 101, 99, 100, 150], "both", [4]),
    ([100, 101, 99, 100, 105], "both", []),  # 5%: under the relative floor
    ([100, 100, 100, 100, 111], "both", [4]),  # MAD 0: the floor decides
    ([100, 100, 100, 100, 109], "both", []),
    ([100, 100, 100, 100, 50], "above", []),  # faster is not a straggler
    ([100, 100, 100, 100, 50], "both", [4]),
    ([100, 130, 70, 110, 90, 100], "both", []),  # noisy: within 3 MAD
    ([100, 130, 70, 110, 90, 400], "both", [5]),
    ([100, 300], "both", []),  # too few ranks
    ([100, 300, 310, 100, 105, 290], "both", []),  # two camps: no single odd one
    ([100, 100, 200, 200], "both", []),  # two halves, MAD 0
    ([100, 100, 100, 200], "both", [3]),
    ([100, 102, 104, 150], "above", [3]),
])
def test_straggler_rule(values, side, flagged):
    _, found, _ = outliers(values, side)
    assert sorted(found) == flagged


def _nearest_rank_median(values):
    """Written out here, apart from traceview.stats: the smallest value with at least
    half the values at or below it."""
    v = sorted(values)
    return next(x for x in v if 2 * sum(1 for y in v if y <= x) >= len(v))


@pytest.mark.parametrize("values", [[1, 2, 3, 4], [10, 40, 20, 30, 50, 60], [7], [5, 5, 9],
                                    [0.25, 0.5, 0.125, 1.0]])
def test_ranks_median_is_the_projects_nearest_rank_median(values):
    summary, _, _ = outliers(values)
    m = _nearest_rank_median(values)
    assert summary["median"] == m  # the lower median for an even count: of 1..4, 2 (not 2.5)
    assert summary["mad"] == _nearest_rank_median([abs(x - m) for x in values])


def test_two_halves_name_no_straggler_and_say_so(tmp_path):
    from tracebuilder import TraceBuilder

    summary, found, split = outliers([100, 300, 310, 100, 105, 290])
    assert split and found == {} and summary["median"] == 105  # the lower half holds it
    assert outliers([100, 100, 100, 100, 150])[2] is False
    for i, call_ns in enumerate((10_000, 30_000, 10_000, 30_000)):
        _rank_trace(TraceBuilder(), tmp_path / f"rank{i}.json", calls=5, call_ns=call_ns,
                    kernel_ns=2_000, gap_ns=1_000)
    c = analyze_ranks([tmp_path], jobs=1).to_dict()["combined"]
    assert c["stragglers"] == [] and c["metrics"]["api_p50_ns"]["median"] == 10_000
    assert any(w.startswith("api_p50_ns: the ranks split into two halves (2 of 4")
               for w in c["warnings"]), c["warnings"]


def _rank_trace(tb, path, *, calls, call_ns, kernel_ns, gap_ns):
    """One rank: ``calls`` ranges ``call_N`` of ``call_ns`` each ``gap_ns`` apart, one
    launch and one kernel of ``kernel_ns`` inside each; returns the raw events' figures
    (API p50 and device busy share) computed here, without traceview."""
    for i in range(calls):
        s = i * (call_ns + gap_ns)
        tb.annotation(f"call_{i}", s, call_ns)
        tb.launched_kernel("k", s + 100, 200, s + 400, kernel_ns)
    tb.write(path)
    events = json.loads(path.read_text())["traceEvents"]

    def ns(x):
        return round(x * 1000)

    api = sorted(ns(e["dur"]) for e in events if e["cat"] == "user_annotation")
    kern = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events if e["cat"] == "kernel"]
    acts = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events]
    window = max(e for _, e in acts) - min(s for s, _ in acts)
    busy = sum(e - s for s, e in kern)  # the kernels here never overlap
    return _nearest_rank_median(api), busy / window


def test_ranks_figures_against_raw_events(tmp_path):
    """Four ranks (an even count, where a midpoint median would give another centre):
    each rank's API p50 and busy share, the median and MAD across ranks and the
    straggler, all recomputed from the events written into the traces."""
    from tracebuilder import TraceBuilder

    specs = [(10_000, 2_000), (11_000, 2_000), (12_000, 2_000), (30_000, 2_000)]
    raw, paths = [], []
    for i, (call_ns, kernel_ns) in enumerate(specs):
        p = tmp_path / f"rank{i}.json"
        raw.append(_rank_trace(TraceBuilder(), p, calls=5, call_ns=call_ns,
                               kernel_ns=kernel_ns, gap_ns=1_000))
        paths.append(p)
    d = analyze_ranks([tmp_path], jobs=1).to_dict()
    assert [x["calls"]["stats"]["api_ns"]["p50"] for x in d["ranks"]] == [a for a, _ in raw]
    api = [a for a, _ in raw]
    m = _nearest_rank_median(api)
    mad = _nearest_rank_median([abs(x - m) for x in api])
    assert (m, mad) == (11_000, 1_000)  # a midpoint median would say 11_500
    got = d["combined"]["metrics"]["api_p50_ns"]
    assert (got["median"], got["mad"], got["n"]) == (m, mad, 4)
    busy = [b for _, b in raw]
    mb = _nearest_rank_median(busy)
    got = d["combined"]["metrics"]["device_busy_share"]
    assert got["median"] == pytest.approx(mb, abs=1e-6)
    assert got["mad"] == pytest.approx(_nearest_rank_median([abs(x - mb) for x in busy]),
                                       abs=1e-6)
    # rank 3's calls are 30 us against 11 us: the only straggler on API p50
    assert [s["rank"] for s in d["combined"]["stragglers"]] == [3]
    why = {x["metric"]: x for x in d["combined"]["stragglers"][0]["reasons"]}
    assert why["api_p50_ns"]["value"] == 30_000 and why["api_p50_ns"]["median"] == m
    assert why["api_p50_ns"]["relative"] == pytest.approx((30_000 - m) / m, abs=1e-6)


def _die_on_three(x: int) -> int:
    if x == 3:
        import os

        os._exit(9)  # what an OOM kill looks like to the pool: the process is gone
    return x * x


def test_a_worker_that_dies_costs_only_its_own_item():
    from traceview.multi.workers import parallel_map

    got = parallel_map(_die_on_three, [0, 1, 2, 3, 4, 5], jobs=2, crashed=lambda x: -x)
    assert got == [0, 1, 4, -3, 16, 25]
