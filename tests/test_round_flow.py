"""A whole evolution round on the embedded default: evaluate, diagnose, review, expand, train."""

from __future__ import annotations

from collections import Counter

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction

from arena.models import EvolutionRound, ExpansionProposal, FailureLabel
from arena.rounds import review_proposal, start_round
from aw_site.models import Job
from environments.registry import record_package
from tasks.models import Task
from tasks.service import synthesize_tasks
from tests.support.sample_package import build_sample_package
from tests.support.training import QUICK_TRAINING
from tests.support.worker import wait_for
from training.models import Policy, Trajectory
from training.service import ensure_tiny_policy

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def arena_world(tmp_path, settings):
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    shop = record_package(build_sample_package(tmp_path / "a", extra_books=20))
    library = record_package(build_sample_package(tmp_path / "b", name="library", extra_books=10))
    for environment in (shop, library):
        synthesize_tasks(environment, count=8, min_walk_length=1, max_walk_length=2, split="train")
    return ensure_tiny_policy()


def wait_round(number: int, statuses: set[str], timeout: float = 600) -> EvolutionRound:
    def reached():
        evolution_round = EvolutionRound.objects.get(number=number)
        return evolution_round if evolution_round.status in statuses else None

    return wait_for(
        reached, timeout=timeout, interval=0.5, message=f"round {number} to reach {statuses}"
    )


def test_round_waits_for_review_then_expands_and_trains(arena_world, reviewer):
    with transaction.atomic():
        evolution_round = start_round(
            user=reviewer, tasks_per_environment=3, training=QUICK_TRAINING, max_walk_length=4
        )
    evolution_round = wait_round(
        evolution_round.number, {"awaiting_approval", "expanding", "training", "done", "failed"}
    )
    assert evolution_round.status == "awaiting_approval", evolution_round.failure_reason
    evaluation = evolution_round.evaluations.get()
    assert evaluation.task_count == Trajectory.objects.count() >= 3
    assert set(evaluation.results["category"]) == {"Shopping"}
    assert evolution_round.scores["Shopping"] == pytest.approx(evaluation.mean_reward)
    report = evolution_round.diagnoses.get()
    failed = Trajectory.objects.filter(success=False).count()
    assert (
        FailureLabel.objects.filter(report=report).values("trajectory").distinct().count() == failed
    )
    proposals = list(evolution_round.proposals.all())
    if not proposals:
        pytest.skip("the tiny policy solved every arena task; nothing to review")
    first = next((p for p in proposals if p.kind == "more_tasks"), None)
    if first is None:
        pytest.skip(f"no more-tasks proposal to approve: {[p.kind for p in proposals]}")
    with pytest.raises(ValidationError, match="only approved"):
        first.ensure_applicable()
    for proposal in proposals:
        review_proposal(proposal, reviewer, approve=proposal is first, note="checked")
    done = wait_round(evolution_round.number, {"done", "failed"})
    assert done.status == "done", done.failure_reason
    first.refresh_from_db()
    assert first.status == "applied", first.result
    assert ExpansionProposal.objects.filter(status="rejected").count() == len(proposals) - 1
    # What the expansion created is what the round trained on, next to a replay sample.
    created = first.result["tasks"]
    assert created and first.result["tasks_created"] == len(created)
    links = done.training_run.task_links.all()
    from_expansion = {link.task_id for link in links if link.source == "expansion"}
    # The round's training options cap expansion tasks per environment (a CPU budget).
    cap = QUICK_TRAINING["tasks_per_environment"]
    per_environment = Counter(
        Task.objects.filter(pk__in=created).values_list("environment_id", flat=True)
    )
    assert from_expansion <= set(created)
    assert len(from_expansion) == sum(min(cap, n) for n in per_environment.values())
    assert {link.proposal for link in links if link.source == "expansion"} == {first.pk}
    assert any(link.source == "replay" for link in links)
    assert done.trained_policy is not None and done.trained_policy.parent == arena_world
    assert done.training_run.metrics.filter(phase="grpo").exists()
    kinds = set(Job.objects.filter(rounds=done).values_list("kind", flat=True))
    assert kinds == {"arena.evaluate", "arena.diagnose", "arena.expand", "arena.train"}


def test_two_auto_approved_rounds_compare_scores(arena_world):
    with transaction.atomic():
        first = start_round(
            auto_approve=True, tasks_per_environment=2, training=QUICK_TRAINING, max_walk_length=4
        )
    first = wait_round(first.number, {"done", "failed"})
    assert first.status == "done", first.failure_reason
    with transaction.atomic():
        second = start_round(
            auto_approve=True, tasks_per_environment=2, train=False, max_walk_length=4
        )
    assert second.policy == first.trained_policy
    second = wait_round(second.number, {"done", "failed"})
    assert second.status == "done", second.failure_reason
    comparison = second.evaluations.get().comparison
    assert "Shopping" in comparison["category"]
    first_tasks = set(first.evaluations.get().trajectories.values_list("task_id", flat=True))
    second_tasks = set(second.evaluations.get().trajectories.values_list("task_id", flat=True))
    assert not first_tasks & second_tasks
    assert Policy.objects.count() == 2
