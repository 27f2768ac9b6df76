"""Theme builds from real-world OpenAPI shapes never crash and name every tool validly.

The documents (tests/support/openapi_documents.py) are small and written for these tests: the
same API as Swagger 2.0, OpenAPI 3.0 and 3.1; one holding every trap real documents set
(operationIds with `/` and `.`, a path `name` meeting a body `Name`, a recursive schema, an
ECMA-only pattern, an entity without an id, int64-breaking bounds, `allOf` and shared
`$ref`s); and two APIs titled alike but served from different hosts.
"""

from __future__ import annotations

import copy
import re
import sqlite3
from pathlib import Path

import pytest
from django.urls import reverse

from environments.builder.request import BuildRequest
from environments.builder.stages import BuildFailed
from environments.builder.theme_pipeline import run_theme_pipeline
from environments.discovery.themes import parse_theme_document
from environments.json_schemas import schema_error
from environments.tool_names import function_name, function_names
from tests.support import openapi_documents as docs
from tests.support.theme_builds import build

CALLABLE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@pytest.fixture
def storage(settings, tmp_path):
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    return settings.STORAGE_ROOT


# --- names -------------------------------------------------------------------------------------


def test_every_name_becomes_a_callable_unique_name_deterministically():
    originals = [
        "repos/get-content",
        "apps.list",
        "repos_get_content",  # valid: keeps its name; the slashed one gives way
        "get-stations",
        "2fa.verify",
        "x" * 80 + "/list",
        "x" * 80 + "/get",
        "",
        "apps.list",  # the same operation twice
    ]
    names = function_names(originals)
    assert all(CALLABLE.match(n) and n[0].isalpha() for n in names), names
    assert len(set(names)) == len(names)
    assert names[1] == "apps_list" and names[3] == "get-stations"
    assert names[2] == "repos_get_content" and names[0].startswith("repos_get_content_")
    assert len(names[5]) <= 64 and names[5] != names[6]
    assert names == function_names(originals)  # the same document names its tools the same
    assert function_name("repos/get-content") == "repos_get_content"
    assert function_name("2fa.verify") == "op_2fa_verify"


# --- formats -----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "document", [docs.SWAGGER_20, docs.OPENAPI_30, docs.OPENAPI_31], ids=["2.0", "3.0", "3.1"]
)
def test_swagger_2_openapi_3_0_and_3_1_documents_each_build(storage, document):
    environment = build(document, "books.json")
    assert environment.status == "verified", environment.failure_reason
    names = set(environment.tools.values_list("name", flat=True))
    assert {"listBooks", "createBook", "getBook", "deleteBook"} <= names
    create = environment.tools.get(name="createBook").schema["function"]["parameters"]
    assert {"title", "genre", "pages"} <= set(create["properties"])  # the body's fields
    assert create["required"] == ["title"]
    assert environment.theme.provenance["identity"]["provider"] == "books.example.org"


@pytest.mark.django_db(transaction=True)
def test_older_draft_bounds_and_unreadable_keywords_never_fail_the_build(storage):
    """Azure's and App Center's documents write draft 4's `exclusiveMinimum: true` and
    api.video's a `pattern: 0`: the whole document was rejected at packaging with a
    meta-schema trace. Now the bound is respelled, the unreadable keyword dropped with a note."""
    document = copy.deepcopy(docs.OPENAPI_30)
    book = document["components"]["schemas"]["Book"]["properties"]
    book["pages"].update({"exclusiveMinimum": True, "exclusiveMaximum": False})
    book["genre"]["pattern"] = 0
    environment = build(document, "books.json")
    assert environment.status == "verified", environment.failure_reason
    create = environment.tools.get(name="createBook")
    parameters = create.schema["function"]["parameters"]
    assert schema_error(parameters) is None
    pages = parameters["properties"]["pages"]
    assert pages.get("exclusiveMinimum") == 1 and "minimum" not in pages
    assert pages.get("maximum") == 2000 and "exclusiveMaximum" not in pages
    assert "pattern" not in parameters["properties"]["genre"]
    assert "genre.pattern (0) is not valid JSON Schema" in create.schema["function"]["description"]


# --- every trap at once ------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_document_full_of_traps_builds_with_valid_names_and_notes(
    storage, client, reviewer, reviewer_api
):
    environment = build(docs.hard_document(), "archive.json", name="archive")
    assert environment.status == "verified", environment.failure_reason
    manifest = environment.manifest
    originals = manifest["original_names"]
    names = list(environment.tools.values_list("name", flat=True))
    assert all(CALLABLE.match(n) for n in names) and len(set(names)) == len(names)
    assert originals["folders_get_folder"] == "folders/get-folder"
    assert originals["folders_list"] == "folders.list"
    assert {"folders_create", "folders_update", "counters_create", "counters_list"} <= set(names)
    described = environment.tools.get(name="folders_get_folder").schema["function"]
    assert "folders/get-folder" in described["description"]
    # the ECMA-only pattern is dropped from its parameter only, and the tool says so
    update = environment.tools.get(name="folders_update").schema["function"]
    assert "pattern" not in update["parameters"]["properties"]["label"]
    assert "not checked" in update["description"]
    assert any("\\p{L}" in n for n in manifest["tool_notes"]["folders_update"])
    # path `name` and body `Name` are one column; counters have no id: a surrogate key
    state = sqlite3.connect(Path(environment.package_path) / "state.sqlite")
    folder_columns = [r[1].lower() for r in state.execute("PRAGMA table_info(folders)")]
    assert folder_columns.count("name") == 1
    counter_columns = {r[1]: r for r in state.execute("PRAGMA table_info(counters)")}
    assert counter_columns["id"][5] == 1  # the primary key the document never names
    values = [v for (v,) in state.execute("SELECT value FROM counters")]
    assert values and all(-(2**63) <= v < 2**63 for v in values)
    # the console lists each renamed tool with the name its document gives it
    client.force_login(reviewer)
    page = client.get(reverse("environment-tab", args=[environment.pk, "tools"])).content
    assert b"data-original-name" in page and b"folders/get-folder" in page
    # an integer SQLite cannot hold is a tool error in words, not a crash
    episode = reviewer_api.post("/api/episodes/", {"environment": environment.pk}, format="json")
    assert episode.status_code == 201, episode.content
    called = reviewer_api.post(
        f"/api/episodes/{episode.json()['episode']}/call/",
        {"tool": "counters_create", "arguments": {"kind": "hits", "value": 2**70}},
        format="json",
    ).json()
    assert called["ok"] is False and "too large" in called["error"], called
    assert "OverflowError" not in called["error"]


@pytest.mark.django_db(transaction=True)
def test_a_crash_in_a_theme_stage_names_the_stage_and_the_theme(tmp_path, monkeypatch):
    def broken(model, db_path):
        raise KeyError("id")

    monkeypatch.setattr("environments.builder.theme_pipeline.implement_theme_tools", broken)
    theme = parse_theme_document(docs.OPENAPI_30, "books.json")
    request = BuildRequest.create(origin="theme", theme=1, name="books")
    with pytest.raises(BuildFailed) as failed:
        run_theme_pipeline(request, theme, root=tmp_path / "packages", workdir=tmp_path)
    message = str(failed.value)
    assert failed.value.stage == "tools"
    assert message.startswith("tools stage failed: KeyError")
    assert "'Book Shop'" in message and "books.json" in message
    assert "at test_openapi_robustness.py:" in message  # the line that raised


@pytest.mark.django_db(transaction=True)
def test_a_tool_whose_tests_crash_falls_alone(tmp_path, monkeypatch):
    from environments.builder import theme_tools

    real = theme_tools._Tests.build

    def build_tests(self):
        if self.plan.name == "getBook":
            raise KeyError("id")
        return real(self)

    monkeypatch.setattr(theme_tools._Tests, "build", build_tests)
    theme = parse_theme_document(docs.OPENAPI_30, "books.json")
    request = BuildRequest.create(origin="theme", theme=1, name="books")
    outcome = run_theme_pipeline(request, theme, root=tmp_path / "packages", workdir=tmp_path)
    rejected = {r["name"]: r["reason"] for r in outcome.report["rejected_tools"]}
    assert "could not be implemented" in rejected["getBook"] and "KeyError" in rejected["getBook"]
    assert {"listBooks", "createBook", "deleteBook"} <= set(outcome.report["verified_tools"])


# --- identity ----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_same_title_other_host_is_another_environment_and_the_same_document_a_new_version(
    storage,
):
    first = build(docs.OPENAPI_30, "books.json")
    again = build(docs.OPENAPI_30, "books-again.json")
    other = build(docs.same_title_other_host(), "other-books.json")
    assert first.status == again.status == other.status == "verified"
    assert first.name == again.name and (first.version, again.version) == (1, 2)
    assert other.name != first.name and other.version == 1
    assert "other_books_test" in other.name


@pytest.mark.django_db(transaction=True)
def test_mcp_lists_the_documents_own_names_where_mcp_allows_them(storage):
    import anyio
    from mcp import Client

    from environments.package import load_package
    from serving.mcp_server import build_server

    environment = build(docs.hard_document(), "archive.json", name="archive")
    server = build_server(load_package(environment.package_path))

    async def session():
        async with Client(server) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"folders.list", "counters.list", "folders.update"} <= names  # MCP allows "."
            assert "folders_get_folder" in names and "folders/get-folder" not in names
            listed = await client.call_tool("folders.list", {})
            assert not listed.is_error, listed.content

    anyio.run(session)


@pytest.mark.django_db(transaction=True)
def test_importing_same_titled_apis_keeps_them_apart_and_marks_a_reimport(storage):
    from django.db import transaction

    from aw_site.jobs import enqueue
    from aw_site.models import Job
    from environments.models import Theme
    from tests.support.worker import wait_for

    documents = [docs.OPENAPI_30, docs.same_title_other_host(), docs.OPENAPI_30]
    with transaction.atomic():
        job = enqueue("environments.import_themes", {"documents": documents})
    wait_for(lambda: Job.objects.get(pk=job.pk).is_finished, timeout=120, message="import")
    assert Job.objects.get(pk=job.pk).state == "succeeded"
    first, other, again = Theme.objects.order_by("pk")
    assert first.name == again.name != other.name
    assert other.duplicate_of is None  # same title, another provider: its own theme
    assert again.duplicate_of == first  # the same document imported twice
    assert first.provenance["identity"] == {
        "provider": "books.example.org",
        "service": "Book Shop",
        "version": "1.0.0",
        "key": "books.example.org:Book Shop/1.0.0",
    }


# --- generated rows ----------------------------------------------------------------------------


def test_generated_rows_keep_foreign_keys_whatever_the_reference_column_says(tmp_path):
    from environments.builder.theme_data import build_theme_database
    from environments.builder.theme_model import FieldSpec, ThemeModel
    from environments.builder.theme_plans import choose_key

    model = ThemeModel("tracker")
    kind = model.entity("issue_type")
    kind.add(FieldSpec("id", "integer"))
    kind.add(FieldSpec("label", "string"))
    kind.key = "id"
    issue = model.entity("issue")
    issue.add(FieldSpec("number", "integer"))
    issue.add(FieldSpec("issue_type", "string", ref="issue_type", required=True))  # says text
    issue.add(FieldSpec("locked", "boolean"))
    issue.key = "locked"  # a document's "key" that repeats itself: never kept as the key
    choose_key(issue)
    assert issue.key != "locked"
    db = build_theme_database(model, tmp_path / "tracker.sqlite", rows=8, seed="t")
    conn = sqlite3.connect(db["db_path"])
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    types = conn.execute("SELECT DISTINCT typeof(issue_type) FROM issues").fetchall()
    assert types == [("integer",)]  # the target key's type, so the link holds
    assert conn.execute(f"SELECT COUNT(DISTINCT {issue.key}) FROM issues").fetchone()[0] == 8


def test_a_document_without_a_title_is_named_by_its_directory_identity():
    document = {**docs.OPENAPI_30, "servers": [{"url": "//api.ote-shop.test"}]}
    document["info"] = {"title": "", "version": "1.0.0", "x-serviceName": "agreements"}
    theme = parse_theme_document(document, "agreements.json")
    assert theme["title"] == "agreements api.ote-shop.test"
    assert theme["provenance"]["identity"]["key"] == "api.ote-shop.test:agreements/1.0.0"
    assert theme["name"] == "agreements_api_ote_shop_test_1_0_0"


def test_two_names_of_one_noun_are_one_table(tmp_path):
    """`Data` and `Datum` (the directory's idealspot-geodata) pluralize to one table: they are
    one entity, not `table "data" already exists` in the ingest stage."""
    from environments.builder.theme_data import build_theme_database
    from environments.builder.theme_reading import read_theme

    def read(path: str, schema: str, key: str) -> dict:
        ref = {"$ref": f"#/components/schemas/{schema}"}
        return {
            "get": {
                "operationId": f"get{schema}",
                "parameters": [{"name": key, "in": "path", "required": True,
                                "schema": {"type": "string"}}],
                "responses": {"200": {"description": "ok",
                                      "content": {"application/json": {"schema": ref}}}},
            }
        }  # fmt: skip

    fields = {
        "type": "object",
        "properties": {"id": {"type": "string"}, "value": {"type": "number"}},
    }
    document = {
        "openapi": "3.0.3",
        "info": {"title": "Geodata", "version": "1"},
        "paths": {"/data/{id}": read("/data/{id}", "Data", "id"),
                  "/datum/{id}": read("/datum/{id}", "Datum", "id")},
        "components": {"schemas": {"Data": fields, "Datum": fields}},
    }  # fmt: skip
    model = read_theme(parse_theme_document(document, "geodata.json"))
    tables = [entity.table.lower() for entity in model.entities.values()]
    assert len(tables) == len(set(tables)) and "data" in tables
    assert all(p.entity in model.entities for p in model.implementable)
    built = build_theme_database(model, tmp_path / "geo.sqlite", [], rows=5, seed="geo")
    assert Path(built["db_path"]).is_file()


def test_a_pattern_re_could_take_exponential_time_on_is_not_run():
    """beezup.com's URL pattern nests one unbounded repetition in another: `re` took minutes
    on a value that almost matched, holding a catalogue build. Such a pattern is left out of
    the parameters (with a note), of the rows' generation and of response checks; a nested
    repetition whose turns end at a separator (`([a-z]+\\.)*`) is safe and kept."""
    from environments.builder.theme_model import field_from_schema
    from environments.builder.theme_schemas import checkable_schema, unbounded_pattern
    from environments.builder.theme_values import json_schema, valid

    url = r"^(https?:\/\/)?([\da-z\.-]+)\.([a-z\.]{2,6})([\/\w \.-]*)*\/?$"
    host = r"^([a-z]+\.)*[a-z]+$"
    assert unbounded_pattern(url) and unbounded_pattern(r"(a+)+$")
    assert not unbounded_pattern(host) and not unbounded_pattern(r"^[A-Z]{3}$")
    notes: list[str] = []
    schema = {"type": "object", "properties": {"site": {"type": "string", "pattern": url}}}
    assert "pattern" not in checkable_schema(schema, notes)["properties"]["site"]
    assert "runs in bounded time" in notes[0]
    assert field_from_schema("site", {"type": "string", "pattern": url}).pattern == ""
    assert field_from_schema("host", {"type": "string", "pattern": host}).pattern == host
    assert "pattern" not in json_schema({"type": "string", "pattern": url})
    near_miss = "http://" + "a" * 40 + ".com/" + "x" * 40 + "!"
    assert valid(near_miss, {"type": "string", "pattern": url})  # answers at once, not checked
    assert not valid("HOST", {"type": "string", "pattern": host})


def test_property_names_and_types_no_column_can_hold_never_fail_the_rows(tmp_path):
    """Three directory documents ended in an internal error while their rows were written:
    ClearBlade names a property `"` (CREATE TABLE broke), Codat's schema holds a property named
    `type` whose schema sat where a JSON type belongs (`unhashable type: 'dict'`), Apacta
    gives a list as the example of a string (`type 'list' is not supported`)."""
    from environments.builder.theme_contract import _field_problem
    from environments.builder.theme_data import _store, build_theme_database
    from environments.builder.theme_model import FieldSpec, field_from_schema
    from environments.builder.theme_reading import read_theme

    document = copy.deepcopy(docs.OPENAPI_30)
    book = document["components"]["schemas"]["Book"]["properties"]
    book['"'] = {"type": "string"}
    book[""] = {"type": "string"}
    book["shape"] = {"type": {"type": "string", "enum": ["round"]}}
    model = read_theme(parse_theme_document(document, "books.json"))
    fields = model.entities["book"].fields
    assert '"' not in fields and "" not in fields
    assert fields["shape"].type == "string"
    db = build_theme_database(model, tmp_path / "books.sqlite", [], rows=6, seed="books")
    with sqlite3.connect(db["db_path"]) as conn:
        assert conn.execute('SELECT count(*) FROM "books"').fetchone()[0] == 6
    text = FieldSpec(name="tags", type="string")  # Apacta: a list where a string belongs
    assert _store(["a", "b"], text) == '["a", "b"]'
    # WorkBC: `type: integer` with `enum: ["Full-Time", ...]` was an INTEGER key given text
    kinds = field_from_schema("ID", {"type": "integer", "enum": ["Full-Time", "Part-Time"]})
    assert (kinds.type, kinds.enum) == ("string", ["Full-Time", "Part-Time"])
    # Apacta: an enum whose values are lists was checked with a set (unhashable)
    listed = FieldSpec(name="pair", type="string", enum=[["a", "b"], "c"])
    assert _field_problem(listed, "c", {}) == ""
    assert _field_problem(listed, "z", {}).startswith("not among the document's values")


def test_a_property_without_a_schema_is_left_out_not_the_build():
    """Vercel's `updateRecord` body lists `additionalProperties: false` among its properties:
    "parameters.properties must map names to schema objects" failed the whole part."""
    from environments.builder.theme_schemas import checkable_schema, readable_schema

    notes: list[str] = []
    schema = {
        "type": "object",
        "required": ["name", "additionalProperties"],
        "properties": {"name": {"type": "string"}, "additionalProperties": False, "any": True},
    }
    checked = readable_schema(checkable_schema(schema, notes), notes)
    assert checked["properties"] == {"name": {"type": "string"}, "any": {}}
    assert checked["required"] == ["name"]
    assert notes == ["parameter 'additionalProperties' has no schema (False); it is left out"]


def test_parameters_declared_after_wide_answers_are_still_read():
    """A dereference writes at most REF_BUDGET nodes. Xero answers its three operations on
    `/Payments` with wide schemas and declares its required tenant header once for the path,
    after them: the budget was spent before the header and the later operations' own
    parameters were read, and they became `{"type": "object"}` (no name, no tool parameter).
    Parameters are dereferenced on a budget of their own."""
    wide = {
        "type": "object",
        "properties": {f"field{i}": {"type": "string", "description": "x"} for i in range(900)},
    }
    answer = {"200": {"description": "OK", "content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/Wide"}}}}}  # fmt: skip
    tenant = {"name": "tenant-id", "in": "header", "required": True, "schema": {"type": "string"}}
    own = {  # each operation's own query parameter
        method: [{"name": name, "in": "query", "schema": {"type": "string"}}]
        for method, name in (("get", "status"), ("put", "mode"), ("post", "note"))
    }
    document = {
        "openapi": "3.0.3",
        "info": {"title": "Ledger", "version": "1"},
        "components": {"schemas": {"Wide": wide}, "parameters": {"tenant": tenant}},
        "paths": {
            f"/{noun}": {
                **{
                    method: {
                        "operationId": f"{method}{noun}",
                        "parameters": own[method],
                        "responses": answer,
                    }
                    for method in own
                },
                "parameters": [{"$ref": "#/components/parameters/tenant"}],
            }
            for noun in ("Payments", "Invoices", "Accounts", "Contacts")
        },
    }
    theme = parse_theme_document(document, "ledger.json")
    assert len(theme["tools"]) == 12
    for tool in theme["tools"]:
        method = tool["http"]["method"].lower()
        assert list(tool["parameters"]["properties"]) == [own[method][0]["name"]], tool
        assert any("'tenant-id' is left out" in note for note in tool.get("notes", [])), tool
