"""Job attempts own their row: an older attempt cannot overwrite a newer one, and a job broken
by its worker's shutdown is retried rather than failed."""

from __future__ import annotations

import pytest
from django.db import OperationalError

from aw_site.jobs import (
    JobCancelled,
    JobContext,
    execute_job,
    job,
    recover_lost_job,
)
from aw_site.models import Job

pytestmark = pytest.mark.django_db


def make_job(**fields) -> Job:
    defaults = {"kind": "system.worker_check", "arguments": {"seconds": 0}}
    return Job.objects.create(**{**defaults, **fields})


def test_an_older_attempt_is_cancelled_once_a_retry_has_taken_the_job():
    job = make_job(state=Job.State.RUNNING, attempts=1)
    first = JobContext(Job.objects.get(pk=job.pk))
    first.progress(0.3, "attempt 1 under way")
    # The reaper thought attempt 1 lost and a second worker claimed the job.
    Job.objects.filter(pk=job.pk).update(attempts=2)
    with pytest.raises(JobCancelled):
        first.progress(0.9, "attempt 1 still going")
    with pytest.raises(JobCancelled):
        first.checkpoint(draft_environment=7)
    job.refresh_from_db()
    assert job.progress == pytest.approx(0.3) and "still going" not in job.log_tail
    assert job.result == {}


def test_checkpoint_survives_into_the_next_attempt():
    job = make_job(state=Job.State.RUNNING, attempts=1)
    JobContext(Job.objects.get(pk=job.pk)).checkpoint(draft_environment=7)
    recover_lost_job(Job.objects.get(pk=job.pk), "worker lost")
    retried = Job.objects.get(pk=job.pk)
    assert retried.state == Job.State.RETRYING
    assert JobContext(retried).saved == {"draft_environment": 7}


def test_a_job_that_breaks_during_worker_shutdown_is_retried(shutting_down, settings):
    settings.AW_JOBS_MODE = "thread"
    job = make_job(arguments={"seconds": "not-a-number"})
    assert execute_job(job.pk, "worker-a") == Job.State.RETRYING
    job.refresh_from_db()
    assert job.state == Job.State.RETRYING and job.error == ""
    assert "worker-a shut down while the job ran" in job.message


def test_the_same_error_outside_a_shutdown_fails_the_job():
    job = make_job(arguments={"seconds": "not-a-number"})
    assert execute_job(job.pk, "worker-a") == Job.State.FAILED
    job.refresh_from_db()
    assert job.state == Job.State.FAILED and "ValueError" in job.error


@job("tests.database_goes_away")
def database_goes_away(ctx: JobContext) -> dict:
    ctx.progress(0.5, "half way")
    raise OperationalError("terminating connection due to administrator command")


@pytest.mark.django_db(transaction=True)  # the job closes its broken connection, as in a worker
def test_a_job_whose_database_went_away_is_retried_not_failed(monkeypatch):
    dispatched: list[int] = []  # the retry goes back to the queue; here we only record it
    monkeypatch.setattr("aw_site.jobs.dispatch", dispatched.append)
    job = make_job(kind="tests.database_goes_away", arguments={})
    assert execute_job(job.pk, "worker-a") == Job.State.RETRYING
    job.refresh_from_db()
    assert job.state == Job.State.RETRYING and job.error == "" and job.attempts == 1
    assert "database connection lost on worker-a" in job.message
    assert dispatched == [job.pk]
    for _attempt in (2, 3):  # the outage never ends for this job: it fails after its attempts
        outcome = execute_job(job.pk, "worker-a")
    job.refresh_from_db()
    assert outcome == Job.State.FAILED and job.state == Job.State.FAILED and job.attempts == 3
    assert "gave up after 3 attempts" in job.error


@job("tests.database_goes_away_after_takeover")
def database_goes_away_after_takeover(ctx: JobContext) -> dict:
    # While this attempt stalls, the reaper hands the job to a second worker.
    Job.objects.filter(pk=ctx.job_id).update(attempts=ctx.job.attempts + 1, worker="worker-b")
    raise OperationalError("server closed the connection unexpectedly")


@pytest.mark.django_db(transaction=True)
def test_an_outage_in_a_superseded_attempt_does_not_retry_the_job_again(monkeypatch):
    dispatched: list[int] = []
    monkeypatch.setattr("aw_site.jobs.dispatch", dispatched.append)
    job = make_job(kind="tests.database_goes_away_after_takeover", arguments={})
    assert execute_job(job.pk, "worker-a") == "cancelled"
    job.refresh_from_db()
    assert job.state == Job.State.RUNNING and job.attempts == 2 and job.worker == "worker-b"
    assert dispatched == []  # the newer attempt is not sent to the queue a second time


def test_recovering_a_job_read_before_its_retry_leaves_the_retry_alone():
    job = make_job(state=Job.State.RUNNING, attempts=1)
    seen_by_reaper = Job.objects.get(pk=job.pk)
    Job.objects.filter(pk=job.pk).update(attempts=2)  # another worker took it meanwhile
    recover_lost_job(seen_by_reaper, "no heartbeat")
    job.refresh_from_db()
    assert job.state == Job.State.RUNNING and job.attempts == 2 and "retrying" not in job.message


def test_a_round_whose_step_worker_died_on_its_last_attempt_fails_with_its_training_run(
    settings,
):
    from arena.models import EvolutionRound
    from tests.support import factories
    from training.models import TrainingRun

    run = factories.make_training_run(status=TrainingRun.Status.RUNNING, metrics=0)
    evolution_round = factories.make_round(status=EvolutionRound.Status.TRAINING, training_run=run)
    job = make_job(
        kind="arena.train",
        arguments={"round": evolution_round.pk},
        state=Job.State.RUNNING,
        attempts=settings.AW_JOB_MAX_ATTEMPTS,
    )
    assert recover_lost_job(job, "no heartbeat from worker-a") == Job.State.FAILED
    evolution_round.refresh_from_db()
    run.refresh_from_db()
    assert evolution_round.status == EvolutionRound.Status.FAILED
    assert "no heartbeat from worker-a" in evolution_round.failure_reason
    assert run.status == TrainingRun.Status.FAILED and "gave up after" in run.failure_reason


def test_a_training_run_whose_worker_died_on_its_last_attempt_is_failed(settings):
    from tests.support import factories
    from training.models import TrainingRun

    run = factories.make_training_run(status=TrainingRun.Status.RUNNING, metrics=0)
    job = make_job(
        kind="training.train",
        arguments={"run": run.pk},
        state=Job.State.RUNNING,
        attempts=settings.AW_JOB_MAX_ATTEMPTS,
    )
    recover_lost_job(job, "worker-b restarted while the job ran")
    run.refresh_from_db()
    assert run.status == TrainingRun.Status.FAILED
    assert "worker-b restarted" in run.failure_reason and run.finished_at is not None
    # A retry that is not the last one leaves the run to its next attempt.
    retried = factories.make_training_run(status=TrainingRun.Status.RUNNING, metrics=0)
    job = make_job(
        kind="training.train", arguments={"run": retried.pk}, state=Job.State.RUNNING, attempts=1
    )
    recover_lost_job(job, "worker-b restarted while the job ran")
    retried.refresh_from_db()
    assert retried.status == TrainingRun.Status.RUNNING


def _broken_hook(arguments: dict, reason: str) -> None:
    Job.objects.create(kind="tests.never_kept", arguments={})  # rolled back with the hook
    raise RuntimeError("the hook broke")


@job("tests.broken_give_up", on_give_up=_broken_hook)
def broken_give_up(ctx: JobContext) -> dict:
    return {}


def test_a_failing_give_up_hook_is_logged_and_the_job_still_fails(settings, caplog):
    record = make_job(
        kind="tests.broken_give_up",
        arguments={},
        state=Job.State.RUNNING,
        attempts=settings.AW_JOB_MAX_ATTEMPTS,
    )
    assert recover_lost_job(record, "worker lost") == Job.State.FAILED
    record.refresh_from_db()
    assert record.state == Job.State.FAILED and "worker lost" in record.error
    assert not Job.objects.filter(kind="tests.never_kept").exists()  # the savepoint undid it
    assert "give-up hook failed" in caplog.text
