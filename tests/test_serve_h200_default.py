"""The default serving A/B as it ran on the H200, every cache empty
(fixtures/serve_h200_default_cold.json: ``tools/measure_serve_default_on_gpu.sh``'s
``cold.json``, 2026-12-03), read back and recounted: the figures docs/serving.md gives
for it ("How long it takes") are recomputed here from the raw per-request timestamps and
per-process times, and the verdicts from the per-round walls by an independent count
(each round's B - A, all of them positive, which with 6 rounds is the exact signed-rank
test's strongest evidence: every Walsh average above zero)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from traceview.paired import compare

DOC = Path(__file__).resolve().parents[1] / "fixtures" / "serve_h200_default_cold.json"


@pytest.fixture(scope="module")
def doc() -> dict:
    return json.loads(DOC.read_text())


def s(ns: int) -> float:
    return round(ns / 1e9, 1)


DOCS = DOC.parents[1] / "docs" / "serving.md"


def _docs_table() -> dict[str, tuple[str, str]]:
    """docs/serving.md's table of where the H200 run's time went: row label -> (run 1,
    run 2) as printed."""
    text = DOCS.read_text()
    body = text[text.index("| stage (s) | run 1 | run 2 |"):].split("\n\n")[0]
    rows = [r.strip("|").split("|") for r in body.splitlines()[2:]]
    return {cells[0].strip(): (cells[1].strip(), cells[2].strip()) for cells in rows}


def _recounted(doc: dict) -> dict[str, str]:
    """The table's figures recounted from one recorded run's raw per-process times, keyed
    by the start of the row's label."""
    start = doc["protocol"]["process_start"]
    a, b = doc["variants"]
    check = b["correctness"]["check"]
    phases = check["phases_ns"]
    walls = {v["label"]: [r["process_wall_ns"] for r in v["repetitions"]] for v in (a, b)}

    def processes(label: str) -> str:
        w = walls[label]
        return f"{s(sum(w))} ({s(min(w))}-{s(max(w))} each)"

    out = {"template:": str(s(start["templates"]["A+B"]["imports_ns"])),
           "B's check, whole process": str(s(check["process_wall_ns"])),
           "of which FlagGems' first calls": str(s(phases["backend"])),
           f"of which the bisect of {len(b['correctness']['bisect']['tested'])} ops "
           f"(culprit `{'`, `'.join(b['correctness']['bisect']['culprits'])}`)":
               f"{s(phases['bisect'])} + {s(phases['recheck'])}",
           f"{len(walls['A'])} A processes (eager)": processes("A"),
           f"{len(walls['B'])} B processes": processes("B")}
    if b["diagnosis"] is not None:
        out["the two profiled runs"] = (f"{s(a['diagnosis']['process_wall_ns'])} + "
                                        f"{s(b['diagnosis']['process_wall_ns'])}")
    return out


@pytest.mark.parametrize("column, fixture", [(0, "serve_h200_default_cold_serial_compile.json"),
                                             (1, DOC.name)])
def test_the_docs_table_is_what_the_recorded_run_gives(column, fixture):
    """Every figure docs/serving.md prints for a run is recounted from that run's recorded
    per-process times (a figure edited by hand, or a re-recorded run the docs do not
    follow, fails here)."""
    doc = json.loads((DOC.parent / fixture).read_text())
    table = _docs_table()
    for prefix, want in _recounted(doc).items():
        label = next((k for k in table if k.startswith(prefix)), None)
        assert label is not None, f"docs/serving.md has no row starting {prefix!r}"
        assert table[label][column] == want, (label, table[label][column], want)


def test_where_the_time_went(doc):
    """The recorded run's internal consistency: the check's phases fit in its process,
    forked processes start at once, the parallel compile left nothing to the autotuner,
    and docs/serving.md's sentence about it states its figures."""
    start = doc["protocol"]["process_start"]
    assert start["mode"] == "fork" and list(start["templates"]) == ["A+B"]
    a, b = doc["variants"]
    check = b["correctness"]["check"]
    phases = check["phases_ns"]
    assert sum(phases.values()) <= check["process_ns"]["task"] <= check["process_wall_ns"]
    pc = check["parallel_compile"]
    assert pc["failed"] == 0 and pc["why"] is None
    assert (f"compiled {pc['configs']} configs of {pc['keys']} autotuner keys on the thread "
            f"pool in {s(pc['ns'])} s") in " ".join(DOCS.read_text().split())
    for v in (a, b):
        for r in v["repetitions"]:  # forked: the task is nearly the whole process
            assert r["process_ns"]["start_to_task"] < 0.05e9
            assert r["setup_ns"] + r["warmup_ns"] <= r["process_ns"]["task"]
    assert doc["complete"] and doc["measured"]


def test_the_verdicts_recounted_from_the_requests(doc):
    a, b = doc["variants"]

    def walls(v: dict) -> dict[int, int]:
        return {r["round"]: max(q["last_token_ns"] for q in r["requests"])
                for r in v["repetitions"]}

    wa, wb = walls(a), walls(b)
    diffs = [wb[k] - wa[k] for k in sorted(wa)]
    assert len(diffs) == 6 and all(d > 0 for d in diffs)  # B slower in every round
    row = doc["ab"]["figures"]["wall"]
    assert row["diffs"] == diffs and row["verdict"] == "B slower"
    c = compare([wa[k] for k in sorted(wa)], [wb[k] for k in sorted(wb)])
    assert (c.ci_low_ns, c.ci_high_ns) == (row["ci_low_ns"], row["ci_high_ns"]) == \
        (min(diffs), max(diffs))  # 6 rounds, 96.9%: the extreme Walsh averages
    assert (round(row["estimate_ns"] / 1e7) / 100, round(row["ci_low_ns"] / 1e7) / 100,
            round(row["ci_high_ns"] / 1e7) / 100) == (1.98, 1.78, 2.75)
    assert all(f["verdict"] == "B slower" for f in doc["ab"]["figures"].values())


def test_the_run_before_the_parallel_compile():
    """Run 1 (fixtures/serve_h200_default_cold_serial_compile.json): the same command,
    the check compiling one config after another; stopped at the script's 203 s limit in
    B's profiled run (``complete`` false), the repetitions and the A/B already written
    (its figures: the docs table test above)."""
    doc = json.loads((DOC.parent / "serve_h200_default_cold_serial_compile.json").read_text())
    a, b = doc["variants"]
    check = b["correctness"]["check"]
    assert "parallel_compile" not in check
    assert sum(check["phases_ns"].values()) <= check["process_ns"]["task"]
    assert not doc["complete"] and doc["measured"] and b["diagnosis"] is None
    assert all(f["verdict"] == "B slower" for f in doc["ab"]["figures"].values())
