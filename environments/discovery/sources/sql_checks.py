"""The rules a built table carries as CHECK constraints, read back from its CREATE TABLE text.

SQL readers (`sql_dialects`) keep the simple CHECK and ENUM constraints of a script as these
normalised SQLite forms, one per column rule, the column double-quoted as in the final table:

    CHECK ("status" IN ('pending', 'shipped'))    -> {"enum": ["pending", "shipped"]}
    CHECK ("qty" >= 0)  /  CHECK ("qty" > 0)      -> {"minimum": 0, "exclusive_minimum": False/True}
    CHECK ("qty" <= 9)  /  CHECK ("qty" < 9)      -> {"maximum": 9, "exclusive_maximum": False/True}
    CHECK ("code" <> '')                          -> {"min_length": 1}

`check_constraints(create_sql)` returns those rules per column (several CHECKs on one column
merge; the tighter bound wins); any other CHECK text is ignored, so it never guesses.
"""

from __future__ import annotations

import re
from typing import Any

_STRING = r"'(?:[^']|'')*'"
_NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
_LITERAL = rf"(?:{_STRING}|{_NUMBER})"
_COLUMN = r'"((?:[^"]|"")+)"'
_ENUM = re.compile(
    rf"CHECK\s*\(\s*{_COLUMN}\s+IN\s*\(\s*({_LITERAL}(?:\s*,\s*{_LITERAL})*)\s*\)\s*\)", re.I
)
_BOUND = re.compile(rf"CHECK\s*\(\s*{_COLUMN}\s*(>=|>|<=|<)\s*({_NUMBER})\s*\)", re.I)
_NOT_EMPTY = re.compile(rf"CHECK\s*\(\s*{_COLUMN}\s*(?:<>|!=)\s*''\s*\)", re.I)


def literal(text: str) -> Any:
    """The Python value of a normalised SQL literal ('it''s' -> "it's", 2.5 -> 2.5)."""
    if text.startswith("'"):
        return text[1:-1].replace("''", "'")
    number = float(text)
    return int(number) if re.fullmatch(r"-?\d+", text) else number


def check_constraints(create_sql: str) -> dict[str, dict[str, Any]]:
    """Per column, the enum / bound / non-empty rules of the normalised CHECKs in `create_sql`."""
    rules: dict[str, dict[str, Any]] = {}
    for match in _ENUM.finditer(create_sql):
        values = [literal(v) for v in re.findall(_LITERAL, match.group(2))]
        rule = rules.setdefault(match.group(1).replace('""', '"'), {})
        rule["enum"] = [v for v in rule["enum"] if v in values] if "enum" in rule else values
    for match in _BOUND.finditer(create_sql):
        column, op, number = match.group(1).replace('""', '"'), match.group(2), match.group(3)
        rule = rules.setdefault(column, {})
        value, exclusive = literal(number), len(op) == 1
        side = "minimum" if op.startswith(">") else "maximum"
        current = rule.get(side)
        if current is None:
            tighter = True
        else:
            tighter = (value > current) if side == "minimum" else (value < current)
            tighter = tighter or (value == current and exclusive)
        if tighter:
            rule[side], rule[f"exclusive_{side}"] = value, exclusive
    for match in _NOT_EMPTY.finditer(create_sql):
        rules.setdefault(match.group(1).replace('""', '"'), {})["min_length"] = 1
    return rules
