"""Following a node's own `$ref` inside an OpenAPI document: one rule for every reader of it."""

from __future__ import annotations

from typing import Any

MAX_HOPS = 4  # a reference to a reference: followed this far, never around a cycle


def follow_ref(value: Any, doc: dict) -> dict:
    """A node of the document with its own `$ref` (only) followed; {} when not an object."""
    for _ in range(MAX_HOPS):
        ref = value.get("$ref") if isinstance(value, dict) else None
        if not (isinstance(ref, str) and ref.startswith("#/")):
            break
        target: Any = doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part, {}) if isinstance(target, dict) else {}
        value = target
    return value if isinstance(value, dict) else {}
