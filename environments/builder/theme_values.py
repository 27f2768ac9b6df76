"""Values a document's JSON schema accepts, made from the schema alone.

The contract check calls tools with them (`theme_contract`) and a generated tool fills the
required fields of its document's response envelope with them (`theme_envelope`): one rule for
"a value valid for this schema", used by both.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import jsonschema

from environments.json_schemas import validate

from .theme_model import all_of, plain_type
from .theme_patterns import matching_value
from .theme_schemas import unusable_pattern

FORMAT_VALUES = {
    "date": "2024-05-06",
    "date-time": "2024-05-06T07:08:00Z",
    "time": "07:08:00",
    "email": "contract.check@example.org",
    "uuid": "123e4567-e89b-42d3-a456-426614174000",
    "uri": "https://example.org/contract",
    "url": "https://example.org/contract",
    "hostname": "example.org",
    "ipv4": "192.0.2.7",
    "ipv6": "2001:db8::7",
}


def json_schema(schema: Any) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema (`nullable: true` -> a null type allowed; a pattern
    `re` cannot compile or could run for ever on is left out, `x-` extensions too). An object
    composed with `allOf` keeps no `additionalProperties: false`, on itself or on its parts:
    OpenAPI documents mean the union of the parts' properties (Azure's resource and its
    `properties`), which JSON Schema would read as "no property of another part"."""
    if isinstance(schema, list):
        return [json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        k: json_schema(v)
        for k, v in schema.items()
        if not str(k).startswith("x-") and not (k == "pattern" and unusable_pattern(v))
    }
    if out.pop("nullable", False) is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if isinstance(out.get("allOf"), list):
        for part in [out, *out["allOf"]]:
            if isinstance(part, dict) and part.get("additionalProperties") is False:
                del part["additionalProperties"]
    return out


def valid(value: Any, schema: dict) -> bool:
    try:
        validate(value, json_schema(schema))
    except jsonschema.ValidationError:
        return False
    except Exception:  # noqa: BLE001 - a schema we cannot read (bad or unresolvable $ref)
        return True  # constrains nothing we can check
    return True


FULL_DEPTH = 3  # objects this deep get every property; deeper ones their required ones only
MAX_DEPTH = 10  # deeper still: nothing (recursive schemas)


def schema_value(
    schema: Any,
    rng: random.Random,
    hint: Any = None,
    depth: int = 0,
    text: Callable[[str], str | None] | None = None,
    name: str = "",
) -> Any:
    """A value the schema accepts: the hint when it does, else one made from the schema.
    Nested objects keep their required properties however deep (down to `MAX_DEPTH`); `text`
    gives a plain string for a property's dotted path from `name` (`device.name`: realistic
    data), "contract value" otherwise."""
    schema = plain_type(all_of(schema)) if isinstance(schema, dict) else {}
    for combiner in ("anyOf", "oneOf"):  # several alternatives: the first that is not null
        options = [o for o in schema.get(combiner) or [] if isinstance(o, dict)]
        if options and "type" not in schema:
            schema = {**schema, **all_of(options[0])}
            schema.pop(combiner, None)
    if hint is not None and valid(hint, schema):
        return hint
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return next((v for v in schema["enum"] if v is not None), schema["enum"][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "integer" or kind == "number":
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        low = (low if isinstance(low, int | float) else 0) + (
            1 if "exclusiveMinimum" in schema and "minimum" not in schema else 0
        )
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        value = max(low, 1)
        if isinstance(high, int | float):
            value = min(value, high - (1 if "exclusiveMaximum" in schema else 0))
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return True
    if kind == "array":
        least = int(schema.get("minItems") or 0) if isinstance(schema.get("minItems"), int) else 0
        count = max(1, least) if depth < FULL_DEPTH else least
        maximum = schema.get("maxItems")
        if isinstance(maximum, int):
            count = min(count, maximum)
        item = schema.get("items") or {}
        return [schema_value(item, rng, None, depth + 1, text, name) for _ in range(count)]
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        if depth >= MAX_DEPTH:
            return {}
        required = set(schema.get("required") or []) if depth >= FULL_DEPTH else set(props)
        return {
            prop: schema_value(sub, rng, None, depth + 1, text, f"{name}.{prop}" if name else prop)
            for prop, sub in props.items()
            if isinstance(sub, dict) and prop in required
        }
    fmt = str(schema.get("format", ""))
    value = FORMAT_VALUES.get(fmt, "contract value")
    named = text(name) if text is not None and name and fmt in ("", "slug") else None
    if isinstance(schema.get("pattern"), str):
        bounds = [n if isinstance(n, int) else None for n in (schema.get("minLength"),
                                                               schema.get("maxLength"))]  # fmt: skip
        made = matching_value(schema["pattern"], rng, *bounds)
        value = made or (named if named and valid(named, schema) else value)
    elif named:
        value = named
    low, high = schema.get("minLength"), schema.get("maxLength")
    if isinstance(low, int) and len(value) < low:
        value = value + "x" * (low - len(value))
    if isinstance(high, int) and len(value) > high:
        value = value[:high]
    return value
