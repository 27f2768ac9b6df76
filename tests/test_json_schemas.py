"""Schemas checked and compiled once: the same answers as jsonschema.validate, faster."""

import jsonschema
import pytest

from environments import json_schemas
from environments.json_schemas import SchemaError, ValidationError, schema_error, validate


def test_a_valid_value_passes_and_a_bad_one_is_named():
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}
    validate({"n": 3}, schema)
    with pytest.raises(ValidationError) as caught:
        validate({"n": 0}, schema)
    assert list(caught.value.absolute_path) == ["n"]
    with pytest.raises(jsonschema.ValidationError):  # callers catch jsonschema's own class
        validate({"n": "three"}, schema)


def test_an_unreadable_schema_is_a_schema_error_not_a_pass():
    with pytest.raises(SchemaError):
        validate(1, {"type": "no-such-type"})
    with pytest.raises(SchemaError):
        validate(1, {"required": "name"})
    with pytest.raises(SchemaError):
        validate(1, ["not", "a", "schema"])
    assert schema_error({"type": "no-such-type"}) is not None
    assert schema_error({"type": "object", "prefixItems": [{"type": "string"}]}) is None


def test_each_schema_is_compiled_once():
    json_schemas._compiled.cache_clear()
    schema = {"type": "string", "maxLength": 3}
    for value in ("a", "ab", "abc"):
        validate(value, schema)
    with pytest.raises(ValidationError):
        validate("abcd", dict(reversed(list(schema.items()))))  # same schema, keys reordered
    info = json_schemas._compiled.cache_info()
    assert (info.misses, info.hits) == (1, 3)
