"""Host categories: the ordered rule table and how an event gets its category.

The table is data (``traceview/data/default_rules.json``); users prepend their own rules
with ``--rules FILE`` (same format). A rule names a category and matches on the event
category and a regular expression searched in the event name. ``subtree`` rules make a
category stick to everything nested inside the matching event — all of
``torch.cuda.synchronize`` is ``sync``, everything under Triton's compiler is
``compile`` — and the *nearest* such ancestor wins, so a launcher build triggered
inside ``launch_metadata`` on the first call still counts as ``compile``. ``inherit``
(builtins, stdlib helpers) takes the enclosing event's category.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from traceview.errors import UsageError

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
        for rule in self.rules:
            if rule.cats is not None and cat not in rule.cats:
                continue
            if rule.launch_api and self.launch_kind(name) is None:
                continue
            if rule.pattern is not None and rule.pattern.search(name) is None:
                continue
            return rule.category, rule.subtree
        return OTHER, False


def _framework(doc: Any, source: str) -> list[re.Pattern[str]]:
    pats = doc.get("framework_ranges", [])
    if not isinstance(pats, list) or not all(isinstance(p, str) for p in pats):
        raise UsageError(f"{source}: 'framework_ranges' must be a list of regular expressions")
    try:
        return [re.compile(p) for p in pats]
    except re.error as exc:
        raise UsageError(f"{source}: framework_ranges: bad regular expression: {exc}") from None


def _phases(doc: Any, source: str) -> list[PhaseRule]:
    out = []
    items = doc.get("phases", [])
    if not isinstance(items, list):
        raise UsageError(f"{source}: 'phases' must be a list")
    for i, r in enumerate(items):
        if not isinstance(r, dict) or not isinstance(r.get("phase"), str):
            raise UsageError(f"{source}: phase rule {i} needs a 'phase' string")
        try:
            pattern = re.compile(r.get("name") or "")
        except re.error as exc:
            raise UsageError(f"{source}: phase rule {i}: bad regular expression: {exc}") from None
        rc = r.get("cats")
        before = r.get("before")
        out.append(PhaseRule(r["phase"], frozenset(rc) if isinstance(rc, list) else None,
                             pattern, bool(r.get("any_thread", False)),
                             before if isinstance(before, str) else None))
    return out


def _parse(doc: Any, source: str) -> tuple[dict[str, str], list[Rule], dict[str, list[str]]]:
    if not isinstance(doc, dict) or not isinstance(doc.get("rules", []), list):
        raise UsageError(f"{source}: rules file must be a JSON object with a 'rules' list")
    cats = doc.get("categories", {})
    if not isinstance(cats, dict):
        raise UsageError(f"{source}: 'categories' must map ids to descriptions")
    rules = []
    for i, r in enumerate(doc.get("rules", [])):
        if not isinstance(r, dict) or not isinstance(r.get("category"), str):
            raise UsageError(f"{source}: rule {i} needs a 'category' string")
        try:
            pattern = re.compile(r["name"]) if r.get("name") else None
        except re.error as exc:
            raise UsageError(f"{source}: rule {i}: bad regular expression: {exc}") from None
        rc = r.get("cats")
        rules.append(Rule(
            category=r["category"],
            cats=frozenset(rc) if isinstance(rc, list) else None,
            pattern=pattern,
            launch_api=bool(r.get("launch_api", False)),
            subtree=bool(r.get("subtree", False)),
        ))
    apis = doc.get("launch_apis", {})
    return {str(k): str(v) for k, v in cats.items()}, rules, apis


def _cold(doc: Any, source: str, share: float, min_ns: int) -> tuple[float, int]:
    cold = doc.get("cold", {})
    if not isinstance(cold, dict):
        raise UsageError(f"{source}: 'cold' must be an object")
    share = cold.get("min_share", share)
    min_ns = cold.get("min_ns", min_ns)
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
        raise UsageError(f"{source}: cold.min_share must be a number from 0 to 1")
    if isinstance(min_ns, bool) or not isinstance(min_ns, int) or min_ns < 0:
        raise UsageError(f"{source}: cold.min_ns must be a non-negative integer")
    return float(share), min_ns


def load_rules(extra: str | Path | None = None) -> RuleSet:
    """The default table, with a user's rules file (if any) matched first."""
    text = resources.files("traceview.data").joinpath("default_rules.json").read_text()
    default_doc = json.loads(text)
    categories, rules, apis = _parse(default_doc, "default rules")
    framework = _framework(default_doc, "default rules")
    phases = _phases(default_doc, "default rules")
    comm = default_doc.get("communication_kernels", "")
    cold_share, cold_ns = _cold(default_doc, "default rules", 0.01, 1_000_000)
    if extra is not None:
        try:
            user_doc = json.loads(Path(extra).read_text())
        except OSError as exc:
            raise UsageError(f"{extra}: cannot read rules file: {exc.strerror or exc}") from None
        except json.JSONDecodeError as exc:
            raise UsageError(f"{extra}: rules file is not valid JSON: {exc}") from None
        u_cats, u_rules, u_apis = _parse(user_doc, str(extra))
        framework = _framework(user_doc, str(extra)) + framework
        phases = _phases(user_doc, str(extra)) + phases
        comm = user_doc.get("communication_kernels", comm)
        cold_share, cold_ns = _cold(user_doc, str(extra), cold_share, cold_ns)
        categories = {**categories, **u_cats}
        rules = u_rules + rules
        for kind, names in u_apis.items():
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
        communication_kernels=comm if isinstance(comm, str) else "",
        cold_min_share=cold_share,
        cold_min_ns=cold_ns,
    )
