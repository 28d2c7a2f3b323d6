"""``baseline.device_per_op_interleaved``: the same-process A/B's device figure.

On the H200 the side measured second read 14% slower per op in 16 of 16
processes for the same kernel; the fix gives both sides one op count, captures both graphs
first and alternates the timed replays. Checked here with a stand-in for torch.cuda that
records what ran, since CI has no GPU.
"""

from __future__ import annotations

from types import SimpleNamespace

from traceview.errors import CaptureError
from traceview.opcapture import baseline


class _Events:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def Event(self, enable_timing: bool = False):  # noqa: N802, FBT001, FBT002 (torch's API)
        log = self.log

        class _Event:
            def record(self) -> None:
                pass

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, other) -> float:  # ms for the last replay: A 1 ms, B 2 ms
                return {"A": 1.0, "B": 2.0}[log[-1]]

        return _Event()

    def synchronize(self) -> None:
        pass


def _device(log: list[str], free: int = 1 << 40):
    torch = SimpleNamespace(cuda=_Events(log))
    return SimpleNamespace(torch=torch, free_bytes=lambda: free)


def _fake_capture(log, failing=()):
    ops_seen = {}

    def capture(torch, call, ops, what):
        label = call()
        ops_seen[label] = ops
        if label in failing:
            raise CaptureError(f"{what} cannot be captured")
        return SimpleNamespace(replay=lambda: log.append(label))

    return capture, ops_seen


def test_both_sides_get_one_op_count_and_alternating_replays(monkeypatch):
    log: list[str] = []
    capture, ops_seen = _fake_capture(log)
    monkeypatch.setattr(baseline, "capture_graph", capture)
    got = baseline.device_per_op_interleaved(
        _device(log), {"A": (lambda: "A", 1024, "a"), "B": (lambda: "B", 1024, "b")}, 100_000)
    ops = 5_000_000 // 100_000
    assert ops_seen == {"A": ops, "B": ops}
    timed = log[2:]  # one untimed replay each first
    assert log[:2] == ["A", "B"]
    expected = []
    for i in range(baseline.DEVICE_REPLAYS):
        expected += ["A", "B"] if i % 2 == 0 else ["B", "A"]
    assert timed == expected
    assert got["A"]["device_ns"] == round(1e6 / ops)
    assert got["B"]["device_ns"] == round(2e6 / ops)
    assert got["A"]["device_graph_ops"] == got["B"]["device_graph_ops"] == ops
    assert len(got["B"]["device_ns_samples"]) == baseline.DEVICE_REPLAYS


def test_memory_limit_counts_both_sides(monkeypatch):
    log: list[str] = []
    capture, ops_seen = _fake_capture(log)
    monkeypatch.setattr(baseline, "capture_graph", capture)
    baseline.device_per_op_interleaved(
        _device(log, free=4 * 30 * 1000), {"A": (lambda: "A", 500, "a"),
                                           "B": (lambda: "B", 500, "b")}, 1)
    assert ops_seen == {"A": 30, "B": 30}


def test_a_side_that_cannot_be_captured_keeps_the_other(monkeypatch):
    log: list[str] = []
    capture, _ = _fake_capture(log, failing=("A",))
    monkeypatch.setattr(baseline, "capture_graph", capture)
    got = baseline.device_per_op_interleaved(
        _device(log), {"A": (lambda: "A", 0, "--impl x add"), "B": (lambda: "B", 0, "b")},
        1_000_000)
    assert got["A"] == {"device_ns": None, "device_error": "--impl x add cannot be captured"}
    assert got["B"]["device_ns"] == round(2e6 / 10)
    assert set(log) == {"B"}


def test_one_side_is_device_per_op(monkeypatch):
    log: list[str] = []
    capture, _ = _fake_capture(log)
    monkeypatch.setattr(baseline, "capture_graph", capture)
    got = baseline.device_per_op(_device(log), lambda: "A", 1_000_000, 0, "a")
    assert got["device_ns"] == round(1e6 / 10)
    assert set(got) == {"device_ns", "device_ns_samples", "device_graph_ops", "device_replays"}
