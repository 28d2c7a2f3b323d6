"""Rendering a ``Diff``: terminal tables, and markdown for a PR description.

Three tables, in the order a reader should trust them: the unprofiled figures (the
speed verdict rests on these), the profiled per-call figures (titled as diagnosis),
and the code-path changes. Readable at 80 columns: metric names in full, wrapping.

Every sentence with a figure is a claim over the diff's JSON (``claims_printed``): the
document's own (the verdict, the machine-speed note), the header, the counts of what the
terminal leaves out (``diff_top``), the kernels' lines and the warning about device work
with no launch record (a warning among the others, worded by its claim).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from traceview.multi.codepath import SHARE_HEADER, share_claim
from traceview.multi.compare import Diff
from traceview.render.diff_top import (
    KERNEL_HEADER,
    TOP_FUNCTIONS,
    functions_claim,
    kernels_claim,
    more,
    top_kernels,
    top_warnings,
    warnings_claim,
)
from traceview.render.labels import METRIC_LABELS
from traceview.render.markdown import code, esc, table
from traceview.render.names import kernel_labels, short_frame
from traceview.render.text import laid_out
from traceview.report.claims import Claim, Figure, Relation, pointer
from traceview.units import fmt_ns, fmt_signed_ns, plural

PROFILED_TITLE = ("profiled calls: diagnosis, not speed (medians over warm calls, every call "
                  "on a side with none; 95% bootstrap CI)")


def _ci(c) -> str:
    if c.ci_low is None:
        # a difference with no interval: too few calls on a side to say what noise is
        return "cannot tell" if c.delta is not None else "-"
    return f"[{fmt_ns(c.ci_low)}, {fmt_ns(c.ci_high)}]"


def _change(c) -> str:
    if c.delta is None:
        return "-"
    sign = "+" if c.delta > 0 else ""
    pct = f" ({sign}{100 * c.delta / c.before:.0f}%)" if c.before else ""
    return f"{sign}{fmt_ns(c.delta)}{pct}"


def metric_label(metric: str) -> str:
    """``calls.launch_api_ns.p50`` -> ``launch API per call (p50)``, in full."""
    if metric.startswith("calls."):
        key = metric.split(".")[1]
        return f"{METRIC_LABELS.get(key, key)} per call (p50)"
    if metric.startswith("host.categories."):
        return f"host time in {metric.split('.', 2)[2]} per call (p50)"
    if metric == "device.busy_ns":
        return "device busy in the window (total)"
    return metric


def _share(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}" if x >= 0.1 else f"{x:.1%}"


def unprofiled_rows(u: dict[str, Any], sep: str = "\n") -> list[list[str]]:
    """One row per figure; the per-process values one per line (``sep``)."""
    rows = []
    for f in u["figures"]:
        ci = "-" if f["ci_low_ns"] is None else \
            f"[{fmt_signed_ns(f['ci_low_ns'])}, {fmt_signed_ns(f['ci_high_ns'])}]"
        rows.append([f["label"], sep.join(fmt_ns(x) for x in f["before_ns"]),
                     sep.join(fmt_ns(x) for x in f["after_ns"]), fmt_signed_ns(f["estimate_ns"]), ci])
    return rows


UNPROFILED_HEADER = ["figure (unprofiled)", "before, per process", "after, per process",
                     "after - before", "95% CI"]
# the share: of the warm calls the function runs in (``codepath.SHARE_NOTE``), never of
# the trace's p50 call, which a function running only in longer calls exceeds
CODE_HEADER = ["function (per call, inclusive)", "status", "before", "after", "change",
               SHARE_HEADER]
FAMILY_HEADER = ["module family (innermost frame, per call)", "before", "after", "change",
                 "share of call"]


def _threads(r: dict[str, Any]) -> str:
    """`` (before: on main thread [1/1])`` where the function ran on one side only on
    threads other than the calls' (its status says which side), else nothing: beside the
    name, where the column is wide enough to read it."""
    for side in ("before", "after"):
        if r.get(f"{side}_threads"):
            return f" ({side}: on {', '.join(r[f'{side}_threads'])})"
    return ""


def code_rows(cp: dict[str, Any], name: Callable[[str], str] = str) -> list[list[str]]:
    """The code-path table's rows; ``name`` formats the function's name (markdown's code
    span), the threads it ran on stay outside it."""
    return [[name(short_frame(r["function"])) + _threads(r), r["status"],
             fmt_ns(r["before_inclusive_ns_per_call"]),
             fmt_ns(r["after_inclusive_ns_per_call"]), fmt_signed_ns(r["change_inclusive_ns_per_call"]),
             f"{_share(r['before_share'])} -> {_share(r['after_share'])}"]
            for r in cp["functions"]]


def family_rows(cp: dict[str, Any]) -> list[list[str]]:
    return [[r["family"], fmt_ns(r["before_ns_per_call"]), fmt_ns(r["after_ns_per_call"]),
             fmt_signed_ns(r["change_ns_per_call"]),
             f"{_share(r['before_share'])} -> {_share(r['after_share'])}"]
            for r in cp.get("families") or ()]


def _table(title: str, header: list[str], rows: list[list[str]], widths: tuple[int, ...]
           ) -> Table:
    """A table whose first column wraps and whose number columns have fixed widths."""
    t = Table(title=title, title_justify="left", pad_edge=False, box=box.SIMPLE_HEAD)
    for i, (col, w) in enumerate(zip(header, widths, strict=True)):
        t.add_column(col, width=w or None, ratio=None if w else 1,
                     justify="left" if i == 0 else "right", overflow="fold")
    from traceview.render.text import name_text

    for r in rows:
        t.add_row(*([name_text(r[0]), *r[1:]] if r else r))
    return t


@laid_out
def render_diff_console(d: Diff, console: Console) -> None:
    console.print(Text(header_claims(d)[0].text))
    for w in top_warnings(d.warnings)[0]:
        console.print(Text(f"warning: {w}", style="yellow"))
    left_out = warnings_claim(d.warnings)
    if left_out is not None:
        console.print(Text(f"warning: {left_out.text}", style="yellow"))
    # the verdict first: the tables after it are its evidence, and profiled differences
    # read before it would look like the answer
    console.print(Text(f"verdict: {verdict_line(d)}", style="bold"))
    u = d.unprofiled
    if u is None:
        console.print(Text("unprofiled: no unprofiled figures on both sides (capture metadata "
                           "or diff --ab): no speed verdict", style="yellow"))
    else:
        console.print(_table(f"unprofiled: the speed verdict ({u['source']})",
                             UNPROFILED_HEADER, unprofiled_rows(u), (0, 11, 11, 10, 12)))
    t = _table(PROFILED_TITLE, ["metric (profiled)", "before", "after", "change", "95% CI", ""],
               [], (0, 8, 8, 13, 12, 5))
    for c in d.comparisons:
        mark = Text("diff", style="bold") if c.significant else \
            Text("noise" if c.ci_low is not None else "-", style="grey50")
        t.add_row(metric_label(c.metric), fmt_ns(c.before), fmt_ns(c.after), _change(c), _ci(c),
                  mark)
    console.print(t)
    cp = d.code_path
    if cp and cp["functions"]:
        rows = code_rows(cp)
        console.print(_table("code path: what changed between the profiled traces (per call)",
                             CODE_HEADER, rows[:TOP_FUNCTIONS], (0, 6, 8, 8, 8, 11)))
        if len(rows) > TOP_FUNCTIONS:
            console.print(Text(more(functions_claim(cp["functions"])), style="grey50"))
        column = share_claim(cp)  # what the last column is, as a claim that holds
        if column is not None:
            console.print(Text(column.text, style="grey50"))
        if any(r["status"].endswith("*") for r in cp["functions"]):
            console.print(Text(cp["status_note"], style="grey50"))
        if cp.get("families"):
            console.print(_table("module families (explain's: each instant to the module of "
                                 "the innermost Python frame)", FAMILY_HEADER, family_rows(cp),
                                 (0, 8, 8, 9, 12)))
        elif cp.get("families_note"):
            console.print(Text(cp["families_note"], style="grey50"))
        speed = cp.get("machine_speed") or {}
        if speed.get("note"):
            console.print(Text("note: " + speed["note"], style="yellow"))
    krows, krest = top_kernels(d.kernels)
    if krows:
        console.print(_table("kernels added, removed or changed (the largest change in device "
                             "time first)", KERNEL_HEADER, krows, (0, 7, 10, 10, 10)))
    if krest:
        console.print(Text(krest, style="grey50"))
    for line in kernels_used_lines(d):
        console.print(Text(line))


def kernels_used_claims(d: Diff) -> list[Claim]:
    """``kernels launched: the same ...`` or ``kernels launched DIFFER: ...`` (and, from
    capture's probe, each side's kernels) as claims over the diff document: each side's
    kernels per call where the probe recorded them, the differences' figures (from the
    traces' kernel rows: each side's launches over its calls; from the probe: each
    side's counts per call) or, where the rows are the same, every kernel's one count
    per call on both sides. The rows count launches: where some kernels have no launch
    record, the line ends with how many it left out on each side."""
    from traceview.multi.compare import (
        KERNEL_ROWS,
        kernel_row_claims,
        same_rows_figures,
        unlinked_kernels_claim,
    )
    from traceview.report.kernel_words import describe_claim, difference_claims

    ku = d.kernels_used
    if not ku or ku.get("same") is None:
        return []
    out = []
    if "before" in ku:
        out += [describe_claim("diff-kernels-probe", f"kernels per call {side}:{pad} ",
                               ku[side], ("kernels_used", side))
                for side, pad in (("before", ""), ("after", " "))]
    rows = ku["source"] == KERNEL_ROWS
    if ku["same"]:
        figs, rels = (same_rows_figures(d.kernels, d.calls_before, d.calls_after) if rows
                      else ([], []))
        out.append(Claim("diff-kernels-launched",
                         f"kernels launched: the same in both ({ku['source']})",
                         tuple(figs), tuple(rels)))
    else:
        parts = (kernel_row_claims(d.kernels, d.calls_before, d.calls_after) if rows
                 else difference_claims(ku["before"], ku["after"], ("before", "after"),
                                        (("kernels_used", "before"),
                                         ("kernels_used", "after"))) or [])
        said = [c.text for c in parts]
        figs = [Figure(f"d{j}.{f.name}", f.value, f.path) for j, c in enumerate(parts)
                for f in c.figures]
        rels = [Relation(r.kind, tuple(f"d{j}.{n}" for n in r.figures))
                for j, c in enumerate(parts) for r in c.relations]
        out.append(Claim("diff-kernels-launched",
                         f"kernels launched DIFFER ({ku['source']}): " + "; ".join(said),
                         tuple(figs), tuple(rels)))
    # kernels no launch record links to ran, but nobody launched them in the window: the
    # counts leave them out, and the same line says how many
    left_out = unlinked_kernels_claim(d.kernels, ku) if rows else None
    if left_out is not None:
        c = out[-1]
        out[-1] = Claim(c.id, f"{c.text}; {left_out.text}",
                        (*c.figures, *(Figure(f"u.{f.name}", f.value, f.path)
                                       for f in left_out.figures)),
                        (*c.relations, *(Relation(r.kind, tuple(f"u.{n}" for n in r.figures))
                                         for r in left_out.relations)))
    # full C++ signatures stay in the JSON; the text names kernels as the tables do, by
    # labels over every kernel of the diff: several kernels fold to the same short name
    # (``vectorized_elementwise_kernel<…>(…)`` for a fill and an add), and a sentence
    # naming that short name would not tell the reader which one moved
    full = [k["name"] for k in d.kernels if isinstance(k.get("name"), str)]
    labels = kernel_labels(full)
    names = sorted(set(full), key=len, reverse=True)
    for i, c in enumerate(out):
        line = c.text
        for name in names:
            if name in line:
                line = line.replace(name, labels[name])
        out[i] = Claim(c.id, line, c.figures, c.relations)
    return out


def kernels_used_lines(d: Diff) -> list[str]:
    return [c.text for c in kernels_used_claims(d)]


def header_claims(d: Diff) -> list[Claim]:
    """The two sides and their calls: the terminal's header (``diff-header``) and the
    markdown's line under its heading (``diff-heading``), each side's calls where the
    diff document holds them."""
    figs = (Figure("calls_before", d.calls_before, pointer("calls", "before")),
            Figure("calls_after", d.calls_after, pointer("calls", "after")))
    b, a = plural(d.calls_before, "call"), plural(d.calls_after, "call")
    return [Claim("diff-header", f"before {d.before_path} ({b})\n"
                                 f"after  {d.after_path} ({a})", figs),
            Claim("diff-heading", f"before: {code(d.before_path)} ({b}) "
                                  f"· after: {code(d.after_path)} ({a})",
                  figs)]


def claims_printed(d: Diff) -> list[Claim]:
    """Every claim the terminal or the markdown prints of ``d``, over its document: the
    document's own (the verdict, the machine-speed note), the header, the counts of what
    the terminal leaves out, the kernels' lines, the device work with no launch record
    (printed among the warnings: the terminal's only where it is among those it shows)."""
    from traceview.multi.compare import claims, unlinked_claim

    cp = d.code_path or {}
    more_claims = (warnings_claim(d.warnings),
                   functions_claim(cp["functions"]) if cp.get("functions") else None,
                   share_claim(cp) if cp.get("functions") else None,
                   kernels_claim(d.kernels))
    unlinked = unlinked_claim(d.unlinked_device_work)
    return [*claims(d), *header_claims(d), *(c for c in more_claims if c is not None),
            *kernels_used_claims(d), *([unlinked] if unlinked is not None else [])]


def verdict_line(d: Diff) -> str:
    from traceview.multi.compare import verdict

    return verdict(d)


def render_diff_markdown(d: Diff) -> str:
    parts = ["### traceview diff: before / after", header_claims(d)[1].text]
    for w in d.warnings:
        parts.append(f"> **warning:** {esc(w)}")
    parts.append(f"**Verdict:** {esc(verdict_line(d))}")
    u = d.unprofiled
    if u is None:
        parts.append("**Unprofiled:** no unprofiled figures on both sides: no speed verdict")
    else:
        parts.append(f"**Unprofiled: the speed verdict** ({esc(u['source'])})")
        parts.append(table(UNPROFILED_HEADER,
                           [[esc(c) for c in r] for r in unprofiled_rows(u, ", ")],
                           "lrrrr"))
    rows = [[esc(metric_label(c.metric)), fmt_ns(c.before), fmt_ns(c.after), _change(c), _ci(c),
             "**yes**" if c.significant else "within noise" if c.ci_low is not None
             else "cannot tell"] for c in d.comparisons]
    parts.append(f"**{esc(PROFILED_TITLE[0].upper() + PROFILED_TITLE[1:])}**")
    parts.append(table(["metric (profiled)", "before", "after", "change", "95% CI",
                        "beyond noise"], rows, "lrrrrl"))
    cp = d.code_path
    if cp and cp["functions"]:
        parts.append("**Code path: what changed between the profiled traces** (per call)")
        parts.append(table(CODE_HEADER, code_rows(cp, code), "llrrrr"))
        column = share_claim(cp)  # what the last column is, as a claim that holds
        if column is not None:
            parts.append("<sub>" + esc(column.text) + "</sub>")
        if any(r["status"].endswith("*") for r in cp["functions"]):
            parts.append(f"<sub>{esc(cp['status_note'])}</sub>")
        if cp.get("families"):
            parts.append("**Module families** (explain's: each instant of a warm call to the "
                         "module of the innermost Python frame)")
            parts.append(table(FAMILY_HEADER, [[code(r[0])] + r[1:] for r in family_rows(cp)],
                               "lrrrr"))
        elif cp.get("families_note"):
            parts.append(f"<sub>{esc(cp['families_note'])}</sub>")
        speed = cp.get("machine_speed") or {}
        if speed.get("note"):
            parts.append(f"> **note:** {esc(speed['note'])}")
    ks = [k for k in d.kernels]
    if ks:
        labels = kernel_labels([k["name"] for k in ks])
        krows = [[code(labels[k["name"]]), k["status"], str(k["count_before"]), str(k["count_after"]),
                  fmt_ns(k["p50_before"]), fmt_ns(k["p50_after"])] for k in ks[:30]]
        parts.append("<details><summary>Kernels by name</summary>\n\n"
                     + table(["kernel", "status", "count before", "count after", "p50 before",
                              "p50 after"], krows) + "\n\n</details>")
    parts += ["- " + esc(line) for line in kernels_used_lines(d)]
    parts.append("<sub>traceview diff: speed from unprofiled figures only; profiled medians of "
                 "warm calls with a bootstrap 95% CI diagnose</sub>")
    return "\n\n".join(parts) + "\n"
