"""``traceview serve`` in the terminal: the run, correctness, figures, the A/B, the diagnosis."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from traceview.render.serve_common import (
    ATTRIBUTION_COLUMNS,
    DECODE_HEAD,
    FIGURE_LABELS,
    ab_title_claims,
    attribution_caption,
    attribution_rows,
    bisect_claims,
    correctness_claim,
    decode_claim,
    model_line,
    ns,
    pct,
    rate,
    reproducer_lines,
    signed_ns,
    versions_line,
    workload_line,
)
from traceview.render.text import laid_out


@laid_out
def render_serve_console(doc: dict[str, Any], console: Console) -> None:
    p = console.print
    p(f"[bold]model[/] {escape(model_line(doc))}")
    p(f"[bold]workload[/] {escape(workload_line(doc))}")
    p(f"[bold]engine[/] {escape(doc['workload']['engine'])}")
    for i, v in enumerate(doc["variants"]):
        p(f"[bold]{v['label']}[/] {escape(v['description'])}: "
          f"{escape(versions_line(v.get('environment')))}")
        p(f"  correctness: {escape(correctness_claim(doc, i).text)}")
        note = (v["correctness"].get("recheck") or v["correctness"]["check"]).get("note")
        if note:
            p(f"  [yellow]note:[/] {escape(note)}")
        if v["correctness"].get("bisect"):
            _bisect(console, doc, i)
        for line in reproducer_lines(v["correctness"]):
            p(f"  reproducer: {escape(line)}", soft_wrap=True)
    if doc.get("stopped"):
        p(f"[red]stopped:[/] {escape(doc['stopped'])}")
        return
    if doc.get("attribution"):
        _attribution(console, doc["attribution"])
    else:
        _figures(console, doc)
    if doc.get("ab"):
        _ab(console, doc)
    for i in range(len(doc["variants"])):
        _diagnosis(console, doc, i)


def _bisect(console: Console, doc: dict[str, Any], i: int) -> None:
    b = doc["variants"][i]["correctness"]["bisect"]
    title, caption, _ = bisect_claims(doc, i)
    t = Table(title=escape(title.text), title_justify="left")
    for col in ("op", "verdict", "detail"):
        t.add_column(col)
    for r in b["tested"]:
        if r["verdict"] == "ok":
            continue
        detail = (f"{r.get('phase')}: {r.get('error')}" if r["crashed"] or r.get("timed_out")
                  else "logits not finite" if r.get("logits_ratio") is None
                  else f"logits {r['logits_ratio']:.2g} x max |logit|")
        t.add_row(escape(r["op"]), r["verdict"], escape(str(detail)))
    t.caption = escape(caption.text)
    console.print(t)


def _figures(console: Console, doc: dict[str, Any]) -> None:
    t = Table(title="median over fresh-process repetitions (per repetition: percentiles "
                    "over its requests)", title_justify="left")
    t.add_column("figure")
    for v in doc["variants"]:
        t.add_column(f"{v['label']}: {v['backend']}", justify="right")
    sums = [v["summary"] for v in doc["variants"]]
    t.add_row("repetitions", *[str(s["repetitions"]) for s in sums])
    t.add_row("output tokens/s", *[rate(s["output_tokens_per_s"]) for s in sums])
    t.add_row("requests/s", *[rate(s["requests_per_s"]) for s in sums])
    t.add_row("wall", *[ns(s["wall_ns"]) for s in sums])
    for lat, label in (("ttft", "TTFT"), ("tpot", "TPOT"), ("e2e", "E2E")):
        for p in ("p50", "p90", "p99"):
            t.add_row(f"{label} {p}", *[ns(s["latency_ns"][lat][p]) for s in sums])
    console.print(t)


def _ab(console: Console, doc: dict[str, Any]) -> None:
    ab = doc["ab"]
    t = Table(title=escape(ab_title_claims(doc)[0].text), title_justify="left")
    for col in ("figure", "A median", "B median", "B - A", "interval", "B/A", "B faster",
                "verdict"):
        t.add_column(col, justify="left" if col in ("figure", "verdict") else "right")
    for key, row in ab["figures"].items():
        ci = ("-" if row["ci_low_ns"] is None else
              f"{signed_ns(row['ci_low_ns'])} .. {signed_ns(row['ci_high_ns'])} "
              f"({pct(row['confidence'])})")
        t.add_row(FIGURE_LABELS.get(key, key), ns(row["a_median_ns"]), ns(row["b_median_ns"]),
                  signed_ns(row["estimate_ns"]), ci, pct(row["relative"], signed=True),
                  f"{row['b_faster_rounds']}/{ab['rounds']}", row["verdict"])
    t.caption = (ab["throughput_note"] + ("; both sides generated identical tokens"
                                          if ab["same_tokens"] else
                                          "; the sides generated different tokens"))
    console.print(t)


def _diagnosis(console: Console, doc: dict[str, Any], i: int) -> None:
    v = doc["variants"][i]
    d = v.get("diagnosis")
    if not d:
        return
    if "error" in d:
        console.print(f"[yellow]diagnosis {v['label']}:[/] {escape(d['error'])}")
        return
    dec = d["decode"]
    said = decode_claim(doc, i)
    assert said is not None  # a diagnosis with its decode block
    line = Text(said.text)
    line.stylize("bold", 0, len(DECODE_HEAD.format(label=v["label"], backend=v["backend"])))
    console.print(line)
    cats = ", ".join(f"{k} {ns(val)}" for k, val in
                     list(dec["host_categories_per_step_ns"].items())[:5])
    console.print(f"  host per step: {escape(cats)}")
    ops = ", ".join(f"{o['name'].removeprefix('aten::')} {ns(o['total_ns_per_step'])} "
                    f"(x{o['calls_per_step']:g})" for o in dec["host_ops_per_step"][:8])
    console.print(f"  ops per step (host, inclusive): {escape(ops)}")
    console.print(f"  [dim]trace: {escape(d['trace'])}[/]", soft_wrap=True)


#: Columns a narrow terminal keeps (TTFT and wall are in the sentences below the table).
NARROW_COLUMNS = ("part", "TPOT p50", "interval", "share", "host/step B")


def _attribution(console: Console, att: dict[str, Any]) -> None:
    keep = ATTRIBUTION_COLUMNS if console.width >= 110 else NARROW_COLUMNS
    at = [ATTRIBUTION_COLUMNS.index(c) for c in keep]
    t = Table(title="attribution: the swap's effect split by op (B config - eager in the "
                    "same process, Hodges-Lehmann, exact signed-rank interval)",
              title_justify="left", box=box.SIMPLE_HEAD)
    for col in keep:
        t.add_column(col, justify="left" if col == "part" else "right",
                     overflow="fold")
    for row in attribution_rows(att):
        t.add_row(*[escape(row[i]) for i in at])
    t.caption = attribution_caption(att)
    t.caption_justify = "left"
    console.print(t)
    for c in att["claims"]:
        console.print(escape(c["text"]))
