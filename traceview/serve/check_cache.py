"""A passed correctness check, kept on disk and keyed by everything it depends on.

The check of a FlagGems backend (a child that imports torch, transformers and FlagGems,
builds the model, compiles FlagGems' kernels and autotunes its ``mm``; then, when it
fails, the bisect and the check again) took 139 s on the H200 before any timing. Its
answer -- this backend with these ops excluded is right for this model on this machine
-- depends only on what goes into it, so a run whose inputs are all the same reuses it
in a fraction of a second:

* the model spec (layers, sizes, dtype, device, seed) and the check's inputs (the
  workload's prompts: requests, prompt length, batch size, seed; ``check_steps``);
* the variant (backend, excluded ops, environment, interpreter);
* the versions the variant's interpreter would import (Python, torch, transformers,
  triton, flag_gems: read by :func:`versions`, a child that imports none of them), the
  GPU's name and driver (``/proc/driver/nvidia``), and traceview's own version.

Only a check that passed (after the bisect's exclusions, when there were any) is kept:
a failure is always measured again. The folder is ``$TRACEVIEW_CACHE_DIR/serve-checks``,
else ``$XDG_CACHE_HOME/traceview/serve-checks``, else ``~/.cache/traceview/serve-checks``;
``serve --no-check-cache`` neither reads nor writes it.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from traceview.serve.spec import ServeSpec, Variant
from traceview.version import __version__

#: The packages whose versions decide a check's answer.
PACKAGES = ("torch", "transformers", "triton", "flag_gems")
_VERSIONS = (
    "import importlib.metadata as m, json, platform\n"
    "out = {'python': platform.python_version()}\n"
    "for n in %r:\n"
    "    try:\n"
    "        out[n] = m.version(n.replace('_', '-'))\n"
    "    except m.PackageNotFoundError:\n"
    "        out[n] = None\n"
    "print(json.dumps(out))\n") % (PACKAGES,)


def folder() -> Path:
    base = os.environ.get("TRACEVIEW_CACHE_DIR")
    if base:
        return Path(base) / "serve-checks"
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(xdg) / "traceview" / "serve-checks"


def versions(variant: Variant) -> dict[str, Any] | None:
    """The versions ``variant``'s interpreter and environment would import, from package
    metadata (no import of torch: about 0.1 s); None when they cannot be read."""
    from traceview.runner.process import query
    from traceview.serve.launch import command

    argv, env = command(variant)
    out = query([argv[0], "-c", _VERSIONS], env)
    try:
        got = json.loads((out or "").strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    return got if isinstance(got, dict) else None


def machine(device: str) -> dict[str, Any]:
    """The GPU models and driver as the kernel lists them (no CUDA initialised)."""
    if device != "cuda":
        import platform

        return {"device": device, "cpu": platform.processor() or platform.machine()}
    out: dict[str, Any] = {"device": device, "gpus": []}
    root = Path("/proc/driver/nvidia")
    try:
        for info in sorted((root / "gpus").glob("*/information")):
            model = next((ln.split(":", 1)[1].strip() for ln in info.read_text().splitlines()
                          if ln.startswith("Model:")), None)
            out["gpus"].append(model)
        version = (root / "version").read_text().splitlines()
        out["driver"] = version[0].strip() if version else None
    except OSError:
        pass
    return out


def key(spec: ServeSpec, variant: Variant, seen: dict[str, Any]) -> str:
    """The cache key: a digest of everything the check's answer depends on."""
    w = spec.workload
    doc = {"traceview": __version__, "model": asdict(spec.model),
           "check": {"requests": w.requests, "prompt_len": w.prompt_len,
                     "batch_size": w.batch_size, "seed": w.seed,
                     "check_steps": spec.check_steps},
           "variant": {"backend": variant.backend, "exclude_ops": list(variant.exclude_ops),
                       "env": dict(sorted(variant.env.items())), "python": variant.python},
           "versions": seen, "machine": machine(spec.model.device),
           "exclude_failing": spec.exclude_failing}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]


def load(k: str) -> dict[str, Any] | None:
    """``{"exclude_ops": [...], "correctness": block}`` kept under ``k``, or None."""
    path = folder() / f"{k}.json"
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or "correctness" not in doc:
        return None
    return dict(doc, path=str(path))


def save(k: str, variant: Variant, block: dict[str, Any], seen: dict[str, Any]) -> None:
    """Keep a passed check (atomically; a cache that cannot be written is skipped)."""
    from traceview.atomic import write_text_atomic

    try:
        folder().mkdir(parents=True, exist_ok=True)
        write_text_atomic(folder() / f"{k}.json", json.dumps(
            {"exclude_ops": list(variant.exclude_ops), "versions": seen,
             "correctness": block}, indent=1) + "\n")
    except OSError:
        pass
