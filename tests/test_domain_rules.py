"""Domain rules the data supports: order lifecycles, observed signs, English names."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from environments.builder.pipeline import design_tools
from environments.discovery.domain_rules import infer_rules, verb_for
from environments.discovery.naming import plural, singular
from environments.discovery.schema import read_schema
from environments.discovery.tool_generator import ToolSet, generate_tools
from environments.discovery.verification import verify_tools
from environments.runtime import SandboxPool

STATUSES = ["pending", "processing", "shipped", "delivered", "cancelled"]


def build_retail(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT NOT NULL,
            email TEXT UNIQUE);
        CREATE TABLE addresses (address_id INTEGER PRIMARY KEY,
            customer_id INTEGER REFERENCES customers(customer_id), city TEXT);
        CREATE TABLE categories (category_id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        CREATE TABLE products (product_id INTEGER PRIMARY KEY, name TEXT NOT NULL,
            category_id INTEGER REFERENCES categories(category_id), price REAL NOT NULL,
            stock INTEGER NOT NULL);
        CREATE TABLE orders (order_id INTEGER PRIMARY KEY,
            customer_id INTEGER NOT NULL REFERENCES customers(customer_id),
            status TEXT NOT NULL, created_at DATETIME NOT NULL, delivered_at DATETIME,
            total REAL);
        CREATE TABLE order_items (item_id INTEGER PRIMARY KEY,
            order_id INTEGER NOT NULL REFERENCES orders(order_id),
            product_id INTEGER NOT NULL REFERENCES products(product_id),
            quantity INTEGER NOT NULL, unit_price REAL NOT NULL);
        """
    )
    names = ["Ada", "Ben", "Cleo", "Dev", "Eve", "Finn"]
    conn.executemany(
        "INSERT INTO customers VALUES (?, ?, ?)",
        [(i + 1, n, f"{n.lower()}@shop.test") for i, n in enumerate(names)],
    )
    cities = ["Lyon", "Oslo", "Quito", "Perth", "Accra", "Hanoi"]
    conn.executemany(
        "INSERT INTO addresses VALUES (?, ?, ?)",
        [(i + 1, i % 5 + 1, c) for i, c in enumerate(cities)],
    )
    conn.executemany(
        "INSERT INTO categories VALUES (?, ?)", [(1, "Kitchen"), (2, "Garden"), (3, "Books")]
    )
    products = [
        ("Kettle", 1, 29.5, 10),
        ("Pan", 1, 18.0, 0),
        ("Rake", 2, 12.25, 4),
        ("Hose", 2, 0.0, 7),
        ("Atlas", 3, 45.0, 2),
        ("Novel", 3, 9.99, 30),
    ]
    conn.executemany(
        "INSERT INTO products VALUES (?, ?, ?, ?, ?)",
        [(i + 1, *p) for i, p in enumerate(products)],
    )
    orders = []
    for i in range(20):
        status = STATUSES[i % 5]
        created = f"2024-03-{i + 1:02d}T10:00:00"
        delivered = f"2024-04-{i + 1:02d}T10:00:00" if status == "delivered" else None
        orders.append((i + 1, i % 6 + 1, status, created, delivered, 10.0 + i))
    conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)", orders)
    conn.executemany(
        "INSERT INTO order_items VALUES (?, ?, ?, ?, ?)",
        [(i + 1, i % 20 + 1, i % 6 + 1, i % 3 + 1, products[i % 6][2]) for i in range(30)],
    )
    conn.commit()
    conn.close()
    return path


@pytest.fixture(scope="module")
def retail_db(tmp_path_factory):
    return build_retail(tmp_path_factory.mktemp("retail") / "retail.sqlite")


@pytest.fixture(scope="module")
def tools(retail_db):
    return generate_tools(retail_db, "the shop")


class Tools:
    """The generated tools.py run in-process over a copy of the database (exact error text)."""

    def __init__(self, toolset: ToolSet, db_path: Path, tmp_path: Path) -> None:
        copy = tmp_path / f"copy-{len(list(tmp_path.glob('copy-*')))}.sqlite"
        copy.write_bytes(Path(db_path).read_bytes())
        self.db = sqlite3.connect(copy)
        self.db.row_factory = sqlite3.Row
        self.namespace: dict = {}
        exec(compile(toolset.tools_source(), "tools.py", "exec"), self.namespace)

    def __call__(self, tool: str, /, **arguments):
        return self.namespace[tool](self.db, **arguments)

    def error(self, tool: str, /, **arguments) -> str:
        with pytest.raises((ValueError, LookupError, PermissionError)) as caught:
            self(tool, **arguments)
        return str(caught.value)


@pytest.fixture
def run(tools, retail_db, tmp_path):
    return Tools(tools, retail_db, tmp_path)


def _first(run, status: str) -> int:
    rows = run("search_orders", status=status, limit=1)["rows"]
    return rows[0]["order_id"]


# --- names ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "entity", "entities"),
    [
        ("orders", "order", "orders"),
        ("addresses", "address", "addresses"),
        ("statuses", "status", "statuses"),
        ("status", "status", "statuses"),
        ("categories", "category", "categories"),
        ("people", "person", "people"),
        ("order_items", "order_item", "order_items"),
        ("species", "species", "species"),
        ("bus", "bus", "buses"),
        ("data", "data", "data"),
        ("element", "element", "elements"),
    ],
)
def test_english_names(table, entity, entities):
    assert singular(table) == entity
    assert plural(table) == entities == plural(entity)


def test_tool_names_are_english(tools):
    names = set(tools.names())
    assert {"get_order", "search_orders", "get_address", "search_addresses"} <= names
    assert {"get_category", "search_categories", "list_orders_for_customer"} <= names
    assert {"list_order_items_for_order", "create_product", "update_product"} <= names
    words = {word for name in names for word in name.split("_")}
    assert not words & {"orderses", "addresss", "addresseses", "categorie", "categorys"}
    assert not any("orderses" in name or "addresss" in name for name in names)


# --- rules read from the data -----------------------------------------------------------------


def test_status_is_a_lifecycle_and_prices_keep_their_sign(retail_db):
    schema = read_schema(retail_db)
    with sqlite3.connect(retail_db) as conn:
        orders = infer_rules(conn, schema["orders"])
        products = infer_rules(conn, schema["products"])
        customers = infer_rules(conn, schema["customers"])
    rule = orders.states["status"]
    assert rule.how == "lifecycle"
    assert rule.values == ["pending", "processing", "shipped", "delivered", "cancelled"]
    assert rule.transitions == {
        "pending": ["processing", "cancelled"],
        "processing": ["shipped", "cancelled"],
        "shipped": ["delivered", "cancelled"],
        "delivered": [],
        "cancelled": [],
    }
    assert rule.tools == {
        "processing": "process_order",
        "shipped": "ship_order",
        "delivered": "deliver_order",
        "cancelled": "cancel_order",
    }
    assert not rule.set_tool  # every target has a verb
    assert products.bounds["price"] == {"minimum": 0}
    assert products.bounds["stock"] == {"minimum": 0}
    assert "name" not in products.states and not customers.states


@pytest.mark.parametrize(
    ("value", "verb"),
    [
        ("cancelled", "cancel"),
        ("Canceled", "cancel"),
        ("shipped", "ship"),
        ("delivered", "deliver"),
        ("refunded", "refund"),
        ("approved", "approve"),
        ("closed", "close"),
        ("archived", "archive"),
        ("completed", "complete"),
        ("returned", "return"),
        ("processed", "process"),
        ("confirmed", "confirm"),
        ("paid", "pay"),
        ("In Progress", "start"),
        ("escalated", "escalate"),  # rules, not the lexicon
        ("stopped", "stop"),
        ("emptied", "empty"),
        ("signed", "sign"),
        ("pending", None),
        ("blue", None),
    ],
)
def test_verbs_from_target_values(value, verb):
    assert verb_for(value) == verb


def _table(tmp_path: Path, rows: list[tuple], with_time: bool) -> tuple[sqlite3.Connection, dict]:
    conn = sqlite3.connect(tmp_path / "t.sqlite")
    stamp = ", seen DATE" if with_time else ""
    conn.execute(f"CREATE TABLE tickets (id INTEGER PRIMARY KEY, stage TEXT{stamp})")
    marks = "?, ?, ?" if with_time else "?, ?"
    conn.executemany(f"INSERT INTO tickets VALUES ({marks})", rows)
    conn.commit()
    return conn, read_schema(tmp_path / "t.sqlite")


def test_unknown_values_follow_their_first_appearance_in_time(tmp_path):
    days = {"triage": "2024-01-01", "fixing": "2024-01-05", "shipped": "2024-01-09"}
    rows = [(i + 1, s, days[s]) for i, s in enumerate(["fixing", "triage", "shipped"] * 3)]
    conn, schema = _table(tmp_path, rows, with_time=True)
    rule = infer_rules(conn, schema["tickets"]).states["stage"]
    assert rule.how == "timestamp order by seen"
    assert rule.values == ["triage", "fixing", "shipped"]
    assert rule.transitions == {
        "triage": ["fixing", "shipped"],
        "fixing": ["shipped"],
        "shipped": [],
    }
    assert rule.tools == {"shipped": "ship_ticket"}
    assert rule.set_tool == "set_ticket_stage"


def test_without_order_every_change_except_out_of_a_final_value(tmp_path):
    rows = [(i + 1, s) for i, s in enumerate(["red", "amber", "closed", "green"] * 2)]
    conn, schema = _table(tmp_path, rows, with_time=False)
    rule = infer_rules(conn, schema["tickets"]).states["stage"]
    assert rule.how == "free"
    assert rule.transitions["red"] == ["amber", "closed", "green"]
    assert rule.transitions["closed"] == []
    assert rule.tools == {"closed": "close_ticket"} and rule.set_tool == "set_ticket_stage"


def test_a_state_column_of_place_codes_is_not_a_lifecycle(tmp_path):
    conn = sqlite3.connect(tmp_path / "s.sqlite")
    conn.execute("CREATE TABLE towns (id INTEGER PRIMARY KEY, state TEXT, status TEXT)")
    conn.executemany(
        "INSERT INTO towns VALUES (?, ?, ?)",
        [(i, ["CA", "NY", "TX"][i % 3], ["open", "closed"][i % 2]) for i in range(12)],
    )
    conn.commit()
    rules = infer_rules(conn, read_schema(tmp_path / "s.sqlite")["towns"])
    assert set(rules.states) == {"status"}


def _run_generated_tests(toolset: ToolSet, db_path: Path, tmp_path: Path) -> dict[str, str]:
    """Every generated unit test, run in-process on a fresh copy: {test: error} of failures."""
    namespace: dict = {}
    exec(compile(toolset.tests_source(), "tool_tests.py", "exec"), namespace)
    failures = {}
    for name, test in namespace.items():
        if not name.startswith("test_"):
            continue
        tools = Tools(toolset, db_path, tmp_path)
        try:
            test(tools)
        except Exception as exc:  # collect every failure
            failures[name] = repr(exc)
        tools.db.close()
    return failures


def test_values_without_a_verb_move_through_set_tool(tmp_path):
    days = {"triage": "2024-01-01", "fixing": "2024-01-05", "shipped": "2024-01-09"}
    rows = [(i + 1, s, days[s]) for i, s in enumerate(["fixing", "triage", "shipped"] * 3)]
    conn, _ = _table(tmp_path, rows, with_time=True)
    conn.close()
    toolset = generate_tools(tmp_path / "t.sqlite", "the tracker")
    assert {"set_ticket_stage", "ship_ticket"} <= set(toolset.names())
    set_schema = toolset.schemas["set_ticket_stage"]["function"]
    assert set_schema["parameters"]["properties"]["stage"]["enum"] == [
        "triage",
        "fixing",
        "shipped",
    ]
    assert "first appear by seen" in set_schema["description"]
    run = Tools(toolset, tmp_path / "t.sqlite", tmp_path)
    assert run("set_ticket_stage", id=2, stage="fixing")["stage"] == "fixing"
    assert "'fixing' to 'triage'" in run.error("set_ticket_stage", id=1, stage="triage")
    assert "banana" in run.error("set_ticket_stage", id=1, stage="banana")
    assert "'shipped' is final" in run.error("set_ticket_stage", id=3, stage="fixing")
    assert not _run_generated_tests(toolset, tmp_path / "t.sqlite", tmp_path)


def test_retail_generated_tests_pass_in_process(tools, retail_db, tmp_path):
    assert not _run_generated_tests(tools, retail_db, tmp_path)


# --- the generated tools enforce them --------------------------------------------------------


def test_toolset_has_transition_tools_and_no_free_status_update(tools):
    names = set(tools.names())
    assert {"cancel_order", "ship_order", "deliver_order", "process_order"} <= names
    assert all(tools.kinds[n] == "write" for n in ("cancel_order", "ship_order"))
    update = tools.schemas["update_order"]["function"]
    assert "status" not in update["parameters"]["properties"]
    assert "cancel_order" in update["description"]
    create = tools.schemas["create_order"]["function"]["parameters"]["properties"]
    assert create["status"]["enum"] == STATUSES
    deliver = tools.schemas["deliver_order"]["function"]["description"]
    assert "'shipped'" in deliver and "delivered: final" in deliver
    product = tools.schemas["create_product"]["function"]["parameters"]["properties"]
    assert product["price"]["minimum"] == 0 and product["stock"]["minimum"] == 0
    for name in ("cancel_order", "ship_order", "deliver_order", "process_order"):
        cases = [t.split("(")[0] for t in tools.tests[name]]
        assert any("_from_" in c and "refused" not in c for c in cases), cases
        assert any("refused_from" in c for c in cases) and any("unknown_value" in c for c in cases)


def test_an_allowed_transition_changes_the_row(run):
    shipped = _first(run, "shipped")
    out = run("deliver_order", order_id=shipped)
    assert out["status"] == "delivered"
    assert run("get_order", order_id=shipped)["status"] == "delivered"
    pending = _first(run, "pending")
    assert run("cancel_order", order_id=pending)["status"] == "cancelled"


def test_unseen_transitions_are_refused_with_the_allowed_moves(run):
    delivered = _first(run, "delivered")
    message = run.error("cancel_order", order_id=delivered)
    assert "'delivered' is final" in message and "'cancelled'" in message
    pending = _first(run, "pending")
    message = run.error("deliver_order", order_id=pending)
    assert "from 'pending' only to processing or cancelled" in message
    assert "reached only from shipped" in message
    # delivered -> pending: no tool moves to pending, update refuses the column
    message = run.error("update_order", order_id=delivered, status="pending")
    assert "cannot be set by update" in message and "cancel_order" in message
    assert "delivered: final" in message
    assert run("get_order", order_id=delivered)["status"] == "delivered"


def test_no_tool_accepts_banana(run, tools):
    order = _first(run, "pending")
    for name in ("cancel_order", "ship_order", "deliver_order", "process_order"):
        assert "banana" in run.error(name, order_id=order, status="banana")
    message = run.error("update_order", order_id=order, status="banana")
    assert "status" in message
    message = run.error(
        "create_order", customer_id=1, status="banana", created_at="2024-05-01", total=3.0
    )
    assert "must be one of" in message and "banana" in message
    created = run("create_order", customer_id=1, status="pending", created_at="2024-05-01")
    assert created["status"] == "pending"


def test_negative_price_refused_by_create_and_update(run):
    message = run.error("create_product", name="Fork", category_id=1, price=-1.5, stock=1)
    assert "products.price must be >= 0" in message
    message = run.error("update_product", product_id=1, price=-0.01)
    assert "products.price must be >= 0" in message
    assert run("update_product", product_id=1, price=0)["price"] == 0
    assert run("create_product", name="Fork", category_id=1, price=2.5, stock=1)["price"] == 2.5
    assert "stock" in run.error("update_product", product_id=1, stock=-2)


def test_every_generated_tool_has_tests(tools):
    assert all(len(tools.tests[n]) >= 2 for n in tools.names())


# --- the whole toolset verifies in the sandbox ------------------------------------------------


def test_retail_toolset_verifies_in_the_sandbox(retail_db):
    designed = design_tools(retail_db, "the shop")
    with SandboxPool(workers=1) as pool:
        verification, _ = verify_tools(
            "retail", retail_db, designed.toolset, pool=pool, threshold=1.0
        )
    report = verification.as_dict()
    generated = set(designed.toolset.functions)
    verified = {v["name"] for v in report["verdicts"] if v["verified"]}
    assert verified == generated, verification.explain()
    assert {"cancel_order", "ship_order", "deliver_order", "process_order"} <= verified
    failed = {v["name"]: v["failed_tests"] for v in report["verdicts"] if v["failed"]}
    assert not failed, failed
