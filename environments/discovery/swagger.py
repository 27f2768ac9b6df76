"""Swagger 2.0 documents read as OpenAPI 3: the one shape the theme readers understand.

Swagger keeps schemas under `definitions`, bodies as `in: body` / `in: formData` parameters and
the server as host + basePath + schemes; OpenAPI 3 has `components`, `requestBody` and `servers`.
`swagger_to_openapi` moves each to its OpenAPI 3 place (references rewritten to match), so a
Swagger document builds exactly as its OpenAPI 3 twin would.
"""

from __future__ import annotations

from typing import Any

_MOVED_REFS = {
    "#/definitions/": "#/components/schemas/",
    "#/parameters/": "#/components/parameters/",
    "#/responses/": "#/components/responses/",
}
_SCHEMA_KEYS = (
    "type",
    "format",
    "enum",
    "items",
    "default",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "multipleOf",
)
_HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")


def is_swagger(doc: Any) -> bool:
    return isinstance(doc, dict) and str(doc.get("swagger", "")).startswith("2")


def swagger_to_openapi(doc: dict) -> dict:
    """An OpenAPI 3.0 reading of a Swagger 2.0 document (the input is not changed)."""
    doc = _moved_refs(doc)
    consumes = doc.get("consumes") or ["application/json"]
    converted: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": doc.get("info") or {},
        "servers": _servers(doc),
        "paths": {},
        "components": {
            "schemas": doc.get("definitions") or {},
            "parameters": {
                name: _parameter(p)
                for name, p in (doc.get("parameters") or {}).items()
                if isinstance(p, dict) and p.get("in") not in ("body", "formData")
            },
            "responses": doc.get("responses") or {},
        },
        "x-converted-from": "swagger 2.0",
    }
    body_parameters = {
        f"#/components/parameters/{name}": p
        for name, p in (doc.get("parameters") or {}).items()
        if isinstance(p, dict) and p.get("in") in ("body", "formData")
    }
    for key, value in doc.items():
        if key.startswith("x-"):
            converted.setdefault(key, value)
    for path, item in (doc.get("paths") or {}).items():
        if not isinstance(item, dict):
            continue
        shared = [_resolved(p, body_parameters) for p in item.get("parameters") or []]
        new_item: dict[str, Any] = {
            k: v for k, v in item.items() if k not in _HTTP_METHODS and k != "parameters"
        }
        for method in _HTTP_METHODS:
            op = item.get(method)
            if isinstance(op, dict):
                own = [_resolved(p, body_parameters) for p in op.get("parameters") or []]
                new_item[method] = _operation(op, shared + own, op.get("consumes") or consumes)
        converted["paths"][path] = new_item
    return converted


def _moved_refs(value: Any) -> Any:
    if isinstance(value, list):
        return [_moved_refs(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _moved_refs(v) for k, v in value.items()}
    ref = out.get("$ref")
    if isinstance(ref, str):
        for old, new in _MOVED_REFS.items():
            if ref.startswith(old):
                out["$ref"] = new + ref[len(old) :]
    return out


def _servers(doc: dict) -> list[dict[str, str]]:
    host = doc.get("host")
    if not host:
        return [{"url": doc.get("basePath") or "/"}]
    scheme = (doc.get("schemes") or ["https"])[0]
    return [{"url": f"{scheme}://{host}{doc.get('basePath') or ''}"}]


def _resolved(param: Any, body_parameters: dict[str, dict]) -> Any:
    """A `$ref` to a shared body/formData parameter replaced by it (others stay references)."""
    if isinstance(param, dict) and param.get("$ref") in body_parameters:
        return body_parameters[param["$ref"]]
    return param


def _parameter(param: dict) -> dict:
    """A Swagger query/path/header parameter: its type keys moved under `schema`."""
    if "$ref" in param:
        return param
    schema = {k: param[k] for k in _SCHEMA_KEYS if k in param} or {"type": "string"}
    if schema.get("type") == "file":
        schema = {"type": "string", "format": "binary"}
    out = {k: v for k, v in param.items() if k not in _SCHEMA_KEYS and k != "collectionFormat"}
    out["schema"] = schema
    return out


def _operation(op: dict, params: list[Any], consumes: list[str]) -> dict:
    new = {k: v for k, v in op.items() if k not in ("parameters", "consumes", "produces")}
    plain, form = [], []
    body = None
    for param in params:
        if not isinstance(param, dict):
            continue
        where = param.get("in")
        if where == "body":
            body = param
        elif where == "formData":
            form.append(param)
        else:
            plain.append(_parameter(param))
    if plain:
        new["parameters"] = plain
    if body is not None:
        media = next((m for m in consumes if "json" in m), consumes[0])
        new["requestBody"] = {
            "required": bool(body.get("required")),
            "content": {media: {"schema": body.get("schema") or {"type": "object"}}},
        }
        if body.get("description"):
            new["requestBody"]["description"] = body["description"]
    elif form:
        media = next(
            (m for m in consumes if "form" in m),
            "multipart/form-data"
            if any(p.get("type") == "file" for p in form)
            else "application/x-www-form-urlencoded",
        )
        properties = {}
        for param in form:
            schema = _parameter(param)["schema"]
            if param.get("description"):
                schema = {**schema, "description": param["description"]}
            properties[param.get("name", "field")] = schema
        required = [p["name"] for p in form if p.get("required") and p.get("name")]
        new["requestBody"] = {
            "content": {
                media: {
                    "schema": {"type": "object", "properties": properties, "required": required}
                }
            }
        }
    return new
