"""Build a large, realistic Kineto trace by repeating a real fixture's events.

    python benchmarks/make_large_trace.py --mb 450 --out /tmp/big.json.gz

The fixture's events are split into a *body* (everything that happens during the
profiled run) and a *tail* (``M`` metadata, the ``Trace`` span and the ``i`` instant
markers). The output is ``header + body x N + tail`` where each body copy is shifted
in time past the end of the previous one and gets fresh correlation / flow /
External / Python / Ev Idx / Sequence ids, so that the result reads like one long
capture: no overlap between copies, every id unique, flows still paired.

It works on the event *text*, not on decoded values: each event keeps the exact
bytes and layout Kineto wrote (pretty-printed, key order, ``dur`` and every other
number untouched); only the ``ts`` numbers and the id numbers are rewritten, and
``ts`` is shifted in integer nanoseconds and written back as
``f"{ns // 1000}.{ns % 1000:03d}"``, exactly the 3 decimals Kineto writes.

Deterministic (same inputs, same bytes, gzip mtime 0) and streaming: only the
fixture and one body copy (~15 MB for the default fixture) are in memory at a time.
The size is reached in whole body copies (N = nearest to the target), so the
default fixture gives sizes in steps of ~14.8 MB.
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
import time
from pathlib import Path

import msgspec
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FIXTURE = ROOT / "fixtures" / "triton_mul_cold_stack.json.gz"

# Gap left between the end of one body copy and the start of the next one.
GAP_NS = 1_000_000  # 1 ms

# Event-level numbers that are rewritten. Keys inside ``args`` are matched anywhere in
# the event text; Kineto events are flat enough that these keys only occur once.
_NUM = r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_TS_RE = re.compile(r'("ts"\s*:\s*)' + _NUM)
_DUR_RE = re.compile(r'("dur"\s*:\s*)' + _NUM)
_ID_KEYS = {
    # key in the event text -> id namespace (ids of one namespace share one offset)
    "id": "correlation",  # ac2g flow ids are the correlation ids
    "correlation": "correlation",
    "External id": "external",
    "Python id": "python",
    "Python parent id": "python",
    "Ev Idx": "evidx",
    "Sequence number": "sequence",
}
_ID_RE = re.compile(
    r'("(' + "|".join(re.escape(k) for k in _ID_KEYS) + r')"\s*:\s*)(-?\d+)(?=[\s,}\]])'
)


def to_ns(text: str) -> int:
    """Exact integer ns from a decimal microsecond string (at most 3 decimals)."""
    if "e" in text or "E" in text:
        raise ValueError(f"exponent in timestamp {text!r}: cannot shift exactly")
    neg = text.startswith("-")
    whole, _, frac = text.lstrip("-").partition(".")
    if len(frac) > 3:
        raise ValueError(f"more than 3 decimals in timestamp {text!r}")
    ns = int(whole) * 1000 + int(frac.ljust(3, "0") or "0")
    return -ns if neg else ns


def fmt_ns(ns: int) -> str:
    if ns < 0:
        return "-" + fmt_ns(-ns)
    return f"{ns // 1000}.{ns % 1000:03d}"


def read_fixture(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def split_events(doc: bytes) -> tuple[str, list[str], list[str], str]:
    """(header, event texts, separators between events, trailer), exactly as written."""
    top = msgspec.json.decode(doc, type=dict[str, msgspec.Raw])
    events = msgspec.json.decode(top["traceEvents"], type=list[msgspec.Raw])
    if not events:
        raise SystemExit("fixture has no events")
    base = np.frombuffer(doc, np.uint8).ctypes.data
    spans = []
    for raw in events:
        start = np.frombuffer(raw, np.uint8).ctypes.data - base
        spans.append((start, start + len(raw)))
    header = doc[: spans[0][0]].decode()
    trailer = doc[spans[-1][1] :].decode()
    texts = [doc[a:b].decode() for a, b in spans]
    seps = [doc[spans[i][1] : spans[i + 1][0]].decode() for i in range(len(spans) - 1)]
    return header, texts, seps, trailer


def compile_event(text: str, dur: bool = False,
                  pyname: bool = False) -> tuple[list[str], list[tuple[str, int]]]:
    """Split an event's text into literal pieces and slots (kind, original value).

    kind is "ts" (value in ns), "dur" (in ns; only with ``dur``), "pyname" (the
    ``.py(`` of a Python frame's name; only with ``pyname``) or an id namespace (value
    as int). ``len(pieces) == len(slots) + 1``.
    """
    found = []
    for m in _TS_RE.finditer(text):
        found.append((m.start(2), m.end(2), "ts", to_ns(m.group(2))))
    if dur:
        m = _DUR_RE.search(text)
        if m:
            found.append((m.start(2), m.end(2), "dur", to_ns(m.group(2))))
    if pyname:
        m = _PYNAME_RE.search(text)
        if m:
            found.append((m.start(1), m.end(1), "pyname", 0))
    for m in _ID_RE.finditer(text):
        found.append((m.start(3), m.end(3), _ID_KEYS[m.group(2)], int(m.group(3))))
    found.sort()
    pieces, slots, pos = [], [], 0
    for a, b, kind, value in found:
        pieces.append(text[pos:a])
        slots.append((kind, value))
        pos = b
    pieces.append(text[pos:])
    return pieces, slots


def is_tail(ev: dict) -> bool:
    return ev.get("ph") in ("M", "i") or ev.get("cat") == "Trace"


_PYNAME_RE = re.compile(r'"name"\s*:\s*"[^"\\]*?(\.py\()')


def nested_parents(decoded: list[dict]) -> dict[int, int]:
    """Event index -> index of its enclosing event on the same thread (X events that
    nest in it: the fixture's own tree, from exact ns)."""
    by_thread: dict[tuple, list[tuple[int, int, int]]] = {}
    for i, ev in enumerate(decoded):
        if ev.get("ph") != "X" or "ts" not in ev or "dur" not in ev:
            continue
        ts, dur = to_ns(repr_us(ev["ts"])), to_ns(repr_us(ev["dur"]))
        by_thread.setdefault((ev.get("pid"), ev.get("tid")), []).append((ts, -dur, i))
    parent: dict[int, int] = {}
    for items in by_thread.values():
        items.sort()
        stack: list[tuple[int, int]] = []  # (end, index)
        for ts, neg, i in items:
            while stack and stack[-1][0] <= ts:
                stack.pop()
            if stack and ts - neg <= stack[-1][0]:
                parent[i] = stack[-1][1]
            stack.append((ts - neg, i))
    return parent


def repr_us(v) -> str:
    """A decoded us number back to its decimal text (3 decimals at most)."""
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def build(fixture: Path, target_bytes: int, out: Path, level: int, *, overhangs: int = 0,
          overhang_max_us: float = 1_900_000.0, name_variants: int = 1, seed: int = 0) -> dict:
    """``overhangs``: per body copy, that many ``python_function`` slices (chosen at
    random, seeded) are made to outlive their parent by 1 us to ``overhang_max_us``
    (log-uniform), as real traces' slices that overlap their parent without nesting
    do. ``name_variants`` > 1: copy k renames its Python frames ``file.py(...)`` to
    ``file_v{k % name_variants}.py(...)`` (variant 0 keeps the name), so the trace holds
    that many times more distinct frame names, as a long real capture does."""
    doc = read_fixture(fixture)
    header, texts, seps, trailer = split_events(doc)
    decoded = [msgspec.json.decode(t) for t in texts]
    sep = seps[0] if seps else ",\n"

    body_idx = [i for i, ev in enumerate(decoded) if not is_tail(ev)]
    tail_idx = [i for i, ev in enumerate(decoded) if is_tail(ev)]
    if not body_idx:
        raise SystemExit("fixture has no body events to repeat")

    # Time extent of the body, in exact ns from the text.
    start_ns, end_ns = None, None
    for i in body_idx:
        m = _TS_RE.search(texts[i])
        if not m:
            continue
        ts = to_ns(m.group(2))
        d = _DUR_RE.search(texts[i])
        end = ts + (to_ns(d.group(2)) if d else 0)
        start_ns = ts if start_ns is None else min(start_ns, ts)
        end_ns = end if end_ns is None else max(end_ns, end)
    period_ns = (end_ns - start_ns) + GAP_NS

    # One offset per id namespace: larger than every id of that namespace in the fixture.
    id_max: dict[str, int] = {}
    compiled = {}
    body_set = set(body_idx)
    parents = nested_parents(decoded) if overhangs else {}
    # overhang candidates: Python frames inside another slice (index -> that slice's end)
    over_end = {}
    for i, par in parents.items():
        if i in body_set and decoded[i].get("cat") == "python_function":
            over_end[i] = to_ns(repr_us(decoded[par]["ts"])) + to_ns(repr_us(decoded[par]["dur"]))
    for i in range(len(texts)):
        pieces, slots = compile_event(texts[i], dur=i in over_end,
                                      pyname=name_variants > 1 and i in body_set
                                      and decoded[i].get("cat") == "python_function")
        if i in over_end:
            slots = [(k, (i, v) if k == "dur" else v) for k, v in slots]
        compiled[i] = (pieces, slots)
        for kind, value in slots:
            if kind in _ID_KEYS.values():
                id_max[kind] = max(id_max.get(kind, 0), value)
    id_offset = {k: v + 1 for k, v in id_max.items()}

    body_bytes = sum(len(texts[i].encode()) + len(sep) for i in body_idx)
    fixed_bytes = len(header) + len(trailer) + sum(len(texts[i]) + len(sep) for i in tail_idx)
    copies = max(1, round((target_bytes - fixed_bytes) / body_bytes))

    # The body as one template: literal pieces interleaved with slots.
    lit: list[str] = []
    kinds: list[str] = []
    vals: list[int] = []
    acc = ""
    for i in body_idx:
        pieces, slots = compiled[i]
        acc += pieces[0]
        for (kind, value), piece in zip(slots, pieces[1:], strict=True):
            lit.append(acc)
            kinds.append(kind)
            vals.append(value)
            acc = piece
        acc += sep
    lit.append(acc)

    # the overhanging slices of each copy: event index -> new dur in ns
    cand = sorted(over_end)
    planted: list[dict[int, int]] = []
    body_end = end_ns + (copies - 1) * period_ns
    for k in range(copies if overhangs else 0):
        rng = np.random.default_rng([seed, k])
        pick = rng.choice(len(cand), min(overhangs, len(cand)), replace=False)
        extra = np.exp(rng.uniform(np.log(1000.0), np.log(overhang_max_us * 1000.0), pick.size))
        chosen = {}
        for j, x in zip(pick.tolist(), extra.tolist(), strict=True):
            i = cand[j]
            ts = to_ns(repr_us(decoded[i]["ts"]))
            par_end = over_end[i] + k * period_ns
            chosen[i] = min(par_end + int(x), body_end) - ts - k * period_ns
        planted.append(chosen)

    def render_body(k: int) -> str:
        parts = [lit[0]]
        ts_shift = k * period_ns
        variant = k % name_variants
        over = planted[k] if planted else {}
        for kind, value, piece in zip(kinds, vals, lit[1:], strict=True):
            if kind == "ts":
                parts.append(fmt_ns(value + ts_shift))
            elif kind == "dur":
                i, dur = value
                parts.append(fmt_ns(over.get(i, dur)))
            elif kind == "pyname":
                parts.append(f"_v{variant}.py(" if variant else ".py(")
            else:
                parts.append(str(value + k * id_offset[kind]))
            parts.append(piece)
        return "".join(parts)

    def render_tail() -> str:
        last_shift = (copies - 1) * period_ns
        out_parts = []
        for i in tail_idx:
            ev, text = decoded[i], texts[i]
            if ev.get("cat") == "Trace":  # the whole-capture span: stretch it
                text = _DUR_RE.sub(
                    lambda m: m.group(1) + fmt_ns(to_ns(m.group(2)) + last_shift), text, 1
                )
            elif ev.get("ph") == "i":  # markers after the run (Record Window End) move to the end
                m = _TS_RE.search(text)
                if m and to_ns(m.group(2)) >= end_ns:
                    text = _TS_RE.sub(
                        lambda m: m.group(1) + fmt_ns(to_ns(m.group(2)) + last_shift), text, 1
                    )
            out_parts.append(text)
        return sep.join(out_parts)

    n_events = 0
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as raw_f:
        f = (
            gzip.GzipFile(filename="", mode="wb", fileobj=raw_f, compresslevel=level, mtime=0)
            if out.suffix == ".gz"
            else raw_f
        )
        written = 0
        chunk = header.encode()
        f.write(chunk)
        written += len(chunk)
        for k in range(copies):
            chunk = render_body(k)
            if k == copies - 1 and not tail_idx:
                chunk = chunk[: -len(sep)]
            chunk = chunk.encode()
            f.write(chunk)
            written += len(chunk)
            n_events += len(body_idx)
        chunk = (render_tail() + trailer).encode()
        f.write(chunk)
        written += len(chunk)
        n_events += len(tail_idx)
        if f is not raw_f:
            f.close()
    return {
        "copies": copies,
        "events": n_events,
        "bytes": written,
        "file_bytes": out.stat().st_size,
        "period_us": period_ns / 1000,
        "id_offsets": id_offset,
        "overhangs": sum(len(c) for c in planted),
        "name_variants": name_variants,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--mb", type=float, required=True, help="target decompressed size in MB (1e6 bytes)"
    )
    ap.add_argument("--out", type=Path, required=True, help="output path; .gz suffix -> gzip")
    ap.add_argument(
        "--fixture", type=Path, default=DEFAULT_FIXTURE, help="trace whose events are repeated"
    )
    ap.add_argument("--level", type=int, default=6, help="gzip level for .gz output (default 6)")
    ap.add_argument("--overhangs", type=int, default=0,
                    help="per copy, Python frames made to outlive their parent (default 0)")
    ap.add_argument("--overhang-max-us", type=float, default=1_900_000.0,
                    help="longest overhang, us (log-uniform from 1 us; default 1.9 s)")
    ap.add_argument("--name-variants", type=int, default=1,
                    help="distinct renamings of the Python frames, one per copy mod N")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    info = build(args.fixture, int(args.mb * 1e6), args.out, args.level,
                 overhangs=args.overhangs, overhang_max_us=args.overhang_max_us,
                 name_variants=args.name_variants, seed=args.seed)
    dt = time.perf_counter() - t0
    print(
        f"{args.out}: {info['bytes'] / 1e6:.1f} MB decompressed ({info['file_bytes'] / 1e6:.1f} MB on disk), "
        f"{info['events']:,} events, {info['copies']} copies of {args.fixture.name} "
        f"every {info['period_us']:.3f} us, id offsets {info['id_offsets']}, {dt:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
