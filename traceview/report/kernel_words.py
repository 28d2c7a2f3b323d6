"""The kernels a call launched, in words: one line per variant (``describe``) and how two
variants differ (``differences``). The figures (names, grids, blocks, counts) come from
``analyses.kernels_used``; the sentences are made here, in the report layer, so that
analyses compute figures and never words."""

from __future__ import annotations

from typing import Any

from traceview.report.claims import Claim, Figure, Relation, pointer, rel


def _dims(v: list[int] | None) -> str:
    return "(" + ", ".join(map(str, v)) + ")" if v else "?"


def describe(block: dict[str, Any] | None, limit: int = 4) -> str:
    """One line: ``add_kernel grid (16, 1, 1) block (128, 1, 1) x1`` per kernel."""
    if not block:
        return "not recorded"
    if block.get("note"):
        return str(block["note"])
    ks = block.get("kernels") or []
    if not ks:
        return "no device work launched"
    parts = [f"{k['name']} grid {_dims(k['grid'])} block {_dims(k['block'])} x{k['count']}"
             if k["kind"] == "kernel" else f"{k['kind']} {k['name']} x{k['count']}"
             for k in ks[:limit]]
    more = f" (+{len(ks) - limit} more)" if len(ks) > limit else ""
    vary = "" if block.get("same_every_call", True) else \
        f"; NOT the same in all {block.get('calls')} probed calls"
    return "; ".join(parts) + more + vary


def describe_claim(cid: str, lead: str, block: dict[str, Any] | None, at: tuple[str, ...],
                   limit: int = 4) -> Claim:
    """``lead`` and ``describe``'s line as a claim over the document holding ``block`` at
    ``at``: each kernel's count per call it shows, the kernels it leaves out (all of
    them counted: the block's list) and the probed calls where they varied."""
    figs: list[Figure] = []
    rels: list[Relation] = []
    if block and not block.get("note"):
        ks = block.get("kernels") or []
        figs += [Figure(f"count:{i}", k["count"], pointer(*at, "kernels", i, "count"))
                 for i, k in enumerate(ks[:limit])]
        if len(ks) > limit:
            figs += [Figure("kernels", len(ks), pointer(*at, "kernels")),
                     Figure("shown", limit), Figure("rest", len(ks) - limit)]
            rels.append(rel("sum", "shown", "rest", "kernels"))
        if ks and not block.get("same_every_call", True):
            figs.append(Figure("calls", block.get("calls"), pointer(*at, "calls")))
    return Claim(cid, lead + describe(block, limit), tuple(figs), tuple(rels))


def differences(a: dict[str, Any] | None, b: dict[str, Any] | None,
                names: tuple[str, str] = ("A", "B")) -> list[str] | None:
    """How the kernels of two variants differ, one sentence each; [] when they launched
    the same kernels with the same counts and grids; None when a side has no record."""
    found = difference_claims(a, b, names)
    return None if found is None else [c.text for c in found]


def difference_claims(a: dict[str, Any] | None, b: dict[str, Any] | None,
                      names: tuple[str, str] = ("A", "B"),
                      at: tuple[tuple[str, ...], tuple[str, ...]] | None = None
                      ) -> list[Claim] | None:
    """``differences``' sentences as claims over the document holding the two blocks at
    ``at`` (each block's path; None: the figures cite no path): a kernel's count per
    call on each side, the sum of its rows' counts there (a kernel of several grids has
    a row per grid)."""
    if not a or not b or a.get("note") or b.get("note"):
        return None
    x, y = names
    ka: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    kb: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for src, dst in ((a, ka), (b, kb)):
        for i, k in enumerate(src.get("kernels") or []):
            dst.setdefault(k["name"], []).append((i, k))

    def counts(side: int, rows: list[tuple[int, dict[str, Any]]]) -> list[Figure]:
        base = None if at is None else at[side]
        return [Figure(f"count{side}:{i}", k["count"],
                       None if base is None else pointer(*base, "kernels", i, "count"))
                for i, k in rows]

    out = []
    for name in sorted(set(ka) | set(kb)):
        if name not in kb:
            out.append(Claim("kernels-differ", f"only {x} launched {name}",
                             tuple(counts(0, ka[name]))))
            continue
        if name not in ka:
            out.append(Claim("kernels-differ", f"only {y} launched {name}",
                             tuple(counts(1, kb[name]))))
            continue
        ca, cb = sum(k["count"] for _, k in ka[name]), sum(k["count"] for _, k in kb[name])
        if ca != cb:
            fa, fb = counts(0, ka[name]), counts(1, kb[name])
            out.append(Claim("kernels-differ", f"{name}: {ca} per call in {x}, {cb} in {y}",
                             (*fa, *fb, Figure("per_call0", ca), Figure("per_call1", cb)),
                             (rel("sum", *(f.name for f in fa), "per_call0"),
                              rel("sum", *(f.name for f in fb), "per_call1"))))
        ga = sorted(_dims(k["grid"]) + " " + _dims(k["block"]) for _, k in ka[name])
        gb = sorted(_dims(k["grid"]) + " " + _dims(k["block"]) for _, k in kb[name])
        if ga != gb:
            out.append(Claim("kernels-differ", f"{name}: grid/block {', '.join(ga)} in {x}, "
                             f"{', '.join(gb)} in {y}", ()))
    for label, blk in ((x, a), (y, b)):
        if not blk.get("same_every_call", True):
            out.append(Claim("kernels-differ",
                             f"{label} did not launch the same kernels in every probed call",
                             ()))
    return out
