from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from tracebuilder import TraceBuilder  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
FIXTURE_NAMES = tuple(sorted(p.name for p in FIXTURES.glob("*.json.gz")))


class FixtureReports(Mapping):
    """fixture name -> its ``Report``, analysed on first use and kept for the session:
    each fixture is decoded and analysed once per test process, however many tests read
    it (Reports are frozen, so sharing them is safe). Analysed as ``fixtures/<name>``
    from the repository root, the path the golden outputs show."""

    def __init__(self) -> None:
        self._done: dict[str, object] = {}

    def __getitem__(self, name: str):
        if name not in self._done:
            if name not in FIXTURE_NAMES:
                raise KeyError(name)
            import traceview

            cwd = os.getcwd()
            os.chdir(ROOT)
            try:
                self._done[name] = traceview.analyze(Path("fixtures") / name)
            finally:
                os.chdir(cwd)
        return self._done[name]

    def __iter__(self) -> Iterator[str]:
        return iter(FIXTURE_NAMES)

    def __len__(self) -> int:
        return len(FIXTURE_NAMES)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Run in parallel by default where pytest-xdist is installed: the suite is hundreds of
    independent tests and a newcomer's plain ``python -m pytest`` should use every core.
    An explicit ``-n`` (``-n 0`` for one process), ``-p no:xdist``, ``--pdb`` or
    ``TRACEVIEW_TESTS_SERIAL=1`` keeps the choice with the user. This runs before xdist's
    own hook of the same name (a conftest registers after the plugin, so it is called
    first), which turns ``numprocesses`` into workers."""
    if os.environ.get("TRACEVIEW_TESTS_SERIAL") == "1" or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if not config.pluginmanager.hasplugin("xdist") or config.getoption("usepdb", False):
        return
    if getattr(config.option, "numprocesses", None) is None:
        config.option.numprocesses = "auto"


def pytest_configure(config: pytest.Config) -> None:
    """Take Ctrl-C back where the suite was started with it ignored. A shell without job
    control starts a background command (`python -m pytest ... &`, a script's `( ... ) &`)
    with SIGINT ignored, and every process started from it inherits that: the tests that
    send Ctrl-C to a traceview child would then see it run on (traceview keeps a Ctrl-C
    its starter ignored, as a background job should) and fail, for the way the suite was
    started, not for what they test. Runs in the controller and in each xdist worker."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


#: markers whose tests start child processes running torch, or a Ray cluster: seconds to
#: minutes each, so they belong to the slow tier with the tests marked ``slow`` by hand
SLOW_MARKERS = ("slow", "capture", "ray")
SLOW_TIER_HINT = "python -m pytest -m slow"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The two tiers: a plain ``python -m pytest`` (the README's command) runs the fast
    tier, every test but the slow ones; ``-m slow`` runs the slow tier; CI runs both.
    Naming test files or ids, or giving any ``-m``, selects exactly what was asked."""
    slow = [i for i in items if any(i.get_closest_marker(m) for m in SLOW_MARKERS)]
    for item in slow:
        item.add_marker(pytest.mark.slow)
    if config.option.markexpr or config.args_source != pytest.Config.ArgsSource.TESTPATHS:
        return
    if slow:
        fast = [i for i in items if not any(i.get_closest_marker(m) for m in SLOW_MARKERS)]
        config.hook.pytest_deselected(items=slow)
        items[:] = fast
        config.stash[_SLOW_LEFT] = len(slow)


_SLOW_LEFT = pytest.StashKey[int]()


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    if n := config.stash.get(_SLOW_LEFT, 0):
        terminalreporter.write_line(
            f"fast tier: {n} slow tests (child processes, clusters) left for `{SLOW_TIER_HINT}`")


@pytest.fixture(scope="session")
def fixture_reports() -> FixtureReports:
    """The one cache of the fixtures' Reports that every test shares."""
    return FixtureReports()


@pytest.fixture
def tb() -> TraceBuilder:
    return TraceBuilder()


@pytest.fixture
def analyze_builder(tmp_path):
    """Write a builder's trace to disk and run the full pipeline on it."""
    import traceview

    def run(builder: TraceBuilder, **opts):
        path = builder.write(tmp_path / "t.json")
        return traceview.analyze(path, traceview.Options(**opts))

    return run


@pytest.fixture
def analysis_builder(tmp_path):
    """Like analyze_builder, but the frozen analysis (the analyses' own typed results,
    with the trace) rather than the Report: for tests of the analyses themselves."""
    import traceview
    from traceview.report.explanation import analyze_trace

    def run(builder: TraceBuilder, **opts):
        path = builder.write(tmp_path / "t.json")
        return analyze_trace(traceview.load(path), traceview.Options(**opts))

    return run


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory) -> None:
    """Caches a run keeps on disk (serve's passed checks) go to a folder of this session,
    never the user's, and every test session starts without them."""
    os.environ["TRACEVIEW_CACHE_DIR"] = str(tmp_path_factory.mktemp("traceview-cache"))
