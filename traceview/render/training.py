"""Terminal and markdown sections for multi-threaded traces and training steps.

Every table here has one scope, said in its title: the threads table shows each thread
alone over the window; the step tables show the typical step (the warm step whose wall
time is nearest the median, the one every "typical call" output shows), whose phases,
critical path and device idle each add up to that step's own figures. The figures come
from the report; nothing is computed here but sums and shares of the rows shown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from traceview.report import sentences
from traceview.report.sentences import path_rows
from traceview.units import fmt_ns, fmt_share

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.text import Text

    from traceview.report.model import Report, StepRow, StepsInfo

PATH_ROWS = 12  # rows of the critical-path table; the rest are summed in one row


def _t(*cells: str) -> list[Text]:
    """Cells as plain text: thread labels hold brackets (``[502/543]``, ``[/]``) that rich
    would read as markup."""
    from rich.text import Text

    return [Text(c) for c in cells]


def typical_step(r: Report) -> tuple[StepsInfo, StepRow] | None:
    """The report's steps and the step the sections show (``report.sentences``)."""
    found = sentences.typical_step(r.steps, r.typical_call)
    return None if found is None else (found[0], found[0].steps[found[1]])


def step_word(r: Report) -> str:
    return sentences.step_word(r.steps)


def headline(r: Report) -> str | None:
    """One sentence for a training trace: the typical step and who holds its path, as
    its claim says it (a report read back from an older JSON has no claims: made now)."""
    claim = next((c for c in r.claims if c.id == "typical-step"), None) \
        or sentences.step_claim(r.steps, r.typical_call)
    return None if claim is None else claim.text


def working_threads(r: Report) -> int:
    """Threads that are not helpers: the threads table is shown when there are two."""
    return sum(1 for t in r.threads if t.role != "helper")


def threads_table(r: Report) -> RenderableType | None:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    if working_threads(r) < 2:
        return None
    w = r.window.dur_ns
    table = Table(title="Host threads (each thread alone, over the window)", title_justify="left",
                  pad_edge=False)
    table.add_column("thread", ratio=2)
    table.add_column("role", no_wrap=True)
    table.add_column("launches", justify="right", no_wrap=True)
    table.add_column("syncs", justify="right", no_wrap=True)
    table.add_column("work", justify="right", no_wrap=True)
    table.add_column("top categories", ratio=3)
    for t in r.threads:
        cats = sorted(((c, v) for c, v in t.categories.items()), key=lambda x: (-x[1], x[0]))[:3]
        mark = " *" if t.attributed else ""
        table.add_row(*_t(t.label + mark, t.role, str(t.launches), str(t.syncs),
                      f"{fmt_ns(t.work_ns)} ({fmt_share(t.work_ns, w)})",
                      ", ".join(f"{c} {fmt_ns(v)}" for c, v in cats)))
    # "waiting" alone read as a synchronize too, which is work here: a DLRM rank's main
    # thread's 11.8 ms of work held its 6.6 ms cudaStreamSynchronize
    note = Text("* the thread the calls and the per-call table are on; work = traced time "
                "that is not untraced, wait (for another thread, a queue, a lock) or the "
                "profiler's own; a sync with the device counts as work", style="dim")
    return Group(table, note)


def has_device(r: Report) -> bool:
    """The trace has a device stream (steps of a CPU-only run have no device to wait)."""
    return bool(r.device.per_stream)


def step_details(r: Report) -> dict[str, str]:
    """The typical step's other sentences by id (``step-segments``, ``step-communication``,
    ``step-others``), as their claims say them (made now for a report read back from a
    JSON written before they were claims)."""
    ids = ("step-segments", "step-communication", "step-others")
    said = [c for c in r.claims if c.id in ids] \
        or sentences.step_detail_claims(r.steps, r.typical_call)
    return {c.id: c.text for c in said}


def step_sections(r: Report) -> list[RenderableType]:
    from rich.table import Table
    from rich.text import Text

    found = typical_step(r)
    if found is None:
        return []
    steps, step = found
    wall = step.wall_ns
    phases = Table(title=Text(sentences.step_title_words(r, "step-phases-title") or ""),
                   title_justify="left", show_footer=True, pad_edge=False)
    phases.add_column("phase", footer="step", no_wrap=True)
    phases.add_column("wall", justify="right", footer=fmt_ns(wall), no_wrap=True)
    phases.add_column("share", justify="right", footer=fmt_share(wall, wall), no_wrap=True)
    phases.add_column("device busy", justify="right", footer=fmt_ns(step.device_busy_ns),
                      no_wrap=True)
    phases.add_column("device idle", justify="right", footer=fmt_ns(step.device_idle_ns),
                      no_wrap=True)
    for p in step.phases:
        phases.add_row(*_t(p.phase, fmt_ns(p.wall_ns), fmt_share(p.wall_ns, wall),
                       fmt_ns(p.device_busy_ns), fmt_ns(p.device_idle_ns)))

    words = step_details(r)
    order = Text(words["step-segments"]) if "step-segments" in words else None

    path = Table(title=Text(f"Critical path of {step.name} (each ns once; removing an item "
                            f"saves at most its time)"), title_justify="left", show_footer=True, pad_edge=False)
    path.add_column("on", ratio=2, footer="step")
    path.add_column("what", ratio=2)
    path.add_column("time", justify="right", footer=fmt_ns(wall), no_wrap=True)
    path.add_column("share", justify="right", footer=fmt_share(wall, wall), no_wrap=True)
    rows = path_rows(step)
    for res, what, ns in rows[:PATH_ROWS]:
        path.add_row(*_t(res, what, fmt_ns(ns), fmt_share(ns, wall)))
    if len(rows) > PATH_ROWS:
        rest = sum(ns for _, _, ns in rows[PATH_ROWS:])
        path.add_row(*_t(f"{len(rows) - PATH_ROWS} more", "", fmt_ns(rest),
                         fmt_share(rest, wall)))

    idle = Table(title=Text(f"Device idle in {step.name} by what the device waited for"),
                 title_justify="left", show_footer=True, pad_edge=False)
    idle.add_column("waited for", ratio=2, footer="device idle")
    idle.add_column("doing", ratio=2)
    idle.add_column("time", justify="right", footer=fmt_ns(step.device_idle_ns), no_wrap=True)
    idle.add_column("share", justify="right",
                    footer=fmt_share(step.device_idle_ns, step.device_idle_ns), no_wrap=True)
    for c in step.idle_causes[:PATH_ROWS]:
        idle.add_row(*_t(c.resource, c.what, fmt_ns(c.ns),
                         fmt_share(c.ns, step.device_idle_ns)))
    if len(step.idle_causes) > PATH_ROWS:
        rest = sum(c.ns for c in step.idle_causes[PATH_ROWS:])
        idle.add_row(*_t(f"{len(step.idle_causes) - PATH_ROWS} more", "", fmt_ns(rest),
                     fmt_share(rest, step.device_idle_ns)))
    # a trace with no device stream (a CPU-only run) has nothing that waited
    head: list[RenderableType] = [phases] if order is None else [phases, order]
    out: list[RenderableType] = [*head, path, idle] if has_device(r) else [
        *head, path, Text("no device in this trace (CPU only): a step's time is its host "
                           "threads' time")]
    out += [Text(words[k]) for k in ("step-communication", "step-others") if k in words]
    return out


def markdown_section(r: Report, esc: Callable[[str], str]) -> list[str]:
    """The step part of the markdown report: blocks (a heading, a table, a sentence);
    ``esc``: the markdown renderer's escaping of a sentence."""
    found = typical_step(r)
    if found is None:
        return []
    lines = _markdown_lines(r, *found, esc)
    blocks, cur = [], []
    for line in lines:
        if line:
            cur.append(line)
        elif cur:
            blocks.append("\n".join(cur))
            cur = []
    if cur:
        blocks.append("\n".join(cur))
    return blocks


def _markdown_lines(r: Report, steps: StepsInfo, step: StepRow,
                    esc: Callable[[str], str]) -> list[str]:
    wall = step.wall_ns
    out = [f"#### {esc(sentences.step_title_words(r, 'step-heading') or '')}", "",
           "| phase | wall | share | device busy | device idle |", "|---|---:|---:|---:|---:|"]
    for p in step.phases:
        out.append(f"| {p.phase} | {fmt_ns(p.wall_ns)} | {fmt_share(p.wall_ns, wall)} | "
                   f"{fmt_ns(p.device_busy_ns)} | {fmt_ns(p.device_idle_ns)} |")
    words = step_details(r)
    if "step-segments" in words:
        out += ["", esc(words["step-segments"])]
    out += ["", "Critical path (each ns of the step once; removing an item saves at most its "
            "time):", "", "| on | what | time | share |", "|---|---|---:|---:|"]
    rows = path_rows(step)
    for res, what, ns in rows[:PATH_ROWS]:
        out.append(f"| {res} | {what} | {fmt_ns(ns)} | {fmt_share(ns, wall)} |")
    if len(rows) > PATH_ROWS:
        rest = sum(ns for _, _, ns in rows[PATH_ROWS:])
        out.append(f"| {len(rows) - PATH_ROWS} more | | {fmt_ns(rest)} | {fmt_share(rest, wall)} |")
    if has_device(r):
        out += ["", "Device idle by what the device waited for:", "",
                "| waited for | doing | time | share |", "|---|---|---:|---:|"]
        for c in step.idle_causes[:PATH_ROWS]:
            out.append(f"| {c.resource} | {c.what} | {fmt_ns(c.ns)} | "
                       f"{fmt_share(c.ns, step.device_idle_ns)} |")
    else:
        out += ["", "No device in this trace (CPU only): a step's time is its host threads' "
                "time."]
    out += [x for k in ("step-communication", "step-others") if k in words
            for x in ("", esc(words[k]))]
    out.append("")
    if working_threads(r) > 1:
        out += ["Host threads (each alone, over the window):", "",
                "| thread | role | launches | syncs | work |", "|---|---|---:|---:|---:|"]
        for t in r.threads:
            out.append(f"| {t.label}{' (attributed)' if t.attributed else ''} | {t.role} | "
                       f"{t.launches} | {t.syncs} | {fmt_ns(t.work_ns)} |")
        out.append("")
    return out
