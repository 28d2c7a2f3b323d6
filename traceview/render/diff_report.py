"""Rendering a ``Diff``: terminal table, and markdown for a PR description."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from traceview.multi.compare import Diff
from traceview.render.markdown import code, esc, table
from traceview.units import fmt_ns


def _ci(c) -> str:
    if c.ci_low is None:
        return "-"
    return f"[{fmt_ns(c.ci_low)}, {fmt_ns(c.ci_high)}]"


def _change(c) -> str:
    if c.delta is None:
        return "-"
    sign = "+" if c.delta > 0 else ""
    pct = f" ({sign}{100 * c.delta / c.before:.0f}%)" if c.before else ""
    return f"{sign}{fmt_ns(c.delta)}{pct}"


def render_diff_console(d: Diff, console: Console) -> None:
    console.print(Text(f"before {d.before_path} ({d.calls_before} calls)\n"
                       f"after  {d.after_path} ({d.calls_after} calls)"))
    for w in d.warnings:
        console.print(Text(f"warning: {w}", style="yellow"))
    t = Table(title="before -> after (medians over warm calls; 95% bootstrap CI)",
              title_justify="left", pad_edge=False)
    for col, j in (("metric", "left"), ("before", "right"), ("after", "right"),
                   ("change", "right"), ("95% CI", "right"), ("", "left")):
        t.add_column(col, justify=j, no_wrap=col == "metric")  # metric names whole
    for c in d.comparisons:
        mark = Text("significant", style="bold") if c.significant else Text("noise", style="grey50")
        t.add_row(c.metric, fmt_ns(c.before), fmt_ns(c.after), _change(c), _ci(c), mark)
    console.print(t)
    changed = [k for k in d.kernels if k["status"] != "common"]
    for k in changed:
        console.print(f"kernel {k['status']}: {k['name']}")
    console.print(Text(verdict_line(d), style="bold"))


def verdict_line(d: Diff) -> str:
    from traceview.multi.compare import verdict

    return verdict(d)


def render_diff_markdown(d: Diff) -> str:
    parts = ["### traceview diff: before / after",
             f"before: {code(d.before_path)} ({d.calls_before} calls) · after: "
             f"{code(d.after_path)} ({d.calls_after} calls)"]
    for w in d.warnings:
        parts.append(f"> **warning:** {esc(w)}")
    rows = [[code(c.metric), fmt_ns(c.before), fmt_ns(c.after), _change(c), _ci(c),
             "**yes**" if c.significant else "within noise"] for c in d.comparisons]
    parts.append(table(["metric", "before", "after", "change", "95% CI", "significant"], rows,
                       "lrrrrl"))
    ks = [k for k in d.kernels]
    if ks:
        krows = [[code(k["name"]), k["status"], str(k["count_before"]), str(k["count_after"]),
                  fmt_ns(k["p50_before"]), fmt_ns(k["p50_after"])] for k in ks[:30]]
        parts.append("<details><summary>Kernels by name</summary>\n\n"
                     + table(["kernel", "status", "count before", "count after", "p50 before",
                              "p50 after"], krows) + "\n\n</details>")
    parts.append(f"**Verdict:** {esc(verdict_line(d))}")
    parts.append("<sub>traceview diff: medians of warm calls; bootstrap 95% CI of the difference; "
                 "'within noise' when the interval covers zero</sub>")
    return "\n\n".join(parts) + "\n"
