"""Many ranks: a summary row per rank and the combined view (medians, stragglers).

Reads a :class:`traceview.multi.ranks.RanksReport`; text (rich), JSON and GitHub markdown.
The JSON is ``{"schema_version": 1, "ranks": [...], "combined": {...}}``: each rank is
the single-trace explain JSON (``docs/json.md``) plus ``rank`` and ``rank_source``, or
``{rank, rank_source, trace: {path}, error}`` for a file that could not be analysed
(``docs/ranks.md``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import orjson
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from traceview.render.text import laid_out
from traceview.units import fmt_ns

if TYPE_CHECKING:
    from traceview.multi.ranks import RankResult, RanksReport
    from traceview.report.claims import Claim

METRIC_NAMES = {"device_busy_share": "device busy share", "api_p50_ns": "call API p50"}
# rank, file, window, device busy share, calls, and the per-call p50s (warm calls):
# kernels alone, and where some rank's calls launched memcpy/memset, a copy column after it.
COLUMNS = ("rank", "file", "window", "busy", "calls", "API p50", "kernel p50", "overhead p50",
           "verdict")
COPY_COLUMN = "copy p50"


def columns(report: RanksReport) -> tuple[str, ...]:
    if not _copies(report):
        return COLUMNS
    i = COLUMNS.index("kernel p50") + 1
    return (*COLUMNS[:i], COPY_COLUMN, *COLUMNS[i:])


def _copies(report: RanksReport) -> bool:
    return any(r.report.calls.has_copies for r in report.ranks if r.report is not None)


def _file(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _short(name: str) -> str:
    """The file name less its trace suffix, for the narrow text table."""
    for suffix in (".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def distinct_names(names: list[str], width: int | None = None) -> list[str]:
    """File names for a narrow column: each kept whole when the longest fits ``width``
    (None: no limit), else its start, ``…``, and its end from the part that tells it from
    the others on (``trainer_…rank0``, ``trainer_…rank1``): the middle goes, never the
    part that tells the files apart nor the start a person knows a file by. Where even
    that part does not fit, the names are left whole for the table to wrap."""
    if width is None or not names or max(len(n) for n in names) <= width:
        return names
    pre = len(os.path.commonprefix(names)) if len(names) > 1 else 0
    # cut at a separator, so the end kept starts at a word ("…worker0", not "…0")
    seps = "_-./ "
    pre = max((i + 1 for i, ch in enumerate(names[0][:pre]) if ch in seps), default=0)
    out = []
    for n in names:
        tail = n[pre:]
        head = width - 1 - len(tail)
        if len(n) <= width:
            out.append(n)
        elif head < 1:  # the telling part alone is wider than the column
            return names
        else:
            out.append(n[:head] + "…" + tail)
    return out


def _file_room(report: RanksReport, rows: list[list[str]], width: int) -> int:
    """The file column's width at ``width`` columns: what the figure columns (each its
    widest cell) and the verdict leave, two spaces between columns. The verdict is kept
    whole while that leaves the names 16 columns, else it wraps at its words; at least
    12, where a table wider than the screen is rich's to fold."""
    cols = columns(report)
    fixed = 0
    for j, col in enumerate(cols):
        if col == "file":
            continue
        cells = [r[j] for r in rows]
        if col == "verdict":
            fixed += max(len(w) for c in cells + [col] for w in c.split())
        else:
            fixed += max([len(c) for c in cells] + [len(w) for w in col.split()])
    verdict = cols.index("verdict")
    whole_verdict = max(len(r[verdict]) for r in rows)
    room = width - fixed - 2 * (len(cols) - 1)
    longest_word = max(len(w) for r in rows for w in r[verdict].split())
    # the verdict whole when the names leave room for it, else wrapped
    names = max(len(_short(r[1])) for r in rows)
    if names + whole_verdict - longest_word <= room:
        return names
    if room - (whole_verdict - longest_word) >= 16:  # the verdict whole, the names still long
        return room - (whole_verdict - longest_word)
    return max(12, room)


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.1f}%"


def _value(metric: str, v: Any) -> str:
    if v is None:
        return "-"
    return _pct(v) if metric.endswith("_share") else fmt_ns(round(v))


def _relative(o: dict[str, Any]) -> str:
    if o["relative"] is None:  # the median is 0: no share of it
        return "median 0"
    return f"{100 * o['relative']:+.0f}%"


def reason_text(o: dict[str, Any]) -> str:
    """One metric's reason a rank stands out (``Outlier.as_dict``'s figures)."""
    m = o["metric"]
    return (f"{METRIC_NAMES.get(m, m)} {_value(m, o['value'])} vs median "
            f"{_value(m, o['median'])} ({_relative(o)}, MAD {_value(m, o['mad'])})")


def _reason_figures(o: dict[str, Any], at: tuple[str | int, ...], tag: str,
                    figs: list, rels: list) -> None:
    """What a reason asserts: the rank is that far from the median, on its side, by
    more than the rule's MAD multiple and share of the median (``multi.stragglers``)."""
    from traceview.multi.stragglers import STRAGGLER_MAD_K, STRAGGLER_MIN_RELATIVE
    from traceview.report.claims import Figure, pointer, rel

    def fig(name: str, value: Any, *path: str) -> str:
        figs.append(Figure(f"{tag}.{name}", value, pointer(*at, *path) if path else None))
        return f"{tag}.{name}"

    value, med = fig("value", o["value"], "value"), fig("median", o["median"], "median")
    mad = fig("mad", o["mad"], "mad")
    dev = fig("dev", o["value"] - o["median"])
    apart = fig("apart", abs(o["value"] - o["median"]))
    rels.append(rel("sum", med, dev, value))
    if o["direction"] == "above":
        rels += [rel("gt", dev, "zero"), rel("eq", apart, dev)]
    else:
        rels += [rel("lt", dev, "zero"), rel("sum", apart, dev, "zero")]
    if o["mad"]:
        rels += [rel("ratio", fig("mad_k_mads", STRAGGLER_MAD_K * o["mad"]), mad, "mad_k"),
                 rel("gt", apart, f"{tag}.mad_k_mads")]
    else:
        rels += [rel("eq", mad, "zero"), rel("gt", apart, "zero")]
    rels.append(rel("ge", med, "zero"))  # a time or a share
    if o["relative"] is not None:
        share = fig("relative", o["relative"], "relative")
        rels.append(rel("ratio_rounded", dev, med, share, "digits"))
        if o["median"]:
            need = fig("least", STRAGGLER_MIN_RELATIVE * o["median"])
            rels += [rel("ratio", need, med, "min_relative"), rel("ge", apart, need)]
    else:
        rels.append(rel("eq", med, "zero"))


def ranks_claims(report: RanksReport) -> list[Claim]:
    """The summary's sentences as claims over the ranks document (``RanksReport.to_dict``):
    how many ranks were analysed and the medians, each straggler's reasons against the
    rule, or why none is named."""
    from traceview.multi.stragglers import (
        SHARE_DIGITS,
        STRAGGLER_MAD_K,
        STRAGGLER_MIN_RANKS,
        STRAGGLER_MIN_RELATIVE,
    )
    from traceview.report.claims import Claim, Figure, Relation, pointer, rel

    doc = report.to_dict()["combined"]
    at = ("combined",)
    busy, api = doc["metrics"]["device_busy_share"], doc["metrics"]["api_p50_ns"]
    out = [Claim("ranks-summary", (
        f"{doc['ok']} of {doc['count']} ranks analysed · median device busy "
        f"{_value('device_busy_share', busy['median'])} · median call API p50 "
        f"{_value('api_p50_ns', api['median'])}"),
        (Figure("ok", doc["ok"], pointer(*at, "ok")),
         Figure("count", doc["count"], pointer(*at, "count")),
         Figure("busy", busy["median"], pointer(*at, "metrics", "device_busy_share", "median")),
         Figure("api", api["median"], pointer(*at, "metrics", "api_p50_ns", "median"))),
        (rel("le", "ok", "count"),))]
    rule = [Figure("mad_k", STRAGGLER_MAD_K, pointer(*at, "rule", "mad_k")),
            Figure("min_relative", STRAGGLER_MIN_RELATIVE, pointer(*at, "rule", "min_relative")),
            Figure("min_ranks", STRAGGLER_MIN_RANKS, pointer(*at, "rule", "min_ranks"))]
    if doc["stragglers"]:
        for j, st in enumerate(doc["stragglers"]):
            r = report.ranks[sorted(report.stragglers)[j]]
            figs: list[Figure] = [*rule, Figure("zero", 0), Figure("digits", SHARE_DIGITS),
                                  Figure("rank", st["rank"], pointer(*at, "stragglers", j, "rank"))]
            rels: list[Relation] = []
            for k, o in enumerate(st["reasons"]):
                _reason_figures(o, (*at, "stragglers", j, "reasons", k), f"r{k}", figs, rels)
            out.append(Claim("ranks-straggler", f"straggler: rank {r.rank} ({_file(r.path)}): "
                             + "; ".join(reason_text(o) for o in st["reasons"]),
                             tuple(figs), tuple(rels)))
    elif max(busy["n"], api["n"]) < STRAGGLER_MIN_RANKS:
        out.append(Claim("ranks-no-straggler",
                         f"no straggler rule: it needs {STRAGGLER_MIN_RANKS} ranks with a value",
                         (*rule, Figure("busy_n", busy["n"], pointer(*at, "metrics",
                                                                      "device_busy_share", "n")),
                          Figure("api_n", api["n"], pointer(*at, "metrics", "api_p50_ns", "n"))),
                         (rel("lt", "busy_n", "min_ranks"), rel("lt", "api_n", "min_ranks"))))
    else:
        out.append(Claim("ranks-no-straggler", (
            f"no stragglers (a rank stands out when more than {STRAGGLER_MAD_K:g} MAD "
            f"and {100 * STRAGGLER_MIN_RELATIVE:.0f}% from the median)"), tuple(rule)))
    return out


def title_claims(report: RanksReport) -> list[Claim]:
    """The ranks table's titles as claims over the ranks document: the terminal's
    (``Ranks (4 traces)``, ``ranks-title``) and the markdown's heading (``traceview: 4
    ranks``, ``ranks-heading``), each the ranks of the document, those analysed and those
    that failed adding up to them. Made from the report's ranks as ``combined`` counts
    them, without writing the document (every rank's report in it)."""
    from traceview.report.claims import Claim, Figure, pointer, rel

    count = len(report.ranks)
    figs = (Figure("count", count, pointer("combined", "count")),
            Figure("ok", len(report.ok), pointer("combined", "ok")),
            Figure("failed", len(report.failed)))
    rels = (rel("sum", "ok", "failed", "count"),)
    return [Claim("ranks-title", f"Ranks ({count} traces)", figs, rels),
            Claim("ranks-heading", f"traceview: {count} ranks", figs, rels)]


def damage(r: RankResult) -> list[str]:
    """What is wrong with a rank's file, from its own report's diagnostics (the warnings:
    cut short, malformed, duplicated records...): ``code: message`` each, none when whole.
    A damaged rank's figures cover only what could be read, so the table says so."""
    if r.report is None:
        return []
    return [f"{g.code}: {g.message}" for g in r.report.diagnostics if g.severity == "warning"]


def _row(r: RankResult, *, copies: bool = False) -> list[str]:
    from traceview.multi.ranks import rank_metrics

    if not r.ok:
        return [str(r.rank), _file(r.path), "-", "-", "-", "-", "-", *(["-"] if copies else []),
                "-", "error"]
    m = rank_metrics(r.report)
    kernel = m["kernel_only_p50_ns"] if m["kernel_only_p50_ns"] is not None else m["kernel_p50_ns"]
    return [str(r.rank), _file(r.path), fmt_ns(m["window_ns"]), _pct(m["device_busy_share"]),
            str(m["calls"]), fmt_ns(m["api_p50_ns"]), fmt_ns(kernel),
            *([fmt_ns(m["copy_p50_ns"])] if copies else []),
            fmt_ns(m["host_overhead_p50_ns"]),
            ("damaged; " if damage(r) else "") + (m["verdict"] or "-")]


def _summary_lines(report: RanksReport) -> list[str]:
    lines = [c.text for c in ranks_claims(report)]
    for r in report.ok:
        for what in damage(r):
            lines.append(f"damaged: rank {r.rank} ({_file(r.path)}): {what}")
    for r in report.failed:
        lines.append(f"failed: rank {r.rank}: {r.error}")
    lines += [f"warning: {w}" for w in report.warnings]
    return lines


@laid_out
def render_ranks_console(report: RanksReport, console: Console) -> None:
    # No vertical rules, and every figure column kept at its widest cell: nine columns fit
    # in 80 with the numbers whole; a long file name loses its middle, the verdict wraps.
    copies = _copies(report)
    rows = [_row(r, copies=copies) for r in report.ranks]
    room = _file_room(report, rows, console.width)
    shown = distinct_names([_short(c[1]) for c in rows], room)
    for cells, name in zip(rows, shown, strict=True):
        cells[1] = name
    fits = max(len(n) for n in shown) <= room  # else the names wrap (the table's to fold)
    table = Table(title=title_claims(report)[0].text, title_justify="left",
                  box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                  collapse_padding=True)
    for j, col in enumerate(columns(report)):
        if col == "file" and fits:  # as wide as its names, which fit: never cut
            table.add_column(col, no_wrap=True, min_width=max(len(r[j]) for r in rows))
            continue
        if col == "file":  # wraps rather than cuts: rows must stay tellable apart
            table.add_column(col, overflow="fold", ratio=1,
                             min_width=min(12, max(len(r[j]) for r in rows)))
            continue
        widest = max([len(r[j]) for r in rows] + [len(w) for w in col.split()])
        # a two-word header on two lines: the column is as wide as its numbers
        if col == "verdict":  # "damaged; host-bound" wraps at its words, never cut
            table.add_column(col, justify="left")
            continue
        table.add_column(col.replace(" ", "\n"), justify="right", no_wrap=True,
                         min_width=widest)
    from traceview.render.text import name_text

    for i, (r, cells) in enumerate(zip(report.ranks, rows, strict=True)):
        style = "bold red" if not r.ok else ("bold yellow" if i in report.stragglers
                                             else "yellow" if damage(r) else None)
        table.add_row(cells[0], name_text(cells[1], long_part=0), *cells[2:], style=style)
    console.print(table)
    console.print()
    for line in _summary_lines(report):
        kind = line.split(":", 1)[0]
        style = {"straggler": "bold yellow", "failed": "bold red", "warning": "yellow",
                 "damaged": "yellow"}.get(kind)
        console.print(Text(line, style=style or ""))


def render_ranks_json(report: RanksReport) -> bytes:
    return orjson.dumps(report.to_dict(),
                        option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n"


def render_ranks_markdown(report: RanksReport) -> str:
    from traceview.render.markdown import code, prose, table

    rows = []
    copies = _copies(report)
    cols = columns(report)
    for i, r in enumerate(report.ranks):
        cells = _row(r, copies=copies)
        cells[1] = code(cells[1])
        cells[-1] = prose(cells[-1])
        if i in report.stragglers:
            cells[0] = f"**{cells[0]}**"
            cells[-1] += " · **straggler**"
        rows.append(cells)
    out = [f"### {title_claims(report)[1].text}", "",
           table(list(cols), rows, "rl" + "r" * (len(cols) - 3) + "l"), "", "**Combined**", ""]
    out += [f"* {prose(line)}" for line in _summary_lines(report)]
    return "\n".join(out) + "\n"
