"""What changed in the code path between two profiled traces: functions and families.

A before/after diagnosis: which host functions appeared, disappeared or moved most,
per call, inclusive, and as a share of the call; the same for explain's module families;
and whether the functions that did *not* change all moved by about the same factor,
which means the two runs ran at different machine speeds (then no profiled difference
says anything about the code).

:func:`function_figures` is the one place that turns an explain report into per-call
figures per function: explain's per-warm-call figures (``inclusive_ns_per_call``/
``self_ns_per_call``) where the trace has warm calls; for a trace with none (a cold
twin) or a report saved before those keys, the window totals divided by the calls.
Functions are matched by identity (``function_identity``: a Python frame's module and
name, without line numbers and object addresses), so a function whose line moved between
library versions, or whose checkout lies elsewhere on the other machine, is still the
same function; one in both lists is never "new" or "gone". Nor is one that runs on
another thread than the calls' on one side (``host.other_threads[].functions``: the
autograd engine's thread, the main thread around an autograd thread's calls): its row
says so and names that thread, with no per-call figure on that side.

A row's share is of the calls it runs in: its p50 inclusive time per call against the
p50 wall time of the same warm calls (``call_ns_per_call``), at most 100% (in each call
its time is inside the call, and p50s over the same calls keep that order). Against the
trace's p50 call it read 1532% for a function that runs only in the longest of several
kinds of call.

Families are explain's, not a second definition: ``host.families`` of each report
(``traceview.analyses.calltree``: each instant of a warm call goes to the module of the
innermost Python frame owning it, builtins, ops and API calls to their caller's module,
``(untraced)`` and ``(no Python frame)`` for the rest; the families of a call sum to its
wall time), compared as the p50 per warm call and the share of the warm calls' time. A
function row's ``family`` is the module of its own frame by the same ``module_of``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from traceview.analyses.calltree import function_identity, function_key, module_of
from traceview.stats import nearest_rank

if TYPE_CHECKING:
    from traceview.report.claims import Claim
    from traceview.report.model import Report

#: Rows shown, biggest change first.
TOP = 12
#: A common function counts for the machine-speed check when it takes at least this
#: share of the call on both sides (tiny functions have noisy ratios).
SPEED_MIN_SHARE = 0.01
#: Fewest common functions for the machine-speed check.
SPEED_MIN_FUNCTIONS = 5
#: "About the same factor": the middle half of the ratios within this of their median,
#: and the median itself at least this far from 1.
SPEED_SPREAD, SPEED_MIN_MOVE = 0.15, 0.15

#: What a function row's share is (the code-path table's last column, as its note says).
SHARE_HEADER = "share of the calls it runs in"
SHARE_NOTE = (f"{SHARE_HEADER}: the function's p50 per call against the p50 wall time of "
              "the same warm calls, at most 100%")

#: A function whose every occurrence lasts longer than this many calls encloses them.
ENCLOSING = 2

@dataclass(frozen=True)
class FunctionFigures:
    inclusive_ns_per_call: float
    self_ns_per_call: float
    family: str | None = None  # its frame's module (``module_of``); None: not a Python frame
    shown: str = ""  # the name as the table shows it (``function_key`` of the first row)
    # p50 wall of the warm calls it runs in (what its share is of); None where there is no
    # such one figure: window totals / calls, or two names of one identity added together
    call_ns: int | None = None


@dataclass(frozen=True)
class Functions:
    """One report's functions for ``diff``: per-call figures by identity, every identity
    in its function list (with or without per-call figures: a function that encloses the
    calls or runs in no warm call is still *in* the trace, never "new" on the other side),
    and whether the list is complete."""

    figures: dict[str, FunctionFigures]
    present: dict[str, str]  # identity -> shown name, every row of the list
    complete: bool
    # identity -> (shown name, the other threads it ran on), for the functions that are
    # not on the calls' thread at all
    elsewhere: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)


def report_functions(report: Report) -> Functions:
    figs, complete = function_figures(report)
    present: dict[str, str] = {}
    for f in report.host.functions:
        present.setdefault(function_identity(f.name), function_key(f.name))
    elsewhere: dict[str, tuple[str, tuple[str, ...]]] = {}
    # each thread named as explain's threads table names it (``main thread [1/1]``)
    labels = {(str(t.pid), str(t.tid)): t.label for t in report.threads}
    for t in report.host.other_threads:
        label = labels.get((str(t.pid), str(t.tid)), t.label)
        for tf in t.functions:
            key = function_identity(tf.name)
            if key in present:
                continue
            shown, threads = elsewhere.get(key, (function_key(tf.name), ()))
            if label not in threads:
                elsewhere[key] = (shown, (*threads, label))
        # a thread's list cut to its top functions: a function may be below the cut
        complete = complete and t.functions_total <= len(t.functions)
    return Functions(figs, present, complete, elsewhere)


def function_figures(report: Report) -> tuple[dict[str, FunctionFigures], bool]:
    """(per-call figures by function identity (``function_identity``), whether the list
    is complete).

    explain's per-warm-call figures (``inclusive_ns_per_call``, ``self_ns_per_call``: p50
    over the warm calls that contain the function) are taken as they are; a function in
    no warm call (``None`` there: the harness, a one-off) is not part of a call. A report
    with no warm-call tree (a cold twin, or one saved before those keys existed, which
    ``from_dict`` reads back with ``tree_warm_calls`` 0) falls back to window totals /
    calls.
    """
    funcs = report.host.functions
    per_warm_call = report.calls.tree_warm_calls > 0
    shared = {r.identity: r for r in report.host.identities}
    calls = max(1, report.calls.count or 1)
    call_ns = _call_ns(report)
    out: dict[str, FunctionFigures] = {}
    for f in funcs:
        key = function_identity(f.name)
        each = f.total_ns / max(1, f.count or 1)
        inside = per_warm_call and f.call_ns_per_call is not None
        if call_ns and each > ENCLOSING * call_ns and not inside:
            # the harness loop around all the calls, not part of a call; explain's
            # per-call figures are of the calls' insides already (a function running only
            # in calls longer than the p50 one is no harness)
            continue
        if per_warm_call:
            if f.total_ns == 0 and f.inclusive_ns_per_call is None:
                # recorded only as zero-length slices (under the profiler's resolution):
                # no time in any call, so 0 per call, the same function as the other
                # side's, never "new" or "gone" beside it
                inc, self_ = 0.0, 0.0
            elif f.inclusive_ns_per_call is None or f.self_ns_per_call is None:
                continue  # in no warm call
            else:
                inc, self_ = float(f.inclusive_ns_per_call), float(f.self_ns_per_call)
        else:
            inc, self_ = f.total_ns / calls, f.self_ns / calls
        whole = f.call_ns_per_call if per_warm_call and f.inclusive_ns_per_call else None
        old = out.get(key)
        if old is not None:  # same function at two lines: one entry
            one = shared.get(key) if per_warm_call else None
            if one is not None:  # explain's figures for them together: nesting counted once
                inc, self_ = float(one.inclusive_ns_per_call), float(one.self_ns_per_call)
                whole = one.call_ns_per_call
            else:  # a report saved before it had them: their sum, of no one whole
                inc, self_ = inc + old.inclusive_ns_per_call, self_ + old.self_ns_per_call
                whole = None
        out[key] = FunctionFigures(inc, self_, module_of(f.name),
                                   old.shown if old is not None else function_key(f.name),
                                   whole)
    complete = (report.host.functions_total or len(funcs)) <= len(funcs)
    return out, complete


def _call_ns(report: Report) -> int | None:
    api = report.calls.stats.get("api_ns")
    return None if api is None else api.p50


def _one_side(key: str, side: Functions, name: str, absent: str
              ) -> tuple[str, list[str] | None]:
    """The status of a function with per-call figures on one side only, seen from the
    side ``side`` without them, and the threads it ran on there where not the calls'.
    In that side's list without per-call figures (it encloses the calls, or runs in no
    warm call), or on another thread there: the same function, not a new or gone one."""
    if key in side.present:
        return f"outside calls {name}", None
    if key in side.elsewhere:
        return f"other thread {name}", list(side.elsewhere[key][1])
    return (absent if side.complete else absent + "*"), None


def _moved_by(row: dict[str, Any]) -> int:
    """How much a row moved per call, for the order of the rows: its change, or for a
    function on another thread on one side (no change figure) its time per call on the
    other, all of which left the calls' thread or came onto it. Ranked at 0 it fell
    below every function that moved at all, past the rows shown."""
    change = row["change_inclusive_ns_per_call"]
    if change is not None:
        return abs(change)
    if row["status"].startswith("other thread"):
        return max(row["before_inclusive_ns_per_call"] or 0,
                   row["after_inclusive_ns_per_call"] or 0)
    return 0


def code_path_changes(before: Report, after: Report, top: int = TOP) -> dict[str, Any]:
    """The ``code_path`` block of ``diff``: changed functions, families, speed note."""
    sb, sa = report_functions(before), report_functions(after)
    fb, complete_b = sb.figures, sb.complete
    fa, complete_a = sa.figures, sa.complete
    call_b, call_a = _call_ns(before), _call_ns(after)
    rows: list[dict[str, Any]] = []
    for key in set(fb) | set(fa):
        x, y = fb.get(key), fa.get(key)
        threads: dict[str, list[str] | None] = {"before": None, "after": None}
        if x is None:
            status, threads["before"] = _one_side(key, sb, "before", "new")
        elif y is None:
            status, threads["after"] = _one_side(key, sa, "after", "gone")
        inc_b = x.inclusive_ns_per_call if x else 0.0
        inc_a = y.inclusive_ns_per_call if y else 0.0
        if x is not None and y is not None:
            # in both: moved by its change per call, or not at all (a trace against
            # itself): "moved" by 0 ns would contradict the change beside it
            status = "moved" if round(inc_a - inc_b) else "same"
        both = status.startswith(("outside", "other thread"))
        rows.append({
            "function": (x if x is not None else fa[key]).shown,
            "family": (x if x is not None else fa[key]).family,
            "status": status,
            "before_inclusive_ns_per_call": round(inc_b) if x else None,
            "after_inclusive_ns_per_call": round(inc_a) if y else None,
            "before_self_ns_per_call": round(x.self_ns_per_call) if x else None,
            "after_self_ns_per_call": round(y.self_ns_per_call) if y else None,
            # no change figure where one side has no per-call figure for it: its full
            # size is not what changed
            "change_inclusive_ns_per_call": None if both else round(inc_a - inc_b),
            # the p50 wall of the warm calls it runs in, and its share of them
            "before_call_ns_per_call": x.call_ns if x else None,
            "after_call_ns_per_call": y.call_ns if y else None,
            "before_share": inc_b / x.call_ns if x and x.call_ns else None,
            "after_share": inc_a / y.call_ns if y and y.call_ns else None,
            # the threads it ran on where that is not the calls' thread (its side has no
            # per-call figure then); None: on the calls' thread, or not in that trace
            "before_threads": threads["before"],
            "after_threads": threads["after"],
        })
    # What appeared or went first (the code path itself changed), then what moved most;
    # among equal changes (a trace against itself: every one 0) the biggest per call, so
    # the rows shown are the call's main functions, not the first names in the alphabet
    rows.sort(key=lambda r: (r["status"] in ("moved", "same", "outside calls before",
                                             "outside calls after", "other thread before",
                                             "other thread after"),
                             -_moved_by(r),
                             -max(r["before_inclusive_ns_per_call"] or 0,
                                  r["after_inclusive_ns_per_call"] or 0), r["function"]))
    families, families_note = family_changes(before, after)
    return {
        "source": "host.functions of each profiled trace: p50 per warm call (window "
                  "totals / calls where a trace has no warm call); names without line numbers",
        "status_note": "new/gone: in one trace's function list only (functions matched by "
                       "module and name); moved/same: in both, with/without a change "
                       "per call; * that list is cut to its top functions by self "
                       "time, so the function may be below the cut rather than absent; "
                       "outside calls: in both traces, but on one side it encloses the "
                       "calls or runs in no warm call (no per-call figure there); other "
                       "thread: in both traces, but on one side only on threads other than "
                       "the calls' (named; no per-call figure there)",
        "share_note": SHARE_NOTE,
        "complete": {"before": complete_b, "after": complete_a},
        "functions": rows[:top],
        "families": families[:top],
        "families_source": "host.families of each profiled trace (explain's module "
                           "families): p50 per warm call; share of the warm calls' time",
        "families_note": families_note,
        "machine_speed": machine_speed(fb, fa, call_b, call_a),
    }


def family_changes(before: Report, after: Report) -> tuple[list[dict[str, Any]], str | None]:
    """explain's module families side by side, biggest change per call first.

    Returns (rows, note): no rows and a note saying why when a side has no Python frames
    (its families are only ``(untraced)`` and ``(no Python frame)``, which explain does
    not show either) or no families at all (no warm call to describe, or a report saved
    before explain had them), since comparing against that would call every family new
    or gone.
    """
    sides = (("before", before), ("after", after))
    no_frames = [side for side, r in sides if not r.trace.python_frames]
    if no_frames:  # all of it (untraced) and (no Python frame): explain shows none either
        return [], (f"no module families: {' and '.join(no_frames)} "
                    f"{'has' if len(no_frames) == 1 else 'have'} no Python frames (profile "
                    "with with_stack)")
    missing = [side for side, r in sides if not r.host.families]
    if missing:
        return [], (f"no module families in {' and '.join(missing)}: explain has them only "
                    "for traces with warm calls (and reports saved since it has them)")
    fb = {f.name: f for f in before.host.families}
    fa = {f.name: f for f in after.host.families}
    rows: list[dict[str, Any]] = []
    for name in set(fb) | set(fa):
        x, y = fb.get(name), fa.get(name)
        rows.append({
            "family": name,
            "status": ("new" if x is None else "gone" if y is None
                       else "moved" if round(y.ns_per_call - x.ns_per_call) else "same"),
            "before_ns_per_call": x.ns_per_call if x else None,
            "after_ns_per_call": y.ns_per_call if y else None,
            "change_ns_per_call": (y.ns_per_call if y else 0) - (x.ns_per_call if x else 0),
            "before_share": x.share if x else None,
            "after_share": y.share if y else None,
        })
    rows.sort(key=lambda r: (-abs(r["change_ns_per_call"]),
                             -max(r["before_ns_per_call"] or 0, r["after_ns_per_call"] or 0),
                             r["family"]))
    return rows, None


def machine_speed(fb: dict[str, FunctionFigures], fa: dict[str, FunctionFigures],
                  call_b: int | None, call_a: int | None) -> dict[str, Any] | None:
    """When the functions both traces share all moved by about one factor, say so.

    Self time per call of each common function that takes a real share of both calls;
    the factor is their median after/before ratio. Returns None when there are too few
    such functions, else ``{factor, q1, q3, functions, uniform, note}``.
    """
    if not call_b or not call_a:
        return None
    ratios = []
    for key in set(fb) & set(fa):
        x, y = fb[key], fa[key]
        if (x.self_ns_per_call >= SPEED_MIN_SHARE * call_b
                and y.self_ns_per_call >= SPEED_MIN_SHARE * call_a and x.self_ns_per_call > 0):
            ratios.append(y.self_ns_per_call / x.self_ns_per_call)
    if len(ratios) < SPEED_MIN_FUNCTIONS:
        return None
    ratios.sort()
    q1, med, q3 = (nearest_rank(ratios, p) for p in (25, 50, 75))
    uniform = (abs(med - 1) >= SPEED_MIN_MOVE and q1 >= med * (1 - SPEED_SPREAD)
               and q3 <= med * (1 + SPEED_SPREAD))
    out: dict[str, Any] = {"factor": med, "q1": q1, "q3": q3, "functions": len(ratios),
                           "uniform": uniform, "note": None}
    if uniform:
        out["note"] = speed_claim(out).text
    return out


def speed_claim(speed: dict[str, Any]) -> Claim:
    """The machine-speed note as a claim over diff's ``code_path.machine_speed``: the
    factor (the median ratio) inside its middle half, moved from 1 by at least the
    least move the note is made for, over the functions counted."""
    from traceview.report.claims import Claim, Figure, pointer, rel

    at = ("code_path", "machine_speed")
    med, q1, q3, n = speed["factor"], speed["q1"], speed["q3"], speed["functions"]
    figs = (*(Figure(k, speed[k], pointer(*at, k)) for k in ("q1", "factor", "q3", "functions")),
            Figure("fewest", SPEED_MIN_FUNCTIONS), Figure("moved", abs(med - 1)),
            Figure("least_move", SPEED_MIN_MOVE))
    rels = (rel("le", "q1", "factor"), rel("le", "factor", "q3"),
            rel("ge", "functions", "fewest"), rel("ge", "moved", "least_move"))
    return Claim("diff-machine-speed", (
        f"the functions both traces share moved by about x{med:.2f} (middle half "
        f"x{q1:.2f} to x{q3:.2f}, {n} functions, self time per call): the two profiled runs "
        "ran at different machine speeds, so their per-call differences are not the "
        "code's; judge speed by unprofiled, interleaved runs"), figs, rels)


def share_claim(cp: dict[str, Any]) -> Claim | None:
    """The code-path table's note on its share column, as a claim over diff's
    ``code_path``: every share a row shows is its inclusive p50 per call over the p50
    wall of the warm calls it runs in, and at most all of it. None when no row has a
    share (the note would describe an empty column)."""
    from traceview.report.claims import Claim, Figure, pointer, rel

    figs: list[Figure] = [Figure("all", 1)]
    rels = []
    for i, r in enumerate(cp.get("functions") or ()):
        for side in ("before", "after"):
            if r.get(f"{side}_share") is None:
                continue
            at = ("code_path", "functions", i)
            names = (f"inclusive:{i}:{side}", f"calls:{i}:{side}", f"share:{i}:{side}")
            for name, key in zip(names, ("inclusive_ns_per_call", "call_ns_per_call",
                                         "share"), strict=True):
                figs.append(Figure(name, r[f"{side}_{key}"], pointer(*at, f"{side}_{key}")))
            rels += [rel("ratio", *names), rel("le", names[0], names[1]),
                     rel("le", names[2], "all")]
    if len(figs) == 1:
        return None
    return Claim("diff-code-share", cp.get("share_note") or SHARE_NOTE, tuple(figs),
                 tuple(rels))
