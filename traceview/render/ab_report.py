"""Rendering a ``traceview ab`` result (its JSON dict): terminal tables and markdown.

Readable at 80 columns: one table of per-process figures (one row per round), one of
paired comparisons (one row per figure, names in full, wrapping), then the verdict.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from traceview.multi.ab_result import (
    FIGURE_LABELS,
    FIGURES,
    PAIRED_NOTE,
    cache_check_claims,
    confidence_claim,
    per_round_claim,
    protocol_claim,
)
from traceview.render.markdown import code, esc, prose, table
from traceview.render.names import short_frame
from traceview.render.text import laid_out, name_text
from traceview.report.claims import pointer
from traceview.units import fmt_ns, fmt_signed_ns


def side_lines(doc: dict[str, Any]) -> list[str]:
    out = []
    for label, s in doc["sides"].items():
        what = f"--fn {s['fn']}" if s.get("fn") else f"--impl {s['impl']}"
        env = " ".join(f"{k}={v}" for k, v in s.get("env", {}).items()) or "-"
        path = " ".join(s.get("path") or []) or "-"
        vers = s.get("versions") or {}
        ver = ", ".join(f"{k} {v}" for k, v in vers.items() if v)
        name = f" ({s['name']})" if s.get("name") and s["name"] != label else ""
        out.append(f"{label}{name}: {what}; env {env}; import path {path}; python "
                   f"{s['python']}" + (f"; {ver}" if ver else ""))
    return out


def kernel_lines(doc: dict[str, Any]) -> list[str]:
    """Which kernels each side launched per call (its profiled probe), and whether the
    two differ; nothing for a result saved before the probe existed."""
    from traceview.report.kernel_words import describe

    ku = doc.get("kernels_used")
    if ku is None:
        return []
    out = []
    checked = {c.figures[0].path: c.text for c in cache_check_claims(doc)}
    for label, s in doc["sides"].items():
        said = checked.get(pointer("sides", label, "cache_check", "calls"))
        if said:
            out.append(said)
        out.append(f"{label} kernels per call: {describe(s.get('kernels_used'))}")
    if ku.get("same") is True:
        out.append("kernels: both sides launched the same kernels, counts and grids")
    elif ku.get("same") is False:
        out.append("kernels DIFFER: " + "; ".join(ku["differences"]))
    return out


#: Functions shown per side-by-side split (heaviest of either side first).
SPLIT_ROWS = 12
SPLIT_HEADER = ["function (as the trace names it)", "A [95% CI]", "B [95% CI]",
                "A profiled", "B profiled"]
CATEGORY_HEADER = ["category", "A", "B", "A profiled", "B profiled"]


def _with_ci(f: dict[str, Any] | None, sep: str = " ") -> str:
    if f is None:
        return "-"
    if f.get("low_ns") is None:
        return f"{fmt_ns(f['inclusive_ns'])}{sep}(model)"
    return f"{fmt_ns(f['inclusive_ns'])}{sep}[{fmt_ns(f['low_ns'])}, {fmt_ns(f['high_ns'])}]"


def split_parts(doc: dict[str, Any], sep: str = " "
                ) -> tuple[list[str], list[list[str]], list[list[str]]]:
    """Both sides' unprofiled splits side by side: a line per side (its call, method,
    what measuring cost), the function rows and the category rows. Empty for a result
    without splits (``--no-split``, or saved before they existed). ``sep`` goes between
    a figure and its interval (the terminal puts the interval on a line of its own)."""
    splits = doc.get("splits") or {}
    if not splits:
        return [], [], []
    from traceview.multi.ab_result import split_claim

    said = [split_claim(doc, label) for label in ("A", "B")]
    lines = [c.text for c in said if c is not None]
    by = {label: {f["name"]: f for f in (splits.get(label) or {}).get("functions") or []}
          for label in ("A", "B")}
    names = sorted(set(by["A"]) | set(by["B"]),
                   key=lambda n: (-max((by[x][n]["inclusive_ns"] or 0) if n in by[x] else 0
                                       for x in ("A", "B")), n))
    rows = [[n, _with_ci(by["A"].get(n), sep), _with_ci(by["B"].get(n), sep),
             fmt_ns(by["A"][n]["profiled_ns"]) if n in by["A"] else "-",
             fmt_ns(by["B"][n]["profiled_ns"]) if n in by["B"] else "-"]
            for n in names[:SPLIT_ROWS]]
    cats = {label: (splits.get(label) or {}).get("categories") or {} for label in ("A", "B")}
    prof = {label: (splits.get(label) or {}).get("profiled_categories") or {}
            for label in ("A", "B")}
    cat_names = sorted(set(cats["A"]) | set(cats["B"]),
                       key=lambda k: (-max(cats["A"].get(k, 0), cats["B"].get(k, 0)), k))
    cat_rows = [[k, fmt_ns(cats["A"].get(k)), fmt_ns(cats["B"].get(k)),
                 fmt_ns(prof["A"].get(k)), fmt_ns(prof["B"].get(k))] for k in cat_names]
    return lines, rows, cat_rows


SPLIT_NOTE = ("unprofiled split: where a side's split was measured, its heaviest functions "
              "were timed one per run in a fresh unprofiled process of its own setting "
              "(inclusive ns per call, 95% signed-rank interval over blocks); a side whose "
              "split process failed shows the profiled-shares model instead, marked (model), "
              "or no split. Categories sum to each side's unprofiled call. The two sides are "
              "measured apart, not paired: the verdict above is the paired figure.")


def _header(doc: dict[str, Any]) -> str:
    """The protocol line: the document's ``ab-protocol`` claim."""
    return protocol_claim(doc).text


def per_round_difference(doc: dict[str, Any]) -> tuple[str, str | None]:
    """The per-process table's last column: its header, and the line that says what it is
    where it is not the row's B minus its A (None there). With ``--same-process`` it is
    the round's paired estimate over neighbouring blocks, with ``--reference`` each side's
    difference from the reference call: a process's fast or slow state cancels in both,
    so it can differ from B - A of the medians beside it, even in sign. A document saved
    before the per-round estimate was kept holds the plain difference there: B - A."""
    said = per_round_claim(doc)
    if said is None:
        return "B - A", None
    return ("paired B - A" if said.text == PAIRED_NOTE else "B - A vs ref"), said.text


def _per_process_rows(doc: dict[str, Any]) -> list[list[str]]:
    first: dict[int, str] = {}  # round -> the side that ran first in it
    for r, side in doc["run_order"]:
        first.setdefault(r, side)
    c = doc["comparisons"].get(FIGURES[0])
    rows: list[list[str]] = []
    if c is None:
        return rows
    same = bool(doc["protocol"].get("blocks"))
    for i, (a, b, d) in enumerate(zip(c["a_ns"], c["b_ns"], c["diff_ns"], strict=True)):
        order = "ABBA.." if same else "AB" if first.get(i + 1) == "A" else "BA"
        rows.append([str(i + 1), order, fmt_ns(a), fmt_ns(b), fmt_signed_ns(d)])
    return rows


def _comparison_rows(doc: dict[str, Any]) -> list[list[str]]:
    rows = []
    for key in FIGURES:
        c = doc["comparisons"].get(key)
        if c is None:
            continue
        ci = "-" if c["ci_low_ns"] is None else \
            f"[{fmt_signed_ns(c['ci_low_ns'])}, {fmt_signed_ns(c['ci_high_ns'])}]"
        rows.append([FIGURE_LABELS[key], fmt_ns(c["a_median_ns"]), fmt_ns(c["b_median_ns"]),
                     fmt_signed_ns(c["estimate_ns"]), ci,
                     f"{c['b_faster_rounds']} of {c['rounds']}", fmt_ns(c["min_detectable_ns"])])
    return rows


COMPARISON_HEADER = ["figure (unprofiled)", "A median", "B median", "B - A", "95% CI",
                     "B faster", "smallest detectable"]


def _confidence(doc: dict[str, Any]) -> str:
    """The interval's confidence: the document's ``ab-confidence`` claim."""
    return confidence_claim(doc).text


@laid_out
def render_ab_console(doc: dict[str, Any], console: Console) -> None:
    console.print(Text(_header(doc)))
    for line in side_lines(doc) + kernel_lines(doc):
        console.print(Text(line))
    t = Table(title="per process: full call, synchronized each call (median per process)",
              title_justify="left", pad_edge=False)
    diff_header, diff_note = per_round_difference(doc)
    for col in ("round", "order", "A", "B", diff_header):
        t.add_column(col, justify="right", no_wrap=col != diff_header)
    for row in _per_process_rows(doc):
        t.add_row(*row)
    console.print(t)
    if diff_note:
        console.print(Text(diff_note, style="grey50"))
    t = Table(title="paired difference B - A over rounds (Hodges-Lehmann, signed-rank CI)",
              title_justify="left", pad_edge=False, box=box.SIMPLE_HEAD)
    # Column widths by ``fit_columns``: a figure with its unit is one word, kept whole
    # ("-60.3 us", never "-60.3 …"); the names and the headers wrap at spaces.
    # The interval is kept on one line where the names still get room beside it (at 80
    # columns it takes two).
    for col in COMPARISON_HEADER:
        t.add_column(col, justify="left" if col.startswith("figure") else "right",
                     no_wrap=col == "95% CI" and console.width >= 100)
    for row in _comparison_rows(doc):
        t.add_row(*row)
    console.print(t)
    console.print(Text(doc["verdict"], style="bold"))
    _split_console(doc, console)
    traces = [s.get("trace") for s in doc["sides"].values()]
    if all(traces):
        console.print(Text(f"profiled traces (diagnosis, not speed): {traces[0]} {traces[1]}; "
                           f"traceview diff {traces[0]} {traces[1]} --ab <this result>"))
    console.print(Text("B - A < 0: B faster. 95% CI: exact Wilcoxon signed-rank interval ("
                       + _confidence(doc) + "); detectable: the smallest shift these rounds "
                       "could tell from zero on this machine.", style="grey50"))


def _split_console(doc: dict[str, Any], console: Console) -> None:
    lines, rows, cat_rows = split_parts(doc, sep="\n")
    if not lines:
        return
    for line in lines:
        console.print(Text(line))
    # three columns, so the frame names keep room at 80: a side's cell holds its figure,
    # its interval, and its profiled figure under them
    merged = [[r[0], *(v if v == "-" else f"{v}\nprofiled {p}"
                       for v, p in ((r[1], r[3]), (r[2], r[4])))] for r in rows]
    for title, header, body in (("where each side's call goes without the profiler "
                                 "(unprofiled inclusive time per call [95% CI], then "
                                 "profiled)", ["function (as the trace names it)", "A", "B"],
                                 merged),
                                ("host categories per call, unprofiled (sum = the call)",
                                 CATEGORY_HEADER, cat_rows)):
        if not body:
            continue
        t = Table(title=title, title_justify="left", pad_edge=False, box=box.SIMPLE_HEAD)
        for i, col in enumerate(header):  # the names fold; the figures never break
            t.add_column(col, justify="left" if i == 0 else "right", overflow="fold",
                         no_wrap=i > 0, ratio=1 if i == 0 else None)
        for row in body:  # a frame name breaks at its path and name boundaries
            t.add_row(name_text(short_frame(row[0])), *row[1:])
        console.print(t)
    console.print(Text(SPLIT_NOTE, style="grey50"))


def _split_markdown(doc: dict[str, Any]) -> list[str]:
    lines, rows, cat_rows = split_parts(doc)
    if not lines:
        return []
    parts = ["**Where each side's call goes without the profiler** (unprofiled split: "
             "inclusive time per call; categories sum to the unprofiled call)"]
    parts += ["- " + prose(line) for line in lines]
    if rows:  # the function, as the trace names it, in a code span: ``__call__`` verbatim
        parts.append(table(SPLIT_HEADER, [[code(r[0], limit=len(r[0]))]
                                          + [esc(c) for c in r[1:]] for r in rows], "lrrrr"))
    if cat_rows:
        parts.append(table(CATEGORY_HEADER, cat_rows, "lrrrr"))
    parts.append(f"<sub>{esc(SPLIT_NOTE)}</sub>")
    return parts


def render_ab_markdown(doc: dict[str, Any]) -> str:
    parts = ["### traceview ab", esc(_header(doc))]
    parts += ["- " + esc(line) for line in side_lines(doc) + kernel_lines(doc)]
    parts.append("**Per process** (full call, synchronized each call; median per process)")
    diff_header, diff_note = per_round_difference(doc)
    parts.append(table(["round", "order", "A", "B", diff_header], _per_process_rows(doc)))
    if diff_note:
        parts.append(f"<sub>{esc(diff_note)}</sub>")
    parts.append("**Paired difference B - A over rounds** (Hodges-Lehmann estimate, exact "
                 "Wilcoxon signed-rank interval)")
    parts.append(table(COMPARISON_HEADER, [[esc(r[0])] + r[1:] for r in _comparison_rows(doc)],
                       "lrrrrrr"))
    parts.append(f"<sub>{esc(_confidence(doc))}</sub>")
    parts.append(f"**Verdict:** {esc(doc['verdict'])}")
    parts += _split_markdown(doc)
    parts.append(f"<sub>{esc(doc['method'])}; {code('traceview ab --format json')} "
                 "has every process's figures</sub>")
    return "\n\n".join(parts) + "\n"
