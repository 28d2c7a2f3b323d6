"""Per warm call: every host function's time, the modules it goes to, and the typical tree.

Totals over the window mix the cold call, one-off profiler work and the calls
themselves; what a user compares between implementations is what *one warm call*
spends where. Everything here is computed per warm call and summarised as the p50 over
the warm calls (integer ns):

* **functions** — for each host function (Python frame, op, API call): the union of its
  intervals inside the call (``inclusive``) and the time it owns there (``self``). The
  p50 is over the warm calls that contain it (``calls_with``); a function in fewer than
  half of them is flagged ``few_calls``, never averaged over all calls.
* **families** — each instant of a call goes to the module of the innermost Python frame
  owning it (``flag_gems/utils/libentry.py(…): run`` -> ``flag_gems.utils.libentry``);
  builtins, ops and API calls go to the module that called them; instants no event owns
  are ``(untraced)``. The families of a call sum to its wall time exactly.
* **tree** — the calls' top-down tree: a node per path of names from the call's first
  level, siblings of one name merged (their time summed, ``count`` per call), inclusive
  and self as the p50 over the warm calls that contain the node.
* **perturbation** — Python frames and profiler events recorded per call, and the
  profiler's own time inside it.

A row belongs to the call it starts in; nesting is the sweep's (start, longest first).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from traceview import intervals
from traceview.analyses.calls import Call
from traceview.analyses.host import HostTimeline
from traceview.model import Lane, Trace
from traceview.stats import percentile, sort_within_groups

UNTRACED_FAMILY = "(untraced)"
NO_FRAME_FAMILY = "(no Python frame)"
# a Python frame's name: "path/to/file.py(123): func"
_FRAME = re.compile(r"^(?P<path>.+?\.py)\(\d+\): ")
_HASH = re.compile(r"[0-9a-f]{16,}")
_SITE = re.compile(r"^.*/(?:site|dist)-packages/")
# packages whose checkouts (an editable install, a source tree on sys.path) name their
# frames by absolute path: traceview itself (the capture harness), and the libraries its
# measuring half runs (the module table sorts time into these)
CHECKOUT_ROOTS = frozenset({"traceview", "torch", "triton", "flag_gems", "transformers"})
# nodes below this share of the call's p50 are folded into their parent
TREE_MIN_SHARE = 0.005
TREE_MAX_NODES = 400


def _checkout_module(path: str) -> str:
    """The module path of an absolute file path outside site-packages (``.py`` cut off).

    A package installed editable (``pip install -e .``) is imported from its checkout,
    and the profiler names its frames by that absolute path: ``/home/u/traceview/
    traceview/capture/impls.py``. Its module starts at its package's directory: the last
    ``src`` directory's child (the src layout), else the last directory named as a known
    package (``CHECKOUT_ROOTS``: traceview's own frames are the capture harness, and must
    not land on the library under test). Anything else is a file outside any package
    (generated code, scripts): its directory and name."""
    parts = path.split("/")
    dirs = parts[:-1]
    if "src" in dirs:
        at = len(dirs) - dirs[::-1].index("src")
        if at < len(parts) and parts[at].isidentifier():
            return "/".join(parts[at:])
    roots = [i for i, d in enumerate(dirs) if d in CHECKOUT_ROOTS]
    if roots:
        return "/".join(parts[roots[-1]:])
    return "/".join(parts[-2:])


def module_of(name: str) -> str | None:
    """``flag_gems/utils/libentry.py(200): run`` -> ``flag_gems.utils.libentry``; None
    for builtins and anything that is not a Python frame of a file."""
    m = _FRAME.match(name)
    if m is None:
        return None
    path = _SITE.sub("", m.group("path"))[:-3]
    if path.startswith("/"):
        path = _checkout_module(path)
    path = path.removesuffix("/__init__")
    path = _HASH.sub(lambda h: h.group()[:8] + "~", path)  # generated files' hashes
    return path.strip("/").replace("/", ".")


_LINE = re.compile(r"\(\d+\): ")
_ADDR = re.compile(r" at 0x[0-9a-fA-F]+")


def function_key(name: str) -> str:
    """``torch/_prims_common/__init__.py(1575): elementwise_dtypes`` ->
    ``torch/_prims_common/__init__.py: elementwise_dtypes``; addresses dropped."""
    return _ADDR.sub("", _LINE.sub(": ", name))


def function_identity(name: str) -> str:
    """What makes two traces' functions one function: a Python frame's module
    (``module_of``: the package path, wherever the checkout or site-packages lies on each
    machine) and its name, without line number or object address; anything else its
    name without them (``function_key``)."""
    key = function_key(name)
    mod = module_of(name)
    if mod is None:
        return key
    return f"{mod}: {key.partition(': ')[2]}"


def p50(values: list[int]) -> int | None:
    return percentile(sorted(values), 50) if values else None


@dataclass(frozen=True)
class FunctionPerCall:
    name: str
    calls_with: int  # warm calls that contain it
    inclusive_ns: int  # p50 over those calls of the union of its intervals in the call
    self_ns: int  # p50 over those calls of its self time in the call
    count: int  # p50 occurrences per call
    few_calls: bool  # in fewer than half of the warm calls
    # p50 over the same calls of their wall time: the whole its inclusive p50 is a share
    # of (in each call its inclusive time is at most the call's wall, so the p50s keep
    # that order: at most 100%, where the p50 call of a trace of several kinds is not)
    call_ns: int = 0


@dataclass(frozen=True)
class Family:
    name: str
    ns_per_call: int  # p50 over warm calls (0 where absent)
    share: float  # of all warm calls' time
    calls_with: int


@dataclass(frozen=True)
class TreeNode:
    name: str
    category: str
    inclusive_ns: int
    self_ns: int
    count: int  # occurrences per call (p50)
    calls_with: int
    children: list[TreeNode] = field(default_factory=list)
    folded: int = 0  # children below TREE_MIN_SHARE left out
    folded_ns: int = 0  # their inclusive time (sum of p50s)

    def as_dict(self, depth: int | None = None) -> dict:
        d = {"name": self.name, "category": self.category, "inclusive_ns": self.inclusive_ns,
             "self_ns": self.self_ns, "count": self.count, "calls_with": self.calls_with}
        if self.folded:
            d["folded"] = {"nodes": self.folded, "inclusive_ns": self.folded_ns}
        kids = self.children if depth is None or depth > 0 else []
        d["children"] = [c.as_dict(None if depth is None else depth - 1) for c in kids]
        return d


@dataclass(frozen=True)
class Perturbation:
    python_frames_per_call: int | None
    events_per_call: int | None
    profiler_ns_per_call: int | None
    unprofiled_share: float | None  # unprofiled full API / profiled warm call (p50s)
    unprofiled_ns: int | None


@dataclass(frozen=True)
class PerCall:
    warm_calls: int
    functions: dict[str, FunctionPerCall]
    families: list[Family]
    tree: list[TreeNode]  # the call's first level
    perturbation: Perturbation
    # by identity (``function_identity``), for identities several names share (one
    # module's ``forward`` at several lines: a model's and its blocks'): the union of
    # their intervals per call, so the one nested in the other is counted once
    identities: dict[str, FunctionPerCall] = field(default_factory=dict)


def parents(st: np.ndarray, en: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Depth and parent position of each interval (sorted by start, longest first),
    assuming they nest; -1 at the top."""
    n = st.size
    depth = np.arange(n) - np.searchsorted(np.sort(en), st, side="right")
    if n == 0:
        return depth, np.zeros(0, np.int64)
    order = np.lexsort((np.arange(n), depth))
    key = depth[order] * (n + 1) + order
    k = np.searchsorted(key, (depth - 1) * (n + 1) + np.arange(n)) - 1
    par = np.where(depth > 0, order[np.maximum(k, 0)], -1)
    return depth, par


def analyze_per_call(trace: Trace, timeline: HostTimeline, calls: list[Call],
                     baseline_ns: int | None = None,
                     zero_rows: np.ndarray | None = None) -> PerCall:
    """The warm calls' functions, families, tree and perturbation. ``zero_rows``: the
    trace's zero-length function slices (``hot_functions.zero_length_rows``, found here
    where not given), which the tree counts as ``host.functions`` does."""
    # Per *warm* call only: with no warm call (a cold twin, a compile trace) there is no
    # steady state to describe, and the per-call pass over a cold compile's millions of
    # Python frames would cost more than the rest of explain together (measured on the
    # real 450 MB compile trace: 3.3 s of 5.9 s).
    warm = [c for c in calls if c.warm]
    s = trace.slices
    tl = timeline
    empty = PerCall(len(warm), {}, [], [], Perturbation(None, None, None, None, None))
    if not warm or tl.rows.size == 0:
        return empty
    rows, row_cat, seg_pos, st, en = _rows_in_calls(trace, tl, warm)
    depth, par = parents(st, en)
    names = s.name[rows]
    fam, fam_names = _families(trace, rows, names, depth, par)
    seg_fam = (np.where(seg_pos >= 0, fam[np.maximum(seg_pos, 0)], fam_names.index(UNTRACED_FAMILY))
               if fam.size else np.full(seg_pos.size, fam_names.index(UNTRACED_FAMILY), np.int64))

    c_st = np.asarray([c.start_ns for c in warm], np.int64)
    c_en = np.asarray([c.end_ns for c in warm], np.int64)
    fam_per_call, self_in = _time_per_call(tl, seg_pos, seg_fam, c_st, c_en, len(fam_names),
                                           rows.size)
    families = _family_shares(fam_per_call, fam_names)

    # rows starting inside each warm call (calls are disjoint and sorted)
    order = np.argsort(c_st, kind="stable")
    c_st, c_en = c_st[order], c_en[order]
    ci = np.searchsorted(c_st, st, side="right") - 1
    inside = (ci >= 0) & (st < c_en[np.maximum(ci, 0)])
    pos = np.flatnonzero(inside)
    ci = ci[pos]
    ends = np.minimum(en[pos], c_en[ci])
    self_ns = self_in[pos]
    if pos.size == 0:  # the calls hold no event of this thread (calls on another thread)
        return PerCall(len(warm), {}, families, [], Perturbation(None, None, None, None, None))

    n_calls = len(warm)
    api_p50 = p50([c.api_ns for c in warm])
    perturbation = _perturbation(trace, warm, tl.lane, api_p50, baseline_ns)
    functions = _functions_per_call(trace.names, ci, names[pos], st[pos], ends, self_ns, c_st,
                                    c_en, n_calls)
    identities = _identities_per_call(trace.names, ci, names[pos], st[pos], ends, self_ns,
                                      c_st, c_en, n_calls)
    # the zero-length calls (under the profiler's resolution) ran: the tree counts them
    # under the slice owning their instant, with no time, as host.functions counts them
    zpar, zname, zt, zci, zcat = _zero_rows_in_calls(trace, tl, seg_pos, c_st, c_en, zero_rows)
    n_rows = names.size
    tree = _tree(trace, tl.categories, np.concatenate((row_cat, zcat)),
                 np.concatenate((pos, n_rows + np.arange(zt.size))), np.concatenate((ci, zci)),
                 np.concatenate((par, zpar)), np.concatenate((names, zname)),
                 np.concatenate((st, zt)), np.concatenate((ends, zt)),
                 np.concatenate((self_ns, np.zeros(zt.size, np.int64))),
                 n_calls, api_p50 or 0, n_rows)
    return PerCall(n_calls, functions, families, tree, perturbation, identities)


def _zero_rows_in_calls(trace: Trace, tl: HostTimeline, seg_pos: np.ndarray,
                        c_st: np.ndarray, c_en: np.ndarray, zero_rows: np.ndarray | None):
    """The thread's zero-length function slices starting inside a warm call (``c_st``,
    ``c_en``: sorted), as rows to append to the kept ones: each one's parent (the kept
    row owning the segment at its instant, the innermost slice around it; -1 where none
    does), name code, instant, call and category (its segment's, as ``host.functions``
    gives it). The sweep leaves them out: they own no instant, so the times cannot nest
    them among themselves, and each goes directly under the slice owning its instant."""
    from traceview.analyses.hot_functions import zero_length_rows

    empty = np.zeros(0, np.int64)
    if tl.lane is None or tl.seg_start.size == 0 or c_st.size == 0:
        return empty, empty, empty, empty, empty
    z = zero_length_rows(trace) if zero_rows is None else zero_rows
    s = trace.slices
    z = z[s.lane[z] == tl.lane.index]
    t = s.start[z].astype(np.int64)
    ci = np.searchsorted(c_st, t, side="right") - 1
    ok = (ci >= 0) & (t < c_en[np.maximum(ci, 0)])
    ok &= (t >= int(tl.seg_start[0])) & (t < int(tl.seg_end[-1]))
    z, t, ci = z[ok], t[ok], ci[ok]
    seg = np.searchsorted(tl.seg_start, t, side="right") - 1
    par = np.asarray(seg_pos[seg], np.int64)
    cat = np.asarray(tl.seg_cat[seg], np.int64)
    return par, s.name[z].astype(np.int64), t, ci.astype(np.int64), cat


def _rows_in_calls(trace: Trace, tl: HostTimeline, warm: list[Call]):
    """Only the rows overlapping a warm call (their ancestors included) matter: a cold
    compile's million frames outside the warm calls are left out before any pass. The
    kept rows, their categories, the segments' positions renumbered to them, and their
    spans clipped to the window."""
    s = trace.slices
    rows = tl.rows
    w0, w1 = int(tl.seg_start[0]), int(tl.seg_end[-1])
    c0 = np.sort(np.asarray([c.start_ns for c in warm], np.int64))
    c1 = np.asarray([c.end_ns for c in sorted(warm, key=lambda c: c.start_ns)], np.int64)
    r0, r1 = s.start[rows], s.end[rows]
    i = np.searchsorted(c0, r0, side="right") - 1  # a call the row starts in
    j = np.searchsorted(c0, r1, side="left") - 1  # the last call starting before it ends
    keep = np.flatnonzero(((i >= 0) & (r0 < c1[np.maximum(i, 0)]))
                          | ((j >= 0) & (r0 < c1[np.maximum(j, 0)])))
    remap = np.full(rows.size, -1, np.int64)
    remap[keep] = np.arange(keep.size)
    seg_pos = np.where(tl.seg_pos >= 0, remap[np.maximum(tl.seg_pos, 0)], -1)
    rows = rows[keep]
    row_cat = tl.row_cat[keep]
    st = np.maximum(s.start[rows], w0)
    en = np.minimum(s.end[rows], w1)
    return rows, row_cat, seg_pos, st, en


def _families(trace: Trace, rows: np.ndarray, names: np.ndarray, depth: np.ndarray,
              par: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The family of each row: its own module, else (builtins, ops) its parent's; and
    the family names its codes index."""
    s = trace.slices
    uniq = np.unique(names)
    fam_names = [UNTRACED_FAMILY, NO_FRAME_FAMILY]
    fam_index = {f: i for i, f in enumerate(fam_names)}
    own_lut = np.full(len(trace.names) + 1, -1, np.int64)
    py = trace.cat_code("python_function")
    for c in uniq.tolist():
        mod = module_of(trace.names[c])
        if mod is not None:
            own_lut[c] = fam_index.setdefault(mod, len(fam_index))
    fam_names = list(fam_index)
    own = own_lut[names]
    own[s.cat[rows] != py] = -1
    fam = np.full(rows.size, fam_index[NO_FRAME_FAMILY], np.int64)
    narrow = depth.astype(np.int16) if depth.size and depth.max() < 2**15 else depth
    by_depth = np.argsort(narrow, kind="stable")  # a radix sort when narrow
    top_depth = int(depth.max()) if depth.size else -1  # no row of this thread in the calls
    bounds = np.searchsorted(depth[by_depth], np.arange(top_depth + 2))
    for d in range(top_depth + 1):
        lv = by_depth[bounds[d]:bounds[d + 1]]
        inherited = fam[par[lv]] if d else np.full(lv.size, fam_index[NO_FRAME_FAMILY])
        fam[lv] = np.where(own[lv] >= 0, own[lv], inherited)
    return fam, fam_names


def _time_per_call(tl: HostTimeline, seg_pos: np.ndarray, seg_fam: np.ndarray,
                   c_st: np.ndarray, c_en: np.ndarray, n_fams: int,
                   n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Families per call, from the segments clipped to the call (they sum to its wall
    time), and each row's own time inside the calls."""
    j0 = np.searchsorted(tl.seg_end, c_st, side="right")
    j1 = np.searchsorted(tl.seg_start, c_en, side="left")
    call, j = intervals.expand_ranges(j0, j1)  # every (call, segment inside it) pair
    ln = np.minimum(tl.seg_end[j], c_en[call]) - np.maximum(tl.seg_start[j], c_st[call])
    flat = np.zeros(c_st.size * n_fams, np.int64)
    np.add.at(flat, call * n_fams + seg_fam[j], ln)
    fam_per_call = flat.reshape(c_st.size, n_fams)
    sp = seg_pos[j]
    owned = sp >= 0
    self_in = np.zeros(n_rows, np.int64)
    np.add.at(self_in, sp[owned], ln[owned])
    return fam_per_call, self_in


def _family_shares(fam_per_call: np.ndarray, fam_names: list[str]) -> list[Family]:
    """Each family that holds time: its p50 per call, share of all, calls it is in."""
    total = int(fam_per_call.sum())
    families = []
    for f, name in enumerate(fam_names):
        col = fam_per_call[:, f]
        if not col.any():
            continue
        families.append(Family(name, p50(col.tolist()) or 0, round(int(col.sum()) / max(total, 1), 4),
                               int((col > 0).sum())))
    families.sort(key=lambda f: (-f.share, f.name))
    return families


def _perturbation(trace: Trace, warm: list[Call], lane: Lane | None,
                  api_p50: int | None, baseline_ns: int | None) -> Perturbation:
    """How much the profiler may have perturbed the calls: events and Python frames per
    call, profiler time, and the profiled API p50 against the unprofiled baseline.

    The events are every slice the profiler recorded on the calls' thread starting inside
    a call, the call's own event apart (docs/json.md): ranges and zero-length events cost
    the profiler as much as the host timeline's rows do, which leave them out (a DLRM
    rank's step: 1,288 recorded, 1,000 of them rows)."""
    n_calls = len(warm)
    py = trace.cat_code("python_function")
    s = trace.slices
    order = sorted(warm, key=lambda c: c.start_ns)  # the warm calls are disjoint
    c_st = np.asarray([c.start_ns for c in order], np.int64)
    c_en = np.asarray([c.end_ns for c in order], np.int64)
    on = (np.flatnonzero((s.lane == lane.index) & (s.start >= c_st.min()) & (s.start < c_en.max()))
          if lane is not None and n_calls else np.zeros(0, np.int64))
    st = s.start[on]
    ci = np.searchsorted(c_st, st, side="right") - 1
    inside = (ci >= 0) & (st < c_en[np.maximum(ci, 0)])
    # the call's own event (its range, frame or op: the outermost one starting where the
    # call does) is the call, not an event recorded inside it
    own = np.zeros(on.size, bool)
    at_start = np.flatnonzero(inside & (st == c_st[np.maximum(ci, 0)]))
    if at_start.size:
        longest = at_start[np.lexsort((-s.end[on[at_start]], ci[at_start]))]
        first = np.ones(longest.size, bool)
        first[1:] = ci[longest[1:]] != ci[longest[:-1]]
        own[longest[first]] = True
    inside &= ~own
    events = np.bincount(ci[inside], minlength=n_calls)
    frames = (np.bincount(ci[inside & (s.cat[on] == py)], minlength=n_calls)
              if py >= 0 else None)
    prof = [c.categories.get("profiler", 0) for c in warm]
    return Perturbation(
        p50(frames.tolist()) if frames is not None and frames.any() else None,
        p50(events.tolist()), p50(prof),
        round(baseline_ns / api_p50, 4) if baseline_ns and api_p50 else None, baseline_ns)


def _identities_per_call(labels: tuple[str, ...] | list[str], ci: np.ndarray,
                         names: np.ndarray, st: np.ndarray, ends: np.ndarray,
                         self_ns: np.ndarray, c_st: np.ndarray, c_en: np.ndarray,
                         n_calls: int) -> dict[str, FunctionPerCall]:
    """``_functions_per_call`` by identity, for the identities that several of the
    calls' names share (only those: the others' figures are their name's)."""
    present = np.unique(names).tolist()
    ident = {c: function_identity(labels[c]) for c in present}
    counts: dict[str, int] = defaultdict(int)
    for v in ident.values():
        counts[v] += 1
    shared = sorted(k for k, n in counts.items() if n > 1)
    if not shared:
        return {}
    code = {k: i for i, k in enumerate(shared)}
    of_name = np.full(len(labels), -1, np.int64)
    for c, v in ident.items():
        of_name[c] = code.get(v, -1)
    idc = of_name[names]
    m = np.flatnonzero(idc >= 0)
    return _functions_per_call(shared, ci[m], idc[m], st[m], ends[m], self_ns[m], c_st, c_en,
                               n_calls)


def _functions_per_call(labels: tuple[str, ...] | list[str], ci: np.ndarray,
                        names: np.ndarray, st: np.ndarray, ends: np.ndarray,
                        self_ns: np.ndarray, c_st: np.ndarray, c_en: np.ndarray,
                        n_calls: int) -> dict[str, FunctionPerCall]:
    """Functions per call: union of intervals and self time per (call, name), then the
    p50 over the calls each function is in (rows are inside calls, in start order).
    ``names`` are codes of ``labels`` (the trace's names, or identities)."""
    key = ci * (len(labels) + 1) + names
    by = np.argsort(key, kind="stable")  # within a key, still in start order
    k_sorted = key[by]
    first = np.flatnonzero(np.append(True, k_sorted[1:] != k_sorted[:-1]))
    grp = np.repeat(np.arange(first.size), np.diff(np.append(first, by.size)))
    g_st, g_en = st[by] - c_st[ci[by]], ends[by] - c_st[ci[by]]
    span = int((c_en - c_st).max()) + 1
    off = grp * span
    prev = np.maximum.accumulate(g_en + off)
    prev = np.append(-1, prev[:-1]) - off
    incl = np.bincount(grp, weights=np.maximum(g_en - np.maximum(g_st, prev), 0),
                       minlength=first.size).astype(np.int64)
    slf = np.bincount(grp, weights=self_ns[by], minlength=first.size).astype(np.int64)
    cnt = np.bincount(grp, minlength=first.size)
    wall = (c_en - c_st)[ci[by][first]]  # each (call, name) group's call wall time
    g_name = k_sorted[first] % (len(labels) + 1)
    # per name, the p50 over the calls it is in of each figure: one sort per figure
    # (a sort of each name's values was most of this stage on a loop of 6,000 calls)
    by_name = np.argsort(g_name, kind="stable")
    named = g_name[by_name]
    n_first = np.flatnonzero(np.append(True, named[1:] != named[:-1]))
    n_calls_with = np.diff(np.append(n_first, named.size))
    at = n_first + np.maximum(1, np.ceil(n_calls_with * 0.5).astype(np.int64)) - 1  # p50's rank

    def p50s(values: np.ndarray) -> list[int]:
        return sort_within_groups(g_name, values)[1][at].tolist()

    figures = zip(named[n_first].tolist(), n_calls_with.tolist(), p50s(incl), p50s(slf),
                  p50s(cnt), p50s(wall), by_name[n_first].tolist(), strict=True)
    functions = {}
    # in order of each name's first group (by call, then name code), as before
    for nm, calls_with, inc, sf, count, call_ns, _ in sorted(figures, key=lambda f: f[-1]):
        functions[labels[nm]] = FunctionPerCall(labels[nm], calls_with, inc, sf, count,
                                                2 * calls_with < n_calls, call_ns)
    return functions


def _group_p50(group: np.ndarray, values: np.ndarray, n: int, over: int) -> np.ndarray:
    """Nearest-rank p50 of ``values`` within each group 0..n-1, each group taken over
    ``over`` calls with 0 for the calls it is absent from. One sample set for every node
    of the tree, so a child (at most its parent in every call) is at most its parent's
    p50 and self at most inclusive: per node "p50 over the calls holding it" broke both
    where a child ran in fewer calls than its parent."""
    out = np.zeros(n, np.int64)
    if group.size == 0:
        return out
    g, v = sort_within_groups(group, values)
    first = np.flatnonzero(np.append(True, g[1:] != g[:-1]))
    size = np.diff(np.append(first, g.size))
    zeros = over - size
    rank = max(1, int(np.ceil(over * 0.5)))  # stats.percentile's rank over all calls
    k = rank - zeros  # rank among the present values; <= 0: the p50 is a 0
    present = k >= 1
    out[g[first[present]]] = v[first[present] + k[present] - 1]
    return out


def _paths(trace, pos, par, names):
    """Each row's path id (the path of names from its call's top level down), and per
    path: its parent path, its name, its first row; then the count of paths. Built level
    by level with array operations (a compile trace puts a million frames in one call)."""
    n_rows = par.size
    in_call = np.zeros(n_rows, bool)
    in_call[pos] = True
    # depth inside the call: parents outside the call make a row top level
    local_parent = np.full(n_rows, -1, np.int64)
    pp = par[pos]
    ok = (pp >= 0) & in_call[np.maximum(pp, 0)]
    local_parent[pos[ok]] = pp[ok]
    depth = np.full(n_rows, -1, np.int64)
    path = np.full(n_rows, -1, np.int64)
    width = len(trace.names) + 1
    todo = pos[~ok]  # top level
    depth[todo] = 0
    path_parent: list[np.ndarray] = []
    path_name: list[np.ndarray] = []
    path_first: list[np.ndarray] = []
    next_id = 0
    # children lists: rows sorted by local parent
    lp = local_parent[pos[ok]]
    child_order = pos[ok][np.argsort(lp.astype(np.int32) if n_rows < 2**31 else lp, kind="stable")]
    child_par = local_parent[child_order]
    while todo.size:
        parent_path = np.where(local_parent[todo] >= 0, path[np.maximum(local_parent[todo], 0)], -1)
        key = (parent_path + 1) * width + names[todo]
        uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        path[todo] = next_id + inverse.ravel()
        path_parent.append(uniq // width - 1)
        path_name.append(uniq % width)
        path_first.append(todo[first])
        next_id += uniq.size
        lo = np.searchsorted(child_par, todo, side="left")
        hi = np.searchsorted(child_par, todo, side="right")
        counts = hi - lo
        if not counts.any():
            break
        todo = child_order[np.repeat(lo, counts) + (np.arange(counts.sum())
                                                    - np.repeat(np.cumsum(counts) - counts, counts))]
    return (path, np.concatenate(path_parent), np.concatenate(path_name),
            np.concatenate(path_first), next_id)


def _tree(trace, categories, row_cat, pos, ci, par, names, st, ends, self_ns, n_calls,
          api_p50, n_timed=None):
    """Merge the calls' rows by path of names; p50 per node over all the warm calls (0
    where the node is absent; ``calls_with`` says in how many it ran). Rows from
    ``n_timed`` on are zero-length: counted, and a node's category is that of a row with
    time where it has one (the sweep resolved it), else its zero-length row's instant's.

    Path ids are built level by level with array operations (a compile trace puts a
    million frames in one call)."""
    if pos.size == 0:
        return []
    path, p_parent, p_name, p_first, next_id = _paths(trace, pos, par, names)
    p_cat = row_cat[p_first]
    if n_timed is not None and n_timed < par.size:
        timed = pos[pos < n_timed][::-1]  # reversed: the first row of a path is written last
        has = np.full(next_id, -1, np.int64)
        has[path[timed]] = timed
        p_cat = np.where(has >= 0, row_cat[np.maximum(has, 0)], p_cat)
    # per (path, call): inclusive (sum of the merged siblings' spans), self, count
    incl = ends - st[pos]
    pc = path[pos] * max(n_calls, 1) + ci
    uniq, inverse = np.unique(pc, return_inverse=True)
    inverse = inverse.ravel()
    s_incl = np.bincount(inverse, weights=incl, minlength=uniq.size).astype(np.int64)
    s_self = np.bincount(inverse, weights=self_ns, minlength=uniq.size).astype(np.int64)
    s_cnt = np.bincount(inverse, minlength=uniq.size).astype(np.int64)
    u_path = uniq // max(n_calls, 1)
    n_paths = next_id
    inc50 = _group_p50(u_path, s_incl, n_paths, n_calls)
    self50 = _group_p50(u_path, s_self, n_paths, n_calls)
    cnt50 = _group_p50(u_path, s_cnt, n_paths, n_calls)
    calls_with = np.bincount(u_path, minlength=n_paths)
    floor = TREE_MIN_SHARE * api_p50
    big = inc50 >= floor
    # nodes under the floor are only counted (a compile trace has a million paths)
    small_count = np.bincount(p_parent[~big] + 1, minlength=n_paths + 1)
    small_ns = np.bincount(p_parent[~big] + 1, weights=inc50[~big], minlength=n_paths + 1)
    kids: dict[int, list[int]] = defaultdict(list)
    for pid in np.flatnonzero(big).tolist():
        kids[int(p_parent[pid])].append(pid)
    budget = [TREE_MAX_NODES]

    def level(parent: int) -> tuple[list[TreeNode], int, int]:
        nodes = []
        folded, folded_ns = int(small_count[parent + 1]), int(small_ns[parent + 1])
        for q in sorted(kids.get(parent, []), key=lambda q: (-int(inc50[q]), q)):
            inc = int(inc50[q])
            if budget[0] <= 0:
                folded += 1
                folded_ns += inc
                continue
            budget[0] -= 1
            children, f, fns = level(q)
            nodes.append(TreeNode(trace.names[int(p_name[q])], categories[int(p_cat[q])],
                                  inc, int(self50[q]), int(cnt50[q]), int(calls_with[q]),
                                  children, f, fns))
        return nodes, folded, folded_ns

    return level(-1)[0]
