"""What generated tools say to an agent reads as English about this data: articles and plurals
by the word, no references, groups or counts that do not exist, and keys and enums as the
database has them in the build's metadata."""

from __future__ import annotations

from pathlib import Path

import pytest

from environments.builder.publish import manifest_tables
from environments.builder.stages import enum_columns
from environments.discovery.naming import plural, singular, with_article
from environments.discovery.schema import read_schema
from environments.discovery.sources import mine_sources
from environments.discovery.tool_generator import generate_tools

SHOP_SQL = """
CREATE TABLE film (film_id INTEGER PRIMARY KEY, title TEXT NOT NULL);
CREATE TABLE film_pair (pair_id INTEGER PRIMARY KEY,
    first_id INTEGER REFERENCES film, second_id INTEGER REFERENCES film);
CREATE TABLE customer (customer_id INTEGER PRIMARY KEY, email TEXT, phone TEXT, tier TEXT);
CREATE TABLE customer_order (order_id INTEGER PRIMARY KEY,
    customer_id INTEGER REFERENCES customer, placed DATE, total REAL,
    status TEXT CHECK (status IN ('open', 'paid', 'void')));
CREATE TABLE order_item (order_id INTEGER REFERENCES customer_order,
    film_id INTEGER REFERENCES film, quantity INTEGER NOT NULL,
    PRIMARY KEY (order_id, film_id));
CREATE TABLE monarchs (monarch_id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE reading (reading_id INTEGER PRIMARY KEY, celsius REAL);
INSERT INTO film VALUES (1, 'Alien'), (2, 'Brazil'), (3, 'Casablanca');
INSERT INTO film_pair VALUES (1, 1, 2), (2, 2, 3);
INSERT INTO customer VALUES
    (1, 'a@x.org', '555-01', 'gold'), (2, 'b@x.org', '555-02', 'gold'),
    (3, 'c@x.org', '555-03', 'basic'), (4, 'd@x.org', '555-04', 'basic'),
    (5, 'e@x.org', '555-05', 'gold'), (6, 'f@x.org', '555-06', 'basic');
INSERT INTO customer_order VALUES (1, 1, '2024-01-01', 10.5, 'open'),
    (2, 1, '2024-01-02', 20.0, 'paid'), (3, 2, '2024-01-03', 5.0, 'paid');
INSERT INTO order_item VALUES (1, 1, 2), (1, 2, 1), (2, 3, 5);
INSERT INTO monarchs VALUES (1, 'Elizabeth'), (2, 'Victoria');
INSERT INTO reading VALUES (1, 20.5), (2, 21.0), (3, 19.5);
"""


@pytest.fixture(scope="module")
def shop_db(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("shop")
    script = folder / "shop.sql"
    script.write_text(SHOP_SQL)
    return mine_sources(folder / "shop.sqlite", files=[script])


@pytest.fixture(scope="module")
def tools(shop_db):
    return generate_tools(shop_db, "a film shop")


def description(tools, name: str) -> str:
    return tools.schemas[name]["function"]["description"]


def parameters(tools, name: str) -> dict:
    return tools.schemas[name]["function"]["parameters"]["properties"]


def test_plurals_follow_the_word():
    assert plural("monarch") == "monarchs" and singular("monarches") == "monarch"
    assert plural("epoch") == "epochs" and plural("patriarch") == "patriarchs"
    assert plural("church") == "churches" and plural("search") == "searches"
    assert plural("github") == "githubs"  # an unknown name takes a plain -s
    assert singular("apis") == "api" and plural("apis") == "apis"  # not "the apiss"
    assert singular("skus") == "sku" and singular("analysis") == "analysis"


def test_articles_follow_the_sound():
    assert with_article("order item") == "an order item"
    assert with_article("user") == "a user" and with_article("hour") == "an hour"


def test_tool_names_and_descriptions_use_words(tools):
    assert "search_monarchs" in tools.names() and "search_monarches" not in tools.names()
    add = description(tools, "add_film_to_customer_order")
    assert add.startswith("Add an order item to a film shop") and "order_item " not in add
    assert "a order" not in add


def test_a_delete_names_referring_tables_once_and_only_when_there_are_some(tools):
    assert "refer" not in description(tools, "delete_monarch")
    assert "no other table" not in description(tools, "delete_monarch")
    film = description(tools, "delete_film")
    assert "Refused while rows of film_pair or order_item refer to it." in film, film
    assert "film_pair, film_pair" not in film


def test_search_does_not_state_a_row_count_that_changes(tools):
    text = description(tools, "search_customers")
    assert not any(ch.isdigit() for ch in text), text


def test_group_by_offers_only_columns_that_make_groups(tools):
    groups = parameters(tools, "aggregate_customers")["group_by"]["enum"]
    assert groups == ["tier"]  # email and phone are unique to each customer
    text = description(tools, "aggregate_customers")
    assert "grouped by one of tier." in text and "['" not in text


def test_aggregate_without_groups_says_nothing_about_them(tools):
    props = parameters(tools, "aggregate_readings")
    assert "group_by" not in props
    text = description(tools, "aggregate_readings")
    assert "grouped" not in text and "no column" not in text


def test_sum_and_average_offer_measures_only(tools):
    column = parameters(tools, "aggregate_customer_orders")["column"]
    assert "sum/avg: total only" in column["description"]
    ns: dict = {}
    exec(compile(tools.tools_source(), "tools.py", "exec"), ns)
    import sqlite3

    conn = sqlite3.connect(":memory:")
    for bad in ("customer_id", "placed"):
        with pytest.raises(ValueError, match=bad) as refused:
            ns["aggregate_customer_orders"](conn, metric="sum", column=bad)
        assert getattr(type(refused.value), "tool_refusal", None) == "invalid_arguments"


def test_manifest_and_build_facts_show_composite_keys_and_real_enums(shop_db):
    tables = manifest_tables(shop_db)
    assert tables["order_item"]["primary_key"] == ["order_id", "film_id"]
    assert tables["film"]["primary_key"] == ["film_id"]
    enums = enum_columns(shop_db, read_schema(shop_db))
    assert enums["customer_order"]["status"] == ["open", "paid", "void"]
    assert "email" not in enums.get("customer", {}) and "phone" not in enums.get("customer", {})
