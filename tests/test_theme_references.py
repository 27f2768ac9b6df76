"""Contract calls that see what a tool does, on rows that let them.

- Every table other rows refer to keeps a row nothing refers to, so a delete can be seen to
  remove one. Before, every author had books: each delete answered "still referred to", and
  the contract passed it without seeing a row go.
- A key that repeats under other parents (`/authors/{authorId}/books/{title}`: two authors
  may each have a book of one title) is found under the parents given, for reads and writes.
  Before, the first row of that title was taken, and a read under its second parent failed.
- An id the document sends as a string (NetBox's `?id=`, a list of ids) reaches the integer
  key it names. Before, the contract sent "contract value" and the tool refused it.
"""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from environments.builder.theme_contract import contract_package, run_contracts
from environments.builder.theme_data import build_theme_database
from environments.builder.theme_model import FieldSpec
from environments.builder.theme_reading import read_theme
from environments.builder.theme_tools import implement_theme_tools
from environments.discovery.themes import parse_theme_document
from environments.package import load_package
from environments.runtime import SandboxPool
from tests.test_theme_operation_groups import answer

AUTHOR = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "country": {"type": "string"},
        "url": {"type": "string", "format": "uri", "readOnly": True},
        "tags": {"type": "array", "items": {"$ref": "#/components/schemas/Tag"}},
    },
    "required": ["id", "name"],
}
TAG = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "slug": {"type": "string"}},
    "required": ["name", "slug"],
}
PUBLISHER = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "slug": {"type": "string", "format": "slug"},
    },
    "required": ["id", "name", "slug"],
}
BOOK = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "title": {"type": "string"},
        "authorId": {"type": "integer"},
        "year": {"type": "integer"},
        "publisher": PUBLISHER,
    },
    "required": ["id", "title", "authorId"],
}


# REST framework's filters as NetBox spells them, beside its `ordering`
LOOKUPS = (
    *("name__ic", "name__nic", "name__nisw", "name__iew", "name__ie"),
    *("id__gte", "id__lt", "id__n", "country__empty", "ordering"),
)


# a direction alone, as GitLab's `sort` beside its `order_by`
SORT = {"name": "sort", "in": "query", "schema": {"type": "string", "enum": ["asc", "desc"]}}


def text_query(name: str) -> dict:
    return {"name": name, "in": "query", "schema": {"type": "string"}}


def path_param(name: str, kind: str = "integer") -> dict:
    return {"name": name, "in": "path", "required": True, "schema": {"type": kind}}


def body(schema: dict) -> dict:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def bookshelf_document() -> dict:
    """OpenAPI 3.0: authors, and books under them; authors are listed by ids sent as text."""
    author_ref = {"$ref": "#/components/schemas/Author"}
    book_ref = {"$ref": "#/components/schemas/Book"}
    author_id = path_param("authorId")
    return {
        "openapi": "3.0.3",
        "info": {"title": "Bookshelf", "version": "1.0.0"},
        "servers": [{"url": "https://bookshelf.example.org/v1"}],
        "paths": {
            "/authors": {
                "get": {
                    "operationId": "listAuthors",
                    "summary": "List the authors",
                    "parameters": [
                        text_query("id"),
                        text_query("country"),
                        *(text_query(name) for name in LOOKUPS),
                        SORT,
                    ],
                    "responses": answer({"type": "array", "items": author_ref}),
                },
                "post": {
                    "operationId": "createAuthor",
                    "summary": "Add an author",
                    "requestBody": body(author_ref),
                    "responses": answer(author_ref),
                },
            },
            "/authors/{authorId}/": {
                "get": {
                    "operationId": "getAuthor",
                    "summary": "Get an author",
                    "parameters": [author_id],
                    "responses": answer(author_ref),
                },
                "delete": {
                    "operationId": "deleteAuthor",
                    "summary": "Delete an author",
                    "parameters": [author_id],
                    "responses": {"204": {"description": "deleted"}},
                },
            },
            "/authors/{authorId}/books": {
                "get": {
                    "operationId": "listAuthorBooks",
                    "summary": "List the books of an author",
                    "parameters": [author_id],
                    "responses": answer({"type": "array", "items": book_ref}),
                },
            },
            "/authors/{authorId}/books/{title}": {
                "get": {
                    "operationId": "getAuthorBook",
                    "summary": "Get a book of an author by its title",
                    "parameters": [author_id, path_param("title", "string")],
                    "responses": answer(book_ref),
                },
                "delete": {
                    "operationId": "deleteAuthorBook",
                    "summary": "Delete a book of an author by its title",
                    "parameters": [author_id, path_param("title", "string")],
                    "responses": {"204": {"description": "deleted"}},
                },
            },
            "/books": {
                "get": {
                    "operationId": "listBooks",
                    "summary": "List the books",
                    "parameters": [
                        text_query("publisher"),
                        text_query("publisher__n"),
                        SORT,
                    ],
                    "responses": answer({"type": "array", "items": book_ref}),
                },
                "post": {
                    "operationId": "createBook",
                    "summary": "Add a book",
                    "requestBody": body(book_ref),
                    "responses": answer(book_ref),
                },
            },
        },
        "components": {"schemas": {"Author": AUTHOR, "Book": BOOK, "Tag": TAG}},
    }


@pytest.fixture(scope="module")
def pool():
    pool = SandboxPool(workers=1)
    yield pool
    pool.close()


@pytest.fixture
def bookshelf(tmp_path):
    model = read_theme(parse_theme_document(bookshelf_document(), "bookshelf.json"))
    db = build_theme_database(model, tmp_path / "bookshelf.sqlite", [], rows=12, seed="shelf")
    return model, db["db_path"], implement_theme_tools(model, db["db_path"])


def call(pool, tools, db_path, tmp_path, name: str, arguments: dict):
    """One call of a generated tool in the sandbox, on its own episode of the database."""
    root = tmp_path / f"package-{len(list(tmp_path.glob('package-*')))}"
    package = load_package(contract_package(root, tools, db_path, "bookshelf"))
    with pool.start_episode(package) as episode:
        return episode.call_tool(name, arguments)


@pytest.mark.parametrize("rows", [2, 12])
def test_every_referenced_table_keeps_a_row_a_delete_can_remove(pool, tmp_path, rows):
    """With two authors and two books, both authors had a book before (seed "shelf")."""
    model = read_theme(parse_theme_document(bookshelf_document(), "bookshelf.json"))
    db_path = build_theme_database(model, tmp_path / "shelf.sqlite", [], rows=rows, seed="shelf")[
        "db_path"
    ]
    assert model.entities["book"].fields["authorId"].ref == "author"
    conn = sqlite3.connect(db_path)
    authors = {a for (a,) in conn.execute("SELECT id FROM authors")}
    cited = {a for (a,) in conn.execute("SELECT authorId FROM books")}
    conn.close()
    assert len(authors) == rows and authors - cited, (authors, cited)
    tools = implement_theme_tools(model, db_path)
    contract = run_contracts(tools, model, db_path, "bookshelf", pool)["deleteAuthor"]
    assert contract.passed, contract.summary
    assert contract.summary.endswith("effect: deletes the author named")


def test_a_title_repeated_under_two_authors_is_found_under_the_author_given(
    bookshelf, pool, tmp_path
):
    model, db_path, tools = bookshelf
    assert {
        n: b[0]
        for n, b in next(p for p in model.plans if p.name == "getAuthorBook").bindings.items()
    } == {"authorId": "filter", "title": "key"}
    conn = sqlite3.connect(db_path)
    first, title = conn.execute("SELECT authorId, title FROM books ORDER BY id").fetchone()
    other = conn.execute("SELECT id FROM authors WHERE id != ? ORDER BY id", (first,)).fetchone()[0]
    conn.execute(
        "INSERT INTO books (id, title, authorId, year) VALUES (999, ?, ?, 1999)", (title, other)
    )
    conn.commit()
    conn.close()
    found = call(
        pool, tools, db_path, tmp_path, "getAuthorBook", {"authorId": other, "title": title}
    )
    assert found.ok, found.error
    assert (found.result["id"], found.result["authorId"]) == (999, other)
    missing = call(
        pool, tools, db_path, tmp_path, "getAuthorBook", {"authorId": -5, "title": title}
    )
    assert not missing.ok
    assert f"has authorId {first}, not -5" in missing.error
    package = load_package(contract_package(tmp_path / "deleting", tools, db_path, "bookshelf"))
    with pool.start_episode(package) as episode:
        removed = episode.call_tool("deleteAuthorBook", {"authorId": other, "title": title})
        assert removed.ok, removed.error
        assert episode.state_diff()["books"]["removed"][0]["id"] == 999


def test_an_id_sent_as_text_reaches_the_integer_key(bookshelf, pool, tmp_path):
    model, db_path, tools = bookshelf
    plan = next(p for p in model.plans if p.name == "listAuthors")
    assert plan.bindings["id"] == ["filter", "id"]
    assert model.entities["author"].fields["id"].type == "integer"
    listed = call(pool, tools, db_path, tmp_path, "listAuthors", {"id": "3"})
    assert listed.ok, listed.error
    assert [a["id"] for a in listed.result] == [3]
    contract = run_contracts(tools, model, db_path, "bookshelf", pool)["listAuthors"]
    assert contract.passed, contract.summary
    assert contract.summary.startswith("document contract: parameters 13/13 accepted")


def test_django_filter_lookups_filter_their_field_and_are_no_columns(bookshelf, pool, tmp_path):
    """NetBox's `name__ic`, `id__gte`, ... became columns of random text, and its listings
    matched on them; now each filters the field it names the way REST framework does."""
    model, db_path, tools = bookshelf
    author = model.entities["author"]
    assert not [c for c in author.fields if "__" in c or c == "ordering"], list(author.fields)
    plan = next(p for p in model.plans if p.name == "listAuthors")
    assert plan.bindings["name__ic"] == ["lookup", "name", "ic"]
    assert plan.bindings["ordering"] == ["order"]
    conn = sqlite3.connect(db_path)
    rows = conn.execute("SELECT id, name, country FROM authors ORDER BY id").fetchall()
    conn.close()
    fragment = rows[0][1][1:4].upper()

    def listed(**arguments) -> list:
        result = call(pool, tools, db_path, tmp_path, "listAuthors", arguments)
        assert result.ok, result.error
        return result.result

    assert [a["id"] for a in listed(name__ic=fragment)] == [
        i for i, name, _ in rows if fragment.lower() in name.lower()
    ]
    start = rows[0][1][:2]
    assert [a["id"] for a in listed(name__nisw=start)] == [
        i for i, name, _ in rows if not name.lower().startswith(start.lower())
    ]
    assert [a["id"] for a in listed(name__nic=fragment)] == [
        i for i, name, _ in rows if fragment.lower() not in name.lower()
    ]
    end = rows[1][1][-3:].upper()
    assert [a["id"] for a in listed(name__iew=end)] == [
        i for i, name, _ in rows if name.lower().endswith(end.lower())
    ]
    assert [a["id"] for a in listed(name__ie=rows[2][1].swapcase())] == [rows[2][0]]
    assert [a["id"] for a in listed(name__ic="")] == [i for i, _, _ in rows]  # no filter
    assert [a["id"] for a in listed(id__gte="4")] == [i for i, _, _ in rows if i >= 4]
    assert [a["id"] for a in listed(id__lt="4")] == [i for i, _, _ in rows if i < 4]
    assert [a["id"] for a in listed(id__n="3")] == [i for i, _, _ in rows if i != 3]
    assert [a["id"] for a in listed(country__empty="false")] == [i for i, _, c in rows if c]
    assert [a["name"] for a in listed(ordering="-name")] == sorted(
        (name for _, name, _ in rows), reverse=True
    )
    by_name_then_id = sorted(rows, key=lambda r: (r[1], -r[0]), reverse=True)
    assert [a["name"] for a in listed(ordering="name desc,")] == [r[1] for r in by_name_then_id]
    assert [a["name"] for a in listed(ordering="name:descending")] == [
        r[1] for r in by_name_then_id
    ]
    assert [a["name"] for a in listed(ordering="name", sort="desc")] == [
        r[1] for r in by_name_then_id
    ]  # GitLab's order_by=name&sort=desc: the direction goes to the field
    assert [a["id"] for a in listed(sort="desc")] == sorted((i for i, _, _ in rows), reverse=True)
    too_big = call(pool, tools, db_path, tmp_path, "listAuthors", {"id__gte": "9" * 20})
    assert not too_big.ok and "must be an integer" in too_big.error
    refused = call(pool, tools, db_path, tmp_path, "listAuthors", {"ordering": "height"})
    assert not refused.ok
    assert "'height' is not a field of author to order by" in refused.error


def test_a_text_filter_over_a_nested_object_matches_one_of_its_values(bookshelf, pool, tmp_path):
    """NetBox's `tenant=acme` over a site's {"id": 3, "slug": "acme"}: before, the tool
    refused the text ("must be an object") and the listing failed its contract."""
    model, db_path, tools = bookshelf
    plan = next(p for p in model.plans if p.name == "listBooks")
    assert plan.bindings["publisher"] == ["member", "publisher"]
    assert plan.bindings["publisher__n"] == ["member", "publisher", "n"]
    assert plan.bindings["sort"] == ["order"]  # a direction: the books by key, this way
    conn = sqlite3.connect(db_path)
    books = conn.execute("SELECT id, publisher FROM books ORDER BY id").fetchall()
    conn.close()
    slug = json.loads(books[0][1])["slug"]
    result = call(pool, tools, db_path, tmp_path, "listBooks", {"publisher": slug})
    assert result.ok, result.error
    assert [b["id"] for b in result.result] == [
        i for i, publisher in books if json.loads(publisher)["slug"] == slug
    ]
    others = call(pool, tools, db_path, tmp_path, "listBooks", {"publisher__n": slug})
    assert others.ok, others.error
    assert [b["id"] for b in others.result] == [
        i for i, publisher in books if json.loads(publisher)["slug"] != slug
    ]
    contract = run_contracts(tools, model, db_path, "bookshelf", pool)["listBooks"]
    assert contract.passed, contract.summary


def test_a_read_only_body_field_is_no_parameter_of_a_write(bookshelf, pool):
    """OpenAPI's `readOnly` (NetBox's `url`, `display`): the server sets it and a client does
    not send it. Before, a `url` in the body made every NetBox write "need the outside world"."""
    model, db_path, tools = bookshelf
    plan = next(p for p in model.plans if p.name == "createAuthor")
    assert not plan.rejected, plan.rejected
    assert "url" not in plan.parameters["properties"]
    assert "url" in model.entities["author"].fields  # still a column: answers show it
    contract = run_contracts(tools, model, db_path, "bookshelf", pool)["createAuthor"]
    assert contract.passed, contract.summary


def test_a_path_ending_in_a_slash_after_the_row_reads_one_row(bookshelf, pool):
    """NetBox's `GET /dcim/sites/{id}/` answers one site, with a list of tags in it. The
    trailing slash made it a listing with its rows "under tags", which broke the document."""
    model, db_path, tools = bookshelf
    plan = next(p for p in model.plans if p.name == "getAuthor")
    assert plan.operation == "get" and plan.bindings["authorId"][0] == "key"
    contract = run_contracts(tools, model, db_path, "bookshelf", pool)["getAuthor"]
    assert contract.passed, contract.summary
    assert "response schema valid" in contract.summary


def test_a_text_filters_enum_is_no_constraint_of_the_object_it_names():
    """NetBox lists sites by `type` (a text of an enum), while a site's `type` is an object
    {value, label}: the rows got the enum's texts where the document says objects."""
    nested = {"type": "object", "properties": {"value": {"type": "string"}}}
    named_first = FieldSpec("type", "string", enum=["active", "planned"], pattern="^[a-z]+$")
    named_first.merge(FieldSpec("type", "object", schema=nested))
    assert (named_first.type, named_first.enum, named_first.pattern) == ("object", [], "")
    assert named_first.schema == nested
    object_first = FieldSpec("type", "object", schema=nested)
    object_first.merge(FieldSpec("type", "string", enum=["active"], examples=["active"]))
    assert (object_first.enum, object_first.examples) == ([], [])
    same_type = FieldSpec("status", "string")
    same_type.merge(FieldSpec("status", "string", enum=["active"]))
    assert same_type.enum == ["active"]


def test_nested_objects_hold_values_like_their_own_rows(bookshelf):
    """A book's publisher {id, name, slug} held "contract value" in every text field: what an
    agent read in every answer. Now its name reads like a publisher's and its slug like a slug."""
    _model, db_path, _tools = bookshelf
    conn = sqlite3.connect(db_path)
    publishers = [json.loads(p) for (p,) in conn.execute("SELECT publisher FROM books")]
    tags = [json.loads(t) for (t,) in conn.execute("SELECT tags FROM authors")]
    conn.close()
    assert all(re.fullmatch(r"[A-Z][a-z]+ publisher \d+", p["name"]) for p in publishers), (
        publishers
    )
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", p["slug"]) for p in publishers), publishers
    assert len({p["name"] for p in publishers}) > 1
    texts = [v for row in tags for tag in row for v in tag.values()]
    assert texts and "contract value" not in texts, tags
