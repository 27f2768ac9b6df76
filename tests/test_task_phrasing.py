"""Goal instructions phrased as requests: rows named as people name them, sentence forms by
intent, and write tasks that use a lifecycle's own moves.

Unit checks on hand-made walks (no sandbox), then walks on a retail database built from an SQL
script whose orders have a status lifecycle (cancel / ship / deliver tools).
"""

from __future__ import annotations

import random
import re

import pytest

from environments.runtime import SandboxPool
from tasks.generator_labels import generator_labels
from tasks.synthesis.graph_tasks import Difficulty, GraphTaskSynthesizer, is_transition
from tasks.synthesis.instructions import compose_instruction, is_serial, plural_words
from tasks.synthesis.intents import (
    AGGREGATION,
    CONDITIONAL_ACTION,
    LOOKUP,
    MULTI_STEP_WORKFLOW,
)
from tasks.synthesis.tool_graph import ParamInfo, ToolNode
from tests.support.script_package import package_from_upload


def _key(name, table, column="id"):
    return ParamInfo(name, "integer", True, "key", column=(table, column), key=(table, column))


def _node(name, kind, action, entity, params):
    return ToolNode(name, kind, action, entity, None, "", {p.name: p for p in params})


NODES = {
    "get_penguin": _node("get_penguin", "read", "get", "penguins", [_key("id", "penguins")]),
    "get_island": _node(
        "get_island", "read", "get", "islands", [_key("island", "islands", "island")]
    ),
    "search_penguins": _node(
        "search_penguins",
        "read",
        "search",
        "penguins",
        [ParamInfo("island", "string", False, "value", column=("penguins", "island"))],
    ),
    "count_penguins": _node(
        "count_penguins",
        "read",
        "count",
        "penguins",
        [ParamInfo("island", "string", False, "value", column=("penguins", "island"))],
    ),
    "update_island": _node(
        "update_island",
        "write",
        "update",
        "islands",
        [
            _key("island", "islands", "island"),
            ParamInfo("area", "number", False, "value", column=("islands", "area")),
        ],
    ),
    "delete_penguin": _node(
        "delete_penguin", "write", "delete", "penguins", [_key("id", "penguins")]
    ),
}
PENGUIN = {"id": 86, "island": "Dream", "species": "Adelie"}
ISLAND = {"island": "Dream", "area": 12.5}


def _get_penguin():
    return {"tool": "get_penguin", "arguments": {"id": 86}, "inputs": {}, "result": PENGUIN}


def _island_of_penguin():
    return {
        "tool": "get_island",
        "arguments": {"island": "Dream"},
        "inputs": {"island": {"step": 0, "field": "island", "value": "Dream"}},
        "result": ISLAND,
    }


def _goal(steps, spec, seed=0):
    return compose_instruction("goal", steps, NODES, spec, rng=random.Random(seed))


def test_a_row_known_only_by_its_serial_is_called_what_it_is():
    rendered = _goal([_get_penguin()], {"shape": "value", "field": "species"})
    assert "penguin #86" in rendered.text, rendered.text
    assert "whose id is" not in rendered.text
    assert rendered.intent == LOOKUP
    assert is_serial("order_id", "W4817420") and is_serial("id", 86)
    assert not is_serial("iso", "LT") and not is_serial("order_id", "two words")


def test_a_key_taken_from_a_row_found_by_it_is_said_once():
    """ "the penguins whose island is the island of penguin #86", never "the island of the
    island of penguin #86"."""
    steps = [
        _get_penguin(),
        _island_of_penguin(),
        {
            "tool": "search_penguins",
            "arguments": {"island": "Dream"},
            "inputs": {"island": {"step": 1, "field": "island", "value": "Dream"}},
            "result": [PENGUIN, {"id": 87, "island": "Dream", "species": "Gentoo"}],
        },
    ]
    text = _goal(steps, {"shape": "list", "field": "species"}).text
    assert "island of the island" not in text, text
    assert "whose island is the island of penguin #86" in text, text
    assert "species" in text and text.startswith(("List the species", "What are the species"))


def test_a_count_is_asked_as_how_many():
    steps = [
        _get_penguin(),
        {
            "tool": "count_penguins",
            "arguments": {"island": "Dream"},
            "inputs": {"island": {"step": 0, "field": "island", "value": "Dream"}},
            "result": {"count": 2},
        },
    ]
    rendered = _goal(steps, {"shape": "scalar"})
    assert rendered.intent == AGGREGATION
    assert rendered.text.startswith("How many penguins"), rendered.text
    assert rendered.text.endswith("?")


def test_a_workflow_is_said_as_its_steps_and_one_change_as_one_request():
    change = {
        "tool": "update_island",
        "arguments": {"island": "Dream", "area": 14.0},
        "inputs": {"island": {"step": 1, "field": "island", "value": "Dream"}},
        "result": {**ISLAND, "area": 14.0},
    }
    delete = {
        "tool": "delete_penguin",
        "arguments": {"id": 86},
        "inputs": {"id": {"step": 0, "field": "id", "value": 86}},
        "result": PENGUIN,
    }
    one = _goal([_get_penguin(), _island_of_penguin(), change], {"shape": "none"})
    assert one.intent == CONDITIONAL_ACTION
    assert one.text.startswith("Set the area of the island of penguin #86 to 14.0"), one.text
    both = _goal([_get_penguin(), _island_of_penguin(), change, delete], {"shape": "none"})
    assert both.intent == MULTI_STEP_WORKFLOW
    assert both.text.startswith("First, set the area"), both.text
    assert "Next, delete penguin #86." in both.text, both.text


def test_plural_words_of_a_field():
    assert plural_words("release date") == "release dates"
    assert plural_words("name") == "names"


# --- a database with an order lifecycle --------------------------------------------------

LIFECYCLE_SQL = """
CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
    email TEXT UNIQUE);
CREATE TABLE orders (order_id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers(customer_id),
    status TEXT NOT NULL, created_at DATETIME NOT NULL, total REAL);
"""
STATUSES = ["pending", "processing", "shipped", "delivered", "cancelled"]


def lifecycle_dump() -> str:
    names = ["Ada Lind", "Ben Okafor", "Cleo Silva", "Dev Price", "Eve Nowak", "Finn Wei"]
    lines = [LIFECYCLE_SQL]
    for i, name in enumerate(names, start=1):
        email = name.lower().replace(" ", ".") + "@shop.test"
        lines.append(f"INSERT INTO customers VALUES ({i}, '{name}', '{email}');")
    for i in range(1, 31):
        status = STATUSES[i % 5]
        day = f"2024-03-{1 + i % 27:02d} 10:{i:02d}:00"
        lines.append(
            f"INSERT INTO orders VALUES ({i}, {1 + i % 6}, '{status}', '{day}', {10 + i * 3.5});"
        )
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=1) as pool:
        yield pool


@pytest.fixture(scope="module")
def shop(tmp_path_factory, pool):
    return package_from_upload(tmp_path_factory, pool, "shop.sql", lifecycle_dump())


def test_write_tasks_use_the_lifecycle_moves_and_store_their_intent(shop, pool):
    with GraphTaskSynthesizer(shop, pool, llm=None, tier="goal") as synthesizer:
        nodes = synthesizer.graph.nodes
        moves = {n for n, node in nodes.items() if is_transition(node)}
        assert {"cancel_order", "ship_order"} <= moves, sorted(nodes)
        tasks = synthesizer.synthesize(6, Difficulty(steps=2, writes=1), seed=5)
    assert tasks, synthesizer.stats
    writing = [t for t in tasks if t.expected_diff]
    moved = [t for t in writing if any(s["tool"] in moves for s in t.gold_chain)]
    assert writing and len(moved) >= len(writing) / 2, [t.instruction for t in tasks]
    verbs = re.compile(r"\b(Cancel|Ship|Deliver|Process)\b", re.IGNORECASE)
    for task in moved:
        assert verbs.search(task.instruction), task.instruction
        assert "_" not in re.sub(r'"[^"]*"', "", task.instruction.splitlines()[0])
    for task in writing:
        assert task.metadata["intent"] in (CONDITIONAL_ACTION, MULTI_STEP_WORKFLOW)

    class Stored:  # a Task row's fields as the review counts read them
        kind = "graph"
        gold_chain = tasks[0].gold_chain
        metadata = {"extra": tasks[0].metadata}

    assert generator_labels(Stored()).intent == tasks[0].metadata["intent"]


# --- values a person would write, picks said as a person would ---------------------------


def test_updates_change_a_row_state_and_new_text_looks_real(shop):
    from tasks.synthesis.arguments import fresh_value, is_identity, is_non_additive
    from tasks.synthesis.environment_view import EnvironmentView

    view = EnvironmentView(shop)
    assert is_identity(view, "customers", "name") and is_identity(view, "customers", "email")
    assert not is_identity(view, "orders", "total") and not is_identity(view, "orders", "status")
    emails = {r["email"] for r in view.rows("customers")}
    fresh = fresh_value(view, "customers", "email", "string", random.Random(3))
    assert "@" in fresh and fresh not in emails and not fresh.startswith("new-"), fresh
    assert is_non_additive("latitude") and is_non_additive("release_year")
    assert not is_non_additive("population") and not is_non_additive("total")


def test_a_pick_by_year_is_the_earliest_or_latest():
    nodes = {
        **NODES,
        "search_seasons": _node(
            "search_seasons",
            "read",
            "search",
            "seasons",
            [ParamInfo("island", "string", False, "value", column=("seasons", "island"))],
        ),
        "get_season": _node(
            "get_season", "read", "get", "seasons", [_key("year", "seasons", "year")]
        ),
    }
    seasons = [{"year": 2007, "island": "Dream"}, {"year": 2009, "island": "Dream"}]
    steps = [
        {
            "tool": "search_seasons",
            "arguments": {"island": "Dream"},
            "inputs": {},
            "result": seasons,
        },
        {
            "tool": "get_season",
            "arguments": {"year": 2009},
            "inputs": {
                "year": {
                    "step": 0,
                    "field": "year",
                    "value": 2009,
                    "sorted_by": "year",
                    "descending": True,
                }
            },
            "result": seasons[1],
        },
    ]
    text = compose_instruction("goal", steps, nodes, {"shape": "value", "field": "island"}).text
    assert "the season with the latest year among the seasons" in text, text


class _View:
    """The two things naming reads of an environment: its tables and their rows."""

    def __init__(self, rows: dict[str, list[dict]]):
        self._rows = rows
        self.tables = dict.fromkeys(rows)

    def rows(self, table: str) -> list[dict]:
        return self._rows[table]


HOLIDAYS = [
    {"id": 1, "country": "JP", "name": "Children's Day", "date": "2025-05-05"},
    {"id": 2, "country": "KR", "name": "Children's Day", "date": "2025-05-05"},
    {"id": 3, "country": "JP", "name": "Culture Day", "date": "2025-11-03"},
]


def test_a_row_without_a_name_is_told_by_two_attributes_a_tool_filters_on():
    search = _node(
        "search_holidays",
        "read",
        "search",
        "holidays",
        [
            ParamInfo("country", "string", False, "value", column=("holidays", "country")),
            ParamInfo("name", "string", False, "value", column=("holidays", "name")),
        ],
    )
    nodes = {
        "get_holiday": _node("get_holiday", "read", "get", "holidays", [_key("id", "holidays")]),
        "search_holidays": search,
    }
    step = {"tool": "get_holiday", "arguments": {"id": 2}, "inputs": {}, "result": HOLIDAYS[1]}
    view = _View({"holidays": HOLIDAYS})
    rendered = compose_instruction(
        "goal", [step], nodes, {"shape": "value", "field": "date"}, view, random.Random(1)
    )
    assert 'the holiday whose name is "Children\'s Day" and whose country is "KR"' in (
        rendered.text
    ), rendered.text
    assert "#2" not in rendered.text
    assert rendered.discovered[0]["described_by"] == {"country": "KR", "name": "Children's Day"}
    assert {"KR", "Children's Day"} <= set(rendered.given)
    # nothing tells it apart by filters one tool takes: a serial, called what it is
    nodes["search_holidays"] = _node(
        "search_holidays",
        "read",
        "search",
        "holidays",
        [ParamInfo("name", "string", False, "value", column=("holidays", "name"))],
    )
    again = compose_instruction(
        "goal", [step], nodes, {"shape": "value", "field": "date"}, view, random.Random(1)
    )
    assert "holiday #2" in again.text, again.text


def test_a_question_never_asks_back_the_value_the_task_wrote():
    from tasks.synthesis.graph_tasks import asks_back

    change = {
        "tool": "update_island",
        "arguments": {"island": "Dream", "area": 14.0},
        "inputs": {},
        "result": {**ISLAND, "area": 14.0},
    }
    read = {
        "tool": "get_island",
        "arguments": {"island": "Dream"},
        "inputs": {"island": {"step": 0, "field": "island", "value": "Dream"}},
        "result": {},
    }
    steps = [change, read]
    assert asks_back(steps, NODES, {"shape": "value", "field": "area"}, 14.0)
    assert not asks_back(steps, NODES, {"shape": "value", "field": "island"}, "Dream")
    assert not asks_back(steps, NODES, {"shape": "value", "field": "area"}, 12.5)


def test_a_row_of_a_table_named_like_its_column_is_said_by_its_value():
    nodes = {
        **NODES,
        "search_species": _node(
            "search_species",
            "read",
            "search",
            "species",
            [ParamInfo("species", "string", False, "text", column=("species", "species"))],
        ),
    }
    step = {
        "tool": "search_species",
        "arguments": {"species": "Gent"},
        "inputs": {},
        "result": [{"species": "Gentoo", "penguin_count": 124}],
    }
    text = compose_instruction(
        "goal", [step], nodes, {"shape": "value", "field": "penguin_count"}
    ).text
    assert 'the species containing "Gent"' in text and "species whose species" not in text, text


def test_a_question_never_asks_back_the_value_a_row_was_found_by():
    from tasks.synthesis.graph_tasks import asks_back

    found = {"tool": "get_island", "arguments": {"island": "Dream"}, "inputs": {}, "result": ISLAND}
    assert asks_back([found], NODES, {"shape": "value", "field": "island"}, "Dream")
    assert not asks_back([found], NODES, {"shape": "value", "field": "area"}, 12.5)


def test_a_row_is_never_named_by_the_value_the_task_then_takes_from_it():
    search = _node(
        "search_holidays",
        "read",
        "search",
        "holidays",
        [
            ParamInfo("country", "string", False, "value", column=("holidays", "country")),
            ParamInfo("name", "string", False, "value", column=("holidays", "name")),
            ParamInfo("date", "string", False, "value", column=("holidays", "date")),
        ],
    )
    nodes = {
        "get_holiday": _node("get_holiday", "read", "get", "holidays", [_key("id", "holidays")]),
        "search_holidays": search,
    }
    steps = [
        {"tool": "get_holiday", "arguments": {"id": 2}, "inputs": {}, "result": HOLIDAYS[1]},
        {
            "tool": "search_holidays",
            "arguments": {"country": "KR"},
            "inputs": {"country": {"step": 0, "field": "country", "value": "KR"}},
            "result": [HOLIDAYS[1]],
        },
    ]
    view = _View({"holidays": HOLIDAYS})
    rendered = compose_instruction(
        "goal", steps, nodes, {"shape": "list", "field": "name"}, view, random.Random(1)
    )
    told = rendered.discovered[0]["described_by"] if rendered.discovered else {}
    assert "country" not in told, rendered.text  # the next step takes the holiday's country


def test_a_new_code_has_the_shape_of_the_codes_a_column_holds(shop):
    from tasks.synthesis.arguments import _reshaped

    taken = {"PRT", "U+0130"}
    code = _reshaped("PRT", taken, random.Random(1))
    assert code and len(code) == 3 and code.isupper() and code not in taken
    hexa = _reshaped("U+0130", taken, random.Random(2))
    assert hexa.startswith("U+") and hexa[2:].isdigit() and hexa not in taken
