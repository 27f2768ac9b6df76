"""The API's only request parser: JSON that cannot crash a view."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class SafeJSONParser(JSONParser):
    """JSON bodies that cannot crash a view: too deep nesting and NUL characters are a 400.

    Python's json raises RecursionError (not ValueError) past ~1000 levels, and PostgreSQL jsonb
    refuses \\u0000, so both would otherwise surface as 500s.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError("JSON parse error - nested too deeply") from exc
        if _has_nul(data):
            raise ParseError("JSON parse error - strings must not contain NUL (\\u0000) characters")
        return data


def _has_nul(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
