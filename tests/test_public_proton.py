"""The public corpus's Triton Proton profiles (``tests/public_corpus.py``): what explain reports
of each, against a count written here from the raw tree, and the one-line refusal of the
ones that are not valid JSON (hand-edited files from a fork of Triton).

A ``.hatchet`` tree is a JSON list: the calling-context tree (``frame.name``, ``metrics``,
``children``) and a device table. A kernel is a node whose metrics name its device
(``device_type``; an older Proton wrote ``DeviceType``); its ``time (ns)`` and ``count`` (or
``Time (ns)``, ``Count``) are that kernel's in that context, and a scope's inclusive time is
the sum over the kernels below it (docs/proton.md). The held-out trees run only with
``TRACEVIEW_HELD_OUT=1``; a tree absent from this machine's corpus copy is skipped.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from typing import Any

import public_corpus
import pytest
from typer.testing import CliRunner

import traceview
from traceview.cli.app import app

runner = CliRunner()


def _proton_params() -> list[Any]:
    out = []
    for e in public_corpus.entries():
        if not public_corpus.is_proton(e):
            continue
        marks = []
        if e.held_out and not public_corpus.held_out_runs():
            marks.append(pytest.mark.skip(reason=f"{e.name} is held out (TRACEVIEW_HELD_OUT=1 runs it)"))
        elif public_corpus.locate(e.name) is None:
            marks.append(pytest.mark.skip(reason=f"{e.name} is not in this machine's corpus copy "
                                                 "(python tools/copy_public_corpus.py --mirror DIR)"))
        out.append(pytest.param(e.name, marks=marks, id=e.name))
    return out


def _raw(name: str) -> str:
    path = public_corpus.locate(name)
    assert path is not None
    return gzip.decompress(path.read_bytes()).decode()


def _metric(m: dict[str, Any], *keys: str) -> Any:
    return next((m[k] for k in keys if k in m), None)


def _counted(doc: list[Any]) -> tuple[int, int, dict[tuple[str, ...], int]]:
    """Kernel time and count over the tree, and each scope's inclusive time by its path
    of names below ROOT, walked here without traceview."""
    total_ns = total_count = 0
    by_scope: dict[tuple[str, ...], int] = defaultdict(int)
    stack = [(child, ()) for child in doc[0].get("children", [])]
    while stack:
        node, above = stack.pop()
        path = (*above, node["frame"]["name"])
        m = node.get("metrics", {})
        if _metric(m, "device_type", "DeviceType") is not None:
            ns = int(_metric(m, "time (ns)", "Time (ns)"))
            total_ns += ns
            total_count += int(_metric(m, "count", "Count"))
            for k in range(1, len(path)):
                by_scope[path[:k]] += ns
        stack += [(child, path) for child in node.get("children", [])]
    return total_ns, total_count, dict(by_scope)


def _valid(name: str) -> list[Any] | None:
    try:
        return json.loads(_raw(name))
    except ValueError:
        return None


@pytest.mark.parametrize("name", _proton_params())
def test_a_public_proton_tree_reads_as_counted_or_is_refused_in_one_line(name):
    path = public_corpus.locate(name)
    doc = _valid(name)
    if doc is None:
        # not JSON (a comma missing where the file was edited by hand): one line, exit 2,
        # naming the file and where the JSON stops, as Python's own reader does
        try:
            json.loads(_raw(name))
        except json.JSONDecodeError as exc:
            at = exc.pos
        r = runner.invoke(app, ["explain", str(path)])
        assert r.exit_code == 2 and "Traceback" not in r.output
        lines = [line for line in r.output.splitlines() if line.strip()]
        assert len(lines) == 1 and str(path) in lines[0] and "not valid JSON" in lines[0]
        assert f"(byte {at})" in lines[0]
        return
    total_ns, total_count, by_scope = _counted(doc)
    report = traceview.proton(str(path))
    assert (report.time_ns, report.count) == (total_ns, total_count)
    got: dict[tuple[str, ...], int] = {}
    stack = [(row, ()) for row in report.rows]
    while stack:
        row, above = stack.pop()
        here = (*above, row.name)
        if row.kind == "scope":
            got[here] = row.time_ns
        stack += [(child, here) for child in row.children]
    assert got == by_scope
    # the JSON says the same as the typed report
    r = runner.invoke(app, ["explain", str(path), "--format", "json"])
    assert r.exit_code == 0
    d = json.loads(r.stdout)
    assert (d["time_ns"], d["count"]) == (total_ns, total_count)
