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
    from traceview.multi.stragglers import Outlier

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


def distinct_names(names: list[str]) -> list[str]:
    """File names less the prefix and suffix they all share (``…``), so that in a narrow
    column ``trace_rank0_host1`` and ``trace_rank1_host1`` read ``…rank0…`` and ``…rank1…`` rather
    than two identical cuts; unchanged for one name or when nothing is shared."""
    if len(names) < 2:
        return names
    pre = len(os.path.commonprefix(names))
    suf = len(os.path.commonprefix([n[::-1] for n in names]))
    if pre + suf >= min(len(n) for n in names):  # one name inside another: keep them whole
        return names
    # cut at a separator, so the part kept is a word ("…worker0…", not "…0…")
    seps = "_-./ "
    pre = max((i + 1 for i, ch in enumerate(names[0][:pre]) if ch in seps), default=0)
    tail = names[0][len(names[0]) - suf:] if suf else ""
    suf = len(tail) - min((i for i, ch in enumerate(tail) if ch in seps), default=len(tail))
    pre = pre if pre > 3 else 0
    suf = suf if suf > 3 else 0
    return [("…" if pre else "") + n[pre: len(n) - suf] + ("…" if suf else "") for n in names]


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.1f}%"


def _value(metric: str, v: Any) -> str:
    if v is None:
        return "-"
    return _pct(v) if metric.endswith("_share") else fmt_ns(round(v))


def _relative(o: Outlier) -> str:
    if o.relative in (float("inf"), float("-inf")):
        return "median 0"
    return f"{100 * o.relative:+.0f}%"


def reason_text(o: Outlier) -> str:
    return (f"{METRIC_NAMES.get(o.metric, o.metric)} {_value(o.metric, o.value)} vs median "
            f"{_value(o.metric, o.median)} ({_relative(o)}, MAD {_value(o.metric, o.mad)})")


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
    lines = []
    ok, n = len(report.ok), len(report.ranks)
    med = report.metrics
    busy, api = med["device_busy_share"], med["api_p50_ns"]
    lines.append(f"{ok} of {n} ranks analysed · median device busy {_value('device_busy_share', busy['median'])}"
                 f" · median call API p50 {_value('api_p50_ns', api['median'])}")
    from traceview.multi.stragglers import (
        STRAGGLER_MAD_K,
        STRAGGLER_MIN_RANKS,
        STRAGGLER_MIN_RELATIVE,
    )

    if report.stragglers:
        for i, why in sorted(report.stragglers.items()):
            r = report.ranks[i]
            lines.append(f"straggler: rank {r.rank} ({_file(r.path)}): "
                         + "; ".join(reason_text(o) for o in why))
    elif max(busy["n"], api["n"]) < STRAGGLER_MIN_RANKS:
        lines.append(f"no straggler rule: it needs {STRAGGLER_MIN_RANKS} ranks with a value")
    else:
        lines.append(f"no stragglers (a rank stands out when more than {STRAGGLER_MAD_K:g} MAD "
                     f"and {100 * STRAGGLER_MIN_RELATIVE:.0f}% from the median)")
    for r in report.ok:
        for what in damage(r):
            lines.append(f"damaged: rank {r.rank} ({_file(r.path)}): {what}")
    for r in report.failed:
        lines.append(f"failed: rank {r.rank}: {r.error}")
    lines += [f"warning: {w}" for w in report.warnings]
    return lines


@laid_out
def render_ranks_console(report: RanksReport, console: Console) -> None:
    # No vertical rules, and every column but the file name kept at its widest cell: nine
    # columns fit in 80 with the numbers whole; a long file name is cut instead.
    copies = _copies(report)
    rows = [_row(r, copies=copies) for r in report.ranks]
    for cells, name in zip(rows, distinct_names([_short(c[1]) for c in rows]), strict=True):
        cells[1] = name
    table = Table(title=f"Ranks ({len(report.ranks)} traces)", title_justify="left",
                  box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                  collapse_padding=True)
    for j, col in enumerate(columns(report)):
        if col == "file":  # wraps rather than cuts: rows must stay tellable apart
            table.add_column(col, overflow="fold", ratio=1,
                             min_width=min(12, max(len(r[j]) for r in rows)))
            continue
        widest = max([len(r[j]) for r in rows] + [len(w) for w in col.split()])
        # a two-word header on two lines: the column is as wide as its numbers
        table.add_column(col.replace(" ", "\n"), justify="left" if col == "verdict" else "right",
                         no_wrap=True, min_width=widest)
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
    from traceview.render.markdown import code, esc, table

    rows = []
    copies = _copies(report)
    cols = columns(report)
    for i, r in enumerate(report.ranks):
        cells = _row(r, copies=copies)
        cells[1] = code(cells[1])
        cells[-1] = esc(cells[-1])
        if i in report.stragglers:
            cells[0] = f"**{cells[0]}**"
            cells[-1] += " · **straggler**"
        rows.append(cells)
    out = [f"### traceview: {len(report.ranks)} ranks", "",
           table(list(cols), rows, "rl" + "r" * (len(cols) - 3) + "l"), "", "**Combined**", ""]
    out += [f"* {esc(line)}" for line in _summary_lines(report)]
    return "\n".join(out) + "\n"
