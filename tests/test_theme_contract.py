"""Theme tools against their document: the contract check of `theme_contract`.

A correct tool passes; a delete implemented as a create, a tool that refuses a parameter its
schema advertises and a result that breaks the document's response schema are each rejected;
computations (`get-sum`, `echo`) are rejected at plan time with the reason while the entity
tools of the same server publish; the generated rows honour the document's enums and patterns.
"""

from __future__ import annotations

import json
import re
import shlex
import sqlite3
import sys
from dataclasses import replace
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from aw_site.models import Job
from environments.builder.theme_contract import check_rows, run_contracts
from environments.builder.theme_data import build_theme_database
from environments.builder.theme_reading import read_theme
from environments.builder.theme_tools import implement_theme_tools
from environments.discovery.themes import parse_theme_document
from environments.models import Environment
from environments.runtime import SandboxPool
from environments.themes_import import store_theme
from tests.support.worker import wait_for

WORD = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "word": {"type": "string", "pattern": "^[a-z]+$"},
        "definition": {"type": "string"},
        "register": {"type": "string", "enum": ["formal", "informal", "slang"]},
    },
    "required": ["id", "word", "definition", "register"],
}


def tool(name: str, description: str, properties: dict, required=(), output=None) -> dict:
    listed = {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties, "required": list(required)},
    }
    if output is not None:
        listed["outputSchema"] = output
    return listed


def dictionary_server(extra: list[dict] | None = None) -> dict:
    """An MCP tools/list answer of a dictionary server, written for these tests."""
    word_fields = {k: v for k, v in WORD["properties"].items() if k != "id"}
    tools = [
        tool(
            "list_words",
            "List the words of the dictionary",
            {"register": WORD["properties"]["register"], "limit": {"type": "integer"}},
            output={"type": "object", "properties": {"words": {"type": "array", "items": WORD}}},
        ),
        tool("get_word", "Get a word by its id", {"id": {"type": "integer"}}, ["id"], WORD),
        tool("add_word", "Add a word to the dictionary", word_fields, ["word", "definition"]),
        tool(
            "update_word",
            "Update the definition of a word",
            {"id": {"type": "integer"}, "definition": {"type": "string"}},
            ["id", "definition"],
        ),
        tool(
            "delete_word", "Remove a word from the dictionary", {"id": {"type": "integer"}}, ["id"]
        ),
        *(extra or []),
    ]
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"serverInfo": {"name": "dictionary"}, "tools": tools},
    }


# Tools that compute from their arguments: the offline builder rejects them with the reason.
GET_SUM = tool(
    "get-sum",
    "Returns the sum of two numbers",
    {"a": {"type": "number"}, "b": {"type": "number"}},
    ["a", "b"],
)
ECHO = tool("echo", "Echoes back the input", {"message": {"type": "string"}}, ["message"])


def theme_of(document: dict) -> dict:
    return parse_theme_document(document, "dictionary.json")


@pytest.fixture(scope="module")
def pool():
    pool = SandboxPool(workers=1)
    yield pool
    pool.close()


@pytest.fixture
def built(tmp_path):
    """The dictionary theme read, its database filled and its tools written."""
    model = read_theme(theme_of(dictionary_server()))
    db = build_theme_database(model, tmp_path / "dictionary.sqlite", [], rows=12, seed="dict")
    tools = implement_theme_tools(model, db["db_path"])
    return model, db["db_path"], tools


def only(tools, *names):
    kept = replace(tools, functions={n: tools.functions[n] for n in names})
    for attribute in ("schemas", "kinds", "tests", "origin"):
        setattr(kept, attribute, {n: getattr(tools, attribute)[n] for n in names})
    return kept


def test_a_correct_delete_passes_every_check(built, pool):
    model, db_path, tools = built
    contract = run_contracts(only(tools, "delete_word"), model, db_path, "dict", pool)[
        "delete_word"
    ]
    assert contract.passed, contract.summary
    assert contract.summary == (
        "document contract: parameters 1/1 accepted, effect: deletes the word named"
    )


def test_reads_writes_and_response_schemas_of_the_correct_tools_pass(built, pool):
    model, db_path, tools = built
    contracts = run_contracts(tools, model, db_path, "dict", pool)
    assert {n: c.passed for n, c in contracts.items()} == dict.fromkeys(tools.names(), True)
    assert "response schema valid" in contracts["get_word"].summary
    assert "parameters 2/2 accepted" in contracts["list_words"].summary
    assert "effect: creates one word" in contracts["add_word"].summary
    assert "effect: changes definition of the word named" in contracts["update_word"].summary


def test_a_delete_implemented_as_a_create_fails_the_effect_check(built, pool):
    model, db_path, tools = built
    wrong = only(tools, "delete_word")
    wrong.functions["delete_word"] = (  # "remove a word" that inserts one
        "def delete_word(db, **params):\n"
        '    db.execute("INSERT INTO words (word, definition, register) "\n'
        "               \"VALUES ('zzword', 'inserted', 'slang')\")\n"
        "    return {'success': True}\n"
    )
    contract = run_contracts(wrong, model, db_path, "dict", pool)["delete_word"]
    assert not contract.passed
    effect = next(c for c in contract.checks if c.name == "effect")
    assert not effect.passed
    assert effect.detail == "effect: 1 words row(s) added (delete of one word expected)"
    assert next(c for c in contract.checks if c.name == "parameters").passed


def test_a_create_plan_standing_in_for_a_delete_is_rejected(built, pool):
    model, db_path, tools = built
    delete = next(p for p in model.plans if p.name == "delete_word")
    create = next(p for p in model.plans if p.name == "add_word")
    wrong = replace(create, name="delete_word", parameters=delete.parameters)
    wrong.bindings = {"id": ["field", "id"]}
    wrong_tools = implement_theme_tools(replace(model, plans=[wrong]), db_path)
    contract = run_contracts(wrong_tools, model, db_path, "dict", pool)["delete_word"]
    assert not contract.passed
    assert "delete of one word expected" in contract.failures[0]


def test_a_tool_refusing_an_advertised_optional_parameter_is_rejected(built, pool):
    model, db_path, tools = built
    plan = next(p for p in model.plans if p.name == "list_words")
    plan.bindings["register"] = ["unsupported"]  # the implementation turns it away
    refusing = implement_theme_tools(replace(model, plans=[plan]), db_path)
    contract = run_contracts(refusing, model, db_path, "dict", pool)["list_words"]
    check = next(c for c in contract.checks if c.name == "parameters")
    assert not check.passed
    assert check.detail.startswith("parameters 1/2 accepted; refused register")
    assert "document contract, parameters" in contract.failures[0]


def test_a_result_breaking_the_response_schema_is_rejected(built, pool):
    model, db_path, tools = built
    plan = next(p for p in model.plans if p.name == "get_word")
    plan.response_schema = {**WORD, "required": [*WORD["required"], "pronunciation"]}
    contract = run_contracts(only(tools, "get_word"), model, db_path, "dict", pool)["get_word"]
    check = next(c for c in contract.checks if c.name == "response schema")
    assert not check.passed
    assert "'pronunciation' is a required property" in check.detail


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("get_word", "LookupError('no word with id = 1')"),
        ("delete_word", "LookupError('no word with id = 1')"),
        ("delete_word", "PermissionError('word 1 is still referred to by 2 notes')"),
        ("update_word", "LookupError('no such word')"),
    ],
)
def test_a_tool_that_never_acts_does_not_pass_for_one_that_does(built, pool, name, error):
    """Every call answered "not found" or "still referred to": nothing was observed, so
    nothing passes. Before, the read passed every check and the delete answering "still
    referred to" its effect ("not observed"); the other two failed then as now."""
    model, db_path, tools = built
    never = only(tools, name)
    never.functions[name] = f"def {name}(db, **params):\n    raise {error}\n"
    contract = run_contracts(never, model, db_path, "dict", pool)[name]
    assert not contract.passed
    effect = next(c for c in contract.checks if c.name == "effect")
    assert not effect.passed
    assert effect.detail.startswith("effect: the call with valid arguments was refused")
    if name == "get_word":  # the only tool of these whose document gives an answer schema
        response = next(c for c in contract.checks if c.name == "response schema")
        assert not response.passed
        assert response.detail.startswith("no answer to check against the document's schema")


def test_an_answer_schema_with_a_pattern_re_cannot_read_still_checks_the_answer(built, pool):
    """ECMA's `\\p{L}` and OpenAPI's `examples` map made the whole answer schema unreadable,
    so any answer passed; now only those parts are left out and the rest still checks."""
    model, db_path, tools = built
    plan = next(p for p in model.plans if p.name == "get_word")
    word = {**WORD["properties"]["word"], "pattern": "^[\\p{L}]+$"}
    schema = {
        **WORD,
        "properties": {**WORD["properties"], "word": word},
        "examples": {"first": {"value": {"id": 1}}},
    }
    plan.response_schema = schema
    contract = run_contracts(only(tools, "get_word"), model, db_path, "dict", pool)["get_word"]
    assert contract.passed, contract.summary
    assert "response schema valid (1 part(s) no validator reads left out: examples" in (
        contract.summary
    )
    plan.response_schema = {**schema, "required": [*WORD["required"], "pronunciation"]}
    contract = run_contracts(only(tools, "get_word"), model, db_path, "dict", pool)["get_word"]
    check = next(c for c in contract.checks if c.name == "response schema")
    assert not check.passed
    assert "'pronunciation' is a required property" in check.detail


def test_an_answer_composed_with_all_of_is_the_union_of_its_parts(built, pool):
    """Azure and ShipEngine compose a row with `allOf` and close each part with
    `additionalProperties: false`; read literally, no row could match it, and 20 correct
    tools of one Azure document failed. The parts' union is what the document means."""
    model, db_path, tools = built
    plan = next(p for p in model.plans if p.name == "get_word")
    props = WORD["properties"]
    base = {"type": "object", "additionalProperties": False, "properties": {"id": props["id"]}}
    own = {k: v for k, v in props.items() if k != "id"}
    plan.response_schema = {
        "allOf": [base],
        "additionalProperties": False,
        "properties": own,
        "required": WORD["required"],
    }
    contract = run_contracts(only(tools, "get_word"), model, db_path, "dict", pool)["get_word"]
    assert contract.passed, contract.summary
    plan.response_schema["properties"] = {**own, "register": {"type": "integer"}}
    contract = run_contracts(only(tools, "get_word"), model, db_path, "dict", pool)["get_word"]
    check = next(c for c in contract.checks if c.name == "response schema")
    assert not check.passed
    assert "at register" in check.detail


def test_computations_are_rejected_at_plan_time_with_the_reason():
    extra = [GET_SUM, ECHO]
    model = read_theme(theme_of(dictionary_server(extra)))
    rejected = {p.name: p.rejected for p in model.rejected}
    assert rejected["get-sum"] == (
        "computes a result from its arguments (sum of a and b); the offline builder does not "
        "write computations"
    )
    assert rejected["echo"].startswith("computes a result from its arguments (echoes back message)")
    plans = {p.name: p for p in model.plans}
    assert plans["add_word"].operation == "create" and not plans["add_word"].rejected
    assert plans["delete_word"].operation == "delete" and not plans["delete_word"].rejected


def test_generated_rows_honour_the_documents_enum_and_pattern(tmp_path):
    level = {"type": "string", "enum": ["debug", "info", "warning"]}
    document = dictionary_server(
        [
            tool(
                "list_levels",
                "List the logging levels",
                {},
                output={
                    "type": "object",
                    "properties": {
                        "levels": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {"name": level, "note": {"type": "string"}},
                                "required": ["name"],
                            },
                        }
                    },
                },
            ),
            tool("get_level", "Get a logging level", {"name": level}, ["name"]),
        ]
    )
    model = read_theme(theme_of(document))
    assert model.entities["level"].key == "name"  # an enum key: three rows at most
    db = build_theme_database(model, tmp_path / "levels.sqlite", [], rows=20, seed="levels")
    conn = sqlite3.connect(db["db_path"])
    levels = conn.execute("SELECT name FROM levels").fetchall()
    words = conn.execute("SELECT word, register FROM words").fetchall()
    conn.close()
    assert sorted(v for (v,) in levels) == ["debug", "info", "warning"]  # never "debug-12"
    assert all(re.fullmatch("[a-z]+", w) for w, _ in words), words
    assert {r for _, r in words} <= {"formal", "informal", "slang"}
    check = check_rows(model, db["db_path"])
    assert check.passed, check.detail


def test_check_rows_names_a_value_outside_the_documents_enum(built):
    model, db_path, _tools = built
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE words SET register = 'debug-12' WHERE id = 1")
    conn.commit()
    conn.close()
    check = check_rows(model, db_path)
    assert not check.passed
    assert "words.register = 'debug-12': not among the document's values" in check.detail


@pytest.mark.django_db(transaction=True)
def test_the_build_publishes_entity_tools_and_reports_their_contracts(
    reviewer_api, client, reviewer, settings, tmp_path
):
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    extra = [GET_SUM, ECHO]
    theme = store_theme(theme_of(dictionary_server(extra)))
    response = reviewer_api.post(
        "/api/environments/build/",
        {"theme": theme.pk, "name": "dictionary", "options": {"min_tools": 3}},
        format="json",
    )
    assert response.status_code == 202, response.content
    job_id = response.json()["id"]
    wait_for(lambda: Job.objects.get(pk=job_id).is_finished, timeout=120, message="build")
    job = Job.objects.get(pk=job_id)
    assert job.state == "succeeded", job.error
    environment = Environment.objects.get(name="dictionary")
    names = set(environment.tools.values_list("name", flat=True))
    assert names == {"list_words", "get_word", "add_word", "update_word", "delete_word"}
    rejected = {r["name"]: r["reason"] for r in environment.verification_report["rejected_tools"]}
    assert "sum of a and b" in rejected["get-sum"] and "echoes back" in rejected["echo"]
    contracts = environment.manifest["contracts"]
    assert contracts["delete_word"].endswith("effect: deletes the word named")
    assert "response schema valid" in contracts["get_word"]
    record = environment.tools.get(name="add_word").verification["contract"]
    assert record["passed"] and [c["name"] for c in record["checks"]] == ["parameters", "effect"]
    assert environment.verification_report["contract"]["data"]["passed"]
    # the console's Tools tab shows which contract checks ran and which passed
    client.force_login(reviewer)
    body = client.get(reverse("environment-tab", args=[environment.pk, "tools"])).content.decode()
    start = body.index('data-tool="delete_word"')
    delete_word = body[start : body.find('<details class="tool"', start)]
    assert 'data-contract="kept"' in delete_word
    assert (
        "document contract: parameters 1/1 accepted, effect: deletes the word named" in delete_word
    )
    assert 'data-contract-check="effect"' in delete_word


@pytest.mark.django_db(transaction=True)
def test_a_live_mcp_server_with_a_computing_tool_publishes_without_it(settings, tmp_path):
    """A real stdio MCP server (the SDK's own) listing the dictionary tools and `get-sum`: the
    CLI builds its entity tools and rejects the sum with the reason, never a look-up."""
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    extra = [GET_SUM]
    listed = tmp_path / "tools.json"
    listed.write_text(json.dumps(dictionary_server(extra)["result"]["tools"]))
    server = Path(__file__).parent / "support" / "listed_mcp_server.py"
    command = shlex.join([sys.executable, str(server), str(listed)])
    out = StringIO()
    call_command("build_environment", mcp=command, name="live_dictionary", stdout=out)
    assert "built live_dictionary@v1" in out.getvalue()
    environment = Environment.objects.get(name="live_dictionary")
    assert environment.theme.provenance["transport"] == "stdio"
    assert "get-sum" not in set(environment.tools.values_list("name", flat=True))
    assert "delete_word" in set(environment.tools.values_list("name", flat=True))
    rejected = {r["name"]: r["reason"] for r in environment.verification_report["rejected_tools"]}
    assert rejected["get-sum"].startswith("computes a result from its arguments (sum of a and b)")
