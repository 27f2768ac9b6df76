"""A string that matches a document's `pattern`, made by walking the regular expression.

Generated rows must honour the patterns an API document declares (`^[A-Z]{3}-\\d{4}$`), and
no maintained library in our dependencies makes a value from a regular expression at run time
(hypothesis only in the tests), so this walks Python's own parse of the pattern: literals,
classes, ranges, repeats (bounded to a few), groups and alternatives. What it cannot walk
(look-arounds, back-references) gives None and the caller keeps its own value or none.
"""

from __future__ import annotations

import random
import re
import string
from typing import Any

try:  # Python 3.11+: the parser is re._parser
    from re import _constants as sre_constants  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

_CATEGORIES = {
    sre_constants.CATEGORY_DIGIT: string.digits,
    sre_constants.CATEGORY_WORD: string.ascii_letters + string.digits + "_",
    sre_constants.CATEGORY_SPACE: " ",
    sre_constants.CATEGORY_NOT_DIGIT: string.ascii_letters,
    sre_constants.CATEGORY_NOT_WORD: "-. ",
    sre_constants.CATEGORY_NOT_SPACE: string.ascii_letters + string.digits,
}
_MAX_REPEAT = 4
_PRINTABLE = string.ascii_letters + string.digits + "-_."


class _Unwalkable(Exception):
    pass


def matching_value(
    pattern: str,
    rng: random.Random,
    min_length: int | None = None,
    max_length: int | None = None,
) -> str | None:
    """A string `re.search(pattern, value)` accepts, as long as the document's `minLength` and
    `maxLength` allow, or None when none can be made. After five free walks, unbounded repeats
    take as few turns as they may: AWS wraps a 36-character UUID in `.*` on both sides."""
    matched: str | None = None
    try:
        parsed = sre_parse.parse(pattern)
        for attempt in range(15):
            # five free walks, five lean ones, five whose unbounded repeats reach min_length
            reach = min(min_length, 256) if min_length and attempt >= 10 else None
            value = _walk(list(parsed), rng, lean=5 <= attempt < 10, reach=reach)
            if not re.search(pattern, value):
                continue
            matched = matched or value
            if (min_length is None or len(value) >= min_length) and (
                max_length is None or len(value) <= max_length
            ):
                return value
    except (_Unwalkable, re.error, RecursionError, ValueError, TypeError):
        return matched
    return matched  # the pattern's, though the bounds could not be met: better than none


def _walk(items: list, rng: random.Random, lean: bool = False, reach: int | None = None) -> str:
    return "".join(_one(op, arg, rng, lean, reach) for op, arg in items)


def _one(
    op: Any, arg: Any, rng: random.Random, lean: bool = False, reach: int | None = None
) -> str:
    if op == sre_constants.LITERAL:
        return chr(arg)
    if op == sre_constants.NOT_LITERAL:
        return next(c for c in _PRINTABLE if ord(c) != arg)
    if op == sre_constants.ANY:
        return rng.choice(string.ascii_lowercase)
    if op == sre_constants.AT:
        return ""
    if op == sre_constants.IN:
        return _in(arg, rng)
    if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
        low, high, body = arg
        if reach and high == sre_constants.MAXREPEAT:
            low = high = max(low, reach)  # a long value: `^[a-z]+$` of minLength 20
        if lean and high == sre_constants.MAXREPEAT:
            high = low
        high = low + _MAX_REPEAT if high == sre_constants.MAXREPEAT else high
        count = rng.randint(low, max(low, min(high, low + _MAX_REPEAT)))
        return "".join(_walk(list(body), rng, lean, reach) for _ in range(count))
    if op == sre_constants.SUBPATTERN:
        return _walk(list(arg[-1]), rng, lean, reach)
    if op == sre_constants.BRANCH:
        return _walk(list(rng.choice(arg[1])), rng, lean, reach)
    raise _Unwalkable(str(op))


def _in(options: list, rng: random.Random) -> str:
    """One character of a class `[...]` (a negated class: a printable one outside it)."""
    allowed: list[str] = []
    negated = False
    for op, arg in options:
        if op == sre_constants.NEGATE:
            negated = True
        elif op == sre_constants.LITERAL:
            allowed.append(chr(arg))
        elif op == sre_constants.RANGE:
            low, high = arg
            allowed.extend(chr(c) for c in range(low, min(high, low + 200) + 1))
        elif op == sre_constants.CATEGORY:
            allowed.extend(_CATEGORIES.get(arg, ""))
        else:
            raise _Unwalkable(str(op))
    if negated:
        allowed = [c for c in _PRINTABLE if c not in allowed]
    if not allowed:
        raise _Unwalkable("empty class")
    return rng.choice(allowed)
