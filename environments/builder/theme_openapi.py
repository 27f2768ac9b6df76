"""The entities an OpenAPI document describes: `components/schemas` read into entity fields.

An object schema with properties is an entity; a `$ref` property (or array of them) embeds
another entity. Local `#/...` references are resolved by `deref` (cycles cut at a depth). The
request and response bodies of the operations reach `theme_plans` as the tools' parameter and
output schemas.
"""

from __future__ import annotations

from typing import Any

from environments.discovery.openapi_refs import follow_ref
from environments.discovery.themes import flat_object, resolve_refs

from .theme_envelope import list_rows_property, single_object_property
from .theme_model import EntitySpec, ThemeModel, column_name_ok, entity_name, field_from_schema


def openapi_entities(model: ThemeModel, doc: dict) -> None:
    """Every object schema of `components/schemas` with properties as an entity."""
    schemas = ((doc.get("components") or {}).get("schemas")) or {}
    for name, raw in schemas.items():
        schema = flat_object(raw, doc)
        resolved = deref(schema, doc)
        if not isinstance(resolved, dict) or resolved.get("type", "object") != "object":
            continue
        if not resolved.get("properties"):
            continue
        if _envelope_of_itself(name, raw, doc):
            continue
        entity = model.entity(entity_name(name))
        entity.origins.append(f"components/schemas/{name}")
        _fields_from_object(entity, schema, doc)


def _envelope_of_itself(name: str, schema: Any, doc: dict) -> bool:
    """Whether `name` is the list of the rows its own name makes (`Tasks` holding `items:
    [Task]` besides `etag`, `kind`, `nextPageToken`): its other fields are bookkeeping of the
    list, and read as that entity they would merge into its rows."""
    props = follow_ref(schema, doc).get("properties")
    wrapped = [
        _ref_name(follow_ref(sub, doc).get("items") or {})
        for sub in (props.values() if isinstance(props, dict) else ())
        if follow_ref(sub, doc).get("type") == "array"
    ]
    wrapped = [w for w in wrapped if w and w != name and entity_name(w) == entity_name(name)]
    return len(wrapped) == 1


def response_schema(doc: dict, http: dict) -> dict:
    """The JSON body schema of an operation's first 2xx response ({} when it declares none)."""
    paths = doc.get("paths") if isinstance(doc.get("paths"), dict) else {}
    item = deref(paths.get(http.get("path", "")) or {}, doc)
    operation = item.get(str(http.get("method", "")).lower()) if isinstance(item, dict) else None
    responses = operation.get("responses") if isinstance(operation, dict) else None
    if not isinstance(responses, dict):
        return {}
    for status, response in sorted(responses.items(), key=lambda item: str(item[0])):
        if not str(status).startswith("2"):
            continue
        response = deref(response or {}, doc)
        content = response.get("content") if isinstance(response, dict) else None
        if not isinstance(content, dict):
            return {}
        media = next((m for m in content if "json" in m), "")
        schema = (content.get(media) or {}).get("schema") if media else None
        return deref(schema, doc) if isinstance(schema, dict) else {}
    return {}


def response_entity(doc: dict, http: dict) -> str:
    """The entity of the rows an operation answers: the `components/schemas` name its 2xx body
    refers to, inside a JSON array or a list envelope (`{data: [$ref]}`, `{Certificates:
    CertificateList}`), "" when the body names none. A path's nouns and an operationId say
    which collection a call reaches; the body says what comes back."""
    schema = _body_schema(doc, http)
    for _ in range(6):  # a reference to a list, to an envelope, to the rows: a few steps
        schema = _single_part(schema) or schema
        name = _ref_name(schema)
        target = follow_ref(schema, doc)
        target = _single_part(target) or target
        if target.get("type") == "array" or "items" in target and "properties" not in target:
            schema = target.get("items") or {}
            continue
        resolved = deref(target, doc, depth=2)
        rows = list_rows_property(resolved)
        if rows is None:
            rows = single_object_property(resolved)
        if rows is not None:
            schema = (target.get("properties") or {}).get(rows) or {}
            continue
        return entity_name(name) if name and target.get("properties") else ""
    return ""


def _body_schema(doc: dict, http: dict) -> Any:
    """The JSON schema of an operation's first 2xx response as written ({} for none): its
    own `$ref` kept, so that the name of what it answers stays readable."""
    paths = doc.get("paths") if isinstance(doc.get("paths"), dict) else {}
    item = follow_ref(paths.get(http.get("path", "")) or {}, doc)
    operation = follow_ref(item.get(str(http.get("method", "")).lower()), doc)
    responses = follow_ref(operation.get("responses"), doc)
    for status, response in sorted(responses.items(), key=lambda item: str(item[0])):
        if str(status).startswith("2"):
            content = follow_ref(follow_ref(response, doc).get("content"), doc)
            media = next((m for m in content if "json" in str(m)), "")
            return follow_ref(content.get(media), doc).get("schema") or {} if media else {}
    return {}


def _single_part(schema: Any) -> Any:
    """The one schema an `allOf`/`anyOf`/`oneOf` wraps with descriptions only."""
    if not isinstance(schema, dict):
        return {}
    for combiner in ("allOf", "anyOf", "oneOf"):
        parts = schema.get(combiner)
        if isinstance(parts, list):
            real = [p for p in parts if isinstance(p, dict) and set(p) - {"description", "title"}]
            real = [p for p in real if p.get("type") != "null"]
            if len(real) == 1:
                return real[0]
    return {}


def _fields_from_object(entity: EntitySpec, schema: dict, doc: dict | None) -> None:
    resolved = deref(schema, doc) if doc is not None else schema
    required = set(resolved.get("required") or [])
    example = resolved.get("example") if isinstance(resolved.get("example"), dict) else {}
    for prop, sub in (resolved.get("properties") or {}).items():
        if not column_name_ok(prop):  # `""`, `"`: no column can be named so
            entity.origins.append(f"property {prop!r} is not a column name; left out")
            continue
        ref = _ref_name(sub) or _ref_name((sub or {}).get("items") or {})
        plain = deref(sub, doc, depth=1) if doc is not None else sub
        spec = field_from_schema(prop, plain, prop in required)
        if example.get(prop) is not None and example[prop] not in spec.examples:
            spec.examples.append(example[prop])  # the object's example shows this field
        if ref:
            spec.object_ref = entity_name(ref)
            if spec.type not in ("array", "object"):
                spec.type = "object"
            if spec.type == "array":
                spec.items = "object"  # items embed another entity, even one left out
        entity.add(spec)


def _ref_name(schema: Any) -> str:
    if isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        return schema["$ref"].rsplit("/", 1)[-1]
    return ""


def deref(schema: Any, doc: dict | None, depth: int = 8) -> Any:
    """A schema with local `#/...` references replaced by their targets (recursion and
    combinatorial nesting cut: `themes.resolve_refs`)."""
    if doc is None:
        return schema
    return resolve_refs(schema, doc, depth)
