"""The package tree as docs/architecture.md draws it: which packages may import the
libraries that measure (torch, triton, transformers, FlagGems), no import cycle through
the package facade, and packages small enough to read."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from test_layout import MEASURING, PKG, _graph, _module_name, _reachable, find_cycle

#: The libraries that measure: importing one costs seconds and may touch the GPU.
HEAVY = ("torch", "triton", "transformers", "flag_gems")
#: Modules in one package directory, ``__init__.py`` included.
MAX_MODULES = 20


def heavy_imports(source: str) -> set[str]:
    """The heavy libraries ``source`` imports anywhere (inside functions too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        found.update(n.split(".")[0] for n in names if n.split(".")[0] in HEAVY)
    return found


def test_the_heavy_import_finder_finds_lazy_ones():
    src = "import os\ndef f():\n    import torch.nn\n    from triton import jit\n"
    assert heavy_imports(src) == {"torch", "triton"}
    assert heavy_imports("from .torch import x\nimport torchvision\n") == set()


def test_only_measuring_packages_import_torch_triton_transformers_or_flag_gems():
    wrong = []
    for path in sorted(PKG.rglob("*.py")):
        mod = _module_name(path)
        if mod.startswith(MEASURING):
            continue
        if found := heavy_imports(path.read_text()):
            wrong.append(f"{mod}: {', '.join(sorted(found))}")
    assert not wrong, wrong


def test_no_import_cycle_through_the_package_facade():
    """``traceview/__init__.py`` imports the whole reading half lazily; a module that
    imports the facade back makes a loop (``multi`` reads traces through
    ``report.pipeline`` instead)."""
    graph = _graph(type_only=True)
    assert graph["traceview"], "the facade's imports are seen"
    assert _loops_through_facade(graph) == []
    assert _loops_through_facade({**graph, "traceview.multi.ranks": {"traceview"}}) == [
        "traceview.multi.ranks"]


def _loops_through_facade(graph: dict[str, set[str]]) -> list[str]:
    """The facade's direct imports from which the facade is reachable again."""
    def reaches(start: str) -> bool:
        seen, todo = {start}, [start]
        while todo:
            for m in graph.get(todo.pop(), ()):
                if m == "traceview":
                    return True
                if m not in seen:
                    seen.add(m)
                    todo.append(m)
        return False

    return sorted(d for d in graph["traceview"] if reaches(d))


def test_no_package_directory_holds_more_than_20_modules():
    sizes = {d.relative_to(PKG.parent).as_posix(): len(list(d.glob("*.py")))
             for d in [PKG, *PKG.rglob("*")] if d.is_dir() and (d / "__init__.py").exists()}
    assert {d: n for d, n in sizes.items() if n > MAX_MODULES} == {}
    assert sizes["traceview/opcapture"] > 1


def test_the_measuring_packages_are_those_the_architecture_names():
    text = (Path(PKG.parent) / "docs" / "architecture.md").read_text()
    for pkg in MEASURING:
        assert f"`{pkg.split('.')[-1]}`" in text, pkg


#: The table of allowed imports is docs/architecture.md's: this test reads it there.
ARCHITECTURE = Path(PKG.parent) / "docs" / "architecture.md"


def allowed_imports(text: str) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """From the "What may import what" table: per unit, the units it may import at
    module level, and those it may import inside functions (module level ones too)."""
    section = text.split("## What may import what", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (.+?) \| (.+?) \|$", section, re.M)[2:]  # past the header
    bottom: set[str] = set()
    eager: dict[str, set[str]] = {}
    lazy: dict[str, set[str]] = {}
    for unit_cell, may_cell in rows:
        units = set(re.findall(r"`([\w.]+)`", unit_cell))
        if unit_cell.startswith("bottom:"):
            bottom = units
        now, _, later = may_cell.partition("; lazily:")
        for unit in units:
            eager[unit] = _names(now, bottom)
            lazy[unit] = eager[unit] | _names(later, bottom)
    return eager, lazy


def _names(cell: str, bottom: set[str]) -> set[str]:
    names = set(re.findall(r"`([\w.]+)`", cell))
    return names | bottom if re.search(r"\bbottom\b", cell) else names


def unit_of(module: str) -> str:
    """``traceview.io.decode`` -> ``io``; the facade ``traceview`` -> ``traceview``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def import_edges(source: str, module: str) -> set[tuple[str, str, bool]]:
    """``(unit, imported unit, inside a function)`` for every traceview import in
    ``source`` (the module ``module``), at any depth; imports under ``if TYPE_CHECKING``
    are left out (they never run)."""
    edges: set[tuple[str, str, bool]] = set()

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for other in child.orelse:
                    visit_one(other, in_function)
                continue
            visit_one(child, in_function)

    def visit_one(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for target in _targets(node, module):
                edges.add((unit_of(module), unit_of(target), in_function))
        visit(node, in_function or isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(source), False)
    return {e for e in edges if e[0] != e[1]}


def _targets(node: ast.Import | ast.ImportFrom, module: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "traceview"]
    base = node.module or ""
    if node.level:  # relative: from the importing module's package
        pkg = module.split(".")[: len(module.split(".")) - node.level + 1]
        base = ".".join([*pkg, *([base] if base else [])])
    if base.split(".")[0] != "traceview":
        return []
    if base == "traceview":  # ``from traceview import intervals``: the module's unit
        return [f"traceview.{a.name}" if (PKG / a.name).exists()
                or (PKG / f"{a.name}.py").exists() else "traceview" for a in node.names]
    return [base]


def test_the_import_finder_sees_imports_inside_functions_and_skips_type_only_ones():
    src = ("from traceview.io import decode\n"
           "from traceview import intervals\n"
           "if TYPE_CHECKING:\n    from traceview.report.model import Report\n"
           "class C:\n    def f(self):\n        import traceview.opcapture.api\n"
           "def g():\n    if True:\n        from traceview.runner.process import spawn\n")
    assert import_edges(src, "traceview.multi.x") == {
        ("multi", "io", False), ("multi", "intervals", False),
        ("multi", "opcapture", True), ("multi", "runner", True)}


def test_the_table_parser_reads_rows_bottom_and_lazily():
    text = ("## What may import what\n\n| unit | may import |\n| --- | --- |\n"
            "| bottom: `errors`, `stats` | bottom |\n| `io` | bottom |\n"
            "| `cli` | `io`, bottom; lazily: `opcapture` |\n\n## Next\n| `x` | `y` |\n")
    eager, lazy = allowed_imports(text)
    assert eager == {"errors": {"errors", "stats"}, "stats": {"errors", "stats"},
                     "io": {"errors", "stats"}, "cli": {"io", "errors", "stats"}}
    assert lazy["cli"] == {"io", "errors", "stats", "opcapture"}


def test_every_import_is_one_the_architecture_table_allows():
    """Module level and inside functions alike: a package reaches another only along
    the table of docs/architecture.md, so no two packages import each other in a loop
    hidden inside a function."""
    eager, lazy = allowed_imports(ARCHITECTURE.read_text())
    wrong, missing = [], set()
    for path in sorted(PKG.rglob("*.py")):
        mod = _module_name(path)
        for unit, dep, in_function in import_edges(path.read_text(), mod):
            if unit not in eager:
                missing.add(unit)
            elif dep not in (lazy if in_function else eager)[unit]:
                wrong.append(f"{mod} -> {dep}{' (in a function)' if in_function else ''}")
    assert not missing, f"units the table lacks: {sorted(missing)}"
    assert not wrong, wrong


def test_the_architecture_table_has_no_loop_and_names_every_unit():
    _, lazy = allowed_imports(ARCHITECTURE.read_text())
    bottom = {u for u, deps in lazy.items() if u in deps}  # they import only each other
    assert bottom and all(lazy[u] == bottom for u in bottom)

    def node(u: str) -> str:
        return "bottom" if u in bottom else u

    graph: dict[str, set[str]] = {}
    for u, deps in lazy.items():
        graph.setdefault(node(u), set()).update(node(d) for d in deps if node(d) != node(u))
    assert find_cycle(graph) is None, find_cycle(graph)
    units = {unit_of(_module_name(p)) for p in PKG.rglob("*.py")}
    assert units == set(lazy), units ^ set(lazy)


def test_the_reading_half_reaches_no_measuring_product():
    """Through the table: nothing the reading half may import, at any depth, is a
    measuring product (``runner`` runs the reading half's pool too and imports none)."""
    _, lazy = allowed_imports(ARCHITECTURE.read_text())
    reached = _reachable({u: d for u, d in lazy.items()}, "render") | _reachable(lazy, "multi")
    products = {m.split(".")[-1] for m in MEASURING} - {"runner"}
    assert not reached & products, reached & products


#: What starts a process: only ``runner`` may use these.
PROCESS_STARTERS = ("subprocess", "multiprocessing", "concurrent.futures.process")


def process_starters(source: str) -> set[str]:
    """The process-starting modules ``source`` imports anywhere, and ``os.fork``/``os.exec*``/
    ``os.spawn*``/``os.posix_spawn*``/``ProcessPoolExecutor`` it names."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(PROCESS_STARTERS))
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.startswith(PROCESS_STARTERS):
                found.add(node.module)
            found.update(a.name for a in node.names if a.name == "ProcessPoolExecutor")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "os" and node.attr.startswith(
                    ("fork", "exec", "spawn", "posix_spawn")):
            found.add(f"os.{node.attr}")
    return found


def test_the_process_starter_finder_finds_them():
    src = ("import subprocess\ndef f():\n    from concurrent.futures import ProcessPoolExecutor\n"
           "    os.fork()\n    import multiprocessing.pool\n")
    assert process_starters(src) == {"subprocess", "ProcessPoolExecutor", "os.fork",
                                     "multiprocessing.pool"}
    assert process_starters("from concurrent.futures import ThreadPoolExecutor\n") == set()


def test_every_child_process_starts_in_runner():
    """One package starts processes, under one time limit (``runner.outcome``): the
    version query, the driver query and the multi-trace pool included."""
    wrong = {}
    for path in sorted(PKG.rglob("*.py")):
        mod = _module_name(path)
        if not mod.startswith("traceview.runner") and (found := process_starters(
                path.read_text())):
            wrong[mod] = sorted(found)
    assert not wrong, wrong


def test_the_measuring_packages_draw_nothing():
    """Their reports reach people through the render registry (``render/measured/``):
    no measuring module imports rich."""
    drawing = []
    for path in sorted(PKG.rglob("*.py")):
        mod = _module_name(path)
        if not mod.startswith(MEASURING):
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] == "rich" for n in names):
                drawing.append(mod)
    assert not drawing, drawing
