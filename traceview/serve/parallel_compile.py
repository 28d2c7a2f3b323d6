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
and counted in ``stats``; the compiles never change a result.

**The benchmarks, shorter.** After the compiles, the autotuner benchmarks every config:
Triton's default benchmarker runs each for 25 ms of warm-up and 100 ms of timed
repetitions, on the one GPU, so they cannot overlap. With 348 configs over 13 keys (the
default serve A/B on the H200) that is about 44 s of the cold check, the largest stage
left after the compiles overlapped (the check's FlagGems first calls took 51.9 s, 14.4 s
of them compiling). Where an autotuner uses Triton's default benchmarker (FlagGems 5.0.2's
``LibTuner`` does), this gives it the same ``triton.testing.do_bench`` with
:data:`BENCH_WARMUP_MS` and :data:`BENCH_REP_MS` instead (30 ms a config instead of 125):
for the decode kernels of a few to a hundred microseconds that is still hundreds to
thousands of timed repetitions, and the median of those, what the autotuner compares,
moves far less than the configs differ. It can change the choice between configs whose
medians are within that noise of each other; the chosen config is what FlagGems keeps
in its cache, so the measuring processes run it (and so would FlagGems later on the
machine). ``TRACEVIEW_FULL_AUTOTUNE=1`` keeps Triton's 25/100 ms. Either way the stats
say how many configs were benchmarked and how long that took (``benchmarks``,
``bench_ns``, ``bench_ms``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

#: Warm-up and timed repetitions (ms) per config of the check's shortened benchmarks.
BENCH_WARMUP_MS = 5
BENCH_REP_MS = 25
#: Set (to anything) to keep Triton's default benchmark (25 ms warm-up, 100 ms timed).
FULL_AUTOTUNE_ENV = "TRACEVIEW_FULL_AUTOTUNE"


@contextlib.contextmanager
def autotune_compiles_in_parallel(workers: int | None = None) -> Iterator[dict[str, Any]]:
    """While active, ``triton.runtime.Autotuner.prune_configs`` (called when an
    autotuner, FlagGems' ``LibTuner`` too, meets a key it has no config for) compiles
    the configs it returns on ``workers`` threads before returning them. Yields the
    counts: ``keys``, ``configs``, ``ns`` spent, ``failed`` (left to the autotuner),
    ``why`` (set when it could not be switched on); and the benchmarks that follow:
    ``benchmarks`` (configs benchmarked), ``bench_ns`` (their time), ``bench_ms``
    (warm-up and timed ms per config, or null where the autotuner's own benchmarker ran
    unchanged), see :func:`timed_benchmarks`."""
    stats: dict[str, Any] = {"keys": 0, "configs": 0, "ns": 0, "failed": 0, "why": None,
                             "benchmarks": 0, "bench_ns": 0, "bench_ms": None}
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
    benched: list[Any] = []  # the tuners whose benchmarker this replaced, to put back
    shorten = not os.environ.get(FULL_AUTOTUNE_ENV)

    def prune_then_compile(self: Any, kwargs: dict[str, Any]) -> Any:
        nonlocal busy
        configs = original(self, kwargs)
        if self not in benched and timed_benchmarks(self, stats, shorten=shorten):
            benched.append(self)
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
        for tuner in benched:
            tuner.__dict__.pop("do_bench", None)
        pool.shutdown(wait=True)


def timed_benchmarks(tuner: Any, stats: dict[str, Any], *, shorten: bool) -> bool:
    """Give ``tuner`` a benchmarker that counts and times its benchmarks into ``stats``
    and, where ``shorten`` and the tuner uses Triton's default benchmarker, runs
    ``triton.testing.do_bench`` for :data:`BENCH_WARMUP_MS` / :data:`BENCH_REP_MS`.
    Only where ``do_bench`` is Triton's cached property (an instance value then wins
    over it, and popping it puts the tuner back); False where it is not (left alone)."""
    from functools import cached_property

    from triton.runtime.autotuner import Autotuner

    if not isinstance(Autotuner.__dict__.get("do_bench"), cached_property) or \
            not hasattr(tuner, "_do_bench"):
        return False
    if shorten and tuner._do_bench is None:
        import triton.testing

        def bench(kernel_call: Any, quantiles: Any) -> Any:
            return triton.testing.do_bench(kernel_call, warmup=BENCH_WARMUP_MS,
                                           rep=BENCH_REP_MS, quantiles=quantiles)

        stats["bench_ms"] = [BENCH_WARMUP_MS, BENCH_REP_MS]
    else:
        bench = tuner.__dict__.get("do_bench") or tuner._do_bench or _default_benchmarker()

    def timed(kernel_call: Any, quantiles: Any) -> Any:
        t0 = time.perf_counter_ns()
        try:
            return bench(kernel_call, quantiles=quantiles)
        finally:
            stats["benchmarks"] += 1
            stats["bench_ns"] += time.perf_counter_ns() - t0

    tuner.__dict__["do_bench"] = timed
    return True


def _default_benchmarker() -> Any:
    """What Triton's ``Autotuner.do_bench`` gives when no benchmarker was passed."""
    from triton.runtime import driver

    return driver.active.get_benchmarker()


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
