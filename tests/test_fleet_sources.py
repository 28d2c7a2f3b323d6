"""Traces where they live: http:// and s3:// (a real HTTP server and moto's S3 server on
127.0.0.1), globs, the local engine's pool decision, the optional extras, and Ctrl-C
during a ranks run or an export (local pool): exit 130, no worker traceback, nothing
written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FIXTURES
from fleet_support import (
    NAMES,
    RANKS,
    ROOT,
    TraceServer,
    cli,
    interrupt_group,
    local_ranks_json,
    make_rankset,
    moto_server,
    raw_x_events,
    s3_env,
    strip_paths,
    upload,
)


@pytest.fixture(scope="module")
def rankset(tmp_path_factory) -> list[Path]:
    return make_rankset(tmp_path_factory.mktemp("rankset"))


@pytest.fixture(scope="module")
def http(rankset):
    with TraceServer(rankset[0].parent) as server:
        yield server


@pytest.fixture(scope="module")
def s3(rankset):
    with moto_server() as endpoint:
        upload(endpoint, "fleet", {f"job/{p.name}": p for p in rankset})
        yield endpoint


def test_one_http_trace_equals_the_local_file(http, rankset):
    url = f"{http.url}/{rankset[2].name}"
    remote = cli("explain", url, "--format", "json")
    local = cli("explain", str(rankset[2]), "--format", "json")
    assert remote.returncode == 0 and remote.stderr == "", remote.stderr
    got, want = json.loads(remote.stdout), json.loads(local.stdout)
    assert got["trace"]["path"] == url
    assert strip_paths(got, {url: "t"}) == strip_paths(want, {str(rankset[2]): "t"})
    assert got["trace"]["slices"] == raw_x_events(rankset[2])


def test_http_ranks_equal_the_local_run_and_a_missing_url_is_one_rank(http, rankset):
    urls = [f"{http.url}/{p.name}" for p in rankset]
    missing = f"{http.url}/no_such_rank.json.gz"
    r = cli("explain", *urls, missing, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [f"traceview: error: rank 3: {missing}: no such file"]
    got = json.loads(r.stdout)
    assert [x["rank"] for x in got["ranks"]] == [0, 1, 2, 3]
    assert got["combined"]["failed"] == [{"rank": 3, "path": missing,
                                          "error": f"{missing}: no such file"}]
    got["ranks"] = got["ranks"][:3]
    got["combined"]["failed"], got["combined"]["count"] = [], 3
    want = local_ranks_json(rankset)
    mapping = {u: p.name for u, p in zip(urls, rankset, strict=True)}
    assert strip_paths(got, mapping) == strip_paths(want, {str(p): p.name for p in rankset})
    for rank in got["ranks"]:  # each rank's slices against the raw count
        p = rankset[RANKS.index(rank["rank"])]
        assert rank["trace"]["slices"] == raw_x_events(p)


def test_s3_folder_and_glob_equal_the_local_run(s3, rankset):
    env = s3_env(s3)
    want = strip_paths(local_ranks_json(rankset), {str(p): p.name for p in rankset})
    mapping = {f"s3://fleet/job/{p.name}": p.name for p in rankset}
    for target in ("s3://fleet/job/", "s3://fleet/job/rank*.json.gz"):
        r = cli("explain", target, "--format", "json", env=env)
        assert r.returncode == 0, r.stderr
        assert strip_paths(json.loads(r.stdout), mapping) == want, target


def test_s3_missing_object_and_bucket_are_one_line(s3):
    env = s3_env(s3)
    for url in ("s3://fleet/job/nothing.json.gz", "s3://no-such-bucket/x.json.gz"):
        r = cli("explain", url, env=env)
        assert r.returncode == 2
        assert r.stdout == ""
        assert r.stderr == f"traceview: error: {url}: no such file\n"


def test_export_to_s3_with_the_local_engine_is_read_by_duckdb(s3, rankset):
    import duckdb
    import s3fs

    env = s3_env(s3)
    r = cli("export", "s3://fleet/job/", "--parquet", "s3://fleet/tables", env=env)
    assert r.returncode == 0, r.stderr
    fs = s3fs.S3FileSystem(key=env["AWS_ACCESS_KEY_ID"], secret=env["AWS_SECRET_ACCESS_KEY"],
                           endpoint_url=s3)
    assert sorted(fs.ls("fleet/tables/slices")) == [
        f"fleet/tables/slices/part-{i:05d}.parquet" for i in range(len(rankset))]
    con = duckdb.connect()
    con.register_filesystem(fs)
    got = dict(con.sql("select rank, count(*) from read_parquet('s3://fleet/tables/slices/*."
                       "parquet') group by rank").fetchall())
    assert got == {r: raw_x_events(p) for p, r in zip(rankset, RANKS, strict=True)}
    summary = con.sql("select rank, error from 's3://fleet/tables/summary.parquet' "
                      "order by rank").fetchall()
    assert summary == [(0, None), (1, None), (2, None)]
    assert not [p for p in fs.ls("fleet/tables") if ".staging" in p]


def test_a_missing_driver_names_the_extra(tmp_path):
    # a process where s3fs cannot be imported, as on an install without traceview[s3]
    block = tmp_path / "block"
    block.mkdir()
    (block / "s3fs.py").write_text("raise ImportError('blocked for the test')\n")
    (block / "ray.py").write_text("raise ImportError('blocked for the test')\n")
    env = {"PYTHONPATH": f"{block}{os.pathsep}{ROOT}"}
    r = cli("explain", "s3://bucket/trace.json.gz", env=env)
    assert r.returncode == 2
    assert r.stderr == ("traceview: error: s3://bucket/trace.json.gz: reading s3:// URLs needs "
                        "a driver: pip install 'traceview[s3]'\n")
    a, b = (str(FIXTURES / f"{n}.json.gz") for n in NAMES[:2])
    r = cli("explain", a, b, "--engine", "ray", env=env)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == "traceview: error: --engine ray needs Ray: pip install 'traceview[ray]'\n"


def test_explain_never_imports_ray_or_fsspec_for_local_files():
    code = ("import sys; from traceview.cli.app import main\n"
            "sys.argv = ['traceview', 'explain', *sys.argv[1:], '--format', 'json']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('ray', 'fsspec', 's3fs') if m in sys.modules), "
            "file=sys.stderr)\n")
    paths = [str(FIXTURES / f"{n}.json.gz") for n in NAMES]
    for args in (paths[:1], paths):
        r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                           cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
        assert r.stderr.strip().splitlines()[-1] == "[]", r.stderr


def _pid(_x: int) -> int:
    return os.getpid()


def test_the_pool_starts_only_when_it_pays():
    from traceview.multi.engine import POOL_MIN_BYTES, each, in_order

    items = [0, 1, 2, 3]
    small = in_order(each(_pid, items, sizes=lambda: [1000] * 4), 4)
    assert small == [os.getpid()] * 4
    big = in_order(each(_pid, items, sizes=lambda: [POOL_MIN_BYTES // 4] * 4), 4)
    assert os.getpid() not in big
    asked = in_order(each(_pid, items, jobs=2, sizes=lambda: [1] * 4), 4)
    assert os.getpid() not in asked and len(set(asked)) <= 2
    assert in_order(each(_pid, items, jobs=1), 4) == [os.getpid()] * 4


def test_analyze_ranks_api_and_its_polars_table(rankset):
    import polars as pl

    import traceview

    report = traceview.analyze_ranks([str(p) for p in rankset])
    t = report.table()
    assert isinstance(t, pl.DataFrame)
    assert t["rank"].to_list() == [0, 1, 2]
    assert t["path"].to_list() == [str(rankset[RANKS.index(r)]) for r in (0, 1, 2)]
    for row, rr in zip(t.iter_rows(named=True), report.ranks, strict=True):
        d = rr.report.to_dict()
        assert row["window_ns"] == d["window"]["dur_ns"]
        assert row["busy_ns"] == d["device"]["busy_ns"]
        assert row["api_p50_ns"] == d["calls"]["stats"]["api_ns"]["p50"]
        assert row["error"] is None and row["straggler"] in (True, False)


# ------------------------------------------------------------------ Ctrl-C (local pool)


def _interrupted(proc: subprocess.Popen) -> tuple[int, str, str]:
    interrupt_group(proc)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


@pytest.mark.parametrize("after_s", [0.0, 1.5])
@pytest.mark.parametrize("command", ["explain", "export"])
def test_ctrl_c_in_a_pool_run_is_exit_130_without_traceback(http, rankset, tmp_path,
                                                             command, after_s):
    # six ranks, one of them held by the server: SIGINT reaches the whole group (driver
    # and pool workers) while one worker waits on the network and the other works
    urls = [f"{http.url}/{p.name}" for p in rankset] * 2
    urls[1] = f"{http.url}/stall/{rankset[1].name}"
    before = len(http.stalled)
    out = tmp_path / "tables"
    args = ["explain", *urls, "--format", "json"] if command == "explain" else \
        ["export", *urls, "--parquet", str(out)]
    proc = subprocess.Popen([sys.executable, "-m", "traceview", *args, "-j", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    try:
        pid = http.wait_stalled(before + 1)
        assert pid is not None and pid != proc.pid  # a pool worker holds the stalled read
        time.sleep(after_s)
        rc, stdout, stderr = _interrupted(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 130
    assert stdout == ""
    assert stderr == "traceview: interrupted\n"
    assert not out.exists()


def test_diff_reads_urls_too(http, rankset):
    url = f"{http.url}/{rankset[0].name}"
    remote = cli("diff", url, str(rankset[1]), "--format", "json")
    local = cli("diff", str(rankset[0]), str(rankset[1]), "--format", "json")
    assert remote.returncode == 0, remote.stderr
    got, want = json.loads(remote.stdout), json.loads(local.stdout)
    assert got["before"] == url
    assert strip_paths(got, {url: "a"}) == strip_paths(want, {str(rankset[0]): "a"})
