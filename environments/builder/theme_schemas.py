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

import copy
import re
import warnings
from functools import lru_cache
from re import _constants, _parser  # the pattern's parse tree (no public API)
from typing import Any

from environments.json_schemas import schema_error

MAX_DEPTH = 24  # a schema nested deeper is cut (recursive documents dereferenced by depth)


def python_pattern(pattern: str) -> str | None:
    """The pattern as `re` reads it, or None when `re` cannot compile it or could take
    exponential time on a value (`nested_repetition`)."""
    for candidate in (pattern, re.sub(r"\(\?<(?![=!])", "(?P<", pattern)):
        try:
            with warnings.catch_warnings():  # "possible nested set": ECMA reads it the same
                warnings.simplefilter("ignore", FutureWarning)
                re.compile(candidate)
                if nested_repetition(candidate):
                    return None
        except (re.error, RecursionError, OverflowError):
            continue
        return candidate
    return None


def unusable_pattern(pattern: object) -> bool:
    """Whether a validator must leave a document's pattern out: `re` cannot compile it (ECMA's
    `\\p{L}`) or could take exponential time on a value."""
    return isinstance(pattern, str) and _unusable_text(pattern)


@lru_cache(maxsize=4096)
def _unusable_text(pattern: str) -> bool:
    """Read once per pattern: `theme_values.json_schema` asks on every value it checks."""
    return python_pattern(pattern) != pattern


def unbounded_pattern(pattern: object) -> bool:
    """Whether a document's pattern is one `re` could take exponential time on (a pattern
    `re` cannot read is not: it is never run)."""
    return isinstance(pattern, str) and _unbounded_text(pattern)


@lru_cache(maxsize=4096)
def _unbounded_text(pattern: str) -> bool:
    """Parsed once per pattern: `theme_values.json_schema` asks on every value it checks."""
    try:
        return nested_repetition(pattern)
    except (re.error, RecursionError, OverflowError, TypeError, ValueError):
        return False


_REPEATS = {_constants.MAX_REPEAT, _constants.MIN_REPEAT, _constants.POSSESSIVE_REPEAT}
LONG_REPEAT = 100  # a repetition allowed more turns than this backtracks as if unbounded


def _unbounded(high: int) -> bool:
    return high == _constants.MAXREPEAT or high > LONG_REPEAT


def nested_repetition(pattern: str) -> bool:
    """Whether an unbounded repetition holds another one with nothing to tell their turns
    apart (`([\\w .-]*)*`, `(a+)+`): on a value that almost matches, `re` backtracks through
    exponentially many ways to split it (beezup.com's URL pattern held a build for minutes).
    A body that must match a character its inner repetitions cannot (`([a-z]+\\.)*`) splits
    one way only and is kept."""
    return _ambiguous(_parser.parse(pattern), inside=False)


def _ambiguous(items, inside: bool) -> bool:
    for op, arg in items:
        if op in _REPEATS:
            _, high, body = arg
            unbounded = _unbounded(high)
            if unbounded and inside:
                return True
            if unbounded and _separated(body):
                continue  # each turn ends at its own separator
            if _ambiguous(body, inside or unbounded):
                return True
        elif op == _constants.SUBPATTERN and _ambiguous(arg[-1], inside):
            return True
        elif op == _constants.BRANCH and any(_ambiguous(b, inside) for b in arg[1]):
            return True
        elif op in (_constants.ASSERT, _constants.ASSERT_NOT) and _ambiguous(arg[1], inside):
            return True
    return False


def _separated(body) -> bool:
    """Whether a repeated body must match a character (of ASCII) that no unbounded repetition
    inside it can match: then the turns cannot trade characters."""
    while len(body) == 1 and body[0][0] == _constants.SUBPATTERN:  # `(...)*`: the group
        body = body[0][1][-1]
    required = [
        [(op, arg)] if op == _constants.LITERAL else arg
        for op, arg in body
        if op in (_constants.LITERAL, _constants.IN)
    ]
    inner = list(_repeated_sets(body, repeated=False))
    if not inner:
        return False
    return any(
        not any(_in_set(c, items) and any(_in_set(c, s) for s in inner) for c in _ASCII)
        for items in required
    )


_ASCII = [chr(i) for i in range(32, 127)]


def _repeated_sets(items, repeated: bool):
    """The character sets that unbounded repetitions inside `items` match (None: any)."""
    for op, arg in items:
        if op in _REPEATS:
            yield from _repeated_sets(arg[2], repeated or _unbounded(arg[1]))
        elif op == _constants.SUBPATTERN:
            yield from _repeated_sets(arg[-1], repeated)
        elif op == _constants.BRANCH:
            for branch in arg[1]:
                yield from _repeated_sets(branch, repeated)
        elif not repeated:
            continue
        elif op == _constants.IN:
            yield arg
        elif op == _constants.LITERAL:
            yield [(op, arg)]
        elif op in (_constants.ANY, _constants.CATEGORY, _constants.NOT_LITERAL):
            yield None if op != _constants.CATEGORY else [(op, arg)]


_CATEGORIES = {
    _constants.CATEGORY_DIGIT: str.isdigit,
    _constants.CATEGORY_NOT_DIGIT: lambda c: not c.isdigit(),
    _constants.CATEGORY_WORD: lambda c: c.isalnum() or c == "_",
    _constants.CATEGORY_NOT_WORD: lambda c: not (c.isalnum() or c == "_"),
    _constants.CATEGORY_SPACE: str.isspace,
    _constants.CATEGORY_NOT_SPACE: lambda c: not c.isspace(),
}


def _in_set(char: str, items) -> bool:
    if items is None:
        return True
    negate, found = False, False
    for op, arg in items:
        if op == _constants.NEGATE:
            negate = True
        elif op == _constants.LITERAL:
            found |= chr(arg) == char
        elif op == _constants.RANGE:
            found |= arg[0] <= ord(char) <= arg[1]
        elif op == _constants.CATEGORY:
            found |= _CATEGORIES.get(arg, lambda c: True)(char)
        else:
            found = True  # a kind of set not read here: assume it matches
    return found != negate


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
                    "regular expression that runs in bounded time; it is not checked"
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
            out[key] = {}
            for name, sub in value.items():
                if sub is True:
                    sub = {}  # JSON Schema's "anything": an object schema a client reads
                if not isinstance(sub, dict):  # Vercel's misplaced `additionalProperties: false`
                    notes.append(f"{_inside(where, name)} has no schema ({sub!r}); it is left out")
                    continue
                out[key][name] = checkable_schema(sub, notes, _inside(where, name), depth + 1)
        else:
            out[key] = checkable_schema(value, notes, where, depth + 1)
    if isinstance(out.get("properties"), dict) and isinstance(out.get("required"), list):
        out["required"] = [r for r in out["required"] if r in out["properties"]]
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
