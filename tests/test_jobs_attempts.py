"""Job attempts own their row: an older attempt cannot overwrite a newer one, and a job broken
by its worker's shutdown is retried rather than failed."""

from __future__ import annotations

import pytest

from aw_site.jobs import (
    WORKER_SHUTTING_DOWN,
    JobCancelled,
    JobContext,
    execute_job,
    recover_lost_job,
)
from aw_site.models import Job

pytestmark = pytest.mark.django_db


def make_job(**fields) -> Job:
    return Job.objects.create(kind="system.worker_check", **{"arguments": {"seconds": 0}, **fields})


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


@pytest.fixture
def shutting_down():
    WORKER_SHUTTING_DOWN.set()
    yield
    WORKER_SHUTTING_DOWN.clear()


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
