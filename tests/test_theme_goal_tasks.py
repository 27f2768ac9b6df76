"""Goal tasks on theme environments: tools named by their documents (`GetBook`, `UpdateBook`),
answers in the document's envelope, rows named by a natural key, and an account in words where
no walk can start. The environment of the first test is built from a document written here."""

from __future__ import annotations

import json
import random
import sqlite3
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from environments.discovery.themes import parse_theme_document
from environments.models import Environment
from environments.themes_import import store_theme
from tasks.audit import project
from tasks.models import Task
from tasks.service import SynthesisAccount, synthesize_tasks
from tasks.synthesis.answers import project_answer
from tasks.synthesis.arguments import write_arguments
from tasks.synthesis.environment_view import EnvironmentView
from tasks.synthesis.graph_tasks import start_obstacles
from tasks.synthesis.tool_graph import build_nodes, build_tool_graph, is_row_list, records_of
from tests.support.theme_builds import verified

GENRES = ["novel", "poetry", "essay", "drama"]


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _body(schema: dict, status: str = "200") -> dict:
    return {status: {"description": "OK", "content": {"application/json": {"schema": schema}}}}


def _path_id(name: str) -> dict:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def library_document() -> dict:
    """Authors and their books: a list in a `{object, data, has_more}` envelope, one row in
    `{item: ...}`, get by id, create, update and delete, operationIds in CamelCase."""
    page = {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 100}}
    genre = {"type": "string", "enum": GENRES}
    book_fields = {
        "title": {"type": "string"},
        "authorId": {"type": "string"},
        "year": {"type": "integer", "minimum": 1850, "maximum": 2024},
        "pages": {"type": "integer", "minimum": 40, "maximum": 900},
        "genre": genre,
    }
    listing = {
        "type": "object",
        "required": ["object", "data", "has_more"],
        "properties": {
            "object": {"type": "string", "enum": ["list"]},
            "data": {"type": "array", "items": _ref("Author")},
            "has_more": {"type": "boolean"},
        },
    }
    one_book = {"type": "object", "properties": {"item": _ref("Book")}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "Shelfmark Library API", "version": "1.0.0"},
        "paths": {
            "/authors": {
                "get": {
                    "operationId": "ListAuthors",
                    "summary": "List authors",
                    "parameters": [
                        page,
                        {"name": "country", "in": "query", "schema": {"type": "string"}},
                    ],
                    "responses": _body(listing),
                }
            },
            "/authors/{authorId}": {
                "get": {
                    "operationId": "GetAuthor",
                    "summary": "Get one author",
                    "parameters": [_path_id("authorId")],
                    "responses": _body({"type": "object", "properties": {"item": _ref("Author")}}),
                }
            },
            "/books": {
                "get": {
                    "operationId": "ListBooks",
                    "summary": "List books, optionally of one author",
                    "parameters": [
                        page,
                        {"name": "authorId", "in": "query", "schema": {"type": "string"}},
                        {"name": "genre", "in": "query", "schema": genre},
                    ],
                    "responses": _body(
                        {
                            "type": "object",
                            "properties": {
                                "data": {"type": "array", "items": _ref("Book")},
                                "total": {"type": "integer"},
                            },
                        }
                    ),
                },
                "post": {
                    "operationId": "CreateBook",
                    "summary": "Add a book",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": _ref("NewBook")}},
                    },
                    "responses": _body(one_book, "201"),
                },
            },
            "/books/{bookId}": {
                "get": {
                    "operationId": "GetBook",
                    "summary": "Get one book",
                    "parameters": [_path_id("bookId")],
                    "responses": _body(one_book),
                },
                "patch": {
                    "operationId": "UpdateBook",
                    "summary": "Change a book",
                    "parameters": [_path_id("bookId")],
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        k: book_fields[k] for k in ("title", "pages", "genre")
                                    },
                                }
                            }
                        }
                    },
                    "responses": _body(one_book),
                },
                "delete": {
                    "operationId": "DeleteBook",
                    "summary": "Remove a book",
                    "parameters": [_path_id("bookId")],
                    "responses": {"204": {"description": "Deleted"}},
                },
            },
        },
        "components": {
            "schemas": {
                "Author": {
                    "type": "object",
                    "required": ["id", "name"],
                    "properties": {
                        "id": {"type": "string"},
                        "name": {"type": "string"},
                        "country": {"type": "string", "example": "Chile"},
                        "born": {"type": "integer", "minimum": 1800, "maximum": 2000},
                    },
                },
                "Book": {
                    "type": "object",
                    "required": ["id", "title", "authorId"],
                    "properties": {"id": {"type": "string"}, **book_fields},
                },
                "NewBook": {
                    "type": "object",
                    "required": ["title", "authorId"],
                    "properties": book_fields,
                },
            }
        },
    }


@pytest.fixture
def library(settings, tmp_path) -> Environment:
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    return verified(library_document(), "shelfmark.json", name="shelfmark")


@pytest.mark.django_db(transaction=True)
def test_a_theme_environment_gets_five_audited_goal_tasks(library):
    account = SynthesisAccount()
    created = synthesize_tasks(library, tier="goal", count=5, account=account)
    assert len(created) >= 5, account.to_dict()
    assert account.stored == len(created)
    for task in Task.objects.filter(environment=library):
        assert task.audit["passed"], task.audit
        assert task.tier == "goal"
    chains = [[s["tool"] for s in t.gold_chain] for t in created]
    assert any(len(chain) >= 2 for chain in chains), chains  # tools chain, not only lookups


@pytest.mark.django_db(transaction=True)
def test_the_graph_reads_what_each_tool_does_from_the_build_not_its_name(library):
    """`UpdateBook` says nothing a snake_case parser reads (it made every tool an "other" with
    no table); the manifest records each tool's operation, table and parameter columns."""
    operations = library.manifest["tool_operations"]
    assert operations["UpdateBook"]["operation"] == "update"
    assert operations["ListAuthors"]["rows_at"] == ["data"]
    assert operations["GetBook"] == operations["GetBook"] | {"rows_at": ["item"], "many": False}
    nodes = build_nodes(EnvironmentView(Path(library.package_path)))
    actions = {name: (node.action, node.entity) for name, node in nodes.items()}
    assert actions == {
        "ListAuthors": ("search", "authors"),
        "GetAuthor": ("get", "authors"),
        "ListBooks": ("list", "books"),
        "GetBook": ("get", "books"),
        "CreateBook": ("create", "books"),
        "UpdateBook": ("update", "books"),
        "DeleteBook": ("delete", "books"),
    }
    assert nodes["ListBooks"].parent == "authors"
    assert nodes["ListBooks"].params["authorId"].key == ("authors", "id")
    assert nodes["UpdateBook"].params["bookId"].role == "key"
    graph = build_tool_graph(EnvironmentView(Path(library.package_path)))
    edges = {(e.source, e.target, e.param) for e in graph.edges}
    assert {("ListAuthors", "ListBooks", "authorId"), ("GetBook", "UpdateBook", "bookId")} <= edges


# --- answers in envelopes ----------------------------------------------------------------------


def test_rows_are_found_inside_the_documents_envelopes():
    listing = {"object": "list", "data": [{"id": "a", "name": "Ada"}], "has_more": False}
    assert records_of(listing) == [{"id": "a", "name": "Ada"}] and is_row_list(listing)
    names_beside = {"profilingGroups": [{"name": "g1"}], "profilingGroupNames": ["g1"]}
    assert records_of(names_beside) == [{"name": "g1"}] and is_row_list(names_beside)
    assert records_of({"data": [], "has_more": False}) == []
    assert is_row_list({"data": [], "has_more": False})
    one = {"item": {"id": "b1", "title": "Dune", "pages": 412}}
    assert records_of(one) == [one["item"]] and not is_row_list(one)
    beside = {"user": {"id": "u1", "name": "Ada"}, "requestId": "r-1"}
    assert records_of(beside) == [beside["user"]]
    row = {"id": 1, "name": "Ada", "tags": []}  # an empty list field is no envelope
    assert records_of(row) == [row] and not is_row_list(row)
    nested = {"id": 1, "name": "Ada", "address": {"city": "Lima"}}  # a row with an object
    assert records_of(nested) == [nested]


def test_the_answer_of_a_wrapped_row_is_its_field_not_the_envelope():
    result = {"item": {"id": "b1", "title": "Dune", "pages": 412}}
    spec, reference = project_answer("get", "read", result)
    assert spec == {"shape": "value", "field": "title"} and reference == "Dune"
    assert project(spec, result) == "Dune"  # the audit reads a run's answer the same way
    assert project(spec, {"item": {"id": "b2", "title": "Emma"}}) == "Emma"


# --- recorded operations on a package written here --------------------------------------------


def _package(tmp_path: Path, tools: dict[str, dict], operations: dict[str, dict]) -> Path:
    root = tmp_path / "groups"
    root.mkdir()
    db = sqlite3.connect(root / "state.sqlite")
    db.execute("CREATE TABLE groups (id INTEGER PRIMARY KEY, name TEXT, status TEXT)")
    db.executemany(
        "INSERT INTO groups VALUES (?, ?, ?)",
        [(i, f"group-{i}", ["active", "paused"][i % 2]) for i in range(1, 7)],
    )
    db.commit()
    db.close()
    manifest = {
        "name": "groups",
        "version": 1,
        "tools": [
            {"type": "function", "function": {"name": n, "description": n, "parameters": p}}
            for n, p in tools.items()
        ],
        "tool_kinds": {n: op["kind"] for n, op in operations.items()},
        "tables": {"groups": {"primary_key": ["id"], "foreign_keys": []}},
        "tool_operations": {
            n: {k: v for k, v in op.items() if k != "kind"} for n, op in operations.items()
        },
    }
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def _params(**properties: dict) -> dict:
    required = [n for n, s in properties.items() if s.pop("required", False)]
    return {"type": "object", "properties": properties, "required": required}


def test_rows_named_by_a_natural_key_are_updated_and_paged_by_their_own_parameters(tmp_path):
    """A write that names its row by `groupName` (not the row id) gets a real name to act on,
    the name a listing returns feeds it, and `maxResults` is the listing's page size."""
    root = _package(
        tmp_path,
        {
            "ListGroups": _params(maxResults={"type": "integer", "maximum": 50}),
            "UpdateGroup": _params(
                groupName={"type": "string", "required": True},
                status={"type": "string", "enum": ["active", "paused"]},
            ),
        },
        {
            "ListGroups": {
                "kind": "read",
                "operation": "list",
                "table": "groups",
                "key": "id",
                "params": {"maxResults": {"role": "limit", "columns": []}},
                "rows_at": ["groups"],
                "many": True,
            },
            "UpdateGroup": {
                "kind": "write",
                "operation": "update",
                "table": "groups",
                "key": "id",
                "params": {
                    "groupName": {"role": "key", "columns": ["name"]},
                    "status": {"role": "field", "columns": ["status"]},
                },
                "rows_at": ["group"],
                "many": False,
            },
        },
    )
    view = EnvironmentView(root)
    graph = build_tool_graph(view)
    update = graph.nodes["UpdateGroup"]
    assert update.row_key == "name" and update.params["groupName"].key == ("groups", "name")
    assert graph.nodes["ListGroups"].limit_param == "maxResults"
    assert ("ListGroups", "UpdateGroup", "name", "groupName") in {
        (e.source, e.target, e.field, e.param) for e in graph.edges
    }
    arguments = write_arguments(view, update, random.Random(3))
    assert arguments is not None and arguments["groupName"].startswith("group-"), arguments
    rows = graph.nodes["ListGroups"].records({"groups": [{"name": "group-1"}], "next": None})
    assert rows == [{"name": "group-1"}]


def test_why_no_walk_can_start_is_said_in_words(tmp_path):
    """A translation tool whose table holds nothing but row ids: no value to call it with."""
    root = tmp_path / "translate"
    root.mkdir()
    db = sqlite3.connect(root / "state.sqlite")
    db.execute("CREATE TABLE yodas (id INTEGER PRIMARY KEY)")
    db.executemany("INSERT INTO yodas VALUES (?)", [(1,), (2,)])
    db.commit()
    db.close()
    tool = {"name": "get_translate_yoda", "description": "Translate to Yoda speak."}
    tool["parameters"] = _params(text={"type": "string", "required": True})
    manifest = {
        "name": "translate",
        "version": 1,
        "tools": [{"type": "function", "function": tool}],
        "tool_kinds": {"get_translate_yoda": "read"},
        "tables": {"yodas": {"primary_key": ["id"], "foreign_keys": []}},
        "tool_operations": {
            "get_translate_yoda": {
                "operation": "list",
                "table": "yodas",
                "key": "id",
                "params": {"text": {"role": "query", "columns": []}},
            }
        },
    }
    (root / "manifest.json").write_text(json.dumps(manifest))
    view = EnvironmentView(root)
    reason = start_obstacles(view, build_nodes(view))
    assert reason == (
        "no read tool can be called with values from the data: get_translate_yoda needs text, "
        "which no column's values fill"
    )


def payouts_document() -> dict:
    """Nothing to read: a document of POST operations only (create a payout, change one)."""
    payout = {
        "type": "object",
        "required": ["amount", "currency"],
        "properties": {
            "amount": {"type": "integer", "minimum": 1, "maximum": 100000},
            "currency": {"type": "string", "enum": ["usd", "eur", "gbp"]},
            "method": {"type": "string", "enum": ["standard", "instant"]},
        },
    }
    answer = {"type": "object", "properties": {"id": {"type": "string"}, **payout["properties"]}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "Payout Desk", "version": "1.0.0"},
        "paths": {
            "/payouts": {
                "post": {
                    "operationId": "PostPayouts",
                    "summary": "Create a payout",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": payout}},
                    },
                    "responses": _body(answer),
                }
            },
        },
    }


@pytest.mark.django_db(transaction=True)
def test_an_environment_of_write_tools_only_gets_goal_tasks_that_change_rows(settings, tmp_path):
    """Walks used to start only from a read: a document of POST operations gave no task."""
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    theme = store_theme(parse_theme_document(payouts_document(), "payouts.json"))
    call_command(
        "build_environment", theme=theme.pk, name="payouts", min_tools=1, stdout=StringIO()
    )
    environment = Environment.objects.get(name="payouts")
    assert environment.status == Environment.Status.VERIFIED, environment.failure_reason
    account = SynthesisAccount()
    created = synthesize_tasks(environment, tier="goal", count=3, account=account)
    assert created, account.to_dict()
    for task in created:
        assert [s["kind"] for s in task.gold_chain] == ["write"], task.gold_chain
        assert task.expected_diff, task.instruction


def test_tool_names_resolve_as_written_before_their_snake_case_form():
    """`get_NationLanguage` names the table `NationLanguages` as written (snake-casing it first
    lost every CamelCase table); `getBook` resolves through its snake-case form."""
    from tasks.synthesis.tool_graph import tool_name_parts

    camel_tables = {"Nations": {}, "NationLanguages": {}}
    assert tool_name_parts("get_NationLanguage", camel_tables) == ("get", "NationLanguages", None)
    assert tool_name_parts("list_NationLanguages_for_Nation", camel_tables) == (
        "list",
        "NationLanguages",
        "Nations",
    )
    assert tool_name_parts("getBook", {"books": {}}) == ("get", "books", None)
