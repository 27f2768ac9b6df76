"""One environment's tabs: overview, read-only database browser, tools, tool graph, tasks, MCP."""

from __future__ import annotations

import sqlite3

import pytest
from django.urls import reverse

from environments.page_tabs import tab_names
from environments.views import open_read_only, read_database
from tests.support import factories


@pytest.fixture
def signed_in(client, viewer):
    client.force_login(viewer)
    return client


@pytest.fixture
def bookstore(db, tmp_path):
    return factories.make_package_environment(tmp_path)


def tab(client, environment, name, **params):
    return client.get(reverse("environment-tab", args=[environment.pk, name]), params)


@pytest.mark.django_db
def test_detail_page_renders_overview_with_provenance(signed_in, bookstore):
    response = signed_in.get(reverse("environment-detail", args=[bookstore.pk]))
    body = response.content.decode()
    assert response.status_code == 200
    assert "bookstore@v1" in body
    assert "Shopping › Books › Bookstore" in body
    assert 'id="provenance"' in body and "tests/support/sample_package.py" in body
    assert "docs/prd/bookstore.md" in body  # theme provenance
    for name in ("overview", "database", "tools", "graph", "tasks", "mcp"):
        assert f'data-tab="{name}"' in body


@pytest.mark.django_db
def test_every_tab_loads_as_an_htmx_fragment(signed_in, bookstore):
    for name in ("overview", "database", "tools", "graph", "tasks", "mcp"):
        response = tab(signed_in, bookstore, name)
        assert response.status_code == 200, name
        body = response.content.decode()
        assert "<html" not in body
        assert f'aria-selected="true" data-tab="{name}"' in body
    assert tab(signed_in, bookstore, "nonsense").status_code == 404


@pytest.mark.django_db
def test_tabs_keep_their_order_and_labels_whichever_app_registers_them(signed_in, bookstore):
    # environments renders the registry (environments/page_tabs.py); the tool graph and task
    # tabs are registered by tasks (tasks/environment_tabs.py), which environments never imports.
    assert tab_names() == ("overview", "database", "tools", "graph", "tasks", "mcp")
    body = signed_in.get(reverse("environment-detail", args=[bookstore.pk])).content.decode()
    body = body[body.index('<nav class="tabs"') :]
    labels = [">Overview<", ">Database<", ">Tools<", ">Tool graph<", ">Tasks<", ">MCP<"]
    positions = [body.index(label) for label in labels]
    assert positions == sorted(positions)
    unknown = signed_in.get(reverse("environment-detail", args=[bookstore.pk]), {"tab": "nope"})
    assert 'id="tab-panel" data-tab="overview"' in unknown.content.decode()


@pytest.mark.django_db
def test_full_page_can_open_on_any_tab(signed_in, bookstore):
    response = signed_in.get(
        reverse("environment-detail", args=[bookstore.pk]), {"tab": "database"}
    )
    assert 'data-table="book"' in response.content.decode()


@pytest.mark.django_db
def test_database_tab_lists_tables_schema_and_rows(signed_in, bookstore):
    body = tab(signed_in, bookstore, "database", table="book").content.decode()
    assert 'data-table="author"' in body and 'data-table="purchase"' in body
    assert "author.id" in body  # foreign key of book.author_id
    assert "The Left Hand of Darkness" in body
    assert "Rows 1–4 of 4" in body


@pytest.mark.django_db
def test_database_rows_are_paginated(tmp_path):
    from tests.support.sample_package import build_sample_package

    path = build_sample_package(tmp_path, name="big", extra_books=60) / "state.sqlite"
    first = read_database(path, "book", 1)
    assert first["total_rows"] == 64 and first["row_pages"] == 3 and len(first["rows"]) == 25
    last = read_database(path, "book", 99)
    assert last["row_page"] == 3 and len(last["rows"]) == 14
    assert read_database(path, "no_such_table", 1)["table"] == "author"


def test_database_is_opened_read_only(tmp_path):
    from tests.support.sample_package import build_sample_package

    path = build_sample_package(tmp_path) / "state.sqlite"
    connection = open_read_only(path)
    with pytest.raises(sqlite3.OperationalError):
        connection.execute("DELETE FROM book")
    connection.close()


@pytest.mark.django_db
def test_missing_package_is_explained_not_crashed(signed_in):
    environment = factories.make_environment("ghost", package_path="/nonexistent/ghost/v1")
    body = tab(signed_in, environment, "database").content.decode()
    assert "missing" in body and 'id="database-missing"' in body
    no_package = factories.make_environment("draft-env", package_path="")
    assert "no package on disk" in tab(signed_in, no_package, "database").content.decode()
    graph = tab(signed_in, environment, "graph")
    assert graph.status_code == 200 and "<svg" in graph.content.decode()


@pytest.mark.django_db
def test_tools_tab_shows_schema_code_tests_and_verification(signed_in):
    environment = factories.make_environment("shop", tools=0)
    factories.make_tool(environment, "get_item", passing_tests=2, failing_tests=1)
    body = tab(signed_in, environment, "tools").content.decode()
    assert 'data-tool="get_item"' in body
    assert "def get_item(db, **params)" in body
    assert "tests 2/3" in body
    assert "AssertionError: expected 3 rows" in body
    assert "not verified" in body
    assert "&quot;sandbox&quot;: &quot;clean&quot;" in body


@pytest.mark.django_db
def test_graph_tab_draws_the_tool_dependency_graph(signed_in, bookstore):
    body = tab(signed_in, bookstore, "graph").content.decode()
    assert '<svg class="chart tool-graph"' in body
    for tool in ("get_book", "search_books", "place_order", "update_stock"):
        assert f'data-tool="{tool}"' in body
    assert 'data-kind="write"' in body


@pytest.mark.django_db
def test_graph_falls_back_to_the_manifest(signed_in):
    manifest = {
        "tools": [],
        "tool_kinds": {},
        "tool_graph": {
            "nodes": [
                {"id": "get_author", "kind": "read", "x": 40, "y": 40},
                {"id": "list_books", "kind": "read", "x": 260, "y": 40},
            ],
            "edges": [
                {
                    "source": "get_author",
                    "target": "list_books",
                    "field": "id",
                    "param": "author_id",
                }
            ],
        },
    }
    environment = factories.make_environment("manifest-graph", tools=0, manifest=manifest)
    body = tab(signed_in, environment, "graph").content.decode()
    assert "recorded in the manifest" in body
    assert 'class="edge"' in body and "author_id" in body


@pytest.mark.django_db
def test_tasks_tab_lists_tasks_and_filters_by_split(signed_in, bookstore):
    factories.make_task(bookstore, split="train", instruction="Train on this one")
    factories.make_task(bookstore, split="arena", instruction="Arena only task")
    body = tab(signed_in, bookstore, "tasks", split="arena").content.decode()
    assert "Arena only task" in body and "Train on this one" not in body


@pytest.mark.django_db
def test_tasks_tab_and_api_show_the_verifier_audit(signed_in, bookstore):
    bookstore.task_audit = {
        "audited": 40,
        "kept": 36,
        "discarded": {"gold": 1, "extra_write": 3},
        "checks_applied": {"gold": 40},
    }
    bookstore.save(update_fields=["task_audit"])
    body = tab(signed_in, bookstore, "tasks").content.decode()
    assert "Verifier audit" in body and "<b>40</b> synthesized tasks audited" in body
    assert "<b>36</b> kept (90%)" in body
    assert body.index("extra_write") < body.index(">gold<")  # most frequent reason first
    api = signed_in.get(f"/api/environments/{bookstore.pk}/").json()
    assert api["task_audit"]["discarded"] == {"gold": 1, "extra_write": 3}


@pytest.mark.django_db
def test_mcp_tab_explains_both_transports(signed_in, bookstore):
    body = tab(signed_in, bookstore, "mcp").content.decode()
    assert "python manage.py serve_mcp bookstore" in body
    assert "http://testserver/mcp/bookstore/" in body


@pytest.mark.django_db
def test_task_detail_page(signed_in, bookstore):
    # A train task: a viewer sees its gold chain (evaluation tasks hide it from viewers).
    task = factories.make_task(bookstore, split="train")
    task.answer_contract = {"kind": "scalar", "value_type": "number", "precision": 2}
    task.audit = {
        "passed": True,
        "failed": None,
        "checks": [
            {"name": "gold", "applicable": True, "passed": True, "solved": True, "total": 1.0},
            {"name": "no_op", "applicable": True, "passed": True, "solved": False, "total": 0.0},
        ],
    }
    task.save()
    body = signed_in.get(reverse("task-detail", args=[task.pk])).content.decode()
    assert "Gold chain" in body and "place_order" in body
    assert "a single number, rounded to 2 decimals" in body
    assert "Verifier audit" in body and ">no-op run<" in body and "not solved" in body
