"""A document's standard query parameters and credentials are no part of its tools.

A notes API written for these tests in the style of Google's discovery documents attaches the
same eleven query parameters to every path (`$.xgafv`, `alt`, `callback`, `fields`, `key`,
`oauth_token`, `access_token`, `prettyPrint`, `quotaUser`, `upload_protocol`, `uploadType`):
they say how a request travels or its answer is presented, or carry a credential. No tool takes
them, no table holds them, every tool's notes and the theme's provenance say why; the same
names stay real parameters where a document gives them a meaning of its own.
"""

from __future__ import annotations

import copy
import sqlite3
from typing import Any

import pytest

from environments.builder.theme_contract import run_contracts
from environments.builder.theme_data import build_theme_database
from environments.builder.theme_model import documented_date
from environments.builder.theme_reading import read_theme
from environments.builder.theme_tools import implement_theme_tools
from environments.discovery.themes import parse_theme_document
from environments.runtime import SandboxPool

STANDARD = {
    "_.xgafv": {"name": "$.xgafv", "schema": {"type": "string", "enum": ["1", "2"]}},
    "access_token": {"name": "access_token", "description": "OAuth access token."},
    "alt": {"name": "alt", "schema": {"type": "string", "enum": ["json", "media"]}},
    "callback": {"name": "callback", "description": "JSONP"},
    "fields": {"name": "fields", "description": "Selector of the fields to answer."},
    "key": {"name": "key", "description": "API key of your project."},
    "oauth_token": {"name": "oauth_token", "description": "OAuth 2.0 token."},
    "prettyPrint": {"name": "prettyPrint", "schema": {"type": "boolean"}},
    "quotaUser": {"name": "quotaUser", "description": "Quota attribution."},
    "upload_protocol": {"name": "upload_protocol", "description": "Upload protocol."},
    "uploadType": {"name": "uploadType", "description": "Legacy upload protocol."},
}
WORDS = {"$.xgafv", "access_token", "alt", "callback", "fields", "key", "oauth_token"} | {
    "prettyPrint",
    "quotaUser",
    "upload_protocol",
    "uploadType",
}
NOTE = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "Note identifier."},
        "title": {"type": "string", "description": "Title of the note."},
        "due": {
            "type": "string",
            "description": "Due date of the note (as a RFC 3339 timestamp). Optional.",
        },
        "updated": {
            "type": "string",
            "format": "date-time",
            "description": "Last modification time of the note (as a RFC 3339 timestamp).",
        },
        "status": {"type": "string", "enum": ["open", "done"]},
    },
}
NOTES = {
    "type": "object",
    "properties": {
        "kind": {"type": "string"},
        "items": {"type": "array", "items": {"$ref": "#/components/schemas/Note"}},
        "nextPageToken": {"type": "string"},
    },
}

LABEL = {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}
LABELS = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": {"$ref": "#/components/schemas/Label"}}},
}


def body(ref: str) -> dict:
    return {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}}


def answer(ref: str) -> dict:
    return {"200": {"description": "OK", **body(ref)}}


def path_parameters() -> list[dict]:
    return [{"$ref": f"#/components/parameters/{name}"} for name in STANDARD]


NOTE_ID = {"name": "note", "in": "path", "required": True, "schema": {"type": "string"}}
DOCUMENT = {
    "openapi": "3.0.0",
    "info": {"title": "Notebook API", "version": "v1"},
    "servers": [{"url": "https://notebook.example.com/"}],
    "components": {
        "parameters": {
            key: {"in": "query", "schema": {"type": "string"}, **value}
            for key, value in STANDARD.items()
        },
        "schemas": {"Note": NOTE, "Notes": NOTES, "Label": LABEL, "Labels": LABELS},
    },
    "paths": {
        "/notebook/v1/labels": {
            "parameters": path_parameters(),
            "get": {"operationId": "notebook.labels.list", "responses": answer("Labels")},
        },
        "/notebook/v1/notes": {
            "parameters": path_parameters(),
            "get": {"operationId": "notebook.notes.list", "responses": answer("Notes")},
            "post": {
                "operationId": "notebook.notes.insert",
                "requestBody": body("Note"),
                "responses": answer("Note"),
            },
        },
        "/notebook/v1/notes/{note}": {
            "parameters": path_parameters(),
            "get": {
                "operationId": "notebook.notes.get",
                "parameters": [NOTE_ID],
                "responses": answer("Note"),
            },
            "put": {
                "operationId": "notebook.notes.update",
                "parameters": [NOTE_ID],
                "requestBody": body("Note"),
                "responses": answer("Note"),
            },
            "delete": {
                "operationId": "notebook.notes.delete",
                "parameters": [NOTE_ID],
                "responses": {"204": {"description": "Gone"}},
            },
        },
    },
}


@pytest.fixture(scope="module")
def pool():
    pool = SandboxPool(workers=1)
    yield pool
    pool.close()


def test_no_tool_takes_a_standard_parameter_and_each_says_why():
    theme = parse_theme_document(copy.deepcopy(DOCUMENT), "notebook.json")
    assert len(theme["tools"]) == 6
    for tool in theme["tools"]:
        assert WORDS.isdisjoint(tool["parameters"]["properties"]), tool["name"]
        notes = " ".join(tool["notes"])
        for credential in ("access_token", "oauth_token", "key"):
            assert f"query parameter {credential!r} is left out: it carries a credential" in notes
        assert (
            "query parameters '$.xgafv', 'alt', 'callback', 'fields', 'prettyPrint', "
            "'quotaUser', 'upload_protocol', 'uploadType' are left out: the document's "
            "standard parameters"
        ) in notes
    update = next(t for t in theme["tools"] if t["name"] == "notebook.notes.update")
    assert set(update["parameters"]["properties"]) == {"note", *NOTE["properties"]}
    left = " ".join(theme["provenance"]["left_out_parameters"])
    assert "'oauth_token' is left out" in left and "'quotaUser'" in left


def test_no_table_holds_a_standard_parameter():
    model = read_theme(parse_theme_document(copy.deepcopy(DOCUMENT), "notebook.json"))
    columns = {name for entity in model.entities.values() for name in entity.fields}
    assert WORDS.isdisjoint(columns), columns


def test_the_same_names_stay_parameters_where_the_document_gives_them_a_meaning():
    document = copy.deepcopy(DOCUMENT)
    del document["components"]["parameters"]
    for item in document["paths"].values():
        del item["parameters"]
    listing = document["paths"]["/notebook/v1/notes"]["get"]
    listing["parameters"] = [
        {"name": "fields", "in": "query", "schema": {"type": "string"}},
        {"name": "callback", "in": "query", "schema": {"type": "string", "format": "uri"}},
    ]
    getter = document["paths"]["/notebook/v1/notes/{note}"]["get"]
    getter["parameters"] = [NOTE_ID, {"name": "key", "in": "query", "schema": {"type": "string"}}]
    tools = {t["name"]: t for t in parse_theme_document(document, "notebook.json")["tools"]}
    assert {"fields", "callback"} <= set(tools["notebook.notes.list"]["parameters"]["properties"])
    assert "key" in tools["notebook.notes.get"]["parameters"]["properties"]
    assert not tools["notebook.notes.list"].get("notes")


def test_a_document_wide_parameter_its_schemas_name_is_data():
    document = copy.deepcopy(DOCUMENT)
    document["components"]["schemas"]["Note"]["properties"]["fields"] = {"type": "string"}
    tools = parse_theme_document(document, "notebook.json")["tools"]
    assert all("fields" in t["parameters"]["properties"] for t in tools)
    assert all("key" not in t["parameters"]["properties"] for t in tools)


def test_the_api_version_a_document_requires_is_no_parameter_and_the_tools_pass(tmp_path, pool):
    """Azure's documents require `api-version` on every operation (and storage's
    `x-ms-version` header): 319 of the directory's Azure documents were rejected for "the
    required parameter 'api-version' has no counterpart" before."""
    document = copy.deepcopy(DOCUMENT)
    version = {"name": "api-version", "in": "query", "required": True, "schema": {"type": "string"}}
    header = {"name": "x-ms-version", "in": "header", "required": True}
    for item in document["paths"].values():
        item["parameters"] = [*item["parameters"], version, header]
    theme = parse_theme_document(document, "notebook.json")
    for tool in theme["tools"]:
        assert {"api-version", "x-ms-version"}.isdisjoint(tool["parameters"]["properties"])
        assert "query parameter 'api-version' is left out: it names the version of the API" in (
            " ".join(tool["notes"])
        )
    model = read_theme(theme)
    assert not model.rejected, [p.rejected for p in model.rejected]
    db = build_theme_database(model, tmp_path / "notebook.sqlite", [], rows=8, seed="notebook")
    tools = implement_theme_tools(model, db["db_path"])
    contracts = run_contracts(tools, model, db["db_path"], "notebook", pool)
    assert all(c.passed for c in contracts.values()), {n: c.summary for n, c in contracts.items()}


def test_a_vendor_version_header_is_no_parameter_on_any_one_operation():
    """`carbone-version`, `Notion-Version`: a header that picks the API's version, required on
    a single operation as on all of them (Carbone's render tool could take no value before);
    one that names a row's version (an artifact's, `If-Version`) stays a parameter."""
    document = copy.deepcopy(DOCUMENT)
    get = document["paths"]["/notebook/v1/notes/{note}"]["get"]
    get["parameters"] = [
        NOTE_ID,
        {
            "name": "carbone-version",
            "in": "header",
            "required": True,
            "schema": {"type": "integer"},
        },
        {"name": "X-GitHub-Api-Version", "in": "header", "schema": {"type": "string"}},
        {
            "name": "X-Registry-Version",
            "in": "header",
            "schema": {"type": "string"},
            "description": "The version number of the artifact content.",
        },
        {"name": "If-Version", "in": "header", "schema": {"type": "integer"}},
    ]
    tools = {t["name"]: t for t in parse_theme_document(document, "notebook.json")["tools"]}
    properties = list(tools["notebook.notes.get"]["parameters"]["properties"])
    assert properties == ["note", "X-Registry-Version", "If-Version"]  # a row's versions
    notes = " ".join(tools["notebook.notes.get"]["notes"])
    assert "header parameter 'carbone-version' is left out: it names the version" in notes
    assert "header parameter 'X-GitHub-Api-Version' is left out" in notes


def test_a_dry_run_flag_is_no_parameter_in_the_query_or_the_body():
    """AWS's `DryRun` asks whether the caller may make the call without making it: offline no
    permission is checked, and a tool that took it would still write (202 EC2 tools refused
    it in the contract check before)."""
    document = copy.deepcopy(DOCUMENT)
    dry_run = {"name": "DryRun", "in": "query", "schema": {"type": "boolean"}}
    listing = document["paths"]["/notebook/v1/notes"]["get"]
    listing["parameters"] = [dry_run]
    insert = document["paths"]["/notebook/v1/notes"]["post"]
    insert["requestBody"] = {
        "content": {
            "application/x-www-form-urlencoded": {
                "schema": {
                    "type": "object",
                    "properties": {**NOTE["properties"], "DryRun": {"type": "boolean"}},
                }
            }
        }
    }
    tools = {t["name"]: t for t in parse_theme_document(document, "notebook.json")["tools"]}
    for name, where in (
        ("notebook.notes.list", "query parameter"),
        ("notebook.notes.insert", "field"),
    ):
        assert "DryRun" not in tools[name]["parameters"]["properties"]
        assert (
            f"{where} 'DryRun' is left out: it asks only whether the caller may make the call"
            in (" ".join(tools[name]["notes"]))
        )
    assert set(NOTE["properties"]) <= set(
        tools["notebook.notes.insert"]["parameters"]["properties"]
    )


def test_headers_sent_with_every_call_are_request_metadata_not_parameters():
    """Autotask sends `ApiIntegrationCode`, `UserName` and `Secret` headers on all 2,958
    operations: as required tool parameters no task could fill them from the data (its 101
    environments got no task). A header of one operation stays its parameter."""
    document = copy.deepcopy(DOCUMENT)
    sent = [
        {"name": n, "in": "header", "required": True, "schema": {"type": "string"}}
        for n in ("ApiIntegrationCode", "UserName", "Secret")
    ]
    for item in document["paths"].values():
        item["parameters"] = [*item["parameters"], *sent]
    getter = document["paths"]["/notebook/v1/notes/{note}"]["get"]
    getter["parameters"] = [*getter["parameters"], {"name": "If-None-Match", "in": "header"}]
    tools = {t["name"]: t for t in parse_theme_document(document, "notebook.json")["tools"]}
    for tool in tools.values():
        assert {"ApiIntegrationCode", "UserName", "Secret"}.isdisjoint(
            tool["parameters"]["properties"]
        )
        assert "header 'Secret' is left out: the document sends it with every call" in (
            " ".join(tool["notes"])
        )
    assert "If-None-Match" in tools["notebook.notes.get"]["parameters"]["properties"]


def test_the_tools_pass_the_document_contract_with_dates_where_dates_belong(tmp_path, pool):
    model = read_theme(parse_theme_document(copy.deepcopy(DOCUMENT), "notebook.json"))
    db = build_theme_database(model, tmp_path / "notebook.sqlite", [], rows=8, seed="notebook")
    tools = implement_theme_tools(model, db["db_path"])
    contracts = run_contracts(tools, model, db["db_path"], "notebook", pool)
    assert {n: c.passed for n, c in contracts.items()} == dict.fromkeys(tools.names(), True), {
        n: c.summary for n, c in contracts.items()
    }
    conn = sqlite3.connect(db["db_path"])
    for due, updated in conn.execute("SELECT due, updated FROM notes"):
        assert due is None or due[:4].isdigit() and due[4] == "-", due
        assert updated is None or updated[:4].isdigit() and updated[4] == "-", updated


def lists_document() -> dict:
    """A notes service in Google's shape: `notes.notelists.*` on `/users/@me/lists/{notelist}`
    answer NoteList, `notes.notes.*` on `/lists/{notelist}/notes/{note}` answer Note, and
    `NoteLists` / `Notes` are their list envelopes."""
    document = copy.deepcopy(DOCUMENT)
    lists = {
        "type": "object",
        "properties": {"id": {"type": "string"}, "title": {"type": "string"}},
    }
    schemas = document["components"]["schemas"]
    schemas.pop("Label"), schemas.pop("Labels")
    schemas["NoteList"] = lists
    schemas["NoteLists"] = {
        "type": "object",
        "properties": {
            "kind": {"type": "string"},
            "items": {"type": "array", "items": {"$ref": "#/components/schemas/NoteList"}},
            "nextPageToken": {"type": "string"},
        },
    }
    notelist = {"name": "notelist", "in": "path", "required": True, "schema": {"type": "string"}}

    def operation(name: str, answers: str, **more: Any) -> dict:
        return {"operationId": f"notes.{name}", "responses": answer(answers), **more}

    document["paths"] = {
        "/notes/v1/users/@me/lists": {
            "get": operation("notelists.list", "NoteLists"),
            "post": operation("notelists.insert", "NoteList", requestBody=body("NoteList")),
        },
        "/notes/v1/users/@me/lists/{notelist}": {
            "parameters": [notelist],
            "get": operation("notelists.get", "NoteList"),
            "delete": {"operationId": "notes.notelists.delete", "responses": {"204": {}}},
        },
        "/notes/v1/lists/{notelist}/notes": {
            "parameters": [notelist],
            "get": operation("notes.list", "Notes"),
            "post": operation("notes.insert", "Note", requestBody=body("Note")),
        },
        "/notes/v1/lists/{notelist}/notes/{note}": {
            "parameters": [notelist, NOTE_ID],
            "get": operation("notes.get", "Note"),
            "put": operation("notes.update", "Note", requestBody=body("Note")),
        },
    }
    return document


def test_a_service_resource_method_name_works_on_the_resource_it_names():
    model = read_theme(parse_theme_document(lists_document(), "notes.json"))
    entities = {plan.name: plan.entity for plan in model.plans if not plan.rejected}
    assert entities == {
        "notes_notelists_list": "note_list",
        "notes_notelists_insert": "note_list",
        "notes_notelists_get": "note_list",
        "notes_notelists_delete": "note_list",
        "notes_notes_list": "note",
        "notes_notes_insert": "note",
        "notes_notes_get": "note",
        "notes_notes_update": "note",
    }
    operations = {plan.name: plan.operation for plan in model.plans}
    assert operations["notes_notes_insert"] == "create"
    assert operations["notes_notelists_delete"] == "delete"
    # the list envelopes are no rows: their paging is in no table
    assert set(model.entities["note"].fields) == {*NOTE["properties"], "notelist"}
    assert set(model.entities["note_list"].fields) == {"id", "title"}
    assert model.entities["note"].fields["notelist"].ref == "note_list"


@pytest.mark.parametrize(
    "description, kind",
    [
        ("Due date of the task (as a RFC 3339 timestamp). Optional.", "datetime"),
        ("Last modification time (RFC3339).", "datetime"),
        ("Birth date in ISO 8601 format (YYYY-MM-DD).", "date"),
        ("How long the loan runs, an ISO 8601 duration.", ""),
        ("Due date of the task.", ""),
    ],
)
def test_a_date_documented_in_words_is_a_date(description, kind):
    assert documented_date(description) == kind


def test_odata_select_and_expand_shape_the_answer_and_no_table_holds_them():
    """Azure's list operations take OData's `$select` and `$expand`: which properties an
    answer shows. They were columns before ("the inputs whose $select is "*""); they are
    accepted and change nothing, as `fields` is."""
    document = copy.deepcopy(DOCUMENT)
    odata = [
        {"name": "$select", "in": "query", "schema": {"type": "string"}},
        {"name": "$expand", "in": "query", "schema": {"type": "string"}},
    ]
    document["paths"]["/notebook/v1/notes"]["get"]["parameters"] = odata
    document["paths"]["/notebook/v1/notes/{note}"]["get"]["parameters"] = [NOTE_ID, *odata]
    theme = parse_theme_document(document, "notebook.json")
    model = read_theme(theme)
    columns = {name for entity in model.entities.values() for name in entity.fields}
    assert {"$select", "$expand"}.isdisjoint(columns), columns
    plans = {plan.name: plan for plan in model.plans}
    for name in ("notebook_notes_list", "notebook_notes_get"):
        assert plans[name].bindings["$select"] == ["ignored"], plans[name].bindings
        assert plans[name].bindings["$expand"] == ["ignored"], plans[name].bindings


def test_an_api_secret_in_the_query_is_a_credential_and_current_page_pages():
    """Vonage sends `api_key` and `api_secret` in the query ("the account balance whose api
    secret is ..." was a task); Bungie pages with `currentpage` (it was a column)."""
    document = copy.deepcopy(DOCUMENT)
    document["paths"]["/notebook/v1/notes"]["get"]["parameters"] = [
        {"name": "api_secret", "in": "query", "required": True, "schema": {"type": "string"}},
        {"name": "currentpage", "in": "query", "schema": {"type": "integer"}},
    ]
    theme = parse_theme_document(document, "notebook.json")
    listing = next(t for t in theme["tools"] if t["name"] == "notebook.notes.list")
    assert list(listing["parameters"]["properties"]) == ["currentpage"]
    assert "query parameter 'api_secret' is left out: it carries a credential" in " ".join(
        listing["notes"]
    )
    plan = next(p for p in read_theme(theme).plans if p.name == "notebook_notes_list")
    assert plan.bindings["currentpage"] == ["page"], plan.bindings
