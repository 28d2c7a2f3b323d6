"""``traceview export --parquet``: the tables, read back with polars and queried with DuckDB."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import traceview
from conftest import FIXTURES
from traceview.cli.app import app

runner = CliRunner()
DOC = Path(__file__).parent.parent / "docs" / "export.md"
A = FIXTURES / "torch_mul_1x4096_f32.json.gz"
B = FIXTURES / "triton_mul_1x4096_f32_stack.json.gz"
RANK_OF = {"a": 7, "b": 3}


def _with_rank(src, dst, rank):
    doc = json.loads(gzip.decompress(src.read_bytes()))
    doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 8}
    dst.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return dst


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("traces") / "in"
    d.mkdir()
    return [_with_rank(A, d / "a.json.gz", RANK_OF["a"]),
            _with_rank(B, d / "b.json.gz", RANK_OF["b"])]


@pytest.fixture(scope="module")
def exported(traces, tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "out"
    r = runner.invoke(app, ["export", *map(str, traces), "--parquet", str(out)])
    assert r.exit_code == 0, r.output
    reports = {}
    for t in traces:
        rj = runner.invoke(app, ["explain", str(t), "--format", "json"])
        assert rj.exit_code == 0
        reports[str(t)] = json.loads(rj.stdout)
    return out, reports


def _doc_queries() -> list[str]:
    return re.findall(r"```sql\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_row_counts_match_independent_counts(exported, traces):
    out, reports = exported
    assert sorted(p.name for p in out.iterdir()) == ["calls.parquet", "slices.parquet",
                                                      "summary.parquet"]
    slices = pl.read_parquet(out / "slices.parquet")
    calls = pl.read_parquet(out / "calls.parquet")
    summary = pl.read_parquet(out / "summary.parquet")
    assert summary.height == len(traces)
    for t in traces:
        p = str(t)
        n_slices = len(traceview.load(t).slices)
        assert slices.filter(pl.col("path") == p).height == n_slices
        assert reports[p]["trace"]["slices"] == n_slices
        assert calls.filter(pl.col("path") == p).height == reports[p]["calls"]["count"]
        row = summary.filter(pl.col("path") == p).row(0, named=True)
        assert row["slices"] == n_slices and row["error"] is None
    assert slices.height == sum(len(traceview.load(t).slices) for t in traces)


def test_rank_and_values_match_the_json(exported):
    out, reports = exported
    calls = pl.read_parquet(out / "calls.parquet")
    summary = pl.read_parquet(out / "summary.parquet")
    for p, d in reports.items():
        rank = RANK_OF[Path(p).name[0]]
        row = summary.filter(pl.col("path") == p).row(0, named=True)
        assert row["rank"] == rank and row["rank_source"] == "distributedInfo"
        assert row["window_ns"] == d["window"]["dur_ns"]
        assert row["busy_ns"] == d["device"]["busy_ns"]
        assert row["idle_ns"] == d["device"]["idle_ns"]
        assert row["launches"] == d["launches"]["count"]
        assert row["api_ns_p50"] == d["calls"]["stats"]["api_ns"]["p50"]
        assert row["kernel_ns_p50"] == d["calls"]["stats"]["kernel_ns"]["p50"]
        assert row["verdict"] in row["findings"]
        mine = calls.filter(pl.col("path") == p).sort("index")
        assert set(mine["rank"].to_list()) == {rank}
        for got, want in zip(mine.iter_rows(named=True), d["calls"]["per_call"], strict=True):
            for k in ("index", "name", "start_ns", "end_ns", "cold"):
                assert got[k] == want[k], k
            for k in ("api_ns", "kernel_ns", "host_overhead_ns", "launch_latency_ns"):
                assert got[k] == want["metrics"][k], k
            for cat, ns in want["categories"].items():
                assert got[f"host_{cat}_ns"] == ns


def test_host_categories_of_slices_sum_to_the_json(exported):
    """Self time by host category, per thread, equals host.categories / other_threads."""
    out, reports = exported
    slices = pl.read_parquet(out / "slices.parquet")
    for p, d in reports.items():
        threads = [(d["host"]["thread"], {c: v for c, v in d["host"]["categories"].items()
                                          if v and c != "untraced"})]
        threads += [(t, t["categories"]) for t in d["host"]["other_threads"]]
        for t, want in threads:
            got = (slices.filter((pl.col("path") == p) & (pl.col("pid") == t["pid"])
                                 & (pl.col("tid") == t["tid"])
                                 & pl.col("host_category").is_not_null())
                   .group_by("host_category").agg(pl.col("host_self_ns").sum()))
            assert dict(got.iter_rows()) == want
        dev = slices.filter((pl.col("path") == p) & (pl.col("lane_kind") == "device"))
        assert dev["host_category"].null_count() == dev.height
        assert dev.filter(pl.col("category") == "kernel").height == d["device"]["kernel_count"]


def test_duckdb_queries_from_the_doc(exported):
    duckdb = pytest.importorskip("duckdb")
    out, reports = exported
    queries = _doc_queries()
    assert len(queries) >= 2
    run = [duckdb.sql(q.replace("'out/", f"'{out}/")).fetchall() for q in queries]

    # per-rank warm calls and p50s
    by_rank = {RANK_OF[Path(p).name[0]]: d for p, d in reports.items()}
    want = [(r, by_rank[r]["calls"]["warm_count"], by_rank[r]["calls"]["stats"]["api_ns"]["p50"],
             by_rank[r]["calls"]["stats"]["host_overhead_ns"]["p50"]) for r in sorted(by_rank)]
    assert [tuple(row) for row in run[0]] == want

    # top kernels across traces
    sums: dict[str, list[int]] = {}
    for d in by_rank.values():
        for k in d["device"]["kernels"]:
            s = sums.setdefault(k["name"], [0, 0, 0])
            s[0] += k["count"]
            s[1] += k["sum_ns"]
            s[2] += 1
    want = sorted(((n, c, s, k) for n, (c, s, k) in sums.items()), key=lambda x: (-x[2], x[0]))
    assert [tuple(row) for row in run[1]] == want[:10]


def test_a_broken_trace_is_listed_and_the_rest_exported(traces, tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    traces = [_with_rank(t, d / t.name, RANK_OF[t.name[0]]) for t in traces]
    bad = d / "c.json"
    bad.write_bytes(b"{not json")
    out = tmp_path / "out2"
    r = runner.invoke(app, ["export", str(d), "--parquet", str(out), "--jobs", "1"])
    assert r.exit_code == 0, r.output
    assert len(r.stderr.strip().splitlines()) == 1 and "c.json" in r.stderr
    summary = pl.read_parquet(out / "summary.parquet")
    assert summary.height == 3
    err = summary.filter(pl.col("error").is_not_null())
    assert err["path"].to_list() == [str(bad)] and "not valid JSON" in err["error"][0]
    assert err["rank"].to_list() == [2] and err["slices"].to_list() == [None]
    assert set(pl.read_parquet(out / "slices.parquet")["path"].unique()) == {str(t) for t in traces}


def test_nothing_written_when_every_trace_fails(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"")
    out = tmp_path / "out"
    r = runner.invoke(app, ["export", str(bad), "--parquet", str(out)])
    assert r.exit_code == 2 and not out.exists()
    target = tmp_path / "file"
    target.write_text("x")
    r = runner.invoke(app, ["export", str(A), "--parquet", str(target)])
    assert r.exit_code == 2 and "not a directory" in r.stderr


def test_rewrite_is_atomic_and_leaves_no_temp_files(tmp_path):
    out = tmp_path / "out"
    for src in (A, B):
        r = runner.invoke(app, ["export", str(src), "--parquet", str(out)])
        assert r.exit_code == 0, r.output
        assert sorted(p.name for p in out.iterdir()) == ["calls.parquet", "slices.parquet",
                                                          "summary.parquet"]
    assert pl.read_parquet(out / "summary.parquet")["path"].to_list() == [str(B)]
    assert "summary.parquet: 1 rows" in r.stdout


def test_python_api_in_process_and_pool_agree(traces):
    from traceview.multi.export import build_tables

    _, one = build_tables(traces, jobs=1)
    _, two = build_tables(traces, jobs=2)
    for name in one:
        assert one[name].equals(two[name]), name
