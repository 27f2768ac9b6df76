"""JSON-schema validators compiled once per schema and reused.

`jsonschema.validate` checks the schema against its meta-schema on every call; a 2020-12
meta-schema check is the slowest step of building an environment (every tool's parameters are
checked each time its package is written and loaded, every contract call's result each time it
is validated). A schema's text is its key: the same schema is checked and compiled once.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from jsonschema.exceptions import SchemaError, ValidationError, best_match
from jsonschema.validators import validator_for

CACHED_SCHEMAS = 4096


def _key(schema: Any) -> str:
    return json.dumps(schema, sort_keys=True, default=str)


@lru_cache(maxsize=CACHED_SCHEMAS)
def _compiled(text: str) -> tuple[Any, SchemaError | None]:
    schema = json.loads(text)
    cls = validator_for(schema)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        return None, exc
    return cls(schema), None


def schema_error(schema: Any) -> SchemaError | None:
    """Why `schema` is not a valid JSON schema, or None when it is."""
    return _compiled(_key(schema))[1]


def validate(value: Any, schema: Any) -> None:
    """As `jsonschema.validate` (SchemaError for a bad schema, the best ValidationError for a
    bad value), with the schema checked and compiled once."""
    validator, error = _compiled(_key(schema))
    if error is not None:
        raise error
    problem = best_match(validator.iter_errors(value))
    if problem is not None:
        raise problem


__all__ = ["SchemaError", "ValidationError", "schema_error", "validate"]
