"""A job worker process without a broker: it polls the database for queued jobs and runs them.

``./dev run`` (run_embedded) starts a few of these next to the web server, so the loop's builds,
syntheses and rounds run in their own processes, never in the server's request threads. Claiming
goes through ``execute_job`` (a write-locked claim), so two workers never run the same attempt;
a worker that dies leaves its job running under its name, and the next run's
``recover_in_process_jobs`` or any worker's reaper hands it out again.
"""

from __future__ import annotations

import logging
import threading
import time

from django.db import close_old_connections, transaction

from aw_site.jobs import execute_job, in_process_worker_name, reap_stale_jobs
from aw_site.models import Job

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.5
REAP_SECONDS = 30.0
WAITING_STATES = (Job.State.QUEUED, Job.State.RETRYING)


def next_waiting_job(queues: list[str] | None = None) -> int | None:
    """The oldest job waiting for a worker (optionally only of these queues)."""
    waiting = Job.objects.filter(state__in=WAITING_STATES)
    if queues:
        waiting = waiting.filter(queue__in=queues)
    return waiting.order_by("created_at", "pk").values_list("pk", flat=True).first()


def run_worker(
    stop: threading.Event,
    queues: list[str] | None = None,
    poll_seconds: float = POLL_SECONDS,
    max_jobs: int | None = None,
) -> int:
    """Run waiting jobs one at a time until ``stop`` is set (or ``max_jobs`` ran); returns how
    many this worker ran. Stale running jobs are reaped every REAP_SECONDS."""
    name = in_process_worker_name()
    ran = 0
    last_reap = 0.0
    while not stop.is_set() and (max_jobs is None or ran < max_jobs):
        close_old_connections()
        if time.monotonic() - last_reap > REAP_SECONDS:
            with transaction.atomic():
                reap_stale_jobs()
            last_reap = time.monotonic()
        job_id = next_waiting_job(queues)
        if job_id is None:
            stop.wait(poll_seconds)
            continue
        state = execute_job(job_id, worker=name)
        if state != "skipped":  # another worker claimed it first
            ran += 1
            logger.info("worker %s: job %s %s", name, job_id, state)
    return ran
