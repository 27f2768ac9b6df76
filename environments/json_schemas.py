"""JSON-schema validators compiled once per schema and reused.

`jsonschema.validate` checks the schema against its meta-schema on every call; a 2020-12
meta-schema check is the slowest step of building an environment (every tool's parameters are
checked each time its package is written and loaded, every contract call's result each time it
is validated). A schema's text is its key: the same schema is checked and compiled once.
Values are checked against a schema read as its own draft says (2020-12 without `$schema`);
whether that schema is readable at all is asked of the draft-7 meta-schema, five times faster
than 2020-12's (its `$dynamicRef`s) and refusing the same malformed keywords (a `type` that
names no type, a `required` that is no list). A tool's own parameters are checked against
their exact draft (`schema_error`).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from jsonschema.exceptions import SchemaError, ValidationError, best_match
from jsonschema.validators import Draft7Validator, validator_for

CACHED_SCHEMAS = 4096


def _key(schema: Any) -> str:
    return json.dumps(schema, sort_keys=True, default=str)


@lru_cache(maxsize=CACHED_SCHEMAS)
def _compiled(text: str, exact: bool) -> tuple[Any, SchemaError | None]:
    schema = json.loads(text)
    cls = validator_for(schema)
    meta = cls if exact or (isinstance(schema, dict) and "$schema" in schema) else Draft7Validator
    try:
        meta.check_schema(schema)
    except SchemaError as exc:
        return None, exc
    return cls(schema), None


def schema_error(schema: Any) -> SchemaError | None:
    """Why `schema` is not a valid JSON schema of its draft, or None when it is."""
    return _compiled(_key(schema), True)[1]


def validate(value: Any, schema: Any) -> None:
    """As `jsonschema.validate` (SchemaError for an unreadable schema, the best
    ValidationError for a bad value), with the schema checked and compiled once."""
    if not isinstance(schema, dict | bool):
        raise SchemaError(f"{schema!r} is not a schema object")
    validator, error = _compiled(_key(schema), False)
    if error is not None:
        raise error
    problem = best_match(validator.iter_errors(value))
    if problem is not None:
        raise problem


__all__ = ["SchemaError", "ValidationError", "schema_error", "validate"]
