"""Generated rows that look real: the document's examples, enums and patterns first, then Faker
by format and field name, references kept, the same rows for the same document and seed, and a
provenance that says which fields came from where (`theme_data`, `fake_values`)."""

from __future__ import annotations

import random
import re
import sqlite3

from environments.builder.fake_values import looks_like_id, name_rule, shaped_like
from environments.builder.theme_contract import check_rows
from environments.builder.theme_data import build_theme_database
from environments.builder.theme_patterns import matching_value
from environments.builder.theme_reading import read_theme
from environments.discovery.themes import parse_theme_document
from tests.test_theme_operation_groups import answer

EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")
CUSTOMER_ID = r"^CUS-[0-9]{6}$"


def shop_document() -> dict:
    """An OpenAPI 3.0 document of a small shop, written for these tests."""
    customer = {
        "type": "object",
        "required": ["id", "email"],
        "properties": {
            "id": {"type": "string", "pattern": CUSTOMER_ID, "example": "CUS-000123"},
            "email": {"type": "string", "format": "email"},
            "first_name": {"type": "string"},
            "last_name": {"type": "string"},
            "website": {"type": "string", "format": "uri"},
            "external_ref": {"type": "string", "format": "uuid"},
            "created_at": {"type": "string", "format": "date-time"},
            "tier": {"type": "string", "enum": ["gold", "silver", "bronze"]},
            "notes": {"type": "string", "example": "Prefers morning calls"},
            "nickname": {"type": "string", "minLength": 3, "maxLength": 5},
            "balance": {"type": "number", "minimum": 0, "maximum": 100},
            "city": {"type": "string"},
        },
    }
    order = {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "customer_id": {"type": "string", "pattern": CUSTOMER_ID},
            "amount": {"type": "number", "minimum": 0},
            "status": {"type": "string", "enum": ["placed", "shipped", "delivered"]},
            "delivery_note": {"type": "string"},
        },
        "example": {"delivery_note": "Leave it at the door"},
    }
    ref = {"$ref": "#/components/schemas/Customer"}
    order_ref = {"$ref": "#/components/schemas/Order"}

    def body(schema: dict, example: dict | None = None) -> dict:
        media: dict = {"schema": schema}
        if example:
            media["example"] = example
        return {"required": True, "content": {"application/json": media}}

    def returns(schema: dict) -> dict:
        return {"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}}

    return {
        "openapi": "3.0.3",
        "info": {"title": "Corner Shop", "version": "1.0.0"},
        "servers": [{"url": "https://shop.example.com/v1"}],
        "paths": {
            "/customers": {
                "get": {
                    "operationId": "listCustomers",
                    "responses": returns({"type": "array", "items": ref}),
                },
                "post": {
                    "operationId": "createCustomer",
                    "requestBody": body(ref),
                    "responses": returns(ref),
                },
            },
            "/customers/{customerId}": {
                "get": {
                    "operationId": "getCustomer",
                    "parameters": [
                        {
                            "name": "customerId",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                            "example": "CUS-000123",
                        }
                    ],
                    "responses": returns(ref),
                }
            },
            "/orders": {
                "get": {
                    "operationId": "listOrders",
                    "responses": returns({"type": "array", "items": order_ref}),
                },
                "post": {
                    "operationId": "createOrder",
                    "requestBody": body(order_ref, {"amount": 42.5, "status": "placed"}),
                    "responses": returns(order_ref),
                },
            },
            "/orders/{orderId}": {
                "get": {
                    "operationId": "getOrder",
                    "parameters": [
                        {
                            "name": "orderId",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "integer"},
                        }
                    ],
                    "responses": returns(order_ref),
                }
            },
        },
        "components": {"schemas": {"Customer": customer, "Order": order}},
    }


def build(tmp_path, seed: str = "shop", name: str = "shop"):
    model = read_theme(parse_theme_document(shop_document(), "shop.json"))
    db = build_theme_database(model, tmp_path / f"{name}.sqlite", [], rows=12, seed=seed)
    conn = sqlite3.connect(db["db_path"])
    conn.row_factory = sqlite3.Row
    tables = {
        table: [dict(r) for r in conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid')]
        for table in ("customers", "orders")
    }
    conn.close()
    return model, db, tables


def test_rows_take_the_documents_examples_enums_patterns_and_formats(tmp_path):
    model, db, tables = build(tmp_path)
    customers, orders = tables["customers"], tables["orders"]
    assert len(customers) == 12 and len(orders) == 12
    first = customers[0]
    assert first["id"] == "CUS-000123"  # the document's example, on the first row
    assert first["notes"] == "Prefers morning calls"
    assert orders[0]["amount"] == 42.5  # the body's example
    assert orders[0]["delivery_note"] == "Leave it at the door"  # the object's example
    assert all(re.match(CUSTOMER_ID, c["id"]) for c in customers), [c["id"] for c in customers]
    assert len({c["id"] for c in customers}) == 12
    assert all(EMAIL.match(c["email"]) for c in customers), [c["email"] for c in customers]
    assert all(UUID.match(c["external_ref"]) for c in customers)
    assert all(DATE_TIME.match(c["created_at"]) for c in customers)
    assert all(re.match(r"^https?://[a-z0-9.-]+\.[a-z]{2,}", c["website"]) for c in customers)
    assert {c["tier"] for c in customers} == {"gold", "silver", "bronze"}
    assert {o["status"] for o in orders} <= {"placed", "shipped", "delivered"}
    assert all(3 <= len(c["nickname"]) <= 5 for c in customers)
    assert all(0 <= c["balance"] <= 100 for c in customers)
    assert all(o["amount"] >= 0 for o in orders)
    check = check_rows(model, db["db_path"])
    assert check.passed, check.detail


def test_names_and_places_come_from_faker_by_field_name(tmp_path):
    _model, _db, tables = build(tmp_path)
    customers = tables["customers"]
    for field in ("first_name", "last_name", "city"):
        values = [c[field] for c in customers]
        assert all(re.fullmatch(r"[A-Z][A-Za-z' -]+", v) for v in values), values
        assert len(set(values)) >= 6, values  # not one value repeated
        assert not any(re.search(r"-\d+$", v) for v in values)  # not "delta-3"
    notes = [c["notes"] for c in customers[1:]]
    assert all(n.endswith(".") and " " in n for n in notes), notes  # sentences


def test_references_are_kept(tmp_path):
    _model, _db, tables = build(tmp_path)
    keys = {c["id"] for c in tables["customers"]}
    linked = [o["customer_id"] for o in tables["orders"]]
    assert all(k in keys for k in linked), (linked, keys)  # never a dangling or a null link


def test_the_same_document_and_seed_give_the_same_rows(tmp_path):
    _, _, once = build(tmp_path, name="once")
    _, _, again = build(tmp_path, name="again")
    _, _, other = build(tmp_path, seed="another shop", name="other")
    assert once == again
    assert once["customers"] != other["customers"]


def test_the_provenance_says_synthetic_and_where_values_came_from(tmp_path):
    _model, db, _tables = build(tmp_path)
    by_table = {p["table"]: p for p in db["provenance"]}
    detail = by_table["customers"]["detail"]
    assert by_table["customers"]["kind"] == "synthetic"
    assert "customers" in db["synthetic_tables"]
    examples = re.search(r"the document's examples: ([^;]+)", detail).group(1)
    faker = re.search(r"Faker: ([^;]+)", detail).group(1)
    assert "notes" in examples and "id" in examples
    assert "email" in faker and "first_name" in faker and "city" in faker
    assert "tier" in re.search(r"the document's enums: ([^;]+)", detail).group(1)


def test_field_names_choose_providers_by_their_last_words():
    assert name_rule("email_address").provider == "safe_email"
    assert name_rule("contactEmails").provider == "safe_email"
    assert name_rule("home_phone").provider == "basic_phone_number"
    assert name_rule("phone_type") is None
    assert name_rule("passenger_name").provider == "name"
    assert name_rule("name", "company").provider == "company"
    assert name_rule("name", "widget") is None


def test_ids_shaped_like_the_documents_example():
    rng = random.Random(7)
    shaped = {shaped_like("cus_8Fk2x91", rng) for _ in range(20)}
    assert all(re.fullmatch(r"cus_\dFk\dx\d\d", s) for s in shaped), shaped
    assert len(shaped) > 10
    assert looks_like_id("US123945459", "tax_number")
    assert not looks_like_id("application/vnd.api.v10+json", "Accept")  # a media type stays
    assert not looks_like_id("Leave it at the door", "note")


def test_a_pattern_wrapped_in_dot_stars_still_fits_its_length(tmp_path):
    """AWS Clean Rooms: identifiers are `.*<uuid>.*` with minLength = maxLength = 36. The
    pattern walk padded them past 36, the tools' own checks refused every row's id, and no
    task could start. Values honour the pattern and the bounds together."""
    identifier = {
        "type": "string",
        "pattern": ".*[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}.*",
        "minLength": 36,
        "maxLength": 36,
    }
    membership = {
        "type": "object",
        "required": ["id", "name"],
        "properties": {"id": identifier, "name": {"type": "string"}},
    }
    path_id = {"name": "membershipIdentifier", "in": "path", "required": True, "schema": identifier}
    document = {
        "openapi": "3.0.3",
        "info": {"title": "Clean rooms", "version": "2022-02-17"},
        "paths": {
            "/memberships": {
                "post": {
                    "operationId": "CreateMembership",
                    "requestBody": {"content": {"application/json": {"schema": membership}}},
                    "responses": answer(membership),
                }
            },
            "/memberships/{membershipIdentifier}": {
                "get": {"operationId": "GetMembership", "parameters": [path_id],
                        "responses": answer(membership)},
            },
        },
    }  # fmt: skip
    model = read_theme(parse_theme_document(document, "cleanrooms.json"))
    db = build_theme_database(model, tmp_path / "rooms.sqlite", rows=12, seed="rooms")
    with sqlite3.connect(db["db_path"]) as conn:
        ids = [row[0] for row in conn.execute("SELECT id FROM memberships")]
    assert len(ids) == 12
    for value in ids:
        assert len(value) == 36 and re.search(identifier["pattern"], value), value
    for seed in range(20):
        made = matching_value(identifier["pattern"], random.Random(seed), 36, 36)
        assert made is not None and len(made) == 36


def test_a_pattern_value_reaches_its_min_length_or_keeps_the_pattern():
    """`^[a-z]+$` of minLength 20: a walk long enough, not NULL; bounds no walk meets still
    give a value of the pattern (a required column is never left empty for them)."""
    long_enough = matching_value("^[a-z]+$", random.Random(1), 20, 40)
    assert long_enough is not None and 20 <= len(long_enough) <= 40
    assert re.fullmatch("[a-z]+", long_enough)
    impossible = matching_value("^[A-Z]{3}$", random.Random(1), 5, 9)
    assert impossible is not None and re.fullmatch("[A-Z]{3}", impossible)
