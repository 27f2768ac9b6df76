"""Domain model rules: taxonomy levels, immutable verified versions, unique keys, proposals."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from arena.models import EvolutionRound, ExpansionProposal
from aw_site.models import Job
from environments.models import Category, Environment, ImmutableVersionError, Tool
from tasks.models import Task
from training.models import Policy

pytestmark = pytest.mark.django_db


def make_environment(name: str = "airports", **fields) -> Environment:
    category = Category.ensure_path("Travel & Transportation", "Flights", "Airports")
    return Environment.objects.create(
        name=name, category=category, manifest={"name": name}, **fields
    )


def test_category_paths_are_three_levels_and_reused():
    leaf = Category.ensure_path("Finance", "Currencies", "Exchange rates")
    again = Category.ensure_path("Finance", "Currencies", "Exchange rates")
    assert leaf == again
    assert leaf.level == 3 and leaf.parent.level == 2 and leaf.primary().name == "Finance"
    assert leaf.path == "Finance > Currencies > Exchange rates"
    bad = Category(name="Orphan", level=2)
    with pytest.raises(ValidationError):
        bad.full_clean()


def test_verified_environment_is_immutable_but_can_be_retired():
    environment = make_environment(status=Environment.Status.VERIFYING)
    environment.transition(Environment.Status.VERIFIED)
    assert environment.verified_at is not None
    environment.manifest = {"name": "airports", "tools": ["sneaky"]}
    with pytest.raises(ImmutableVersionError, match="immutable"):
        environment.save()
    environment.refresh_from_db()
    environment.transition(Environment.Status.RETIRED)
    assert Environment.objects.get(pk=environment.pk).status == "retired"


def test_status_transitions_are_checked():
    environment = make_environment()
    with pytest.raises(ValidationError, match="cannot move"):
        environment.transition(Environment.Status.VERIFIED)


def test_environment_versions_are_unique_per_name():
    make_environment(version=1)
    assert make_environment(version=2).next_version_number() == 3
    with pytest.raises(IntegrityError), transaction.atomic():
        make_environment(version=1)


def test_tool_names_unique_and_accuracy_bounded():
    environment = make_environment()
    Tool.objects.create(environment=environment, name="get_airport", schema={})
    with pytest.raises(IntegrityError), transaction.atomic():
        Tool.objects.create(environment=environment, name="get_airport", schema={})
    with pytest.raises(IntegrityError), transaction.atomic():
        Tool.objects.create(
            environment=environment, name="search_airports", schema={}, test_accuracy=1.5
        )


def test_task_signature_unique_within_environment():
    environment = make_environment()
    Task.objects.create(
        environment=environment, kind="graph", instruction="Find JFK", signature="abc"
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        Task.objects.create(
            environment=environment, kind="graph", instruction="Find JFK again", signature="abc"
        )


def test_job_progress_is_bounded():
    with pytest.raises(IntegrityError), transaction.atomic():
        Job.objects.create(kind="system.worker_check", progress=1.5)


def test_proposal_review_once_and_only_approved_apply(reviewer):
    policy = Policy.objects.create(name="tiny", kind=Policy.Kind.LOCAL_HF)
    evolution_round = EvolutionRound.objects.create(number=1, policy=policy)
    proposal = ExpansionProposal.objects.create(round=evolution_round, kind="more_tasks")
    with pytest.raises(ValidationError, match="only approved"):
        proposal.ensure_applicable()
    proposal.review(reviewer, approve=True, note="looks right")
    proposal.ensure_applicable()
    with pytest.raises(ValidationError, match="already approved"):
        proposal.review(reviewer, approve=False)
