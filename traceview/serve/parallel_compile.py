"""An autotuner's configs compiled at once, on every core, before it benchmarks them.

Why: the first FlagGems check on a machine (empty Triton cache) spent 110 of its 130 s
in the backend's first calls (H200, default model): FlagGems' ``mm`` autotunes over
about 200 configs per new shape, and Triton compiles each config when the benchmark
first launches it, one after the other on one core. Triton can compile in the
background (``triton.runtime._async_compile.AsyncCompileMode``: a kernel met under it is
compiled by an executor, and leaving the mode waits for all of them), so when an
autotuner meets a new key this compiles every config it is about to benchmark on a
thread pool first (the compiler's LLVM stage and ``ptxas`` run outside the GIL), then
lets it benchmark them as before. The kernels are the same (the same compiler, options
and cache), so are the benchmarks and the config chosen; only the compiles overlap.

Only the correctness check uses it (it is the process that meets every config first;
the measuring processes load them from Triton's cache). Anything this cannot do (an
older Triton, a config that fails to compile here) is left to the autotuner's own path
and counted in ``stats``; it never changes a result.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any


@contextlib.contextmanager
def autotune_compiles_in_parallel(workers: int | None = None) -> Iterator[dict[str, Any]]:
    """While active, ``triton.runtime.Autotuner.prune_configs`` (called when an
    autotuner, FlagGems' ``LibTuner`` too, meets a key it has no config for) compiles
    the configs it returns on ``workers`` threads before returning them. Yields the
    counts: ``keys``, ``configs``, ``ns`` spent, ``failed`` (left to the autotuner),
    ``why`` (set when it could not be switched on)."""
    stats: dict[str, Any] = {"keys": 0, "configs": 0, "ns": 0, "failed": 0, "why": None}
    try:
        from triton.runtime import _async_compile
        from triton.runtime.autotuner import Autotuner

        mode = _async_compile.AsyncCompileMode
        active_mode = getattr(_async_compile, "active_mode", None)
    except (ImportError, AttributeError) as exc:
        stats["why"] = f"this Triton has no background compile ({type(exc).__name__})"
        yield stats
        return
    original = Autotuner.prune_configs
    pool = ThreadPoolExecutor(max_workers=workers or max(1, _usable_cpus() - 1),
                              thread_name_prefix="traceview-compile")
    busy = False

    def prune_then_compile(self: Any, kwargs: dict[str, Any]) -> Any:
        nonlocal busy
        configs = original(self, kwargs)
        if busy or len(configs) < 2 or not getattr(self, "nargs", None):
            return configs
        busy = True
        t0 = time.perf_counter_ns()
        try:
            precompile(self, configs, kwargs, mode, pool, stats)
        except Exception as exc:  # noqa: BLE001  (the autotuner compiles them itself)
            stats["failed"] += 1
            stats["why"] = f"{type(exc).__name__}: {exc}"[:200]
        finally:
            # a Triton whose mode raises a failed compile on leaving does so before it
            # clears itself: left set, every later compile of the check would go to it
            if active_mode is not None and active_mode.get() is not None:
                active_mode.set(None)
            busy = False
            stats["keys"] += 1
            stats["ns"] += time.perf_counter_ns() - t0
        return configs

    Autotuner.prune_configs = prune_then_compile
    try:
        yield stats
    finally:
        Autotuner.prune_configs = original
        pool.shutdown(wait=True)


def _usable_cpus() -> int:
    """The CPUs this process may run on (a pinned or containerised run has fewer than
    the machine): each compile is a heavy process of its own."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 2


def precompile(tuner: Any, configs: list[Any], kwargs: dict[str, Any], mode: Any,
               pool: ThreadPoolExecutor, stats: dict[str, Any]) -> None:
    """Submit every config's compile as ``tuner._bench`` would launch it (its pre-hook
    first: a TMA config sets its descriptors' block shapes, which are part of the
    kernel's signature), without launching; leaving the mode waits for them all."""
    args = list(tuner.nargs.values())
    meta = {k: v for k, v in kwargs.items() if k != "warmup"}
    try:
        background = mode(pool, ignore_errors=True)
    except TypeError:  # a Triton whose mode always raises a failed compile on leaving
        background = mode(pool)
    with background as active:
        for config in configs:
            current = dict(meta, **config.all_kwargs())
            try:
                if config.pre_hook:
                    config.pre_hook({**tuner.nargs, **current})
                tuner.fn.run(*args, warmup=True, **current)
            except Exception:  # noqa: BLE001  (left to the autotuner's own launch)
                stats["failed"] += 1
        stats["configs"] += len(getattr(active, "raw_futures", ()))
