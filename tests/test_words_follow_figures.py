"""The words follow from the figures they cite, on every fixture: the verdict's words
("host-bound", "device-bound", "hidden behind device execution", "runs on after") are
recomputed here from the JSON figures the sentence cites, and the text the user reads
first says nothing those figures contradict (rows shown as parts are parts, every stream
with work is named, steps are called steps, diff leads with its verdict)."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

import traceview
from conftest import FIXTURE_NAMES, FIXTURES, ROOT
from traceview.cli.app import app
from traceview.render.registry import RenderOptions, renderer
from traceview.units import fmt_ns, fmt_pct

HOST_BOUND_IDLE_SHARE = 0.5  # docs/findings.md
HIDDEN_IDLE_SHARE = 0.1
PATH_HOST_SHARE = 0.5


def flat(text: str) -> str:
    return " ".join(text.split())


def verdict(r):
    return next((f for f in r.findings
                 if f.id in ("host-bound", "sync-stalled", "device-bound")), None)


# views that give other shapes of the same traces: op calls inside synchronized ranges
# (the kernel outlasts the op: device work runs on after the call), a training step seen
# from its autograd thread and through a one-step window
VIEWS = [("torch_mul_4096x4096_f16.json.gz", {"calls": "aten::mul"}),
         ("two_streams_8192x8192_f16.json.gz", {"calls": "aten::mul"}),
         ("train_llama_eager.json.gz", {"thread": "pt_autograd_0"}),
         ("train_llama_side_stream.json.gz", {"window": "^ProfilerStep#3$"}),
         ("generate_llama_16_tokens.json.gz", {"calls": "aten::_scaled_dot_product"})]


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_the_verdict_follows_from_the_figures_it_cites(fixture_reports, name):
    check_verdict(fixture_reports[name])


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_the_text_says_nothing_its_figures_contradict(fixture_reports, name):
    check_text(fixture_reports[name])


@pytest.mark.parametrize(("name", "opts"), VIEWS)
def test_other_views_of_the_fixtures_too(name, opts):
    r = traceview.analyze(FIXTURES / name, traceview.Options(**opts))
    check_verdict(r)
    check_text(r)


def test_a_kernel_longer_than_its_op_is_said_to_run_on_after_it():
    """Op calls (``--calls aten::mul``) inside synchronized ranges: the op returns before
    its 24 us kernel starts; the headline and the legend say so, and the headline calls
    the op's work device-bound (its host time is shorter than the kernel it launched)."""
    r = traceview.analyze(FIXTURES / "torch_mul_4096x4096_f16.json.gz",
                          traceview.Options(calls="aten::mul"))
    v = verdict(r)
    assert v.id == "device-bound" and "the device, not the host, bounds" in v.message
    assert r.calls.stats["kernel_ns"].p50 > r.calls.stats["api_ns"].p50
    text = renderer("text").render(r, RenderOptions(width=200))
    assert "after it (a cell's height: its busy share)" in text


def typical_by_hand(r):
    """The typical call counted here from the per-call rows: the warm (not cold) calls'
    kind holding the most wall time, and its call nearest that kind's nearest-rank p50."""
    warm = [c for c in r.calls.per_call if not c.cold] or list(r.calls.per_call)
    if not warm:
        return None
    time: dict[str, list[int]] = {}
    for c in warm:
        t = time.setdefault(c.kind, [0, 0, -c.index])
        t[0] += c.metrics["api_ns"]
        t[1] += 1
    kind = max(time, key=lambda k: tuple(time[k]))
    mine = sorted(c.metrics["api_ns"] for c in warm if c.kind == kind)
    p50 = mine[(len(mine) + 1) // 2 - 1]
    return min((c for c in warm if c.kind == kind),
               key=lambda c: (abs(c.metrics["api_ns"] - p50), c.index))


def check_verdict(r) -> None:
    v = verdict(r)
    if v is None:
        return
    calls = r.calls.count > 0  # over warm calls, or all where none is warm
    call = typical_by_hand(r) if calls else None
    if call is not None:
        # the sentence's figures are one call's: the one the waterfall draws
        assert r.typical_call is not None and r.typical_call.index == call.index
        mc = call.metrics
    u = r.unprofiled
    measured = calls and u is not None and (u.method or "").startswith("measured")
    if measured:
        # a measured split: the call judged is the unprofiled one, its idle share the
        # unprofiled call less the device work, the profiled call beside it
        whole = u.call_ns
        idle = max(0, whole - (mc["kernel_ns"] or 0))
        kind = "step" if r.steps is not None else "call"
        scope = f"a typical {kind} ({fmt_ns(whole)}; profiled {fmt_ns(mc['api_ns'])})"
        assert "without the profiler the device is" in v.message, v.message
    elif calls:
        whole, idle = mc["api_ns"], mc["host_overhead_ns"]
        kind = "step" if r.steps is not None else "call"
        scope = f"a typical {kind} ({fmt_ns(whole)})"
        row = next((s for s in r.steps.steps if s.index == call.index), None) \
            if r.steps is not None else None
        kernel = mc["kernel_ns"]
        if row is not None and row.range_end_ns is not None \
                and row.end_ns > row.range_end_ns and (kernel is None or kernel <= row.wall_ns):
            # a step whose device work runs on past its range: judged over its extent
            whole, idle = row.wall_ns, row.device_idle_ns
            scope = (f"a typical step ({fmt_ns(whole)}: its range {fmt_ns(mc['api_ns'])} "
                     "and the device work it launched running on after it)"
                     if fmt_ns(whole) != fmt_ns(mc["api_ns"]) else
                     f"a typical step ({fmt_ns(whole)})")
        if kernel is not None and kernel > whole and idle / whole >= HOST_BOUND_IDLE_SHARE:
            # the device idles most of the call, whose device work is longer than it: it
            # runs on after the call returns, and the device, not the host, bounds it
            t = r.typical_call
            assert v.id == "device-bound", v.message
            assert v.message.startswith(
                f"device-bound: a typical {kind} returns after {fmt_ns(whole)} of host time "
                f"while the device work it launched ("), v.message
            assert f"{fmt_ns(kernel)}" in v.message
            assert (f"runs on until {fmt_ns(t.axis_end_ns - t.end_ns)} after it: the device, "
                    f"not the host, bounds the work the {kind} starts") in v.message
            assert "idle" not in v.message and "host-bound" not in v.message
            return
    else:
        whole, idle = r.window.dur_ns, r.device.idle_ns
        kind, scope = "window", f"the window ({fmt_ns(whole)})"
    share = idle / whole
    msg = v.message
    if v.id == "sync-stalled":
        # the host blocked in a sync with the device idle: no host work named as the wait
        assert share >= HOST_BOUND_IDLE_SHARE and "host time goes to sync" not in msg, msg
        # the stream-wait-event call named where the evidence has one, else the causes
        e = v.evidence
        if "stream_wait_call" in e:
            lead = e["stream_wait_lead_ns"]
            assert e["stream_wait_sync_start_ns"] - e["stream_wait_start_ns"] == lead > 0
            assert (f"{e['stream_wait_call']} on {e['stream_wait_thread']}, issued "
                    f"{fmt_ns(lead)} before the ") in flat(msg), msg
            assert "a stream held by an event wait" not in msg, msg
        else:
            assert "(a stream held by an event wait, or work outside the trace)" in flat(msg)
        return
    # a step whose critical path is mostly host-thread time (syncs and waits hand the
    # path on) is host-bound whatever the device's busy share: the sentence says so
    step = next((s for s in r.steps.steps if s.index == call.index), None) \
        if r.steps is not None and call is not None and not measured else None
    on_host = 0 if step is None else sum(
        p.ns for p in step.critical_path if p.kind == "host" and p.what not in ("sync", "wait"))
    if step is not None and share < HOST_BOUND_IDLE_SHARE \
            and on_host > PATH_HOST_SHARE * step.wall_ns:
        untraced = sum(p.ns for p in step.critical_path
                       if p.kind == "host" and p.what == "untraced")
        assert v.id == "host-bound", msg
        assert msg.startswith(f"host-bound: {fmt_pct(on_host / step.wall_ns)} of the step's "
                              f"critical path ({fmt_ns(step.wall_ns)}) is host-thread time"), msg
        assert (f"{fmt_ns(untraced)} of it untraced" in msg) == (untraced > 0), msg
        assert f"the device is busy {fmt_pct(1 - share)} of" in msg, msg
        assert "hidden behind device execution" not in msg and "device-bound" not in msg
        return
    assert v.id == ("host-bound" if share >= HOST_BOUND_IDLE_SHARE else "device-bound"), msg
    assert scope in msg, (msg, scope)
    if v.id == "host-bound":
        assert f"idle {fmt_pct(share)} of" in msg
        work = mc["kernel_ns"] if calls else r.device.busy_ns
        assert fmt_ns(work) in msg
        # device work longer than the call is never part of a host-bound verdict
        assert "runs on" not in msg and (kind == "window" or (work or 0) <= whole), msg
        cats = call.categories if calls else None
        named = re.findall(r"([a-z_]+) (\d+(?:\.\d+)? (?:ns|us|ms|s))",
                           msg.split("host time goes to ")[1].split(" (")[0])
        if cats is not None:
            want = sorted(((c, ns) for c, ns in cats.items() if c != "wait"),
                          key=lambda kv: (-kv[1], kv[0]))
            want = [(c, fmt_ns(ns)) for c, ns in want if ns > 0][:3]
            if measured:
                # the unprofiled categories are named, the profiled ones beside them
                unprof = sorted(((c, ns) for c, ns in u.categories.items()
                                 if ns > 0 and c != "wait"), key=lambda kv: (-kv[1], kv[0]))
                assert named == [(c, fmt_ns(ns)) for c, ns in unprof[:3]], msg
                profiled = re.findall(r"([a-z_]+) (\d+(?:\.\d+)? (?:ns|us|ms|s))",
                                      msg.split("(profiled: ")[1].split(")")[0])
                assert profiled == want, (msg, want)
            else:
                assert named == want, (msg, want)
        working = [t for t in r.threads if t.role != "helper" and t.work_ns > 0]
        # one thread's time named where others work too says so
        assert ("also working:" in msg) == (len(working) > 1), msg
    else:
        assert f"busy {fmt_pct(1 - share)} of" in msg
        if any(f.id == "no-host-events" for f in r.findings):
            # no host thread recorded: the device's idle time, never a wait for the host
            assert (f"it is idle {fmt_ns(idle)} of it, and no host event was recorded"
                    in msg), msg
            assert "waits for the host" not in msg and "hidden behind" not in msg, msg
            return
        hidden = "hidden behind device execution" in msg
        assert hidden == (share <= HIDDEN_IDLE_SHARE), msg
        if not hidden:
            assert f"waits for the host {fmt_ns(idle)}" in msg


def check_text(r) -> None:
    text = renderer("text").render(r, RenderOptions(width=200))
    md = renderer("md").render(r, RenderOptions())
    v = verdict(r)
    if v is not None:  # the headline is the verdict, word for word
        assert flat(v.message) in flat(text)
    # rows indented under a parent are parts of it; per-category medians are labelled
    # as their own medians and never indented as parts of the host overhead
    assert not re.search(r"│\s+host: ", text)
    for cat in r.calls.categories:
        assert f"host: {cat} (own p50)" in text
    st = r.calls.stats
    for part in ("kernel_only_ns", "copy_ns"):
        if st.get(part) is not None and st[part].n and st["kernel_ns"].n:
            assert st[part].p50 <= st["kernel_ns"].p50
    # every stream with work is named
    if len(r.device.per_stream) > 1:
        for s in r.device.per_stream:
            assert f"device {s.device} stream {s.stream}" in text
            assert f"device {s.device} stream {s.stream}" in md
    # steps are worded as steps; no one op stands for them
    if r.steps is not None and r.calls.count:
        assert "Per step:" in text and "Per call:" not in text
        assert "traceview measures one op" not in md
        assert r.op is None and r.bytes_moved is None
    # a step runs on every working thread: each is a row of the waterfall and the figure
    t = r.typical_call
    working = [th for th in r.threads if th.role != "helper" and th.work_ns > 0]
    if r.steps is not None and t is not None and len(working) > 1:
        others = {th.label for th in working if not th.attributed}
        assert {ln.label for ln in t.threads} == others
        svg = renderer("svg").render(r, RenderOptions())
        for label in others:
            assert f"= {label}" in flat(text) and f"<title>{label}</title>" in svg
            assert f"section {label}" in md
    # the waterfall's device row draws work after the call: the legend counts it
    if t is not None:
        after = sum(max(0, min(e, t.axis_end_ns) - max(s, t.end_ns)) for s, e in t.device_busy)
        assert (f"{fmt_ns(after)} after it" in text) == (after > 0)


def test_diff_leads_with_its_verdict():
    """The verdict comes before any profiled difference ('+67.4 us ... diff')."""
    args = ["diff", str(FIXTURES / "torch_mul_1x4096_f32.json.gz"),
            str(FIXTURES / "triton_mul_1x4096_f32.json.gz")]
    for fmt in ("text", "md"):
        res = CliRunner().invoke(app, [*args, "--format", fmt], env={"COLUMNS": "200"})
        assert res.exit_code == 0, res.output
        out = res.output
        first_figure = min(out.index(m.group(0)) for m in re.finditer(r"[+-]\d[\d.]* (?:ns|us|ms)",
                                                                     out))
        where = out.lower().index("too few processes to tell")
        assert where < first_figure
        assert out.lower().index("verdict") < out.index("profiled calls" if fmt == "text"
                                                        else "Profiled calls")


def test_readme_counts_the_helpers_version_lists():
    from traceview.native import LIBRARIES

    words = {"one": 1, "two": 2, "three": 3, "four": 4}
    m = re.search(r"(\w+) optional C helpers", (ROOT / "README.md").read_text())
    assert m and words[m.group(1).lower()] == len(LIBRARIES)
    res = CliRunner().invoke(app, ["--version"])
    assert all(f"{name} " in res.output for name in LIBRARIES)
