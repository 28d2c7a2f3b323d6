"""Capturing calls into a CUDA graph, for ``--mode graph`` and for the device-only baseline.

A graph replay launches the recorded kernels back to back with no Python, no dispatch
and no per-kernel launch API, so it isolates device time. It is a different
experiment from eager execution, and everything built on it is labelled as such.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from traceview.errors import CaptureError


@dataclass
class CapturedGraph:
    """A CUDA graph of ``ops`` calls; ``outputs`` keep the graph's static outputs alive."""

    graph: Any
    ops: int
    outputs: list[Any]

    def replay(self) -> None:
        self.graph.replay()


def capture_graph(torch: Any, call: Callable[[], Any], ops: int, what: str) -> CapturedGraph:
    """Record ``ops`` back-to-back ``call()``s into one graph.

    Warm-up on a side stream first, as PyTorch requires before capture (lazy init,
    allocator). An implementation that cannot be captured (host sync, CPU work that
    depends on device values) raises CaptureError naming ``what``.
    """
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            call()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    outputs: list[Any] = []
    try:
        with torch.cuda.graph(graph):
            for _ in range(ops):
                outputs.append(call())
    except Exception as exc:  # noqa: BLE001  (RuntimeError, AcceleratorError, backend errors)
        torch.cuda.synchronize()
        raise CaptureError(
            f"{what} cannot be captured into a CUDA graph: {_one_line(exc)}"
        ) from None
    torch.cuda.synchronize()
    return CapturedGraph(graph=graph, ops=ops, outputs=outputs)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
