"""What the gold run observed at each step, stored on the gold chain, and how to compare with it.

Synthesis executes every gold chain in the sandbox, so each step's result is known; storing it
lets diagnosis tell "right call, wrong observation" (the agent's state had drifted) from "wrong
call". A result is kept as JSON; one whose canonical JSON is longer than ``GOLD_RESULT_CHARS``
is replaced by a marker with its length, its sha256 and a preview, which still decides
equality exactly (an observation equals it when its canonical JSON has the same hash).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

GOLD_RESULT_CHARS = 2000
TRUNCATED_KEY = "__gold_result_truncated__"


def _json_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def result_sha256(result: Any) -> str:
    """The digest a truncated gold result is stored under (and an observed one compared by)."""
    return hashlib.sha256(_json_text(result).encode()).hexdigest()


def stored_result(result: Any, limit: int = GOLD_RESULT_CHARS) -> Any:
    """``result`` as plain JSON, or the truncation marker when its JSON exceeds ``limit``."""
    text = _json_text(result)
    if len(text) <= limit:
        return json.loads(text)
    return {
        TRUNCATED_KEY: {
            "chars": len(text),
            "sha256": result_sha256(result),
            "preview": text[: limit // 2],  # escaped quotes may double it when stored
        }
    }


def with_results(chain: list[dict[str, Any]], results: list[Any]) -> list[dict[str, Any]]:
    """The chain's entries, each with the gold result observed at its step (stored form)."""
    return [
        {**call, "result": stored_result(result)}
        for call, result in zip(chain, results, strict=True)
    ]


def is_truncated(stored: Any) -> bool:
    return isinstance(stored, Mapping) and set(stored) == {TRUNCATED_KEY}


def normalize_value(value: Any) -> Any:
    """Canonical form for comparing arguments, results and rows: case and type tolerant."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        number = float(value)
        return round(number, 6) if math.isfinite(number) else str(number)
    if isinstance(value, str):
        text = value.strip()
        try:
            return round(float(text), 6) if text else ""
        except ValueError:
            return text.casefold()
    if isinstance(value, Mapping):
        return {
            str(k): normalize_value(v) for k, v in sorted(value.items(), key=lambda i: str(i[0]))
        }
    if isinstance(value, list | tuple):
        return [normalize_value(v) for v in value]
    return str(value)


def canonical_value(value: Any) -> str:
    """The normalised value as JSON text: equal texts mean equal values for diagnosis."""
    return json.dumps(normalize_value(value), sort_keys=True, default=str)


def result_matches(gold: Any, observed: Any) -> bool:
    """Whether an observed tool result equals a stored gold result (truncated ones by hash)."""
    if is_truncated(gold):
        return result_sha256(observed) == gold[TRUNCATED_KEY]["sha256"]
    return canonical_value(gold) == canonical_value(observed)
