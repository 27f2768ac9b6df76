"""Reviewers' marks on tasks: who may mark, what a mark takes out of training and arena
sampling, the queue they mark from, the tally per template and intent, and the labels of the
generator that made a task (on tasks the synthesizers really made)."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from environments.runtime import SandboxPool, load_package
from tasks.generator_labels import INTENTS, generator_labels
from tasks.models import Task, TaskReview
from tasks.records import record_tasks
from tasks.reviews import mark_task, marks_summary, review_sample
from tasks.service import fresh_arena_tasks
from tasks.synthesis.graph_tasks import Difficulty, GraphTaskSynthesizer
from tasks.synthesis.program_templates import TEMPLATE_NAMES
from tasks.synthesis.programmatic_tasks import ProgrammaticTaskSynthesizer
from tests.support import factories
from tests.support.sample_package import build_sample_package
from training.service import training_tasks

pytestmark = pytest.mark.django_db


def graph_task(environment, chain, **fields):
    writes = sum(1 for step in chain if step["kind"] == "write")
    return factories.make_task(
        environment, split="train", gold_chain=chain, write_steps=writes, **fields
    )


READ = {"tool": "get_order", "arguments": {"order_id": 1}, "kind": "read"}
COUNT = {"tool": "count_orders", "arguments": {}, "kind": "read"}
WRITE = {"tool": "update_order", "arguments": {"order_id": 1, "status": "shipped"}, "kind": "write"}


# --- labels ------------------------------------------------------------------------------------


def test_programmatic_tasks_are_labelled_by_their_template_and_its_intent():
    environment = factories.make_environment(tasks=0)
    task = factories.make_task(
        environment, kind="programmatic", metadata={"extra": {"template": "compare_totals"}}
    )
    labels = generator_labels(task)
    assert (labels.template, labels.intent) == ("program/compare_totals", "comparison")
    update = factories.make_task(
        environment, kind="programmatic", metadata={"extra": {"template": "group_update"}}
    )
    assert generator_labels(update).intent == "multi_step_workflow"


def test_graph_tasks_are_labelled_by_walk_shape_and_inferred_intent():
    environment = factories.make_environment(tasks=0)
    answer = {"extra": {"answer": {"shape": "value", "field": "status"}}}
    lookup = graph_task(environment, [READ, READ], metadata=answer)
    assert generator_labels(lookup).template == "walk/2-3/get/value"
    assert generator_labels(lookup).intent == "lookup"
    counted = graph_task(environment, [READ, COUNT])
    assert generator_labels(counted).intent == "aggregation"
    assert generator_labels(counted).template == "walk/2-3/count/unknown"
    action = graph_task(environment, [READ, WRITE])
    assert generator_labels(action).intent == "conditional_action"
    branch = {**WRITE, "branch": {"step": 0, "field": "total", "test": ">", "value": 10}}
    assert generator_labels(graph_task(environment, [READ, branch])).template.endswith(
        "/if/unknown"
    )
    workflow = graph_task(environment, [READ, WRITE, READ, WRITE])
    assert generator_labels(workflow).intent == "multi_step_workflow"
    compared = graph_task(environment, [READ, {**READ, "branch": {"step": 0}}])
    assert generator_labels(compared).intent == "comparison"


def test_an_intent_stored_by_synthesis_wins_over_the_inferred_one():
    environment = factories.make_environment(tasks=0)
    task = graph_task(environment, [READ], metadata={"extra": {"intent": "Multi-step workflow"}})
    assert generator_labels(task).intent == "multi_step_workflow"
    odd = graph_task(environment, [READ], metadata={"extra": {"intent": "poetry"}})
    assert generator_labels(odd).intent == "lookup"  # not one of the five: inferred instead


def test_labels_of_tasks_the_synthesizers_made(tmp_path):
    """Every stored graph and programmatic task of the sample bookstore gets a template the
    generator really has and one of the five intents."""
    package_dir = build_sample_package(tmp_path / "bookstore")
    environment = factories.make_environment("bookstore", tasks=0, package_path=str(package_dir))
    package = load_package(package_dir)
    with SandboxPool(workers=1, recycle_after_program=False) as pool:
        with GraphTaskSynthesizer(package, pool, llm=None, tier="goal") as graphs:
            specs = graphs.synthesize(4, Difficulty(steps=3, min_steps=1), seed=3)
            specs += graphs.synthesize(3, Difficulty(steps=3, writes=1, min_steps=2), seed=4)
        programs = ProgrammaticTaskSynthesizer(package, pool, llm=None)
        specs += programs.synthesize(6, seed=3)
    tasks = record_tasks(environment, specs, split="train")
    kinds = {t.kind for t in tasks}
    assert kinds == {"graph", "programmatic"}, kinds
    for task in tasks:
        labels = generator_labels(task)
        assert labels.intent in INTENTS
        if task.kind == "programmatic":
            assert labels.template.removeprefix("program/") in TEMPLATE_NAMES
        else:
            assert labels.template.startswith("walk/") and not labels.template.endswith("unknown")
    writes = [t for t in tasks if t.write_steps]
    assert writes
    assert all(
        generator_labels(t).intent in ("conditional_action", "multi_step_workflow") for t in writes
    )


# --- marking -----------------------------------------------------------------------------------


def test_only_reviewers_mark_and_marks_are_validated(viewer, reviewer):
    task = factories.make_environment(tasks=1).tasks.get()
    with pytest.raises(PermissionDenied, match="reviewer role"):
        mark_task(task, viewer, "natural")
    with pytest.raises(ValidationError, match="unknown mark 'great'"):
        mark_task(task, reviewer, "great")
    with pytest.raises(ValidationError, match="2001 characters; at most 2000"):
        mark_task(task, reviewer, "unclear", "x" * 2001)
    assert not TaskReview.objects.exists()


def test_marking_again_updates_the_reviewers_one_mark(reviewer, admin_user):
    task = factories.make_environment(tasks=1).tasks.get()
    first = mark_task(task, reviewer, "unclear", "which order?")
    again = mark_task(task, reviewer, "natural", "")
    assert again.pk == first.pk and again.mark == "natural" and again.note == ""
    assert again.created_at == first.created_at and again.updated_at >= first.updated_at
    mark_task(task, admin_user, "meaningless")
    assert TaskReview.objects.filter(task=task).count() == 2
    assert again.template.startswith("walk/") and again.intent == "conditional_action"


# --- leaving training and arena sampling ---------------------------------------------------------


def test_marked_tasks_leave_the_training_set_natural_ones_stay(reviewer):
    environment = factories.make_environment(tasks=0)
    tasks = [graph_task(environment, [READ]) for _ in range(5)]
    run = factories.make_training_run(metrics=0)
    run.environments.set([environment])
    assert {t.pk for t in training_tasks(run, per_environment=10)} == {t.pk for t in tasks}
    for task, mark in zip(tasks, ("natural", "unclear", "wrong_gold", "meaningless"), strict=False):
        mark_task(task, reviewer, mark)
    kept = {t.pk for t in training_tasks(run, per_environment=10)}
    assert kept == {tasks[0].pk, tasks[4].pk}
    assert set(Task.objects.usable().values_list("pk", flat=True)) == kept


def test_a_task_one_reviewer_rejects_leaves_even_if_another_finds_it_natural(reviewer, admin_user):
    task = factories.make_environment(tasks=1).tasks.get()
    mark_task(task, admin_user, "natural")
    mark_task(task, reviewer, "wrong_gold", "the gold answer counts a cancelled order")
    assert not Task.objects.usable().filter(pk=task.pk).exists()


def test_marked_tasks_leave_the_rounds_replay_sample(reviewer):
    from arena.steps import round_training_set

    environment = factories.make_environment(tasks=0)
    tasks = [graph_task(environment, [READ]) for _ in range(4)]
    mark_task(tasks[1], reviewer, "meaningless")
    evolution_round = factories.make_round()
    factories.make_evaluation(evolution_round).environments.set([environment])
    run = factories.make_training_run(metrics=0)
    links = round_training_set(evolution_round, run)
    chosen = {link.task_id for link in links}
    assert tasks[1].pk not in chosen and chosen, chosen


def test_marked_arena_tasks_leave_the_rounds_arena_sample(reviewer):
    environment = factories.make_environment(tasks=0)
    arena = [factories.make_task(environment, split="arena", round_number=3) for _ in range(3)]
    mark_task(arena[0], reviewer, "unclear")
    # Two unmarked tasks of the round are enough: nothing new is synthesized (no pool needed).
    chosen = fresh_arena_tasks(environment, 3, 2, pool=None)
    assert [t.pk for t in chosen] == [arena[1].pk, arena[2].pk]


# --- the queue and the tally -----------------------------------------------------------------------


def test_review_sample_is_seeded_newest_first_and_unmarked(reviewer):
    first = factories.make_environment("alpha", tasks=0)
    second = factories.make_environment("beta", tasks=0)
    old = [factories.make_task(first) for _ in range(3)]
    new = [factories.make_task(second) for _ in range(3)]
    sample = review_sample(size=6, seed=1)
    assert {t.pk for t in sample} == {t.pk for t in old + new}
    # environments take turns, the one with the newest task first, newest first within each
    assert [t.environment_id for t in sample[:2]] == [second.pk, first.pk]
    assert [t.pk for t in sample if t.environment_id == second.pk] == [t.pk for t in new[::-1]]
    small = review_sample(size=2, seed=1)
    assert review_sample(size=2, seed=1) == small
    mark_task(small[0], reviewer, "natural")
    after = review_sample(size=2, seed=1)
    assert small[0] not in after and small[1] in after  # marking does not reshuffle the rest
    assert {t.environment_id for t in review_sample(first, size=6)} == {first.pk}


def test_summary_counts_marks_per_template_and_intent_worst_first(reviewer, admin_user):
    environment = factories.make_environment(tasks=0)
    lookups = [graph_task(environment, [READ]) for _ in range(3)]
    actions = [graph_task(environment, [READ, WRITE]) for _ in range(2)]
    mark_task(lookups[0], reviewer, "natural")
    mark_task(lookups[1], reviewer, "natural")
    mark_task(lookups[2], reviewer, "unclear")
    mark_task(actions[0], reviewer, "meaningless")
    mark_task(actions[0], admin_user, "meaningless")
    mark_task(actions[1], reviewer, "natural")
    summary = marks_summary()
    assert (summary.marks, summary.tasks, summary.excluded_tasks) == (6, 5, 2)
    worst = summary.by_intent[0]
    assert (worst.label, worst.words) == ("conditional_action", "conditional action")
    assert (worst.meaningless, worst.natural, worst.total) == (2, 1, 3)
    assert worst.not_natural == pytest.approx(2 / 3, abs=1e-4)
    lookup = summary.by_intent[1]
    assert (lookup.label, lookup.natural, lookup.unclear, lookup.not_natural) == (
        "lookup",
        2,
        1,
        pytest.approx(1 / 3, abs=1e-4),
    )
    assert [t.label for t in summary.by_template] == [
        "walk/2-3/update/unknown",
        "walk/1/get/unknown",
    ]
    other = factories.make_environment(tasks=1)
    assert marks_summary(other).marks == 0
