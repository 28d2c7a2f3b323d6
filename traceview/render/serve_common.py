"""What the serving renderers share: number formats, row labels and the one-line result.

Everything reads the ``traceview serve`` JSON document (docs/serving.md), so the terminal,
markdown and any later renderer say the same thing from the same numbers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from traceview.report.claims import Claim

FIGURE_LABELS = {
    "wall": "wall (both throughputs)",
    "ttft_p50": "TTFT p50", "ttft_p90": "TTFT p90", "ttft_p99": "TTFT p99",
    "tpot_p50": "TPOT p50", "tpot_p90": "TPOT p90", "tpot_p99": "TPOT p99",
    "e2e_p50": "E2E p50", "e2e_p90": "E2E p90", "e2e_p99": "E2E p99",
}


def ns(value: float | None) -> str:
    """850 ns, 51.2 us, 12.3 ms, 1.52 s; signed values keep their sign."""
    if value is None:
        return "-"
    v = float(value)
    a = abs(v)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if a >= scale:
            return f"{v / scale:.3g} {unit}" if a < 100 * scale else f"{v / scale:.0f} {unit}"
    return f"{v:.0f} ns"


def signed_ns(value: float | None) -> str:
    if value is None:
        return "-"
    return ("+" if value > 0 else "") + ns(value)


def pct(x: float | None, *, signed: bool = False) -> str:
    if x is None:
        return "-"
    return f"{100 * x:+.1f}%" if signed else f"{100 * x:.1f}%"


def rate(x: float | None) -> str:
    return "-" if x is None else f"{x:,.1f}"


def workload_line(doc: dict[str, Any]) -> str:
    w = doc["workload"]
    arrival = "offline (all at once)" if w["arrival"] == "offline" else \
        f"Poisson at {w['rate']:g} req/s (seed {w['seed']})"
    return (f"{w['requests']} requests x ({w['prompt_len']} prompt + {w['output_len']} output "
            f"tokens), batch {w['batch_size']}, {arrival}; warm-up "
            f"{w['warmup_batches']} batch(es) excluded")


def model_line(doc: dict[str, Any]) -> str:
    m = doc["model"]
    return (f"Llama-style, random weights (seed {m['seed']}): {m['layers']} layers, hidden "
            f"{m['hidden']}, {m['heads']}/{m['kv_heads']} heads, MLP {m['intermediate']}, "
            f"vocab {m['vocab']}; {m['params'] / 1e6:.1f} M params, "
            f"{m['bytes'] / 2**20:.0f} MiB {m['dtype']} on {m['device']}")


def versions_line(env: dict[str, Any] | None) -> str:
    if not env:
        return "versions not recorded"
    parts = [f"{k} {env[k]}" for k in ("torch", "transformers", "triton", "flag_gems", "python")
             if env.get(k)]
    dev = (env.get("device") or {}).get("name")
    return ", ".join(parts) + (f"; {dev}" if dev else "")


def correctness_line(block: dict[str, Any]) -> str:
    """One line per variant's correctness block."""
    c = block.get("recheck") or block["check"]
    status = c["status"]
    if status == "reference":
        return "reference (torch eager)"
    if status == "crashed":
        return f"CRASHED in {c.get('phase')}: {c.get('error')}"
    if status == "timeout":
        return f"TIMED OUT (not shown wrong): {c.get('error')}"
    lg, tk = c["logits"], c["tokens"]
    if lg["ratio"] is None:
        dist = "not finite" if not lg["finite"] else "undefined (reference logits all 0)"
    else:
        dist = f"max |diff| {lg['max_abs_diff']:.3g} = {lg['ratio']:.2g} x max |logit|"
    head = (f"{'passed' if status == 'passed' else 'FAILED'}: first-step logits {dist} "
            f"(tolerance {lg['tolerance']:g}), top-1 agree {lg['top1_agree']}/{lg['rows']}; ")
    if tk["earliest_divergence"] is None:
        head += f"greedy tokens identical for {tk['steps']} steps"
    else:
        head += (f"greedy tokens identical in {tk['identical_rows']}/{tk['rows']} requests, "
                 f"first divergence at step {tk['earliest_divergence']}")
    if block.get("excluded_after_bisect"):
        head += f" (after excluding {', '.join(block['excluded_after_bisect'])})"
    return head


def correctness_claim(doc: dict[str, Any], i: int) -> Claim:
    """Variant ``i``'s correctness line (``correctness_line``'s words) as a claim over the
    serve document: the logits' error over the reference's largest logit is the ratio
    shown, within the tolerance where it says passed and beyond it where FAILED (a wrong
    answer), the
    rows whose top-1 agrees and whose tokens are identical some of the rows, the first
    divergence inside the steps generated. A reference, a crash or a timeout cites no
    figure."""
    from traceview.report.claims import Claim, Figure, Relation, pointer, rel

    block = doc["variants"][i]["correctness"]
    key = "recheck" if block.get("recheck") else "check"
    c = block[key]
    text = correctness_line(block)
    if c["status"] in ("reference", "crashed", "timeout"):
        return Claim("serve-correctness", text, ())
    at = ("variants", i, "correctness", key)
    lg, tk = c["logits"], c["tokens"]
    figs = [Figure(name, lg[name], pointer(*at, "logits", name))
            for name in ("max_abs_diff", "max_abs_ref", "ratio", "tolerance", "top1_agree",
                         "rows")]
    figs += [Figure(f"tokens.{name}", tk[name], pointer(*at, "tokens", name))
             for name in ("steps", "rows", "identical_rows", "earliest_divergence")]
    rels: list[Relation] = [rel("le", "top1_agree", "rows"),
                            rel("le", "tokens.identical_rows", "tokens.rows")]
    if lg["ratio"] is not None:
        rels += [rel("ratio", "max_abs_diff", "max_abs_ref", "ratio"),
                 rel("le" if c["status"] == "passed" else "gt", "ratio", "tolerance")]
    if tk["earliest_divergence"] is None:
        rels.append(rel("eq", "tokens.identical_rows", "tokens.rows"))
    else:
        rels += [rel("lt", "tokens.identical_rows", "tokens.rows"),
                 rel("lt", "tokens.earliest_divergence", "tokens.steps")]
    return Claim("serve-correctness", text, tuple(figs), tuple(rels))


def bisect_claims(doc: dict[str, Any], i: int) -> tuple[Claim, Claim, Claim]:
    """Variant ``i``'s bisect in words, as claims over the serve document: the terminal
    table's title (``serve-bisect-title``: the ops tried one at a time, the processes
    that ran them), its caption (``serve-bisect-caption``: the ops that passed alone, the
    culprits) and the markdown's line (``serve-bisect-line``: the ops, the culprits; the
    renderer adds each failing op in a code span). Each culprit is a row of the ops tried
    that crashed or answered wrong (its row cited), the ops passed and the culprits some
    of those tried, those tried some of the candidates."""
    from traceview.report.claims import Claim, Figure, Relation, pointer, rel

    b = doc["variants"][i]["correctness"]["bisect"]
    at = ("variants", i, "correctness", "bisect")
    rows = b["tested"]
    ok = sum(1 for r in rows if r["verdict"] == "ok")
    figs = [Figure("candidates", len(b["candidates"])), Figure("tested", len(rows)),
            Figure("ok", ok), Figure("culprits", len(b["culprits"])),
            Figure("children", b["children"], pointer(*at, "children")), Figure("one", 1),
            Figure("no", value=False), Figure("yes", value=True)]
    rels: list[Relation] = [rel("sum", "ok", "culprits", "ok_or_culprit"),
                            rel("le", "ok_or_culprit", "tested"),
                            rel("le", "tested", "candidates"), rel("ge", "children", "one")]
    figs.append(Figure("ok_or_culprit", ok + len(b["culprits"])))
    row_of = {r["op"]: k for k, r in enumerate(rows)}
    for j, op in enumerate(b["culprits"]):
        k = row_of[op]
        name = f"culprit:{j}"
        if rows[k].get("crashed"):  # crashed alone
            figs.append(Figure(name, rows[k]["crashed"], pointer(*at, "tested", k, "crashed")))
            rels.append(rel("eq", name, "yes"))
        else:  # a wrong answer alone
            figs.append(Figure(name, rows[k].get("passed"), pointer(*at, "tested", k, "passed")))
            rels.append(rel("eq", name, "no"))
    figs_t, rels_t = tuple(figs), tuple(rels)
    culprits = ", ".join(b["culprits"]) or "none"
    caption = f"{ok} ops passed alone; culprits: {culprits}"
    if b.get("incomplete"):
        caption += f"; incomplete: {b['incomplete']}"
    return (Claim("serve-bisect-title", f"bisect: {len(b['candidates'])} ops the model calls, "
                  f"enabled one at a time ({b['children']} processes)", figs_t, rels_t),
            Claim("serve-bisect-caption", caption, figs_t, rels_t),
            Claim("serve-bisect-line", f"bisect over {len(b['candidates'])} ops: culprits "
                  f"{culprits}", figs_t, rels_t))


def protocol_claim(doc: dict[str, Any]) -> Claim:
    """The markdown's protocol field (after ``Protocol:``) as a claim over the serve
    document: with ``--attribute``, each screening stage's processes and the final
    stage's cited against ``screen_rounds`` and ``rounds``; else the processes per side,
    each side's repetitions and the A/B's rounds at most those asked for."""
    from traceview.report.claims import Claim, Figure, Relation, pointer, rel

    att = doc.get("attribution")
    figs: list[Figure] = []
    rels: list[Relation] = []
    if att is not None:
        screens = sum(1 for s in att["stages"] if s["kind"] == "screen")
        figs += [Figure("screens", screens),
                 Figure("screen_rounds", att["screen_rounds"],
                        pointer("attribution", "screen_rounds")),
                 Figure("rounds", att["rounds"], pointer("attribution", "rounds"))]
        for i, s in enumerate(att["stages"]):
            figs.append(Figure(f"stage:{i}", s["rounds"],
                               pointer("attribution", "stages", i, "rounds")))
            rels.append(rel("eq", f"stage:{i}",
                            "screen_rounds" if s["kind"] == "screen" else "rounds"))
        passes = att.get("baseline_passes", 1)
        if passes > 1:
            figs.append(Figure("eager_passes", passes, pointer("attribution", "baseline_passes")))
            # the passes each round's order ran, counted from its names (eager, eager#2, ...)
            for i, s in enumerate(att["stages"]):
                for r, order in enumerate(s["orders"]):
                    figs.append(Figure(f"eager_in:{i}:{r}", sum(
                        1 for n in order if n.split("#", 1)[0] == "eager")))
                    rels.append(rel("eq", f"eager_in:{i}:{r}", "eager_passes"))
        return Claim("serve-protocol", (
            f"correctness against torch eager first; then {screens} screening stage(s) of "
            f"{att['screen_rounds']} and {att['rounds']} fresh processes, each measuring "
            f"{eager_words(att)}, the whole swap and every part in its own order"),
            tuple(figs), tuple(rels))
    rounds = doc["protocol"]["rounds"]
    figs.append(Figure("rounds", rounds, pointer("protocol", "rounds")))
    for i, v in enumerate(doc["variants"]):
        reps = (v.get("summary") or {}).get("repetitions")
        if reps is not None:
            figs.append(Figure(f"repetitions:{i}", reps,
                               pointer("variants", i, "summary", "repetitions")))
            rels.append(rel("le", f"repetitions:{i}", "rounds"))
    if doc.get("ab"):
        figs.append(Figure("ab_rounds", doc["ab"]["rounds"], pointer("ab", "rounds")))
        rels.append(rel("le", "ab_rounds", "rounds"))
    return Claim("serve-protocol", f"{rounds} fresh process(es) per side"
                 + (", interleaved by round" if doc.get("ab") else "")
                 + "; correctness against torch eager first", tuple(figs), tuple(rels))


def ab_title_claims(doc: dict[str, Any]) -> tuple[Claim, Claim]:
    """The A/B table's titles as claims over the serve document: the terminal's
    (``serve-ab-title``) and the markdown's (``serve-ab-heading``), each the rounds the
    comparison is over, at most the processes per side asked for, and each figure's
    rounds B was faster in some of them."""
    from traceview.report.claims import Claim, Figure, Relation, pointer, rel

    ab = doc["ab"]
    figs = [Figure("rounds", ab["rounds"], pointer("ab", "rounds")),
            Figure("asked", doc["protocol"]["rounds"], pointer("protocol", "rounds"))]
    rels: list[Relation] = [rel("le", "rounds", "asked")]
    for key, row in ab["figures"].items():
        figs.append(Figure(f"{key}.faster", row["b_faster_rounds"],
                           pointer("ab", "figures", key, "b_faster_rounds")))
        rels.append(rel("le", f"{key}.faster", "rounds"))
    return (Claim("serve-ab-title", f"A/B: B - A over {ab['rounds']} interleaved rounds "
                  "(Hodges-Lehmann, exact signed-rank interval)", tuple(figs), tuple(rels)),
            Claim("serve-ab-heading", f"A/B, B - A over {ab['rounds']} interleaved rounds:",
                  tuple(figs), tuple(rels)))


def result_sentence(doc: dict[str, Any]) -> str:
    """The reproducer template's "Serving result, if measured:" line (``result_claim``'s
    text)."""
    return result_claim(doc).text


def _interval_claim(c: Any, row: dict[str, Any], at: tuple[str | int, ...], tag: str) -> None:
    """A row's estimate and interval as the line shows them: the interval holds the
    estimate and lies on the side of zero the row's verdict says."""
    from traceview.report.claims import pointer, rel

    for key in ("estimate_ns", "ci_low_ns", "ci_high_ns", "a_median_ns", "b_median_ns"):
        c.fig(f"{tag}.{key}", row[key], pointer(*at, key))
    if row["ci_low_ns"] is None:
        return
    c.fig(f"{tag}.confidence", row["confidence"], pointer(*at, "confidence"))
    lo, est, hi = f"{tag}.ci_low_ns", f"{tag}.estimate_ns", f"{tag}.ci_high_ns"
    c.rels += [rel("le", lo, est), rel("le", est, hi)]
    word = row["verdict"]
    if word == "B faster":
        c.rels.append(rel("lt", hi, "zero"))
    elif word == "B slower":
        c.rels.append(rel("gt", lo, "zero"))
    else:
        c.rels += [rel("le", lo, "zero"), rel("ge", hi, "zero")]


class _Cited:
    """The figures and relations of the result line as it is written."""

    def __init__(self) -> None:
        from traceview.report.claims import Figure, Relation

        self.figs: list[Figure] = [Figure("zero", 0)]
        self.rels: list[Relation] = []

    def fig(self, name: str, value: Any, path: str | None = None) -> None:
        from traceview.report.claims import Figure

        self.figs.append(Figure(name, value, path))


def result_claim(doc: dict[str, Any]) -> Claim:
    """The one-line serving result as a claim over the serve document: each figure it
    shows cited where the document holds it (``/ab/figures/wall/ci_low_ns``), each A/B
    row's interval around its estimate on the side of zero its verdict says."""
    from traceview.report.claims import Claim, pointer

    c = _Cited()
    if not doc.get("measured"):
        return Claim("serve-result", f"not measured: {doc.get('stopped') or 'no repetitions'}",
                     ())
    variants = doc["variants"]
    env = variants[0].get("environment") or {}
    c.fig("params", doc["model"]["params"], "/model/params")
    head = (f"transformers {env.get('transformers')} generate() (greedy, KV cache, static "
            f"batching), {doc['model']['params'] / 1e6:.3g} M-param Llama-style random "
            f"weights, {doc['model']['dtype']} on {(env.get('device') or {}).get('name')}; "
            f"{workload_line(doc)}")
    att = doc.get("attribution")
    if att is not None:  # the split's own claims cite its figures; this line repeats the first
        c.fig("rounds", att["rounds"], "/attribution/rounds")
        if att.get("baseline_passes", 1) > 1:
            c.fig("eager_passes", att["baseline_passes"], "/attribution/baseline_passes")
        return Claim("serve-result", (
            f"{head}. A = {variants[0]['description']}, B = {variants[1]['description']}"
            f", split by op over {att['rounds']} fresh processes (each measuring "
            f"{eager_words(att)}, the whole swap and every part): "
            + " ".join(c["text"] for c in att["claims"][:1])), tuple(c.figs), tuple(c.rels))
    if doc.get("ab") is None:
        s = variants[0]["summary"]
        lat = s["latency_ns"]
        at = ("variants", 0, "summary")
        c.fig("repetitions", s["repetitions"], pointer(*at, "repetitions"))
        for key in ("output_tokens_per_s", "requests_per_s"):
            c.fig(key, s[key], pointer(*at, key))
        for key in ("ttft", "tpot", "e2e"):
            c.fig(f"{key}_p50", lat[key]["p50"], pointer(*at, "latency_ns", key, "p50"))
        return Claim("serve-result", (
            f"{head}. {variants[0]['description']}, median of {s['repetitions']} fresh "
            f"processes: {rate(s['output_tokens_per_s'])} output tok/s, "
            f"{rate(s['requests_per_s'])} req/s, TTFT p50 {ns(lat['ttft']['p50'])}, "
            f"TPOT p50 {ns(lat['tpot']['p50'])}, E2E p50 {ns(lat['e2e']['p50'])}."),
            tuple(c.figs), tuple(c.rels))
    ab = doc["ab"]
    a, b = variants
    f = ab["figures"]
    c.fig("rounds", ab["rounds"], "/ab/rounds")
    parts = []
    for key, label in (("wall", "output throughput"), ("tpot_p50", "TPOT p50"),
                       ("ttft_p50", "TTFT p50")):
        row = f[key]
        _interval_claim(c, row, ("ab", "figures", key), key)
        if key == "wall":
            for side, v in (("a", a), ("b", b)):
                c.fig(f"{side}.tok_per_s", v["summary"]["output_tokens_per_s"],
                      pointer("variants", 0 if side == "a" else 1, "summary",
                              "output_tokens_per_s"))
            vals = (f"{rate(a['summary']['output_tokens_per_s'])} -> "
                    f"{rate(b['summary']['output_tokens_per_s'])} tok/s")
        else:
            vals = f"{ns(row['a_median_ns'])} -> {ns(row['b_median_ns'])}"
        ci = (f"{ab['rounds']} rounds give no {pct(1 - ab['alpha'])} interval"
              if row["ci_low_ns"] is None else
              f"{signed_ns(row['ci_low_ns'])}..{signed_ns(row['ci_high_ns'])} at "
              f"{pct(row['confidence'])}")
        parts.append(f"{label} {vals} ({row['verdict']}; "
                     f"{'wall ' if key == 'wall' else ''}B-A {signed_ns(row['estimate_ns'])}, "
                     f"{ci})")
    out = (f"{head}. A = {a['description']}, B = {b['description']}, {ab['rounds']} "
           f"interleaved fresh-process rounds: " + "; ".join(parts) + ".")
    busy = [((v.get("diagnosis") or {}).get("decode") or {}).get("device_busy_share")
            for v in variants]
    if all(x is not None for x in busy):
        for i, x in enumerate(busy):
            c.fig(f"busy:{i}", x, pointer("variants", i, "diagnosis", "decode",
                                          "device_busy_share"))
        out += f" Device busy during decode (profiled): {pct(busy[0])} -> {pct(busy[1])}."
    return Claim("serve-result", out, tuple(c.figs), tuple(c.rels))


ATTRIBUTION_COLUMNS = ("part", "TPOT p50", "interval", "share", "TTFT p50", "wall",
                       "host/step B", "host/step A")


def _ci(e: dict[str, Any]) -> str:
    if e["ci_low_ns"] is None:
        return "-"
    return (f"{signed_ns(e['ci_low_ns'])}..{signed_ns(e['ci_high_ns'])}"
            + (" *" if e["excludes_zero"] else ""))


def attribution_rows(att: dict[str, Any]) -> list[tuple[str, ...]]:
    """The attribution table: each part, the interaction, the whole (whose row the
    others add up to exactly), with the profiled host time per step beside each part."""
    rows: list[tuple[str, ...]] = []
    for p in att["parts"]:
        f = p["figures"]
        rows.append((p["name"], signed_ns(f["tpot_p50"]["estimate_ns"]), _ci(f["tpot_p50"]),
                     pct(p["share_of_whole"]), signed_ns(f["ttft_p50"]["estimate_ns"]),
                     signed_ns(f["wall"]["estimate_ns"]), ns(p["host_ns_per_step_b"]),
                     ns(p["host_ns_per_step_a"])))
    for label, e in (("interaction", att["interaction"]), ("whole swap", att["whole"])):
        rows.append((label, signed_ns(e["tpot_p50"]["estimate_ns"]), _ci(e["tpot_p50"]), "",
                     signed_ns(e["ttft_p50"]["estimate_ns"]), signed_ns(e["wall"]["estimate_ns"]),
                     "", ""))
    return rows


def attribution_caption(att: dict[str, Any]) -> str:
    """The attribution table's caption (``attribution_caption_claim``'s text)."""
    return attribution_caption_claim(att).text


def eager_words(att: dict[str, Any]) -> str:
    """How a process measured eager: once, or ``baseline_passes`` times with the median
    as the round's baseline (documents written before the repeat have no field: once)."""
    passes = att.get("baseline_passes", 1)
    return "eager" if passes <= 1 else f"eager {passes} times for a median baseline"


def attribution_caption_claim(att: dict[str, Any], root: str = "attribution") -> Claim:
    """The attribution table's caption as a claim over the serve document: the candidate
    ops (counted from ``units``), each screening stage of ``screen_rounds`` processes and
    the final one of ``rounds`` (each stage's own rounds cited), and, per figure, the
    parts and the interaction adding up to the whole exactly, as the caption says."""
    from traceview.report.claims import Claim, Figure, Relation, pointer, rel

    stages = att["stages"]
    screens = sum(1 for s in stages if s["kind"] == "screen")
    figs = [Figure("units", len(att["units"])), Figure("screens", screens),
            Figure("screen_rounds", att["screen_rounds"], pointer(root, "screen_rounds")),
            Figure("rounds", att["rounds"], pointer(root, "rounds"))]
    if att.get("baseline_passes", 1) > 1:
        figs.append(Figure("eager_passes", att["baseline_passes"],
                           pointer(root, "baseline_passes")))
    rels: list[Relation] = []
    for i, s in enumerate(stages):
        figs.append(Figure(f"stage:{i}", s["rounds"], pointer(root, "stages", i, "rounds")))
        rels.append(rel("eq", f"stage:{i}",
                        "screen_rounds" if s["kind"] == "screen" else "rounds"))
    for f in att["figures"]:
        names = []
        for k, p in enumerate(att["parts"]):
            names.append(f"{f}.part{k}")
            figs.append(Figure(names[-1], p["figures"][f]["estimate_ns"],
                               pointer(root, "parts", k, "figures", f, "estimate_ns")))
        for key in ("interaction", "whole"):
            figs.append(Figure(f"{f}.{key}", att[key][f]["estimate_ns"],
                               pointer(root, key, f, "estimate_ns")))
        rels.append(rel("sum", *names, f"{f}.interaction", f"{f}.whole"))
    return Claim("serve-attribution-caption", (
        f"{len(att['units'])} candidate ops; {screens} screening stage(s) of "
        f"{att['screen_rounds']} processes, then {att['rounds']} processes measuring "
        f"{eager_words(att)}, the whole swap and every part; screening ended: "
        f"{att['screening_ended']}; * interval excludes zero; parts + interaction = "
        f"whole exactly; host/step: profiled self host time of the part's ATen ops "
        f"per decode step"), tuple(figs), tuple(rels))


DECODE_HEAD = "decode step, {label} {backend}"


def decode_claim(doc: dict[str, Any], i: int) -> Claim | None:
    """Variant ``i``'s profiled decode step in one line (``decode step, A eager
    (profiled, 2 steps): step p50 ...``) as a claim over the serve document: each figure
    cited in its ``diagnosis`` block, the device busy share its busy time over the decode
    window (the prefill's likewise), the host overhead's median at most the step's (a
    step's overhead is part of it). None where the variant was not profiled or its
    diagnosis failed."""
    from traceview.report.claims import Claim, Figure, Relation, pointer, rel

    v = doc["variants"][i]
    d = v.get("diagnosis")
    if not d or "decode" not in d:
        return None
    dec = d["decode"]
    at = ("variants", i, "diagnosis", "decode")
    step = dec.get("step_ns") or {}
    over = dec.get("step_host_overhead_ns") or {}
    pre = d.get("prefill") or {}
    figs = [Figure("steps", dec["steps"], pointer(*at, "steps")),
            Figure("busy_share", dec["device_busy_share"], pointer(*at, "device_busy_share")),
            Figure("launches_per_step", dec["launches_per_step"],
                   pointer(*at, "launches_per_step"))]
    rels: list[Relation] = []
    if dec["device_busy_share"] is not None:
        figs += [Figure("busy", dec["device_busy_ns"], pointer(*at, "device_busy_ns")),
                 Figure("window", dec["window_ns"], pointer(*at, "window_ns"))]
        rels.append(rel("ratio", "busy", "window", "busy_share"))
    if step.get("p50") is not None:
        figs.append(Figure("step_p50", step["p50"], pointer(*at, "step_ns", "p50")))
    if over.get("p50") is not None:
        figs.append(Figure("overhead_p50", over["p50"],
                           pointer(*at, "step_host_overhead_ns", "p50")))
        if step.get("p50") is not None:
            rels.append(rel("le", "overhead_p50", "step_p50"))
    if pre.get("device_busy_share") is not None:
        pat = ("variants", i, "diagnosis", "prefill")
        figs += [Figure("prefill_share", pre["device_busy_share"],
                        pointer(*pat, "device_busy_share")),
                 Figure("prefill_busy", pre["device_busy_ns"], pointer(*pat, "device_busy_ns")),
                 Figure("prefill_window", pre["window_ns"], pointer(*pat, "window_ns"))]
        rels.append(rel("ratio", "prefill_busy", "prefill_window", "prefill_share"))
    return Claim("serve-decode", (
        f"{DECODE_HEAD.format(label=v['label'], backend=v['backend'])} (profiled, "
        f"{dec['steps']} steps): step p50 {ns(step.get('p50'))}, device busy "
        f"{pct(dec['device_busy_share'])} of the decode window, host overhead p50 "
        f"{ns(over.get('p50'))}, {dec['launches_per_step']} launches per step; prefill "
        f"device busy {pct(pre.get('device_busy_share'))}"), tuple(figs), tuple(rels))


def reproducer_lines(block: dict[str, Any]) -> list[str]:
    """One line per wrong op's reproducer: its claim's sentence, its calls, its script."""
    found = block.get("reproducers")
    if isinstance(found, dict):
        return [f"reproducer: {found.get('error')}"]
    return [f"{r['claim']['text']}; calls: " + "; ".join(_call(c) for c in r["calls"][:3])
            + f"; script: {r.get('script')}" for r in found or []]


def _call(c: dict[str, Any]) -> str:
    tensors = [a for a in c["args"] if isinstance(a, dict) and "shape" in a]
    return (f"{c['aten']} " + " x ".join(str(a["shape"]) for a in tensors)
            + (f" {tensors[0]['dtype']}" if tensors else ""))
