"""A theme tool's parameter schema as the sandbox can check it: patterns Python can run.

Documents write ECMA-262 patterns (`\\p{L}`, variable-width lookbehind, `(?<name>...)`);
the argument checker runs `re`. A pattern `re` compiles is kept; a named group is respelled
`(?P<name>...)`; any other is dropped from that parameter and the tool says so, so one pattern
never fails a whole build. The `regex` package would read `\\p{..}`, but the sandbox's checker
uses `re`, so a pattern only `regex` reads is dropped too.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

MAX_DEPTH = 24  # a schema nested deeper is cut (recursive documents dereferenced by depth)


def python_pattern(pattern: str) -> str | None:
    """The pattern as `re` reads it, or None when `re` cannot compile it."""
    for candidate in (pattern, re.sub(r"\(\?<(?![=!])", "(?P<", pattern)):
        try:
            with warnings.catch_warnings():  # "possible nested set": ECMA reads it the same
                warnings.simplefilter("ignore", FutureWarning)
                re.compile(candidate)
        except (re.error, RecursionError, OverflowError):
            continue
        return candidate
    return None


def checkable_schema(schema: Any, notes: list[str], where: str = "", depth: int = 0) -> Any:
    """A copy of the schema with every pattern runnable by `re` (dropped ones noted)."""
    if depth > MAX_DEPTH:
        return {}
    if isinstance(schema, list):
        return [checkable_schema(s, notes, where, depth + 1) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "pattern" and isinstance(value, str):
            kept = python_pattern(value)
            if kept is None:
                notes.append(
                    f"the pattern {value!r} of {where or 'the parameters'} is not a Python "
                    "regular expression; it is not checked"
                )
                continue
            out[key] = kept
        elif key == "patternProperties" and isinstance(value, dict):
            props = {}
            for pattern, sub in value.items():
                if python_pattern(pattern) == pattern:
                    props[pattern] = checkable_schema(sub, notes, where, depth + 1)
                else:
                    notes.append(f"the property pattern {pattern!r} of {where} is not checked")
            out[key] = props
        elif key == "properties" and isinstance(value, dict):
            out[key] = {
                name: checkable_schema(sub, notes, _inside(where, name), depth + 1)
                for name, sub in value.items()
            }
        else:
            out[key] = checkable_schema(value, notes, where, depth + 1)
    return out


def _inside(where: str, name: str) -> str:
    return f"{where}.{name}" if where else f"parameter {name!r}"
