"""Wraps one FlagGems op with a busy-wait when FlagGems is imported
(``PLANTED_FLAG_GEMS_SLOW=op:ns``, op as FlagGems names the function), for the planted
check of ``serve --attribute`` (tools/attribute_serve_on_gpu.sh puts this folder first on
the path of every process it starts).

Both of FlagGems' op tables get the wrapped function: ``_FULL_CONFIG``, which
``use_gems(exclude=...)`` (the whole backend) registers from, and ``FULL_CONFIG_BY_FUNC``,
the name -> entries index FlagGems 5.0.2 builds from it at import and
``use_gems(include=[op])`` (one op switched on alone, as the attribution and the bisect
do) registers from. Wrapping only the first left the op fast whenever it was switched on
alone: on the H100 the planted argmax read +0.14 ms against its +5 ms of waits.
"""

import functools
import importlib.abc
import importlib.util
import os
import sys
import time

OP, _, NS = os.environ.get("PLANTED_FLAG_GEMS_SLOW", "").partition(":")


def slow(fn):
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        end = time.perf_counter_ns() + int(NS)
        while time.perf_counter_ns() < end:
            pass
        return fn(*args, **kwargs)
    return wrapped


def _wrapped(item, done):
    """``item`` with its function wrapped when it is the planted op's (one wrapper per
    function, shared by both tables)."""
    if not (isinstance(item, tuple) and len(item) > 1
            and getattr(item[1], "__name__", "") == OP):
        return item
    fn = item[1]
    if id(fn) not in done:
        done[id(fn)] = slow(fn)
    return (item[0], done[id(fn)], *item[2:])


def plant(mod):
    table = getattr(mod, "_FULL_CONFIG", None)
    if table is None:
        print("planted: flag_gems has no _FULL_CONFIG", file=sys.stderr)
        return
    done = {}
    out = [_wrapped(item, done) for item in table]
    mod._FULL_CONFIG = tuple(out) if isinstance(table, tuple) else out
    n = sum(a is not b for a, b in zip(table, out, strict=True))
    index = getattr(mod, "FULL_CONFIG_BY_FUNC", None)
    if isinstance(index, dict):
        for name, items in index.items():
            index[name] = [_wrapped(item, done) for item in items]
    print(f"planted: {n} entries of {OP} busy-wait {NS} ns"
          + ("" if index is None else " (and its include index)"), file=sys.stderr)


class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "flag_gems":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            plant(module)
        spec.loader.exec_module = exec_module
        return spec


if OP and NS:
    sys.meta_path.insert(0, Finder())
