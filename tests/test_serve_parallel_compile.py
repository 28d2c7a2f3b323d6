"""serve's check compiles an autotuner's configs at once (traceview.serve.parallel_compile).

No GPU here: the autotuner is Triton's own class with a stand-in kernel whose "compile"
is a sleep submitted to Triton's background-compile mode exactly as ``JITFunction``
submits one. Checked: every config the autotuner would benchmark is compiled once,
with its pre-hook run first and ``warmup`` set (nothing launched); the compiles overlap
(8 sleeps of 0.3 s in well under 8 x 0.3 s); a failing compile is left to the autotuner
and does not raise; the configs returned are the autotuner's own; Triton is as it was
afterwards. The benchmarks after them: a tuner on Triton's default benchmarker gets
``triton.testing.do_bench`` with the shorter warm-up and repetitions, one with its own
benchmarker keeps it; both are counted and timed, and put back afterwards.
"""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("triton")

from triton import Config  # noqa: E402
from triton.runtime import _async_compile  # noqa: E402
from triton.runtime.autotuner import Autotuner  # noqa: E402

from traceview.serve import parallel_compile  # noqa: E402
from traceview.serve.parallel_compile import autotune_compiles_in_parallel  # noqa: E402


class Kernel:
    def __init__(self) -> None:
        self.runs: list[dict] = []
        self.compiled: list[int] = []
        self.lock = threading.Lock()

    def run(self, *args, grid, warmup, **kw):
        assert warmup is True and grid == "g"
        self.runs.append(dict(kw, args=args))
        block = kw["BLOCK"]

        def compile_():
            time.sleep(0.3)
            if block == 13:
                raise RuntimeError("out of resources (stand-in)")
            with self.lock:
                self.compiled.append(block)
            return block

        mode = _async_compile.active_mode.get()
        assert mode is not None
        return mode.submit(("k", block), compile_, lambda k: None, lambda f: None)


def tuner(blocks: list[int], hooks: list) -> Autotuner:
    t = Autotuner.__new__(Autotuner)
    t.configs = [Config({"BLOCK": b}, pre_hook=lambda nargs: hooks.append(dict(nargs)))
                 for b in blocks]
    t.early_config_prune = None
    t.perf_model = None
    t.fn = Kernel()
    t.nargs = {"x": "tensor-x", "n": 7}
    return t


def test_configs_compile_at_once_before_the_benchmark():
    hooks: list = []
    t = tuner([16, 32, 64, 128, 256, 512, 1024, 13], hooks)
    original = Autotuner.prune_configs
    with autotune_compiles_in_parallel(workers=8) as stats:
        t0 = time.perf_counter()
        got = Autotuner.prune_configs(t, {"grid": "g", "warmup": False})
        took = time.perf_counter() - t0
    assert got == t.configs  # the autotuner benchmarks its own configs, as before
    assert sorted(t.fn.compiled) == [16, 32, 64, 128, 256, 512, 1024]  # 13 failed, quietly
    assert [r["args"] for r in t.fn.runs] == [("tensor-x", 7)] * 8
    assert [h["BLOCK"] for h in hooks] == [16, 32, 64, 128, 256, 512, 1024, 13]
    assert all(h["x"] == "tensor-x" for h in hooks)
    assert took < 8 * 0.3 / 2  # overlapped
    assert stats["keys"] == 1 and stats["configs"] == 8 and stats["why"] is None
    assert Autotuner.prune_configs is original


def test_a_single_config_or_an_inactive_tuner_is_left_alone():
    hooks: list = []
    one = tuner([16], hooks)
    with autotune_compiles_in_parallel(workers=2) as stats:
        assert Autotuner.prune_configs(one, {"grid": "g"}) == one.configs
    assert one.fn.runs == [] and stats["keys"] == 0


def test_default_benchmarks_are_shortened_counted_and_put_back(monkeypatch):
    import triton.testing

    asked: list[tuple] = []

    def do_bench(fn, *, warmup, rep, quantiles):
        fn()
        time.sleep(0.01)
        asked.append((warmup, rep, quantiles))
        return [1.0, 0.9, 1.1]

    monkeypatch.setattr(triton.testing, "do_bench", do_bench)
    monkeypatch.delenv(parallel_compile.FULL_AUTOTUNE_ENV, raising=False)
    t = tuner([16, 32], [])
    t._do_bench = None  # Triton's default benchmarker
    called = []
    with autotune_compiles_in_parallel(workers=2) as stats:
        Autotuner.prune_configs(t, {"grid": "g", "warmup": False})
        got = [t.do_bench(lambda: called.append(1), quantiles=(0.5, 0.2, 0.8))
               for _ in range(3)]
    assert got == [[1.0, 0.9, 1.1]] * 3 and len(called) == 3
    assert asked == [(parallel_compile.BENCH_WARMUP_MS, parallel_compile.BENCH_REP_MS,
                      (0.5, 0.2, 0.8))] * 3
    assert stats["benchmarks"] == 3 and stats["bench_ns"] >= 3 * 10_000_000
    assert stats["bench_ms"] == [parallel_compile.BENCH_WARMUP_MS,
                                 parallel_compile.BENCH_REP_MS]
    assert "do_bench" not in t.__dict__  # the tuner is as it was


def test_a_tuners_own_benchmarker_is_kept_and_timed(monkeypatch):
    monkeypatch.delenv(parallel_compile.FULL_AUTOTUNE_ENV, raising=False)
    seen: list = []
    t = tuner([16, 32], [])
    t._do_bench = lambda fn, quantiles: seen.append(quantiles) or [2.0]
    with autotune_compiles_in_parallel(workers=2) as stats:
        Autotuner.prune_configs(t, {"grid": "g", "warmup": False})
        assert t.do_bench(lambda: None, quantiles=(0.5,)) == [2.0]
    assert seen == [(0.5,)] and stats["benchmarks"] == 1 and stats["bench_ms"] is None
