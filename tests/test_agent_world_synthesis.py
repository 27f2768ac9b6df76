"""Our own task synthesis on released environments: the environment view reads the JSON
collections as tables, graph and programmatic tasks are drawn from real rows and learn the
tools' output fields by calling them, the verifier audit keeps only tasks whose reward tells
right runs from wrong, and a synthesis job on an imported environment stores tasks and says
why it dropped the others."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import transaction

from aw_site.jobs import enqueue
from aw_site.models import Job
from environments.agent_world.pipeline import run_agent_world_pipeline
from environments.builder.request import BuildRequest
from environments.models import Environment
from environments.package import load_package
from environments.runtime import SandboxPool
from tasks.models import Task
from tasks.reward import score
from tasks.service import synthesize_specs
from tasks.synthesis.environment_view import EnvironmentView
from tasks.synthesis.replay import replay_gold, run_calls
from tasks.synthesis.tool_graph import build_tool_graph
from tests.support.agent_world_release import (
    LIBRARY,
    SHOP,
    write_release,
    write_shop_release,
)
from tests.support.worker import wait_for


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The library and the shop, built once through the pipeline (no database needed)."""
    root = tmp_path_factory.mktemp("aw-synthesis")
    packages = {}
    for env_id, release in (
        (LIBRARY, write_release(root / "library")),
        (SHOP, write_shop_release(root / "shop")),
    ):
        request = BuildRequest.for_agent_world(str(release), env_id)
        outcome = run_agent_world_pipeline(request, root=root / "out", workdir=root / env_id)
        packages[env_id] = load_package(outcome.path)
    return packages


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=1) as own:
        yield own


def test_the_view_reads_collections_as_tables(built):
    library = EnvironmentView(built[LIBRARY])
    assert sorted(library.tables) == ["books", "loans", "settings", "tags"]  # the log left out
    books = library.tables["books"]
    assert (books.primary_key, books.columns["copies"], books.columns["title"]) == (
        ["id"],
        "INTEGER",
        "TEXT",
    )
    assert library.tables["loans"].foreign_keys == {"book_id": ("books", "id")}
    assert library.tables["tags"].primary_key == []  # rows without ids: matched by content
    assert library.rows("settings") == [
        {"library": "Lantern", "max_loans_per_member": 3, "greeting": "¡Bienvenidos!"}
    ]  # a single document is a one-row table
    assert library.column_values("books", "title")[0] == "Cien años de soledad"

    shop = EnvironmentView(built[SHOP])
    orders = shop.tables["orders"]
    assert orders.primary_key == ["order_id"]  # no `id`: the `<singular>_id` that is distinct
    assert orders.foreign_keys == {"customer_id": ("customers", "customer_id")}
    assert orders.is_numeric("total") and not orders.is_numeric("status")
    assert [r["order_id"] for r in shop.rows("orders")][:2] == ["o_101", "o_102"]


def test_the_tool_graph_learns_output_fields_by_calling_the_tools(built, pool):
    package = built[SHOP]
    with pool.start_episode(package) as episode:
        graph = build_tool_graph(package, episode)
    listing = graph.nodes["list_orders_for_customer"]
    assert listing.observed and {"order_id", "total", "status"} <= set(listing.output_fields)
    edges = {(e.source, e.target, e.field, e.param) for e in graph.edges}
    assert ("list_customers", "list_orders_for_customer", "customer_id", "customer_id") in edges
    assert ("list_orders_for_customer", "update_order_status", "order_id", "order_id") in edges


def test_graph_and_programmatic_tasks_pass_the_audit_on_a_released_environment(built, pool):
    package = built[SHOP]
    graphs = synthesize_specs(
        package, pool, kind="graph", count=4, max_walk_length=3, write_steps=1, seed=3
    )
    assert len(graphs.specs) == 4 and graphs.audit.kept == 4
    assert graphs.audit.checks_applied["no_op"] == 4
    writes = [s for s in graphs.specs if any(c["kind"] == "write" for c in s.gold_chain)]
    assert writes and all(s.expected_diff for s in writes)
    # a write's stamp comes from the frozen clock: the gold replays to the very same state
    for spec in graphs.specs:
        run = replay_gold(spec, pool, package)
        assert score(spec, run).success, spec.instruction
        assert run.final_state_hash == spec.expected_state_hash
        assert "audit_log" not in (spec.expected_diff or {})  # the log collection left out

    programs = synthesize_specs(package, pool, kind="programmatic", count=3, seed=1)
    assert len(programs.specs) == 3 and programs.audit.kept == 3
    assert {c["tool"] for s in programs.specs for c in s.gold_chain} <= {
        "list_orders_for_customer",
        "get_order",
        "update_order_status",
        "list_customers",
        "get_customer",
    }
    # a wrong implementation of one task fails its own reward
    spec = programs.specs[0]
    wrong = run_calls(pool, package, [], final_answer="not the answer")
    assert not score(spec, wrong).success


def test_a_release_without_parent_child_tools_says_why_it_has_no_programs(built, pool):
    batch = synthesize_specs(built[LIBRARY], pool, kind="programmatic", count=2)
    assert batch.specs == []
    assert batch.discarded == {
        "program: the environment has no parent -> children tools to loop over": 1
    }


@pytest.mark.django_db(transaction=True)
def test_a_synthesis_job_on_an_imported_environment(settings, tmp_path):
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    release = write_shop_release(tmp_path / "release")
    call_command("build_environment", agent_world=str(release), stdout=StringIO())
    shop = Environment.objects.get(name=f"aw_{SHOP}")
    with transaction.atomic():
        job = enqueue(
            "tasks.synthesize",
            {"environment": shop.pk, "count": 12, "max_walk_length": 2, "write_steps": 1},
        )
    wait_for(lambda: Job.objects.get(pk=job.pk).is_finished, timeout=120, message="synthesis")
    record = Job.objects.get(pk=job.pk)
    assert record.state == "succeeded", record.error
    created = Task.objects.filter(environment=shop)  # the shop ships no questions
    assert record.result["created"] == record.result["stored"] == created.count() >= 4
    assert all(t.audit["passed"] and t.gold_chain for t in created)
    # a world this small gives the same walk twice: the job counts it, in words
    assert record.result["discarded"] == {"same walk as a task found before": 5}
    assert record.result["audit"]["kept"] == record.result["audit"]["audited"]
    assert record.message.endswith("discarded"), record.message
