"""Applying expansions: typed parameters honoured, exact changes recorded, a round whose every
expansion failed ends failed, superseded versions leave sampling and training."""

from __future__ import annotations

import pytest
from django.test import Client

from arena.models import ExpansionProposal
from arena.steps import ExpansionsFailed, current_versions, expand, round_training_set
from environments.models import Environment
from environments.registry import record_package
from tasks.gold_tools import gold_tools
from tests.support import factories
from tests.support.job_context import QuietJobContext
from tests.support.sample_package import build_sample_package
from training.models import TrainingRun, TrainingTask


@pytest.fixture
def bookstore(tmp_path, settings):
    settings.STORAGE_ROOT = tmp_path / "storage"
    return record_package(build_sample_package(tmp_path / "pkg", extra_books=10))


def approved(evolution_round, environment, kind="more_tasks", **params) -> ExpansionProposal:
    return ExpansionProposal.objects.create(
        round=evolution_round,
        kind=kind,
        environment=environment,
        params=params,
        status=ExpansionProposal.Status.APPROVED,
    )


@pytest.mark.django_db
def test_targeted_tasks_use_the_tools_and_reach_the_training_set(bookstore, viewer_api, viewer):
    evolution_round = factories.make_round(status="expanding", seed=5)
    target = approved(
        evolution_round,
        bookstore,
        count=4,
        min_walk_length=2,
        write_steps=1,
        tools=["update_stock"],
    )
    assert expand(evolution_round, QuietJobContext()) == {"applied": 1, "failed": 0}
    target.refresh_from_db()
    assert target.status == "applied" and target.result["version"] == bookstore.version
    created = target.result["tasks"]
    assert len(created) == target.result["tasks_created"] > 0
    tasks = list(bookstore.tasks.filter(pk__in=created))
    assert all("update_stock" in gold_tools({"gold_chain": t.gold_chain}) for t in tasks)
    assert {t.split for t in tasks} == {"train"} and {t.round_number for t in tasks} == {
        evolution_round.number
    }

    evolution_round.config = {"replay_ratio": 0.5}
    run = TrainingRun.objects.create(
        base_policy=evolution_round.policy, round_number=evolution_round.number
    )
    links = round_training_set(evolution_round, run)
    new = [link for link in links if link.source == "expansion"]
    assert {link.task_id for link in new} == set(created)
    assert {link.proposal for link in new} == {target.pk}
    assert len([link for link in links if link.source == "replay"]) <= round(0.5 * len(new))

    from arena.steps import replay_note

    replayed = len(links) - len(new)
    note = replay_note(evolution_round, links)
    assert note.startswith(f"training set: {len(new)} task(s) from expansions, {replayed} replayed")
    assert ("asks for" in note) == (replayed < round(0.5 * len(new)))

    # The run lists its tasks and where each came from: API and console.
    TrainingTask.objects.bulk_create(links)
    detail = viewer_api.get(f"/api/training-runs/{run.pk}/").json()["training_set"]
    assert detail["tasks"] == len(links) and detail["by_source"]["expansion"] == len(new)
    assert detail["by_proposal"] == [
        {
            "proposal": target.pk,
            "tasks": len(new),
            "environments": [f"bookstore@v{bookstore.version}"],
        }
    ]
    listed = viewer_api.get(f"/api/training-runs/{run.pk}/tasks/").json()
    assert listed["count"] == len(links) and listed["summary"] == detail
    assert {row["task"] for row in listed["results"] if row["proposal"] == target.pk} == set(
        created
    )
    page = Client()
    page.force_login(viewer)
    body = page.get(f"/training/{run.pk}/").content.decode()
    assert f"#proposal-{target.pk}" in body and f"/tasks/{created[0]}/" in body


@pytest.mark.django_db
def test_a_round_whose_every_expansion_failed_fails_with_the_reasons(bookstore):
    evolution_round = factories.make_round(status="expanding")
    approved(evolution_round, bookstore, count=2, tools=["no_such_tool"])
    with pytest.raises(ExpansionsFailed, match="every approved expansion failed: #\\d+ more_tasks"):
        expand(evolution_round, QuietJobContext())
    (proposal,) = evolution_round.proposals.all()
    assert proposal.status == "failed" and "no_such_tool" in proposal.result["error"]


@pytest.mark.django_db
def test_superseded_versions_say_so_in_the_api_and_console(viewer_api, viewer):
    old = factories.make_environment("shop", version=1)
    new = factories.make_environment("shop", version=2, parent=old)
    listed = {
        row["version"]: row["superseded"]
        for row in viewer_api.get("/api/environments/?name=shop").json()["results"]
    }
    assert listed == {1: True, 2: False}
    assert viewer_api.get(f"/api/environments/{old.pk}/").json()["superseded"] is True
    page = Client()
    page.force_login(viewer)
    body = page.get(f"/environments/{old.pk}/").content.decode()
    assert f'href="/environments/{new.pk}/">superseded by v2</a>' in body
    assert "superseded by" not in page.get(f"/environments/{new.pk}/").content.decode()


@pytest.mark.django_db
def test_superseded_versions_are_not_sampled():
    old = factories.make_environment("shop", version=1)
    new = factories.make_environment("shop", version=2, parent=old)
    other = factories.make_environment("zoo")
    assert current_versions([old, other, new]) == [new, other]
    # Nor trained on by a run that names no environments.
    from training.service import training_tasks

    for environment in (old, new, other):
        factories.make_task(environment, split="train")
    run = TrainingRun.objects.create(base_policy=factories.make_policy())
    trained_on = {t.environment_id for t in training_tasks(run, per_environment=5)}
    assert trained_on == {new.pk, other.pk}


@pytest.mark.django_db
def test_bad_parameters_are_refused_on_save():
    evolution_round = factories.make_round()
    with pytest.raises(Exception, match="tasks"):
        ExpansionProposal.objects.create(
            round=evolution_round, kind="complexify_database", params={"tasks": -1}
        )


@pytest.mark.django_db
def test_a_new_environment_proposal_builds_an_unbuilt_theme_of_its_category():
    from arena.steps import theme_in_category
    from environments.models import Theme

    shopping = factories.make_category("Shopping", "Books", "Bookstore")
    travel = factories.make_category("Travel", "Flights", "Airports")
    built = Theme.objects.create(name="shop-a", source_kind="prd", category=shopping)
    factories.make_environment("shop_a", category=shopping, theme=built)
    Theme.objects.create(name="trip", source_kind="prd", category=travel)
    wanted = Theme.objects.create(name="shop-b", source_kind="mcp_spec", category=shopping)
    assert theme_in_category(shopping, None) == wanted
    assert theme_in_category(travel.primary(), built.pk) == built  # the one it names wins
    assert theme_in_category(factories.make_category("Health", "Clinics", "Dental"), None) is None
    # The weak subcategory first: a theme in Shopping > Games waits behind Shopping > Books.
    games = factories.make_category("Shopping", "Games", "Board games")
    other_sub = Theme.objects.create(name="shop-c", source_kind="prd", category=games)
    assert theme_in_category(games, None) == other_sub
    assert theme_in_category(shopping, None) == wanted
    with pytest.raises(ValueError, match="theme 9999 does not exist"):
        theme_in_category(shopping, 9999)


@pytest.mark.django_db
def test_a_complexify_proposal_naming_an_unknown_tool_builds_no_version(bookstore):
    evolution_round = factories.make_round(status="expanding")
    approved(evolution_round, bookstore, "complexify_database", tools=["nope_tool"], tasks=2)
    with pytest.raises(ExpansionsFailed, match="has no tool nope_tool"):
        expand(evolution_round, QuietJobContext())
    assert list(Environment.objects.filter(name=bookstore.name)) == [bookstore]


@pytest.mark.django_db
def test_a_complexify_whose_tasks_fail_retires_its_new_version(bookstore, monkeypatch):
    from arena import steps

    def no_tasks(*args, **kwargs):
        raise ValueError("no graph task using get_book")

    monkeypatch.setattr(steps, "_tasks_for", no_tasks)
    evolution_round = factories.make_round(status="expanding")
    approved(
        evolution_round,
        bookstore,
        "complexify_database",
        tools=["get_book"],
        tasks=2,
        rows_per_table=3,
    )
    with pytest.raises(ExpansionsFailed, match="no graph task using get_book"):
        expand(evolution_round, QuietJobContext())
    grown = Environment.objects.get(name=bookstore.name, version=bookstore.version + 1)
    assert grown.status == "retired" and steps.current_version(bookstore) == bookstore


@pytest.mark.django_db
def test_task_proposals_land_on_the_version_the_same_round_complexified(bookstore):
    """Applied in order: the new version first, then the more-tasks proposal on it, so its
    tasks are current and reach the training set (they were dropped when made on the parent)."""
    evolution_round = factories.make_round(status="expanding", seed=9)
    more = approved(evolution_round, bookstore, count=3, min_walk_length=1, max_walk_length=2)
    grow = approved(evolution_round, bookstore, "complexify_database", tools=["get_book"], tasks=0)
    assert expand(evolution_round, QuietJobContext()) == {"applied": 2, "failed": 0}
    more.refresh_from_db()
    grow.refresh_from_db()
    assert more.result["version"] == grow.result["version"] == bookstore.version + 1
    run = TrainingRun.objects.create(base_policy=evolution_round.policy)
    links = round_training_set(evolution_round, run)
    expansion = {link.task_id for link in links if link.source == "expansion"}
    assert set(more.result["tasks"]) <= expansion


def test_an_unreachable_walk_length_steps_down_through_the_failures_own_length():
    from arena.steps import _fallback_lengths

    assert _fallback_lengths(8) == [8, 7, 4, 2, 1]
    assert _fallback_lengths(2) == [2, 1] and _fallback_lengths(1) == [1]


@pytest.mark.django_db
def test_a_round_training_budget_caps_expansion_tasks_per_environment_in_turns(bookstore):
    evolution_round = factories.make_round(status="expanding", seed=4)
    first = approved(evolution_round, bookstore, count=4, min_walk_length=1, max_walk_length=2)
    second = approved(
        evolution_round, bookstore, count=4, min_walk_length=1, max_walk_length=3, write_steps=1
    )
    assert expand(evolution_round, QuietJobContext())["applied"] == 2
    evolution_round.config = {"replay_ratio": 0.0, "training": {"tasks_per_environment": 3}}
    run = TrainingRun.objects.create(base_policy=evolution_round.policy)
    links = round_training_set(evolution_round, run)
    assert len(links) == 3 and {link.source for link in links} == {"expansion"}
    assert {link.proposal for link in links} == {first.pk, second.pk}  # both proposals served
    evolution_round.config = {"replay_ratio": 0.0}  # no budget set: every expansion task
    first.refresh_from_db()
    second.refresh_from_db()
    made = len(first.result["tasks"]) + len(
        set(second.result["tasks"]) - set(first.result["tasks"])
    )
    assert len(round_training_set(evolution_round, run)) == made
