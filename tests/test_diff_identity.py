"""diff says what it can tell: one call against one has no interval ("cannot tell"), a
function in both traces is matched by its identity (module and name, whatever its line
or where the checkout lies), and device work with no launch record is counted and said.

Every trace here is written by ``tracebuilder`` with known durations; the expected
figures are those durations.
"""

from __future__ import annotations

from pathlib import Path

import traceview
from tracebuilder import TraceBuilder
from traceview.multi.compare import diff_reports, profiled_line
from traceview.render.registry import RenderOptions, renderer


def one_call(tmp_path: Path, name: str, dur: int) -> Path:
    tb = TraceBuilder()
    tb.annotation("call_0", 0, dur)
    tb.launched_kernel("k", 1_000, 500, 2_000, 800)
    return tb.write(tmp_path / name)


def test_one_call_against_one_has_no_interval(tmp_path):
    opts = traceview.Options(calls="^call_0$")  # one range: the call, chosen by --calls
    before = traceview.analyze(one_call(tmp_path, "a.json", 9_000), opts)
    after = traceview.analyze(one_call(tmp_path, "b.json", 4_590), opts)
    assert before.calls.count == after.calls.count == 1
    d = diff_reports(before, after)
    api = next(c for c in d.comparisons if c.metric == "calls.api_ns.p50")
    assert (api.before, api.after, api.delta) == (9_000, 4_590, 4_590 - 9_000)
    assert api.ci_low is None and api.ci_high is None and not api.significant
    assert "cannot tell" in profiled_line(d) and "1 call(s) against 1" in profiled_line(d)
    text = renderer("text", "diff").render(d, RenderOptions(width=120))
    assert "[-4.41 us, -4.41 us]" not in text and "cannot tell" in text
