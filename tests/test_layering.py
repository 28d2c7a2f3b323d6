"""The package tree as docs/architecture.md draws it: which packages may import the
libraries that measure (torch, triton, transformers, FlagGems), no import cycle through
the package facade, and packages small enough to read."""

from __future__ import annotations

import ast
from pathlib import Path

from test_layout import MEASURING, PKG, _graph, _module_name

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


def test_runner_needs_nothing_it_runs_and_capture_none_of_the_products_built_on_it():
    """``runner`` imports only itself, ``errors`` and the config it carries; ``capture``
    (the protocol) never imports the A/B harness, the sweep or serve."""
    graph = _graph(type_only=True)
    for mod, deps in graph.items():
        inside = {d for d in deps if d.startswith("traceview.")}
        if mod.startswith("traceview.runner"):
            assert inside <= {"traceview.errors", "traceview.workload.config",
                              *(d for d in inside if d.startswith("traceview.runner"))}, mod
        if mod.startswith("traceview.opcapture"):
            assert not {d for d in inside if d.startswith(
                ("traceview.ab", "traceview.sweep", "traceview.serve"))}, mod


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
