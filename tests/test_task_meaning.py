"""Meaning checks: each detector on tasks that mean something and tasks that do not, the audit
counting them by name, and walks that never join columns whose values only coincide."""

from __future__ import annotations

import pytest

from environments.runtime import SandboxPool, load_package
from tasks.answer_contract import AnswerContract, answer_instruction
from tasks.audit import CHECKS, MEANING_CHECKS, VerifierAuditor
from tasks.synthesis.environment_view import EnvironmentView, TableInfo
from tasks.synthesis.graph_tasks import Difficulty, GraphTaskSynthesizer
from tasks.synthesis.meaning import (
    MeaningFacts,
    answer_shape_mismatch,
    coincidental_join,
    leaked_internal_name,
    repeated_clause,
    self_assignment,
    surrogate_id_naming,
    tautological_hop,
)
from tasks.synthesis.task_spec import TaskSpec
from tasks.synthesis.tool_graph import ParamInfo, ToolNode, build_tool_graph
from tests.support.sample_package import build_sample_package
from tests.support.script_package import package_from_upload

# --- a hand-written shop: staff and customers share first names, items and variants prices --


def _key(name, table, column="id", ptype="integer"):
    return ParamInfo(name, ptype, True, "key", column=(table, column), key=(table, column))


def _value(name, table, column, ptype="string", required=False):
    return ParamInfo(name, ptype, required, "value", column=(table, column))


def _node(name, kind, action, entity, params, columns):
    node = ToolNode(name, kind, action, entity, None, "", {p.name: p for p in params})
    node.output_fields = {c: (entity, c) for c in columns}
    return node


TABLES = {
    "employees": TableInfo(
        "employees", {"id": "INTEGER", "first_name": "TEXT", "email": "TEXT"}, ["id"]
    ),
    "customers": TableInfo(
        "customers",
        {"id": "INTEGER", "first_name": "TEXT", "email": "TEXT", "support_rep_id": "INTEGER"},
        ["id"],
        {"support_rep_id": ("employees", "id")},
    ),
    "items": TableInfo("items", {"id": "INTEGER", "name": "TEXT", "price": "REAL"}, ["id"]),
    "variants": TableInfo(
        "variants",
        {"id": "INTEGER", "item_id": "INTEGER", "sku": "TEXT", "price": "REAL"},
        ["id"],
        {"item_id": ("items", "id")},
    ),
    "settings": TableInfo("settings", {"key": "TEXT", "value": "TEXT"}, ["key"]),
    "tracking_ids": TableInfo("tracking_ids", {"id": "INTEGER", "carrier": "TEXT"}, ["id"]),
}
EMPLOYEE = ("id", "first_name", "email")
CUSTOMER = ("id", "first_name", "email", "support_rep_id")
VARIANT = ("id", "item_id", "sku", "price")
NODES = {
    n.name: n
    for n in (
        _node(
            "get_employee", "read", "get", "employees", [_key("employee_id", "employees")], EMPLOYEE
        ),
        _node(
            "search_employees",
            "read",
            "search",
            "employees",
            [_value("email", "employees", "email")],
            EMPLOYEE,
        ),
        _node(
            "search_customers",
            "read",
            "search",
            "customers",
            [
                _value("first_name", "customers", "first_name"),
                ParamInfo(
                    "support_rep_id",
                    "integer",
                    False,
                    "key",
                    column=("customers", "support_rep_id"),
                    key=("employees", "id"),
                ),
            ],
            CUSTOMER,
        ),
        _node(
            "get_item", "read", "get", "items", [_key("item_id", "items")], ("id", "name", "price")
        ),
        _node(
            "search_variants",
            "read",
            "search",
            "variants",
            [
                _value("price", "variants", "price", "number"),
                ParamInfo(
                    "item_id",
                    "integer",
                    False,
                    "key",
                    column=("variants", "item_id"),
                    key=("items", "id"),
                ),
            ],
            VARIANT,
        ),
        _node("get_variant", "read", "get", "variants", [_key("variant_id", "variants")], VARIANT),
        _node(
            "update_variant",
            "write",
            "update",
            "variants",
            [
                _key("variant_id", "variants"),
                ParamInfo(
                    "item_id",
                    "integer",
                    False,
                    "key",
                    column=("variants", "item_id"),
                    key=("items", "id"),
                ),
                _value("price", "variants", "price", "number"),
            ],
            VARIANT,
        ),
        _node(
            "search_tracking_ids",
            "read",
            "search",
            "tracking_ids",
            [_key("id", "tracking_ids")],
            ("id", "carrier"),
        ),
    )
}


@pytest.fixture
def facts() -> MeaningFacts:
    natural = {"employees": ["email"], "customers": ["email"], "items": ["name"]}
    natural |= {"variants": ["sku"], "settings": [], "tracking_ids": []}
    return MeaningFacts(TABLES, NODES, natural=natural)


def task(instruction, chain, answer=None, shape="none", field=None, **metadata) -> TaskSpec:
    results = [step.pop("result", None) for step in chain]
    return TaskSpec(
        kind="graph",
        environment="shop",
        instruction=instruction,
        gold_chain=chain,
        reference_answer=answer,
        metadata={"answer": {"shape": shape, "field": field}, "gold_results": results, **metadata},
    )


def step(tool, arguments, inputs=None, result=None, kind="read"):
    return {
        "tool": tool,
        "arguments": arguments,
        "inputs": inputs or {},
        "kind": kind,
        "result": result,
    }


def fed(source, field, item=None):
    return {"step": source, "field": field, "item": item}


ANN = {"id": 3, "first_name": "Ann", "email": "ann@shop.test"}


# --- each detector -----------------------------------------------------------------------


def test_surrogate_id_naming_flags_an_id_where_the_row_has_a_natural_name(facts):
    by_id = task(
        "What is the email of the employee whose id is 3?",
        [step("get_employee", {"employee_id": 3}, result=ANN)],
        "ann@shop.test",
        "value",
        "email",
    )
    assert "surrogate id 3" in surrogate_id_naming(by_id, facts)
    by_email = task(
        'What is the first name of the employee whose email is "ann@shop.test"?',
        [step("search_employees", {"email": "ann@shop.test"}, result=[ANN])],
        ["Ann"],
        "list",
        "first_name",
    )
    assert surrogate_id_naming(by_email, facts) is None
    # a reference to an employee by id, where a tool finds employees by email
    by_reference = task(
        "List the customers whose support rep id is 3.",
        [step("search_customers", {"support_rep_id": 3}, result=[{"id": 5, "support_rep_id": 3}])],
    )
    assert "employee by its surrogate id 3" in surrogate_id_naming(by_reference, facts)
    # a reference to an item by id, where no tool finds items by name
    by_item = task(
        "List the variants whose item id is 2.",
        [step("search_variants", {"item_id": 2}, result=[{"id": 4, "item_id": 2}])],
    )
    assert surrogate_id_naming(by_item, facts) is None
    # a table with nothing else to name a row by is named by its id
    nameless = task(
        "List the tracking ids whose id is 497.",
        [step("search_tracking_ids", {"id": 497}, result=[{"id": 497, "carrier": "UPS"}])],
    )
    assert surrogate_id_naming(nameless, facts) is None
    # a goal_hard task describes the key instead of stating it
    described = task(
        'What is the first name of the employee whose email is "ann@shop.test"?',
        [step("get_employee", {"employee_id": 3}, result=ANN)],
        "Ann",
        "value",
        "first_name",
        discovered=[{"step": 0, "param": "employee_id", "value": "3"}],
    )
    assert surrogate_id_naming(described, facts) is None


def test_tautological_hop_flags_a_value_passed_back_to_the_key_it_came_from(facts):
    variant = {"id": 8, "item_id": 5, "sku": "TS-M", "price": 12.5}
    back = task(
        "List the variants whose item id is the id of the item whose id is 5.",
        [
            step("get_item", {"item_id": 5}, result={"id": 5, "name": "Tee", "price": 12.5}),
            step("search_variants", {"item_id": 5}, {"item_id": fed(0, "id")}, [variant]),
        ],
    )
    assert "which was given that very item" in tautological_hop(back, facts)
    along = task(
        'List the variants of the item whose name is "Tee".',
        [
            step("get_variant", {"variant_id": 8}, result=variant),
            step("get_item", {"item_id": 5}, {"item_id": fed(0, "item_id")}, {"id": 5}),
        ],
    )
    assert tautological_hop(along, facts) is None
    # a round trip: variant 8 -> its item -> the item's cheapest variant, variant 8 again
    round_trip = task(
        "...",
        [
            step("get_variant", {"variant_id": 8}, result=variant),
            step("get_item", {"item_id": 5}, {"item_id": fed(0, "item_id")}, {"id": 5}),
            step("search_variants", {"item_id": 5}, {"item_id": fed(1, "id")}, [variant]),
        ],
    )
    assert "lands back on the variant step 1 already named" in tautological_hop(round_trip, facts)


def test_repeated_clause_flags_the_same_row_said_twice():
    twice = task(
        'Set the item id of the variant whose sku is "TS-M" to the item id of the variant '
        'whose sku is "TS-M" and its price to 1230.87.',
        [],
    )
    assert "is said twice" in repeated_clause(twice)
    two_rows = task(
        'Of the author whose name is "Frank Herbert" and the author whose name is "Ursula K. '
        'Le Guin", which has the larger total stock?',
        [],
    )
    assert repeated_clause(two_rows) is None
    pronoun = task(
        'Set the price of the variant whose sku is "TS-M" to 9. Do this only if the price of '
        "that variant is above 5.",
        [],
    )
    assert repeated_clause(pronoun) is None


def test_coincidental_join_flags_values_that_only_coincide(facts):
    item = {"id": 5, "name": "Tee", "price": 12.5}
    by_price = task(
        'List the variants whose price is the price of the item whose name is "Tee".',
        [
            step("get_item", {"item_id": 5}, result=item),
            step("search_variants", {"price": 12.5}, {"price": fed(0, "price")}, [{"id": 8}]),
        ],
    )
    assert "items.price" in coincidental_join(by_price, facts)
    names = task(
        "List the customers whose first name is the first name of the employee ...",
        [
            step("get_employee", {"employee_id": 3}, result=ANN),
            step("search_customers", {"first_name": "Ann"}, {"first_name": fed(0, "first_name")}),
        ],
    )
    assert "employees.first_name" in coincidental_join(names, facts)
    by_key = task(
        "List the customers whose support rep is the employee ...",
        [
            step("get_employee", {"employee_id": 3}, result=ANN),
            step("search_customers", {"support_rep_id": 3}, {"support_rep_id": fed(0, "id")}),
        ],
    )
    assert coincidental_join(by_key, facts) is None
    by_foreign_key = task(
        "...",
        [
            step("get_variant", {"variant_id": 8}, result={"id": 8, "item_id": 5}),
            step("get_item", {"item_id": 5}, {"item_id": fed(0, "item_id")}),
        ],
    )
    assert coincidental_join(by_foreign_key, facts) is None


def test_self_assignment_flags_a_field_set_to_itself(facts):
    variant = {"id": 8, "item_id": 5, "sku": "TS-M", "price": 12.5}
    to_itself = task(
        "Set the item id of the variant ... to the item id of the variant ...",
        [
            step("get_variant", {"variant_id": 8}, result=variant),
            step(
                "update_variant",
                {"variant_id": 8, "item_id": 5, "price": 1230.87},
                {"variant_id": fed(0, "id"), "item_id": fed(0, "item_id")},
                kind="write",
            ),
        ],
    )
    assert "to its own item id" in self_assignment(to_itself, facts)
    unchanged = task(
        "...",
        [
            step("get_variant", {"variant_id": 8}, result=variant),
            step(
                "update_variant",
                {"variant_id": 8, "price": 12.5},
                {"variant_id": fed(0, "id")},
                kind="write",
            ),
        ],
    )
    assert "its current value" in self_assignment(unchanged, facts)
    changed = task(
        "...",
        [
            step("get_variant", {"variant_id": 8}, result=variant),
            step("get_item", {"item_id": 6}, result={"id": 6}),
            step(
                "update_variant",
                {"variant_id": 8, "item_id": 6, "price": 14.0},
                {"variant_id": fed(0, "id"), "item_id": fed(1, "id")},
                kind="write",
            ),
        ],
    )
    assert self_assignment(changed, facts) is None


def test_leaked_internal_name_flags_identifiers_tools_and_order_by(facts):
    assert "support_rep_id" in leaked_internal_name(
        task("List the customers whose support_rep_id is 3.", []), facts
    )
    assert "get_item" in leaked_internal_name(task("Call get_item for the tee.", []), facts)
    assert "order by" in leaked_internal_name(
        task('List the items whose order by is "price".', []), facts
    )
    assert "value" in leaked_internal_name(task("What is the value of the user order?", []), facts)
    # quoted values and the answer contract's closing sentence (object fields, the submit
    # tool) are no leak
    contract = AnswerContract("list", "object")
    clean = task(
        'List the customers whose first name is "sale_2024".\n' + answer_instruction(contract),
        [],
    )
    clean.answer_contract = contract.to_dict()
    assert "submit_answer" in clean.instruction
    assert leaked_internal_name(clean, facts) is None


def test_a_tool_named_by_a_plain_word_is_no_leak_where_the_text_says_the_word(facts):
    """Zoom's operation `account` reads an account: "the accounts whose account name is ..."
    says the word, not the tool (103 of its tasks were discarded for it). A tool named after
    its table reads as the word; a run-together name (`listemployees`) is still a leak."""
    get = [_key("employee_id", "employees")]
    tools = {name: _node(name, "read", "get", "employees", get, EMPLOYEE)
             for name in ("employee", "listemployees")}  # fmt: skip
    with_word_tools = MeaningFacts(TABLES, {**NODES, **tools}, natural=facts.natural)
    text = 'List the emails of the employee whose first name is "Ada".'
    assert leaked_internal_name(task(text, []), with_word_tools) is None
    leak = leaked_internal_name(task("Call listemployees for them.", []), with_word_tools)
    assert leak is not None and "listemployees" in leak


def test_answer_shape_mismatch_flags_ids_asked_and_rows_expected(facts):
    rows = [{"id": 497, "carrier": "UPS"}]
    ids_for_rows = task('List the tracking ids whose carrier is "UPS".', [], rows, "list")
    assert "whole rows" in answer_shape_mismatch(ids_for_rows, facts)
    emails_for_rows = task("List the emails of the customers ...", [], [ANN], "list")
    assert "whole rows" in answer_shape_mismatch(emails_for_rows, facts)
    how_many = task("How many customers does Ann look after?", [], [ANN], "list")
    assert "how many" in answer_shape_mismatch(how_many, facts)
    column = task("List the isotopes whose number is the number of the element ...", [], [ANN])
    assert answer_shape_mismatch(column, facts) is None  # "number" is a column here
    emails = task("List the emails of the customers ...", [], ["ann@shop.test"], "list", "email")
    assert answer_shape_mismatch(emails, facts) is None
    customers = task('List the customers whose first name is "Ann".', [], [ANN], "list")
    assert answer_shape_mismatch(customers, facts) is None
    mapping = task(  # an object keyed by data values is what was asked for, not a row
        'Report an object mapping each email (as text) to "higher" or "lower".',
        [],
        {"ann@shop.test": "higher", "bo@shop.test": "lower"},
        "object",
    )
    assert answer_shape_mismatch(mapping, facts) is None
    one_row = task('Report the email of the customer whose first name is "Ann".', [], ANN, "row")
    assert "whole rows" in answer_shape_mismatch(one_row, facts)  # a row where a value is asked


# --- the audit counts them --------------------------------------------------------------


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=1, recycle_after_program=False) as pool:
        yield pool


@pytest.fixture(scope="module")
def bookstore(tmp_path_factory):
    return load_package(build_sample_package(tmp_path_factory.mktemp("pkg")))


def test_the_audit_discards_a_meaningless_task_by_the_check_it_failed(bookstore, pool):
    view = EnvironmentView(bookstore)
    graph = build_tool_graph(view)
    auditor = VerifierAuditor(bookstore, pool, view, graph.nodes)
    assert set(MEANING_CHECKS) < set(CHECKS)
    book = {"id": 1, "title": "Dune"}
    spec = TaskSpec(
        kind="graph",
        environment="bookstore",
        instruction="What is the title of the book whose id is 1?",
        gold_chain=[{"tool": "get_book", "arguments": {"book_id": 1}, "inputs": {}}],
        reference_answer="Dune",
        metadata={"answer": {"shape": "value", "field": "title"}, "gold_results": [book]},
        answer_contract=AnswerContract("scalar", "string").to_dict(),
        signature="by-id",
    )
    audit = auditor.audit(spec)
    assert not audit.passed and audit.failed == "surrogate_id_naming"
    assert auditor.summary.discarded == {"surrogate_id_naming": 1}
    assert auditor.summary.checks_applied["surrogate_id_naming"] == 1
    assert "gold" not in auditor.summary.checks_applied  # no replay for a meaningless task


# --- walks on a database whose unrelated columns overlap in value ---------------------------

OVERLAP_SQL = """
CREATE TABLE employees (employee_id INTEGER PRIMARY KEY, first_name TEXT NOT NULL,
  last_name TEXT NOT NULL, email TEXT NOT NULL);
CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, first_name TEXT NOT NULL,
  last_name TEXT NOT NULL, email TEXT NOT NULL,
  support_rep_id INTEGER REFERENCES employees(employee_id));
CREATE TABLE items (item_id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL NOT NULL);
CREATE TABLE variants (variant_id INTEGER PRIMARY KEY, item_id INTEGER NOT NULL
  REFERENCES items(item_id), sku TEXT NOT NULL, price REAL NOT NULL);
"""
FIRST_NAMES = ["Ann", "Bob", "Cleo", "Dev", "Eli", "Fay"]
LAST_NAMES = ["Moss", "Reed", "Hale", "Pike", "Lund", "Wren"]


def overlap_dump() -> str:
    lines = [OVERLAP_SQL]
    for i, (first, last) in enumerate(zip(FIRST_NAMES, LAST_NAMES, strict=True), start=1):
        lines.append(
            f"INSERT INTO employees VALUES ({i}, '{first}', '{last}', "
            f"'{first.lower()}@staff.test');"
        )
    for i in range(1, 19):  # customers named like the staff: first names overlap
        first, last = FIRST_NAMES[i % 6], LAST_NAMES[(i * 5) % 6]
        lines.append(
            f"INSERT INTO customers VALUES ({i}, '{first}', '{last}', "
            f"'{first.lower()}.{last.lower()}{i}@mail.test', {1 + i % 6});"
        )
    prices = [9.5, 12.0, 15.25, 20.0, 7.75, 30.0]
    for i, price in enumerate(prices, start=1):
        lines.append(f"INSERT INTO items VALUES ({i}, 'Item {chr(64 + i)}', {price});")
    for i in range(1, 19):  # each variant priced like some item: prices overlap
        item = 1 + i % 6
        lines.append(
            f"INSERT INTO variants VALUES ({i}, {item}, 'SKU-{i:03d}', {prices[(i * 7) % 6]});"
        )
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def overlap(tmp_path_factory, pool):
    return package_from_upload(tmp_path_factory, pool, "shop.sql", overlap_dump())


UNRELATED = {
    frozenset({("employees", "first_name"), ("customers", "first_name")}),
    frozenset({("items", "price"), ("variants", "price")}),
    frozenset({("employees", "last_name"), ("customers", "last_name")}),
}


def test_walks_never_join_columns_whose_values_only_overlap(overlap, pool):
    with GraphTaskSynthesizer(overlap, pool, llm=None, tier="goal") as synthesizer:
        nodes = synthesizer.graph.nodes
        for edge in synthesizer.graph.edges:
            source = nodes[edge.source].output_fields.get(edge.field)
            target = nodes[edge.target].params[edge.param].column
            assert frozenset({source, target}) not in UNRELATED, edge
        tasks = []
        for seed, difficulty in enumerate(
            [Difficulty(steps=2), Difficulty(steps=3), Difficulty(steps=3, writes=1)]
        ):
            tasks += synthesizer.synthesize(6, difficulty, seed=100 * seed)
        summary = synthesizer.auditor.summary
    assert tasks
    joins = 0
    for spec in tasks:
        for step in spec.gold_chain:
            for name, binding in step["inputs"].items():
                source = nodes[spec.gold_chain[binding["step"]]["tool"]]
                column = source.output_fields.get(binding["field"])
                target = nodes[step["tool"]].params[name].column
                assert frozenset({column, target}) not in UNRELATED, spec.instruction
                joins += 1
    assert joins, "walks still follow the foreign keys"
    assert "coincidental_join" not in summary.discarded  # the walker never took such a step


# --- every discard counted in the job's account ---------------------------------------------


@pytest.mark.django_db
def test_a_synthesis_run_accounts_for_every_candidate_it_dropped(tmp_path):
    from environments.registry import record_package
    from tasks.service import SynthesisAccount, synthesize_tasks

    environment = record_package(build_sample_package(tmp_path, extra_books=20))
    with SandboxPool(workers=1, recycle_after_program=False) as pool:
        first = SynthesisAccount()
        created = synthesize_tasks(
            environment, count=4, max_walk_length=2, split="train", pool=pool, account=first
        )
        assert created and first.stored == len(created)
        audit = first.audit
        assert audit.kept >= len(created) and set(audit.discarded) <= set(CHECKS)
        again = SynthesisAccount()  # the same seeds: every task is stored already
        assert not synthesize_tasks(
            environment, count=4, max_walk_length=2, split="train", pool=pool, account=again
        )
        assert again.discarded["already stored in this environment"] == len(created)
        assert again.to_dict()["stored"] == 0
