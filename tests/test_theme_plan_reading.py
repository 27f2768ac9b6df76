"""Theme plans read what a read answers from its document, and rows hold what it requires.

A workshop API written for these tests names its operations Stripe-style (`GetThingsThing`:
a plural noun, then the row) and AWS-style (`DescribeWidgets` answering
`{Widgets: WidgetList, Marker}`), keys rows by path parameters named like the entity
(`/things/{thing}`) or following its collection (`/shelves/{shelf}/things/{id}`), answers
an event of a thing under a thing's path, a metadata map, and requires nested objects
(`dimensions.unit.code`) and fields only its server sets (`created`, `object`). Each cause of a
tool breaking its document has a test here: a get read as a list, the key not found, another
entity's list field or the response wrapper taken for the entity, rows or created rows missing
required (nested) properties.
"""

from __future__ import annotations

import json
import sqlite3

import jsonschema
import pytest

from environments.builder.theme_contract import run_contracts
from environments.builder.theme_data import build_theme_database
from environments.builder.theme_envelope import answers_many
from environments.builder.theme_reading import read_theme
from environments.builder.theme_tools import implement_theme_tools
from environments.discovery.themes import parse_theme_document
from environments.runtime import SandboxPool
from tests.test_theme_contract import only

UNIT = {"type": "object", "required": ["code"], "properties": {"code": {"type": "string"}}}
DIMENSIONS = {
    "type": "object",
    "required": ["width", "height", "unit"],
    "properties": {
        "width": {"type": "number"},
        "height": {"type": "number"},
        "unit": {"$ref": "#/components/schemas/Unit"},
    },
}
THING = {
    "type": "object",
    "required": ["id", "object", "name", "kind", "created", "dimensions", "shelf"],
    "properties": {
        "id": {"type": "string"},
        "object": {"type": "string", "enum": ["thing"]},
        "name": {"type": "string"},
        "kind": {"type": "string", "enum": ["tool", "part", "jig"]},
        "created": {"type": "integer"},
        "dimensions": {"$ref": "#/components/schemas/Dimensions"},
        "shelf": {"type": "string"},
    },
}
THING_EVENT = {
    "type": "object",
    "required": ["id", "action", "at"],
    "properties": {
        "id": {"type": "string"},
        "action": {"type": "string", "enum": ["moved", "used", "repaired"]},
        "at": {"type": "integer"},
    },
}
WIDGET = {
    "type": "object",
    "properties": {"WidgetId": {"type": "string"}, "Name": {"type": "string"}},
}
SHELF = {  # holds a list field named like another entity: `Things`, `Widgets` are not shelves
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "Widgets": {"$ref": "#/components/schemas/WidgetList"},
    },
}


def ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def body(schema: dict) -> dict:
    return {"200": {"description": "OK", "content": {"application/json": {"schema": schema}}}}


def path_param(name: str) -> dict:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


THING_LIST = {
    "type": "object",
    "required": ["object", "data", "has_more", "url"],
    "properties": {
        "object": {"type": "string", "enum": ["list"]},
        "data": {"type": "array", "items": ref("Thing")},
        "has_more": {"type": "boolean"},
        "url": {"type": "string"},
    },
}
WORKSHOP = {
    "openapi": "3.0.3",
    "info": {"title": "Workshop", "version": "1.0"},
    "components": {
        "schemas": {
            "Thing": THING,
            "Dimensions": DIMENSIONS,
            "Unit": UNIT,
            "ThingEvent": THING_EVENT,
            "Widget": WIDGET,
            "WidgetList": {"type": "array", "items": ref("Widget")},
            "DescribeWidgetsResponse": {
                "type": "object",
                "properties": {
                    "Widgets": {"allOf": [ref("WidgetList"), {"description": "The widgets."}]},
                    "Marker": {"type": "string"},
                },
            },
            "Shelf": SHELF,
        }
    },
    "paths": {
        "/things": {
            "get": {"operationId": "GetThings", "responses": body(THING_LIST)},
            "post": {
                "operationId": "PostThings",
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["name", "kind"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "kind": THING["properties"]["kind"],
                                    "shelf": {"type": "string"},
                                },
                            }
                        }
                    }
                },
                "responses": body(ref("Thing")),
            },
        },
        "/things/{thing}": {
            "get": {
                "operationId": "GetThingsThing",
                "parameters": [path_param("thing")],
                "responses": body(ref("Thing")),
            }
        },
        "/shelves/{shelf}/things/{id}": {
            "get": {
                "operationId": "GetShelvesShelfThingsId",
                "parameters": [path_param("shelf"), path_param("id")],
                "responses": body(ref("Thing")),
            }
        },
        "/things/{thing}/events/{event}": {
            "get": {
                "operationId": "GetThingsThingEventsEvent",
                "parameters": [path_param("thing"), path_param("event")],
                "responses": body(ref("ThingEvent")),
            }
        },
        "/things/{thingId}/metadata": {
            "get": {
                "operationId": "Thing_getMetadata",
                "parameters": [path_param("thingId")],
                "responses": body({"type": "object", "additionalProperties": {"type": "string"}}),
            }
        },
        "/#X-Amz-Target=Workshop.DescribeWidgets": {
            "post": {
                "operationId": "DescribeWidgets",
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {"MaxRecords": {"type": "integer"}},
                            }
                        }
                    }
                },
                "responses": body(ref("DescribeWidgetsResponse")),
            }
        },
    },
}


@pytest.fixture(scope="module")
def pool():
    pool = SandboxPool(workers=1)
    yield pool
    pool.close()


@pytest.fixture(scope="module")
def workshop(tmp_path_factory):
    """The workshop read, its database filled and its tools written."""
    model = read_theme(parse_theme_document(WORKSHOP, "workshop.json"))
    path = tmp_path_factory.mktemp("workshop") / "workshop.sqlite"
    db = build_theme_database(model, path, [], rows=8, seed="workshop")
    tools = implement_theme_tools(model, db["db_path"])
    return model, db["db_path"], tools


def plan(model, name):
    return next(p for p in model.plans if p.name == name)


def contract(workshop, pool, name):
    model, db_path, tools = workshop
    assert name in tools.names(), plan(model, name).rejected
    return run_contracts(only(tools, name), model, db_path, "workshop", pool)[name]


def test_a_get_of_one_row_by_its_path_is_a_get_by_key_not_a_list(workshop, pool):
    """`GetThingsThing` has a plural noun; `/things/{thing}` and its object body say one row,
    and `{thing}`, named like the entity, is its key."""
    model, _, _ = workshop
    got = plan(model, "GetThingsThing")
    assert (got.operation, got.entity) == ("get", "thing")
    assert got.bindings["thing"] == ["key", "id"]
    checked = contract(workshop, pool, "GetThingsThing")
    assert checked.passed, checked.summary
    assert "response schema valid" in checked.summary


def test_the_last_path_parameter_after_the_collection_is_the_key_and_a_parent_a_filter(
    workshop, pool
):
    model, _, _ = workshop
    got = plan(model, "GetShelvesShelfThingsId")
    assert (got.operation, got.entity) == ("get", "thing")
    assert got.bindings == {"shelf": ["filter", "shelf"], "id": ["key", "id"]}
    checked = contract(workshop, pool, "GetShelvesShelfThingsId")
    assert checked.passed, checked.summary


def test_a_list_envelope_answers_rows_a_map_one_object(workshop, pool):
    model, _, _ = workshop
    assert plan(model, "GetThings").operation == "list"
    assert plan(model, "GetThings").envelope.rows == ("data",)
    metadata = plan(model, "Thing_getMetadata")  # one object keyed by its thing, not a list
    assert metadata.operation in ("get", "get_by_fields"), metadata.rejected
    for name in ("GetThings", "Thing_getMetadata"):
        checked = contract(workshop, pool, name)
        assert checked.passed, checked.summary


def test_the_response_body_names_the_entity_a_path_noun_does_not(workshop, pool):
    """`GetThingsThingEventsEvent` names a thing; its body is a ThingEvent, which the thing's
    fields do not describe: the read works on thing events."""
    model, _, _ = workshop
    got = plan(model, "GetThingsThingEventsEvent")
    assert (got.operation, got.entity) == ("get", "thing_event")
    assert got.bindings == {"thing": ["filter", "thing"], "event": ["key", "id"]}
    assert model.entities["thing_event"].fields["thing"].ref == "thing"
    checked = contract(workshop, pool, "GetThingsThingEventsEvent")
    assert checked.passed, checked.summary


def test_an_aws_style_response_wrapper_is_not_the_entity(workshop, pool):
    """`DescribeWidgets` answers `{Widgets: WidgetList, Marker}`: rows of widget, not one
    `describe_widgets_response`, nor the shelf whose `Widgets` list field has the noun."""
    model, _, _ = workshop
    got = plan(model, "DescribeWidgets")
    assert (got.operation, got.entity) == ("list", "widget")
    assert "list_field" not in got.options
    assert "describe_widgets_response" not in model.entities
    assert got.envelope.rows == ("Widgets",)
    checked = contract(workshop, pool, "DescribeWidgets")
    assert checked.passed, checked.summary


def test_generated_rows_hold_the_nested_properties_the_schema_requires(workshop):
    model, db_path, _ = workshop
    schema = {**DIMENSIONS, "properties": {**DIMENSIONS["properties"], "unit": UNIT}}
    with sqlite3.connect(db_path) as conn:
        stored = [json.loads(r[0]) for r in conn.execute('SELECT "dimensions" FROM "things"')]
    assert len(stored) == 8
    for value in stored:
        jsonschema.validate(value, schema)
        assert value["unit"]["code"]


def test_a_create_fills_the_fields_only_its_server_sets(workshop, pool):
    """`PostThings` takes name, kind and shelf; the document's Thing always has `created`,
    `object` and `dimensions`: the created row holds them and the answer validates."""
    model, _, _ = workshop
    created = plan(model, "PostThings")
    assert created.operation == "create"
    assert any("filled as its server does" in n and "created" in n for n in created.notes)
    checked = contract(workshop, pool, "PostThings")
    assert checked.passed, checked.summary
    assert "effect: creates one thing" in checked.summary


@pytest.mark.parametrize(
    ("schema", "many"),
    [
        ({"type": "array", "items": {"type": "object"}}, True),
        ({**THING_LIST, "properties": {**THING_LIST["properties"], "data": {"type": "array", "items": THING}}}, True),
        ({"type": "object", "properties": {"value": {"type": "array", "items": THING_EVENT},
                                           "nextLink": {"type": "string"}}}, True),
        (THING_EVENT, False),
        ({"type": "object", "additionalProperties": {"type": "string"}}, False),
        ({"type": "object", "properties": {"available": {"type": "array", "items": UNIT},
                                           "pending": {"type": "array", "items": UNIT}}}, False),
        ({"type": "object", "properties": {"name": {"type": "string"},
                                           "members": {"type": "array", "items": UNIT}}}, None),
        ({}, None),
    ],
)  # fmt: skip
def test_answers_many_reads_rows_one_row_or_nothing_from_a_body(schema, many):
    assert answers_many(schema) is many
