"""Worker lifecycle: a restarted worker retries the jobs its earlier life left running, and a
job cut short by its worker's shutdown is retried instead of failed."""

from __future__ import annotations

import logging

from celery.signals import worker_ready, worker_shutting_down

logger = logging.getLogger(__name__)


@worker_ready.connect
def retry_jobs_left_by_previous_life(sender=None, **kwargs) -> None:
    from django.db import transaction

    from aw_site.jobs import recover_jobs_of_worker

    hostname = getattr(sender, "hostname", None)
    if not hostname:
        return
    with transaction.atomic():
        recovered = recover_jobs_of_worker(hostname)
    if recovered:
        logger.warning("worker %s retried jobs left running: %s", hostname, recovered)


@worker_shutting_down.connect
def note_worker_shutdown(sig=None, how=None, exitcode=None, **kwargs) -> None:
    from aw_site.jobs import WORKER_SHUTTING_DOWN

    WORKER_SHUTTING_DOWN.set()
