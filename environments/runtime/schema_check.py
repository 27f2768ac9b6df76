"""Check tool-call arguments against the tool's JSON schema before the call enters the sandbox."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match


class ArgumentChecker:
    """One compiled validator per tool of a package (compiled once, reused for every call)."""

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self._validators = {
            tool["function"]["name"]: Draft202012Validator(tool["function"]["parameters"])
            for tool in tools
        }

    def problem(self, tool: str, arguments: Any) -> str | None:
        """A clear message saying what is wrong with the arguments, or None when they are valid."""
        if not isinstance(arguments, dict):
            return f"arguments must be a JSON object, got {type(arguments).__name__}"
        validator = self._validators[tool]
        error = best_match(validator.iter_errors(arguments))
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        return f"{where}: {error.message}" if where else error.message
