"""Check tool-call arguments against the tool's JSON schema before the call enters the sandbox.

The problem is said in words an agent can act on, naming the argument and the rule:
"argument 'isbn' must be a string of at most 13 characters, got 12345", not jsonschema's
"12345 is not of type 'string'".
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

JSON_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
    "null": "null",
}


class ArgumentChecker:
    """One compiled validator per tool of a package (compiled once, reused for every call)."""

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self._validators = {
            tool["function"]["name"]: Draft202012Validator(tool["function"]["parameters"])
            for tool in tools
        }

    def problem(self, tool: str, arguments: Any) -> str | None:
        """What is wrong with the arguments, in words, or None when they are valid."""
        if not isinstance(arguments, dict):
            return f"arguments must be a JSON object, got {type(arguments).__name__}"
        error = best_match(self._validators[tool].iter_errors(arguments))
        return None if error is None else argument_rule(error)


def argument_rule(error: ValidationError) -> str:
    """One jsonschema error as the argument it concerns and the rule it breaks."""
    path = list(error.absolute_path)
    rule, value, schema = error.validator, error.validator_value, error.schema
    if rule == "required":
        missing = [n for n in value if isinstance(error.instance, dict) and n not in error.instance]
        names = ", ".join(repr(n) for n in missing) or repr(value)
        if not path:
            return f"missing required argument {names}"
        return f"{_argument(path)} is missing its required field {names}"
    if rule == "additionalProperties" and isinstance(error.instance, dict):
        known = set(schema.get("properties", {}))
        extra = [n for n in error.instance if n not in known]
        names = ", ".join(repr(n) for n in extra)
        where = "argument" if not path else f"field of {_argument(path)}:"
        takes = ", ".join(sorted(known)) or "none"
        return f"unexpected {where} {names}; accepted: {takes}"
    return f"{_argument(path)} must be {_expectation(rule, value, schema)}, got {_shown(error.instance)}"


def _argument(path: list[Any]) -> str:
    """`argument 'items[0].qty'` for the path [items, 0, qty]."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return f"argument {text!r}" if text else "the arguments"


def _expectation(rule: str, value: Any, schema: dict[str, Any]) -> str:
    """The rule in words: what the value must be."""
    if rule == "type":
        kinds = [value] if isinstance(value, str) else list(value)
        words = " or ".join(JSON_TYPE_WORDS.get(k, k) for k in kinds)
        if "string" in kinds and "maxLength" in schema:
            words += f" of at most {schema['maxLength']} characters"
        return words
    words = {
        "enum": lambda: f"one of {', '.join(repr(v) for v in value)}",
        "const": lambda: f"exactly {value!r}",
        "minimum": lambda: f"at least {value}",
        "maximum": lambda: f"at most {value}",
        "exclusiveMinimum": lambda: f"greater than {value}",
        "exclusiveMaximum": lambda: f"less than {value}",
        "multipleOf": lambda: f"a multiple of {value}",
        "minLength": lambda: f"at least {value} characters long",
        "maxLength": lambda: f"at most {value} characters long",
        "pattern": lambda: f"text matching the pattern {value!r}",
        "format": lambda: f"a valid {value}",
        "minItems": lambda: f"a list of at least {value} items",
        "maxItems": lambda: f"a list of at most {value} items",
        "uniqueItems": lambda: "a list without repeated items",
        "minProperties": lambda: f"an object with at least {value} fields",
        "maxProperties": lambda: f"an object with at most {value} fields",
        "anyOf": lambda: "one of the accepted forms",
        "oneOf": lambda: "exactly one of the accepted forms",
        "not": lambda: "a value the schema does not exclude",
    }.get(rule)
    return words() if words else f"valid for the rule {rule!r}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
