"""A synthetic Kineto trace of N op calls, for scaling measurements.

    PYTHONPATH=. python benchmarks/synth_calls.py --calls 60000 --out /tmp/c60k.json.gz

Each call is what a profiled loop of ``with record_function(f"call_{i}"): torch.mul(...)``
followed by ``torch.cuda.synchronize()`` writes: a numbered ``user_annotation`` range, one
``aten::mul`` inside it (with ``--events-per-call`` - 4 more nested ``aten::`` ops under it),
a ``cudaLaunchKernel`` inside the op, the kernel it launched on the device, and a
``cudaDeviceSynchronize`` after the op, still inside the range. ``--steps S`` wraps the
calls in S ``ProfilerStep#N`` ranges; ``--threads T`` deals the calls round-robin to T
host threads (each its own range series, so the busiest thread's calls are the calls).

The text is written directly (the shape of ``tests/tracebuilder.py``'s output: times
in microseconds with three decimals), so 100,000 calls take about a second to make.
Deterministic: same arguments, same bytes (gzip mtime 0).
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

PID = 100
TID = 100
STREAM = 7
PERIOD_NS = 40_000  # one call every 40 us


def _us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def _x(cat: str, name: str, start: int, dur: int, pid: int, tid: int, args: str = "{}") -> str:
    return (f'{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": {pid}, "tid": {tid}, '
            f'"ts": {_us(start)}, "dur": {_us(dur)}, "args": {args}}}')


def events(calls: int, *, steps: int = 0, threads: int = 1,
           events_per_call: int = 5) -> list[str]:
    """The trace's events as JSON texts, in time order of their starts."""
    out: list[str] = []
    extra = max(0, events_per_call - 5)
    per_step = -(-calls // steps) if steps else 0
    corr = 1000
    for i in range(calls):
        t = i * PERIOD_NS
        tid = TID + (i % threads)
        if steps and i % per_step == 0:
            n = min(per_step, calls - i)
            out.append(_x("user_annotation", f"ProfilerStep#{i // per_step}", t, n * PERIOD_NS - 500,
                          PID, TID))
        corr += 1
        out.append(_x("user_annotation", f"call_{i}", t + 1_000, 30_000, PID, tid))
        out.append(_x("cpu_op", "aten::mul", t + 2_000, 20_000, PID, tid))
        for k in range(extra):  # nested ops, each inside the previous one, before the launch
            out.append(_x("cpu_op", "aten::empty_strided" if k % 2 else "aten::to",
                          t + 2_100 + 50 * k, 8_900 - 100 * k, PID, tid))
        out.append(_x("cuda_runtime", "cudaLaunchKernel", t + 12_000, 6_000, PID, tid,
                      f'{{"cbid": 211, "correlation": {corr}}}'))
        out.append(_x("kernel", "void at::native::vectorized_elementwise_kernel<4>(mul)",
                      t + 19_000, 3_000, 0, STREAM,
                      f'{{"device": 0, "stream": {STREAM}, "correlation": {corr}}}'))
        corr += 1
        out.append(_x("cuda_runtime", "cudaDeviceSynchronize", t + 23_000, 7_000, PID, tid,
                      f'{{"cbid": 165, "correlation": {corr}}}'))
    return out


def write(path: Path, calls: int, **kw: int) -> Path:
    body = ",\n".join(events(calls, **kw))
    text = ('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}],\n'
            '"traceEvents": [\n' + body + "\n]}\n")
    data = text.encode()
    if path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=1, mtime=0)
    path.write_bytes(data)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--events-per-call", type=int, default=5, help="at least 5, at most 90")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    write(a.out, a.calls, steps=a.steps, threads=a.threads, events_per_call=a.events_per_call)


if __name__ == "__main__":
    main()
