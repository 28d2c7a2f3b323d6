"""Build small Kineto-style traces with exactly known answers, for tests.

Times are given in integer ns and written the way Kineto writes them: microseconds as
numbers with three decimals. Nothing here is hand-edited JSON: every synthetic trace in
the tests is made through this builder.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class _Us(float):
    """A float that serialises with exactly three decimals (Kineto style)."""

    def __new__(cls, ns: int) -> _Us:
        obj = super().__new__(cls, ns / 1000)
        obj.ns = ns
        return obj

    def __repr__(self) -> str:
        sign = "-" if self.ns < 0 else ""
        a = abs(self.ns)
        return f"{sign}{a // 1000}.{a % 1000:03d}"


def _dump(obj: Any) -> str:
    # json.dumps calls float.__repr__ directly; patch via a replace on a unique marker.
    def conv(x: Any) -> Any:
        if isinstance(x, _Us):
            return f"@@US{x!r}@@"
        if isinstance(x, dict):
            return {k: conv(v) for k, v in x.items()}
        if isinstance(x, list):
            return [conv(v) for v in x]
        return x

    text = json.dumps(conv(obj))
    return text.replace('"@@US', "").replace('@@"', "")


@dataclass
class TraceBuilder:
    pid: int = 100
    tid: int = 100
    device: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    _corr: int = 1000

    def _x(self, cat: str, name: str, start: int, dur: int, pid: Any, tid: Any,
           args: dict[str, Any] | None = None) -> dict[str, Any]:
        ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
              "ts": _Us(start), "dur": _Us(dur)}
        if args is not None:
            ev["args"] = args
        self.events.append(ev)
        return ev

    def op(self, name: str, start: int, dur: int, *, cat: str = "cpu_op", tid: int | None = None):
        return self._x(cat, name, start, dur, self.pid, self.tid if tid is None else tid, {})

    def py(self, name: str, start: int, dur: int, *, tid: int | None = None):
        return self._x("python_function", name, start, dur, self.pid,
                       self.tid if tid is None else tid, {})

    def annotation(self, name: str, start: int, dur: int, *, tid: int | None = None):
        return self._x("user_annotation", name, start, dur, self.pid,
                       self.tid if tid is None else tid, {})

    def launch(self, start: int, dur: int, *, api: str = "cuLaunchKernelEx",
               corr: int | None = None, tid: int | None = None) -> int:
        if corr is None:
            self._corr += 1
            corr = self._corr
        cat = "cuda_driver" if api.startswith("cu") and not api.startswith("cuda") else "cuda_runtime"
        self._x(cat, api, start, dur, self.pid, self.tid if tid is None else tid,
                {"cbid": 1, "correlation": corr})
        return corr

    def sync(self, start: int, dur: int, *, tid: int | None = None):
        self._corr += 1
        return self._x("cuda_runtime", "cudaDeviceSynchronize", start, dur, self.pid,
                       self.tid if tid is None else tid, {"correlation": self._corr})

    def kernel(self, name: str, start: int, dur: int, *, corr: int | None = None,
               stream: int = 7, device: int | None = None, cat: str = "kernel"):
        dev = self.device if device is None else device
        args: dict[str, Any] = {"device": dev, "stream": stream}
        if corr is not None:
            args["correlation"] = corr
        return self._x(cat, name, start, dur, dev, stream, args)

    def launched_kernel(self, name: str, launch_start: int, launch_dur: int, k_start: int,
                        k_dur: int, **kw: Any) -> int:
        corr = self.launch(launch_start, launch_dur, tid=kw.pop("tid", None))
        self.kernel(name, k_start, k_dur, corr=corr, **kw)
        return corr

    def raw(self, event: dict[str, Any]) -> None:
        self.events.append(event)

    def document(self) -> dict[str, Any]:
        return {"schemaVersion": 1, **self.metadata, "traceEvents": self.events}

    def text(self, *, bare: bool = False) -> str:
        return _dump(self.events if bare else self.document())

    def write(self, path: Path, *, gz: bool = False, bare: bool = False) -> Path:
        data = self.text(bare=bare).encode()
        path.write_bytes(gzip.compress(data) if gz else data)
        return path
