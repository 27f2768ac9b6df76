"""A theme tool's parameter schema as the sandbox can check it: patterns Python can run.

Documents write ECMA-262 patterns (`\\p{L}`, variable-width lookbehind, `(?<name>...)`);
the argument checker runs `re`. A pattern `re` compiles is kept; a named group is respelled
`(?P<name>...)`; any other is dropped from that parameter and the tool says so, so one pattern
never fails a whole build. The `regex` package would read `\\p{..}`, but the sandbox's checker
uses `re`, so a pattern only `regex` reads is dropped too.

Documents also write JSON Schema of older drafts: Swagger's and OpenAPI 3.0's
`exclusiveMinimum: true` beside `minimum` (draft 4) is respelled as 2020-12's
`exclusiveMinimum: <the minimum>`. Whatever the 2020-12 meta-schema still refuses after that
(a `pattern: 0`, a `maxLength: "10"`) is dropped from where it stands, with a note, so a tool's
parameters are always a schema a client can read (`readable_schema`).
"""

from __future__ import annotations

import re
import warnings
from typing import Any

from environments.json_schemas import schema_error

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
    schema = _draft4_bounds(schema)
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


def _draft4_bounds(schema: dict[str, Any]) -> dict[str, Any]:
    """Draft 4's boolean `exclusiveMinimum`/`exclusiveMaximum` as 2020-12 numbers."""
    if not any(isinstance(schema.get(k), bool) for k in ("exclusiveMinimum", "exclusiveMaximum")):
        return schema
    out = dict(schema)
    for exclusive, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = out.get(exclusive)
        if not isinstance(flag, bool):
            continue
        del out[exclusive]
        if flag and isinstance(out.get(bound), int | float):
            out[exclusive] = out.pop(bound)
    return out


MAX_REPAIRS = 50  # keywords dropped from one schema before it is given up


def readable_schema(schema: dict[str, Any], notes: list[str]) -> dict[str, Any] | None:
    """The schema with each keyword the 2020-12 meta-schema refuses dropped (each noted), or
    None when it cannot be made readable that way."""
    import copy

    fixed = copy.deepcopy(schema)
    for _ in range(MAX_REPAIRS):
        try:
            error = schema_error(fixed)
        except (TypeError, ValueError, RecursionError):
            return None
        if error is None:
            return fixed
        path = list(error.path)
        if not path:
            return None
        parent: Any = fixed
        for step in path[:-1]:
            parent = parent[step]
        keyword = path[-1]
        if not isinstance(parent, dict) or keyword not in parent:
            return None
        shown = ".".join(str(p) for p in path)
        notes.append(f"{shown} ({parent[keyword]!r}) is not valid JSON Schema; it is not checked")
        del parent[keyword]
    return None
