"""Time-prefix cuts of a real trace: the same capture, stopped earlier.

    python benchmarks/cut_trace.py /work/incoming/big.json.gz --mb 56,112,225,450 \\
        --out-dir /tmp/tvbench/real

For each target size, the cut keeps every event that starts before a cut-off time T
(chosen so that the kept events add up to the target, in decompressed bytes) and every
``M`` (metadata) event, in file order and with the exact bytes the profiler wrote: the
header before the first event and the trailer after the last one are kept as they are.
So a cut reads like the same profiler session stopped at T: slices still open at T
keep their full length, as Kineto writes a slice when it ends.

Like ``bench_hta.py``'s synthetic traces, each cut gets ``"distributedInfo": {"backend":
"nccl", "rank": 0, "world_size": 1}`` after ``deviceProperties`` (``--no-rank`` leaves
it out): without it HTA reads the whole file line by line looking for a rank. It only
makes HTA faster; traceview copies it into its metadata. Each cut is gzipped (level 6)
into its own directory, since HTA takes a directory. Deterministic: the same input
gives the same bytes (gzip mtime 0).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import msgspec
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_large_trace import read_fixture, split_events

DISTRIBUTED_INFO = '"distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1}'


class _Head(msgspec.Struct):
    ph: str = ""
    ts: float | None = None


def cut_points(texts: list[str], targets: list[int], fixed: int) -> tuple[np.ndarray, list[float]]:
    """Each event's ts (NaN for metadata) and, per target, the cut-off time."""
    dec = msgspec.json.Decoder(_Head)
    heads = [dec.decode(t) for t in texts]
    is_meta = np.asarray([h.ph == "M" or h.ts is None for h in heads])
    ts = np.asarray([np.nan if m else h.ts for h, m in zip(heads, is_meta, strict=True)], np.float64)
    size = np.asarray([len(t.encode()) + 2 for t in texts], np.int64)  # + ",\n"
    meta_bytes = int(size[is_meta].sum())
    order = np.argsort(np.where(is_meta, np.inf, ts), kind="stable")
    timed = order[: int((~is_meta).sum())]
    acc = np.cumsum(size[timed])
    cuts = []
    for target in targets:
        k = int(np.searchsorted(acc, target - fixed - meta_bytes))
        cuts.append(float(ts[timed[min(k, timed.size - 1)]]) if k < timed.size else float("inf"))
    return ts, cuts


def write_cut(path: Path, header: str, texts: list[str], seps: list[str], trailer: str,
              keep: np.ndarray, rank: bool) -> dict:
    if rank and "distributedInfo" not in header:
        at = header.find('"traceEvents"')
        head, tail = header[:at], header[at:]
        header = head + DISTRIBUTED_INFO + ",\n  " + tail
    path.parent.mkdir(parents=True, exist_ok=True)
    idx = np.flatnonzero(keep).tolist()
    written = 0
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6,
                                                  mtime=0, filename="") as g:
        parts = [header]
        for n, i in enumerate(idx):
            if n:
                parts.append(seps[idx[n - 1]] if idx[n - 1] + 1 == i else ",\n  ")
            parts.append(texts[i])
            if len(parts) > 4096:
                chunk = "".join(parts).encode()
                g.write(chunk)
                written += len(chunk)
                parts = []
        parts.append(trailer)
        chunk = "".join(parts).encode()
        g.write(chunk)
        written += len(chunk)
    return {"events": len(idx), "bytes": written, "file_bytes": path.stat().st_size}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", type=Path)
    ap.add_argument("--mb", default="56,112,225,450", help="target sizes, MB decompressed")
    ap.add_argument("--out-dir", type=Path, required=True)
    ap.add_argument("--no-rank", action="store_true", help="do not add distributedInfo")
    args = ap.parse_args(argv)
    doc = read_fixture(args.trace)
    header, texts, seps, trailer = split_events(doc)
    del doc
    targets = [int(float(x) * 1e6) for x in args.mb.split(",") if x]
    ts, cuts = cut_points(texts, targets, len(header) + len(trailer))
    infos = {}
    for mb, cut in zip(args.mb.split(","), cuts, strict=True):
        keep = np.isnan(ts) | (ts < cut)
        out = args.out_dir / f"{mb}mb" / f"real_{mb}mb.json.gz"
        info = write_cut(out, header, texts, seps, trailer, keep, not args.no_rank)
        info.update(cut_ts_us=cut, source=str(args.trace))
        infos[mb] = info
        print(f"{out}: {info['bytes'] / 1e6:.1f} MB, {info['events']:,} events, "
              f"{info['file_bytes'] / 1e6:.1f} MB gz, ts < {cut}", file=sys.stderr)
    (args.out_dir / "cuts.json").write_text(json.dumps(infos, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
