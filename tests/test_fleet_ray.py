"""``--engine ray`` on a real one-node Ray cluster (``ray start --head --num-cpus 2``),
reading the rank set over http:// and s3:// (moto's server): the same JSON as the local
run, export read by DuckDB, a killed worker fails only its rank, Ctrl-C exits 130.

Marked ``ray`` (``pytest -m ray`` selects them, ``-m 'not ray'`` skips them); skipped
when Ray is not installed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from fleet_support import (
    RANKS,
    ROOT,
    TraceServer,
    interrupt_group,
    local_ranks_json,
    make_rankset,
    moto_server,
    raw_x_events,
    ray_cluster,
    s3_env,
    strip_paths,
    upload,
)

if os.environ.get("TRACEVIEW_REQUIRE_RAY"):  # CI: a missing Ray is a failure, not a skip
    import ray  # noqa: F401
else:
    pytest.importorskip("ray")
pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def rankset(tmp_path_factory):
    return make_rankset(tmp_path_factory.mktemp("rankset"))


@pytest.fixture(scope="module")
def servers(rankset, tmp_path_factory):
    with TraceServer(rankset[0].parent) as http, moto_server() as endpoint:
        upload(endpoint, "fleet", {f"job/{p.name}": p for p in rankset})
        env = s3_env(endpoint)
        with ray_cluster(tmp_path_factory.mktemp("cluster"), env) as address:
            yield http, endpoint, {**env, "RAY_ADDRESS": address}


def run(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run([sys.executable, "-m", "traceview", *args], capture_output=True,
                          text=True, env=full, timeout=timeout, cwd=ROOT)


def test_ray_over_http_and_s3_equals_the_local_run(servers, rankset):
    http, _, env = servers
    want = strip_paths(local_ranks_json(rankset), {str(p): p.name for p in rankset})
    sets = {
        "http": [f"{http.url}/{p.name}" for p in rankset],
        "s3": [f"s3://fleet/job/{p.name}" for p in rankset],
    }
    for kind, urls in sets.items():
        missing = urls[0].rsplit("/", 1)[0] + "/missing.json.gz"
        r = run("explain", *urls, missing, "--engine", "ray", "--address", "auto",
                "--format", "json", env=env)
        assert r.returncode == 0, r.stderr
        assert r.stderr.splitlines() == [f"traceview: error: rank 3: {missing}: no such file"]
        got = json.loads(r.stdout)
        assert got["ranks"][3] == {"rank": 3, "rank_source": "order",
                                   "trace": {"path": missing},
                                   "error": f"{missing}: no such file"}
        got["ranks"] = got["ranks"][:3]
        got["combined"]["failed"], got["combined"]["count"] = [], 3
        mapping = {u: p.name for u, p in zip(urls, rankset, strict=True)}
        assert strip_paths(got, mapping) == want, kind


def test_export_with_ray_is_read_by_duckdb(servers, rankset, tmp_path):
    import duckdb
    import polars as pl

    http, _, env = servers
    out = tmp_path / "tables"
    urls = [f"{http.url}/{p.name}" for p in rankset]
    r = run("export", *urls, "--engine", "ray", "--parquet", str(out), env=env)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (out / "slices").iterdir()) == [
        f"part-{i:05d}.parquet" for i in range(len(rankset))]
    assert not [p for p in out.iterdir() if p.name.startswith(".staging")]
    con = duckdb.connect()
    slices = dict(con.sql(f"select rank, count(*) from read_parquet('{out}/slices/*.parquet') "
                          "group by rank").fetchall())
    assert slices == {r: raw_x_events(p) for p, r in zip(rankset, RANKS, strict=True)}
    # the same rows as the local engine's single files
    local = tmp_path / "local"
    r = run("export", *map(str, rankset), "--parquet", str(local), "-j", "1", env={})
    assert r.returncode == 0, r.stderr
    for table in ("slices", "calls"):
        want = pl.read_parquet(local / f"{table}.parquet").drop("path")
        key = ["rank", "slice"] if table == "slices" else ["rank", "index"]
        cols = ", ".join(f'"{c}"' for c in want.columns)
        order = ", ".join(f'"{c}"' for c in key)
        got = con.sql(f"select {cols} from read_parquet('{out}/{table}/*.parquet', "
                      f"union_by_name=true) order by {order}").fetchall()
        assert got == want.sort(key).rows(), table
    summary = con.sql(f"select rank, error, slices from '{out}/summary.parquet' order by rank")
    assert summary.fetchall() == [(r, None, raw_x_events(rankset[RANKS.index(r)]))
                                  for r in sorted(RANKS)]


def test_export_with_ray_to_s3(servers, rankset):
    import duckdb
    import s3fs

    _, endpoint, env = servers
    r = run("export", "s3://fleet/job/", "--engine", "ray", "--parquet", "s3://fleet/ray-out",
            env=env)
    assert r.returncode == 0, r.stderr
    fs = s3fs.S3FileSystem(key=env["AWS_ACCESS_KEY_ID"], secret=env["AWS_SECRET_ACCESS_KEY"],
                           endpoint_url=endpoint)
    con = duckdb.connect()
    con.register_filesystem(fs)
    got = con.sql("select count(*) from read_parquet('s3://fleet/ray-out/calls/*.parquet', "
                  "union_by_name=true)").fetchall()[0][0]
    assert got == sum(d["calls"]["count"] for d in local_ranks_json(rankset)["ranks"])


def test_analyze_ranks_api_with_ray(servers, rankset):
    http, _, env = servers
    code = ("import json, sys, traceview\n"
            "r = traceview.analyze_ranks(sys.argv[1:], engine='ray', address='auto')\n"
            "t = r.table()\n"
            "print(json.dumps(t.select('rank', 'window_ns', 'busy_ns').rows()))\n")
    urls = [f"{http.url}/{p.name}" for p in rankset]
    p = subprocess.run([sys.executable, "-c", code, *urls], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT), **env}, timeout=300)
    assert p.returncode == 0, p.stderr
    local = local_ranks_json(rankset)
    assert json.loads(p.stdout) == [[d["rank"], d["window"]["dur_ns"], d["device"]["busy_ns"]]
                                    for d in local["ranks"]]


def test_a_killed_worker_fails_only_its_rank(servers, rankset):
    http, _, env = servers
    urls = [f"{http.url}/{p.name}" for p in rankset]
    victim = f"{http.url}/stall/{rankset[1].name}"
    urls[1] = victim
    before = len(http.stalled)
    proc = subprocess.Popen([sys.executable, "-m", "traceview", "explain", *urls, "--engine",
                             "ray", "--format", "json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    try:
        killed = 0
        while proc.poll() is None and killed < 3:  # Ray retries the task once
            try:
                pid = http.wait_stalled(before + killed + 1, timeout=30)
            except TimeoutError:
                break
            assert pid is not None and pid != proc.pid
            os.kill(pid, signal.SIGKILL)
            killed += 1
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert killed == 2  # the task, and its one retry
    doc = json.loads(out)
    failed = doc["combined"]["failed"]
    assert [f["path"] for f in failed] == [victim]
    assert failed[0]["error"].startswith(f"{victim}: the worker process analysing it died")
    assert err.splitlines() == [f"traceview: error: rank {failed[0]['rank']}: "
                                f"{failed[0]['error']}"]
    assert doc["combined"]["ok"] == 2


@pytest.mark.parametrize(("command", "after_s"), [("explain", 0.0), ("export", 1.0)])
def test_ctrl_c_cancels_the_ray_tasks(servers, rankset, tmp_path, command, after_s):
    http, _, env = servers
    urls = [f"{http.url}/{p.name}" for p in rankset]
    urls[1] = f"{http.url}/stall/{rankset[1].name}"
    before = len(http.stalled)
    out = tmp_path / "tables"
    args = ["explain", *urls, "--format", "json"] if command == "explain" else \
        ["export", *urls, "--parquet", str(out)]
    proc = subprocess.Popen([sys.executable, "-m", "traceview", *args, "--engine", "ray"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                            start_new_session=True)
    try:
        pid = http.wait_stalled(before + 1, timeout=120)
        time.sleep(after_s)  # at 1 s the other ranks have finished meanwhile
        interrupt_group(proc)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert stdout == ""
    assert stderr == "traceview: interrupted\n"
    assert not out.exists()
    end = time.monotonic() + 30  # the cancelled task's worker is gone (force=True)
    while time.monotonic() < end and os.path.exists(f"/proc/{pid}"):
        time.sleep(0.5)
    assert not os.path.exists(f"/proc/{pid}")
