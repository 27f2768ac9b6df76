"""Theme tools answer in their document's own response shape (`theme_envelope`).

A library API written for these tests wraps its list in `{data: [...], total, next}` and its
single book in `{item: {...}}`, and says a delete answers `{deleted: true, id}`. The tools built
from it answer in exactly those shapes, with a truthful total and a next-page token that
resumes the listing, and pass the document contract; a bare list, or a total that lies, is
rejected by it. Header parameters keep their location; credentials and transport headers are
left out with a note.
"""

from __future__ import annotations

import sqlite3

import pytest

from environments.builder.theme_contract import contract_package, run_contracts
from environments.builder.theme_data import build_theme_database
from environments.builder.theme_reading import read_theme
from environments.builder.theme_tools import implement_theme_tools
from environments.discovery.themes import parse_theme_document
from environments.package import load_package
from environments.runtime import SandboxPool
from tests.test_theme_contract import only

BOOK = {
    "type": "object",
    "required": ["id", "title", "genre"],
    "properties": {
        "id": {"type": "integer"},
        "title": {"type": "string"},
        "author": {"type": "string"},
        "genre": {"type": "string", "enum": ["fiction", "history", "science"]},
    },
}
REF = {"$ref": "#/components/schemas/Book"}
ITEM = {"type": "object", "required": ["item"], "properties": {"item": REF}}


def json_body(schema: dict, description: str = "OK") -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def query(name: str, schema: dict, where: str = "query", required: bool = False) -> dict:
    return {"name": name, "in": where, "schema": schema, "required": required}


LIBRARY = {
    "openapi": "3.0.3",
    "info": {"title": "Library", "version": "1.0"},
    "servers": [{"url": "https://library.example.org/v1"}],
    "components": {
        "schemas": {"Book": BOOK},
        "securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}},
    },
    "paths": {
        "/books": {
            "get": {
                "operationId": "listBooks",
                "summary": "List the books",
                "parameters": [
                    query("genre", BOOK["properties"]["genre"]),
                    query("limit", {"type": "integer", "minimum": 1, "maximum": 50}),
                    query("cursor", {"type": "string"}),
                    query("X-Request-Id", {"type": "string"}, "header"),
                    query("X-Api-Key", {"type": "string"}, "header", required=True),
                    query("Authorization", {"type": "string"}, "header"),
                    query("Accept", {"type": "string"}, "header"),
                ],
                "responses": {
                    "200": json_body(
                        {
                            "type": "object",
                            "required": ["data", "total", "object"],
                            "properties": {
                                "object": {"type": "string", "enum": ["list"]},
                                "data": {"type": "array", "items": REF},
                                "total": {"type": "integer", "minimum": 0},
                                "next": {"type": "string", "nullable": True},
                            },
                        }
                    )
                },
            },
            "post": {
                "operationId": "createBook",
                "summary": "Add a book",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["title", "genre"],
                                "properties": {
                                    k: v for k, v in BOOK["properties"].items() if k != "id"
                                },
                            }
                        }
                    },
                },
                "responses": {"201": json_body(ITEM, "Created")},
            },
        },
        "/books/{bookId}": {
            "parameters": [query("bookId", {"type": "integer"}, "path", required=True)],
            "get": {
                "operationId": "getBook",
                "summary": "Get a book by its id",
                "responses": {"200": json_body(ITEM)},
            },
            "delete": {
                "operationId": "deleteBook",
                "summary": "Delete a book",
                "responses": {
                    "200": json_body(
                        {
                            "type": "object",
                            "required": ["deleted", "id"],
                            "properties": {
                                "deleted": {"type": "boolean"},
                                "id": {"type": "integer"},
                            },
                        }
                    )
                },
            },
        },
    },
}


@pytest.fixture(scope="module")
def pool():
    pool = SandboxPool(workers=1)
    yield pool
    pool.close()


@pytest.fixture
def built(tmp_path):
    model = read_theme(parse_theme_document(LIBRARY, "library.json"))
    db = build_theme_database(model, tmp_path / "library.sqlite", [], rows=12, seed="library")
    tools = implement_theme_tools(model, db["db_path"])
    return model, db["db_path"], tools


def plans(model) -> dict:
    return {p.name: p for p in model.plans}


def test_the_envelope_is_read_once_from_the_document(built):
    model, _db, _tools = built
    listing, get, delete = (plans(model)[n] for n in ("listBooks", "getBook", "deleteBook"))
    assert not listing.rejected and listing.operation == "list"
    assert listing.envelope.rows == ("data",) and listing.envelope.many
    roles = {f.path: f.role for f in listing.envelope.fields}
    assert roles == {("object",): "value", ("total",): "total", ("next",): "next"}
    assert next(f for f in listing.envelope.fields if f.role == "value").value == "list"
    assert get.envelope.rows == ("item",) and not get.envelope.many
    assert plans(model)["createBook"].envelope.rows == ("item",)
    assert delete.envelope.rows == () and [f.path for f in delete.envelope.fields] == [("deleted",)]
    assert listing.bindings["cursor"] == ["cursor"]


def test_the_tools_answer_in_the_documents_shape_and_pass_the_contract(built, pool, tmp_path):
    model, db_path, tools = built
    contracts = run_contracts(tools, model, db_path, "library", pool)
    assert {n: c.passed for n, c in contracts.items()} == dict.fromkeys(tools.names(), True), {
        n: c.summary for n, c in contracts.items()
    }
    assert "response schema valid (rows under data)" in contracts["listBooks"].summary
    assert "response schema valid (rows under item)" in contracts["getBook"].summary

    conn = sqlite3.connect(db_path)
    fiction = conn.execute("SELECT COUNT(*) FROM books WHERE genre = 'fiction'").fetchone()[0]
    total = conn.execute("SELECT COUNT(*) FROM books").fetchone()[0]
    first_id, title = conn.execute("SELECT id, title FROM books ORDER BY id").fetchone()
    conn.close()
    package = load_package(contract_package(tmp_path / "pkg", tools, db_path, "library"))
    with pool.start_episode(package) as episode:
        page = episode.call_tool("listBooks", {"limit": 5}).result
        assert set(page) == {"object", "data", "total", "next"}
        assert page["object"] == "list" and page["total"] == total and len(page["data"]) == 5
        assert page["next"] == "5"  # the next page's token, read back by `cursor`
        rest = episode.call_tool("listBooks", {"limit": 50, "cursor": page["next"]}).result
        assert len(rest["data"]) == total - 5 and rest["next"] is None
        assert {b["id"] for b in page["data"]}.isdisjoint(b["id"] for b in rest["data"])
        only = episode.call_tool("listBooks", {"genre": "fiction", "limit": 1}).result
        assert only["total"] == fiction and len(only["data"]) == min(1, fiction)
        book = episode.call_tool("getBook", {"bookId": first_id}).result
        assert book == {"item": book["item"]} and book["item"]["title"] == title
        made = episode.call_tool("createBook", {"title": "Envelopes", "genre": "science"}).result
        assert list(made) == ["item"] and made["item"]["title"] == "Envelopes"
        gone = episode.call_tool("deleteBook", {"bookId": made["item"]["id"]}).result
        assert gone["deleted"] is True and gone["id"] == made["item"]["id"]


def test_a_bare_list_or_a_lying_total_breaks_the_contract(built, pool):
    model, db_path, tools = built
    for body, broken in (
        ("rows", "a list where the document says type 'object'"),
        ("{'object': 'list', 'data': rows, 'total': 0}", "total is 0, fewer than the 12 rows"),
    ):
        wrong = only(tools, "listBooks")
        wrong.functions["listBooks"] = (
            "def listBooks(db, **params):\n"
            "    rows = [dict(r) for r in db.execute('SELECT * FROM books')]\n"
            f"    return {body}\n"
        )
        contract = run_contracts(wrong, model, db_path, "library", pool)["listBooks"]
        check = next(c for c in contract.checks if c.name == "response schema")
        assert not contract.passed and not check.passed
        assert broken in check.detail, check.detail


def test_header_parameters_keep_their_location_and_credentials_stay_out():
    theme = parse_theme_document(LIBRARY, "library.json")
    listing = next(t for t in theme["tools"] if t["name"] == "listBooks")
    assert set(listing["parameters"]["properties"]) == {"genre", "limit", "cursor", "X-Request-Id"}
    assert listing["parameters"]["required"] == []  # the required X-Api-Key is a credential
    assert listing["http"]["headers"] == ["X-Request-Id"]
    notes = " ".join(listing["notes"])
    assert "'X-Api-Key' is left out: it carries a credential" in notes
    assert "'Authorization' is left out" in notes
    assert "header 'Accept' is left out: it says how the request travels" in notes
    plan = plans(read_theme(theme))["listBooks"]
    assert plan.bindings["X-Request-Id"] == ["ignored"]
    assert "X-Request-Id" not in read_theme(theme).entities["book"].fields


def violating_sites_document() -> dict:
    """Google's Abusive Experience Report API as the directory has it, cut to two reads."""
    summary = {
        "type": "object",
        "properties": {
            "reviewedSite": {"type": "string"},
            "abusiveStatus": {"type": "string", "enum": ["UNKNOWN", "PASSING", "FAILING"]},
            "filterStatus": {"type": "string", "enum": ["ON", "OFF", "PAUSED", "PENDING"]},
            "lastChangeTime": {"type": "string", "format": "google-datetime"},
            "reportUrl": {"type": "string"},
            "underReview": {"type": "boolean"},
        },
    }
    response = {
        "type": "object",
        "properties": {
            "violatingSites": {
                "type": "array",
                "items": {"$ref": "#/components/schemas/SiteSummaryResponse"},
            },
            "nextPageToken": {"type": "string"},
        },
    }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Abusive Experience Report API", "version": "v1"},
        "servers": [{"url": "https://abusiveexperiencereport.googleapis.com/"}],
        "paths": {
            "/v1/violatingSites": {
                "get": {
                    "operationId": "abusiveexperiencereport.violatingSites.list",
                    "description": "Lists sites that are failing in the Abusive Experience Report.",
                    "responses": {
                        "200": json_body({"$ref": "#/components/schemas/ViolatingSitesResponse"})
                    },
                }
            },
            "/v1/{name}": {
                "get": {
                    "operationId": "abusiveexperiencereport.sites.get",
                    "description": "Gets a site's Abusive Experience Report summary.",
                    "parameters": [
                        {
                            "name": "name",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "responses": {
                        "200": json_body({"$ref": "#/components/schemas/SiteSummaryResponse"})
                    },
                }
            },
        },
        "components": {
            "schemas": {"SiteSummaryResponse": summary, "ViolatingSitesResponse": response}
        },
    }


def test_a_list_envelope_named_like_its_rows_is_not_their_owner(tmp_path, pool):
    """Google's `violatingSites.list` answers `{violatingSites: [SiteSummary], nextPageToken}`,
    a schema of its own. The envelope read as a row owning a list of sites listed envelopes,
    which broke the document (94 list tools in a sample of 300 directory documents)."""
    model = read_theme(parse_theme_document(violating_sites_document(), "abusive.json"))
    listing = next(p for p in model.plans if p.name.endswith("violatingSites_list"))
    assert listing.entity == "site_summary_response", (listing.entity, listing.rejected)
    assert "list_field" not in listing.options
    db = build_theme_database(model, tmp_path / "abusive.sqlite", [], rows=6, seed="abusive")
    tools = implement_theme_tools(model, db["db_path"])
    contract = run_contracts(tools, model, db["db_path"], "abusive", pool)[listing.name]
    assert contract.passed, contract.summary
    assert "rows under violatingSites" in contract.summary
