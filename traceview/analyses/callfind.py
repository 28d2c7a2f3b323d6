"""Which spans of the trace are "the calls": the rule, in the order it is tried.

A user pastes the per-call view into an issue, so the calls must be what the user
means, and the output must say what they are and how they were found.

1. ``--calls REGEX`` (``option``): user ranges whose name matches; else Python frames on
   the launching thread; else host ops (``aten::mul``) there. Outermost matches only, and
   one thread's: a call's host rows are read from one thread's timeline, so matches on
   other threads are left out and counted (``FoundCalls.elsewhere``), never measured on a
   thread where they did not run. Kinds: ranges whose digits count (as in 3) are one
   kind, ``call_#``, other ranges a kind per name; a frame or host op is a kind per name
   (``option_kinds``: a frame's number is its ``def`` line).
2. ``traceview capture`` metadata (``capture``): the ranges it recorded (``call_{i}``, or
   ``cold_call_0`` in a cold twin, which is cold because capture recorded it so).
3. A *series* of user ranges (``annotations``): names equal after replacing each run of
   digits with ``#``, with at least two distinct names (a constant hash in every member is
   not numbering), whose digits count (``counting_keys``: most names once on their
   thread; source-line names that each repeat are kinds of fixed code, not a counter),
   more than half of whose members contain a launch. Framework ranges
   (rules file ``framework_ranges``: ``## Call CompiledFxGraph ##``, compiler passes
   ``...: compile_id=N/N``, ``ProfilerStep#N``) are never such a series; nor are numbers
   that label parts of every profiler step (``Add & Norm 1``, ``Add & Norm 2`` in each
   step), since each of those names repeats. Among series, the
   outermost: one whose members mostly sit inside another series' members is inner; of
   the rest the most members wins, then the name.
4. ``ProfilerStep#N`` (``profiler_steps``), when no Python frame repeats inside a step,
   or when the steps are training steps (most hold backward work, by the rules file's
   ``backward`` phase rules): a step's micro-batches (two forwards and two backwards under
   gradient accumulation) are its parts, never calls of their own, in every window.
5. A model's forward passes (``forward_passes``): the outermost ``nn.Module:`` frames of
   one name, when it runs at least twice and they hold most launches (``generate()``: one
   per new token, the first, inside ``generate``, the prefill, the rest decode).
6. Python frames (``python_frames``): on the launching thread, the deepest frame that
   encloses every launch (a script's ``<module>``, a loop's function) and the frames
   ``depth`` levels below it (default 1: what the loop body calls) that contain a launch.
   Grouped by name into *kinds*; the numbered instances of one module class
   (``nn.Module: Block_0`` .. ``Block_6``) are one kind, ``nn.Module: Block_#``
   (``module_kinds``). A synchronize frame right after a call, before the next
   call, is that iteration's sync: ``sync_end_ns`` (the call + sync figures).
7. Otherwise the outermost host event around each launch (``launches``).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from traceview.analyses.host import HostTimeline
from traceview.analyses.launches import LaunchSummary
from traceview.analyses.nesting import Levels
from traceview.analyses.threads import describe, main_thread, marked_by, step_thread
from traceview.analyses.window import Window
from traceview.errors import UsageError
from traceview.model import Trace, codes_in
from traceview.rules import RuleSet

_DIGITS = re.compile(r"\d+")
_STEP = re.compile(r"^ProfilerStep#\d+$")
SYNC_NAME = re.compile(r"synchronize", re.IGNORECASE)
MODULE_FRAME = "nn.Module: "
#: A module instance's frame as PyTorch's profiler names it: the class, then the instance
#: index (``nn.Module: SwitchTransformerBlock_3``)
_MODULE_INSTANCE = re.compile(r"^(nn\.Module: .+)_\d+$")
GENERATE_FRAME = re.compile(r"^transformers/generation/utils\.py\(\d+\): generate$")

#: How the calls were found: ``calls.source`` in the JSON (docs/json.md)
CallsSource = Literal["option", "capture", "annotations", "profiler_steps", "python_frames",
                      "forward_passes", "launches", "none"]
HOW: dict[CallsSource, str] = {
    "option": "chosen by --calls",
    "capture": "ranges recorded by traceview capture",
    "annotations": "found from numbered record_function ranges",
    "profiler_steps": "found from profiler steps (ProfilerStep#N)",
    "python_frames": "found from Python frames",
    "forward_passes": "a model's forward passes (nn.Module frames)",
    "launches": "the outermost host event around each launch (no ranges or Python frames)",
    "none": "no calls",
}


# The compile events a launch-found calls' description names (``FoundCalls.joined``).
JOINED_NAMED = 3


@dataclass(frozen=True)
class CallSpan:
    start_ns: int
    end_ns: int
    name: str  # the event's own name (call_3, shapes.py(30): triton_mul)
    kind: str  # what groups calls: the series pattern, or the frame's name
    sync_end_ns: int | None = None  # end of the synchronize the iteration calls right after
    recorded_cold: bool = False  # capture recorded this call as cold


@dataclass(frozen=True)
class FoundCalls:
    spans: list[CallSpan]
    source: CallsSource
    pattern: str | None  # series pattern, regex, or frame name(s)
    # other numbered series beside the chosen one: (pattern, calls, --calls regex)
    others: tuple[tuple[str, int, str], ...] = ()
    # launch-found calls: the rarer outermost events holding compile work that joined the
    # call after them, most frequent first (Dynamo's compile before a compiled region)
    joined: tuple[str, ...] = ()
    # ``--calls`` matches on other threads than the calls', left out: (thread, its
    # ``--thread`` PID/TID, calls), most first (``_by_option``)
    elsewhere: tuple[tuple[str, str, int], ...] = ()

    @property
    def how(self) -> str:
        """How the calls were found; for launch-found calls, which compile events joined
        the call after them, so that a call longer than the event it is named after says
        what else it holds."""
        if not self.joined:
            return HOW[self.source]
        named = ", ".join(self.joined[:JOINED_NAMED])
        more = " and others" if len(self.joined) > JOINED_NAMED else ""
        return (f"{HOW[self.source]}; compile events join the call that follows them "
                f"({named}{more})")


def find_calls(trace: Trace, window: Window, timeline: HostTimeline, launches: LaunchSummary,
               rules: RuleSet, regex: str | None = None, depth: int = 1) -> FoundCalls:
    if depth < 1:
        raise UsageError("--calls-depth must be at least 1")
    l_st = np.sort(trace.slices.start[launches.rows])
    if regex is not None:
        return _by_option(trace, window, timeline, regex)
    captured = _captured(trace, window)
    if captured is not None:
        return captured
    series = _user_series(trace, window, l_st, rules)
    if series is not None:
        return series
    frames = _frame_calls(trace, timeline, launches, rules, depth)
    steps = _steps(trace, window, l_st)
    if steps is not None and not (frames and _repeats_inside(frames.spans, steps.spans)
                                  and not _training_steps(trace, rules, steps.spans)):
        return steps
    forward = _forward_calls(trace, timeline, launches)
    if forward is not None and depth == 1:
        return forward
    if frames is not None:
        return frames
    spans, joined = _launch_calls(trace, timeline, launches, rules)
    return FoundCalls(spans, "launches" if spans else "none", None, joined=joined)


def _annotation_rows(trace: Trace, window: Window) -> np.ndarray:
    rows = trace.rows_of_cats({"user_annotation"})
    s = trace.slices
    return rows[(s.start[rows] >= window.start_ns) & (s.start[rows] < window.end_ns)]


def _name_mask(trace: Trace, rows: np.ndarray, pred) -> np.ndarray:
    """``pred(name)`` of each row's name, asked once per distinct name (a series of
    100,000 ranges has as many rows, all of a few patterns)."""
    codes, inverse = np.unique(trace.slices.name[rows], return_inverse=True)
    per_code = np.fromiter((bool(pred(trace.names[c])) for c in codes.tolist()), bool, codes.size)
    return per_code[inverse.ravel()]


def _search_any(patterns: tuple[re.Pattern[str], ...]):
    """``name -> any(p.search(name) for p in patterns)``, as one alternation when that is
    the same question (same flags, no groups a backreference could renumber): asked of
    every distinct range name, 100,000 of them in a long run."""
    if not patterns:
        return lambda name: False
    if len({p.flags for p in patterns}) == 1 and not any(p.groups for p in patterns):
        one = re.compile("|".join(f"(?:{p.pattern})" for p in patterns), patterns[0].flags)
        return one.search
    return lambda name: any(p.search(name) for p in patterns)


def _outermost(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Mask of intervals (sorted by start, longest first) not inside an earlier one."""
    if starts.size == 0:
        return np.zeros(0, bool)
    run_end = np.maximum.accumulate(ends)
    keep = np.ones(starts.size, bool)
    keep[1:] = starts[1:] >= run_end[:-1]
    return keep


def _spans_of_rows(trace: Trace, rows, kind_of) -> list[CallSpan]:
    s = trace.slices
    rows = np.asarray(rows, np.int64)
    rows = rows[np.lexsort((-s.end[rows], s.start[rows]))]  # stable, as sorted() was
    if rows.size == 0:
        return []
    rows = rows[_outermost(s.start[rows], s.end[rows])]
    out = []
    names = trace.names
    for st, en, c in zip(s.start[rows].tolist(), s.end[rows].tolist(), s.name[rows].tolist(),
                         strict=True):
        name = names[c]
        out.append(CallSpan(st, en, name, kind_of(name)))
    return out


def module_kinds(spans: list[CallSpan]) -> list[CallSpan]:
    """The calls, where the frames of several instances of one module class are calls
    (``nn.Module: Block_0`` .. ``Block_6``, PyTorch's profiler numbering each instance
    after its class), with those instances as one kind, ``nn.Module: Block_#``; each call
    keeps its own name. The layers of a stack do the same work once each: as kinds of one
    call each, every layer was its own candidate for the dominant kind and "a typical
    call" was the slowest layer, not the median one. Only that suffix folds, and only
    where two instances of the class are calls: other digits in a name, another class, or
    a class run by one instance (its name as the profiler wrote it) stay apart."""
    names: dict[str, set[str]] = defaultdict(set)
    for sp in spans:
        m = _MODULE_INSTANCE.match(sp.kind)
        if m:
            names[m.group(1)].add(sp.kind)
    fold = {k for k, v in names.items() if len(v) > 1}
    if not fold:
        return spans
    out = []
    for sp in spans:
        m = _MODULE_INSTANCE.match(sp.kind)
        if m and m.group(1) in fold:
            sp = replace(sp, kind=m.group(1) + "_#")
        out.append(sp)
    return out


def calls_pattern(regex: str) -> re.Pattern[str]:
    """``--calls``'s regex compiled; ``UsageError`` for a bad one (checked before the
    trace is read, and again here for the API)."""
    try:
        return re.compile(regex)
    except re.error as exc:
        raise UsageError(f"--calls {regex!r}: bad regular expression: {exc}") from None


def _by_option(trace: Trace, window: Window, timeline: HostTimeline, regex: str) -> FoundCalls:
    """``--calls regex``'s calls, all on one thread: the attributed thread's matches where
    it holds some, else the matches of the thread holding the most (``option_lanes``).
    A call's host rows (dispatch, launch, untraced) are read from the attributed thread's
    timeline, so a match on another thread measured there would show that thread's idle
    time as the call's (a collective that ran on the autograd thread read off an idle main
    thread). Matches on other threads are left out and counted (``FoundCalls.elsewhere``,
    worded with the ``--thread`` that shows them): one thread's calls, said to be so."""
    pat = calls_pattern(regex)
    s = trace.slices
    own = None if timeline.lane is None else timeline.lane.index
    tier, by_lane = _option_rows(trace, window, pat)
    if tier in ("user_annotation", None) or own is None:
        if own is None or tier is None:
            # no host thread to read rows from (or no match on one): every range matching
            rows = _annotation_rows(trace, window)
            picked = [r for r in rows.tolist() if pat.search(trace.names[int(s.name[r])])]
        else:
            home = own if own in by_lane else _busiest(trace, by_lane)[0][0]
            picked = by_lane[home].tolist()
            own = home
    else:
        picked = []
    if not picked and timeline.rows.size:
        # Python frames, then host ops (aten::...), on the attributed thread (which is the
        # thread holding the most matches: ``option_lanes``)
        py = trace.cat_code("python_function")
        for want_py in (True, False):
            cand = timeline.rows[(s.cat[timeline.rows] == py) == want_py]
            names = {int(c) for c in np.unique(s.name[cand]).tolist()
                     if pat.search(trace.names[int(c)])}
            picked = [r for r in cand.tolist() if int(s.name[r]) in names]
            if picked:
                break
    if not picked and by_lane:
        # ``--thread`` names a thread holding no Python frame or host op it matches
        where = ", ".join(f"{describe(trace.lanes[ln])} (--thread {trace.lanes[ln].pid}/"
                          f"{trace.lanes[ln].tid})" for ln in _busiest(trace, by_lane)[0])
        raise UsageError(f"--calls {regex!r}: nothing on the thread shown matches; "
                         f"matches on {where}")
    if not picked:
        raise UsageError(f"--calls {regex!r}: no user range, Python frame or host op matches")
    spans = _spans_of_rows(trace, picked, lambda n: n)
    spans = option_kinds(trace, spans, is_range=trace.cat_names[int(s.cat[picked[0]])]
                         == "user_annotation")
    others = [(ln, n) for ln, n in zip(*_busiest(trace, by_lane), strict=True)
              if own is not None and ln != own]
    main = main_thread(trace, window) if others else None
    elsewhere = tuple((describe(trace.lanes[ln], "main" if main is not None
                                and ln == main.index else None),
                       f"{trace.lanes[ln].pid}/{trace.lanes[ln].tid}", n) for ln, n in others)
    return FoundCalls(spans, "option", regex, elsewhere=elsewhere)


def option_kinds(trace: Trace, spans: list[CallSpan], *, is_range: bool) -> list[CallSpan]:
    """The kinds of ``--calls``' calls. User ranges whose digits count (``counting_keys``:
    ``call_0`` .. ``call_9``) are one kind, ``call_#``; ranges whose numbers name fixed
    code (an SDK's source-line ranges, ``...:67-67`` and ``...:72-72``) are a kind per
    name. A Python frame's number is its ``def`` line and a host op's digits are part of
    its name (``aten::conv1d``, ``aten::conv2d``): a frame or op is a kind per name,
    only the instances of one module class folded (``module_kinds``), as the frames the
    default rule finds are: pooled, two functions named ``forward`` would be one kind
    whose typical call is whichever is more frequent."""
    if not is_range:
        return module_kinds(spans)
    keys = {_DIGITS.sub("#", sp.name) for sp in spans}
    counting = counting_keys(trace, keys)
    return [replace(sp, kind=k) if (k := _DIGITS.sub("#", sp.name)) in counting else sp
            for sp in spans]


def _option_rows(trace: Trace, window: Window, pat: re.Pattern[str]
                 ) -> tuple[str | None, dict[int, np.ndarray]]:
    """The rows ``--calls`` can mean, by host lane: of the first kind with a match on a
    host thread, user ranges, else Python frames, else host ops, starting in the window;
    (that kind, lane -> its rows), (None, {}) where nothing matches."""
    s = trace.slices
    live = (s.start >= window.start_ns) & (s.start < window.end_ns)
    names = np.flatnonzero([bool(pat.search(n)) for n in trace.names])
    hit = live & trace.has_name(names)
    host = np.asarray([ln.kind == "host" for ln in trace.lanes] + [False], bool)
    for cats in ({"user_annotation"}, {"python_function"}, None):
        codes = [i for i, c in enumerate(trace.cat_names)
                 if (c in cats if cats else c not in ("user_annotation", "python_function"))]
        rows = np.flatnonzero(hit & codes_in(s.cat, codes, len(trace.cat_names)))
        rows = rows[host[s.lane[rows]]]
        if rows.size:
            lanes = s.lane[rows]
            tier = next(iter(cats)) if cats else "host_op"
            return tier, {int(ln): rows[lanes == ln] for ln in np.unique(lanes).tolist()}
    return None, {}


def _busiest(trace: Trace, by_lane: dict[int, np.ndarray]) -> tuple[list[int], list[int]]:
    """The lanes of ``by_lane`` by the calls their rows make (outermost matches), most
    first, ties by lane order; (lanes, calls)."""
    st, en = trace.slices.start, trace.slices.end

    def outermost(rows: np.ndarray) -> int:
        rows = rows[np.lexsort((-en[rows], st[rows]))]
        return int(_outermost(st[rows], en[rows]).sum())

    counts = {ln: outermost(rows) for ln, rows in by_lane.items()}
    order = sorted(counts, key=lambda ln: (-counts[ln], ln))
    return order, [counts[ln] for ln in order]


def option_lanes(trace: Trace, window: Window, regex: str) -> list[tuple[int, int]]:
    """(host lane, calls) of the lanes holding what ``--calls regex`` names (its user
    ranges, else Python frames, else host ops), the one holding the most calls first; ties
    in lane order. The calls are one thread's (``_by_option``): the attributed thread's,
    which is one of the first of these unless ``--thread`` names another. Empty for a bad
    regex or no match (``_by_option`` then says so)."""
    try:
        pat = re.compile(regex)
    except re.error:
        return []
    _, by_lane = _option_rows(trace, window, pat)
    lanes, counts = _busiest(trace, by_lane)
    return list(zip(lanes, counts, strict=True))


def _captured(trace: Trace, window: Window) -> FoundCalls | None:
    cap = trace.capture
    if cap is None or cap.protocol is None:
        return None
    cold = cap.kind == "cold"
    template = cap.protocol.cold_range if cold else cap.protocol.call_range
    if not template:
        return None
    pat = re.compile("^" + re.escape(template).replace(r"\{i\}", r"\d+") + "$")
    s = trace.slices
    rows = [r for r in _annotation_rows(trace, window).tolist()
            if pat.match(trace.names[int(s.name[r])])]
    if not rows:
        return None
    label = template.replace("{i}", "#")  # the same pattern a numbered series shows
    spans = [CallSpan(sp.start_ns, sp.end_ns, sp.name, sp.kind, recorded_cold=cold)
             for sp in _spans_of_rows(trace, rows, lambda n: label)]
    return FoundCalls(spans, "capture", label)


def counting_keys(trace: Trace, keys: Collection[str]) -> set[str]:
    """Of the series keys (range names with each run of digits a ``#``), those whose
    digits count: at least half of the key's names occur once on their thread, over the
    whole trace's user ranges. A counter gives each call a new number (``call_0`` ..
    ``call_9``, each once), so its names are rare. Names that each repeat (an SDK's
    ranges named by the source lines they wrap, ``...:67-67`` ten times and ``...:72-72``
    ten times; a model's ``Add & Norm 1``/``2`` in every step) are different code under
    fixed numbers: kinds of their own, never one series, so that a forward is never the
    backward's "nearby call". Counted over the whole trace, so that a window holding each
    name once reads the names as the trace does; per thread, so that ranks fused into one
    file (a ``step_3`` on each) still count."""
    want = set(keys)
    if not want:
        return set()
    s = trace.slices
    rows = trace.rows_of_cats({"user_annotation"})
    n_names = len(trace.names)
    pairs, counts = np.unique(s.lane[rows].astype(np.int64) * n_names + s.name[rows],
                              return_counts=True)
    key_of: dict[int, str | None] = {}
    once: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for pair, n in zip(pairs.tolist(), counts.tolist(), strict=True):
        code = pair % n_names
        if code not in key_of:
            key = _DIGITS.sub("#", trace.names[code])
            key_of[code] = key if key in want else None
        k = key_of[code]
        if k is not None:
            seen[k] += 1
            once[k] += n == 1
    return {k for k in want if seen[k] and 2 * once[k] >= seen[k]}


def _series_groups(trace: Trace, rows: np.ndarray, l_st: np.ndarray, *,
                   need_launch: bool = True):
    """Numbered series: key -> member rows, for keys with two distinct names whose
    digits count (``counting_keys``) and whose members mostly contain a launch (any such
    key without ``need_launch``)."""
    s = trace.slices
    # the series key of each distinct name, then of each row (keys in order of first sight)
    codes, first, inverse = np.unique(s.name[rows], return_index=True, return_inverse=True)
    keys: dict[str, int] = {}
    names: dict[str, set[str]] = defaultdict(set)
    code_key = np.full(codes.size, -1, np.int64)
    for j in np.argsort(first, kind="stable").tolist():
        n = trace.names[int(codes[j])]
        k = _DIGITS.sub("#", n)
        if k != n:
            code_key[j] = keys.setdefault(k, len(keys))
            names[k].add(n)
    row_key = code_key[inverse.ravel()]
    numbered = np.flatnonzero(row_key >= 0)
    by_key = numbered[np.argsort(row_key[numbered], kind="stable")]  # rows in order per key
    bounds = np.searchsorted(row_key[by_key], np.arange(len(keys) + 1))
    # keys in order of their first row, as rows are met
    order = sorted(keys, key=lambda k: int(by_key[bounds[keys[k]]]))
    out = {}
    counting = counting_keys(trace, [k for k in order if len(names[k]) >= 2])
    for k in order:
        if len(names[k]) < 2:
            continue  # one name repeated: a constant hash or id, not numbering
        if k not in counting:
            continue  # names that each repeat: different code under fixed numbers
        a = rows[by_key[bounds[keys[k]]:bounds[keys[k] + 1]]]
        n_launch = np.searchsorted(l_st, s.end[a]) - np.searchsorted(l_st, s.start[a])
        if not need_launch or 2 * int((n_launch > 0).sum()) > a.size:
            out[k] = a
    return out


def _user_series(trace: Trace, window: Window, l_st: np.ndarray, rules: RuleSet) -> FoundCalls | None:
    s = trace.slices
    rows = _annotation_rows(trace, window)
    rows = rows[~_name_mask(trace, rows, _search_any(rules.framework_ranges))]
    groups = _series_groups(trace, rows, l_st)
    if not groups:
        return None

    def inner(key: str) -> bool:
        a = groups[key]
        for other, b in groups.items():
            if other == key:
                continue
            b = b[np.argsort(s.start[b], kind="stable")]
            i = np.searchsorted(s.start[b], s.start[a], side="right") - 1
            inside = (i >= 0) & (s.end[b][np.maximum(i, 0)] >= s.end[a])
            if 2 * int(inside.sum()) > a.size:
                return True
        return False

    outer = [k for k in groups if not inner(k)] or list(groups)
    ranked = sorted(outer, key=lambda k: (-groups[k].size, k))
    best = ranked[0]
    # A loop timing two implementations one after the other holds two series; the
    # others are named with the option that selects them rather than left unsaid.
    others = tuple((k, int(groups[k].size), _series_regex(trace.names[int(s.name[groups[k][0]])]))
                   for k in ranked[1:])
    return FoundCalls(_spans_of_rows(trace, groups[best].tolist(), lambda n: best),
                      "annotations", best, others)


def _series_regex(member: str) -> str:
    """The ``--calls`` regex of the series holding the name ``member``: its digits
    generalised, the rest literal (``triton_mul#7`` -> ``^triton_mul\\#\\d+$``)."""
    return "^" + _DIGITS.sub(lambda _: r"\d+", re.escape(member)) + "$"


def _steps(trace: Trace, window: Window, l_st: np.ndarray) -> FoundCalls | None:
    """The profiler's own steps. Where the trace launched anything, the steps must hold
    launches (a step range with none is not where the work went); in a trace with no
    launch at all (a CPU-only run, ``capture_steps`` on the CPU) the profiler's numbered
    ranges are the steps by their name alone: the profiler writes that name for nothing
    else, and a CPU step's work is host work the range encloses."""
    rows = _annotation_rows(trace, window)
    rows = rows[_name_mask(trace, rows, _STEP.match)]
    lanes = np.unique(trace.slices.lane[rows])
    if lanes.size > 1:
        # step series on several threads (ranks' traces fused into one file, one process
        # each): the steps are one thread's, the step thread's, as the per-step views
        # are; mixing them would make one step of several ranks' overlapping ranges
        lane = step_thread(trace, window)
        if lane is not None:
            rows = rows[trace.slices.lane[rows] == lane.index]
    cpu_only = l_st.size == 0 and not _has_device_work(trace)
    groups = _series_groups(trace, rows, l_st, need_launch=not cpu_only)
    if not groups and rows.size:
        # one step (``--window ProfilerStep#3``) is still a step: the profiler numbers
        # its steps, so one name is no constant hash
        s = trace.slices
        n_launch = np.searchsorted(l_st, s.end[rows]) - np.searchsorted(l_st, s.start[rows])
        if cpu_only or int((n_launch > 0).sum()):
            groups = {"ProfilerStep#N": rows}
    if not groups:
        return None
    key = next(iter(groups))
    label = "ProfilerStep#N"
    return FoundCalls(_spans_of_rows(trace, groups[key].tolist(), lambda n: label),
                      "profiler_steps", label)


def _forward_calls(trace: Trace, timeline: HostTimeline, launches: LaunchSummary
                   ) -> FoundCalls | None:
    """A model's forward passes: the outermost ``nn.Module:`` frames of one name on the
    thread, when it runs at least twice and they hold most of the thread's launches
    (``generate()``: one per new token). Inside ``generate`` the first is the prefill."""
    s = trace.slices
    py = trace.cat_code("python_function")
    if py < 0 or timeline.lane is None or launches.count == 0:
        return None
    rows = timeline.rows[s.cat[timeline.rows] == py]
    codes = [i for i, n in enumerate(trace.names) if n.startswith(MODULE_FRAME)]
    mod = rows[np.isin(s.name[rows], codes)]
    if mod.size < 2:
        return None
    mod = mod[np.lexsort((-s.end[mod], s.start[mod]))]
    top = mod[_outermost(s.start[mod], s.end[mod])]
    counts = Counter(s.name[top].tolist())
    code, n = counts.most_common(1)[0]
    if n < 2:
        return None
    top = top[s.name[top] == code]
    mine = launches.rows[s.lane[launches.rows] == timeline.lane.index]
    l_st = np.sort(s.start[mine])
    inside = int((np.searchsorted(l_st, s.end[top]) - np.searchsorted(l_st, s.start[top])).sum())
    if 2 * inside < mine.size:
        return None
    gen = [i for i, nm in enumerate(trace.names) if GENERATE_FRAME.search(nm)]
    g_rows = rows[np.isin(s.name[rows], gen)]
    name = trace.names[code]
    spans = []
    for k, r in enumerate(top.tolist()):
        a, b = int(s.start[r]), int(s.end[r])
        in_gen = bool(((s.start[g_rows] <= a) & (s.end[g_rows] >= b)).any())
        kind = ("prefill" if k == 0 else "decode") if in_gen else name
        spans.append(CallSpan(a, b, name, kind))
    label = "; ".join(dict.fromkeys(sp.kind for sp in spans))
    return FoundCalls(spans, "forward_passes", label)


def _training_steps(trace: Trace, rules: RuleSet, steps: list[CallSpan]) -> bool:
    """Do most steps hold backward work (an event a ``backward`` phase rule marks, on any
    thread)? Such a step is a training step: frames that repeat inside it (its
    micro-batches' forward passes) are its phases, and the step stays the call. In a
    window of one step the deepest frame enclosing every launch is the step's own, so its
    micro-batches repeat below it where the whole trace's frames did not: the step must
    not turn into its micro-batches there."""
    marks = [r for r in rules.phases if r.phase == "backward" and r.before is None]
    if not marks or not steps:
        return False
    s = trace.slices
    hit = np.zeros(s.name.size, bool)
    for r in marks:
        mine = marked_by(trace, r)
        if mine is not None:
            hit |= mine
    if not hit.any():
        return False
    st = np.sort(s.start[hit])
    holding = sum(1 for sp in steps
                  if np.searchsorted(st, sp.end_ns) > np.searchsorted(st, sp.start_ns))
    return 2 * holding > len(steps)


def _repeats_inside(calls: list[CallSpan], steps: list[CallSpan]) -> bool:
    """Does some call's frame occur at least twice inside one step? The frame's own name,
    not its kind: the layers of a stack (``nn.Module: Block_0``, ``Block_1``, one kind)
    each run once per step, a step's parts, not a loop inside it."""
    per: Counter[tuple[int, str]] = Counter()
    st = np.asarray([sp.start_ns for sp in steps], np.int64)
    for c in calls:
        i = int(np.searchsorted(st, c.start_ns, side="right")) - 1
        if i >= 0 and c.end_ns <= steps[i].end_ns:
            per[(i, c.name)] += 1
    return any(v >= 2 for v in per.values())


def _frame_calls(trace: Trace, timeline: HostTimeline, launches: LaunchSummary, rules: RuleSet,
                 depth: int) -> FoundCalls | None:
    s = trace.slices
    py = trace.cat_code("python_function")
    if py < 0 or timeline.rows.size == 0 or launches.count == 0 or timeline.lane is None:
        return None
    lane = timeline.lane.index
    mine = launches.rows[s.lane[launches.rows] == lane]
    if mine.size == 0:
        return None
    pos = np.flatnonzero(s.cat[timeline.rows] == py)  # timeline rows are in sweep order
    if pos.size == 0:
        return None
    rows = timeline.rows[pos]
    st, en = s.start[rows], s.end[rows]
    lo, hi = int(s.start[mine].min()), int(s.end[mine].max())
    enclosing = np.flatnonzero((st <= lo) & (en >= hi))
    names_all = trace.names
    sync_code = timeline.categories.index("sync") if "sync" in timeline.categories else -1
    l_st = np.sort(s.start[mine])
    levels = Levels(st, en)

    def below(p: int | None) -> list[CallSpan]:
        """The frames ``depth`` levels below frame ``p`` (None: the top) holding a launch."""
        level = levels.at(p, depth - 1)
        if level.size == 0:
            return []
        n_launch = np.searchsorted(l_st, en[level]) - np.searchsorted(l_st, st[level])
        is_call = n_launch > 0
        names = [names_all[int(c)] for c in s.name[rows[level]].tolist()]
        cat = timeline.row_cat[pos[level]]
        spans = []
        idx = level.tolist()
        for j, i in enumerate(idx):
            if not is_call[j]:
                continue
            sync_end = None
            if j + 1 < len(idx) and not is_call[j + 1] and (
                    cat[j + 1] == sync_code or SYNC_NAME.search(names[j + 1])):
                sync_end = int(en[idx[j + 1]])
            spans.append(CallSpan(int(st[i]), int(en[i]), names[j], names[j], sync_end))
        if 2 * sum(sp.sync_end_ns is not None for sp in spans) <= len(spans):
            # a sync after the whole loop belongs to no iteration
            spans = [CallSpan(sp.start_ns, sp.end_ns, sp.name, sp.kind) for sp in spans]
        return spans

    # the deepest enclosing frame (last in sweep order) with calls below it
    deepest = None
    spans = []
    for k in (enclosing[::-1].tolist() or [None]):
        spans = below(k)
        if spans:
            deepest = k
            break
    if not spans:
        spans = below(None)
    if len(spans) == 1 and deepest is not None:
        # one call deep inside a script that runs once (a single compiled call): the call
        # is what the script's <module> calls, compile included
        modules = [int(k) for k in enclosing.tolist()
                   if names_all[int(s.name[rows[k]])].endswith(": <module>")]
        if modules and modules[-1] != deepest:
            spans = below(modules[-1]) or spans
    if not spans:
        return None
    spans = module_kinds(spans)
    kinds = list(dict.fromkeys(sp.kind for sp in spans))
    return FoundCalls(spans, "python_frames", "; ".join(kinds))


def _launch_calls(trace: Trace, timeline: HostTimeline, launches: LaunchSummary,
                  rules: RuleSet) -> tuple[list[CallSpan], tuple[str, ...]]:
    """Outermost host slice around each launch, each a call of its name's kind. A rarer
    one (under half as often as the most frequent kind) that holds compile or import work
    of a size the rules count as evidence (Dynamo's one-off compile before the first
    ``Torch-Compiled Region``) joins the call that follows it: it is that call's cold
    path. Any other rarer event is a call of its own kind: folded into the next call, an
    eager model's first ``aten::linear`` (6.9 ms) became part of an ``aten::relu_`` call
    read as an 8 ms relu. A synchronize right after a call, before the next, is that
    call's sync. Also the names of the compile events that joined a call, most frequent
    first, for the calls' description."""
    if timeline.rows.size == 0 or launches.count == 0:
        return [], ()
    s = trace.slices
    rows = timeline.rows
    w0, w1 = int(timeline.seg_start[0]), int(timeline.seg_end[-1])
    st, en = np.maximum(s.start[rows], w0), np.minimum(s.end[rows], w1)
    # outermost: not contained in an earlier-starting slice (rows are sorted by start)
    run_end = np.maximum.accumulate(en)
    outer = np.ones(rows.size, dtype=bool)
    outer[1:] = st[1:] >= run_end[:-1]
    o_pos = np.flatnonzero(outer)
    o_rows, o_st, o_en = rows[o_pos], st[o_pos], run_end[o_pos]
    l_st = s.start[launches.rows]
    idx = np.searchsorted(o_st, l_st, side="right") - 1
    with_launch = sorted(set(idx[idx >= 0].tolist()))
    if not with_launch:
        return [], ()
    names = {i: trace.names[int(s.name[o_rows[i]])] for i in with_launch}
    counts = Counter(names.values())
    top = max(counts.values())
    rarer = [i for i in with_launch if 2 * counts[names[i]] < top]
    folds = _cold_events(timeline, rules, o_st, o_en, rarer)
    spans: list[CallSpan] = []
    pending: int | None = None  # start of compile events waiting for the call they compile
    for i in with_launch:
        if i in folds:
            pending = int(o_st[i]) if pending is None else pending
            continue
        start = int(o_st[i]) if pending is None else pending
        pending = None
        spans.append(CallSpan(start, int(o_en[i]), names[i], names[i]))
    if pending is not None and spans:  # compile events after the last call join it
        last = spans[-1]
        end = max(int(o_en[i]) for i in with_launch if o_st[i] >= pending)
        spans[-1] = CallSpan(last.start_ns, end, last.name, last.kind)
    sync = timeline.categories.index("sync") if "sync" in timeline.categories else -1
    o_sync = timeline.row_cat[o_pos] == sync
    folded = Counter(names[i] for i in folds)
    joined = tuple(n for n, _ in sorted(folded.items(), key=lambda nc: (-nc[1], nc[0]))
                   ) if spans else ()
    return _with_syncs(module_kinds(spans), o_st, o_en, o_sync), joined


def _cold_events(timeline: HostTimeline, rules: RuleSet, o_st: np.ndarray, o_en: np.ndarray,
                 events: list[int]) -> set[int]:
    """Of the outermost events ``events``, those whose owned time on the thread holds
    compile or import work of a size the rules count as evidence of a cold path
    (``RuleSet.is_cold_work``): a one-off compile, never an op that merely runs rarely."""
    cold = [timeline.categories.index(c) for c in ("compile", "import")
            if c in timeline.categories]
    if not cold or not events:
        return set()
    out = set()
    for i in events:
        a, b = int(o_st[i]), int(o_en[i])
        j0 = int(timeline.seg_start.searchsorted(a, side="left"))
        j1 = int(timeline.seg_start.searchsorted(b, side="left"))
        if j1 <= j0:
            continue
        seg_st = np.maximum(np.asarray(timeline.seg_start[j0:j1], np.int64), a)
        seg_en = np.minimum(np.asarray(timeline.seg_end[j0:j1], np.int64), b)
        held = np.isin(np.asarray(timeline.seg_cat[j0:j1]), cold)
        if rules.is_cold_work(int((seg_en - seg_st)[held].sum()), b - a):
            out.add(i)
    return out


def _with_syncs(spans: list[CallSpan], o_st, o_en, o_sync) -> list[CallSpan]:
    """Attach to each call the sync event that starts after it and before the next call,
    when most calls have one (a single sync after a whole loop belongs to no call)."""
    ends = []
    for j, sp in enumerate(spans):
        nxt = spans[j + 1].start_ns if j + 1 < len(spans) else None
        k = int(np.searchsorted(o_st, sp.end_ns, side="left"))
        end = None
        if k < o_st.size and o_sync[k] and (nxt is None or o_st[k] < nxt):
            end = int(o_en[k])
        ends.append(end)
    if 2 * sum(e is not None for e in ends) <= len(spans):
        ends = [None] * len(spans)
    return [CallSpan(sp.start_ns, sp.end_ns, sp.name, sp.kind, e, sp.recorded_cold)
            for sp, e in zip(spans, ends, strict=True)]


def _has_device_work(trace: Trace) -> bool:
    """Any device stream in the trace (its work counted whether linked or not)."""
    return any(lane.kind == "device" for lane in trace.lanes)
