"""An error that only interrupts a job attempt (a database outage, the worker shutting down, a
newer attempt taking over) is not recorded as the work failing: the retry does the work. A real
failure still is: on the round, the proposal, the training run."""

from __future__ import annotations

import pytest
from django.db import OperationalError

from arena import round_machine, steps
from arena.jobs import _run_step
from arena.models import ExpansionProposal
from aw_site.jobs import JobCancelled, JobContext
from tests.support.factories import make_evaluation, make_job, make_proposal, make_round
from training.models import TrainingRun

pytestmark = pytest.mark.django_db

INTERRUPTIONS = {
    "database_outage": OperationalError("server closed the connection unexpectedly"),
    "newer_attempt": JobCancelled("job 7 attempt 1 no longer runs"),
}


def running_round(status: str):
    job = make_job("arena.step")
    return make_round(status=status, job=job), JobContext(job)


def raising(error: Exception):
    def step(*args, **kwargs):
        raise error

    return step


def evaluation_step_raising(error: Exception):
    """Run a round's evaluation step that raises `error`; the round as it is afterwards."""
    evolution_round, ctx = running_round(round_machine.EVALUATING)
    with pytest.raises(type(error)):
        _run_step(ctx, evolution_round.pk, round_machine.EVALUATING, raising(error), "evaluated")
    evolution_round.refresh_from_db()
    return evolution_round


@pytest.mark.parametrize("error", INTERRUPTIONS.values(), ids=INTERRUPTIONS.keys())
def test_an_interrupted_round_step_leaves_the_round_for_its_retry(error):
    evolution_round = evaluation_step_raising(error)
    assert evolution_round.status == round_machine.EVALUATING
    assert evolution_round.failure_reason == ""


def test_a_step_broken_by_the_worker_shutting_down_leaves_the_round_for_its_retry(
    shutting_down,
):
    evolution_round = evaluation_step_raising(BrokenPipeError("sandbox worker stopped"))
    assert evolution_round.status == round_machine.EVALUATING


def test_a_failing_round_step_fails_the_round_with_its_reason():
    evolution_round = evaluation_step_raising(ValueError("no verified environments"))
    assert evolution_round.status == "failed"
    assert "no verified environments" in evolution_round.failure_reason


def test_an_interrupted_expansion_keeps_its_proposal_approved(monkeypatch):
    evolution_round, ctx = running_round(round_machine.EXPANDING)
    proposal = make_proposal(evolution_round, status=ExpansionProposal.Status.APPROVED)
    monkeypatch.setattr(steps, "apply_proposal", raising(INTERRUPTIONS["database_outage"]))
    with pytest.raises(OperationalError):
        steps.expand(evolution_round, ctx)
    proposal.refresh_from_db()
    assert proposal.status == ExpansionProposal.Status.APPROVED  # the retry applies it


def test_a_failing_expansion_is_recorded_and_the_others_still_apply(monkeypatch):
    evolution_round, ctx = running_round(round_machine.EXPANDING)
    proposal = make_proposal(evolution_round, status=ExpansionProposal.Status.APPROVED)
    other = make_proposal(evolution_round, status=ExpansionProposal.Status.APPROVED)

    def apply(target, ctx):
        if target.pk == proposal.pk:
            raise ValueError("no unbuilt data source")
        return {"tasks": [], "tasks_created": 0}

    monkeypatch.setattr(steps, "apply_proposal", apply)
    assert steps.expand(evolution_round, ctx) == {"applied": 1, "failed": 1}
    proposal.refresh_from_db()
    other.refresh_from_db()
    assert proposal.status == ExpansionProposal.Status.FAILED
    assert "no unbuilt data source" in proposal.result["error"]
    assert other.status == ExpansionProposal.Status.APPLIED


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (ValueError("no train-split graph tasks in the chosen environments"), "failed"),
        (INTERRUPTIONS["database_outage"], "queued"),
    ],
    ids=["failure", "interruption"],
)
def test_round_training_records_a_failure_on_its_run_but_not_an_interruption(
    monkeypatch, error, status
):
    evolution_round, ctx = running_round(round_machine.TRAINING)
    make_evaluation(evolution_round)
    monkeypatch.setattr(steps, "train_policy", raising(error))
    with pytest.raises(type(error)):
        steps.train(evolution_round, ctx)
    run = TrainingRun.objects.get(round_number=evolution_round.number)
    assert run.status == status
    assert (str(error) in run.failure_reason) == (status == "failed")


@pytest.mark.parametrize(
    ("error", "status"),
    [(ValueError("source file is empty"), "rejected"), (INTERRUPTIONS["newer_attempt"], "mining")],
    ids=["failure", "interruption"],
)
def test_a_build_rejects_its_draft_on_failure_but_leaves_it_to_the_retry_when_interrupted(
    monkeypatch, settings, tmp_path, error, status
):
    from environments import jobs as environment_jobs
    from environments.models import Environment

    settings.STORAGE_ROOT = tmp_path
    job = make_job("environments.build_environment", arguments={"source": "airports"})
    from environments.builder import pipeline
    from environments.builder.stages import BuildFailed

    monkeypatch.setattr(pipeline, "mine_database", raising(error))
    with pytest.raises((type(error), BuildFailed)):
        environment_jobs.build_environment(JobContext(job), source="airports")
    draft = Environment.objects.get(name="airports")
    assert draft.status == status
    assert (str(error) in draft.failure_reason) == (status == "rejected")
