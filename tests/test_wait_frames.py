"""A thread blocked in a call that returns only when something else happens does no work:
its time is ``wait`` (``default_rules.json``, ``wait_about``), and the critical path never
takes it as the thread's work.

The rules are checked name by name: the blocking primitives of Windows' and POSIX's Python
(and the standard library's waiting functions, which the profiler may record without the
builtin under them) are ``wait``, calls of the same names that do not block are not. The
critical path is checked on a CPU-only step whose answer is worked out by hand below: the
main thread does the forward, the backward (the engine runs its nodes on the calling thread,
inside ``run_backward``) and the optimizer; wandb's asyncio event loop sits beside it blocked
in ``asyncio/windows_events.py: _poll`` (the first poll with nothing recorded under it, as
a poll begun before the profiler started is written, the others with
``GetQueuedCompletionStatus`` under them); a logging thread works twice, once while the main
thread runs its own backward nodes and once while the main thread waits for it in
``threading.py: wait``.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

import traceview
from rawcount import length, union, us_to_ns
from tracebuilder import TraceBuilder
from traceview.rules import STICKS_UNLESS_ENCLOSED, load_rules

MAIN, POLL, LOGGER = 100, 200, 300
RUN_BACKWARD = "<built-in method run_backward of torch._C._EngineBase object at 0x7f01>"
POLL_FRAME = "asyncio/windows_events.py(775): _poll"

BLOCKING = [
    # Windows
    "<built-in function WaitForSingleObject>",
    "<built-in function WaitForSingleObjectEx>",
    "<built-in function WaitForMultipleObjects>",
    "<built-in function GetQueuedCompletionStatus>",
    "<built-in function GetQueuedCompletionStatusEx>",
    "asyncio/windows_events.py(775): _poll",
    "asyncio/windows_events.py(446): select",
    "multiprocessing/popen_spawn_win32.py(105): wait",
    # POSIX
    "<built-in function select>",
    "<built-in method poll of select.epoll object at 0x7f02>",
    "<built-in method poll of select.poll object at 0x7f03>",
    "<built-in method control of select.kqueue object at 0x7f04>",
    "<built-in function waitpid>",
    "selectors.py(468): select",
    "multiprocessing/popen_fork.py(40): wait",
    # everywhere
    "<built-in function sleep>",
    "<built-in method acquire of _thread.lock object at 0x7f05>",
    "<built-in method acquire of _thread.RLock object at 0x7f06>",
    "<built-in method __enter__ of _thread.lock object at 0x7f07>",
    "<built-in method acquire of _multiprocessing.SemLock object at 0x7f08>",
    "<built-in method get of _queue.SimpleQueue object at 0x7f09>",
    "<built-in method recv of socket object at 0x7f0a>",
    "<built-in method recv_into of socket object at 0x7f0b>",
    "threading.py(359): wait",
    "threading.py(655): wait",
    "threading.py(1147): join",
    "threading.py(1187): _wait_for_tstate_lock",
    "queue.py(171): get",
    "multiprocessing/process.py(142): join",
    "multiprocessing/connection.py(1136): wait",
    "subprocess.py(1264): wait",
    "subprocess.py(1209): communicate",
    "concurrent/futures/_base.py(428): result",
]
# the same names' look-alikes that return at once: no wait
NOT_BLOCKING = [
    "<built-in method join of str object at 0x7f10>",
    "<built-in method release of _thread.lock object at 0x7f11>",
    "<built-in method __exit__ of _thread.lock object at 0x7f12>",
    "<built-in method WSASend of _overlapped.Overlapped object at 0x7f13>",
    "<built-in method send of socket object at 0x7f14>",
    "<built-in method get of dict object at 0x7f15>",
    "asyncio/windows_events.py(460): finish_socket_func",
    "asyncio/base_events.py(2012): _run_once",
    "asyncio/tasks.py(640): sleep",
    "concurrent/futures/_base.py(537): set_result",
    "multiprocessing/queues.py(103): get",
    "vae_mnist_bugs.py(73): forward",
]


@pytest.mark.parametrize("name", BLOCKING)
def test_blocking_primitives_are_wait_and_stick_where_no_enclosing_rule_does(name):
    # inside a compile or import region the wait is that region's cost (Triton's build
    # waits 300 ms on the compiler it spawned), elsewhere it is wait with what it holds
    assert load_rules().sticks("python_function", name) == ("wait", STICKS_UNLESS_ENCLOSED)


@pytest.mark.parametrize("name", NOT_BLOCKING)
def test_calls_that_return_at_once_are_no_wait(name):
    assert load_rules().classify("python_function", name)[0] != "wait"


def cpu_step() -> TraceBuilder:
    """One 100 us CPU-only step (times in ns):

    main:   ops [1, 14) and [15, 28) us (forward); ``torch/_tensor.py: backward`` [29, 71)
            holding ``run_backward`` [30, 70), under which the engine runs four nodes on
            this thread, [31, 39), [40, 49), [50, 59), [60, 69); ``threading.py: wait``
            [75, 90) with a lock acquire [75.1, 89.9) under it; an op [92, 99) (the
            optimizer).
    poll:   wandb's event loop, ``_bootstrap`` [0, 100) > ``_main`` > ``run_forever``;
            three ``_run_once``: [0.3, 20.6) with ``select`` > ``_poll`` [0.5, 19.9) and
            nothing under it, then a callback [20.1, 20.5); [20.6, 46) with ``_poll``
            [20.8, 44.9) over ``GetQueuedCompletionStatus`` [20.9, 44.8), then a callback
            [45.1, 45.9); [46, 99.7) with ``_poll`` [46.2, 99.5) over
            ``GetQueuedCompletionStatus`` [46.3, 99.4).
    logger: a frame [52, 55) (while the main thread runs its third node) and one [76, 88)
            (while the main thread waits for it).
    """
    tb = TraceBuilder(pid=7, tid=MAIN)
    for tid, name in ((POLL, "wandb loop"), (LOGGER, "logger")):
        tb.raw({"ph": "M", "name": "thread_name", "pid": 7, "tid": tid, "args": {"name": name}})
    tb.annotation("ProfilerStep#1", 0, 100_000)
    tb.op("aten::linear", 1_000, 13_000)
    tb.op("aten::relu", 15_000, 13_000)
    tb.py("torch/_tensor.py(626): backward", 29_000, 42_000)
    tb.py(RUN_BACKWARD, 30_000, 40_000)
    for a, b in ((31_000, 39_000), (40_000, 49_000), (50_000, 59_000), (60_000, 69_000)):
        tb.op("autograd::engine::evaluate_function: AddmmBackward0", a, b - a)
    tb.py("threading.py(359): wait", 75_000, 15_000)
    tb.py("<built-in method acquire of _thread.lock object at 0x7f21>", 75_100, 14_800)
    tb.op("aten::add_", 92_000, 7_000)

    tb.py("threading.py(1015): _bootstrap", 0, 100_000, tid=POLL)
    tb.py("wandb/sdk/lib/asyncio_manager.py(233): _main", 100, 99_800, tid=POLL)
    tb.py("asyncio/base_events.py(683): run_forever", 200, 99_600, tid=POLL)
    for r0, r1, s0, s1, p0, p1, gq, cb in (
            (300, 20_600, 400, 20_000, 500, 19_900, None, (20_100, 20_500)),
            (20_600, 46_000, 20_700, 45_000, 20_800, 44_900, (20_900, 44_800), (45_100, 45_900)),
            (46_000, 99_700, 46_100, 99_600, 46_200, 99_500, (46_300, 99_400), None)):
        tb.py("asyncio/base_events.py(2012): _run_once", r0, r1 - r0, tid=POLL)
        tb.py("asyncio/windows_events.py(446): select", s0, s1 - s0, tid=POLL)
        tb.py(POLL_FRAME, p0, p1 - p0, tid=POLL)
        if gq is not None:
            tb.py("<built-in function GetQueuedCompletionStatus>", gq[0], gq[1] - gq[0], tid=POLL)
        if cb is not None:
            tb.py("asyncio/events.py(87): _run", cb[0], cb[1] - cb[0], tid=POLL)

    tb.py("mylog.py(40): _write", 52_000, 3_000, tid=LOGGER)
    tb.py("mylog.py(40): _write", 76_000, 12_000, tid=LOGGER)
    return tb


def _path(row, label_start: str, what: str | None = None) -> int:
    return sum(p.ns for p in row.critical_path if p.kind == "host"
               and p.resource.startswith(label_start) and what in (None, p.what))


def test_a_thread_blocked_in_a_poll_does_no_work(tmp_path: Path):
    """The event loop's work is its traced time outside its IOCP wait (the proactor's
    ``select`` and the ``_poll`` it calls), counted from the raw events: [0, 0.4),
    [20, 20.7), [45, 46.1) and [99.6, 100) us, 2.6 us of its 100 us."""
    path = cpu_step().write(tmp_path / "cpu.json")
    events = json.loads(path.read_text(), parse_float=Decimal)["traceEvents"]
    mine = [(us_to_ns(e["ts"]), us_to_ns(e["ts"]) + us_to_ns(e["dur"])) for e in events
            if e.get("ph") == "X" and e["tid"] == POLL]
    polls = [(us_to_ns(e["ts"]), us_to_ns(e["ts"]) + us_to_ns(e["dur"])) for e in events
             if e.get("ph") == "X" and e["tid"] == POLL and e["name"].startswith("asyncio/windows_events.py(")
             and e["name"].endswith(("): _poll", "): select"))]
    busy = length(union(mine)) - length(union(polls))
    assert busy == 400 + 700 + 1_100 + 400  # the docstring's: can fail
    r = traceview.analyze(path)
    (t,) = [t for t in r.threads if t.tid == POLL]
    assert t.work_ns == busy
    assert t.categories["wait"] == length(union(polls))


def test_the_path_of_a_cpu_step_stays_on_the_thread_that_works(tmp_path: Path):
    """Walked back by hand from 100 us (every figure in ns):

    main [99, 100) untraced 1,000; ``aten::add_`` dispatch 7,000; [90, 92) untraced 2,000;
    the wait [75, 90): the logger's work ended last in it, at 88 us, after the main
    thread's own last work (71 us), so the main thread keeps [88, 90) as wait 2,000 and the
    path moves to the logger: its frame [76, 88) user 12,000 and, inside the wait, its
    silence [75, 76) untraced 1,000; back on the main thread at 75 us: [71, 75) untraced
    4,000; the backward frame's own [70, 71) dispatch 1,000; ``run_backward``'s own time
    between the nodes [69, 70), [59, 60), [49, 50), [39, 40), [30, 31): wait 5 x 1,000,
    never handed to another thread: no other thread's work ended after the main thread's
    own last node before each (the logger's [52, 55) ended before the node [60, 69), the
    loop's callback [45.1, 45.9) before [50, 59), and the loop is otherwise blocked); the
    nodes dispatch 8,000 + 9,000 x 3; the backward frame's own [29, 30) dispatch 1,000;
    [28, 29) untraced 1,000; ``aten::relu`` 13,000; [14, 15) untraced 1,000;
    ``aten::linear`` 13,000; [0, 1) untraced 1,000.

    So the main thread: dispatch 70,000, wait 7,000, untraced 10,000; the logger 13,000;
    the event loop 0."""
    path = cpu_step().write(tmp_path / "cpu.json")
    r = traceview.analyze(path)
    assert r.steps is not None
    (row,) = r.steps.steps
    assert (row.start_ns, row.end_ns) == (0, 100_000)
    assert _path(row, "main thread", "dispatch") == 7_000 + 1_000 + 8_000 + 3 * 9_000 + 1_000 \
        + 13_000 + 13_000 == 70_000
    assert _path(row, "main thread", "wait") == 2_000 + 5 * 1_000
    assert _path(row, "main thread", "untraced") == 1_000 + 2_000 + 4_000 + 1_000 + 1_000 + 1_000
    assert _path(row, "main thread") == 87_000
    assert _path(row, "logger", "user") == 12_000
    assert _path(row, "logger", "untraced") == 1_000
    assert _path(row, "wandb loop") == 0
    assert row.path_edges == {"wait_to_thread": 1}
    assert sum(p.ns for p in row.critical_path) == row.wall_ns


def test_a_wait_takes_no_work_that_ended_before_the_threads_own(tmp_path: Path):
    """Without the main thread's wait in ``threading.py`` (the logger's second frame
    gone), the logger's only work [52, 55) lies inside ``run_backward`` but ended before
    the node [60, 69) that the main thread ran itself: nothing of the step waited for it,
    and the whole path is the main thread's (a wait handing the path to the thread whose
    work ended last since the wait began would give the logger [30, 70) but for the
    main thread's wake-up)."""
    tb = cpu_step()
    tb.events = [e for e in tb.events if not (e.get("tid") == LOGGER and e.get("ts") == 76)]
    path = tb.write(tmp_path / "cpu.json")
    r = traceview.analyze(path)
    assert r.steps is not None
    (row,) = r.steps.steps
    assert _path(row, "logger") == 0
    assert _path(row, "wandb loop") == 0
    assert _path(row, "main thread") == row.wall_ns == 100_000
    assert "wait_to_thread" not in row.path_edges


def test_a_wait_frame_of_the_thread_waited_for_is_not_its_work(tmp_path: Path):
    """The logger blocked in ``threading.py: wait`` [56, 75.5) us for its next record
    before the frame [76, 88): walked back from the logger's frame, the path charges its
    silence [75.5, 76) (inside the main thread's wait, the silence of the thread waited for
    is that thread's: untraced 500 ns) and, at its wait, goes back to the main thread at
    75.5 us, whose lock acquire [75.1, 75.5) and wait frame [75, 75.1) are its own wait
    (400 + 100 ns): no other thread's work ended in them. By hand: the logger user 12,000
    and untraced 500; the main thread 100,000 - 12,500, its wait 2,000 + 400 + 100 + the
    five 1,000 ns of ``run_backward``; never any of the logger's 19,500 ns of wait."""
    tb = cpu_step()
    tb.py("threading.py(359): wait", 56_000, 19_500, tid=LOGGER)
    path = tb.write(tmp_path / "cpu.json")
    r = traceview.analyze(path)
    assert r.steps is not None
    (row,) = r.steps.steps
    assert _path(row, "logger", "user") == 12_000
    assert _path(row, "logger", "untraced") == 500
    assert _path(row, "logger", "wait") == 0
    assert _path(row, "main thread") == 100_000 - 12_500
    assert _path(row, "main thread", "wait") == 2_000 + 400 + 100 + 5 * 1_000
    assert sum(p.ns for p in row.critical_path) == row.wall_ns


def test_a_wait_inside_compile_is_the_compile_and_elsewhere_a_wait(tmp_path: Path):
    """Triton builds its launcher with a compiler it spawns and waits for: [10, 90) us of
    ``triton/runtime/build.py: _build`` (a compile rule sticking to its subtree) holds
    ``subprocess.py: wait`` [20, 85) over ``waitpid`` [21, 84). That wait is the compile's
    cost (the compiler runs in the child), so all 80 us are compile. The same chain under a
    user's own frame on another thread, [10, 90) with the same children, is 65 us of wait
    (the wrapper [20, 85) with what it holds) and 15 us of user."""
    tb = TraceBuilder(pid=7, tid=MAIN)
    for tid, top in ((MAIN, "triton/runtime/build.py(20): _build"), (LOGGER, "tool.py(5): run")):
        tb.py(top, 10_000, 80_000, tid=tid)
        tb.py("subprocess.py(1264): wait", 20_000, 65_000, tid=tid)
        tb.py("<built-in function waitpid>", 21_000, 63_000, tid=tid)
    r = traceview.analyze(tb.write(tmp_path / "build.json"))
    cats = {t.tid: {k: v for k, v in t.categories.items() if v} for t in r.threads}
    assert cats[MAIN] == {"compile": 80_000}
    assert cats[LOGGER] == {"user": 15_000, "wait": 65_000}
