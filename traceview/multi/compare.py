"""``traceview diff``: compare two explain reports with honest uncertainty.

Works on ``Report`` objects (from a trace, analysed now, or from a saved
``--format json`` file of any schema read back through ``schema.upgrade``), so both kinds of input
take the same path.

Each per-call metric is compared by the difference of medians over warm calls, with a
bootstrap 95% confidence interval (resampling calls on each side independently,
``BOOTSTRAP_RESAMPLES`` times, fixed seed so reruns agree). A difference is
*significant* only when its interval excludes zero; otherwise it is within noise.
``host.categories.<id>`` compares the per-call median ns of each host category (the
window totals depend on how many calls were traced); ``device.busy_ns`` compares window
totals with an interval from resampling per-call device busy time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from traceview.analyses.calls import DEVICE_ONLY_METRICS
from traceview.documents import VERSIONS, builtins, read
from traceview.metadata import NO_CAPTURE
from traceview.printable import printable_path
from traceview.report.claims import Claim, Figure, Relation, pointer, rel
from traceview.stats import median

if TYPE_CHECKING:
    from traceview.report.model import Report

BOOTSTRAP_RESAMPLES = 2_000
CONFIDENCE = 0.95
SEED = 20_261_130
CALL_METRICS = ("api_ns", "kernel_ns", "launch_latency_ns", "host_overhead_ns", "pre_launch_ns",
                "launch_api_ns", "sync_ns")
# ``host.functions`` rows diff asks of a trace it analyses: all of them.
ALL_FUNCTIONS = 10**9
# Capture metadata fields that must match for a comparison to answer one question.
SAME_QUESTION = ("op", "impl", "shape", "dtype", "strides", "layout", "scalars")


class Comparison(msgspec.Struct, frozen=True):
    """One metric compared: the difference of medians and its bootstrap interval (an
    entry of the diff document's ``comparisons``, in this key order)."""

    metric: str
    before: int | None
    after: int | None
    delta: int | None
    ci_low: int | None
    ci_high: int | None
    significant: bool
    n_before: int = 0
    n_after: int = 0

    def as_dict(self) -> dict[str, Any]:
        return builtins(self)


class CallCounts(msgspec.Struct, frozen=True):
    before: int
    after: int


class UnlinkedWork(msgspec.Struct, frozen=True):
    """Each side's device work with no launch record (explain's
    ``launches.unlinked_device_work``): the figures diff's warning about them cites."""

    before: int
    after: int


class DiffDocument(msgspec.Struct, frozen=True):
    """The diff document's layout (``diff --format json``, docs/diff.md), in its key
    order: what is written and what a saved one is read back as (``read_diff``). The
    unprofiled verdict, the code-path changes and the kernels are their own modules'
    plain data."""

    schema_version: int
    before: str
    after: str
    calls: CallCounts
    unprofiled: dict[str, Any] | None
    comparisons: list[Comparison]
    code_path: dict[str, Any] | None
    kernels: list[dict[str, Any]]
    kernels_used: dict[str, Any] | None
    warnings: list[str]
    agreement: str | None
    verdict: str
    # the verdict as a claim: the figures it shows, where this document holds each, and
    # what it asserts between them (``report.claims``; docs/diff.md)
    claims: list[dict[str, Any]] = msgspec.field(default_factory=list)
    # each side's device work with no launch record; null in a document saved before
    # diff wrote it
    unlinked_device_work: UnlinkedWork | None = None


@dataclass
class Diff:
    before_path: str
    after_path: str
    calls_before: int
    calls_after: int
    comparisons: list[Comparison]
    kernels: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)
    #: The speed verdict's data (``traceview.multi.unprofiled``), None when a side has none.
    unprofiled: dict[str, Any] | None = None
    #: Functions and families that changed between the profiled traces (``codepath``).
    code_path: dict[str, Any] | None = None
    #: Which kernels each side launched per call and how they differ (:func:`kernels_used`).
    kernels_used: dict[str, Any] | None = None
    #: Each side's device work with no launch record (:func:`unlinked_claim` words it).
    unlinked_device_work: UnlinkedWork | None = None

    def document(self) -> DiffDocument:
        return DiffDocument(
            VERSIONS["diff"], self.before_path, self.after_path,
            CallCounts(self.calls_before, self.calls_after), self.unprofiled,
            list(self.comparisons), self.code_path, self.kernels, self.kernels_used,
            self.warnings, agreement(self), verdict(self), [c.as_json() for c in claims(self)],
            self.unlinked_device_work)

    def as_dict(self) -> dict[str, Any]:
        return builtins(self.document())


def read_diff(doc: object) -> DiffDocument:
    """A saved diff document (``diff --format json``), upgraded and checked; a
    ``UsageError`` of one line for anything else."""
    return read(doc, "diff", DiffDocument)


def load_report(path: str | Path) -> Report:
    """The report of a saved JSON report or of a trace analysed now."""
    from traceview.io.pieces import read_bytes
    from traceview.io.sources import is_url

    p = path if is_url(path) else Path(path)  # a URL is read through fsspec
    raw = read_bytes(p)
    head = raw.lstrip()[:4096]
    if head.startswith(b"{") and b'"schema_version"' in head and b'"traceEvents"' not in head:
        import orjson

        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError:
            doc = None
        if isinstance(doc, dict) and "schema_version" in doc and "calls" in doc:
            from traceview.errors import TraceLoadError, TraceviewError
            from traceview.report.model import from_dict
            from traceview.report.schema import upgrade

            try:
                doc = upgrade(doc)  # a schema-1 file in schema 2's layout
                problem = _report_problem(doc)
                if problem:
                    raise TraceLoadError(p, f"not a usable explain report: {problem}")
                return from_dict(doc)
            except TraceLoadError:
                raise
            except TraceviewError as exc:
                raise TraceLoadError(p, f"not a usable explain report: {exc}") from None
    from traceview.options import Options
    from traceview.report.pipeline import analyze

    # every function, not explain's top 50 by self time: a function below that cut on
    # one side would read "new" or "gone" on the other with its full size
    return analyze(p, Options(functions_limit=ALL_FUNCTIONS))


def _report_problem(doc: dict[str, Any]) -> str | None:
    """What makes a saved JSON report unusable for ``diff`` (an edited or foreign file)."""
    def node(path: str) -> Any:
        cur: Any = doc
        for part in path.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        return cur

    def is_int(v: Any) -> bool:  # what numpy's int64 holds
        return isinstance(v, int) and not isinstance(v, bool) and -2**63 <= v < 2**63

    for path, ok in (("trace", lambda v: isinstance(v, dict)),
                     ("device.busy_ns", is_int),
                     ("device.kernels", lambda v: isinstance(v, list)
                      and all(isinstance(k, dict) and isinstance(k.get("name"), str)
                              and is_int(k.get("count")) and "p50" in k for k in v)),
                     ("host.categories", lambda v: isinstance(v, dict)),
                     ("calls.per_call", lambda v: isinstance(v, list)
                      and all(isinstance(r, dict) and isinstance(r.get("categories", {}), dict)
                              and isinstance(r.get("metrics"), dict)
                              and all(r["metrics"].get(m) is None or is_int(r["metrics"].get(m))
                                      for m in (*CALL_METRICS, "device_busy_ns"))
                              and all(is_int(x) for x in r.get("categories", {}).values())
                              for r in v)),
                     ("findings", lambda v: isinstance(v, list)
                      and all(isinstance(f, dict) and "id" in f for f in v))):
        if not ok(node(path)):
            return f"'{path}' is missing or of the wrong type"
    return None


def _warm(report: Report, metric: str) -> np.ndarray:
    """The warm calls' figures of ``metric``; none of a device-only figure where the
    window holds no device work (``DEVICE_ONLY_METRICS``)."""
    if metric in DEVICE_ONLY_METRICS and report.device.busy_ns == 0:
        return np.zeros(0, dtype=np.int64)
    vals = [r.metrics.get(metric) for r in report.calls.warm]
    return np.asarray([v for v in vals if v is not None], dtype=np.int64)


def _warm_categories(report: Report, cat: str) -> np.ndarray:
    return np.asarray([r.categories.get(cat, 0) for r in report.calls.warm], dtype=np.int64)


def _median(v: np.ndarray) -> int:
    """The project's one median (``stats.median``, the nearest-rank p50)."""
    return int(median(v.tolist()))


def _boot(a: np.ndarray, b: np.ndarray, stat, rng: np.random.Generator) -> tuple[int, int]:
    ia = rng.integers(0, a.size, size=(BOOTSTRAP_RESAMPLES, a.size))
    ib = rng.integers(0, b.size, size=(BOOTSTRAP_RESAMPLES, b.size))
    d = stat(b[ib]) - stat(a[ia])
    lo = np.quantile(d, (1 - CONFIDENCE) / 2, method="inverted_cdf")
    hi = np.quantile(d, 1 - (1 - CONFIDENCE) / 2, method="inverted_cdf")
    return int(lo), int(hi)


def _lower_median_rows(m: np.ndarray) -> np.ndarray:
    """``stats.median`` of each row at once (the bootstrap's thousands of resamples)."""
    s = np.sort(m, axis=1)
    return s[:, (m.shape[1] + 1) // 2 - 1]


#: Fewest calls on each side for an interval: resampling one call gives that call back
#: every time, and "[-4.41 ms, -4.41 ms]" from one call against one says nothing of noise.
MIN_CALLS_FOR_INTERVAL = 2


def compare_samples(metric: str, a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> Comparison:
    if a.size < MIN_CALLS_FOR_INTERVAL or b.size < MIN_CALLS_FOR_INTERVAL:
        before = _median(a) if a.size else None
        after = _median(b) if b.size else None
        delta = after - before if before is not None and after is not None else None
        return Comparison(metric, before, after, delta, None, None, significant=False,
                          n_before=int(a.size), n_after=int(b.size))
    before, after = _median(a), _median(b)
    lo, hi = _boot(a, b, _lower_median_rows, rng)
    return Comparison(metric, before, after, after - before, lo, hi, not (lo <= 0 <= hi),
                      int(a.size), int(b.size))


def diff_reports(before: Report, after: Report, before_path: str = "before",
                 after_path: str = "after", ab: dict[str, Any] | None = None) -> Diff:
    """``ab``: a saved ``traceview ab`` result, the unprofiled data to lead with."""
    from traceview.multi.codepath import code_path_changes
    from traceview.multi.unprofiled import from_ab, from_captures

    rng = np.random.default_rng(SEED)
    comps = []
    for m in CALL_METRICS:
        comps.append(compare_samples(f"calls.{m}.p50", _warm(before, m), _warm(after, m), rng))
    a, b = _warm(before, "device_busy_ns"), _warm(after, "device_busy_ns")
    busy_b, busy_a = before.device.busy_ns, after.device.busy_ns
    if a.size >= MIN_CALLS_FOR_INTERVAL and b.size >= MIN_CALLS_FOR_INTERVAL:
        # The spread of the difference of per-call busy sums, centred on the window totals'
        # difference (busy outside calls is taken as fixed).
        lo, hi = _boot(a, b, lambda m: m.sum(axis=1), rng)
        shift = (busy_a - busy_b) - int(b.sum() - a.sum())
        lo, hi = lo + shift, hi + shift
        comps.append(Comparison("device.busy_ns", busy_b, busy_a, busy_a - busy_b, int(lo), int(hi),
                                not (lo <= 0 <= hi), int(a.size), int(b.size)))
    else:
        comps.append(Comparison("device.busy_ns", busy_b, busy_a, busy_a - busy_b, None, None,
                                significant=False, n_before=int(a.size), n_after=int(b.size)))
    cats = sorted(set(before.host.categories) | set(after.host.categories))
    for cat in cats:
        a, b = _warm_categories(before, cat), _warm_categories(after, cat)
        if (a.size and a.any()) or (b.size and b.any()):
            comps.append(compare_samples(f"host.categories.{cat}", a, b, rng))

    kb = {k.name: k for k in before.device.kernels}
    ka = {k.name: k for k in after.device.kernels}
    kernels = []
    for name in sorted(set(kb) | set(ka)):
        x, y = kb.get(name), ka.get(name)
        status = "added" if x is None else "removed" if y is None else "common"
        row = {"name": name, "status": status,
               "count_before": x.count if x else 0, "count_after": y.count if y else 0,
               "p50_before": x.stats.p50 if x else None,
               "p50_after": y.stats.p50 if y else None}
        ub, ua = x.unlinked if x else 0, y.unlinked if y else 0
        if ub or ua:  # of the counts, the kernels no launch record links to
            row |= {"unlinked_before": ub, "unlinked_after": ua}
        kernels.append(row)
    unlinked = UnlinkedWork(before.launches.unlinked_device_work,
                            after.launches.unlinked_device_work)
    said = unlinked_claim(unlinked)
    return Diff(printable_path(before_path), printable_path(after_path), before.calls.count,
                after.calls.count, comps, kernels,
                same_question_warnings(before, after) + ([said.text] if said else []),
                unprofiled=from_ab(ab) if ab is not None else from_captures(before, after),
                code_path=code_path_changes(before, after),
                kernels_used=kernels_used(before, after, kernels),
                unlinked_device_work=unlinked)


def kernels_used(before: Report, after: Report, kernels: list[dict[str, Any]]
                 ) -> dict[str, Any] | None:
    """Did the two variants launch different kernels, counts per call or grids?

    From capture's profiled probe (``kernels_used`` in its metadata: name, grid, block,
    count per call) when both traces have one; otherwise from the traces' kernel rows,
    count per call = launches / calls (names and counts, no grids)."""
    from traceview.report.kernel_words import differences

    a, b = ((r.capture_meta or NO_CAPTURE).kernels_used for r in (before, after))
    if isinstance(a, dict) and isinstance(b, dict) and not (a.get("note") or b.get("note")):
        diffs = differences(a, b, ("before", "after"))
        return {"source": "capture's kernel probe (name, grid, block, count per call)",
                "before": a, "after": b, "same": None if diffs is None else not diffs,
                "differences": diffs}
    nb, na = before.calls.count or 0, after.calls.count or 0
    if not nb or not na or not kernels:
        return None
    diffs = [c.text for c in kernel_row_claims(kernels, nb, na)]
    out: dict[str, Any] = {"source": KERNEL_ROWS, "same": not diffs, "differences": diffs}
    unlinked = {side: sum(k.get(f"unlinked_{side}", 0) for k in kernels)
                for side in ("before", "after")}
    if any(unlinked.values()):  # left out of the counts above: said beside them
        out["unlinked"] = unlinked
    return out


KERNEL_ROWS = "the traces' kernel rows (launches / calls; grids not compared)"


def _launched(k: dict[str, Any], side: str, at: tuple[str | int, ...], suffix: str = ""
              ) -> tuple[int, str, list[Figure], list[Relation]]:
    """A kernel row's launches on ``side``: its count less the kernels no launch record
    links to (they ran in the window, launched before it or with their correlation lost,
    and nobody launched them there). Returns the count, the name of the figure that holds
    it, and the figures and relations that fix it: the row's count itself where the row
    has no such kernels, else ``launched`` = ``count`` - ``unlinked``."""
    count = k[f"count_{side}"]
    figs = [Figure(f"count_{side}{suffix}", count, pointer(*at, f"count_{side}"))]
    if f"unlinked_{side}" not in k:
        return count, f"count_{side}{suffix}", figs, []
    u = k[f"unlinked_{side}"]
    figs += [Figure(f"unlinked_{side}{suffix}", u, pointer(*at, f"unlinked_{side}")),
             Figure(f"launched_{side}{suffix}", count - u)]
    return (count - u, f"launched_{side}{suffix}", figs,
            [rel("sum", f"launched_{side}{suffix}", f"unlinked_{side}{suffix}",
                 f"count_{side}{suffix}")])


def kernel_row_claims(kernels: list[dict[str, Any]], nb: int, na: int) -> list[Claim]:
    """How the traces' kernel rows differ per call, one claim over the diff document per
    kernel that differs: one only one side launched (none on the other), or one launched
    a different number of times per call (each side's launches over its calls, as the
    sentence shows them). A launch is a kernel a launch record links to: kernels with
    none (``unlinked_before``/``unlinked_after``, launched before the profiler's window)
    ran, but nobody launched them in the window, so they are not counted (the line says
    how many it left out)."""
    out = []
    for i, k in enumerate(kernels):
        at = ("kernels", i)
        lb, b_name, b_figs, b_rels = _launched(k, "before", at)
        la, a_name, a_figs, a_rels = _launched(k, "after", at)
        figs, rels = (*b_figs, *a_figs), (*b_rels, *a_rels)
        if not lb and not la:
            continue  # nobody launched it in either window
        if not lb or not la:
            side, gone, there = (("after", b_name, a_name) if not lb
                                 else ("before", a_name, b_name))
            out.append(Claim("diff-kernel-rows", f"only {side} launched {k['name']}",
                             (*figs, Figure("zero", 0)),
                             (*rels, rel("eq", gone, "zero"), rel("gt", there, "zero"))))
        elif lb * na != la * nb:
            out.append(Claim(
                "diff-kernel-rows", f"{k['name']}: {lb / nb:.3g} per call before, "
                f"{la / na:.3g} after",
                (*figs, Figure("calls_before", nb, pointer("calls", "before")),
                 Figure("calls_after", na, pointer("calls", "after")),
                 Figure("per_call_before", lb / nb), Figure("per_call_after", la / na)),
                (*rels, rel("ratio", b_name, "calls_before", "per_call_before"),
                 rel("ratio", a_name, "calls_after", "per_call_after"))))
    return out


def same_rows_figures(kernels: list[dict[str, Any]], nb: int, na: int
                      ) -> tuple[list[Figure], list[Relation]]:
    """What "the same in both" asserts of the traces' kernel rows: every kernel launched
    on both sides, as many times per call (one per-call count, each side's launches over
    its calls). A kernel nobody launched in either window (every one of it without a
    launch record) is in none of them."""
    figs = [Figure("calls_before", nb, pointer("calls", "before")),
            Figure("calls_after", na, pointer("calls", "after")), Figure("zero", 0)]
    rels: list[Relation] = []
    for i, k in enumerate(kernels):
        at = ("kernels", i)
        lb, b_name, b_figs, b_rels = _launched(k, "before", at, f":{i}")
        la, a_name, a_figs, a_rels = _launched(k, "after", at, f":{i}")
        if not lb and not la:
            continue
        figs += [*b_figs, *a_figs, Figure(f"per_call:{i}", lb / nb if nb else None)]
        rels += [*b_rels, *a_rels, rel("gt", b_name, "zero"), rel("gt", a_name, "zero"),
                 rel("ratio", b_name, "calls_before", f"per_call:{i}"),
                 rel("ratio", a_name, "calls_after", f"per_call:{i}")]
    return figs, rels


def unlinked_kernels_claim(kernels: list[dict[str, Any]], ku: dict[str, Any]) -> Claim | None:
    """What the kernel rows' counts leave out, said at the end of their line (the
    ``diff-kernels-launched`` claim's tail): each side's kernels with no launch record
    (``kernels_used.unlinked``, the sum of the rows' ``unlinked_before``/
    ``unlinked_after``). None where there are none."""
    u = ku.get("unlinked")
    if not u:
        return None
    figs = [Figure(f"unlinked_{side}", u[side], pointer("kernels_used", "unlinked", side))
            for side in ("before", "after")]
    rels = []
    for side in ("before", "after"):
        parts = [f"unlinked_{side}:{i}" for i, k in enumerate(kernels) if f"unlinked_{side}" in k]
        figs += [Figure(f"unlinked_{side}:{i}", k[f"unlinked_{side}"],
                        pointer("kernels", i, f"unlinked_{side}"))
                 for i, k in enumerate(kernels) if f"unlinked_{side}" in k]
        rels.append(rel("sum", *parts, f"unlinked_{side}"))
    return Claim("diff-kernels-launched",
                 f"not counted: {u['before']} kernel(s) before, {u['after']} after with no "
                 "launch record", tuple(figs), tuple(rels))


def unlinked_claim(u: UnlinkedWork | None) -> Claim | None:
    """How much device work has no launch record on each side (a profiler that dropped
    correlations, common on ROCm), as a claim over the diff document's
    ``unlinked_device_work``: per-call device work counts it in the call it started in,
    and the reader must know the figure rests on that. None where neither side has any
    (or a saved document does not say)."""
    if u is None or not (u.before or u.after):
        return None
    at = "unlinked_device_work"
    return Claim("diff-unlinked-work",
                 f"device work with no launch record: {u.before} item(s) before, {u.after} "
                 "after; per-call device work counts each in the call it started in, device "
                 "busy counts all",
                 (Figure("unlinked_before", u.before, pointer(at, "before")),
                  Figure("unlinked_after", u.after, pointer(at, "after")),
                  Figure("unlinked", u.before + u.after), Figure("zero", 0)),
                 (rel("sum", "unlinked_before", "unlinked_after", "unlinked"),
                  rel("gt", "unlinked", "zero")))


def same_question_warnings(before: Report, after: Report) -> list[str]:
    out = []
    from traceview.metadata import clean_capture

    cb = clean_capture(before.trace.capture)[0] or {}
    ca = clean_capture(after.trace.capture)[0] or {}
    for key in SAME_QUESTION:
        if key in cb or key in ca:
            if cb.get(key) != ca.get(key):
                out.append(f"{key} differs: {cb.get(key)!r} vs {ca.get(key)!r}")
    for key, label in (("device", "device"), ("versions", "software versions"),
                       ("protocol", "protocol")):
        x, y = cb.get(key) or {}, ca.get(key) or {}
        for sub in sorted(set(x) | set(y)):
            if sub in ("timer",):
                continue
            if x.get(sub) != y.get(sub) and (sub in x or sub in y):
                out.append(f"{label}: {sub} differs: {x.get(sub)!r} vs {y.get(sub)!r}")

    def dev_name(r: Report) -> Any:
        meta = r.trace.metadata
        props = meta.get("deviceProperties") if isinstance(meta, dict) else None
        return props[0].get("name") if isinstance(props, list) and props \
            and isinstance(props[0], dict) else None

    if not cb and not ca and dev_name(before) != dev_name(after):
        out.append(f"device differs: {dev_name(before)!r} vs {dev_name(after)!r}")
    gb = any(f.id == "graph-replay" for f in before.findings)
    ga = any(f.id == "graph-replay" for f in after.findings)
    if gb != ga:
        eager, graph = ("after", "before") if gb else ("before", "after")
        out.append(f"{graph} is CUDA graph replay but {eager} is eager: a graph-replay gain does "
                   "not show the eager launch cost")
    pb = before.trace.python_frames
    pa = after.trace.python_frames
    if pb != pa:
        out.append("only one side was profiled with with_stack (Python tracing), which inflates "
                   "host time")
    return out


# A bootstrap over fewer calls than this on a side resamples one value: no interval.
MIN_CALLS_FOR_INTERVAL = 2


def _api(d: Diff) -> tuple[int, Comparison]:
    return next((i, c) for i, c in enumerate(d.comparisons) if c.metric == "calls.api_ns.p50")


def _profiled_claim(d: Diff) -> tuple[str, list[Figure], list[Relation]]:
    """The profiled per-call API comparison, worded as diagnosis (never faster/slower):
    its words, the figures they show and what they assert. An interval and "differs" are
    said only from at least ``MIN_CALLS_FOR_INTERVAL`` calls compared a side (its warm
    calls, every call where none is warm): one call against one resamples to a point,
    which is no interval."""
    i, api = _api(d)
    if api.before is None or api.after is None:
        return "no per-call samples on one side", [], []
    from traceview.units import fmt_ns

    at = ("comparisons", i)
    figs = [Figure(f"p.{k}", getattr(api, k), pointer(*at, k))
            for k in ("before", "after", "delta", "n_before", "n_after")]
    figs += [Figure("p.calls_before", d.calls_before, pointer("calls", "before")),
             Figure("p.calls_after", d.calls_after, pointer("calls", "after"))]
    rels = [rel("sum", "p.before", "p.delta", "p.after")]
    ratio = ""
    if api.before:
        assert api.delta is not None
        figs.append(Figure("p.change", api.delta / api.before))
        rels.append(rel("ratio", "p.delta", "p.before", "p.change"))
        ratio = f" ({api.delta / api.before:+.0%})"
    enough = min(api.n_before, api.n_after) >= MIN_CALLS_FOR_INTERVAL
    fewer = False
    if enough and api.ci_low is not None and api.ci_high is not None:
        figs += [Figure("p.ci_low", api.ci_low, pointer(*at, "ci_low")),
                 Figure("p.ci_high", api.ci_high, pointer(*at, "ci_high")),
                 Figure("p.fewest", MIN_CALLS_FOR_INTERVAL), Figure("p.zero", 0)]
        rels += [rel("ge", "p.n_before", "p.fewest"), rel("ge", "p.n_after", "p.fewest"),
                 rel("le", "p.ci_low", "p.ci_high")]
        if api.significant:
            rels.append(rel("gt", "p.ci_low", "p.zero") if api.ci_low > 0
                        else rel("lt", "p.ci_high", "p.zero"))
        else:
            rels += [rel("le", "p.ci_low", "p.zero"), rel("ge", "p.ci_high", "p.zero")]
        what = "differs" if api.significant else "does not differ beyond noise"
        ci = f", 95% CI [{fmt_ns(api.ci_low)}, {fmt_ns(api.ci_high)}]"
    else:
        figs.append(Figure("p.fewest", MIN_CALLS_FOR_INTERVAL))
        least = "p.n_before" if api.n_before < MIN_CALLS_FOR_INTERVAL else "p.n_after"
        rels.append(rel("lt", least, "p.fewest"))
        # the calls compared: a side's warm calls, or every call where none is warm (an
        # incomplete call's side), so "warm" would not be true of every side
        # where a side's compared calls are fewer than its calls (cold ones left out), the
        # two pairs of counts are told apart, or "2 against 1" reads against "2 vs 2"
        fewer = (api.n_before, api.n_after) != (d.calls_before, d.calls_after)
        what = (f"cannot be told from noise ({api.n_before} against {api.n_after} "
                f"calls{' compared' if fewer else ''}: no interval)")
        ci = ""
    text = (f"the profiled per-call API time {what}: p50 {fmt_ns(api.before)} -> "
            f"{fmt_ns(api.after)}{ratio}{ci}; {d.calls_before} vs {d.calls_after} calls"
            f"{' in all' if fewer else ''}")
    return text, figs, rels


def profiled_line(d: Diff) -> str:
    """The profiled per-call API comparison, worded as diagnosis: never faster/slower."""
    return _profiled_claim(d)[0]


def agreement(d: Diff) -> str | None:
    """How the profiled difference relates to the unprofiled verdict (None: nothing to say).

    ``disagree``: the profiled calls differ significantly in the opposite direction of
    the unprofiled verdict; ``profiled only``: they differ while the unprofiled figures
    cannot tell.
    """
    api = next(c for c in d.comparisons if c.metric == "calls.api_ns.p50")
    if d.unprofiled is None or api.delta is None:
        return None
    word = d.unprofiled["figures"][0]["verdict"]
    if not api.significant:
        return "agree" if word == "cannot tell" else "profiled shows no difference"
    profiled = "after slower" if api.delta > 0 else "after faster"
    if word == "cannot tell":
        return "profiled only"
    return "agree" if word == profiled else "disagree"


def _unprofiled_claim(d: Diff) -> tuple[list[Figure], list[Relation]]:
    """What the unprofiled line asserts (``multi.unprofiled.line_claim``: its words and
    figures are made together): the processes or rounds it counts, the difference's
    estimate and interval where it has one, on the side of zero its word says ("after
    faster": all of the interval below zero; "cannot tell": it covers zero). Its figures
    are named ``u.`` here, beside the profiled line's."""
    from traceview.multi.unprofiled import line_claim

    assert d.unprofiled is not None
    c = line_claim(d.unprofiled, ("unprofiled",))
    figs = [Figure(f"u.{f.name}", f.value, f.path) for f in c.figures]
    rels = [Relation(r.kind, tuple(f"u.{n}" for n in r.figures)) for r in c.relations]
    return figs, rels


def verdict_claim(d: Diff) -> Claim:
    """The verdict sentence as a claim: speed from unprofiled figures only; the profiled
    calls named as diagnosis (their figures cited too where the sentence shows them)."""
    api = _api(d)[1]
    if d.unprofiled is None:
        if api.before is None or api.after is None:
            return Claim("diff-verdict", "no per-call samples on one side and no unprofiled "
                         "figures: no verdict", ())
        line, figs, rels = _profiled_claim(d)
        return Claim("diff-verdict", (
            "no speed verdict: unprofiled figures are missing on a side (capture "
            "metadata or diff --ab); " + line + " -- profiling perturbs "
            "what it measures, so this diagnoses, it does not judge speed"),
            tuple(figs), tuple(rels))
    line = d.unprofiled["line"]
    figs, rels = _unprofiled_claim(d)
    how = agreement(d)
    if how in ("disagree", "profiled only"):
        note = ""
        speed = (d.code_path or {}).get("machine_speed") or {}
        if speed.get("uniform"):
            # the factor is the median of the shared functions' ratios, inside their
            # middle half (``codepath.machine_speed``)
            at = ("code_path", "machine_speed")
            figs = figs + [Figure(f"speed.{k}", speed[k], pointer(*at, k))
                           for k in ("q1", "factor", "q3")]
            rels = rels + [rel("le", "speed.q1", "speed.factor"),
                           rel("le", "speed.factor", "speed.q3")]
            note = (f"; unchanged functions all moved by about x{speed['factor']:.2f}: "
                    "the profiled runs ran at different machine speeds")
        lead = ("The profiled calls disagree" if how == "disagree" else
                "The profiled calls show a difference the unprofiled figures do not")
        p_line, p_figs, p_rels = _profiled_claim(d)
        figs, rels = figs + p_figs, rels + p_rels
        line += (f". {lead}: " + p_line + note
                 + " (profiled figures diagnose; they do not judge speed)")
    return Claim("diff-verdict", line, tuple(figs), tuple(rels))


def claims(d: Diff) -> list[Claim]:
    """The sentences of a diff as claims over its document: the verdict, and the
    machine-speed note where the shared functions all moved by one factor."""
    from traceview.multi.codepath import speed_claim

    speed = (d.code_path or {}).get("machine_speed") or {}
    return [verdict_claim(d), *([speed_claim(speed)] if speed.get("uniform") else [])]


def verdict(d: Diff) -> str:
    """Speed from unprofiled figures only; the profiled calls are named as diagnosis."""
    return verdict_claim(d).text
