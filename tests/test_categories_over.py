"""``steps._categories_over``: a thread's categories inside many intervals at once, made
a bounded block of segment pieces at a time; checked against a loop over the timeline's
segments, one interval at a time, written here."""

from __future__ import annotations

import numpy as np
import pytest

import traceview.analyses.steps as steps
from conftest import FIXTURES
from traceview.cli._common import analysis_options
from traceview.io.sources import Source
from traceview.report.explanation import analyze_trace
from traceview.report.pipeline import load


@pytest.fixture(scope="module")
def timelines():
    with Source.open(FIXTURES / "train_llama_eager.json.gz") as src:
        a = analyze_trace(load(src), analysis_options(None, None, None, None))
    return [tl for tl in a.timelines.values() if tl.seg_start.size > 50]


def by_loop(tl, iv) -> dict[str, int]:
    """Each interval, each segment: the overlap, in first-seen order."""
    out: dict[str, int] = {}
    st, en = tl.seg_start.tolist(), tl.seg_end.tolist()
    cats = tl.seg_cat.tolist()
    for a, b in zip(iv[0], iv[1], strict=True):
        seen: dict[int, int] = {}
        for s0, s1, c in zip(st, en, cats, strict=True):
            ov = min(s1, b) - max(s0, a)
            if ov > 0:
                seen[c] = seen.get(c, 0) + ov
        for c in sorted(seen):
            name = tl.categories[c]
            out[name] = out.get(name, 0) + seen[c]
    return out


@pytest.mark.parametrize("block", [1, 7, 1 << 16])
def test_categories_over_many_intervals_is_the_loop(timelines, block, monkeypatch):
    monkeypatch.setattr(steps, "PIECE_BLOCK", block)
    rng = np.random.default_rng(7)
    assert timelines
    for tl in timelines:
        lo, hi = int(tl.seg_start[0]), int(tl.seg_end[-1])
        cuts = np.sort(rng.integers(lo - 1000, hi + 1000, 40))
        iv = (cuts[0::2].tolist(), cuts[1::2].tolist())  # disjoint, some empty of segments
        got = steps._categories_over(tl, (np.asarray(iv[0]), np.asarray(iv[1])))
        want = by_loop(tl, iv)
        assert got == want
        assert list(got) == list(want)  # the order the report keeps
