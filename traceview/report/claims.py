"""Claims: every sentence the reports print, as the figures it asserts and how they relate.

A sentence such as "host-bound: the device is idle 98% of a typical call (28.9 ms)" asserts
figures (the idle time, the call, their share) and relations between them (the share is
the idle time over the call; it is at least the host-bound threshold). A ``Claim`` holds
exactly those: each ``Figure`` with the value the sentence shows and the place in the
report's JSON it comes from (a JSON Pointer, RFC 6901: ``/calls/stats/api_ns/p50``), and
each ``Relation`` between them. The sentence's text is made from the claim's own figures
(``report.messages``), so what it says is what the claim says.

``check`` reads a claim against the report's JSON: a figure that differs from the value
at its path, or a relation that does not hold, is a contradiction (``tests/test_claims.py``
runs it on every fixture and public trace, in every view). The claims are in the JSON
(``claims``; ``docs/json.md``), so any reader can run the same check.

A figure without a path is a threshold (a named constant of ``report.findings``) or a
figure derived from others, which a relation then fixes (a share: ``ratio``). A count
whose path holds an array is that array's length ("+3 more functions", "12 of 17 layouts
pass"): a document lists the items rather than counting them, and the count a sentence
says is checked against the list itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

# eq/lt/le/gt/ge: two figures compared; ratio: (part, whole, share) with share = part /
# whole; ratio_rounded: (part, whole, share, decimals) with share = part / whole rounded
# to that many decimals (a rate the report rounds); sum: (part, ..., total) with the
# parts adding up to the total exactly.
RelationKind = Literal["eq", "lt", "le", "gt", "ge", "ratio", "ratio_rounded", "sum"]
RELATION_KINDS: tuple[RelationKind, ...] = ("eq", "lt", "le", "gt", "ge", "ratio",
                                            "ratio_rounded", "sum")
# A share is carried unrounded; this much apart is float noise, not a different share.
RATIO_TOLERANCE = 1e-9

Value = int | float | None


@dataclass(frozen=True)
class Figure:
    """One figure a sentence shows: what it is called in the claim, its value (integer ns,
    a count, or a ratio), and where the report holds it (None: a threshold or a derived
    figure, fixed by the claim's relations)."""

    name: str
    value: Value
    path: str | None = None


@dataclass(frozen=True)
class Relation:
    """What the sentence asserts between its figures, by name, in the order ``kind``
    reads them."""

    kind: RelationKind
    figures: tuple[str, ...]


@dataclass(frozen=True)
class Claim:
    """A sentence: its id (a finding id of ``codes.FINDINGS`` or a sentence id of
    ``codes.SENTENCES``), its text, the figures it cites and the relations it asserts."""

    id: str
    text: str
    figures: tuple[Figure, ...]
    relations: tuple[Relation, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """The claim as the JSON documents write it (``claims``: docs/json.md)."""
        return {"id": self.id, "text": self.text,
                "figures": [{"name": f.name, "value": f.value, "path": f.path}
                            for f in self.figures],
                "relations": [{"kind": r.kind, "figures": list(r.figures)}
                              for r in self.relations]}

    def value(self, name: str) -> Value:
        return self.figure(name).value

    def figure(self, name: str) -> Figure:
        for f in self.figures:
            if f.name == name:
                return f
        raise KeyError(f"claim {self.id} cites no figure {name!r}")


def from_json(doc: dict[str, Any]) -> Claim:
    """A claim as ``Claim.as_json`` wrote it."""
    return Claim(doc["id"], doc["text"],
                 tuple(Figure(f["name"], f["value"], f["path"]) for f in doc["figures"]),
                 tuple(Relation(r["kind"], tuple(r["figures"])) for r in doc["relations"]))


def pointer(*parts: str | int) -> str:
    """A JSON Pointer to ``parts`` (``pointer("calls", "stats", "api_ns", "p50")``):
    keys may hold any character (a category of a user's rule table), so they are escaped."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


_MISSING = object()


def resolve(doc: Any, path: str) -> Any:
    """The value at ``path`` in the JSON ``doc``; ``KeyError`` naming the path where it
    does not exist."""
    if path == "":
        return doc
    if not path.startswith("/"):
        raise KeyError(f"{path}: not a JSON Pointer")
    cur = doc
    for raw in path[1:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(cur, list | tuple):  # a document as builtins may keep tuples
            nxt = cur[int(key)] if key.isdigit() and int(key) < len(cur) else _MISSING
        elif isinstance(cur, dict):
            nxt = cur.get(key, _MISSING)
        else:
            nxt = _MISSING
        if nxt is _MISSING:
            raise KeyError(f"{path}: no {key!r} there")
        cur = nxt
    return cur


def _same(a: Value, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return abs(a - b) <= RATIO_TOLERANCE * max(1.0, abs(a), abs(b))
    return a == b


def _holds(kind: RelationKind, vals: Sequence[Value]) -> str | None:
    """None when the relation holds, else why not."""
    v = [x for x in vals if x is not None]
    if len(v) < len(vals):
        return "a figure it relates is unknown"
    if kind == "ratio":
        part, whole, share = v
        if not whole:
            return "the whole is 0"
        return None if abs(part / whole - share) <= RATIO_TOLERANCE else \
            f"{part} / {whole} = {part / whole!r}, not {share!r}"
    if kind == "ratio_rounded":
        part, whole, share, decimals = v
        if not whole:
            return "the whole is 0"
        want = round(part / whole, int(decimals))
        return None if _same(want, share) else \
            f"{part} / {whole} rounded to {decimals} decimals is {want!r}, not {share!r}"
    if kind == "sum":
        *parts, total = v
        got = sum(parts)
        return None if _same(got, total) else f"the parts add up to {got}, not {total}"
    a, b = v
    ok = {"eq": _same(a, b), "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[kind]
    return None if ok else f"{a!r} {kind} {b!r} is false"


def _arity(kind: RelationKind, n: int) -> bool:
    return {"ratio": n == 3, "ratio_rounded": n == 4, "sum": n >= 2}.get(kind, n == 2)


def check(claim: Claim, doc: dict[str, Any]) -> list[str]:
    """Every contradiction between ``claim`` and the report's JSON ``doc``: a cited figure
    that is not the value at its path, a relation that does not hold. Empty when the
    sentence is true of the report."""
    out = []
    names = {f.name for f in claim.figures}
    for f in claim.figures:
        if f.path is None:
            continue
        try:
            got = resolve(doc, f.path)
        except KeyError as exc:
            out.append(f"{claim.id}: {f.name}: {exc.args[0]}")
            continue
        if isinstance(got, list) and isinstance(f.value, int) and not isinstance(f.value, bool):
            got = len(got)  # a count of the items the document lists
        if not _same(f.value, got):
            out.append(f"{claim.id}: {f.name} is {f.value!r}, the report has {got!r} at {f.path}")
    for r in claim.relations:
        unknown = [n for n in r.figures if n not in names]
        if unknown or not _arity(r.kind, len(r.figures)):
            out.append(f"{claim.id}: {r.kind}{r.figures}: malformed (unknown {unknown})")
            continue
        why = _holds(r.kind, [claim.value(n) for n in r.figures])
        if why is not None:
            out.append(f"{claim.id}: {r.kind}{r.figures} does not hold: {why}")
    return out


def check_all(claims: Sequence[Claim], doc: dict[str, Any]) -> list[str]:
    return [p for c in claims for p in check(c, doc)]


def rel(kind: RelationKind, *names: str) -> Relation:
    return Relation(kind, names)
