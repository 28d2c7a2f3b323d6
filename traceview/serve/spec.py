"""What a serving run was asked to do: model, workload, the variants, the protocol.

Everything here is torch-free and validated in milliseconds, so a bad option is one line
and exit 2 before any child process starts. The same objects travel to every child as
JSON (``to_dict``/``from_dict``) and are recorded in the output, so a result always says
how it was made.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from traceview.errors import UsageError

BACKENDS = ("eager", "flag_gems", "compile")
ARRIVALS = ("offline", "poisson")
DTYPES = {"bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "f16": "float16",
          "fp16": "float16", "float32": "float32", "f32": "float32", "fp32": "float32"}
DEVICES = ("cuda", "cpu")


@dataclass(frozen=True)
class ModelSpec:
    """A Llama-style decoder built from this config with seeded random weights."""

    layers: int = 8
    hidden: int = 1024
    heads: int = 16
    kv_heads: int = 4
    intermediate: int = 2816
    vocab: int = 32000
    dtype: str = "bfloat16"
    device: str = "cuda"
    attn: str = "sdpa"
    seed: int = 0

    def validate(self) -> ModelSpec:
        for name in ("layers", "hidden", "heads", "kv_heads", "intermediate", "vocab"):
            if getattr(self, name) < 1:
                raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
        if self.hidden % self.heads:
            raise UsageError(f"--hidden {self.hidden} is not a multiple of --heads {self.heads}")
        if self.heads % self.kv_heads:
            raise UsageError(f"--heads {self.heads} is not a multiple of --kv-heads "
                             f"{self.kv_heads}")
        if (self.hidden // self.heads) % 2:
            raise UsageError("the head size (hidden / heads) must be even (rotary embedding)")
        if self.dtype not in DTYPES:
            raise UsageError(f"--dtype {self.dtype!r}: expected one of bfloat16, float16, "
                             "float32")
        if self.device not in DEVICES:
            raise UsageError(f"--device {self.device!r}: expected cuda or cpu")
        return replace(self, dtype=DTYPES[self.dtype])

    @property
    def params(self) -> int:
        """Parameter count (untied embeddings), for the record and for memory checks."""
        head = self.hidden // self.heads
        attn = self.hidden * head * (2 * self.heads + 2 * self.kv_heads)
        mlp = 3 * self.hidden * self.intermediate
        norms = 2 * self.hidden
        return 2 * self.vocab * self.hidden + self.layers * (attn + mlp + norms) + self.hidden

    @property
    def bytes(self) -> int:
        return self.params * (4 if self.dtype == "float32" else 2)


@dataclass(frozen=True)
class Workload:
    """The requests: all the same prompt and output length, so every side does the same work.

    ``arrival``: ``offline`` (every request is there at time 0) or ``poisson`` (seeded
    exponential gaps at ``rate`` requests/s). The engine batches statically: a batch of up
    to ``batch_size`` queued requests runs to completion before the next one starts.
    """

    requests: int = 16
    prompt_len: int = 128
    output_len: int = 32
    batch_size: int = 8
    arrival: str = "offline"
    rate: float | None = None
    warmup_batches: int = 1
    seed: int = 0

    def validate(self) -> Workload:
        if self.requests < 1:
            raise UsageError("--requests must be at least 1")
        if self.prompt_len < 1:
            raise UsageError("--prompt-len must be at least 1")
        if self.output_len < 2:
            raise UsageError("--output-len must be at least 2 (TPOT is the time per output "
                             "token after the first)")
        if self.batch_size < 1:
            raise UsageError("--batch-size must be at least 1")
        if self.warmup_batches < 0:
            raise UsageError("--warmup-batches must be 0 or more")
        if self.arrival not in ARRIVALS:
            raise UsageError(f"--arrival {self.arrival!r}: expected offline or poisson")
        if self.arrival == "poisson" and (self.rate is None or not self.rate > 0):
            raise UsageError("--arrival poisson needs --rate R (requests per second, > 0)")
        if self.arrival == "offline" and self.rate is not None:
            raise UsageError("--rate applies to --arrival poisson only")
        return self


_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_env(items: list[str] | tuple[str, ...] | None) -> dict[str, str]:
    """``["K=V", ...]`` -> dict; a malformed item is a UsageError naming it."""
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not _ENV_RE.match(key):
            raise UsageError(f"--env {item!r}: expected NAME=VALUE")
        out[key] = value
    return out


def parse_ops(text: str | None) -> tuple[str, ...]:
    """``"mul, add"`` -> ``("mul", "add")``."""
    if not text:
        return ()
    return tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))


@dataclass(frozen=True)
class Variant:
    """One side of a comparison: a backend, ops kept off it, and the process it runs in."""

    label: str
    backend: str = "eager"
    exclude_ops: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    python: str | None = None

    def validate(self) -> Variant:
        if self.backend not in BACKENDS:
            raise UsageError(f"backend {self.backend!r}: expected one of {', '.join(BACKENDS)}")
        if self.exclude_ops and self.backend != "flag_gems":
            raise UsageError("--exclude-ops applies to the flag_gems backend only")
        return self

    @property
    def is_plain_eager(self) -> bool:
        """torch eager in this very environment: the correctness reference itself."""
        return self.backend == "eager" and not self.env and self.python is None

    def describe(self) -> str:
        parts = [self.backend]
        if self.exclude_ops:
            parts.append("without " + ",".join(self.exclude_ops))
        parts += [f"{k}={v}" for k, v in self.env.items()]
        if self.python:
            parts.append(f"python={self.python}")
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["exclude_ops"] = list(self.exclude_ops)
        return d

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Variant:
        return Variant(label=d["label"], backend=d["backend"],
                       exclude_ops=tuple(d.get("exclude_ops") or ()),
                       env=dict(d.get("env") or {}), python=d.get("python"))


@dataclass(frozen=True)
class AttributeSpec:
    """``--attribute``: split the A/B's whole effect by op (:mod:`.attribution`)."""

    ops: tuple[str, ...] = ()  # restrict the candidates (default: every op the model calls)
    budget_s: float | None = None
    screen_rounds: int = 3
    min_share: float = 0.1

    def validate(self) -> AttributeSpec:
        if self.screen_rounds < 1:
            raise UsageError("--attribute-screen-rounds must be at least 1")
        if not 0 < self.min_share < 1:
            raise UsageError("--attribute-min-share must be between 0 and 1")
        if self.budget_s is not None and not self.budget_s > 0:
            raise UsageError("--attribute-budget must be positive")
        return self


@dataclass(frozen=True)
class ServeSpec:
    """The whole run. ``b`` is None for a single-variant run."""

    model: ModelSpec
    workload: Workload
    a: Variant
    b: Variant | None = None
    rounds: int = 6
    alpha: float = 0.05
    order_seed: int | None = None
    check_steps: int = 16
    profile_steps: int = 8
    exclude_failing: bool = False
    #: reuse a passed correctness check kept on disk (:mod:`traceview.serve.check_cache`)
    check_cache: bool = False
    attribute: AttributeSpec | None = None

    def validate(self) -> ServeSpec:
        if self.rounds < 1:
            raise UsageError("--rounds must be at least 1")
        if not 0 < self.alpha < 1:
            raise UsageError("--alpha must be between 0 and 1")
        if self.check_steps < 1:
            raise UsageError("--check-steps must be at least 1")
        if self.profile_steps < 0:
            raise UsageError("--profile-steps must be 0 or more")
        if self.attribute is not None:
            self._attributable()
        return replace(self, model=self.model.validate(), workload=self.workload.validate(),
                       a=self.a.validate(), b=None if self.b is None else self.b.validate())

    def _attributable(self) -> None:
        """--attribute splits eager -> flag_gems by op, toggled inside one process: B must
        be flag_gems and A plain eager in the same interpreter and environment."""
        assert self.attribute is not None
        self.attribute.validate()
        b = self.b
        if b is None or b.backend != "flag_gems" or self.a.backend != "eager":
            raise UsageError("--attribute splits an eager -> flag_gems swap by op: give "
                             "--backend eager --vs flag_gems")
        if b.env != self.a.env or b.python != self.a.python:
            raise UsageError("--attribute: both sides must run in the same Python and "
                             "environment (give --env and --vs-env alike)")
        if self.rounds < 2:
            raise UsageError("--attribute needs --rounds 2 or more (6 for a 95% interval)")

    @property
    def variants(self) -> tuple[Variant, ...]:
        return (self.a,) if self.b is None else (self.a, self.b)


#: what ``serve``'s children import (the ``serve`` extra); FlagGems is a backend's own
SERVE_MODULES = ("torch", "transformers")


def check_extras(spec: ServeSpec, probe: Any = None) -> None:
    """Refuse, before any process starts, a run whose interpreters lack the serve extra:
    without it every child crashed and the run read as a failed correctness check with
    an empty bisect table. This interpreter runs the torch eager reference, so it is
    checked whatever the variants say; a variant with its own ``python`` or
    ``PYTHONPATH`` is asked in a child (``probe``: that asking, for tests)."""
    probe = probe or _missing_in
    places: dict[tuple[str | None, str | None], list[str]] = {(None, None): ["this Python"]}
    for v in spec.variants:
        where = (v.python, v.env.get("PYTHONPATH"))
        places.setdefault(where, []).append(f"side {v.label}")
    for (python, path), who in places.items():
        missing = probe(python, path)
        if missing:
            at = f" ({python})" if python else ""
            raise UsageError(
                f"serve needs {' and '.join(SERVE_MODULES)}: {', '.join(missing)} not "
                f"installed for {' and '.join(who)}{at}; pip install 'traceview[serve]'")


def _missing_in(python: str | None, path: str | None) -> list[str]:
    """The serve modules ``python`` (None: this one) cannot find, with ``path`` as its
    PYTHONPATH where given; found without importing them (no torch start-up)."""
    import importlib.util

    if python is None and path is None:
        out = []
        for name in SERVE_MODULES:
            try:
                found = importlib.util.find_spec(name) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                out.append(name)
        return out
    import os
    import sys

    from traceview.runner.process import query

    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = path
    code = ("import importlib.util as u, sys\n"
            "def found(n):\n"
            "    try:\n        return u.find_spec(n) is not None\n"
            "    except (ImportError, ValueError):\n        return False\n"
            "print(' '.join(n for n in sys.argv[1:] if not found(n)))")
    # an interpreter that cannot start (None) is the launcher's to report
    printed = query([python or sys.executable, "-c", code, *SERVE_MODULES], env)
    return printed.split() if printed is not None else []


def model_to_dict(m: ModelSpec) -> dict[str, Any]:
    return dict(asdict(m), params=m.params, bytes=m.bytes)


def model_from_dict(d: dict[str, Any]) -> ModelSpec:
    fields = {k: v for k, v in d.items() if k not in ("params", "bytes")}
    return ModelSpec(**fields)


def workload_from_dict(d: dict[str, Any]) -> Workload:
    return Workload(**d)
