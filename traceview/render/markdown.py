"""Markdown for GitHub issues and PRs: the reproducer template, filled in.

Reviewers read it on GitHub without installing anything, so it uses only GitHub
Flavored Markdown: pipe tables, a list of findings, ``<details>`` for long parts, and a
Mermaid gantt chart of one typical call (GitHub renders Mermaid blocks natively). Where
the trace does not tell a template field, the field says "not recorded" and a finding
says what would add it: nothing is invented.

The whole document stays under ``MAX_CHARS`` (GitHub's comment limit is 65,536):
tables are cut to a fixed number of rows and say how many were left out.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from traceview.metadata import NO_CAPTURE, CaptureMeta
from traceview.printable import cut, escape_controls
from traceview.render.labels import shown_metrics
from traceview.render.labels import unit as unit_word
from traceview.render.names import KERNEL_NAMES_NOTE, kernel_labels
from traceview.report.claims import Claim, Figure, pointer, rel
from traceview.report.sentences import step_word
from traceview.units import fmt_ns, fmt_share, plural
from traceview.version import __version__

if TYPE_CHECKING:
    from traceview.report.model import Report

MAX_CHARS = 60_000
MAX_FUNCTION_ROWS = 25
MAX_KERNEL_ROWS = 15
MAX_CALL_ROWS = 40
NOT_RECORDED = "not recorded"
GANTT_MAX_BARS = 40


def esc(text: Any, limit: int | None = None) -> str:
    """Make text safe inside GFM (table cells included); cut to ``limit`` characters.
    Control characters are escaped and long names cut (``printable.py``)."""
    s = escape_controls(cut(str(text))).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
    s = s.replace("<", "&lt;").replace(">", "&gt;")
    if limit is not None and len(s) > limit:
        s = s[: limit - 3] + "..."
    return s


def code(text: Any, limit: int = 120) -> str:
    """A code span: no HTML escaping (GitHub shows entities literally there), pipes escaped."""
    s = escape_controls(cut(str(text))).replace("\n", " ").replace("`", "'")
    if len(s) > limit:
        s = s[: limit - 3] + "..."
    return "`" + s.replace("|", "\\|") + "`"


# a word that names something: it holds an underscore (``__call__``, ``cache_key``) or is
# a path (``torch/cuda/__init__.py``); GitHub reads ``__init__`` as bold "init"
_NAMES = re.compile(r"[A-Za-z0-9]")
_TRAIL = ",;:.!?"


def _is_name(word: str) -> bool:
    return bool(_NAMES.search(word)) and "`" not in word and (
        "_" in word or ("/" in word and re.search(r"[A-Za-z]{2}/|/[A-Za-z]{2}", word) is not None))


def prose(text: Any) -> str:
    """A sentence for GFM (``esc``'s escaping) with every name in it in a code span, so
    that ``__call__`` and ``__init__.py`` read as written, not as bold "call" and "init".
    Punctuation around a name (``(file.json):``) stays outside its span."""
    out = []
    for word in re.split(r"(\s+)", escape_controls(cut(str(text)))):
        core = word.rstrip(_TRAIL)
        if core.startswith("(") and core.endswith(")") and core.count("(") == 1 \
                and core.count(")") == 1:
            core = core[:-1]
        elif core.endswith(")") and core.count("(") < core.count(")"):
            core = core[:-1]
        lead = len(core) - len(core.lstrip("(")) if core.count("(") > core.count(")") else 0
        trail = word[len(core):]
        core = core[lead:]
        if core and _is_name(core):
            out.append(esc(word[:lead]) + code(core, limit=len(core)) + esc(trail))
        else:
            out.append(esc(word))
    return "".join(out)


def table(header: list[str], rows: list[list[str]], align: str | None = None) -> str:
    align = align or "l" + "r" * (len(header) - 1)
    marks = {"l": "---", "r": "---:", "c": ":---:"}
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(marks[a] for a in align) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def reproducer(r: Report) -> list[tuple[str, str]]:
    """The reproducer template (docs/capture.md), in its order, each field from the trace or 'not recorded'."""
    cap = r.capture_meta or NO_CAPTURE
    op_args = None if r.op is None else {"name": r.op.name, "launches": r.op.launches,
                                         **r.op.args}
    device_result, api = _results(r, cap)
    return [
        ("Operation / model", _operation(r, cap, op_args)),
        ("Shape, dtype, strides and scalar arguments", _shape(cap, op_args) if r.steps is None
         else f"a {step_word(r.steps)} runs many ops: its phases and kernels are below"),
        ("Device, driver, framework and compiler revisions", _device_line(cap, r.trace.metadata)),
        ("Correctness reference and tolerance", _correctness(r)),
        ("Cold or warmed? Eager or graph replay?", _warm_mode(r)),
        ("Timer, synchronization points and repetitions", _timer(r)),
        ("Device-kernel result", device_result),
        ("Full-API result", api),
        ("Serving result, if measured", "not measured"),
        ("Public reproducer / trace", _repro(r, cap)),
    ]


def _operation(r: Report, cap: CaptureMeta, op_args: dict[str, Any] | None) -> str:
    """What ran: capture's op and impl, else the training step, else the op around the
    launches; then the top kernels."""
    # labelled over every kernel, as the kernels table is: a short name several kernels
    # fold to would not say which of them this count is
    labels = kernel_labels([k.name for k in r.device.kernels])
    kernels = ", ".join(f"{code(labels[k.name])} x{k.count}" for k in r.device.kernels[:3])
    if cap.op:
        op = f"{code(cap.op)} via {code(cap.impl)}"
    elif r.steps is not None:
        from traceview.report.sentences import operation_step_words

        op = esc(operation_step_words(r) or NOT_RECORDED)
    elif op_args:
        op = f"{code(op_args['name'])} (the op around {op_args['launches']} launches)"
    else:
        op = NOT_RECORDED
    if kernels:
        op += f"; kernels: {kernels}"

    return op


def _shape(cap: CaptureMeta, op_args: dict[str, Any] | None) -> str:
    if cap.shape:
        shape = (f"shape {code(cap.shape)}, dtype {code(cap.dtype)}, strides "
                 f"{code(cap.strides)}, layout {code(cap.layout)}, scalars "
                 f"{code(cap.scalars)}")
    elif op_args and "Input Dims" in op_args:
        shape = (f"inputs {code(op_args.get('Input Dims'))}, types {code(op_args.get('Input type'))}, "
                 f"strides {code(op_args.get('Input Strides', NOT_RECORDED))}, scalars "
                 f"{code(op_args.get('Concrete Inputs', NOT_RECORDED))} (of {code(op_args['name'])})")
    else:
        shape = NOT_RECORDED

    return shape


def _device_line(cap: CaptureMeta, meta: dict[str, Any]) -> str:
    """Device name, driver, CUDA runtime and the versions capture recorded."""
    dev_parts = []
    props = meta.get("deviceProperties")
    capdev = cap.device or {}
    name = capdev.get("name") or (props[0].get("name") if isinstance(props, list) and props
                                  and isinstance(props[0], dict) else None)
    if name:
        dev_parts.append(esc(name))
    if capdev.get("driver"):
        dev_parts.append(f"driver {esc(capdev['driver'])}")
    elif "cuda_driver_version" in meta:
        dev_parts.append(f"CUDA driver API {esc(meta['cuda_driver_version'])}")
    elif "hip_driver_version" in meta:  # Kineto on ROCm
        dev_parts.append(f"HIP driver {esc(meta['hip_driver_version'])}")
    if "cuda_runtime_version" in meta:
        dev_parts.append(f"CUDA runtime {esc(meta['cuda_runtime_version'])}")
    elif "hip_runtime_version" in meta:
        dev_parts.append(f"HIP runtime {esc(meta['hip_runtime_version'])}")
    versions = cap.versions or {}
    dev_parts += [f"{k} {esc(v)}" for k, v in versions.items() if v]
    device = ", ".join(dev_parts) if dev_parts else NOT_RECORDED
    if not versions:
        device += "; framework/compiler versions " + NOT_RECORDED

    return device


def _correctness(r: Report) -> str:
    """The correctness field: the report's ``correctness`` claim, or "not recorded"."""
    from traceview.report.sentences import correctness_words

    said = correctness_words(r)
    return NOT_RECORDED if said is None else esc(said)


def _warm_mode(r: Report) -> str:
    """The cold-or-warm field: the report's ``warm-mode`` claim."""
    from traceview.report.sentences import warm_mode_words

    return esc(warm_mode_words(r))


def _timer(r: Report) -> str:
    """The timer field: the report's ``timer`` claim."""
    from traceview.report.sentences import timer_words

    return esc(timer_words(r))


def _results(r: Report, cap: CaptureMeta) -> tuple[str, str]:
    """The device-kernel result and the full-API result (with capture's unprofiled
    baseline when it measured one): the report's claims."""
    from traceview.report.sentences import baseline_words, result_words

    said = result_words(r)
    device_result = esc(said.get("device-result", NOT_RECORDED)) + esc(bytes_sentence(r))
    api = esc(said.get("api-result", NOT_RECORDED))
    base = baseline_words(r)
    if base is not None:
        api += f"; {esc(base)}"
    return device_result, api


def _repro(r: Report, cap: CaptureMeta) -> str:
    repro = code(cap.command) if cap.command else NOT_RECORDED
    repro += f"; trace {code(r.trace.path.rsplit('/', 1)[-1])}"
    return repro


def _matrix(r: Report) -> str:
    w = r.window.dur_ns
    rows = [[code(m.host), fmt_ns(m.busy_ns), fmt_ns(m.idle_ns), fmt_ns(m.total_ns),
             fmt_share(m.total_ns, w)] for m in r.matrix()]
    rows.append(["**total**", f"**{fmt_ns(r.device.busy_ns)}**", f"**{fmt_ns(r.device.idle_ns)}**",
                 f"**{fmt_ns(w)}**", "**100%**"])
    return table(["host category", "device busy", "device idle", "total", "share"], rows)


def _devices(r: Report) -> str | None:
    """Per device (and per stream where streams overlap), copies apart from kernels."""
    d = r.device
    w = r.window.dur_ns
    streams = d.streams_overlap or len(d.per_stream) > 1  # every stream with work is named
    if len(d.per_device) <= 1 and not streams and not (d.memcpy_count or d.memset_count):
        return None
    rows = [[f"device {x.device}", fmt_ns(x.busy_ns), fmt_share(x.busy_ns, w), str(x.kernel_count),
             fmt_ns(x.kernel_sum_ns), str(x.copy_count or 0), fmt_ns(x.copy_sum_ns or 0)]
            for x in d.per_device]
    if streams:
        rows += [[f"device {s.device} stream {s.stream}", fmt_ns(s.busy_ns),
                  fmt_share(s.busy_ns, w), "", "", "", ""] for s in d.per_stream]
    return table(["device", "busy", "share", "kernels", "kernel sum", "copies/sets",
                  "copy sum"], rows)


def bytes_sentence(r: Report) -> str:
    """``; moves 393 kB per call (...)``: the report's ``bytes-moved`` claim."""
    from traceview.report.sentences import bytes_words

    moved = bytes_words(r)
    return "" if moved is None else "; " + moved


def _calls(r: Report) -> str:
    c = r.calls
    rows = []
    for m, label in shown_metrics(copies=c.has_copies, device=r.device.busy_ns > 0).items():
        s = c.stats.get(m)
        if s is not None and s.n:
            rows.append([label.strip(), fmt_ns(s.p50), fmt_ns(s.p90), fmt_ns(s.min),
                         fmt_ns(s.max)])
    for cat, s in sorted(c.categories.items(), key=lambda kv: -(kv[1].p50 or 0)):
        rows.append([f"host: {code(cat)} (own p50)", fmt_ns(s.p50), fmt_ns(s.p90), fmt_ns(s.min), fmt_ns(s.max)])
    return table(["per call", "p50", "p90", "min", "max"], rows)


def gantt(r: Report) -> str | None:
    """A Mermaid gantt chart of the typical call: host categories and device work.

    Mermaid's finest date unit is the millisecond, so one chart millisecond stands for a
    microsecond of the call (a millisecond for calls over 60 ms), and the axis format
    is picked so that its labels read in us, ms or s without wrapping. ``displayMode: compact`` keeps each row's bars on one line
    instead of a line per bar.
    """
    t = r.typical_call
    call = r.typical
    if t is None or call is None:
        return None
    from traceview.render.call_picture import device_bars, host_bars

    lo, hi = t.start_ns, t.end_ns
    host, device = host_bars(t, GANTT_MAX_BARS), device_bars(t, GANTT_MAX_BARS)
    # (ns per chart millisecond, axis format, unit the axis reads in): ticks must not wrap
    # (``%L`` is the millisecond part, 0-999; ``%S`` the seconds, 0-59)
    span = t.end_ns - lo
    unit, axis, unit_name = ((1_000, "%-L", "us") if span < 1_000_000 else
                             (1_000, "%-S.%L", "ms") if span < 60_000_000 else
                             (1_000_000, "%-S.%L", "s"))

    def at(ns: int) -> int:  # ns -> the chart's unit
        return round((ns - lo) / unit)

    lines = ["```mermaid", "---", "displayMode: compact", "---", "gantt",
             f"    title Typical {unit_word(r)} #{call.index} ({fmt_ns(call.metrics['api_ns'])}), "
             f"axis in {unit_name}",
             "    dateFormat x", f"    axisFormat {axis}"]
    # a training step runs on several threads: a section each
    rows = [("host", host)]
    if t.threads and r.host.thread is not None:
        rows = [(r.host.thread.label, host)] + [
            (ln.label, host_bars(t, GANTT_MAX_BARS, ln.host)) for ln in t.threads]
    n = 0
    for label, bars in rows:
        lines.append(f"    section {label.replace(':', ' ')}")
        for bar in bars.bars:
            a, b = at(bar.start_ns), max(at(bar.end_ns), at(bar.start_ns) + 1)
            lines.append(f"    {bar.label} {fmt_ns(bar.ns)} :h{n}, {a}, {b}")
            n += 1
    lines.append("    section device")
    if not device.bars:
        lines.append(f"    idle :d0, 0, {max(at(hi), 1)}")
    for i, bar in enumerate(device.bars):
        a, b = at(bar.start_ns), max(at(bar.end_ns), at(bar.start_ns) + 1)
        pieces = f" in {bar.pieces}" if bar.pieces > 1 else ""
        lines.append(f"    busy {fmt_ns(bar.ns)}{pieces} :active, d{i}, {a}, {b}")
    lines.append("```")
    notes = [n for n in (host.note("host"), device.note("device")) if n]
    if notes:
        lines.append("")
        lines.append("_Chart: " + esc("; ".join(notes)) + "._")
    return "\n".join(lines)


def _findings(r: Report) -> str:
    out = [f"- **{f.severity}** `{f.id}`: {esc(f.message)}" for f in r.findings]
    out += [f"- **{g.severity}** `input:{g.code}` ({g.count}): {esc(g.message)}"
            for g in r.diagnostics]
    return "\n".join(out) if out else "- none"


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


def left_out_claim(total: int, shown: int, total_at: tuple[str, ...] = (),
                   within: Figure | None = None) -> Claim | None:
    """``3 more not shown`` under a table cut to its first ``shown`` rows, as a claim
    over the explain report's JSON: the rows the report lists at ``total_at`` (their
    count: ``claims.check`` reads a list's length), or some of the list ``within`` cites,
    the ``shown`` the table prints and the rest adding up to them. None when the table
    shows them all."""
    if total <= shown:
        return None
    figs = [Figure("total", total, pointer(*total_at) if total_at else None),
            Figure("shown", shown), Figure("rest", total - shown)]
    rels = [rel("sum", "shown", "rest", "total")]
    if within is not None:
        figs.append(within)
        rels.append(rel("le", "total", within.name))
    return Claim("rows-left-out", f"{total - shown} more not shown", tuple(figs), tuple(rels))


def hot_functions(r: Report) -> list[Any]:
    """The host functions the hot functions table lists: those with self time."""
    return [f for f in r.host.functions if f.self_ns > 0]


def functions_left_out(r: Report) -> Claim | None:
    """The hot functions the table leaves out: some of the report's functions."""
    fs = hot_functions(r)
    return left_out_claim(len(fs), min(len(fs), MAX_FUNCTION_ROWS), within=Figure(
        "functions", len(r.host.functions), pointer("host", "functions")))


def kernels_left_out(r: Report) -> Claim | None:
    ks = r.device.kernels
    return left_out_claim(len(ks), min(len(ks), MAX_KERNEL_ROWS), ("device", "kernels"))


def calls_left_out(r: Report) -> Claim | None:
    calls = r.calls.per_call
    return left_out_claim(len(calls), min(len(calls), MAX_CALL_ROWS), ("calls", "per_call"))


def left_out_claims(r: Report) -> list[Claim]:
    """Every count of rows the markdown's tables leave out, as claims over the report."""
    return [c for c in (functions_left_out(r), kernels_left_out(r), calls_left_out(r))
            if c is not None]


def _more(claim: Claim | None) -> str:
    return "" if claim is None else f"\n\n_{claim.text}._"


def render_markdown(r: Report, figure: str | None = None) -> str:
    c = r.calls
    parts = _heading(r)
    from traceview.render.training import headline, markdown_section

    step_line = headline(r)
    if step_line:
        parts.append(f"> {esc(step_line)}")
    parts.append(table(["field", "value"], [[f, v] for f, v in reproducer(r)], "ll"))
    from traceview.render.percall import unprofiled_markdown

    parts.extend(unprofiled_markdown(r, esc, table, code, prose))
    parts.extend(markdown_section(r, esc))
    parts.append("#### Where the time went (host category x device state; cells sum to the "
                 "window; host: the attributed thread)")
    parts.append(_matrix(r))
    from traceview.report.sentences import device_words

    parts.append(esc(device_words(r)))
    devices = _devices(r)
    if devices:
        parts.append("#### Devices (busy is the union over streams; copies apart from kernels)")
        parts.append(devices)
    if c.per_call:
        from traceview.render.percall import unprofiled_short
        from traceview.report.sentences import calls_title_words

        parts.append(f"#### {esc(calls_title_words(r))}{esc(unprofiled_short(r))}")
        parts.append(_calls(r))
    from traceview.render.percall import markdown_sections

    parts.extend(markdown_sections(r, esc, code, table, _details))
    g = gantt(r)
    if g:
        parts.append(g)
    if figure:
        parts.append(f"_Figure of the typical call written to {code(figure)}: GitHub cannot "
                     "show a local file; drag it into the comment box to upload it there._")
    parts.append("#### Findings")
    parts.append(_findings(r))
    from traceview.report.integrity_claims import (
        TITLE_INTEGRITY,
        TITLE_WHAT_IF,
        integrity_lines,
        what_if_lines,
    )

    for title, lines in ((TITLE_INTEGRITY, integrity_lines(r)),
                         (TITLE_WHAT_IF, what_if_lines(r))):
        if lines:
            parts.append(f"#### {title}")
            parts.append("\n".join(f"- {esc(line)}" for line in lines))

    for details in (_hot_functions(r), _kernels(r), _every_call(r)):
        if details:
            parts.append(details)
    parts.append(f"<sub>traceview {__version__} · times are integer-ns interval unions: host and "
                 "device time are never added together</sub>")
    text = "\n\n".join(parts) + "\n"
    if len(text) > MAX_CHARS:  # cannot happen with the row caps above; keep the promise anyway
        text = text[: MAX_CHARS - 40] + "\n\n_(truncated)_\n"
    return text


def _heading(r: Report) -> list[str]:
    """The title, the verdict and the one line about the window, thread and calls."""
    cap = r.capture_meta or NO_CAPTURE
    title = (f"{cap.op} · {cap.impl} · {'x'.join(map(str, cap.shape or []))} "
             f"{cap.dtype}" if cap.op else r.trace.path.rsplit("/", 1)[-1])
    verdict = r.verdict
    c = r.calls
    parts = [f"### traceview: {esc(title)}"]
    if verdict:
        parts.append(f"> **{esc(verdict.message)}**")
    thread = r.host.thread
    from traceview.report.sentences import window_words

    parts.append(f"{esc(window_words(r))}; host "
                 f"{esc(thread.label if thread else 'thread: none')}; "
                 + (f"{esc(c.description)}." if c.description else
                    f"{plural(c.count, 'call')} from {c.source}."))
    return parts


def _hot_functions(r: Report) -> str | None:
    """The hot host functions table, folded (None: no function has self time)."""
    c = r.calls
    fs = hot_functions(r)
    warm = c.tree_warm_calls

    def _pc(f) -> list[str]:
        if f.inclusive_ns_per_call is None:
            return ["-", "-", f"0/{warm}"]
        return [fmt_ns(f.self_ns_per_call), fmt_ns(f.inclusive_ns_per_call),
                f"{f.calls_with}/{warm}" + (" (few)" if f.few_calls else "")]

    if fs:
        rows = [[code(f.name), code(f.category), fmt_ns(f.self_ns), *_pc(f),
                 fmt_ns(f.total_ns), str(f.count)] for f in fs[:MAX_FUNCTION_ROWS]]
        return _details("Hot host functions (self time; per call: p50 over the warm calls "
                        "that contain it)",
                        table(["function", "category", "self", "self/call", "incl/call",
                               "in calls", "inclusive", "count"], rows)
                        + _more(functions_left_out(r)))
    return None


def _kernels(r: Report) -> str | None:
    """The kernels table, folded (None: no kernel)."""
    ks = r.device.kernels
    if ks:
        labels = kernel_labels([k.name for k in ks])
        rows = [[code(labels[k.name]), str(k.count), fmt_ns(k.sum_ns), fmt_ns(k.stats.p50),
                 fmt_ns(k.stats.min), fmt_ns(k.stats.max)] for k in ks[:MAX_KERNEL_ROWS]]
        return _details(f"Kernels ({KERNEL_NAMES_NOTE})",
                        table(["kernel", "count", "sum", "p50", "min", "max"], rows)
                        + _more(kernels_left_out(r)))
    return None


def _every_call(r: Report) -> str | None:
    """Every call's row, folded (None: no calls)."""
    c = r.calls
    calls = c.per_call
    if calls:
        split = c.has_copies
        # without device work in the window the device columns would say nothing: no
        # work, no launch, and no overhead next to a device that never ran
        device = r.device.busy_ns > 0
        rows = [[str(x.index), code(x.name),
                 "cold" if x.cold else "incomplete" if x.launches_without_work
                 else ("outlier" if x.outlier else "warm"),
                 fmt_ns(x.metrics["api_ns"]),
                 *((fmt_ns(x.metrics["kernel_ns"]),) if device else ()),
                 *((fmt_ns(x.metrics.get("kernel_only_ns")), fmt_ns(x.metrics.get("copy_ns")))
                   if split else ()),
                 *((fmt_ns(x.metrics["launch_latency_ns"]),
                    fmt_ns(x.metrics["host_overhead_ns"])) if device else ())]
                for x in calls[:MAX_CALL_ROWS]]
        head = ["#", "range", "kind", "wall", *(("device work",) if device else ()),
                *(("kernels", "memcpy/memset") if split else ()),
                *(("launch latency", "host overhead") if device else ())]
        return _details("Every call", table(head, rows) + _more(calls_left_out(r)))
    return None
