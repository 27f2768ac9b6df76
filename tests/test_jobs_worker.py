"""Job lifecycle through a real Celery worker process over Redis."""

from __future__ import annotations

import pytest
from django.db import transaction

from aw_site.jobs import enqueue
from aw_site.models import Job
from tests.support.worker import celery_worker, redis_available, wait_for

pytestmark = [
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not redis_available(), reason="Redis is not reachable on 127.0.0.1:6379"),
]


def job_state(job_id: int) -> Job:
    return Job.objects.get(pk=job_id)


def test_worker_runs_a_job_and_reports_progress(tmp_path):
    with celery_worker(tmp_path) as worker:
        with transaction.atomic():
            job = enqueue("system.worker_check", {"seconds": 1.0, "steps": 4})
        seen_progress = set()

        def finished():
            record = job_state(job.pk)
            seen_progress.add(round(record.progress, 2))
            return record.is_finished

        wait_for(finished, timeout=60, interval=0.05, message=f"job to finish\n{worker.log()}")
    record = job_state(job.pk)
    assert record.state == Job.State.SUCCEEDED, record.error
    assert record.progress == 1.0
    assert record.result["steps"] == 4
    assert record.worker == worker.hostname
    assert "step 4 of 4" in record.log_tail
    assert record.started_at and record.finished_at and record.finished_at >= record.started_at
    assert len(seen_progress - {0.0, 1.0}) >= 1, (
        f"no intermediate progress observed: {seen_progress}"
    )


def test_failing_job_is_recorded_failed_with_its_error(tmp_path):
    with celery_worker(tmp_path) as worker:
        with transaction.atomic():
            job = enqueue("system.worker_check", {"seconds": "not-a-number"})
        wait_for(
            lambda: job_state(job.pk).is_finished, timeout=60, message=f"job end\n{worker.log()}"
        )
    record = job_state(job.pk)
    assert record.state == Job.State.FAILED
    assert "ValueError" in record.error
    assert "Traceback" in record.log_tail


def test_job_killed_with_its_worker_is_retried_by_the_restarted_worker(tmp_path):
    with celery_worker(tmp_path) as worker:
        with transaction.atomic():
            job = enqueue("system.worker_check", {"seconds": 6.0, "steps": 30})
        wait_for(
            lambda: job_state(job.pk).progress > 0.1,
            timeout=60,
            message=f"job to start\n{worker.log()}",
        )
        worker.kill()
        killed = job_state(job.pk)
        assert killed.state == Job.State.RUNNING and killed.attempts == 1
        # The same worker comes back (same hostname, as a supervisor restarts it).
        worker.start()
        wait_for(
            lambda: job_state(job.pk).is_finished,
            timeout=90,
            message=f"retried job\n{worker.log()}",
        )
    record = job_state(job.pk)
    assert record.state == Job.State.SUCCEEDED, record.error
    assert record.attempts == 2
    assert "restarted while the job ran" in record.log_tail


def test_job_whose_worker_never_returns_is_failed_by_the_reaper(tmp_path, settings):
    from aw_site.jobs import reap_stale_jobs

    settings.AW_JOB_MAX_ATTEMPTS = 1
    settings.AW_JOB_STALE_SECONDS = 2
    with celery_worker(tmp_path, extra_env={"AW_JOB_STALE_SECONDS": "2"}) as worker:
        with transaction.atomic():
            job = enqueue("system.worker_check", {"seconds": 20.0, "steps": 40})
        wait_for(
            lambda: job_state(job.pk).progress > 0.0,
            timeout=60,
            message=f"job to start\n{worker.log()}",
        )
        worker.kill()
    wait_for(
        lambda: reap_stale_jobs() or job_state(job.pk).is_finished, timeout=30, message="reaper"
    )
    record = job_state(job.pk)
    assert record.state == Job.State.FAILED
    assert "no heartbeat" in record.error and "gave up after 1 attempts" in record.error


def test_job_enqueued_while_the_broker_is_down_waits_and_is_sent_again(
    tmp_path, settings, monkeypatch
):
    """A broker that refuses the publish (Redis restarting) neither loses the job nor fails
    whoever enqueued it: the row stays queued and the reaper sends it once the broker answers."""
    from kombu.exceptions import OperationalError as BrokerUnreachable

    from aw_site.jobs import reap_stale_jobs, run_job

    settings.AW_JOB_QUEUED_STALE_SECONDS = 0

    def refused(*args, **kwargs):
        raise BrokerUnreachable("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    with celery_worker(tmp_path) as worker:
        with monkeypatch.context() as patch:
            patch.setattr(run_job, "apply_async", refused)
            with transaction.atomic():
                job = enqueue("system.worker_check", {"seconds": 0.2, "steps": 2})
        record = job_state(job.pk)
        assert record.state == Job.State.QUEUED and record.celery_task_id == ""
        assert "broker was unreachable" in record.message
        assert reap_stale_jobs() == [job.pk]
        wait_for(
            lambda: job_state(job.pk).is_finished,
            timeout=60,
            message=f"re-sent job\n{worker.log()[-3000:]}",
        )
    assert job_state(job.pk).state == Job.State.SUCCEEDED
