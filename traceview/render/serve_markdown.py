"""``traceview serve --format md``: GitHub-ready, filling the reproducer template's serving line.

The first line after the heading is the template's ``Serving result, if measured:``
field, filled from the same numbers as the tables below it.
"""

from __future__ import annotations

from typing import Any

from traceview.render.serve_common import (
    ATTRIBUTION_COLUMNS,
    FIGURE_LABELS,
    ab_title_claims,
    attribution_caption,
    attribution_rows,
    bisect_claims,
    correctness_claim,
    model_line,
    ns,
    pct,
    protocol_claim,
    rate,
    reproducer_lines,
    result_sentence,
    signed_ns,
    versions_line,
    workload_line,
)


def esc(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").replace("<", "&lt;")


def _protocol_line(doc: dict[str, Any]) -> str:
    """The protocol field (its ``serve-protocol`` claim's text)."""
    return f"- Protocol: {esc(protocol_claim(doc).text)}"


def render_serve_markdown(doc: dict[str, Any]) -> str:
    lines = ["## Serving workload (traceview serve)", "",
             f"Serving result, if measured: {esc(result_sentence(doc))}", "",
             f"- Model: {esc(model_line(doc))}",
             f"- Workload: {esc(workload_line(doc))}",
             f"- Engine: {esc(doc['workload']['engine'])}",
             _protocol_line(doc)]
    if doc.get("command"):
        lines.append(f"- Command: `{' '.join(doc['command'])}`")
    for i, v in enumerate(doc["variants"]):
        lines.append(f"- {v['label']} = {esc(v['description'])}: "
                     f"{esc(versions_line(v.get('environment')))}; correctness: "
                     f"{esc(correctness_claim(doc, i).text)}")
        b = v["correctness"].get("bisect")
        if b:
            bad = [r for r in b["tested"] if r["verdict"] != "ok"]
            lines.append(f"  - {esc(bisect_claims(doc, i)[2].text)}"
                         + "".join(f"; `{esc(r['op'])}` {r['verdict']}"
                                   + (f" ({esc(r.get('error'))})" if r["crashed"] or r.get("timed_out") else "")
                                   for r in bad))
        lines += [f"  - reproducer: {esc(x)}" for x in reproducer_lines(v["correctness"])]
    if doc.get("stopped"):
        lines += ["", f"**Stopped:** {esc(doc['stopped'])}", ""]
        return "\n".join(lines) + "\n"
    if doc.get("attribution"):
        return "\n".join(lines + _attribution(doc["attribution"])) + "\n"
    lines += ["", "| figure | " + " | ".join(f"{v['label']}: {esc(v['backend'])}"
                                            for v in doc["variants"]) + " |",
              "| --- |" + " ---: |" * len(doc["variants"])]
    sums = [v["summary"] for v in doc["variants"]]
    rows = [("output tokens/s", [rate(s["output_tokens_per_s"]) for s in sums]),
            ("requests/s", [rate(s["requests_per_s"]) for s in sums])]
    for lat, label in (("ttft", "TTFT"), ("tpot", "TPOT"), ("e2e", "E2E")):
        for p in ("p50", "p90", "p99"):
            rows.append((f"{label} {p}", [ns(s["latency_ns"][lat][p]) for s in sums]))
    lines += [f"| {name} | " + " | ".join(vals) + " |" for name, vals in rows]
    if doc.get("ab"):
        ab = doc["ab"]
        lines += ["", esc(ab_title_claims(doc)[1].text), "",
                  "| figure | A | B | B - A | interval | B/A | verdict |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
        for key, r in ab["figures"].items():
            ci = ("-" if r["ci_low_ns"] is None else
                  f"{signed_ns(r['ci_low_ns'])} .. {signed_ns(r['ci_high_ns'])} "
                  f"({pct(r['confidence'])})")
            lines.append(f"| {FIGURE_LABELS.get(key, key)} | {ns(r['a_median_ns'])} | "
                         f"{ns(r['b_median_ns'])} | {signed_ns(r['estimate_ns'])} | {ci} | "
                         f"{pct(r['relative'], signed=True)} | {r['verdict']} |")
    diag = [(v, v.get("diagnosis")) for v in doc["variants"]]
    if any(d and "decode" in d for _, d in diag):
        lines += ["", "Profiled decode step (traceview explain over the decode ranges):", "",
                  ("| side | step p50 | device busy | host overhead p50 | launches/step | "
                  "top host categories per step |"),
                  "| --- | ---: | ---: | ---: | ---: | --- |"]
        for v, d in diag:
            if not d or "decode" not in d:
                continue
            dec = d["decode"]
            cats = ", ".join(f"{k} {ns(x)}" for k, x in
                             list(dec["host_categories_per_step_ns"].items())[:4])
            lines.append(f"| {v['label']}: {esc(v['backend'])} | "
                         f"{ns((dec.get('step_ns') or {}).get('p50'))} | "
                         f"{pct(dec['device_busy_share'])} | "
                         f"{ns((dec.get('step_host_overhead_ns') or {}).get('p50'))} | "
                         f"{dec['launches_per_step']} | {esc(cats)} |")
        for v, d in diag:
            if not d or "decode" not in d:
                continue
            ops = ", ".join(f"`{esc(o['name'].removeprefix('aten::'))}` "
                            f"{ns(o['total_ns_per_step'])} (x{o['calls_per_step']:g})"
                            for o in d["decode"]["host_ops_per_step"][:8])
            lines.append(f"\n{v['label']} host time per decode step by op (inclusive): {ops}")
            lines.append(f"(trace: `{esc(d['trace'])}`; `{esc(d['explain_command'])}`)")
    return "\n".join(lines) + "\n"


def _attribution(att: dict[str, Any]) -> list[str]:
    lines = ["", "Attribution: the swap's effect split by op (B config - eager in the same "
             "process):", "", "| " + " | ".join(ATTRIBUTION_COLUMNS) + " |",
             "| --- |" + " ---: |" * (len(ATTRIBUTION_COLUMNS) - 1)]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in attribution_rows(att)]
    lines += ["", esc(attribution_caption(att)), ""]
    lines += [f"- {esc(c['text'])}" for c in att["claims"]]
    return lines
