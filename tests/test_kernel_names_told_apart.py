"""Kernel names in sentences tell kernels of one template apart, as the tables do.

Several kernels fold to the same short name (``vectorized_elementwise_kernel<…>(…)`` for a
fill, an add, a sqrt...). A sentence that names a kernel by that short name ("6 per call
before, 5 after") does not say which of them moved, so ``diff``'s "kernels launched
DIFFER" line and the markdown reproducer's top kernels name each kernel as the kernel
tables do: with the template arguments that tell it from the others.

Each name shown is checked against the raw events independently of the labelling code:
read with ``…`` as "anything" (and namespaces and spaces dropped on both sides), it must
match exactly one kernel name of the traces, the one whose raw counts the sentence gives.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import public_corpus
import pytest
from typer.testing import CliRunner

from tracebuilder import TraceBuilder
from traceview.cli.app import app

runner = CliRunner()
US = 1000
FILL_F = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
          "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
          "at::detail::Array<char*, 1>)")
FILL_I = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>, "
          "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<int>, "
          "at::detail::Array<char*, 1>)")
ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
       "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
       "at::detail::Array<char*, 3>)")
PARAM = "facebookresearch__param/chakra_traces__dlrm_kineto__worker{}_step_12.json.gz"
_NS = re.compile(r"\b(?:\w+::)+")


def _plain(name: str) -> str:
    """Template arguments with namespaces and spaces dropped: what a shown name keeps."""
    return re.sub(r"\s+", "", _NS.sub("", name))


def _in_order(pattern: str, text: str, whole: bool) -> bool:
    """``pattern``'s pieces between ``…`` found in ``text`` in order, the first at its
    start; with ``whole``, the last at its end too (unless the pattern ends in ``…``)."""
    pieces = pattern.split("…")
    at = 0
    for i, piece in enumerate(pieces):
        found = text.find(piece, at) if i else (0 if text.startswith(piece) else -1)
        if found < 0:
            return False
        at = found + len(piece)
    return not whole or pattern.endswith("…") or at == len(text)


def matches(shown: str, names: set[str]) -> set[str]:
    """The full names ``shown`` can stand for. Its qualified name (up to the first ``<``)
    is the kernel's own, ``…`` for a part left out; the rest, read with namespaces and
    spaces dropped, is found in order between its ``…`` (where a long name was cut,
    ``...``, and the ``[1 of k variants]`` note read as ``…``)."""
    shown = re.sub(r"\s*\[1 of \d+ variants\]$", "…", shown).replace("...", "…")
    head, lt, rest = shown.partition("<")
    out = set()
    for n in names:
        n_head, n_lt, n_rest = n.removeprefix("void ").partition("<")
        if bool(lt) != bool(n_lt) or not _in_order(head, n_head, True):
            continue
        if _in_order(_plain(rest), _plain(n_rest), True):
            out.add(n)
    return out


def _side(fills: int) -> TraceBuilder:
    tb = TraceBuilder()
    tb.annotation("ProfilerStep#0", 0, 1_000 * US)
    t = 10 * US
    for name, n in ((FILL_F, fills), (FILL_I, 2), (ADD, 3)):
        for _ in range(n):
            tb.launched_kernel(name, t, 5 * US, t + 10 * US, 4 * US)
            t += 50 * US
    return tb


def _kernel_counts(events: list[dict]) -> Counter:
    return Counter(e["name"] for e in events if e.get("ph") == "X" and e.get("cat") == "kernel")


def _differ_clauses(out: str) -> list[tuple[str, str, str]]:
    """``(name, before, after)`` per "<name>: b per call before, a after" of the DIFFER line."""
    line = next(ln for ln in out.splitlines() if "kernels launched DIFFER" in ln)
    line = line.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    body = line.split("): ", 1)[1] if "compared)): " in line else line.split(": ", 1)[1]
    found = (re.fullmatch(r"(.+): (\S+) per call before, (\S+) after", c)
             for c in body.strip().split("; "))
    return [(m[1], m[2], m[3]) for m in found if m]


@pytest.mark.parametrize("fmt", ["text", "md"])
def test_the_differ_line_names_the_kernel_that_moved_among_its_template(tmp_path, fmt):
    before, after = _side(2), _side(1)
    b, a = before.write(tmp_path / "b.json"), after.write(tmp_path / "a.json")
    res = runner.invoke(app, ["diff", str(b), str(a), "-f", fmt], env={"COLUMNS": "2000"})
    assert res.exit_code == 0, res.output
    cb, ca = _kernel_counts(before.events), _kernel_counts(after.events)
    moved = {n for n in cb | ca if cb[n] != ca[n]}
    assert moved == {FILL_F}  # the builder's counts: 2 before, 1 after
    clauses = _differ_clauses(res.output)
    assert len(clauses) == 1
    shown, nb, na = clauses[0]
    # the shown name stands for the fill of floats alone, not for the three kernels that
    # share the template (the short name did: every one of them matched it)
    assert matches(shown, set(cb) | set(ca)) == {FILL_F}
    assert (int(nb), int(na)) == (cb[FILL_F], ca[FILL_F])


def _assert_top_kernels_each_one(md: str, counts: dict[str, int]) -> None:
    """The reproducer's three top kernels each name one kernel of the raw events, with
    that kernel's count."""
    line = next(ln for ln in md.splitlines() if ln.startswith("| Operation / model"))
    shown = re.findall(r"`([^`]+)` x(\d+)", line.split("kernels: ", 1)[1])
    assert len(shown) == 3
    for name, n in shown:
        found = matches(name, set(counts))
        assert len(found) == 1, (name, found)
        assert counts[found.pop()] == int(n)


def test_the_markdown_reproducer_names_its_top_kernels_apart(tmp_path):
    tb = _side(4)
    path = tb.write(tmp_path / "t.json")
    res = runner.invoke(app, ["explain", str(path), "-f", "md"])
    assert res.exit_code == 0, res.output
    counts = _kernel_counts(tb.events)
    _assert_top_kernels_each_one(res.output, counts)


def _corpus(w: int) -> Path:
    path = public_corpus.locate(PARAM.format(w))
    if path is None:
        pytest.skip(f"{PARAM.format(w)} is not in this machine's corpus copy")
    return path


def _raw_kernels(path: Path) -> Counter:
    with gzip.open(path) as f:
        return _kernel_counts(json.load(f)["traceEvents"])


def _launched_kernels(path: Path) -> Counter:
    """Kernels per name a runtime (launch) event's correlation id links to: what the
    line counts (rank 1's step also runs 64 kernels its previous step launched)."""
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    launched = {e["args"].get("correlation") for e in events if e.get("ph") == "X"
                and e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("args")}
    return Counter(e["name"] for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"
                   and (e.get("args") or {}).get("correlation") in launched - {None})


def test_dlrm_ranks_differ_line_names_each_kernel_apart():
    p1, p4 = _corpus(1), _corpus(4)
    c1, c4 = _launched_kernels(p1), _launched_kernels(p4)
    moved = {n for n in c1 | c4 if c1[n] != c4[n] and c1[n] and c4[n]}
    assert moved  # ranks 1 and 4 launched some kernel a different number of times
    for fmt in ("text", "md"):
        res = runner.invoke(app, ["diff", str(p1), str(p4), "-f", fmt], env={"COLUMNS": "4000"})
        assert res.exit_code == 0, res.output
        clauses = _differ_clauses(res.output)
        said = {}
        for shown, nb, na in clauses:
            found = matches(shown, set(c1) | set(c4))
            assert len(found) == 1, (fmt, shown, found)
            said[found.pop()] = (float(nb), float(na))
        assert said == {n: (float(c1[n]), float(c4[n])) for n in moved}  # one call each


@pytest.mark.parametrize("w", [1, 4])
def test_dlrm_reproducer_top_kernels_are_each_one_kernel(w):
    path = _corpus(w)
    counts = _raw_kernels(path)
    res = runner.invoke(app, ["explain", str(path), "-f", "md"])
    assert res.exit_code == 0, res.output
    _assert_top_kernels_each_one(res.output, counts)
