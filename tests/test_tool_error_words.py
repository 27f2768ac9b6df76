"""Tool errors an agent reads: they name the tool and, for an argument, the argument and the
rule in words; where in the generated code the error was raised stays with the researcher."""

from __future__ import annotations

import json

import pytest

from environments.builder.theme_tools import theme_prelude
from environments.discovery.tool_generator import prelude_source
from environments.runtime import SandboxPool, load_package
from environments.runtime.schema_check import ArgumentChecker
from tests.support.sample_package import build_sample_package, simple_tool

BOOK_TABLE = {
    "book": {
        "table": "book",
        "entity": "book",
        "key": "id",
        "key_type": "integer",
        "fields": {
            "id": {"type": "integer"},
            "title": {"type": "string"},
            "author_id": {"type": "integer"},
            "price": {"type": "number"},
            "stock": {"type": "integer"},
        },
        "children": [],
    }
}
FIND_BOOK_PLAN = {
    "name": "find_book",
    "op": "get",
    "table": "book",
    "bindings": {"book_id": ["key", "id"]},
    "output": {},
    "options": {},
    "fields": [],
    "auto_key": False,
    "default_limit": None,
}
# A tool built the way a theme's tools are: the theme prelude, its tables and one plan.
THEME_TOOL_SOURCE = (
    "import json\n\n"
    + theme_prelude()
    + f"\n_TH_TABLES = {BOOK_TABLE!r}\n_TH_PLAN_0 = {FIND_BOOK_PLAN!r}\n\n"
    + "def find_book(db, **params):\n    return _th_call(db, _TH_PLAN_0, params)\n"
)
POSITION_MARKS = ("tools.py:", " in _", "<program>")
# Tools built on the generated tools' prelude: a refusal and an argument in the wrong form,
# and a tool with a real bug.
PRELUDE_TOOLS_SOURCE = (
    prelude_source()
    + "\n\ndef check_day(db, **params):\n"
    + "    return {'day': _check_value('shift', 'day', 'date', params['day'], 'day')}\n"
    + "\n\ndef refuse_always(db, **params):\n"
    + "    raise _Refused('the shop is closed on Sundays')\n"
    + "\n\ndef divide_badly(db, **params):\n"
    + "    return {'ratio': 1 / 0}\n"
    + "\n\ndef query_badly(db, **params):\n"
    + "    return db.execute('SELECT FROM nowhere').fetchall()\n"
)
CLASS_NAMES = ("ValueError", "LookupError", "PermissionError", "OperationalError", "Exception:")


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    find_book = simple_tool("find_book", {"book_id": {}}, ["book_id"])
    path = build_sample_package(
        tmp_path_factory.mktemp("pkg"), extra_tools=[(find_book, "read", THEME_TOOL_SOURCE)]
    )
    return load_package(path)


@pytest.fixture(scope="module")
def prelude_episode(tmp_path_factory):
    extra = [
        (simple_tool("check_day", {"day": {"type": "string"}}, ["day"]), "read"),
        (simple_tool("refuse_always"), "write"),
        (simple_tool("divide_badly"), "read"),
        (simple_tool("query_badly"), "read"),
    ]
    path = build_sample_package(
        tmp_path_factory.mktemp("prelude"),
        extra_tools=[(schema, kind, PRELUDE_TOOLS_SOURCE) for schema, kind in extra],
    )
    with (
        SandboxPool(workers=1, call_timeout=2.0) as pool,
        pool.start_episode(load_package(path)) as episode,
    ):
        yield episode


def assert_no_class_name(text: str) -> None:
    assert not any(name in text for name in CLASS_NAMES), text


@pytest.fixture(scope="module")
def episode(package):
    with SandboxPool(workers=1, call_timeout=2.0) as pool, pool.start_episode(package) as episode:
        yield episode


def assert_no_position(text: str) -> None:
    assert not any(mark in text for mark in POSITION_MARKS), text


def test_a_raise_in_generated_code_names_the_tool_without_a_source_position(episode):
    result = episode.call_tool("find_book", {"book_id": 999})

    assert result.error_kind == "tool_error"
    assert result.error == "find_book: no book with id = 999"
    assert_no_class_name(result.error)
    assert_no_position(result.error)
    assert_no_position(json.dumps(result.to_dict()))  # what the HTTP API and MCP send
    # the position stays for whoever debugs the generated code
    assert result.error_origin.startswith("tools.py:") and "in _th_by_key" in result.error_origin


def test_a_domain_error_of_a_hand_written_tool_names_the_tool(episode):
    result = episode.call_tool("place_order", {"book_id": 4, "quantity": 9, "customer": "x"})

    assert result.error == "place_order: only 2 in stock"
    assert_no_position(result.error)


def test_a_theme_tool_names_the_argument_and_the_rule(episode):
    result = episode.call_tool("find_book", {"book_id": "one"})

    assert result.error_kind == "tool_error"
    assert result.error == "find_book: argument 'book_id' must be an integer, got 'one'"


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"book_id": "one"}, "get_book: argument 'book_id' must be an integer, got 'one'"),
        ({}, "get_book: missing required argument 'book_id'"),
        (
            {"book_id": 1, "sql": "DROP TABLE book"},
            "get_book: unexpected argument 'sql'; accepted: book_id",
        ),
    ],
)
def test_a_schema_violation_names_the_argument_and_the_rule(episode, arguments, error):
    result = episode.call_tool("get_book", arguments)

    assert result.error_kind == "invalid_arguments"
    assert result.error == error


def test_schema_rules_read_as_words():
    schema = {
        "type": "object",
        "properties": {
            "isbn": {"type": "string", "maxLength": 13},
            "copies": {"type": "integer", "minimum": 1},
            "format": {"enum": ["paper", "ebook"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "shipping": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
    checker = ArgumentChecker([{"function": {"name": "get_book", "parameters": schema}}])
    expected = {
        "isbn": (12345, "argument 'isbn' must be a string of at most 13 characters, got 12345"),
        "copies": (0, "argument 'copies' must be at least 1, got 0"),
        "format": ("scroll", "argument 'format' must be one of 'paper', 'ebook', got 'scroll'"),
        "tags": (["a", 3], "argument 'tags[1]' must be a string, got 3"),
        "shipping": ({}, "argument 'shipping' is missing its required field 'city'"),
    }
    for name, (value, words) in expected.items():
        assert checker.problem("get_book", {name: value}) == words
    assert "is not of type" not in checker.problem("get_book", {"copies": "two"})


def test_a_value_in_the_wrong_form_is_an_invalid_argument_in_words(prelude_episode):
    result = prelude_episode.call_tool("check_day", {"day": "last week"})

    assert result.error_kind == "invalid_arguments"
    assert result.error == (
        "check_day: argument 'day' must be an ISO date YYYY-MM-DD, got 'last week'"
    )
    assert prelude_episode.call_tool("check_day", {"day": "2024-02-29"}).ok


def test_a_refusal_on_purpose_is_a_tool_error_in_words(prelude_episode):
    result = prelude_episode.call_tool("refuse_always", {})

    assert result.error_kind == "tool_error"
    assert result.error == "refuse_always: the shop is closed on Sundays"


@pytest.mark.parametrize(
    ("tool", "words"),
    [
        ("divide_badly", "divide_badly: the tool failed unexpectedly (a zero division error): "),
        ("query_badly", "query_badly: the tool failed unexpectedly (a database error): "),
    ],
)
def test_a_bug_says_the_tool_failed_and_how_in_words(prelude_episode, tool, words):
    result = prelude_episode.call_tool(tool, {})

    assert result.error_kind == "tool_error"
    assert result.error.startswith(words), result.error
    assert_no_class_name(result.error)
    assert_no_position(result.error)
    assert result.error_origin.startswith("tools.py:")  # kept for whoever debugs it
