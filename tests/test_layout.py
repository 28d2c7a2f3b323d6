"""The shape of the code: no import cycles, one table of ids, a JSON that round-trips."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from conftest import FIXTURES
from traceview.codes import DIAGNOSTICS, FINDINGS

ROOT = Path(__file__).parent.parent
PKG = ROOT / "traceview"
FIXTURE_FILES = sorted(FIXTURES.glob("*.json.gz"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, modules: set[str], *, type_only: bool = False) -> set[str]:
    """traceview modules imported by ``path``, lazy ones included; TYPE_CHECKING (type-only)
    ones too when ``type_only``."""
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        if not type_only and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for b in node.body for n in ast.walk(b))
    me = _module_name(path)
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            if node.level:  # relative
                pkg = me.split(".")[: len(me.split(".")) - node.level + (path.name == "__init__.py")]
                base = ".".join([*pkg, node.module])
            for a in node.names:
                if f"{base}.{a.name}" in modules:
                    out.add(f"{base}.{a.name}")
                elif base in modules:
                    out.add(base)
    out.discard(me)
    # importing a submodule runs its packages' __init__ too, but those hold no imports of
    # consequence here; only the module edges count
    return out


def _graph(*, type_only: bool = False) -> dict[str, set[str]]:
    files = [p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts]
    modules = {_module_name(p) for p in files}
    return {_module_name(p): _imports(p, modules, type_only=type_only) for p in files}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (c := visit(m)):
                return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (c := visit(n)):
            return c
    return None


def test_no_import_cycle():
    cycle = find_cycle(_graph())
    assert cycle is None, " -> ".join(cycle)


def test_no_import_cycle_counting_type_only_imports():
    """A cycle through a TYPE_CHECKING import is still two modules that need each other."""
    cycle = find_cycle(_graph(type_only=True))
    assert cycle is None, " -> ".join(cycle)


def test_type_only_imports_are_seen(tmp_path, monkeypatch):
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    mod = tmp_path / "m.py"
    mod.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                   "    from traceview.model import Trace\n")
    assert _imports(mod, {"traceview.model"}) == set()
    assert _imports(mod, {"traceview.model"}, type_only=True) == {"traceview.model"}


#: The measuring packages: they run processes and import torch; each other's imports are theirs.
MEASURING = ("traceview.opcapture", "traceview.checks", "traceview.ab", "traceview.sweep",
             "traceview.serve", "traceview.runner", "traceview.unprofiled", "traceview.workload")


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_model_reads_only_ios_interface():
    """io hands the model finished columns (``io/columns.py``): the model never reaches
    into io's decoding helpers; and ``coerce`` is a bottom module, importing nothing."""
    graph = _graph()
    assert {d for d in graph["traceview.model"] if d.startswith("traceview.io")} == {
        "traceview.io.columns"}
    assert graph["traceview.coerce"] == set()


MAX_FUNCTION_LINES = 80


def long_functions(source: str, where: str, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``where:name (lines)`` of every function or method in ``source`` longer than
    ``limit`` lines, from its ``def`` line to its last line (nested ones too)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            if lines > limit:
                out.append(f"{where}:{node.name} ({lines})")
    return out


def test_the_long_function_finder_finds_one():
    body = "".join(f"    x{i} = {i}\n" for i in range(80))
    assert long_functions(f"def f():\n{body}", "m.py") == ["m.py:f (81)"]
    assert long_functions(f"def f():\n{body[:-len('    x79 = 79') - 1]}", "m.py") == []
    nested = "class C:\n    def g(self):\n" + body.replace("    ", "        ") + "        pass\n"
    assert long_functions(nested, "m.py") == ["m.py:g (82)"]


def test_no_function_over_80_lines():
    found = []
    for path in sorted(PKG.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        where = path.relative_to(PKG).as_posix()
        found += long_functions(path.read_text(), where)
    assert not found, "functions over 80 lines: " + ", ".join(found)


def _doc_table(heading: str) -> list[tuple[str, str, str]]:
    text = (ROOT / "docs" / "findings.md").read_text()
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| (\w+) \| (.+?) \|$", section, re.M)
    return rows


def test_docs_list_the_finding_table_exactly():
    assert _doc_table("## Finding ids") == [(c.id, c.severity, c.meaning)
                                            for c in FINDINGS.values()]


def test_docs_list_the_diagnostic_table_exactly():
    assert _doc_table("## Diagnostic codes") == [(c.id, c.severity, c.meaning)
                                                 for c in DIAGNOSTICS.values()]


def test_loader_diagnostics_are_in_the_table():
    from traceview.model import _MESSAGES

    for code, (severity, _) in _MESSAGES.items():
        assert DIAGNOSTICS[code].severity == severity
    for path in (*sorted((PKG / "io").glob("*.py")), PKG / "metadata.py", PKG / "model.py"):
        for code in re.findall(r'(?:append\(\(|Diagnostic\()"([a-z-]+)"', path.read_text()):
            assert code in DIAGNOSTICS, (path.name, code)


@pytest.fixture(scope="module")
def reports(fixture_reports):
    return fixture_reports


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.name)
def test_json_round_trips(reports, path):
    from traceview.report.schema import from_json, to_json

    r = reports[path.name]
    back = from_json(to_json(r))
    assert back == r
    assert to_json(back) == to_json(r)
    for f in r.findings:
        assert f.id in FINDINGS
    for d in r.diagnostics:
        assert d.code in DIAGNOSTICS


def test_from_json_names_the_problem():
    from traceview.errors import UsageError
    from traceview.report.schema import from_json

    with pytest.raises(UsageError, match="not an explain report"):
        from_json(b'{"schema_version": 1, "calls": {}}')


def test_a_report_saved_before_the_per_call_keys_still_loads(reports):
    """schema_version 1 only ever adds keys: a report saved without the per-warm-call keys
    (kinds, tree, outliers, each call's kind and reasons) loads, with their defaults."""
    from traceview.report.schema import from_dict

    d = reports["flag_gems_add_16x4096_bf16.json.gz"].to_dict()
    for key in ("description", "how", "outliers", "api_sync_ns", "kinds", "tree",
                "perturbation", "tree_warm_calls"):
        d["calls"].pop(key)
    for row in d["calls"]["per_call"]:
        for key in ("kind", "cold_reason", "outlier", "outlier_reason", "api_sync_ns"):
            row.pop(key)
    for f in d["host"]["functions"]:
        for key in ("inclusive_ns_per_call", "self_ns_per_call", "calls_with", "few_calls"):
            f.pop(key)
    d["host"].pop("families")
    old = from_dict(d)
    assert old.calls.kinds == () and old.calls.per_call[0].kind == ""
    assert old.calls.per_call[0].metrics == reports[
        "flag_gems_add_16x4096_bf16.json.gz"].calls.per_call[0].metrics


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for m in graph.get(todo.pop(), ()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


def test_every_renderer_module_is_reached_from_the_registry():
    """Each module under render/ is a registry entry's renderer or a helper one imports:
    none is a renderer the CLI could call around the registry."""
    graph = _graph()
    render = {m for m in graph if m.startswith("traceview.render.")}
    unreached = render - _reachable(graph, "traceview.render.registry")
    assert not unreached, sorted(unreached)


def test_the_cli_picks_renderers_from_the_registry_only():
    graph = _graph()
    for mod, deps in graph.items():
        if mod.startswith("traceview.cli"):
            direct = {d for d in deps if d.startswith("traceview.render")}
            assert direct <= {"traceview.render.registry"}, (mod, sorted(direct))


def test_every_subject_has_text_json_and_markdown():
    """The reports people paste into issues have markdown too; capture's own outputs (its
    summary, the checks) have text and JSON, and a sweep its ``sweep.md``."""
    from traceview.render.registry import RENDERERS

    subjects = {s for s, _ in RENDERERS}
    reports = {"report", "ranks", "diff", "ab", "serve", "proton", "sweep"}
    assert subjects == reports | {"capture", "failure", "cache_check", "layouts"}
    for s in subjects:
        want = {"text", "json", "md"} if s in reports else {"text", "json"}
        assert want <= {f for t, f in RENDERERS if t == s}, s
