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
