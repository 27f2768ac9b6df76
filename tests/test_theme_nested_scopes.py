"""A resource of an Azure-shaped document lives under several path scopes (subscription,
resource group, streaming job) and is named by a path parameter beside its body's `name`. Its
rows must hold one name in both columns, the arguments of a read must come from one row, and a
task must not ask back the name it gave: before, drawn one by one, the scopes never met on a
row, and 385 published directory environments got no goal task."""

from __future__ import annotations

import random
import re
import sqlite3
from pathlib import Path

import pytest

from environments.builder.theme_model import EntitySpec, FieldSpec, mirrored_columns
from environments.models import Environment
from tasks.service import SynthesisAccount, synthesize_tasks
from tasks.synthesis.answers import other_answers
from tasks.synthesis.arguments import sample_arguments, write_arguments
from tasks.synthesis.environment_view import EnvironmentView
from tasks.synthesis.graph_tasks import another_answer, asks_back
from tasks.synthesis.tool_graph import ParamInfo, ToolNode, build_nodes
from tests.support.theme_builds import verified
from tests.test_theme_operation_groups import answer


def stream_jobs_document() -> dict:
    """Swagger 2.0 in the shape of an Azure resource provider: a transformation lives under a
    subscription, a resource group and a streaming job, each a path segment every operation
    takes, and its name is a path parameter with a pattern while its body has a `name` too."""
    base = (
        "/subscriptions/{subscriptionId}/resourcegroups/{resourceGroupName}/providers/"
        "Microsoft.Contoso/streamingjobs/{jobName}/transformations"
    )
    scope = [
        {"$ref": "#/parameters/SubscriptionIdParameter"},
        {"name": "resourceGroupName", "in": "path", "required": True, "type": "string"},
        {"name": "jobName", "in": "path", "required": True, "type": "string"},
        {"$ref": "#/parameters/ApiVersionParameter"},
    ]
    name = {
        "name": "transformationName",
        "in": "path",
        "required": True,
        "type": "string",
        "pattern": "^[a-z][a-z0-9]{3,11}$",
    }
    one = {"200": {"description": "OK", "schema": {"$ref": "#/definitions/Transformation"}}}
    return {
        "swagger": "2.0",
        "info": {"title": "StreamAnalyticsManagementClient", "version": "2016-03-01"},
        "host": "management.azure.com",
        "paths": {
            base: {
                "get": {
                    "operationId": "Transformations_ListByStreamingJob",
                    "description": "Lists the transformations under the specified streaming job.",
                    "parameters": scope,
                    "responses": {
                        "200": {
                            "description": "OK",
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "value": {
                                        "type": "array",
                                        "items": {"$ref": "#/definitions/Transformation"},
                                    }
                                },
                            },
                        }
                    },
                }
            },
            base + "/{transformationName}": {
                "get": {
                    "operationId": "Transformations_Get",
                    "description": "Gets details about the specified transformation.",
                    "parameters": [*scope, name],
                    "responses": one,
                },
                "put": {
                    "operationId": "Transformations_CreateOrReplace",
                    "description": "Creates a transformation or replaces an existing one.",
                    "parameters": [
                        *scope,
                        name,
                        {
                            "name": "transformation",
                            "in": "body",
                            "required": True,
                            "schema": {"$ref": "#/definitions/Transformation"},
                        },
                    ],
                    "responses": one,
                },
                "delete": {
                    "operationId": "Transformations_Delete",
                    "description": "Deletes a transformation.",
                    "parameters": [*scope, name],
                    "responses": {"200": {"description": "OK"}},
                },
            },
        },
        "parameters": {
            "SubscriptionIdParameter": {
                "name": "subscriptionId",
                "in": "path",
                "required": True,
                "type": "string",
            },
            "ApiVersionParameter": {
                "name": "api-version",
                "in": "query",
                "required": True,
                "type": "string",
            },
        },
        "definitions": {
            "Transformation": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "readOnly": True},
                    "name": {"type": "string"},
                    "type": {"type": "string", "readOnly": True},
                    "properties": {
                        "type": "object",
                        "properties": {
                            "streamingUnits": {"type": "integer", "minimum": 1, "maximum": 48},
                            "query": {"type": "string"},
                        },
                    },
                },
            }
        },
    }


@pytest.fixture
def stream_jobs(settings, tmp_path) -> Environment:
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    return verified(stream_jobs_document(), "streamjobs.json", name="streamjobs")


def _rows(environment: Environment) -> list[dict]:
    with sqlite3.connect(Path(environment.package_path) / "state.sqlite") as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute("SELECT * FROM transformations")]


@pytest.mark.django_db(transaction=True)
def test_a_row_holds_one_name_where_the_document_spells_it_twice(stream_jobs):
    rows = _rows(stream_jobs)
    assert len(rows) >= 5
    for row in rows:
        assert row["name"] == row["transformationName"], row
        assert "transformation" not in row["resourceGroupName"], row  # a group's own name
        assert row["jobName"].split()[1:2] == ["job"], row


@pytest.mark.django_db(transaction=True)
def test_the_scopes_of_a_read_come_from_one_row(stream_jobs):
    view = EnvironmentView(stream_jobs.package_path)
    nodes = build_nodes(view)
    rows = _rows(stream_jobs)
    scopes = ("subscriptionId", "resourceGroupName", "jobName")
    for tool in ("Transformations_Get", "Transformations_ListByStreamingJob"):
        for seed in range(10):
            arguments = sample_arguments(view, nodes[tool], random.Random(seed))
            assert arguments is not None
            assert any(all(row[s] == arguments[s] for s in scopes) for row in rows), arguments
            if "transformationName" in arguments:
                found = [r for r in rows if r["name"] == arguments["transformationName"]]
                assert found and all(found[0][s] == arguments[s] for s in scopes)


@pytest.mark.django_db(transaction=True)
def test_an_environment_of_nested_scopes_gets_five_audited_goal_tasks(stream_jobs):
    account = SynthesisAccount()
    created = synthesize_tasks(stream_jobs, tier="goal", count=5, account=account)
    assert len(created) >= 5, account.to_dict()
    for task in created:
        assert task.audit["passed"], task.audit
        named = re.search(
            r'(resource group|job) name is "\w+ transformation \d+"', task.instruction
        )
        assert named is None, task.instruction  # a group or a job is not named as a transformation


def test_a_row_found_by_its_name_is_asked_what_the_text_does_not_give():
    """Found by its name, the row is asked another field, never one the text already gives:
    by its column (`name`), by its value (the mirror column `transformationName`), or by a
    status filter's value."""
    result = {"id": "jade-1", "name": "edbfem1", "transformationName": "edbfem1",
              "jobName": "Jade job 1", "status": "active", "type": "primary"}  # fmt: skip

    def param(name: str, column: str, role: str = "key") -> ParamInfo:
        return ParamInfo(name, "string", True, role, column=("transformations", column))

    params = {"transformationName": param("transformationName", "name"),
              "jobName": param("jobName", "jobName", "value"),
              "status": param("status", "status", "enum")}  # fmt: skip
    nodes = {"Get": ToolNode("Get", "read", "get", "transformation", None, "Gets one.", params)}
    arguments = {"transformationName": "edbfem1", "jobName": "Jade job 1", "status": "active"}
    steps = [{"tool": "Get", "arguments": arguments, "inputs": {}, "result": result}]
    assert asks_back(steps, nodes, {"shape": "value", "field": "name"}, "edbfem1")
    assert asks_back(steps, nodes, {"shape": "value", "field": "status"}, "active")
    assert another_answer(steps, nodes) == ({"shape": "value", "field": "type"}, "primary")
    listed = {"value": [dict(result), {**result, "id": "quartz-2", "name": "zmrgwq"}]}
    assert asks_back(steps, nodes, {"shape": "list", "field": "jobName"}, ["Jade job 1"] * 2)
    assert ({"shape": "list", "field": "name"}, ["edbfem1", "zmrgwq"]) in other_answers(listed)
    everything_given = [{**steps[0], "result": {"name": "edbfem1", "jobName": "Jade job 1"}}]
    assert another_answer(everything_given, nodes) == (None, None)


def test_a_list_filter_asked_back_is_caught():
    """`_only`: the values a list filter took, asked back, are no answer."""
    params = {"ids": ParamInfo("ids", "array", True, "value", column=("genres", "name"))}
    nodes = {"Find": ToolNode("Find", "read", "search", "genre", None, "Finds.", params)}
    steps = [{"tool": "Find", "arguments": {"ids": ["jazz", "soul"]}, "inputs": {}}]
    spec = {"shape": "list", "field": "name"}
    assert asks_back(steps, nodes, spec, ["jazz", "soul"])
    assert asks_back(steps, nodes, spec, ["soul"])
    assert not asks_back(steps, nodes, spec, ["jazz", "funk"])


@pytest.mark.django_db(transaction=True)
def test_a_delete_names_the_scopes_of_the_row_it_removes(stream_jobs):
    """An update or delete finds its row by its scopes as well as its name: they are the row's
    own values (a fresh resource group would find nothing to delete)."""
    view = EnvironmentView(stream_jobs.package_path)
    node = build_nodes(view)["Transformations_Delete"]
    rows = {row["name"]: row for row in _rows(stream_jobs)}
    for seed in range(10):
        arguments = write_arguments(view, node, random.Random(seed))
        assert arguments is not None
        row = rows[arguments["transformationName"]]
        for scope in ("subscriptionId", "resourceGroupName", "jobName"):
            assert arguments[scope] == row[scope], (arguments, row)


def test_only_a_key_spelled_twice_is_one_value():
    """`transformationName` (the key) and `name` name one row; a user's `user_name` and `name`
    (keyed by `id`) are two names and keep their own values."""
    transformation = EntitySpec("transformation", key="transformationName")
    user = EntitySpec("user", key="id")
    for entity, names in ((transformation, ("transformationName", "name", "type")),
                          (user, ("id", "user_name", "name", "user_type", "type"))):  # fmt: skip
        for name in names:
            entity.add(FieldSpec(name))
    assert mirrored_columns(transformation) == {"transformationName": "name"}
    assert mirrored_columns(user) == {}


@pytest.mark.django_db(transaction=True)
def test_a_write_sends_a_required_enum_and_lists_as_lists(settings, tmp_path):
    """A document of POSTs only (India's API Setu certificates): a required `format` the
    document fixes to one value (no column holds it) blocked every write, so no task could
    start; a list a row holds was sent as
    its JSON text with " II" appended."""
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    certificate = {
        "type": "object",
        "required": ["txnId", "format"],
        "properties": {
            "txnId": {"type": "string"},
            "format": {"type": "string", "enum": ["pdf"]},  # what the document fixes
            "holder": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["red", "blue"]}},
        },
    }
    document = {
        "openapi": "3.0.3",
        "info": {"title": "Certificate Desk", "version": "3.0.0"},
        "paths": {
            "/certificates": {
                "post": {
                    "operationId": "pullCertificate",
                    "summary": "Create a certificate",
                    "requestBody": {"required": True, "content": {"application/json": {
                        "schema": certificate}}},
                    "responses": answer(certificate),
                }
            }
        },
    }  # fmt: skip
    environment = verified(document, "certificates.json", name="certificates", min_tools=1)
    view = EnvironmentView(environment.package_path)
    node = build_nodes(view)["pullCertificate"]
    for seed in range(8):
        arguments = write_arguments(view, node, random.Random(seed))
        assert arguments is not None and arguments["format"] == "pdf", arguments
        if "tags" in arguments:
            assert isinstance(arguments["tags"], list), arguments
            assert set(arguments["tags"]) <= {"red", "blue"}, arguments
