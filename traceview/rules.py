"""Host categories: the ordered rule table and how an event gets its category.

The table is data (``traceview/data/default_rules.json``); users prepend their own rules
with ``--rules FILE`` (same format). A rule names a category and matches on the event
category and a regular expression searched in the event name. ``subtree`` rules make a
category stick to everything nested inside the matching event — all of
``torch.cuda.synchronize`` is ``sync``, everything under Triton's compiler is
``compile`` — and the *nearest* such ancestor wins, so a launcher build triggered
inside ``launch_metadata`` on the first call still counts as ``compile``. A ``yields``
rule sticks to its subtree only where no enclosing rule already sticks: a blocking wait is
``wait`` with everything under it, except inside compile, import or sync, whose own waits
(Triton's build waiting for the compiler it spawned) are that work's cost. ``inherit``
(builtins, stdlib helpers) takes the enclosing event's category.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated

import msgspec

from traceview.errors import UsageError
from traceview.printable import printable_path

INHERIT = "inherit"
UNTRACED = "untraced"
OTHER = "other"


@dataclass(frozen=True)
class Rule:
    category: str
    cats: frozenset[str] | None
    pattern: re.Pattern[str] | None
    launch_api: bool
    subtree: bool
    yields: bool = False  # sticks to its subtree only where no enclosing rule sticks


# How a rule's category spreads to the events nested in its match (``RuleSet.sticks``):
# not at all, always (the nearest such ancestor wins), or where no enclosing rule sticks.
OWN, STICKS, STICKS_UNLESS_ENCLOSED = 0, 1, 2


@dataclass(frozen=True)
class PhaseRule:
    """Which events mark a training-step phase (``traceview.analyses.steps``)."""

    phase: str
    cats: frozenset[str] | None
    pattern: re.Pattern[str]
    any_thread: bool = False  # the envelope of matches on any thread, not the step's ranges
    before: str | None = None  # fallback: the unclaimed time before this phase


@dataclass(frozen=True)
class RuleSet:
    """The categories with their descriptions, the ordered rules, and launch API names."""

    categories: dict[str, str]
    rules: tuple[Rule, ...]
    launch_apis: dict[str, frozenset[str]]  # kind ("kernel", "graph", ...) -> names
    # ranges the framework writes (``## Call CompiledFxGraph ##``, compiler passes,
    # ``ProfilerStep#N``): never a user's call series (``traceview.analyses.callfind``)
    framework_ranges: tuple[re.Pattern[str], ...] = ()
    phases: tuple[PhaseRule, ...] = ()  # ordered: the first that claims an instant wins
    communication_kernels: str = ""  # regex over device work names (NCCL collectives)
    # compile/import work makes a call (or a window) cold only when it is at least this
    # share of it, or at least this many ns (rules file "cold"): a runtime helper that a
    # compile rule also names (AOTAutograd's functional_utils under checkpointing, a few
    # us per step) is no compilation
    cold_min_share: float = 0.01
    cold_min_ns: int = 1_000_000

    def is_cold_work(self, ns: int, of_ns: int) -> bool:
        """Whether ``ns`` of compile/import work in a span of ``of_ns`` is evidence of a
        cold path (see ``cold_min_share``, ``cold_min_ns``)."""
        return ns > 0 and (ns >= self.cold_min_ns or ns >= self.cold_min_share * of_ns)

    def is_framework_range(self, name: str) -> bool:
        return any(p.search(name) for p in self.framework_ranges)

    def launch_kind(self, name: str) -> str | None:
        for kind, names in self.launch_apis.items():
            if name in names:
                return kind
        return None

    @property
    def all_launch_apis(self) -> frozenset[str]:
        return frozenset().union(*self.launch_apis.values())

    def classify(self, cat: str, name: str) -> tuple[str, bool]:
        """(category, sticks to subtree) for one event; first matching rule wins."""
        rule = self._match(cat, name)
        return (OTHER, False) if rule is None else (rule.category, rule.subtree)

    def sticks(self, cat: str, name: str) -> tuple[str, int]:
        """(category, ``OWN``, ``STICKS`` or ``STICKS_UNLESS_ENCLOSED``) for one event, as
        the host sweep applies it (``traceview.analyses.host``)."""
        rule = self._match(cat, name)
        if rule is None or not rule.subtree:
            return (OTHER if rule is None else rule.category), OWN
        return rule.category, STICKS_UNLESS_ENCLOSED if rule.yields else STICKS

    def _match(self, cat: str, name: str) -> Rule | None:
        """The first rule matching the event, or None."""
        for rule in self.rules:
            if rule.cats is not None and cat not in rule.cats:
                continue
            if rule.launch_api and self.launch_kind(name) is None:
                continue
            if rule.pattern is not None and rule.pattern.search(name) is None:
                continue
            return rule
        return None


class _RuleSpec(msgspec.Struct, frozen=True):
    """One category rule as the file writes it (validated before any regex is built)."""

    category: str
    cats: list[str] | None = None
    name: str | None = None
    launch_api: bool = False
    subtree: bool = False
    yields: bool = False


class _PhaseSpec(msgspec.Struct, frozen=True):
    phase: str
    cats: list[str] | None = None
    name: str | None = None
    any_thread: bool = False
    before: str | None = None


class _ColdSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """When compile/import work makes a call cold (``RuleSet.is_cold_work``)."""

    min_share: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    min_ns: Annotated[int, msgspec.Meta(ge=0)] | None = None


class _RulesFile(msgspec.Struct, frozen=True):
    """A rules file: every key optional (a user's file adds to the defaults); keys it
    does not know (``version``, the ``*_about`` texts) are ignored."""

    rules: list[_RuleSpec] = []
    categories: dict[str, str] = {}
    launch_apis: dict[str, list[str]] = {}
    framework_ranges: list[str] = []
    phases: list[_PhaseSpec] = []
    communication_kernels: str | None = None
    cold: _ColdSpec | None = None


_DECODER = msgspec.json.Decoder(_RulesFile)
#: what a user's rules file can add to the defaults (``categories`` alone adds no rule)
RULE_KEYS = ("rules", "launch_apis", "framework_ranges", "phases", "communication_kernels",
             "cold")


def _decode(data: bytes, source: str) -> _RulesFile:
    """The file's bytes as typed values, or one ``UsageError`` naming the file and the
    first field at fault (msgspec's path, ``$.rules[0].name``)."""
    try:
        return _DECODER.decode(data)
    except msgspec.ValidationError as exc:
        raise UsageError(f"{source}: bad rules file: {exc}") from None
    except (msgspec.DecodeError, RecursionError) as exc:
        reason = str(exc) if isinstance(exc, msgspec.DecodeError) else "nested too deep"
        raise UsageError(f"{source}: rules file is not valid JSON: {reason}") from None


def _regex(text: str, source: str, what: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except (re.error, RecursionError, OverflowError, ValueError) as exc:
        raise UsageError(f"{source}: {what}: bad regular expression: {exc}") from None


def _cats(cats: list[str] | None) -> frozenset[str] | None:
    return frozenset(cats) if cats is not None else None


def _rules(doc: _RulesFile, source: str) -> list[Rule]:
    for i, r in enumerate(doc.rules):
        if r.yields and not r.subtree:  # a rule that does not stick has nothing to yield
            raise UsageError(f"{source}: bad rules file: rule {i}: yields needs subtree")
    return [Rule(category=r.category, cats=_cats(r.cats),
                 pattern=_regex(r.name, source, f"rule {i}") if r.name else None,
                 launch_api=r.launch_api, subtree=r.subtree, yields=r.yields)
            for i, r in enumerate(doc.rules)]


def _phases(doc: _RulesFile, source: str) -> list[PhaseRule]:
    return [PhaseRule(r.phase, _cats(r.cats), _regex(r.name or "", source, f"phase rule {i}"),
                      r.any_thread, r.before)
            for i, r in enumerate(doc.phases)]


def _framework(doc: _RulesFile, source: str) -> list[re.Pattern[str]]:
    return [_regex(p, source, "framework_ranges") for p in doc.framework_ranges]


def _default_bytes() -> bytes:
    return resources.files("traceview.data").joinpath("default_rules.json").read_bytes()


def _cold(doc: _RulesFile, share: float, min_ns: int) -> tuple[float, int]:
    """The cold-work thresholds: the file's where it sets them, else those given."""
    if doc.cold is None:
        return share, min_ns
    return (share if doc.cold.min_share is None else float(doc.cold.min_share),
            min_ns if doc.cold.min_ns is None else doc.cold.min_ns)


def load_rules(extra: str | Path | None = None) -> RuleSet:
    """The default table, with a user's rules file (if any) matched first."""
    return _load(_default_bytes(), extra)


def _load(default_data: bytes, extra: str | Path | None) -> RuleSet:
    default_doc = _decode(default_data, "default rules")
    categories = dict(default_doc.categories)
    rules = _rules(default_doc, "default rules")
    apis = {k: list(v) for k, v in default_doc.launch_apis.items()}
    framework = _framework(default_doc, "default rules")
    phases = _phases(default_doc, "default rules")
    comm = default_doc.communication_kernels or ""
    cold_share, cold_ns = _cold(default_doc, 0.01, 1_000_000)
    if extra is not None:
        source = printable_path(extra)
        try:
            data = Path(extra).read_bytes()
        except OSError as exc:
            raise UsageError(f"{source}: cannot read rules file: {exc.strerror or exc}") from None
        user_doc = _decode(data, source)
        if not any((user_doc.rules, user_doc.launch_apis, user_doc.framework_ranges,
                    user_doc.phases, user_doc.communication_kernels, user_doc.cold)):
            # a wrong file, or a list under another key, would change nothing, and the
            # user would read the default report as theirs
            raise UsageError(f"{source} holds no rules (none of {', '.join(RULE_KEYS)})")
        framework = _framework(user_doc, source) + framework
        phases = _phases(user_doc, source) + phases
        if user_doc.communication_kernels is not None:
            comm = user_doc.communication_kernels
        cold_share, cold_ns = _cold(user_doc, cold_share, cold_ns)
        categories = {**categories, **user_doc.categories}
        rules = _rules(user_doc, source) + rules
        for kind, names in user_doc.launch_apis.items():
            apis[kind] = list(apis.get(kind, [])) + list(names)
    for rule in rules:
        if rule.category not in categories and rule.category != INHERIT:
            raise UsageError(f"rule category {rule.category!r} is not declared in 'categories'")
    return RuleSet(
        categories=categories,
        rules=tuple(rules),
        launch_apis={k: frozenset(v) for k, v in apis.items()},
        framework_ranges=tuple(framework),
        phases=tuple(phases),
        communication_kernels=comm,
        cold_min_share=cold_share,
        cold_min_ns=cold_ns,
    )
