"""Azure's operation names (`Group_Operation`) and OData paging read as a person reads them.

Every Azure document in the API directory names operations `PrivateEndpointConnections_Get`,
`..._ListByServer`, `..._CreateOrUpdate`: the verb comes after the resource. Read as one phrase,
`Get` and `Delete` found no entity ("no entity named in 'PrivateEndpointConnections_Get'"),
`CreateOrUpdate` invented an entity called `update`, and `$top`/`$skip` became columns.
"""

from __future__ import annotations

from environments.builder.theme_reading import read_theme
from environments.discovery.themes import parse_theme_document

WIDGET = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "readOnly": True},
        "name": {"type": "string"},
        "colour": {"type": "string", "enum": ["red", "green"]},
    },
}


def answer(schema: dict) -> dict:
    """A 200 response whose JSON body is `schema`."""
    return {"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}}


def string_path(name: str) -> dict:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def rows_under_value(items: dict) -> dict:
    """Azure's list body: the rows under `value`."""
    return {"type": "object", "properties": {"value": {"type": "array", "items": items}}}


BASE = "/subscriptions/{subscriptionId}/providers/Contoso.Shop/shelves/{shelfName}/widgets"
PATH_PARAMS = [string_path(n) for n in ("subscriptionId", "shelfName")]
WIDGET_REF = {"$ref": "#/components/schemas/Widget"}
ONE = answer(WIDGET_REF)
MANY = answer(rows_under_value(WIDGET_REF))
NAME = string_path("widgetName")
ODATA = [
    {"name": "$top", "in": "query", "schema": {"type": "integer"}},
    {"name": "$skip", "in": "query", "schema": {"type": "integer"}},
]
DOCUMENT = {
    "openapi": "3.0.0",
    "info": {"title": "ShopManagementClient", "version": "2024-01-01"},
    "paths": {
        BASE: {
            "parameters": PATH_PARAMS,
            "get": {"operationId": "Widgets_ListByShelf", "parameters": ODATA, "responses": MANY},
        },
        BASE + "/{widgetName}": {
            "parameters": [*PATH_PARAMS, NAME],
            "get": {"operationId": "Widgets_Get", "responses": ONE},
            "put": {
                "operationId": "Widgets_CreateOrUpdate",
                "requestBody": {
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Widget"}}
                    }
                },
                "responses": ONE,
            },
            "delete": {
                "operationId": "Widgets_Delete",
                "responses": {"200": {"description": "ok"}},
            },
        },
    },
    "components": {"schemas": {"Widget": WIDGET}},
}


def test_the_operation_after_the_group_is_the_verb_and_the_group_the_entity():
    model = read_theme(parse_theme_document(DOCUMENT, "shop.json"))
    plans = {p.name: p for p in model.plans}
    assert {n: (p.operation, p.entity, p.rejected) for n, p in plans.items()} == {
        "Widgets_ListByShelf": ("list", "widget", ""),
        "Widgets_Get": ("get", "widget", ""),
        "Widgets_CreateOrUpdate": ("create", "widget", ""),
        "Widgets_Delete": ("delete", "widget", ""),
    }
    assert set(model.entities) <= {"widget", "shelf", "subscription"}


def test_odata_top_and_skip_page_a_listing_and_are_no_columns():
    model = read_theme(parse_theme_document(DOCUMENT, "shop.json"))
    listing = next(p for p in model.plans if p.name == "Widgets_ListByShelf")
    assert listing.bindings["$top"] == ["limit"]
    assert listing.bindings["$skip"] == ["offset"]
    assert {"$top", "$skip"}.isdisjoint(model.entities["widget"].fields)


def test_rows_a_path_names_by_a_string_get_a_string_key():
    """Azure's documents (all schemas inline) name rows by string path parameters
    (`/issues/{issueId}`): the entity read from the names got a made-up hidden integer key,
    tests called `issueId=7` and "must be string, got 7" refused 208 tools of the directory's
    first half."""
    inline = {"type": "object", "properties": {"title": {"type": "string"}}}
    service = "/services/{serviceName}/issues"
    text, issue = string_path("serviceName"), string_path("issueId")
    document = {
        "openapi": "3.0.0",
        "info": {"title": "IssueClient", "version": "1"},
        "paths": {
            service: {
                "get": {
                    "operationId": "Issue_ListByService",
                    "parameters": [text],
                    "responses": answer(rows_under_value(inline)),
                }
            },
            service + "/{issueId}": {
                "get": {
                    "operationId": "Issue_Get",
                    "parameters": [text, issue],
                    "responses": answer(inline),
                }
            },
        },
    }
    model = read_theme(parse_theme_document(document, "issues.json"))
    got = next(p for p in model.plans if p.name == "Issue_Get")
    assert got.rejected == "" and got.bindings["issueId"][0] == "key"
    entity = model.entities[got.entity]
    key = entity.fields[got.bindings["issueId"][1]]
    assert (key.type, key.hidden) == ("string", False)
