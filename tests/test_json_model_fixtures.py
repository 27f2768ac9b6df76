"""A Django dumpdata fixture (a list of `{"model", "pk", "fields"}`) becomes one table per model,
with foreign keys from fields that hold another model's pks and link tables from many-to-many
lists, instead of one `(pk, model)` table and a key/value table of every field."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from environments.discovery.schema import read_schema
from environments.discovery.sources import mine_sources, read_provenance
from environments.discovery.sources.json_source import model_fixture
from environments.discovery.tool_generator import generate_tools


def fixture_document() -> list[dict]:
    items = [
        {"model": "library.author", "pk": 1, "fields": {"name": "Ada", "born": "1815-12-10"}},
        {"model": "library.author", "pk": 2, "fields": {"name": "Alan", "born": "1912-06-23"}},
        {"model": "library.tag", "pk": 10, "fields": {"label": "maths"}},
        {"model": "library.tag", "pk": 11, "fields": {"label": "computing"}},
        {"model": "library.tag", "pk": 12, "fields": {"label": "history"}},
    ]
    for pk, author, tags, added in [
        (100, 1, [10, 11], "2020-01-02T08:00:00.000Z"),
        (101, 2, [11], "2021-03-04T09:30:00Z"),
        (102, 2, [], "2022-05-06T10:00:00Z"),
        (103, None, [10, 12], "2023-07-08T11:15:00Z"),
    ]:
        fields = {"title": f"Book {pk}", "author": author, "tags": tags, "added": added}
        items.append({"model": "library.bookentry", "pk": pk, "fields": fields})
    return items


@pytest.fixture(scope="module")
def fixture_db(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fixture")
    path = folder / "initial_data.json"
    path.write_text(json.dumps(fixture_document()))
    return mine_sources(folder / "library.sqlite", files=[path])


def test_one_table_per_model_keyed_by_its_pk(fixture_db):
    schema = read_schema(fixture_db)
    assert {"author", "tag", "bookentry", "bookentry_tags"} <= set(schema)
    assert not any(name.startswith("initial_data") for name in schema)
    book = schema["bookentry"]
    assert book.primary_key == "id" and book.row_count == 4
    assert [c.name for c in book.columns] == ["id", "title", "author_id", "added"]
    assert book.foreign_keys["author_id"] == ("author", "id")
    assert schema["author"].row_count == 2 and schema["tag"].row_count == 3


def test_many_to_many_lists_become_link_tables(fixture_db):
    link = read_schema(fixture_db)["bookentry_tags"]
    assert link.key_columns == ["bookentry_id", "tag_id"]
    assert link.foreign_keys == {
        "bookentry_id": ("bookentry", "id"),
        "tag_id": ("tag", "id"),
    }
    rows = sqlite3.connect(fixture_db).execute("SELECT * FROM bookentry_tags ORDER BY 1, 2")
    assert rows.fetchall() == [(100, 10), (100, 11), (101, 11), (103, 10), (103, 12)]
    tools = set(generate_tools(fixture_db, "a library").schemas)
    assert {"add_tag_to_bookentry", "list_tags_for_bookentry"} <= tools


def test_dates_in_fields_are_normalised(fixture_db):
    schema = read_schema(fixture_db)
    assert schema["author"].column("born").kind == "date"
    assert schema["bookentry"].column("added").kind == "datetime"
    conn = sqlite3.connect(fixture_db)
    added = [r[0] for r in conn.execute("SELECT added FROM bookentry ORDER BY id")]
    assert added[0] == "2020-01-02T08:00:00+00:00"
    details = [p["detail"] for p in read_provenance(fixture_db) if p["table"] == "bookentry"]
    assert any(d.startswith("added: date-times written") for d in details)


@pytest.mark.parametrize(
    "items, shape",
    [
        ([{"model": "a.b", "pk": 1, "fields": {}}], ("model", "pk")),
        ([{"type": "user", "id": "u1", "fields": {"x": 1}}], ("type", "id")),
        ([{"model": "a.b", "pk": 1, "fields": {}, "extra": 1}], None),
        ([{"model": "a.b", "fields": {}}], None),
        ([{"model": "a.b", "pk": 1, "fields": "x"}], None),
        ([{"model": "a.b", "pk": 1, "fields": {}}, {"name": "x"}], None),
    ],
)
def test_only_the_fixture_shape_is_read_as_one(items, shape):
    assert model_fixture(items) == shape
