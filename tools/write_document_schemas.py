"""Write the JSON Schema of every typed document kind into docs/schemas/<kind>.json and
print each one's hash, as ``traceview.documents.SCHEMA_HASHES`` records it.

    PYTHONPATH=. python tools/write_document_schemas.py

Run it after changing a document's layout; then record the printed hash beside the
kind's version in ``documents.py`` (and bump the version when a key was removed, moved
or changed meaning). ``tests/test_document_schemas.py`` fails until both are done.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import sys
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "docs" / "schemas"


def layout(kind: str) -> Any:
    from traceview.documents import LAYOUTS

    module, name = LAYOUTS[kind].split(":")  # type: ignore[index]
    found = getattr(importlib.import_module(module), name)
    # a layout built from the types it describes (explain's) is named by its builder
    return found if isinstance(found, type) else found()


def schema(kind: str) -> dict[str, Any]:
    """The kind's JSON Schema, with the version it describes."""
    from traceview.documents import VERSIONS

    out = msgspec.json.schema(layout(kind))
    return {"$comment": f"traceview {kind} document, schema_version "
                        f"{VERSIONS[kind]}", **out}  # type: ignore[index]


def text(kind: str) -> str:
    return json.dumps(schema(kind), indent=2, sort_keys=True) + "\n"


def digest(kind: str) -> str:
    """The layout's hash: of the schema without the comment naming its version."""
    body = {k: v for k, v in schema(kind).items() if k != "$comment"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def main() -> int:
    from traceview.documents import LAYOUTS, VERSIONS

    SCHEMAS.mkdir(parents=True, exist_ok=True)
    for kind in LAYOUTS:
        (SCHEMAS / f"{kind}.json").write_text(text(kind))
        print(f'    "{kind}": ({VERSIONS[kind]}, "{digest(kind)}"),')
    return 0


if __name__ == "__main__":
    sys.exit(main())
