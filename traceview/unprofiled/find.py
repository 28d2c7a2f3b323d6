"""The live function objects behind a trace's Python frame names.

The profiler names a Python frame ``path.py(first line): name``; the process that
measures has loaded (and warmed) the same code, so each name resolves to the function
objects whose code has that file, first line and name. Several function objects can
share one code object (closures); they are all returned.
"""

from __future__ import annotations

import gc
import re
import types
import warnings
from collections import defaultdict

FRAME = re.compile(r"^(?P<path>.+?\.py)\((?P<line>\d+)\): (?P<func>.+)$")


def parse(name: str) -> tuple[str, int, str] | None:
    """``(path, first line, function name)`` of a frame name; None for anything else."""
    m = FRAME.match(name)
    return None if m is None else (m.group("path"), int(m.group("line")), m.group("func"))


def same_file(trace_path: str, filename: str) -> bool:
    a, b = trace_path.replace("\\", "/"), filename.replace("\\", "/")
    return a == b or b.endswith("/" + a.lstrip("/")) or a.endswith("/" + b.lstrip("/"))


def _nested(code: types.CodeType) -> list[types.CodeType]:
    out = []
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out += [c, *_nested(c)]
    return out


def functions_for(names: list[str]) -> dict[str, list[types.FunctionType | types.CodeType]]:
    """Each frame name -> the live functions with that code; where no live function
    has it (a closure made afresh per call, such as Triton's launch ``runner``), the
    code object itself, nested in a live function's code (timeable with
    ``sys.monitoring`` only). Names found nowhere are absent."""
    wanted: dict[tuple[int, str], list[tuple[str, str]]] = defaultdict(list)
    for n in names:
        p = parse(n)
        if p is not None:
            wanted[(p[1], p[2])].append((n, p[0]))
    found: dict[str, list[types.FunctionType | types.CodeType]] = defaultdict(list)
    codes: dict[str, types.CodeType] = {}
    # gc.get_objects() leaves out what gc.freeze() moved to the permanent generation
    # (traceview's CLI freezes at start, io/allocator.collect_less): thaw for the walk
    frozen = gc.get_freeze_count()
    if frozen:
        gc.unfreeze()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # lazy modules warn when gc's objects are probed
            funcs = [o for o in gc.get_objects() if isinstance(o, types.FunctionType)]
    finally:
        if frozen:
            gc.freeze()
    for obj in funcs:
        code = obj.__code__
        for name, path in wanted.get((code.co_firstlineno, code.co_name), ()):
            if same_file(path, code.co_filename):
                found[name].append(obj)
    missing = {n for n in names if n not in found}
    if missing:
        for obj in funcs:
            for code in _nested(obj.__code__):
                for name, path in wanted.get((code.co_firstlineno, code.co_name), ()):
                    if name in missing and same_file(path, code.co_filename):
                        codes[name] = code
    for name, code in codes.items():
        found[name] = [code]
    return dict(found)
